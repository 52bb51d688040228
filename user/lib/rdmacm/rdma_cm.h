// rdma_cm.h: the connection manager library, librdmacm's API and meanings
// (<rdma/rdma_cma.h>) for RC QPs (RDMA_PS_TCP, RDMA_PS_IB) and UD QPs
// (RDMA_PS_UDP: SIDR, param.ud, Q_Key RDMA_UDP_QKEY) over the InfiniBand CM, which the kernel
// runs (kernel/rdma/cma.c over QP1). Implementation: user/lib/rdmacm/rdma_cm.c,
// a thin client of the kernel's rdma_cm (SYS_ucma_*, ucma_sys.h), as
// librdmacm is of Linux's rdma_ucm.
//
// Event channels are the kernel's: channel->fd is a file descriptor that
// poll() reports readable while an event waits, and fcntl(O_NONBLOCK) makes
// rdma_get_cm_event fail with EAGAIN instead of sleeping. An id created
// with a NULL channel is synchronous, as in librdmacm: it has a channel of
// its own, and rdma_resolve_addr, rdma_resolve_route, rdma_connect,
// rdma_accept, rdma_disconnect and rdma_get_request block until their
// event (then in id->event); an id rdma_get_request returns is synchronous
// too. Retransmissions, timeouts and answers to a peer's duplicates run in
// the kernel on its timers, whatever the application is doing.
//
// Errors: 0 or -1 with errno (EINVAL, ENOMEM, EADDRINUSE, ETIMEDOUT,
// ECONNREFUSED, ...), pointers NULL with errno, as librdmacm's man pages
// say. A REJECTED event's status is the REJ's reason (IBTA; ibcm.h's
// IBCM_REJ_*: 8 for a port nobody listens on, the consumer's reject for
// rdma_reject). Project extensions carry the prefix rdmax_; the
// differences from librdmacm are listed in docs/rdma.md ("rdma_cm").
#ifndef RDMA_CM_H
#define RDMA_CM_H
#include "ibverbs.h"
#include "kernel/cm/ibcm.h"

#define RDMA_PERFTEST_PORT 18515         // perftest's default port (ib_*_bw -p)
#define RDMA_CM_PORT RDMA_PERFTEST_PORT  // the tools' default rdma_cm port: perftest's
// Private data bytes rdma_connect carries: a REQ's room behind rdma_cm's
// addressing header (56); rdma_accept a REP's (196), rdma_reject a REJ's (148).
#define RDMA_CM_PRIVATE_MAX IBCM_CMA_REQ_PRIVATE
#define RDMA_CM_REP_PRIVATE_MAX IBCM_REP_PRIVATE   // rdma_accept's private data: a REP's room
#define RDMA_CM_REJ_PRIVATE_MAX IBCM_REJ_PRIVATE   // rdma_reject's: a REJ's room

// enum rdma_cm_event_type (RDMA_CM_EVENT_*) and enum rdma_port_space (RDMA_PS_*)
// are kernel/lib/uapi.h's: the kernel rdma_cm reports them.

struct rdma_event_channel {
  int fd;                        // the kernel's channel (poll, fcntl O_NONBLOCK)
};

struct rdma_addr {
  union { struct sockaddr src_addr; struct sockaddr_in src_sin; struct sockaddr_storage src_storage; };
  union { struct sockaddr dst_addr; struct sockaddr_in dst_sin; struct sockaddr_storage dst_storage; };
};

struct rdma_route {
  struct rdma_addr addr;
  int num_paths;
};

struct rdma_cm_id {
  struct ibv_context *verbs;
  struct rdma_event_channel *channel;
  void *context;
  struct ibv_qp *qp;
  struct rdma_route route;
  enum rdma_port_space ps;
  uint8_t port_num;
  struct rdma_cm_event *event;   // synchronous ids: the last event
  struct ibv_comp_channel *send_cq_channel;
  struct ibv_cq *send_cq;
  struct ibv_comp_channel *recv_cq_channel;
  struct ibv_cq *recv_cq;
  struct ibv_srq *srq;
  struct ibv_pd *pd;
  enum ibv_qp_type qp_type;
};

struct rdma_conn_param {
  const void *private_data;
  uint8_t private_data_len;      // at most RDMA_CM_PRIVATE_MAX
  uint8_t responder_resources;   // READs we serve at once; 0 = RDMAX_DEFAULT_RESPONDER_RESOURCES
  uint8_t initiator_depth;       // READs we keep outstanding; 0 = RDMAX_DEFAULT_INITIATOR_DEPTH
  uint8_t flow_control;          // ignored (the transport has no end-to-end credits)
  uint8_t retry_count;           // 0 = RDMAX_DEFAULT_RETRY_COUNT
  uint8_t rnr_retry_count;       // 0 = 7 (infinite)
  uint8_t srq;                   // must be 0 (no SRQs)
  uint32_t qp_num;               // ignored: the id's QP is used
};

