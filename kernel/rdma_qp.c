// rdma_qp.c: reliable-connected queue pairs and posting work.
//
// A QP slot holds the core's struct rct_qp with its send/receive rings and
// responder READ resources. QPNs are drawn at random from [2, 2^24), not
// reused while live, and carry no trace of the slot ([SEC-RAND-4]);
// qp_nums (rdma_idtab.c) maps each live QPN to its slot for the core's
// lookup of every received frame. modify/query translate between the
// ABI's IBV_QP_* masks and values and the core's (rct.h); the state
// machine and the required attributes per transition are the core's
// (IBTA 10.3.1). Posting copies each WR in, converts the IBV_SEND_* flags
// and the network-order immediate, hands it to the core, then runs the
// engine at once so loopback and the NIC see the work without waiting for
// the engine thread.
#include "types.h"
#include "param.h"
#include "proc.h"
#include "printk.h"
#include "vm.h"
#include "klib.h"
#include "syscall.h"
#include "rdma.h"

// IBV_QP_* attribute mask bits (libibverbs values).
#define IBV_QP_STATE              (1u << 0)
#define IBV_QP_CUR_STATE          (1u << 1)
#define IBV_QP_EN_SQD_ASYNC_NOTIFY (1u << 2)
#define IBV_QP_ACCESS_FLAGS       (1u << 3)
#define IBV_QP_PKEY_INDEX         (1u << 4)
#define IBV_QP_PORT               (1u << 5)
#define IBV_QP_QKEY               (1u << 6)
#define IBV_QP_AV                 (1u << 7)
#define IBV_QP_PATH_MIG_STATE     (1u << 8)
#define IBV_QP_TIMEOUT            (1u << 9)
#define IBV_QP_RETRY_CNT          (1u << 10)
#define IBV_QP_RNR_RETRY          (1u << 11)
#define IBV_QP_RQ_PSN             (1u << 12)
#define IBV_QP_MAX_QP_RD_ATOMIC   (1u << 13)
#define IBV_QP_ALT_PATH           (1u << 14)
#define IBV_QP_MIN_RNR_TIMER      (1u << 15)
#define IBV_QP_SQ_PSN             (1u << 16)
#define IBV_QP_MAX_DEST_RD_ATOMIC (1u << 17)
#define IBV_QP_PATH_MTU           (1u << 18)
#define IBV_QP_CAP                (1u << 19)
#define IBV_QP_DEST_QPN           (1u << 20)

#define IBV_SEND_FENCE     1u
#define IBV_SEND_SIGNALED  2u
#define IBV_SEND_SOLICITED 4u
#define IBV_SEND_INLINE    8u

#define IBV_EVENT_QP_FATAL 1

static const struct { uint32 ibv, rct; } mask_map[] = {
  { IBV_QP_STATE, RCT_QP_STATE }, { IBV_QP_CUR_STATE, RCT_QP_CUR_STATE },
  { IBV_QP_ACCESS_FLAGS, RCT_QP_ACCESS_FLAGS }, { IBV_QP_PKEY_INDEX, RCT_QP_PKEY_INDEX },
  { IBV_QP_AV, RCT_QP_AV }, { IBV_QP_PATH_MTU, RCT_QP_PATH_MTU },
  { IBV_QP_TIMEOUT, RCT_QP_TIMEOUT }, { IBV_QP_RETRY_CNT, RCT_QP_RETRY_CNT },
  { IBV_QP_RNR_RETRY, RCT_QP_RNR_RETRY }, { IBV_QP_RQ_PSN, RCT_QP_RQ_PSN },
  { IBV_QP_MAX_QP_RD_ATOMIC, RCT_QP_MAX_QP_RD_ATOMIC }, { IBV_QP_MIN_RNR_TIMER, RCT_QP_MIN_RNR_TIMER },
  { IBV_QP_SQ_PSN, RCT_QP_SQ_PSN }, { IBV_QP_MAX_DEST_RD_ATOMIC, RCT_QP_MAX_DEST_RD_ATOMIC },
  { IBV_QP_DEST_QPN, RCT_QP_DEST_QPN }, { RDMA_QP_SR, RCT_QP_SR },
  { RDMA_QP_ADAPTIVE_RTO, RCT_QP_ADAPTIVE_RTO }, { RDMA_QP_MAX_INFLIGHT, RCT_QP_MAX_INFLIGHT },
  { IBV_QP_PORT, RCT_QP_PORT },
};
// Not in the map, so refused (EINVAL) like every other unlisted bit
// ([QP-STATE-2]): IBV_QP_QKEY (an RC QP has no Q_Key) and
// IBV_QP_EN_SQD_ASYNC_NOTIFY (no SQ-drained event is raised; errors.md).

