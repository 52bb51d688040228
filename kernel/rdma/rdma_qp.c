// rdma_qp.c: queue pairs (RC and UD) and posting work.
//
// An RC QP slot holds the core's struct rct_qp; its send/receive rings and
// responder READ resources are one run of pool pages (rdma_pool.c), sized
// to the queues asked for, taken at create and given back at destroy. A
// UD QP is only the core's QP base: its struct rct_ud_qp heads its own run
// of pool pages, before its rings, and the slot's rct_qp goes unused.
// Every type-independent call goes through the slot's base (rct_qpb_*). QPNs are drawn at random from [2, 2^24) (1 is the GSI's, gsi.c), not
// reused while live, and carry no trace of the slot ([SEC-RAND-4]);
// qp_nums (rdma_idtab.c) maps each live QPN to its slot for the core's
// lookup of every received frame. modify/query translate the attributes
// (rdma_abi.c); the state machine and the required attributes per
// transition are the core's (IBTA 10.3.1). Posting hands the WRs, as the
// system call copied them in (the core's layout), to the core, then runs
// the engine at once so loopback and the NIC see the work without waiting
// for the engine thread. Functions here take kernel values; the system
// calls reach it through the front end (uverbs.c).
#include "lib/types.h"
#include "lib/param.h"
#include "core/printk.h"
#include "lib/klib.h"
#include "rdma/rdma.h"

// Lock held. qp's slot if it is a live QP of o, else -1.
int rdma_qp_owned(struct kv_owner *o, const struct rdma_qp *qp) {
  if (qp < rdma_qps || qp >= rdma_qps + RDMA_MAX_QP) return -1;
  int h = (int)(qp - rdma_qps);
  return (rdma_live(rdma.qp_live, h) && qp->owner == o) ? h : -1;
}

// Every live QPN -> its slot; at least twice RDMA_MAX_QP entries.
#define QP_NUM_BITS 10
_Static_assert((1 << QP_NUM_BITS) >= 2 * RDMA_MAX_QP, "qp_nums too small");
static struct rdma_id_ent qp_num_ents[1 << QP_NUM_BITS];
static struct rdma_idtab qp_nums = { qp_num_ents, QP_NUM_BITS };

// The core's QPN lookup, every type (rct_dev_attr.qp_lookup_any).
// Caller holds rdma.lock.
struct rct_qp_base *rdma_qp_lookup_any(void *ctx, uint32 qpn) {
  int h = rdma_idtab_find(&qp_nums, qpn);
  if (h < 0) return NULL;
  rdma_watch(h);                     // a frame for it: it may arm a timer
  return rdma_qps[h].base;
}

// A UD QP's run of pool pages: the struct rct_ud_qp, then its rings.
#define UD_HEAD_BYTES ((sizeof(struct rct_ud_qp) + 63) & ~(uint64)63)
#define UD_RUN_BYTES(s, r) (UD_HEAD_BYTES + (s) * sizeof(struct rct_send_wqe) + \
                            (r) * sizeof(struct rct_recv_wqe))
_Static_assert(UD_RUN_BYTES(RDMA_POOL_QP_WR, RDMA_POOL_QP_WR) <=
               RDMA_QP_RING_BYTES(RDMA_POOL_QP_WR, RDMA_POOL_QP_WR) + PGSIZE,
               "a UD QP takes about what an RC QP's rings take from the pool");