// A UD id's CONNECT_REQUEST (passive) and ESTABLISHED (active, from the
// SIDR_REP): ah_attr for ibv_create_ah to the peer, its QPN and Q_Key
// (the requester's QPN is 0: a SIDR_REQ carries none).
struct rdma_ud_param {
  const void *private_data;
  uint8_t private_data_len;
  struct ibv_ah_attr ah_attr;
  uint32_t qp_num;
  uint32_t qkey;
};

struct rdma_cm_event {
  struct rdma_cm_id *id;
  struct rdma_cm_id *listen_id;
  enum rdma_cm_event_type event;
  int status;                    // REJECTED: the REJ's reason; errors: a negative errno
  union { struct rdma_conn_param conn; struct rdma_ud_param ud; } param;
};

// Event channels and ids.
struct rdma_event_channel *rdma_create_event_channel(void);
void rdma_destroy_event_channel(struct rdma_event_channel *channel);
int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
                   enum rdma_port_space ps);
int rdma_destroy_id(struct rdma_cm_id *id);
int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel);

// Addresses.
int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr);
int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr, struct sockaddr *dst_addr,
                      int timeout_ms);
int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms);
struct sockaddr *rdma_get_local_addr(struct rdma_cm_id *id);
struct sockaddr *rdma_get_peer_addr(struct rdma_cm_id *id);
uint16_t rdma_get_src_port(struct rdma_cm_id *id);   // network byte order
uint16_t rdma_get_dst_port(struct rdma_cm_id *id);   // network byte order

// Connections.
int rdma_listen(struct rdma_cm_id *id, int backlog);
int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param);
int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param);
int rdma_reject(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len);
int rdma_disconnect(struct rdma_cm_id *id);
int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id);

// Events.
int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event);
int rdma_ack_cm_event(struct rdma_cm_event *event);
const char *rdma_event_str(enum rdma_cm_event_type event);
// REJECTED events' status: the REJ reason's name (IBTA's, NO_LISTENER for 8).
const char *rdma_reject_msg(struct rdma_cm_id *id, int reason);

// QPs: rdma_create_qp leaves the QP in INIT, so receives may be posted
// before the connection; CQs are created when init_attr names none.
int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr);
void rdma_destroy_qp(struct rdma_cm_id *id);

// Options: librdmacm's levels and names (rdma_cma.h); which ones act is in
// rdma_cm.c. Level RDMAX_OPTION_XV6 takes a struct rdmax_transport.
enum { RDMA_OPTION_ID = 0, RDMA_OPTION_IB = 1 };
enum {
  RDMA_OPTION_ID_TOS = 0, RDMA_OPTION_ID_REUSEADDR = 1, RDMA_OPTION_ID_AFONLY = 2,
  RDMA_OPTION_ID_ACK_TIMEOUT = 3,
};
enum { RDMA_OPTION_IB_PATH = 1 };
#define RDMAX_MAX_ACK_TIMEOUT 31      // the 5-bit local ACK timeout code (4.096 us << code)
int rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval, size_t optlen);

// IBV_EVENT_COMM_EST seen on the id's QP: establish the connection (0, or
// -1 with EISCONN if it was already).
int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event);

// The RDMA devices (here one), a NULL-terminated array for rdma_free_devices.
struct ibv_context **rdma_get_devices(int *num_devices);
void rdma_free_devices(struct ibv_context **list);

// Address information (numeric IPv4 addresses and decimal ports only; with
// RAI_PASSIVE a NULL node or "0.0.0.0" is the wildcard address).
#define RAI_PASSIVE     0x00000001
#define RAI_NUMERICHOST 0x00000002
#define RAI_NOROUTE     0x00000004
#define RAI_FAMILY      0x00000008
struct rdma_addrinfo {
  int ai_flags;
  int ai_family;
  int ai_qp_type;
  int ai_port_space;
  socklen_t ai_src_len;
  socklen_t ai_dst_len;
  struct sockaddr *ai_src_addr;
  struct sockaddr *ai_dst_addr;
  char *ai_src_canonname;
  char *ai_dst_canonname;
  size_t ai_route_len;
  void *ai_route;
  size_t ai_connect_len;
  void *ai_connect;
  struct rdma_addrinfo *ai_next;
};
int rdma_getaddrinfo(const char *node, const char *service, const struct rdma_addrinfo *hints,
                     struct rdma_addrinfo **res);
void rdma_freeaddrinfo(struct rdma_addrinfo *res);
int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res, struct ibv_pd *pd,
                   struct ibv_qp_init_attr *qp_init_attr);