static struct rdma_qp *qp_get(int h) {
  if (h < 0 || h >= RDMA_MAX_QP) return NULL;
  struct rdma_qp *q = &rdma_qps[h];
  return (rdma_live(rdma.qp_live, h) && q->owner == rdma_cur_pid()) ? q : NULL;
}

// Every live QPN -> its slot; at least twice RDMA_MAX_QP entries.
#define QP_NUM_BITS 6
_Static_assert((1 << QP_NUM_BITS) >= 2 * RDMA_MAX_QP, "qp_nums too small");
static struct rdma_id_ent qp_num_ents[1 << QP_NUM_BITS];
static struct rdma_idtab qp_nums = { qp_num_ents, QP_NUM_BITS };

// The core's QPN lookup (rct_dev_attr.qp_lookup). Caller holds rdma.lock.
struct rct_qp *rdma_qp_lookup(void *ctx, uint32 qpn) {
  int h = rdma_idtab_find(&qp_nums, qpn);
  return h < 0 ? NULL : &rdma_qps[h].qp;
}

static uint32 pow2_at_least(uint32 n) {
  uint32 p = 1;
  while (p < n) p <<= 1;
  return p;
}

// rdma_create_qp(struct rdma_qp_create *io) -> qp
int64 sys_rdma_create_qp(void) {
  struct rdma_qp_create c;
  pagetable_t pt = current()->pagetable;
  uint64 uva = arg_addr(0);
  if (copy_in(pt, &c, uva, sizeof c) < 0) return -1;
  if (c.max_send_wr > RDMA_MAX_QP_WR || c.max_recv_wr > RDMA_MAX_QP_WR ||
      c.max_send_sge > RDMA_MAX_SGE || c.max_recv_sge > RDMA_MAX_SGE) return -1;
  int h = -1;
  spin_lock(&rdma.lock);
  struct rdma_cq *scq = rdma_cq_get(c.send_cq), *rcq = rdma_cq_get(c.recv_cq);
  if (rdma_pd_get(c.pd) < 0 || !scq || !rcq) goto out;
  for (int i = 0; i < RDMA_MAX_QP && h < 0; i++)
    if (!rdma_live(rdma.qp_live, i)) h = i;
  if (h < 0) goto out;
  struct rdma_qp *q = &rdma_qps[h];
  struct rct_qp_init_attr ia;
  memset(&ia, 0, sizeof ia);
  ia.qpn = rdma_idtab_add(&qp_nums, 2, RCT_QPN_MASK, h);   // [SEC-RAND-4]
  ia.pd = (uint32)c.pd;
  ia.sq = q->sq;
  ia.sq_size = pow2_at_least(c.max_send_wr ? c.max_send_wr : 1);
  ia.rq = q->rq;
  ia.rq_size = pow2_at_least(c.max_recv_wr ? c.max_recv_wr : 1);
  ia.rd = q->rd;
  ia.rd_size = RDMA_MAX_RD;
  ia.send_cq = &scq->cq;
  ia.recv_cq = &rcq->cq;
  ia.sq_sig_all = c.sq_sig_all != 0;
  if (rct_qp_init(&rdma.dev, &q->qp, &ia) != RCT_OK) {
    rdma_idtab_del(&qp_nums, ia.qpn);
    h = -1;
    goto out;
  }
  rdma.qp_live |= 1u << h;
  q->owner = rdma_cur_pid();
  q->pd = c.pd;
  q->send_cq = c.send_cq;
  q->recv_cq = c.recv_cq;
  q->max_send_sge = c.max_send_sge ? c.max_send_sge : 1;
  q->max_recv_sge = c.max_recv_sge ? c.max_recv_sge : 1;
  q->last_state = RCT_QPS_RESET;
  rdma_pds[c.pd].refs++;
  scq->refs++;
  rcq->refs++;
  c.max_send_wr = ia.sq_size;
  c.max_recv_wr = ia.rq_size;
  c.max_send_sge = q->max_send_sge;
  c.max_recv_sge = q->max_recv_sge;
  c.qp_num = ia.qpn;
out:
  spin_unlock(&rdma.lock);
  if (h >= 0 && copy_out(pt, uva, &c, sizeof c) < 0) {
    // The caller cannot learn the handle: undo.
    spin_lock(&rdma.lock);
    rdma_qp_release_all(-1 - h);
    spin_unlock(&rdma.lock);
    return -1;
  }
  return h;
}

