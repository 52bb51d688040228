/*
 * sim.c: the two simulated endpoints and the virtual-time event loop (sim.h).
 */
#include "sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *const sim_result_name[5] = {"done", "stall", "time-limit", "check-failed", "livelock"};
const char *const sim_tmo_cause_name[SIM_TMO_CAUSES] = {"tail", "resend", "ack", "unanswered"};

static struct rct_qp *sim_lookup(void *ctx, uint32_t qpn)
{
  struct sim_ep *ep = ctx;
  return ep->qp.base.init.qpn == qpn ? &ep->qp : NULL;
}

const struct host_mr *sim_mr_reg(struct sim_ep *ep, uint8_t *base, uint64_t len, uint32_t access)
{
  uint32_t n = (uint32_t)ep->nmr;
  uint64_t va = 0x100000000ull * (n + 1) + 0x10000000ull * ep->pd;
  /* Keys differ between endpoints and MRs so a wrong key is caught. */
  uint32_t lkey = 0x1000u + n * 0x10u + ep->pd, rkey = 0x80000u + n * 0x100u + ep->pd * 7u;
  const struct host_mr *m = host_mr_reg(&ep->mrs, lkey, rkey, ep->pd, va, len, access, base);
  if (!m) {
    fprintf(stderr, "sim: MR not registered (too many MRs?)\n");
    exit(1);
  }
  ep->nmr++;
  return m;
}

/* ---- setup ---- */

void sim_default_params(struct sim_params *p)
{
  memset(p, 0, sizeof *p);
  p->mtu = RCT_MTU_4096;
  p->timeout = 10;                   /* 4.19 ms */
  p->retry_cnt = 7;
  p->rnr_retry = RCT_RETRY_INFINITE;
  p->min_rnr_timer = 1;
  p->psn_a = 0x100;
  p->psn_b = 0x200000;
  p->sq_size = 64;
  p->rq_size = 64;
  p->seed = 1;
  p->tx_ring_bytes = SIM_TX_RING_DEFAULT;
}

static void *zalloc(size_t n)
{
  void *p = calloc(1, n ? n : 1);
  if (!p) {
    fprintf(stderr, "sim: out of memory\n");
    exit(1);
  }
  return p;
}

static int ep_init(struct sim_ep *ep, int id, const struct sim_params *p, char *err, size_t errlen)
{
  struct rct_dev_attr da = {
    .mac = {0x52, 0x54, 0x00, 0x00, 0x00, (uint8_t)(0x0a + id)},
    .ipv4 = 0x0a000001u + (uint32_t)id,
    .flags = p->dev_flags,
    .mr_ops = &host_mr_ops, .mr_ctx = &ep->mrs,
    .qp_lookup = sim_lookup, .lookup_ctx = ep,
  };
  ep->pd = 3u + (uint32_t)id;
  rct_dev_init(&ep->dev, &da);
  ep->sq = zalloc(sizeof *ep->sq * p->sq_size);
  ep->rq = zalloc(sizeof *ep->rq * p->rq_size);
  ep->rd = zalloc(sizeof *ep->rd * 16);
  uint32_t cqsize = p->sq_size + p->rq_size;
  ep->scq_ring = zalloc(sizeof *ep->scq_ring * cqsize);
  ep->rcq_ring = zalloc(sizeof *ep->rcq_ring * cqsize);
  rct_cq_init(&ep->scq, ep->scq_ring, cqsize);
  rct_cq_init(&ep->rcq, ep->rcq_ring, cqsize);
  struct rct_qp_init_attr ia = {
    .qpn = (uint32_t)((p->seed * 0x9e3779b1u + (uint64_t)id * 0x51ed27u) & 0xffff00u) | (uint32_t)(0x11 * (id + 1)),
    .pd = ep->pd,
    .sq = ep->sq, .sq_size = p->sq_size,
    .rq = ep->rq, .rq_size = p->rq_size,
    .rd = ep->rd, .rd_size = 16,
    .send_cq = &ep->scq, .recv_cq = &ep->rcq,
  };
  int rc = rct_qp_init(&ep->dev, &ep->qp, &ia);
  if (rc != RCT_OK) {
    snprintf(err, errlen, "rct_qp_init: %d", rc);
    return -1;
  }
  return 0;
}

