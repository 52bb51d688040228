// rdma_util.c: see rdma_util.h.
#include "user.h"
#include "rdma_util.h"
#include "kernel/transport/rct.h"
#include "rdma_sys.h"

int rdmau_roce_v1;

struct ibv_context *rdmau_open(void) {
  int n = 0;
  struct ibv_device **list = ibv_get_device_list(&n);
  if (!list || n < 1) { if (list) ibv_free_device_list(list); return NULL; }
  struct ibv_context *ctx = ibv_open_device(list[0]);
  ibv_free_device_list(list);
  return ctx;
}

struct ibv_context *rdmau_open_port(const char *prog, enum ibv_mtu *mtu) {
  struct ibv_port_attr pa;
  struct ibv_context *ctx = rdmau_open();
  if (!ctx || ibv_query_port(ctx, 1, &pa) != 0) {
    printf("%s: no RDMA device\n", prog);
    return NULL;
  }
  *mtu = pa.active_mtu;
  return ctx;
}

int rdmau_ud_ready(struct ibv_qp *qp, uint32_t qkey) {
  struct ibv_qp_attr a;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qkey = qkey;
  int rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
  if (rc) return rc;
  a.qp_state = IBV_QPS_RTR;
  if ((rc = ibv_modify_qp(qp, &a, IBV_QP_STATE))) return rc;
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = rdmau_psn();
  return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

void rdmau_ud_ah_attr(struct ibv_ah_attr *aa, uint32_t ipv4) {
  memset(aa, 0, sizeof *aa);
  aa->is_global = 1;
  aa->port_num = 1;
  aa->grh.hop_limit = 64;
  ibvx_gid_from_ipv4(&aa->grh.dgid, ipv4);
}

struct ibv_ah *rdmau_ud_ah(struct ibv_pd *pd, uint32_t ipv4) {
  struct ibv_ah_attr aa;
  rdmau_ud_ah_attr(&aa, ipv4);
  return ibv_create_ah(pd, &aa);
}

int rdmau_connect(struct ibv_qp *qp, const struct rdma_peer *peer, uint32_t my_psn,
                  enum ibv_mtu mtu, int access, int rnr_retry, int timeout) {
  struct ibv_qp_attr a;
  int rc;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = 1;
  a.qp_access_flags = access;
  rc = ibv_modify_qp(qp, &a, RDMAU_MASK_INIT);
  if (rc) return rc;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = mtu;
  a.dest_qp_num = peer->qpn;
  a.rq_psn = peer->psn;
  a.max_dest_rd_atomic = 16;
  a.min_rnr_timer = 1;
  a.ah_attr.is_global = 1;
  a.ah_attr.port_num = 1;
  a.ah_attr.grh.hop_limit = 64;
  ibvx_gid_from_ipv4(&a.ah_attr.grh.dgid, peer->ipv4);
  struct ibvx_qp_ext ext;
  memset(&ext, 0, sizeof ext);
  memcpy(ext.dmac, peer->mac, 6);
  ext.roce_v1 = rdmau_roce_v1;
  rc = ibvx_modify_qp(qp, &a, RDMAU_MASK_RTR, &ext, 0);
  if (rc) return rc;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = my_psn;
  a.timeout = (uint8_t)timeout;
  a.retry_cnt = 7;
  a.rnr_retry = (uint8_t)rnr_retry;
  a.max_rd_atomic = 16;
  return ibv_modify_qp(qp, &a, RDMAU_MASK_RTS);
}

int rdmau_wait(struct ibv_cq *cq, struct ibv_wc *wc, int timeout_ms) {
  uint64 deadline = clock_ns() + (uint64)timeout_ms * 1000000ULL;
  for (;;) {
    int n = ibv_poll_cq(cq, 1, wc);
    if (n != 0) return n;
    uint64 now = clock_ns();
    if (now > deadline) return 0;
    if (ibvx_wait_cq(cq, (int)((deadline - now) / 1000000) + 1) == EINVAL) return -1;
  }
}

uint32_t rdmau_local_ipv4(struct ibv_context *ctx) {
  union ibv_gid g;
  if (ibv_query_gid(ctx, 1, 0, &g)) return 0;
  return ibvx_gid_to_ipv4(&g);
}

uint32_t rdmau_psn(void) {
  return random_u32() & RCT_PSN_MASK;
}

int rdmau_parse_ipv4(const char *s, uint32_t *ip) {
  uint32_t v = 0;
  for (int part = 0; part < 4; part++) {
    if (*s < '0' || *s > '9') return -1;
    uint32_t x = 0;
    while (*s >= '0' && *s <= '9') x = x * 10 + (uint32_t)(*s++ - '0');
    if (x > 255 || (part < 3 && *s++ != '.')) return -1;
    v = (v << 8) | x;
  }
  if (*s) return -1;
  *ip = v;
  return 0;
}

// The fields of struct rdma_dev_stats, in order (all counters).
static const char *const dev_stat_names[] = {
  "rx_frames", "rx_not_roce", "rx_truncated", "rx_bad_header", "rx_icrc_err",
  "rx_bad_opcode", "rx_unknown_qp", "tx_frames", "nic_rx_frames", "nic_rx_bad",
  "nic_tx_frames", "nic_tx_full", "tx_no_route", "tx_too_big", "async_dropped",
  "live_pds", "live_mrs", "live_cqs", "live_qps", "live_chans", "pool_free_pages", "live_ahs",
  "gsi_rx_mads", "gsi_tx_mads", "gsi_rx_dropped", "gsi_rx_bad_qkey", "gsi_tx_dropped", "gsi_arp_waits",
  "cm_rx", "cm_tx", "cm_retransmits", "cm_dropped", "cm_duplicates", "cm_rej_no_listener",
  "cm_events_dropped", "cm_live_ids", "live_srqs",
};
_Static_assert(sizeof(struct rdma_dev_stats) ==
               sizeof dev_stat_names / sizeof dev_stat_names[0] * sizeof(unsigned long long),
               "a name for every device counter");

int rdmau_print_dev_stats(const char *sep) {
  struct rdma_dev_stats s;
  if (rdma_dev_stats(&s) < 0) return -1;
  const unsigned long long *v = (const unsigned long long *)&s;
  for (unsigned i = 0; i < sizeof dev_stat_names / sizeof dev_stat_names[0]; i++)
    printf("%s %lu%s", dev_stat_names[i], v[i], sep);
  return 0;
}

// "prog: opt TEXT: why (allowed min..max units)" and exit(2).
static void bad_num(const char *prog, const char *opt, const char *text, const char *why,
                   uint64_t min, uint64_t max, const char *units) {
  printf("%s: %s %s: %s (allowed %lu..%lu%s%s)\n", prog, opt, text, why, min, max,
         units[0] ? " " : "", units);
  exit(2);
}

uint64_t rdmau_num(const char *prog, const char *opt, const char *text, uint64_t min,
                   uint64_t max, const char *units) {
  uint64_t v = 0;
  int big = 0;
  const char *s = text;
  if (*s < '0' || *s > '9') bad_num(prog, opt, text, "not a number", min, max, units);
  for (; *s >= '0' && *s <= '9'; s++) {
    uint64_t d = (uint64_t)(*s - '0');
    if (v > (~0ULL - d) / 10) big = 1;
    else v = v * 10 + d;
  }
  if (*s) bad_num(prog, opt, text, "not a number: trailing characters", min, max, units);
  if (big || v < min || v > max) bad_num(prog, opt, text, "out of range", min, max, units);
  return v;
}