// Caller holds rdma.lock. An ACK the core holds for a request to follow
// ([RESP-ACK-5]) leaves first: it may answer the peer's last message.
static void qp_free(int h) {
  struct rdma_qp *q = &rdma_qps[h];
  if (rct_qp_release_ack(&q->qp)) rdma_progress(RDMA_BUDGET);
  rdma_idtab_del(&qp_nums, q->qp.init.qpn);
  rct_qp_destroy(&q->qp);
  rdma_pds[q->pd].refs--;
  rdma_cqs[q->send_cq].refs--;
  rdma_cqs[q->recv_cq].refs--;
  rdma.qp_live &= ~(1u << h);
}

// Lock held. pid >= 0: every QP of that process; pid = -1 - h: slot h.
void rdma_qp_release_all(int pid) {
  rdma_for_each_live(i, rdma.qp_live)
    if (rdma_qps[i].owner == pid || pid == -1 - i) qp_free(i);
}

int64 sys_rdma_destroy_qp(void) {
  int h = arg_int(0), r = -1;
  spin_lock(&rdma.lock);
  if (qp_get(h)) {
    qp_free(h);
    r = 0;
  }
  spin_unlock(&rdma.lock);
  return r;
}

static int abi_to_rct_attr(const struct rdma_qp_attr *a, uint32 ibv_mask,
                           struct rct_qp_attr *r, uint32 *rct_mask) {
  *rct_mask = 0;
  uint32 known = RDMA_QP_ROCE_V1;
  if ((ibv_mask & RDMA_QP_ROCE_V1) && !(ibv_mask & IBV_QP_AV)) return -1;  // qualifies the AV only
  for (int i = 0; i < (int)ARRAY_LEN(mask_map); i++) {
    known |= mask_map[i].ibv;
    if (ibv_mask & mask_map[i].ibv) *rct_mask |= mask_map[i].rct;
  }
  if (ibv_mask & ~known) return -1;              // ALT_PATH, CAP, ...: not supported
  memset(r, 0, sizeof *r);
  r->qp_state = (enum rct_qp_state)a->qp_state;
  r->cur_qp_state = (enum rct_qp_state)a->cur_qp_state;
  r->qp_access_flags = a->qp_access_flags;
  r->pkey_index = a->pkey_index > 0xffff ? 0xffff : (uint16)a->pkey_index;
  r->port_num = a->port_num > 0xff ? 0xff : (uint8)a->port_num;
  r->path_mtu = (enum rct_mtu)a->path_mtu;
  r->timeout = (uint8)a->timeout;
  r->retry_cnt = (uint8)a->retry_cnt;
  r->rnr_retry = (uint8)a->rnr_retry;
  r->min_rnr_timer = (uint8)a->min_rnr_timer;
  r->rq_psn = a->rq_psn;
  r->sq_psn = a->sq_psn;
  r->max_rd_atomic = (uint8)a->max_rd_atomic;
  r->max_dest_rd_atomic = (uint8)a->max_dest_rd_atomic;
  r->dest_qp_num = a->dest_qp_num;
  r->sr_enable = a->sr_enable != 0;
  r->adaptive_rto = a->adaptive_rto != 0;
  r->min_rto_ns = a->min_rto_ns;
  r->max_inflight = a->max_inflight;
  if (a->max_dest_rd_atomic > RDMA_MAX_RD || a->max_rd_atomic > RDMA_MAX_RD) return -1;
  if (ibv_mask & IBV_QP_AV) {
    static const uint8 zero[6];
    r->ah.dipv4 = a->dipv4;
    r->ah.ttl = a->hop_limit;
    r->ah.dscp = a->traffic_class >> 2;
    r->ah.roce_v1 = (ibv_mask & RDMA_QP_ROCE_V1) != 0;
    if (memcmp(a->dmac, zero, 6) != 0) memcpy(r->ah.dmac, a->dmac, 6);
    else if (rdma_neigh_lookup(a->dipv4, r->ah.dmac) < 0) return -1;
  }
  return 0;
}