static int modify(struct rct_qp *qp, struct rct_qp_attr *a, uint32_t mask, const char *what,
                  char *err, size_t errlen)
{
  int rc = rct_qp_modify(qp, a, mask);
  if (rc != RCT_OK)
    snprintf(err, errlen, "rct_qp_modify %s: %d", what, rc);
  return rc == RCT_OK ? 0 : -1;
}

/* RESET -> INIT -> RTR -> RTS toward the peer. */
static int ep_connect(struct sim_ep *ep, struct sim_ep *peer, int id, const struct sim_params *p,
                      char *err, size_t errlen)
{
  struct rct_qp_attr a;
  memset(&a, 0, sizeof a);
  a.qp_state = RCT_QPS_INIT;
  a.qp_access_flags = RCT_ACCESS_REMOTE_WRITE | RCT_ACCESS_REMOTE_READ | RCT_ACCESS_REMOTE_ATOMIC;
  a.port_num = RCT_PORT_NUM;
  if (modify(&ep->qp, &a, RCT_QP_STATE | RCT_QP_ACCESS_FLAGS | RCT_QP_PKEY_INDEX | RCT_QP_PORT, "INIT", err, errlen))
    return -1;

  memset(&a, 0, sizeof a);
  a.qp_state = RCT_QPS_RTR;
  memcpy(a.ah.dmac, peer->dev.attr.mac, 6);
  a.ah.dipv4 = peer->dev.attr.ipv4;
  a.path_mtu = p->mtu;
  a.dest_qp_num = peer->qp.base.init.qpn;
  a.rq_psn = id == 0 ? p->psn_b : p->psn_a;
  a.max_dest_rd_atomic = 16;
  a.min_rnr_timer = p->min_rnr_timer;
  a.sr_enable = p->sr;
  uint32_t mask = RCT_QP_STATE | RCT_QP_AV | RCT_QP_PATH_MTU | RCT_QP_DEST_QPN | RCT_QP_RQ_PSN |
                  RCT_QP_MAX_DEST_RD_ATOMIC | RCT_QP_MIN_RNR_TIMER | RCT_QP_SR;
  if (modify(&ep->qp, &a, mask, "RTR", err, errlen))
    return -1;

  memset(&a, 0, sizeof a);
  a.qp_state = RCT_QPS_RTS;
  a.sq_psn = id == 0 ? p->psn_a : p->psn_b;
  a.timeout = p->timeout;
  a.retry_cnt = p->retry_cnt;
  a.rnr_retry = p->rnr_retry;
  a.max_rd_atomic = 16;
  a.adaptive_rto = p->adaptive_rto;
  a.min_rto_ns = p->min_rto_ns;
  a.max_inflight = p->max_inflight;
  mask = RCT_QP_STATE | RCT_QP_SQ_PSN | RCT_QP_TIMEOUT | RCT_QP_RETRY_CNT | RCT_QP_RNR_RETRY |
         RCT_QP_MAX_QP_RD_ATOMIC | RCT_QP_MAX_INFLIGHT;
  if (p->adaptive_rto)
    mask |= RCT_QP_ADAPTIVE_RTO;
  a.probe_slack_ns = p->probe_slack_ns;
  if (p->probe_slack_ns)
    mask |= RCT_QP_PROBE_SLACK;
  return modify(&ep->qp, &a, mask, "RTS", err, errlen);
}

int sim_init(struct sim *s, const struct sim_params *p, const char *a2b, const char *b2a,
             char *err, size_t errlen)
{
  memset(s, 0, sizeof *s);
  s->tx_ring_bytes = p->tx_ring_bytes;
  if (sim_link_init(&s->link, a2b, b2a, err, errlen) < 0)
    return -1;
  for (int i = 0; i < 2; i++)
    if (ep_init(&s->ep[i], i, p, err, errlen) < 0)
      return -1;
  for (int i = 0; i < 2; i++)
    if (ep_connect(&s->ep[i], &s->ep[!i], i, p, err, errlen) < 0)
      return -1;
  return 0;
}