// Lock held; slot h free, c checked, its PD and CQs o's. The rings take
// one run of pool pages: RDMA_NO_RESOURCES if none is long enough.
static int qp_init(struct kv_owner *o, int h, struct kv_qp_init *c, int pdh, int sh, int rh) {
  struct rdma_qp *q = &rdma_qps[h];
  struct rct_qp_init_attr ia;
  memset(&ia, 0, sizeof ia);
  ia.sq_size = rdma_pow2_at_least(c->max_send_wr ? c->max_send_wr : 1);
  // on an SRQ its own ring holds only the WQEs it took [SRQ-TAKE-4]
  ia.rq_size = c->srq ? RDMA_SRQ_TAKEN : rdma_pow2_at_least(c->max_recv_wr ? c->max_recv_wr : 1);
  ia.srq = c->srq ? &c->srq->srq : NULL;
  int ud = c->qp_type == KV_QPT_UD;
  uint64 bytes = ud ? UD_RUN_BYTES(ia.sq_size, ia.rq_size) : RDMA_QP_RING_BYTES(ia.sq_size, ia.rq_size);
  int pages = (int)RDMA_PAGES(bytes);
  uint8 *rings = rdma_pool_alloc(pages);
  if (!rings) return RDMA_NO_RESOURCES;
  struct rct_ud_qp *udq = (struct rct_ud_qp *)rings;
  ia.sq = (struct rct_send_wqe *)(ud ? rings + UD_HEAD_BYTES : rings);
  ia.rq = (struct rct_recv_wqe *)(ia.sq + ia.sq_size);
  ia.rd = ud ? NULL : (struct rct_rd_res *)(ia.rq + ia.rq_size);
  ia.rd_size = ud ? 0 : RDMA_MAX_RD;
  if (c->gsi) {                                              // QPN 1: the GSI's, fixed
    if (!ud || rdma_idtab_put(&qp_nums, RDMA_GSI_QPN, h) < 0) {
      rdma_pool_free(rings, pages);
      return -1;
    }
    ia.qpn = RDMA_GSI_QPN;
  } else {
    ia.qpn = rdma_idtab_add(&qp_nums, 2, RCT_QPN_MASK, h);   // [SEC-RAND-4]
  }
  ia.pd = (uint32)pdh;
  ia.send_cq = &c->send_cq->cq;
  ia.recv_cq = &c->recv_cq->cq;
  ia.sq_sig_all = c->sq_sig_all != 0;
  int r = ud ? rct_ud_qp_init(&rdma.dev, udq, &ia) : rct_qp_init(&rdma.dev, &q->qp, &ia);
  if (r != RCT_OK) {
    rdma_idtab_del(&qp_nums, ia.qpn);
    rdma_pool_free(rings, pages);
    return -1;
  }
  q->type = c->qp_type;
  q->base = ud ? &udq->base : &q->qp.base;
  q->rings = rings;
  q->ring_pages = pages;
  rdma_live_set(rdma.qp_live, h);
  q->owner = o;
  q->pd = pdh;
  q->send_cq = sh;
  q->recv_cq = rh;
  q->srq = c->srq ? (int)(c->srq - rdma_srqs) : -1;
  q->max_send_sge = c->max_send_sge ? c->max_send_sge : 1;
  q->max_recv_sge = c->srq ? 0 : c->max_recv_sge ? c->max_recv_sge : 1;
  rdma_pds[pdh].refs++;
  rdma_cqs[sh].refs++;
  rdma_cqs[rh].refs++;
  c->max_send_wr = ia.sq_size;
  c->max_recv_wr = c->srq ? 0 : ia.rq_size;
  c->max_send_sge = q->max_send_sge;
  c->max_recv_sge = q->max_recv_sge;
  c->qp_num = ia.qpn;
  return 0;
}

// Lock held. c->srq is none, or o's SRQ in PD pdh [SRQ-VERB-6].
static int srq_ok(struct kv_owner *o, const struct kv_qp_init *c, int pdh) {
  return !c->srq || (rdma_srq_owned(o, c->srq) >= 0 && c->srq->pd == pdh && !c->gsi);
}

// A QP of o's type c->qp_type (RC or UD) over o's PD and CQs with c's
// queue sizes (and o's SRQ c->srq, if not NULL); fills in what was granted
// and the QPN. 0 and *out, -1 for a bad argument, or RDMA_NO_RESOURCES:
// every slot is taken or the ring pool has no run for the rings.
int kv_create_qp(struct kv_owner *o, struct kv_qp_init *c, struct rdma_qp **out) {
  if ((c->qp_type != KV_QPT_RC && c->qp_type != KV_QPT_UD) ||
      c->max_send_wr > RDMA_MAX_QP_WR || c->max_send_sge > RDMA_MAX_SGE ||
      (!c->srq && (c->max_recv_wr > RDMA_MAX_QP_WR || c->max_recv_sge > RDMA_MAX_SGE))) return -1;
  int rc = -1;
  spin_lock(&rdma.lock);
  int pdh = rdma_pd_owned(o, c->pd), sh = rdma_cq_owned(o, c->send_cq), rh = rdma_cq_owned(o, c->recv_cq);
  if (pdh >= 0 && sh >= 0 && rh >= 0 && srq_ok(o, c, pdh)) {
    int slot = rdma_live_free(rdma.qp_live);
    rc = slot < 0 ? RDMA_NO_RESOURCES : qp_init(o, slot, c, pdh, sh, rh);
    if (rc == 0) *out = &rdma_qps[slot];
  }
  spin_unlock(&rdma.lock);
  return rc;
}

