/*
 * scenario.c: run one simulated transfer and check it (see scenario.h).
 *
 * Endpoint a is the requester: it posts the WRs and, for READ, is the data
 * destination. Endpoint b is the responder: the WRITE/SEND destination and
 * the READ source. Buffers are laid out as `regions` slots of
 * stride = size + SC_GUARD bytes; the destination starts as the complement of
 * the source, so an unwritten byte or a write past the message is visible.
 * Atomics (size 8): every WR targets one counter at the start of b's buffer,
 * starting at SC_COUNTER0; FETCH_AND_ADD adds 1, CMP_AND_SWP #i swaps
 * SC_COUNTER0 + i for + i + 1, so the responder, executing in PSN order,
 * returns SC_COUNTER0 + i to WR #i: each into a's slot i, checked with the
 * final counter (exactly once under loss, [RESP-ATOM-3]).
 */
#include "scenario.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SC_GUARD 64
#define SC_QUIET_NS 200000000ull     /* simulated after the end to catch late duplicates */
#define SC_IMM(i) (0xabc00000u + (uint32_t)(i))
#define SC_COUNTER0 (~0ull - 20)        /* the atomics' counter wraps past 2^64 */
#define SC_WRID(i) (0x5000000000ull + (uint64_t)(i))
#define SC_RWRID(i) (0x7000000000ull + (uint64_t)(i))

const char *sc_op_name(enum rct_wr_opcode op)
{
  static const char *const n[RCT_WR_COUNT] = {
    [RCT_WR_RDMA_WRITE] = "WRITE", [RCT_WR_RDMA_WRITE_WITH_IMM] = "WRITE_IMM",
    [RCT_WR_SEND] = "SEND", [RCT_WR_SEND_WITH_IMM] = "SEND_IMM", [RCT_WR_RDMA_READ] = "READ",
    [RCT_WR_ATOMIC_CMP_AND_SWP] = "CAS", [RCT_WR_ATOMIC_FETCH_AND_ADD] = "FAA"};
  return (unsigned)op < RCT_WR_COUNT ? n[op] : "?";
}

struct run {
  const struct scenario *sc;
  struct scenario_result *res;
  uint8_t *abuf, *bbuf;
  const struct host_mr *amr, *bmr;
  uint64_t stride;
  uint32_t regions;
  uint32_t posted, rposted;        /* WRs posted on a's SQ / b's RQ */
  uint32_t scomp, rcomp;           /* completions seen */
  uint32_t nsuccess;               /* leading SUCCESS completions on a */
  int errored;                     /* RETRY_EXC seen */
  int extra_posted;                /* the WR posted after the error */
  int quiet;                       /* in the quiet period after done */
  uint64_t *post_ns;
};

static int failf(struct run *r, const char *fmt, ...)
{
  if (!r->res->why[0]) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->res->why, sizeof r->res->why, fmt, ap);
    va_end(ap);
  }
  return -1;
}

static int needs_recv(enum rct_wr_opcode op)
{
  return op == RCT_WR_SEND || op == RCT_WR_SEND_WITH_IMM || op == RCT_WR_RDMA_WRITE_WITH_IMM;
}

static int is_atomic(enum rct_wr_opcode op)
{
  return op == RCT_WR_ATOMIC_CMP_AND_SWP || op == RCT_WR_ATOMIC_FETCH_AND_ADD;
}

static enum rct_wc_opcode send_wc_op(enum rct_wr_opcode op)
{
  switch (op) {
  case RCT_WR_RDMA_READ: return RCT_WC_RDMA_READ;
  case RCT_WR_ATOMIC_CMP_AND_SWP: return RCT_WC_COMP_SWAP;
  case RCT_WR_ATOMIC_FETCH_AND_ADD: return RCT_WC_FETCH_ADD;
  case RCT_WR_SEND: case RCT_WR_SEND_WITH_IMM: return RCT_WC_SEND;
  default: return RCT_WC_RDMA_WRITE;
  }
}

static uint64_t region_off(const struct run *r, uint32_t i) { return (i % r->regions) * r->stride; }

