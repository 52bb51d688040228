// rdma_cm.h: the connection library (proto-spec/cm.md) for RC QPs.
//
// An rdma_cm-like shape over the project's UDP sockets, synchronous (user
// programs here have no threads): the passive side listens on a UDP port
// (RCT_CM_PORT 18515 by default) and takes connect requests one by one;
// the active side connects a QP it created to ip:port. Both sides move
// their QP RESET -> INIT -> RTR -> RTS from the exchanged facts (QPN,
// starting PSN, path MTU, READ resources, GID, MAC, SR capability), and
// private data (up to 56 bytes) travels with REQ, REP and REJ; by
// convention its first 16 bytes are an MR's VA, rkey and length
// (rdma_cm_pack_mr / rdma_cm_unpack_mr). Messages are encoded by the
// transport core's portable CM codec (kernel/transport/cm.c).
//
// Return values: 0 or a negative RDMA_CM_E* code.
#ifndef RDMA_CM_H
#define RDMA_CM_H
#include "ibverbs.h"

#define RDMA_CM_PORT 18515
#define RDMA_CM_PRIVATE_MAX 56

enum {
  RDMA_CM_EINVAL = -1, RDMA_CM_ETIMEDOUT = -2, RDMA_CM_EREJECTED = -3,
  RDMA_CM_ENOSOCK = -4, RDMA_CM_EQP = -5,
};

enum rdma_cm_state {
  RDMA_CM_IDLE, RDMA_CM_LISTEN, RDMA_CM_REQ_SENT, RDMA_CM_REQ_RCVD, RDMA_CM_REP_SENT,
  RDMA_CM_ESTABLISHED, RDMA_CM_REJECTED, RDMA_CM_CLOSED,
};

struct rdma_conn_param {
  const void *private_data;
  uint8_t private_data_len;
  uint8_t responder_resources;   // READs we serve at once (max_dest_rd_atomic); 0 = 16
  uint8_t initiator_depth;       // READs we want outstanding (max_rd_atomic); 0 = 8
  uint8_t retry_count;           // 0 = RDMA_CM_DEFAULT_RETRY_COUNT
  uint8_t rnr_retry_count;       // 0 = 7 (infinite)
  uint8_t timeout;               // local ACK timeout code; 0 = 18 (~1.07 s)
  uint8_t sr;                    // offer selective repeat
  uint8_t roce_v1;               // send RoCE v1 frames (a local choice; the peer accepts both)
  // Local transport tuning (xv6-rdma extensions, not exchanged):
  uint32_t max_inflight;         // request packets in flight; 0 = RDMA_CM_DEFAULT_INFLIGHT
  uint32_t min_rto_us;           // adaptive RTO floor; 0 = RDMA_CM_DEFAULT_MIN_RTO_US;
                                 // ~0u = fixed IBTA timeout (no adaptive RTO)
};

// Defaults for the transport under emulated guests: a window of the SR
// window's 256 packets (measured on two guests: 64 KiB WRITEs at path MTU
// 1024 ran 8.8 MiB/s with 64 packets in flight, 11 with 256; the round
// trip under load is several ms, far above the ~1 ms of an idle link) and
// an RTO that follows the measured round trip (RFC 6298) but never below
// 30 ms, above most pauses a host scheduler gives a guest; doubling on each
// timeout up to the IBTA timeout (18: 1.07 s), seven retries ride out a
// ~3 s outage (the test matrix blackholes the link for 2 s).
#define RDMA_CM_DEFAULT_INFLIGHT  256
#define RDMA_CM_DEFAULT_RETRY_COUNT 7
#define RDMA_CM_DEFAULT_MIN_RTO_US 30000

struct rdma_cm_id {
  struct ibv_context *verbs;
  struct ibv_qp *qp;             // set by the application before accept/connect
  enum rdma_cm_state state;
  int sock;                      // UDP socket
  uint32_t local_conn_id, remote_conn_id;
  uint32_t peer_ip;              // host order
  uint16_t peer_port;
  uint8_t peer_mac[6];
  uint32_t peer_qpn, peer_psn, my_psn;
  uint8_t peer_mtu, peer_caps, peer_resp_res, peer_init_depth;
  enum ibv_mtu path_mtu;         // chosen [CM-PARAM-1]
  int sr;                        // both ends agreed on selective repeat
  uint16_t reject_reason;        // after RDMA_CM_EREJECTED
  uint8_t private_data[RDMA_CM_PRIVATE_MAX];   // what the peer sent
  uint8_t private_data_len;
  uint8_t last_msg[128];         // last REQ/REP sent, for retransmission
  int last_len;
  // CM messages this connection dropped: not from the peer's IP address
  // and UDP port, or without both connection IDs [SEC-FORGE-7]. Tools
  // print it ("cm: dropped N") when they close.
  uint32_t cm_dropped;
};

struct rdma_cm_id *rdma_create_id(struct ibv_context *verbs);
int  rdma_destroy_id(struct rdma_cm_id *id);
// Passive side.
int  rdma_listen(struct rdma_cm_id *id, int port);
// Waits up to timeout_ms (<0 forever) for a REQ; *conn gets a new id in REQ_RCVD.
int  rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **conn, int timeout_ms);
int  rdma_accept(struct rdma_cm_id *id, const struct rdma_conn_param *param);
int  rdma_reject(struct rdma_cm_id *id, const void *private_data, uint8_t len);
// Active side: id->qp in RESET.
int  rdma_connect(struct rdma_cm_id *id, uint32_t ip, int port, const struct rdma_conn_param *param);
// Both: QP to ERR, DREQ/DREP.
int  rdma_disconnect(struct rdma_cm_id *id);
// Wait up to timeout_ms (<0 forever) for the peer's DREQ; answer DREP, QP to ERR.
int  rdma_wait_disconnect(struct rdma_cm_id *id, int timeout_ms);

void rdma_cm_pack_mr(uint8_t out[16], uint64_t addr, uint32_t rkey, uint32_t len);
void rdma_cm_unpack_mr(const uint8_t in[16], uint64_t *addr, uint32_t *rkey, uint32_t *len);
const char *rdma_cm_reject_str(int reason);
// A fresh connection ID (random, non-zero): what each new connection
// takes; exported so tools can show the generator's output.
uint32_t rdma_cm_new_conn_id(void);
#endif