// Caller holds rdma.lock. An ACK the core holds for a request to follow
// ([RESP-ACK-5]) leaves first: it may answer the peer's last message.
static void qp_free(int h) {
  struct rdma_qp *q = &rdma_qps[h];
  if (q->type == KV_QPT_RC && rct_qp_release_ack(&q->qp)) rdma_progress(RDMA_BUDGET);
  rdma_idtab_del(&qp_nums, q->base->init.qpn);
  rct_qpb_destroy(q->base);
  rdma_pds[q->pd].refs--;
  rdma_cqs[q->send_cq].refs--;
  rdma_cqs[q->recv_cq].refs--;
  rdma_unwatch(h);
  rdma_pool_free(q->rings, q->ring_pages);
  q->rings = NULL;
  q->base = NULL;
  rdma_live_clear(rdma.qp_live, h);
}

// Lock held. Every QP of o.
void rdma_qp_release_all(struct kv_owner *o) {
  rdma_for_each_live(i, rdma.qp_live)
    if (rdma_qps[i].owner == o) qp_free(i);
}

// Lock held. Destroys o's QP qp: its slot, or -1.
int rdma_qp_destroy_locked(struct kv_owner *o, struct rdma_qp *qp) {
  int h = rdma_qp_owned(o, qp);
  if (h >= 0) qp_free(h);
  return h;
}

// Destroys o's QP qp: 0, or -1.
int kv_destroy_qp(struct kv_owner *o, struct rdma_qp *qp) {
  spin_lock(&rdma.lock);
  int h = rdma_qp_destroy_locked(o, qp);
  spin_unlock(&rdma.lock);
  return h >= 0 ? 0 : -1;
}

// Fill a->dmac when the caller left it zero (may sleep).
static void resolve_peer(struct rdma_qp_attr *a) {
  static const uint8 zero[6];
  if (memcmp(a->dmac, zero, 6) == 0) rdma_resolve_mac(a->dipv4, a->dmac);
}

// May sleep resolving the peer's MAC. Applies a's attributes named by
// mask (IBV_QP_* | RDMA_QP_*) to o's QP qp: 0, or -1.
int kv_modify_qp(struct kv_owner *o, struct rdma_qp *q, struct rdma_qp_attr *a, uint32 mask) {
  struct rct_qp_attr r;
  uint32 rmask;
  int rc = -1;
  if (mask & IBV_QP_AV) resolve_peer(a);
  spin_lock(&rdma.lock);
  int h = rdma_qp_owned(o, q);
  if (h >= 0 && rdma_qp_attr_in(a, mask, &r, &rmask) == 0 && rct_qpb_modify(q->base, &r, rmask) == RCT_OK) {
    rc = 0;
    rdma_watch(h);
    if (rdma_progress(RDMA_BUDGET)) rdma_kick();   // flushes, first frames
  }
  spin_unlock(&rdma.lock);
  return rc;
}

// o's QP q's attributes into *a: 0, or -1.
int kv_query_qp(struct kv_owner *o, struct rdma_qp *q, struct rdma_qp_attr *a) {
  struct rct_qp_attr r;
  memset(a, 0, sizeof *a);
  spin_lock(&rdma.lock);
  int h = rdma_qp_owned(o, q);
  if (h >= 0) {
    rct_qpb_query(q->base, &r);
    rdma_qp_attr_out(&r, a);
    a->max_send_wr = q->base->init.sq_size;
    a->max_recv_wr = q->srq < 0 ? q->base->init.rq_size : 0;
    a->max_send_sge = q->max_send_sge;
    a->max_recv_sge = q->max_recv_sge;
  }
  spin_unlock(&rdma.lock);
  return h >= 0 ? 0 : -1;
}