static int post_sends(struct sim *s, struct run *r)
{
  const struct scenario *sc = r->sc;
  while (r->posted < sc->nmsgs) {
    uint32_t i = r->posted;
    uint64_t off = region_off(r, i);
    struct rct_sge sge = {r->amr->va + off, sc->size, r->amr->lkey};
    struct rct_send_wr wr = {
      .wr_id = SC_WRID(i), .opcode = sc->op, .send_flags = RCT_SEND_SIGNALED,
      .sg_list = &sge, .num_sge = sc->size ? 1 : 0, .imm_data = SC_IMM(i),
      .remote_addr = r->bmr->va + off, .rkey = r->bmr->rkey,
    };
    if (is_atomic(sc->op)) {
      wr.remote_addr = r->bmr->va;                      /* the one counter */
      wr.compare_add = sc->op == RCT_WR_ATOMIC_FETCH_AND_ADD ? 1 : SC_COUNTER0 + i;
      wr.swap = SC_COUNTER0 + i + 1;
    }
    int rc = rct_post_send(&s->ep[0].qp, &wr);
    if (rc == RCT_ENOSPC)
      return 0;
    if (rc != RCT_OK) {
      if (r->errored)                  /* QP in ERR: posting may be refused */
        return 0;
      return failf(r, "rct_post_send #%u: %d", i, rc);
    }
    if (r->post_ns)
      r->post_ns[i] = s->now;
    r->posted++;
  }
  return 0;
}

static int post_recvs(struct sim *s, struct run *r)
{
  const struct scenario *sc = r->sc;
  if (!needs_recv(sc->op))
    return 0;
  while (r->rposted < sc->nmsgs) {
    uint32_t i = r->rposted;
    struct rct_sge sge = {r->bmr->va + region_off(r, i), sc->size, r->bmr->lkey};
    int is_send = sc->op != RCT_WR_RDMA_WRITE_WITH_IMM;
    struct rct_recv_wr wr = {.wr_id = SC_RWRID(i), .sg_list = &sge,
                             .num_sge = is_send && sc->size ? 1 : 0};
    int rc = rct_post_recv(&s->ep[1].qp, &wr);
    if (rc == RCT_ENOSPC)
      return 0;
    if (rc != RCT_OK)
      return failf(r, "rct_post_recv #%u: %d", i, rc);
    r->rposted++;
  }
  return 0;
}

/* a's send CQ: in order, exactly once, expected status. */
static int check_send_wc(struct sim *s, struct run *r, const struct rct_wc *wc)
{
  const struct scenario *sc = r->sc;
  uint32_t i = r->scomp;
  uint32_t total = sc->nmsgs + (uint32_t)r->extra_posted;
  if (i >= total)
    return failf(r, "extra send completion wr_id=%#llx status=%s after all %u",
                 (unsigned long long)wc->wr_id, rct_wc_status_name(wc->status), total);
  if (wc->wr_id != SC_WRID(i))
    return failf(r, "send completion #%u has wr_id %#llx, want %#llx (status %s)", i,
                 (unsigned long long)wc->wr_id, (unsigned long long)SC_WRID(i),
                 rct_wc_status_name(wc->status));
  r->scomp++;
  if (wc->status == RCT_WC_SUCCESS) {
    if (r->errored)
      return failf(r, "wr #%u SUCCESS after RETRY_EXC_ERR", i);
    if (wc->opcode != send_wc_op(sc->op))
      return failf(r, "wr #%u wc opcode %d, want %d", i, wc->opcode, send_wc_op(sc->op));
    if ((sc->op == RCT_WR_RDMA_READ || is_atomic(sc->op)) && wc->byte_len != sc->size)
      return failf(r, "READ #%u byte_len %u, want %u", i, wc->byte_len, sc->size);
    r->nsuccess++;
    if (sc->latency_ns)
      sc->latency_ns[i] = s->now - r->post_ns[i];
    return 0;
  }
  if (sc->expect != SC_EXPECT_RETRY_EXC)
    return failf(r, "wr #%u completed with %s (vendor_err %u)", i, rct_wc_status_name(wc->status),
                 wc->vendor_err);
  if (!r->errored) {
    if (wc->status != RCT_WC_RETRY_EXC_ERR)
      return failf(r, "wr #%u: first error is %s, want RETRY_EXC_ERR", i, rct_wc_status_name(wc->status));
    r->errored = 1;
    return 0;
  }
  if (wc->status != RCT_WC_WR_FLUSH_ERR)
    return failf(r, "wr #%u after RETRY_EXC_ERR: %s, want WR_FLUSH_ERR", i, rct_wc_status_name(wc->status));
  return 0;
}