// Fill a->dmac when the caller left it zero: our own address, the
// neighbour table, else ARP through the network stack (may sleep).
static void resolve_peer(struct rdma_qp_attr *a) {
  static const uint8 zero[6];
  if (memcmp(a->dmac, zero, 6) != 0) return;
  spin_lock(&rdma.lock);
  int known = rdma_neigh_lookup(a->dipv4, a->dmac) == 0;
  spin_unlock(&rdma.lock);
  if (!known && rdma_net_resolve(a->dipv4, a->dmac) < 0) memset(a->dmac, 0, 6);
}

// rdma_modify_qp(qp, struct rdma_qp_attr *attr, IBV_QP_* mask)
int64 sys_rdma_modify_qp(void) {
  int h = arg_int(0);
  uint32 mask = (uint32)arg_int(2);
  struct rdma_qp_attr a;
  struct rct_qp_attr r;
  uint32 rmask;
  if (copy_in(current()->pagetable, &a, arg_addr(1), sizeof a) < 0) return -1;
  if (mask & IBV_QP_AV) resolve_peer(&a);
  spin_lock(&rdma.lock);
  struct rdma_qp *q = qp_get(h);
  int rc = -1;
  if (q && abi_to_rct_attr(&a, mask, &r, &rmask) == 0 && rct_qp_modify(&q->qp, &r, rmask) == RCT_OK) {
    q->last_state = q->qp.attr.qp_state;
    rc = 0;
    if (rdma_progress(RDMA_BUDGET)) rdma_kick();   // flushes, first frames
  }
  spin_unlock(&rdma.lock);
  return rc;
}

int64 sys_rdma_query_qp(void) {
  int h = arg_int(0);
  struct rct_qp_attr r;
  struct rdma_qp_attr a;
  memset(&a, 0, sizeof a);
  spin_lock(&rdma.lock);
  struct rdma_qp *q = qp_get(h);
  if (!q) { spin_unlock(&rdma.lock); return -1; }
  rct_qp_query(&q->qp, &r);
  a.max_send_wr = q->qp.init.sq_size;
  a.max_recv_wr = q->qp.init.rq_size;
  a.max_send_sge = q->max_send_sge;
  a.max_recv_sge = q->max_recv_sge;
  spin_unlock(&rdma.lock);
  a.qp_state = r.qp_state;
  a.cur_qp_state = r.qp_state;
  a.path_mtu = r.path_mtu;
  a.qp_access_flags = r.qp_access_flags;
  a.rq_psn = r.rq_psn;
  a.sq_psn = r.sq_psn;
  a.dest_qp_num = r.dest_qp_num;
  a.timeout = r.timeout;
  a.retry_cnt = r.retry_cnt;
  a.rnr_retry = r.rnr_retry;
  a.min_rnr_timer = r.min_rnr_timer;
  a.max_rd_atomic = r.max_rd_atomic;
  a.max_dest_rd_atomic = r.max_dest_rd_atomic;
  a.dipv4 = r.ah.dipv4;
  memcpy(a.dmac, r.ah.dmac, 6);
  a.hop_limit = r.ah.ttl;
  a.traffic_class = (uint8)(r.ah.dscp << 2);
  a.sr_enable = r.sr_enable;
  a.adaptive_rto = r.adaptive_rto;
  a.min_rto_ns = r.min_rto_ns;
  a.max_inflight = r.max_inflight;
  return copy_out(current()->pagetable, arg_addr(1), &a, sizeof a);
}

// The core's refusal of a WR -> the errno a libibverbs caller expects.
static const struct { int rct, err; } post_errs[] = {
  { RCT_EINVAL, RDMA_EINVAL }, { RCT_ESTATE, RDMA_EINVAL }, { RCT_ENOTSUP, RDMA_EINVAL },
  { RCT_ENOSPC, RDMA_ENOMEM },
};

static int post_err(int rct) {
  for (int i = 0; i < (int)ARRAY_LEN(post_errs); i++)
    if (post_errs[i].rct == rct) return post_errs[i].err;
  return RDMA_EINVAL;
}

