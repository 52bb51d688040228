// peer.h: xrpeer, the Linux-side (libibverbs, rdma_rxe) peer of the
// project's xv6 RDMA tools. What the parts share:
//   cm.c      the device, its RoCEv2 GID, helpers, a connection record
//   cm_rdma.c the pcm_* calls: connections through Linux's librdmacm
//             (rdma_cm over the InfiniBand CM)
//   cq.c      resources (PD, CQ with a completion channel, QP, MRs) and
//             waiting for completions with a deadline
//   matrix.c  rdmanet_test's --matrix protocol, host_a and host_b roles
//   bw.c      rdma_bw's server and client roles
//   ud.c      Unreliable Datagram: an echo server and a ping-pong client
//   main.c    the command line
#ifndef XRPEER_H
#define XRPEER_H
#include <stdint.h>
#include <netinet/in.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include "ud_payload.h"      // user/lib/ibverbs: the UD payload both ends share (UD_SEQ_LEN, ...)

#define PCM_PORT 18515           // the default port: perftest's, as the xv6 tools' (RDMA_PERFTEST_PORT)
#define PCM_PRIVATE_MAX 56       // a REQ's private data under rdma_cm (RDMA_PS_TCP): 92 - its 36-byte header

// ---- cm.c ----
struct peer_dev {
  struct ibv_context *ctx;
  uint8_t port;
  int gid_index;                 // the RoCEv2 entry holding ::ffff:ipv4
  union ibv_gid gid;
  uint32_t ipv4;                 // host order
  uint8_t mac[6];
  enum ibv_mtu active_mtu;
  uint8_t resp_res;              // READs we serve at once (max_dest_rd_atomic)
  uint8_t init_depth;            // READs we keep outstanding (max_rd_atomic)
};

enum pcm_state { PCM_IDLE, PCM_REQ_SENT, PCM_REQ_RCVD, PCM_REP_SENT, PCM_ESTABLISHED,
                 PCM_REJECTED, PCM_CLOSED };

struct pcm_param {
  const void *private_data;
  uint8_t private_len;
  enum ibv_mtu mtu_limit;        // 0: the port's active MTU
  uint8_t timeout;               // local ACK timeout code; 0: rdma_cm's
};

struct pconn {
  struct peer_dev *dev;
  struct ibv_qp *qp;             // set by the caller before accept/connect
  enum pcm_state state;
  struct rdma_cm_id *id;         // the connection's rdma_cm ID
  struct rdma_event_channel *ch; // and its event channel
  struct sockaddr_in peer;       // the peer's address and port
  uint32_t my_psn, peer_qpn, peer_psn;
  uint8_t peer_resp_res, peer_init_depth;
  enum ibv_mtu path_mtu;
  uint16_t reject_reason;
  uint8_t private_data[PCM_PRIVATE_MAX];   // what the peer sent
  uint8_t private_len;
};

// Opens `name` (NULL: the first device) and finds its IPv4-mapped RoCEv2
// GID (want_ip != 0: that address). 0 or -1 with a message on stderr.
int pdev_open(struct peer_dev *d, const char *name, uint32_t want_ip);
// A fresh connection record on d for qp.
void pcm_init(struct pconn *c, struct peer_dev *d, struct ibv_qp *qp);
// The pcm_* calls below up to pcm_close are cm_rdma.c's. port 0: PCM_PORT.
int pcm_listen(int port);                                  // a descriptor, or -1
void pcm_unlisten(int lsock);                              // stop listening
int pcm_get_request(int lsock, struct pconn *c, int timeout_ms);
// The QP to INIT, so receives can be posted before accept: the first
// SEND then lands, which establishes the connection even if every RTU
// was lost [IBCM-STATE-7] (a SEND meeting no receive is RNR-NAKed and moves
// nothing). accept/connect do it themselves if the caller did not.
int pcm_qp_init(struct pconn *c);
int pcm_accept(struct pconn *c, const struct pcm_param *p);
int pcm_reject(struct pconn *c, uint16_t reason);
int pcm_connect(struct pconn *c, uint32_t ip, int port, const struct pcm_param *p);
int pcm_disconnect(struct pconn *c);
int pcm_wait_disconnect(struct pconn *c, int timeout_ms);
void pcm_close(struct pconn *c);
void pcm_qp_error(struct pconn *c);                        // the QP to ERR (flushes its WRs)
int pcm_is_mapped_ipv4(const uint8_t *gid);                 // ::ffff:a.b.c.d
void pcm_pack_mr(uint8_t out[16], uint64_t addr, uint32_t rkey, uint32_t len);
void pcm_unpack_mr(const uint8_t in[16], uint64_t *addr, uint32_t *rkey, uint32_t *len);
int pcm_mtu_bytes(enum ibv_mtu m);
enum ibv_mtu pcm_mtu_enum(int bytes);                      // 0 if not a path MTU
uint32_t pcm_random(void);
int parse_ipv4(const char *s, uint32_t *ip);               // host order; 0 or -1