static int check_recv_wc(struct run *r, const struct rct_wc *wc)
{
  const struct scenario *sc = r->sc;
  uint32_t i = r->rcomp;
  if (!needs_recv(sc->op))
    return failf(r, "unexpected receive completion wr_id=%#llx on b", (unsigned long long)wc->wr_id);
  if (i >= sc->nmsgs)
    return failf(r, "extra receive completion wr_id=%#llx", (unsigned long long)wc->wr_id);
  if (wc->wr_id != SC_RWRID(i))
    return failf(r, "receive completion #%u has wr_id %#llx", i, (unsigned long long)wc->wr_id);
  r->rcomp++;
  if (wc->status != RCT_WC_SUCCESS)
    return failf(r, "receive #%u: %s", i, rct_wc_status_name(wc->status));
  int imm = sc->op != RCT_WR_SEND;
  enum rct_wc_opcode want = sc->op == RCT_WR_RDMA_WRITE_WITH_IMM ? RCT_WC_RECV_RDMA_WITH_IMM : RCT_WC_RECV;
  if (wc->opcode != want)
    return failf(r, "receive #%u opcode %d, want %d", i, wc->opcode, want);
  /* [RESP-RECV-4]: byte length = the message's payload (a WRITE with immediate's: its length). */
  uint32_t want_len = sc->size;
  if (wc->byte_len != want_len)
    return failf(r, "receive #%u byte_len %u, want %u [RESP-RECV-4]", i, wc->byte_len, want_len);
  if (!!(wc->wc_flags & RCT_WC_WITH_IMM) != imm)
    return failf(r, "receive #%u WITH_IMM flag %u", i, wc->wc_flags);
  if (imm && wc->imm_data != SC_IMM(i))
    return failf(r, "receive #%u imm %#x, want %#x", i, wc->imm_data, SC_IMM(i));
  return 0;
}

static int all_done(const struct run *r)
{
  const struct scenario *sc = r->sc;
  uint32_t total = sc->nmsgs + (uint32_t)r->extra_posted;
  if (r->scomp < total)
    return 0;
  if (sc->expect == SC_EXPECT_RETRY_EXC)
    return r->errored;
  return !needs_recv(sc->op) || r->rcomp == sc->nmsgs;
}

static int step(struct sim *s, void *ctx)
{
  struct run *r = ctx;
  struct rct_wc wc[16];
  int n;
  if (post_recvs(s, r) < 0 || post_sends(s, r) < 0)
    return -1;
  while ((n = rct_poll_cq(&s->ep[0].scq, wc, 16)) > 0)
    for (int k = 0; k < n; k++)
      if (check_send_wc(s, r, &wc[k]) < 0)
        return -1;
  while ((n = rct_poll_cq(&s->ep[1].rcq, wc, 16)) > 0)
    for (int k = 0; k < n; k++)
      if (check_recv_wc(r, &wc[k]) < 0)
        return -1;
  if (rct_poll_cq(&s->ep[1].scq, wc, 1) > 0)
    return failf(r, "unexpected completion on b's send CQ: wr_id %#llx %s",
                 (unsigned long long)wc[0].wr_id, rct_wc_status_name(wc[0].status));
  if (rct_poll_cq(&s->ep[0].rcq, wc, 1) > 0)
    return failf(r, "unexpected completion on a's receive CQ");
  if (r->quiet)
    return 0;
  /* After the error, one more WR must be flushed at once. */
  if (r->errored && !r->extra_posted && r->scomp == r->posted && r->posted == r->sc->nmsgs) {
    struct rct_send_wr wr = {.wr_id = SC_WRID(r->sc->nmsgs), .opcode = RCT_WR_RDMA_WRITE,
                             .send_flags = RCT_SEND_SIGNALED};
    int rc = rct_post_send(&s->ep[0].qp, &wr);
    if (rc != RCT_OK)
      return failf(r, "post after RETRY_EXC_ERR returned %d (want accepted and flushed)", rc);
    r->extra_posted = 1;
    return 0;
  }
  return all_done(r);
}

static void fill_random(uint8_t *p, uint64_t n, uint64_t seed)
{
  struct impair_rng rng;
  impair_rng_seed(&rng, seed, 0xda7a);
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t v = impair_rng_next(&rng);
    memcpy(p + i, &v, 8);
  }
  uint64_t v = impair_rng_next(&rng);
  for (; i < n; i++, v >>= 8)
    p[i] = (uint8_t)v;
}

/* Atomics: WR #i got SC_COUNTER0 + i, nothing past its 8 bytes changed,
 * and the counter moved once per WR. */