void sim_free(struct sim *s)
{
  for (int i = 0; i < 2; i++) {
    struct sim_ep *ep = &s->ep[i];
    rct_qp_destroy(&ep->qp);
    free(ep->sq); free(ep->rq); free(ep->rd);
    free(ep->scq_ring); free(ep->rcq_ring);
  }
  sim_link_free(&s->link);
}

/* ---- the event loop ---- */

uint64_t sim_clock_ns(int clock)
{
  struct timespec ts;
  clock_gettime(clock == SIM_CLOCK_THREAD ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The NIC transmit ring: an endpoint hands a frame to the link only while
 * the link's serialization backlog in its direction is under tx_ring_bytes.
 * Otherwise the frame it already produced waits in `staged` (as a driver
 * holds a frame when its ring is full) and the core is not polled again, so
 * it cannot bury the link under an unbounded queue. */
static uint64_t ring_ns(const struct sim *s, int dir)
{
  uint64_t rate = s->link.dir[dir].c.rate_bps;
  if (rate == 0 || s->tx_ring_bytes == 0)
    return UINT64_MAX;
  return s->tx_ring_bytes * 8ull * 1000000000ull / rate;
}

/* When the ring of direction dir has room again (<= now: it has room). */
static uint64_t ring_free_at(const struct sim *s, int dir)
{
  uint64_t busy = s->link.dir[dir].link_free_ns, r = ring_ns(s, dir);
  if (r == UINT64_MAX || busy <= r)
    return 0;
  return busy - r;
}

/* Record the fate of a frame handed to the link, for the timeout causes:
 * a's request packets (RC 0x00..0x0C, SR 0xC0..0xCC) by PSN, b's losses by time. */
static void note_fate(struct sim *s, int i, const uint8_t *f, uint32_t len, int fate)
{
  unsigned op, psn;
  if (i == 1) {
    if (fate != IMPAIR_KEEP)
      s->b2a_lost_at = s->now;
    return;
  }
  if (!sim_bth_of(f, len, &op, &psn) || !(op <= 0x0c || (op >= 0xc0 && op <= 0xcc)))
    return;
  struct sim_txlog *t = &s->txlog[psn % SIM_TXLOG];
  if (t->psn != psn || !t->sends)
    *t = (struct sim_txlog){.psn = psn};
  t->sends++;
  t->lost = fate != IMPAIR_KEEP;
  t->at = s->now;
}

/* Why a's retransmission timer would fire now (enum SIM_TMO_*). */
static int timeout_cause(const struct sim *s)
{
  const struct rct_qp *qp = &s->ep[0].qp;
  uint32_t p = qp->comp.una;
  for (uint32_t k = 0; k < RCT_SR_WINDOW && ((p - qp->req.next_psn) & 0xffffff) != 0; k++) {
    if (!((qp->comp.sr_sacked[k >> 5] >> (k & 31)) & 1))
      break;
    p = (p + 1) & 0xffffff;
  }
  const struct sim_txlog *t = &s->txlog[p % SIM_TXLOG];
  int cause = SIM_TMO_UNANSWERED;
  if (t->psn == p && t->sends && t->lost)
    cause = t->sends == 1 ? SIM_TMO_TAIL : SIM_TMO_RESEND;
  else if (t->psn == p && t->sends && s->b2a_lost_at >= t->at)
    cause = SIM_TMO_ACK;
  return cause;
}

/* Hand every frame endpoint i has ready to the link, while its ring has room. */
static void flush_tx(struct sim *s, int i)
{
  struct sim_ep *ep = &s->ep[i];
  int dir = i == 0 ? SIM_A2B : SIM_B2A;
  for (;;) {
    if (!ep->staged_len) {
      uint64_t t0 = s->measure_cpu ? sim_clock_ns(s->measure_cpu) : 0;
      int got = rct_dev_poll_transmit(&ep->dev, s->now, &s->frame);
      if (s->measure_cpu)
        ep->cpu_ns += sim_clock_ns(s->measure_cpu) - t0, ep->cpu_calls++;
      if (!got)
        return;
      int len = rct_frame_linearize(&s->frame, ep->staged, sizeof ep->staged);
      if (len <= 0) {
        fprintf(stderr, "sim: frame too long to linearize (%u bytes)\n", s->frame.len);
        exit(1);
      }
      ep->staged_len = (uint32_t)len;
      ep->frames_tx++;
      ep->copy_bytes += s->frame.len - s->frame.hdr_len - s->frame.trailer_len;
    }
    if (ring_free_at(s, dir) > s->now)
      return;
    note_fate(s, i, ep->staged, ep->staged_len,
              sim_link_send(&s->link, dir, s->now, ep->staged, ep->staged_len));
    ep->staged_len = 0;
  }
}

/* The earliest time a staged frame can enter its ring. */
static uint64_t next_ring_event(const struct sim *s)
{
  uint64_t t = RCT_NEVER;
  for (int i = 0; i < 2; i++)
    if (s->ep[i].staged_len) {
      uint64_t f = ring_free_at(s, i == 0 ? SIM_A2B : SIM_B2A);
      if (f < t)
        t = f;
    }
  return t;
}

static uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }

#define SIM_LIVELOCK_ITERS 1000000

int sim_run(struct sim *s, sim_step_fn step, void *ctx, uint64_t limit_ns)
{
  uint64_t last_now = s->now, still = 0;
  for (;;) {
    s->iterations++;
    if (s->now != last_now)
      last_now = s->now, still = 0;
    else if (++still > SIM_LIVELOCK_ITERS)
      return SIM_LIVELOCK;
    flush_tx(s, 0);
    flush_tx(s, 1);
    int r = step(s, ctx);
    if (r > 0)
      return SIM_DONE;
    if (r < 0)
      return SIM_STEPFAIL;
    flush_tx(s, 0);                  /* the step may have posted work */
    flush_tx(s, 1);
    uint64_t next = min64(min64(sim_link_next(&s->link), next_ring_event(s)),
                          min64(rct_dev_next_timeout(&s->ep[0].dev),
                                rct_dev_next_timeout(&s->ep[1].dev)));
    if (next == RCT_NEVER) {
      if (step(s, ctx) > 0)
        return SIM_DONE;
      return SIM_STALL;
    }
    if (next > limit_ns)
      return SIM_TIMELIMIT;
    if (next > s->now)
      s->now = next;
    struct sim_pkt p;
    while (sim_link_pop(&s->link, s->now, &p)) {
      struct sim_ep *dst = &s->ep[p.dir == SIM_A2B ? 1 : 0];
      dst->frames_rx++;
      uint64_t t0 = s->measure_cpu ? sim_clock_ns(s->measure_cpu) : 0;
      rct_handle_frame(&dst->dev, s->now, p.data, p.len);
      if (s->measure_cpu)
        dst->cpu_ns += sim_clock_ns(s->measure_cpu) - t0, dst->cpu_calls++;
      free(p.data);
    }
    for (int i = 0; i < 2; i++)
      if (rct_dev_next_timeout(&s->ep[i].dev) <= s->now) {
        uint64_t tmo = s->ep[i].qp.base.cnt.timeouts;
        int cause = i == 0 ? timeout_cause(s) : 0;   /* judged before the timeout resends */
        uint64_t t0 = s->measure_cpu ? sim_clock_ns(s->measure_cpu) : 0;
        rct_dev_handle_timeout(&s->ep[i].dev, s->now);
        if (s->measure_cpu)
          s->ep[i].cpu_ns += sim_clock_ns(s->measure_cpu) - t0, s->ep[i].cpu_calls++;
        if (i == 0 && s->ep[0].qp.base.cnt.timeouts != tmo)
          s->tmo_cause[cause]++;
      }
  }
}
