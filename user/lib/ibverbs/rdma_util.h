// rdma_util.h: verbs helpers shared by the RDMA tools (rdmatest, rdma_bw,
// rdma_lat, rdmacp, rdmanet_test) and the connection library (rdma_cm.c):
// opening the device, bringing an RC QP to RTS, waiting for a completion
// with a deadline, parsing numbers. user/lib/ibverbs/rdma_util.c. It uses
// the verbs library only; the tools' rdma_cm steps are rdma_cm_util.h's
// (user/lib/rdmacm), above it.
#ifndef RDMA_UTIL_H
#define RDMA_UTIL_H
#include "ibverbs.h"

// The connection facts one side needs about the other.
struct rdma_peer {
  uint32_t qpn, psn, ipv4, rkey;
  uint64_t addr;
  uint32_t len;
  uint8_t mac[6];
};

// The attribute masks of the three steps RESET -> INIT -> RTR -> RTS
// (proto-spec/errors.md, required attributes).
#define RDMAU_MASK_INIT (IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)
#define RDMAU_MASK_RTR (IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | \
                        IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)
#define RDMAU_MASK_RTS (IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | \
                        IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC)

struct ibv_context *rdmau_open(void);
// The device and port 1's active MTU (*mtu); NULL after printing
// "prog: no RDMA device".
struct ibv_context *rdmau_open_port(const char *prog, enum ibv_mtu *mtu);
// Set to 1 to make rdmau_connect choose RoCE v1 (EtherType 0x8915) AVs.
extern int rdmau_roce_v1;
// RESET -> INIT -> RTR -> RTS towards `peer`; returns 0 or an errno.
int rdmau_connect(struct ibv_qp *qp, const struct rdma_peer *peer, uint32_t my_psn,
                  enum ibv_mtu mtu, int access, int rnr_retry, int timeout);
// One completion; returns 1, or 0 after timeout_ms without one, -1 on error.
// Sleeps (ibvx_wait_cq) between polls instead of spinning.
int rdmau_wait(struct ibv_cq *cq, struct ibv_wc *wc, int timeout_ms);
// UD: qp (IBV_QPT_UD, in RESET) through INIT (Q_Key qkey) and RTR to RTS
// (0, or the errno ibv_modify_qp gave); an AH to ipv4 with hop limit 64
// (NULL with errno: EHOSTUNREACH when ipv4 does not answer ARP).
#define RDMAU_UD_QKEY 0x11111111u   // the Linux peer's convention (docs/interop.md)
#define RDMAU_GRH 40                // a UD receive's GRH area, before the payload
int rdmau_ud_ready(struct ibv_qp *qp, uint32_t qkey);
struct ibv_ah *rdmau_ud_ah(struct ibv_pd *pd, uint32_t ipv4);
void rdmau_ud_ah_attr(struct ibv_ah_attr *aa, uint32_t ipv4);   // the attributes rdmau_ud_ah uses
uint32_t rdmau_local_ipv4(struct ibv_context *ctx);
// A starting PSN: 24 random bits from the kernel (getrandom) [SEC-RAND-3].
uint32_t rdmau_psn(void);
int rdmau_parse_ipv4(const char *s, uint32_t *ip);
// A number argument, strictly: decimal digits only, within [min, max].
// Otherwise prints "prog: opt TEXT: not a number|out of range (allowed
// min..max units)" and exits 2. units may be "" (none).
uint64_t rdmau_num(const char *prog, const char *opt, const char *text, uint64_t min,
                   uint64_t max, const char *units);
// Print the device-wide counters (SYS_rdma_dev_stats) as "name value"
// pairs, each followed by sep. Returns -1 if they cannot be read.
int rdmau_print_dev_stats(const char *sep);
#endif