static int verify_atomics(struct run *r)
{
  const struct scenario *sc = r->sc;
  uint64_t v;
  for (uint32_t i = 0; i < sc->nmsgs; i++) {
    uint64_t off = region_off(r, i);
    memcpy(&v, r->abuf + off, 8);
    if (v != SC_COUNTER0 + i)
      return failf(r, "atomic #%u returned %#llx, want %#llx", i, (unsigned long long)v,
                   (unsigned long long)(SC_COUNTER0 + i));
    for (uint32_t k = 8; k < r->stride; k++)
      if ((uint8_t)(r->abuf[off + k] ^ r->bbuf[off + k]) != 0xff)
        return failf(r, "atomic #%u: guard byte %u after the result was written", i, k - 8);
  }
  memcpy(&v, r->bbuf, 8);
  if (v != SC_COUNTER0 + sc->nmsgs)
    return failf(r, "counter %#llx after %u atomics, want %#llx [RESP-ATOM-3]", (unsigned long long)v,
                 sc->nmsgs, (unsigned long long)(SC_COUNTER0 + sc->nmsgs));
  return 0;
}

static int verify_data(struct run *r)
{
  const struct scenario *sc = r->sc;
  int read = sc->op == RCT_WR_RDMA_READ;
  if (is_atomic(sc->op))
    return verify_atomics(r);
  const uint8_t *src = read ? r->bbuf : r->abuf, *dst = read ? r->abuf : r->bbuf;
  uint32_t n = sc->expect == SC_EXPECT_RETRY_EXC ? r->nsuccess : sc->nmsgs;
  if (n > r->regions)
    n = r->regions;
  for (uint32_t i = 0; i < n; i++) {
    uint64_t off = region_off(r, i);
    if (memcmp(src + off, dst + off, sc->size) != 0) {
      uint32_t k = 0;
      while (src[off + k] == dst[off + k])
        k++;
      return failf(r, "message #%u: data differs at byte %u of %u", i, k, sc->size);
    }
    for (uint32_t k = sc->size; k < r->stride; k++)
      if ((uint8_t)(dst[off + k] ^ src[off + k]) != 0xff)
        return failf(r, "message #%u: guard byte %u after the message was written", i, k - sc->size);
  }
  return 0;
}

/* A lossless run: the requester resent nothing, never timed out, and took
 * every frame it received (no duplicate, out-of-sequence or unexpected
 * READ response: the READ window held the responder's burst, [REQ-READ-6]). */
static int check_clean(const struct rct_qp_counters *c, struct run *r)
{
  if (c->tx_retransmits + c->timeouts + c->rx_dup + c->rx_out_of_seq + c->rx_unexpected)
    return failf(r, "lossless run: requester retx %llu timeouts %llu dup %llu oos %llu unexpected %llu",
                 (unsigned long long)c->tx_retransmits, (unsigned long long)c->timeouts,
                 (unsigned long long)c->rx_dup, (unsigned long long)c->rx_out_of_seq,
                 (unsigned long long)c->rx_unexpected);
  return 0;
}

/* After the quiet period: both QPs still RTS, or a's in ERR after RETRY_EXC. */
static int check_states(struct sim *s, struct run *r)
{
  enum rct_qp_state want_a = r->sc->expect == SC_EXPECT_RETRY_EXC ? RCT_QPS_ERR : RCT_QPS_RTS;
  struct rct_qp_attr a, b;
  rct_qp_query(&s->ep[0].qp, &a);
  rct_qp_query(&s->ep[1].qp, &b);
  if (a.qp_state != want_a)
    return failf(r, "requester QP ends in %s, want %s", rct_qp_state_name(a.qp_state),
                 rct_qp_state_name(want_a));
  if (b.qp_state != RCT_QPS_RTS)
    return failf(r, "responder QP ends in %s, want RTS", rct_qp_state_name(b.qp_state));
  return 0;
}

static void link_specs(const struct scenario *sc, char *a2b, char *b2a, size_t n)
{
  snprintf(a2b, n, "%s seed %llu", sc->link, (unsigned long long)sc->seed);
  snprintf(b2a, n, "%s seed %llu", sc->link_b2a[0] ? sc->link_b2a : sc->link,
           (unsigned long long)sc->seed);
}