static void copy_sges(struct rct_sge *out, const struct rdma_sge *in, int n) {
  for (int i = 0; i < n; i++) {
    out[i].addr = in[i].addr;
    out[i].length = in[i].length;
    out[i].lkey = in[i].lkey;
  }
}

// Returns 0, or the RDMA_E* reason the WR was refused.
static int post_one_send(struct rdma_qp *q, const struct rdma_send_wr *w) {
  if (w->opcode >= RCT_WR_COUNT || w->num_sge > q->max_send_sge) return RDMA_EINVAL;
  struct rct_sge sg[RDMA_MAX_SGE];
  struct rct_send_wr r;
  memset(&r, 0, sizeof r);
  copy_sges(sg, w->sg, (int)w->num_sge);
  r.wr_id = w->wr_id;
  r.opcode = (enum rct_wr_opcode)w->opcode;
  r.send_flags = ((w->send_flags & IBV_SEND_SIGNALED) ? RCT_SEND_SIGNALED : 0) |
                 ((w->send_flags & IBV_SEND_SOLICITED) ? RCT_SEND_SOLICITED : 0) |
                 ((w->send_flags & IBV_SEND_FENCE) ? RCT_SEND_FENCE : 0);
  r.sg_list = sg;
  r.num_sge = (int)w->num_sge;
  r.imm_data = __builtin_bswap32(w->imm_data);
  r.remote_addr = w->remote_addr;
  r.rkey = w->rkey;
  int rc = rct_post_send(&q->qp, &r);
  return rc == RCT_OK ? 0 : post_err(rc);
}

// Returns 0, or the RDMA_E* reason the WR was refused.
static int post_one_recv(struct rdma_qp *q, const struct rdma_recv_wr *w) {
  if (w->num_sge > q->max_recv_sge) return RDMA_EINVAL;
  struct rct_sge sg[RDMA_MAX_SGE];
  struct rct_recv_wr r;
  copy_sges(sg, w->sg, (int)w->num_sge);
  r.wr_id = w->wr_id;
  r.sg_list = sg;
  r.num_sge = (int)w->num_sge;
  int rc = rct_post_recv(&q->qp, &r);
  return rc == RCT_OK ? 0 : post_err(rc);
}

// rdma_post_send / rdma_post_recv(qp, wr array, n, int *err) -> WRs
// accepted (the first refused one is index "accepted", and *err says why);
// -1 for a bad handle or pointer.
static int64 post_common(int is_send) {
  int h = arg_int(0), n = arg_int(2), err = 0;
  uint64 uva = arg_addr(1), err_uva = arg_addr(3);
  pagetable_t pt = current()->pagetable;
  uint64 size = is_send ? sizeof(struct rdma_send_wr) : sizeof(struct rdma_recv_wr);
  if (n < 0) return -1;
  // The error word must be writable before anything is posted: a bad
  // pointer is -1 with the queue unchanged, not WRs posted and then -1.
  if (err_uva && copy_out(pt, err_uva, &err, sizeof err) < 0) return -1;
  int done = 0;
  spin_lock(&rdma.lock);
  struct rdma_qp *q = qp_get(h);
  if (!q) { spin_unlock(&rdma.lock); return -1; }
  for (; done < n; done++) {
    union { struct rdma_send_wr s; struct rdma_recv_wr r; } w;
    if (copy_in(pt, &w, uva + (uint64)done * size, size) < 0) {
      if (done == 0) done = -1;
      break;
    }
    if ((err = is_send ? post_one_send(q, &w.s) : post_one_recv(q, &w.r)) != 0) break;
  }
  if (rdma_progress(RDMA_BUDGET)) rdma_kick();
  spin_unlock(&rdma.lock);
  if (err && err_uva && copy_out(pt, err_uva, &err, sizeof err) < 0) return -1;
  return done;
}

int64 sys_rdma_post_send(void) { return post_common(1); }
int64 sys_rdma_post_recv(void) { return post_common(0); }

// Lock held. A QP that entered ERR on its own (a fatal transport error)
// raises IBV_EVENT_QP_FATAL for its owner.
void rdma_qp_scan(void) {
  rdma_for_each_live(i, rdma.qp_live) {
    struct rdma_qp *q = &rdma_qps[i];
    if (q->qp.attr.qp_state == q->last_state) continue;
    if (q->qp.attr.qp_state == RCT_QPS_ERR) rdma_async_push(q->owner, IBV_EVENT_QP_FATAL, i, 0);
    q->last_state = q->qp.attr.qp_state;
  }
}