void rdma_destroy_ep(struct rdma_cm_id *id);

// ---- Project extensions (not in librdmacm) ----

// rdma_set_option(id, RDMAX_OPTION_XV6, RDMAX_OPTION_TRANSPORT, &t, sizeof t)
// before rdma_connect / rdma_accept: the transport's settings beyond
// librdmacm's connection parameters. Zero fields take the defaults.
#define RDMAX_OPTION_XV6 0x7876
#define RDMAX_OPTION_TRANSPORT 1
struct rdmax_transport {
  uint8_t sr;                    // offer selective repeat [SR-NEG-1]
  uint8_t roce_v1;               // send RoCE v1 frames (a local choice; the peer accepts both)
  uint8_t timeout;               // local ACK timeout code; 0 = 18 (~1.07 s)
  uint32_t max_inflight;         // request packets in flight; 0 = rdmax_default_inflight(path MTU)
  uint32_t min_rto_us;           // adaptive RTO floor; 0 = RDMAX_DEFAULT_MIN_RTO_US;
                                 // ~0u = fixed IBTA timeout (no adaptive RTO)
};

// Defaults for the transport under emulated guests. The window
// (max_inflight 0) follows the path MTU: as many packets as keep
// RDMAX_INFLIGHT_BYTES in flight, but never more than RDMAX_HOP_PACKETS
// (rdmax_default_inflight: 512 packets at path MTU 256 to 2048, 256 at
// 4096). The round trip between guests under load is several ms, far
// above the ~1 ms of an idle link: 64 KiB WRITEs through linkemu at path
// MTU 1024, one bed, 7 rounds in alternation, ran 33.2 MiB/s (medians)
// with 256 packets in flight, 36.3 with 512, 40.0 with 1024; at MTU 4096
// 256 packets (1 MiB) already reach 0.87 of the RoCE frame ceiling. But
// the hops between guests buffer packets, not bytes: the tc netem box (a
// 1-vCPU Linux guest bridging the links, make test-netem) carried 512
// packets in flight at MTU 1024 lossless losing at most 2 of 10,245
// frames a run, and test-netem passed 5 of 5; with 1024 it failed 1 of 3
// (the box dropped 764 frames besides netem's 820), and earlier lost
// 70,000 of 264,000 while go-back-N collapsed. A path known to hold more
// may set max_inflight (at most the SR window, 1024, in SR mode). The RTO
// follows the measured round trip (RFC 6298)
// but never below 30 ms, above most pauses a host scheduler gives a guest;
// doubling on each timeout up to the IBTA timeout (18: 1.07 s), seven
// retries ride out a ~3 s outage (the test matrix blackholes the link for
// 2 s).
#define RDMAX_INFLIGHT_BYTES  (1u << 20)
#define RDMAX_HOP_PACKETS  512
uint32_t rdmax_default_inflight(enum ibv_mtu path_mtu);
#define RDMAX_DEFAULT_RETRY_COUNT 7
#define RDMAX_DEFAULT_MIN_RTO_US 30000
#define RDMAX_DEFAULT_RESPONDER_RESOURCES 16
// READs kept in flight by default: half what a peer holds (16). A depth
// equal to the peer's resources is valid (a responder with all of them
// held retires the READ with the lowest PSN for a new one, the transport
// core's [RESP-READ-4]); 8 is kept as the default it has always been.
#define RDMAX_DEFAULT_INITIATOR_DEPTH 8

// rdma_get_cm_event with a deadline: -1 and errno ETIMEDOUT when no event
// came within timeout_ms (< 0: wait for ever). What poll() on channel->fd
// followed by rdma_get_cm_event gives a librdmacm program.
int rdmax_get_cm_event_timeout(struct rdma_event_channel *channel, struct rdma_cm_event **event,
                               int timeout_ms);
// The CM MADs the kernel's CM dropped, all connections together
// (rdmastat's cm_dropped); id is unused. Tools print "cm_dropped N".
uint32_t rdmax_cm_dropped(struct rdma_cm_id *id);
// A fresh random non-zero 32-bit value, drawn as the kernel's CM draws
// its communication IDs; tools show the generator's output [SEC-RAND-7].
uint32_t rdmax_new_conn_id(void);
// The conventional first 16 bytes of private data: an MR's VA, rkey and
// length, big-endian (a convention of the project's tools, not of the CM).
void rdmax_pack_mr(uint8_t out[16], uint64_t addr, uint32_t rkey, uint32_t len);
void rdmax_unpack_mr(const uint8_t in[16], uint64_t *addr, uint32_t *rkey, uint32_t *len);
// A sockaddr_in from a host-order IPv4 address and port.
void rdmax_sockaddr(struct sockaddr_in *sin, uint32_t ip, uint16_t port);
#endif