// The core's refusal of a WR -> the errno a libibverbs caller expects.
static const struct { int rct, err; } post_errs[] = {
  { RCT_EINVAL, RDMA_EINVAL }, { RCT_ESTATE, RDMA_EINVAL }, { RCT_ENOTSUP, RDMA_EINVAL },
  { RCT_ENOSPC, RDMA_ENOMEM },
};

int rdma_post_errno(int rct) {
  if (rct == RCT_OK) return 0;
  for (int i = 0; i < (int)ARRAY_LEN(post_errs); i++)
    if (post_errs[i].rct == rct) return post_errs[i].err;
  return RDMA_EINVAL;
}

// The size of each posting kind's WR (rdma.h RDMA_POST_*).
static const uint64 post_size[] = {
  [RDMA_POST_RECV] = sizeof(struct rct_recv_wr), [RDMA_POST_SEND] = sizeof(struct rct_send_wr),
  [RDMA_POST_UD_SEND] = sizeof(struct kv_ud_send_wr),
};

// Lock held. A UD send WR of o's to the core: its AH, QPN and Q_Key.
static int post_ud(struct kv_owner *o, struct rdma_qp *q, const struct kv_ud_send_wr *u) {
  if (rdma_ah_owned(o, u->ah) < 0) return RCT_EINVAL;
  struct rct_ud_dest d = u->ah->dest;
  d.dqpn = u->remote_qpn;
  d.qkey = u->remote_qkey;
  return rct_ud_post_send((struct rct_ud_qp *)q->base, &u->wr, &d);
}

// Lock held; q is o's (rdma_qp_owned). Posts one WR of kind (RDMA_POST_*)
// to q: 0, or the RDMA_E* reason it was refused. A send of the other
// type's kind is refused. No engine pass: the caller runs or is one.
int rdma_qp_post_locked(struct kv_owner *o, struct rdma_qp *q, int kind, const void *wr) {
  const struct rct_send_wr *s = kind == RDMA_POST_UD_SEND ? &((const struct kv_ud_send_wr *)wr)->wr : wr;
  const struct rct_recv_wr *r = wr;
  uint32 nsge = (uint32)(kind != RDMA_POST_RECV ? s->num_sge : r->num_sge);
  if (nsge > (kind != RDMA_POST_RECV ? q->max_send_sge : q->max_recv_sge)) return RDMA_EINVAL;
  int rc;
  if (kind == RDMA_POST_RECV) rc = rct_qpb_post_recv(q->base, r);
  else if ((kind == RDMA_POST_UD_SEND) != (q->type == KV_QPT_UD)) rc = RCT_EINVAL;
  else rc = kind == RDMA_POST_SEND ? rct_post_send(&q->qp, s) : post_ud(o, q, wr);
  return rdma_post_errno(rc);
}

// Lock NOT held. Posts wr[0..n) (struct rct_send_wr or rct_recv_wr, their
// SGEs in kernel memory) to o's QP q in order. Returns how many were
// accepted, *err the first refused one's RDMA_E* reason (0 if none), or
// -1 for a QP that is not o's.
static int post_many(struct kv_owner *o, struct rdma_qp *q, int kind, const void *wr, int n, int *err) {
  uint64 size = post_size[kind];
  int done = -1;
  *err = 0;
  spin_lock(&rdma.lock);
  int h = rdma_qp_owned(o, q);
  if (h >= 0) {
    rdma_watch(h);
    for (done = 0; done < n; done++)
      if ((*err = rdma_qp_post_locked(o, q, kind, (const uint8 *)wr + done * size)) != 0) break;
    if (rdma_progress(RDMA_BUDGET)) rdma_kick();
  }
  spin_unlock(&rdma.lock);
  return done;
}

// Lock held. The WRs in q's send queue (posted, not yet completed or
// flushed); *live: q is an RC QP in RTS, so with WRs queued an ACK or a
// timer of its own is still due (an engine pass is bound to come).
uint32 rdma_qp_send_queued_locked(const struct rdma_qp *q, int *live) {
  const struct rct_qp_base *b = q->base;
  *live = q->type == KV_QPT_RC && b->attr.qp_state == RCT_QPS_RTS;
  return b->sq_tail - b->sq_head;
}