// rdma_dev_stats(out): the device-wide counters of struct rdma_dev_stats.
int64 sys_rdma_dev_stats(void) {
  struct rdma_dev_stats s;
  spin_lock(&rdma.lock);
  const struct rct_dev_counters *c = &rdma.dev.cnt;
  s = (struct rdma_dev_stats){
    .rx_frames = c->rx_frames, .rx_not_roce = c->rx_not_roce, .rx_truncated = c->rx_truncated,
    .rx_bad_header = c->rx_bad_header, .rx_icrc_err = c->rx_icrc_err,
    .rx_bad_opcode = c->rx_bad_opcode, .rx_unknown_qp = c->rx_unknown_qp, .tx_frames = c->tx_frames,
    .nic_rx_frames = rdma_net_rx_frames, .nic_rx_bad = rdma_net_rx_bad,
    .nic_tx_frames = rdma_net_tx_frames, .nic_tx_full = rdma_net_tx_full,
    .tx_no_route = rdma.tx_no_route, .tx_too_big = rdma.tx_too_big,
    .async_dropped = rdma.async_dropped,
  };
  spin_unlock(&rdma.lock);
  return copy_out(current()->pagetable, arg_addr(0), &s, sizeof s) < 0 ? -1 : 0;
}

static uint64 sum2(uint64 a, uint64 b) { return a + b; }

// rdma_qp_stats(i, out): 0 = slot i holds a QP (of any process), 1 = empty
// slot, -1 = past the table or bad pointer.
int64 sys_rdma_qp_stats(void) {
  int i = arg_int(0);
  if (i < 0 || i >= RDMA_MAX_QP) return -1;
  struct rdma_qp_stats s;
  memset(&s, 0, sizeof s);
  spin_lock(&rdma.lock);
  struct rdma_qp *q = &rdma_qps[i];
  if (!rdma_live(rdma.qp_live, i)) { spin_unlock(&rdma.lock); return 1; }
  const struct rct_qp_counters *c = &q->qp.cnt;
  s.handle = q->owner == rdma_cur_pid() ? i : -1;
  s.owner_pid = q->owner;
  s.qp_num = q->qp.init.qpn;
  s.dest_qp_num = q->qp.attr.dest_qp_num;
  s.state = q->qp.attr.qp_state;
  s.sr = q->qp.sr;
  s.req_state = rct_qp_req_state(&q->qp);
  s.resp_state = rct_qp_resp_state(&q->qp);
  s.comp_state = rct_qp_comp_state(&q->qp);
  s.tx_frames = c->tx_frames; s.tx_bytes = c->tx_bytes;
  s.rx_frames = c->rx_frames; s.rx_bytes = c->rx_bytes;
  s.tx_payload_bytes = c->tx_payload_bytes; s.rx_payload_bytes = c->rx_payload_bytes;
  s.tx_retransmits = c->tx_retransmits; s.timeouts = c->timeouts; s.rnr_timeouts = c->rnr_timeouts;
  s.tx_ack = c->tx_ack; s.rx_ack = c->rx_ack;
  s.tx_nak = c->tx_nak_seq + c->tx_nak_inv + c->tx_nak_acc + c->tx_nak_op + c->tx_sack;
  s.rx_nak = c->rx_nak_seq + c->rx_nak_inv + c->rx_nak_acc + c->rx_nak_op + c->rx_sack;
  s.tx_rnr_nak = c->tx_rnr_nak; s.rx_rnr_nak = c->rx_rnr_nak;
  s.rx_dup = c->rx_dup; s.rx_out_of_seq = c->rx_out_of_seq; s.rx_out_of_window = c->rx_out_of_window;
  s.rx_dropped = sum2(c->rx_bad_state + c->rx_bad_opcode + c->rx_bad_length + c->rx_truncated,
                      c->rx_wrong_encap + c->rx_wrong_peer + c->rx_bad_aeth + c->rx_unexpected);
  s.completions = c->completions; s.error_completions = c->error_completions;
  s.flushed = c->flushed; s.cq_overflow = c->cq_overflow;
  spin_unlock(&rdma.lock);
  return copy_out(current()->pagetable, arg_addr(1), &s, sizeof s) < 0 ? -1 : 0;
}