static double wall(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void scenario_run(const struct scenario *sc, struct scenario_result *res, FILE *trace,
                  int measure_cpu)
{
  static struct sim s;
  char a2b[300], b2a[300];
  double t0 = wall();
  memset(res, 0, sizeof *res);
  struct run r = {.sc = sc, .res = res};
  r.regions = sc->regions ? sc->regions : sc->nmsgs;
  if (r.regions > sc->nmsgs)
    r.regions = sc->nmsgs;
  r.stride = (uint64_t)sc->size + SC_GUARD;
  uint64_t bytes = r.stride * (r.regions ? r.regions : 1);
  r.abuf = malloc(bytes);
  r.bbuf = malloc(bytes);
  r.post_ns = calloc(sc->nmsgs + 1, sizeof *r.post_ns);
  if (!r.abuf || !r.bbuf || !r.post_ns) {
    snprintf(res->why, sizeof res->why, "out of memory");
    goto out;
  }
  int to_a = sc->op == RCT_WR_RDMA_READ || is_atomic(sc->op);
  uint8_t *src = to_a ? r.bbuf : r.abuf;
  uint8_t *dst = to_a ? r.abuf : r.bbuf;
  fill_random(src, bytes, sc->seed);
  for (uint64_t i = 0; i < bytes; i++)
    dst[i] = (uint8_t)~src[i];
  if (is_atomic(sc->op)) {
    uint64_t c0 = SC_COUNTER0;
    memcpy(r.bbuf, &c0, 8);
  }

  link_specs(sc, a2b, b2a, sizeof a2b);
  if (sim_init(&s, &sc->p, a2b, b2a, res->why, sizeof res->why) < 0)
    goto out;                          /* (a failed init leaks its pieces) */
  s.measure_cpu = measure_cpu;
  s.link.trace = trace;
  uint32_t all = RCT_ACCESS_ALL;
  r.amr = sim_mr_reg(&s.ep[0], r.abuf, bytes, RCT_ACCESS_LOCAL_WRITE);
  r.bmr = sim_mr_reg(&s.ep[1], r.bbuf, bytes, all);

  res->sim_rc = sim_run(&s, step, &r, sc->limit_ns);
  res->done_ns = s.now;
  if (res->sim_rc == SIM_DONE) {
    /* Quiet period: nothing may complete any more. */
    r.quiet = 1;
    uint64_t end = s.now + SC_QUIET_NS;
    int q = sim_run(&s, step, &r, end);
    if (q == SIM_STEPFAIL)
      res->sim_rc = q;
  }
  if (res->sim_rc == SIM_DONE && !sc->no_verify_data)
    verify_data(&r);
  if (res->sim_rc == SIM_DONE && !res->why[0])
    check_states(&s, &r);
  if (res->sim_rc != SIM_DONE && !res->why[0])
    snprintf(res->why, sizeof res->why, "%s: %u/%u send and %u/%u receive completions by t=%.6fs",
             sim_result_name[-res->sim_rc], r.scomp, sc->nmsgs, r.rcomp,
             needs_recv(sc->op) ? sc->nmsgs : 0, s.now / 1e9);
  if (!res->why[0] && s.ep[0].scq.overflow + s.ep[1].rcq.overflow)
    snprintf(res->why, sizeof res->why, "CQ overflow");
  if (!res->why[0] && sc->expect_clean)
    check_clean(&s.ep[0].qp.base.cnt, &r);
  if (!res->why[0] && sc->max_done_ns && res->done_ns > sc->max_done_ns)
    snprintf(res->why, sizeof res->why, "done at %.1f us, the floor asks by %.1f us", res->done_ns / 1e3,
             sc->max_done_ns / 1e3);
  res->ok = !res->why[0];
  res->trace_hash = s.link.trace_hash;
  res->vtime_ns = s.now;
  res->frames[0] = s.link.index[0];
  res->frames[1] = s.link.index[1];
  res->qa = s.ep[0].qp.base.cnt;
  res->qb = s.ep[1].qp.base.cnt;
  res->da = s.ep[0].dev.cnt;
  res->db = s.ep[1].dev.cnt;
  res->la = s.link.dir[0].n;
  res->lb = s.link.dir[1].n;
  res->cpu_ns[0] = s.ep[0].cpu_ns;
  res->cpu_ns[1] = s.ep[1].cpu_ns;
  res->cpu_calls[0] = s.ep[0].cpu_calls;
  res->cpu_calls[1] = s.ep[1].cpu_calls;
  res->copy_bytes = s.ep[0].copy_bytes + s.ep[1].copy_bytes;
  memcpy(res->tmo_cause, s.tmo_cause, sizeof res->tmo_cause);
  sim_free(&s);
out:
  free(r.abuf);
  free(r.bbuf);
  free(r.post_ns);
  res->wall_s = wall() - t0;
}