// Lock held; q is o's. q goes to ERR on the front end's behalf (a
// malformed WQE: its WRs flush) and o gets IBV_EVENT_QP_FATAL. The
// caller runs or is an engine pass (the flushes' completions).
void rdma_qp_fatal_locked(struct kv_owner *o, struct rdma_qp *q) {
  struct rdma_qp_attr a = { .qp_state = IBV_QPS_ERR };
  struct rct_qp_attr r;
  uint32 rmask;
  int h = rdma_qp_owned(o, q);
  if (h < 0 || rdma_qp_attr_in(&a, IBV_QP_STATE, &r, &rmask) < 0 || rct_qpb_modify(q->base, &r, rmask) != RCT_OK) return;
  rdma_watch(h);
  struct kv_async_event ev = { .type = IBV_EVENT_QP_FATAL, .qp = q };
  if (o->async) o->async(o, &ev);
}

int kv_post_send(struct kv_owner *o, struct rdma_qp *q, const struct rct_send_wr *wr, int n, int *err) {
  return post_many(o, q, RDMA_POST_SEND, wr, n, err);
}

int kv_post_send_ud(struct kv_owner *o, struct rdma_qp *q, const struct kv_ud_send_wr *wr, int n, int *err) {
  return post_many(o, q, RDMA_POST_UD_SEND, wr, n, err);
}

int kv_post_recv(struct kv_owner *o, struct rdma_qp *q, const struct rct_recv_wr *wr, int n, int *err) {
  return post_many(o, q, RDMA_POST_RECV, wr, n, err);
}

// Lock held; the core's event for a live QP (rct_qp_destroy takes a freed
// QP's away). A QP that entered ERR on its own (a fatal transport error,
// not the owner's modify_qp) raises IBV_EVENT_QP_FATAL for its owner; a
// QP on an SRQ that entered ERR, either way, IBV_EVENT_QP_LAST_WQE_REACHED
// after it (the core reports QP_ERR first) [SRQ-ERR-2].
void rdma_qp_on_event(const struct rct_event *ev) {
  int h = rdma_idtab_find(&qp_nums, ev->qp_base->init.qpn);
  if (h < 0) return;
  struct rdma_qp *q = &rdma_qps[h];
  int last = ev->type == RCT_EV_QP_LAST_WQE;
  struct kv_async_event ae = { .type = last ? IBV_EVENT_QP_LAST_WQE_REACHED : IBV_EVENT_QP_FATAL, .qp = q };
  if ((last || ev->info == RCT_QP_ERR_TRANSPORT) && q->owner->async) q->owner->async(q->owner, &ae);
}

// Lock held. The live objects of owner o (NULL: of every owner) into *s,
// and the ring pool pages their rings hold (CQs, QPs, SRQs).
static void count_objects(const struct kv_owner *o, struct kv_owner_stats *s) {
  memset(s, 0, sizeof *s);
#define MINE(x) ((x).used && (o == NULL || (x).owner == o))
  for (int i = 0; i < RDMA_MAX_PD; i++) s->pds += MINE(rdma_pds[i]);
  for (int i = 0; i < RDMA_MAX_MR; i++) s->mrs += MINE(rdma_mrs[i]);
  for (int i = 0; i < RDMA_MAX_AH; i++) s->ahs += MINE(rdma_ahs[i]);
  for (int i = 0; i < RDMA_MAX_SRQ; i++)
    if (MINE(rdma_srqs[i])) { s->srqs++; s->ring_pages += rdma_srqs[i].ring_pages; }
#undef MINE
  for (int i = rdma_live_next(rdma.cq_live, 0); i >= 0; i = rdma_live_next(rdma.cq_live, i + 1))
    if (o == NULL || rdma_cqs[i].owner == o) { s->cqs++; s->ring_pages += rdma_cqs[i].ring_pages; }
  for (int i = rdma_live_next(rdma.qp_live, 0); i >= 0; i = rdma_live_next(rdma.qp_live, i + 1))
    if (o == NULL || rdma_qps[i].owner == o) { s->qps++; s->ring_pages += rdma_qps[i].ring_pages; }
}

void kv_owner_stats(const struct kv_owner *o, struct kv_owner_stats *s) {
  struct kv_owner_stats all;
  spin_lock(&rdma.lock);
  count_objects(o, s);
  count_objects(NULL, &all);
  s->pool_lost = RDMA_POOL_PAGES - all.ring_pages - rdma_pool_free_pages();
  spin_unlock(&rdma.lock);
}