// ---- cq.c ----
struct pres {
  struct ibv_pd *pd;
  struct ibv_comp_channel *chan;
  struct ibv_cq *cq;
  struct ibv_srq *srq;           // pres_create_srq: the QP's receives come from it
  struct ibv_qp *qp;
};
// PD, CQ (cq_depth) on a completion channel, RC QP (wr_depth each way).
int pres_create(struct pres *r, struct peer_dev *d, int cq_depth, int wr_depth);
// The same with a QP of the given type (IBV_QPT_RC or IBV_QPT_UD).
int pres_create_qp(struct pres *r, struct peer_dev *d, int cq_depth, int wr_depth, enum ibv_qp_type type);
// The same with an RC QP on a shared receive queue of wr_depth receives.
int pres_create_srq(struct pres *r, struct peer_dev *d, int cq_depth, int wr_depth);
void pres_destroy(struct pres *r);
// Up to max completions, at least one: n, 0 after timeout_ms, -1 on error.
// Sleeps on the completion channel, never spins.
int pres_poll(struct pres *r, struct ibv_wc *wc, int max, int timeout_ms);
struct ibv_mr *pres_reg(struct pres *r, void *buf, size_t len);
uint64_t now_ns(void);

// ---- the roles ----
struct matrix_opts { int port; enum ibv_mtu mtu_limit; int big; uint8_t timeout; };
int matrix_host_a(struct peer_dev *d, const struct matrix_opts *o);
int matrix_host_b(struct peer_dev *d, uint32_t ip, const struct matrix_opts *o);

struct bw_opts {
  int op;                        // 0 WRITE, 1 READ, 2 SEND (rdma_perf.h's perf_op)
  uint32_t size, iters;
  int all, tx_depth, cq_mod, port;
  enum ibv_mtu mtu_limit;
  uint8_t timeout;
  uint32_t server_ip;            // 0: server role
  int srq;                       // --srq: this side's receives through a shared receive queue
};
int bw_server(struct peer_dev *d, struct bw_opts *o);
int bw_client(struct peer_dev *d, struct bw_opts *o);

#define UD_DEFAULT_QKEY 0x11111111u  // both sides' Q_Key unless --qkey (high bit clear)
#define UD_MAX_SIZE 65536             // the largest -s; beyond the port MTU is the oversize check
struct ud_opts {
  uint32_t qkey;                 // our QP's Q_Key and the one our SENDs carry
  uint32_t size, count;          // client: payload bytes, messages; server: stop after count (0: never)
  int imm, oneway;               // client: SEND_WITH_IMM; no echoes awaited
  int wait_ms, retries;          // client: the echo deadline, resends per message
  uint32_t peer_ip, peer_qpn;    // client: the server
  int idle_s;                    // server: stop after this long without a datagram (0: never)
  int raw;                       // server: echo any payload, unchecked
};
int ud_server(struct peer_dev *d, const struct ud_opts *o);
int ud_client(struct peer_dev *d, const struct ud_opts *o);
#endif