// The device-wide counters, and the objects alive now (the front end
// adds its own: channels, dropped async events).
void kv_dev_stats(struct rdma_dev_stats *s) {
  struct kv_owner_stats n;
  spin_lock(&rdma.lock);
  count_objects(NULL, &n);
  const struct rct_dev_counters *c = &rdma.dev.cnt;
  *s = (struct rdma_dev_stats){
    .rx_frames = c->rx_frames, .rx_not_roce = c->rx_not_roce, .rx_truncated = c->rx_truncated,
    .rx_bad_header = c->rx_bad_header, .rx_icrc_err = c->rx_icrc_err,
    .rx_bad_opcode = c->rx_bad_opcode, .rx_unknown_qp = c->rx_unknown_qp, .tx_frames = c->tx_frames,
    .nic_rx_frames = rdma_net_rx_frames, .nic_rx_bad = rdma_net_rx_bad,
    .nic_tx_frames = rdma_net_tx_frames, .nic_tx_full = rdma_net_tx_full,
    .tx_no_route = rdma.tx_no_route, .tx_too_big = rdma.tx_too_big,
    .live_pds = n.pds, .live_mrs = n.mrs, .live_cqs = n.cqs, .live_qps = n.qps,
    .pool_free_pages = rdma_pool_free_pages(), .live_ahs = n.ahs, .live_srqs = n.srqs,
  };
  spin_unlock(&rdma.lock);
}

static uint64 sum2(uint64 a, uint64 b) { return a + b; }

// Lock held. Live QP slot i's counters and states into *s (zeroed); its
// handle and owner are the front end's to fill in.
void rdma_qp_stats_locked(int i, struct rdma_qp_stats *s) {
  const struct rdma_qp *q = &rdma_qps[i];
  const struct rct_qp_counters *c = &q->base->cnt;
  int rc = q->type == KV_QPT_RC;
  s->qp_type = (uint32)q->type;
  s->qp_num = q->base->init.qpn;
  s->dest_qp_num = q->base->attr.dest_qp_num;
  s->state = q->base->attr.qp_state;
  s->sr = rc ? q->qp.sr : 0;
  s->req_state = rc ? rct_qp_req_state(&q->qp) : 0;
  s->resp_state = rc ? rct_qp_resp_state(&q->qp) : 0;
  s->comp_state = rc ? rct_qp_comp_state(&q->qp) : 0;
  s->tx_frames = c->tx_frames; s->tx_bytes = c->tx_bytes;
  s->rx_frames = c->rx_frames; s->rx_bytes = c->rx_bytes;
  s->tx_payload_bytes = c->tx_payload_bytes; s->rx_payload_bytes = c->rx_payload_bytes;
  s->tx_retransmits = c->tx_retransmits; s->timeouts = c->timeouts; s->rnr_timeouts = c->rnr_timeouts;
  s->tx_ack = c->tx_ack; s->rx_ack = c->rx_ack;
  s->tx_nak = c->tx_nak_seq + c->tx_nak_inv + c->tx_nak_acc + c->tx_nak_op + c->tx_sack;
  s->rx_nak = c->rx_nak_seq + c->rx_nak_inv + c->rx_nak_acc + c->rx_nak_op + c->rx_sack;
  s->tx_rnr_nak = c->tx_rnr_nak; s->rx_rnr_nak = c->rx_rnr_nak;
  s->rx_dup = c->rx_dup; s->rx_out_of_seq = c->rx_out_of_seq; s->rx_out_of_window = c->rx_out_of_window;
  s->rx_dropped = sum2(c->rx_bad_state + c->rx_bad_opcode + c->rx_bad_length + c->rx_truncated,
                      c->rx_wrong_encap + c->rx_wrong_peer + c->rx_bad_aeth + c->rx_unexpected) +
                 c->rx_bad_qkey + c->rx_no_recv;
  s->completions = c->completions; s->error_completions = c->error_completions;
  s->flushed = c->flushed; s->cq_overflow = c->cq_overflow;
  s->early_probes = c->early_probes;
  s->window_cuts = c->window_cuts;
  s->late_probes = c->late_probes;
  s->max_inflight = q->base->attr.max_inflight;
  s->loss_window = rc ? q->qp.comp.cwnd : 0;
}
