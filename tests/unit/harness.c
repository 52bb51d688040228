/*
 * harness.c: fake MRs, endpoints, the virtual-time link and the scripted
 * peer used by every suite (see harness.h).
 */
#include "harness.h"

const uint8_t MAC_A[6] = { 0x52, 0x54, 0x00, 0x00, 0x00, 0x0a };
const uint8_t MAC_B[6] = { 0x52, 0x54, 0x00, 0x00, 0x00, 0x0b };

/* One QP per device: lookup by QPN. */
static struct rct_qp *lookup(void *ctx, uint32_t qpn)
{
  struct ep *e = ctx;
  return e->qp.base.dev && e->qp.base.init.qpn == qpn ? &e->qp : NULL;
}

void ep_init(struct ep *e, const uint8_t mac[6], uint32_t ip, uint32_t qpn, uint32_t flags)
{
  struct rct_dev_attr da;
  struct rct_qp_init_attr ia;
  memset(e, 0, sizeof(*e));
  memset(&da, 0, sizeof(da));
  memcpy(da.mac, mac, 6);
  da.ipv4 = ip;
  da.flags = flags;
  da.mr_ops = &host_mr_ops;
  da.mr_ctx = &e->mrs;
  da.qp_lookup = lookup;
  da.lookup_ctx = e;
  rct_dev_init(&e->dev, &da);
  rct_cq_init(&e->scq, e->swc, EP_CQ);
  rct_cq_init(&e->rcq, e->rwc, EP_CQ);
  e->pd = 7;
  memset(&ia, 0, sizeof(ia));
  ia.qpn = qpn;
  ia.pd = e->pd;
  ia.sq = e->sq; ia.sq_size = EP_SQ;
  ia.rq = e->rq; ia.rq_size = EP_RQ;
  ia.rd = e->rd; ia.rd_size = EP_RD;
  ia.send_cq = &e->scq;
  ia.recv_cq = &e->rcq;
  ck_assert_int_eq(rct_qp_init(&e->dev, &e->qp, &ia), RCT_OK);
}

struct host_mr *ep_reg_mr_keys(struct ep *e, uint32_t lkey, uint32_t rkey, uint64_t va, uint32_t len,
                               uint32_t access)
{
  uint8_t *raw = malloc(len + 2 * GUARD);
  struct host_mr *m = host_mr_reg(&e->mrs, lkey, rkey, e->pd, va, len, access, raw + GUARD);
  ck_assert_msg(m != NULL, "MR not registered (table full or key taken)");
  memset(raw, 0xa5, len + 2 * GUARD);
  for (uint32_t i = 0; i < len; i++)
    m->buf[i] = (uint8_t)(i * 7 + e->nmr);
  e->nmr++;
  return m;
}

struct host_mr *ep_reg_mr(struct ep *e, uint64_t va, uint32_t len, uint32_t access)
{
  uint32_t n = (uint32_t)e->nmr;
  return ep_reg_mr_keys(e, 0x1000 + 0x111 * n, 0x8000 + 0x111 * n, va, len, access);
}

/* Teardown fixture: guards intact, no CQ overflow, counters sane. */
void ep_free(struct ep *e)
{
  for (int i = 0; i < HOST_MR_MAX; i++) {
    struct host_mr *m = &e->mrs.mr[i];
    uint8_t *raw;
    if (!m->buf)
      continue;
    raw = m->buf - GUARD;
    for (int g = 0; g < GUARD; g++) {
      ck_assert_msg(raw[g] == 0xa5, "MR %d guard before buffer overwritten", i);
      ck_assert_msg(raw[GUARD + m->len + g] == 0xa5, "MR %d guard after buffer overwritten", i);
    }
    free(raw);
    host_mr_dereg(&e->mrs, m);
  }
  e->nmr = 0;
  ck_assert_msg(e->qp.base.cnt.cq_overflow == 0, "CQ overflow");
  /* no counter surprise: malformed-frame counters stay 0 unless the test wanted them */
  if (!e->allow_bad_frames) {
    ck_assert_msg(e->dev.cnt.rx_icrc_err == 0, "unexpected ICRC errors");
    ck_assert_msg(e->dev.cnt.rx_truncated == 0, "unexpected truncated frames");
    ck_assert_msg(e->dev.cnt.rx_bad_header == 0, "unexpected bad headers");
    ck_assert_msg(e->dev.cnt.rx_unknown_qp == 0, "unexpected unknown-QP frames");
    ck_assert_msg(e->qp.base.cnt.rx_truncated == 0 && e->qp.base.cnt.rx_bad_length == 0, "unexpected bad lengths");
    ck_assert_msg(e->qp.base.cnt.rx_wrong_peer == 0 && e->qp.base.cnt.rx_wrong_encap == 0, "unexpected foreign frames");
  }
  ck_assert_msg(e->scq.tail - e->scq.head <= EP_CQ, "CQ indices");
  if (e->qp.base.dev)
    rct_qp_destroy(&e->qp);
}

void conn_defaults(struct conn_opts *o)
{
  memset(o, 0, sizeof(*o));
  o->mtu = RCT_MTU_1024;
  o->a_psn = 0x123456;
  o->b_psn = 0x654321;
  o->timeout = 14;
  o->retry_cnt = 7;
  o->rnr_retry = 7;
  o->min_rnr_timer = 12;
  o->rd_atomic = 4;
  o->access = RCT_ACCESS_REMOTE_WRITE | RCT_ACCESS_REMOTE_READ | RCT_ACCESS_LOCAL_WRITE;
}

void qp_connect(struct rct_qp *qp, const uint8_t pmac[6], uint32_t pip, uint32_t pqpn,
                uint32_t rq_psn, uint32_t sq_psn, const struct conn_opts *o)
{
  struct rct_qp_attr a;
  uint32_t m;
  memset(&a, 0, sizeof(a));
  a.qp_state = RCT_QPS_INIT;
  a.qp_access_flags = o->access;
  a.port_num = RCT_PORT_NUM;
  ck_assert_int_eq(rct_qp_modify(qp, &a, RCT_QP_STATE | RCT_QP_ACCESS_FLAGS | RCT_QP_PKEY_INDEX | RCT_QP_PORT), RCT_OK);
  a.qp_state = RCT_QPS_RTR;
  memcpy(a.ah.dmac, pmac, 6);
  a.ah.dipv4 = pip;
  a.path_mtu = o->mtu;
  a.dest_qp_num = pqpn;
  a.rq_psn = rq_psn;
  a.max_dest_rd_atomic = o->rd_atomic;
  a.min_rnr_timer = o->min_rnr_timer;
  a.sr_enable = o->sr;
  m = RCT_QP_STATE | RCT_QP_AV | RCT_QP_PATH_MTU | RCT_QP_DEST_QPN | RCT_QP_RQ_PSN |
      RCT_QP_MAX_DEST_RD_ATOMIC | RCT_QP_MIN_RNR_TIMER | RCT_QP_SR;
  ck_assert_int_eq(rct_qp_modify(qp, &a, m), RCT_OK);
  a.qp_state = RCT_QPS_RTS;
  a.sq_psn = sq_psn;
  a.timeout = o->timeout;
  a.retry_cnt = o->retry_cnt;
  a.rnr_retry = o->rnr_retry;
  a.max_rd_atomic = o->rd_atomic;
  a.adaptive_rto = o->adaptive;
  a.max_inflight = o->max_inflight;
  a.probe_slack_ns = o->probe_slack_ns;
  m = RCT_QP_STATE | RCT_QP_SQ_PSN | RCT_QP_TIMEOUT | RCT_QP_RETRY_CNT | RCT_QP_RNR_RETRY |
      RCT_QP_MAX_QP_RD_ATOMIC | RCT_QP_ADAPTIVE_RTO | RCT_QP_MAX_INFLIGHT | RCT_QP_PROBE_SLACK;
  ck_assert_int_eq(rct_qp_modify(qp, &a, m), RCT_OK);
}

void ep_connect(struct ep *e, const uint8_t pmac[6], uint32_t pip, uint32_t pqpn,
                uint32_t rq_psn, uint32_t sq_psn, const struct conn_opts *o)
{
  qp_connect(&e->qp, pmac, pip, pqpn, rq_psn, sq_psn, o);
}

void pair_connect(struct ep *a, struct ep *b, const struct conn_opts *o)
{
  ep_connect(a, MAC_B, IP_B, b->qp.base.init.qpn, o->b_psn, o->a_psn, o);
  ep_connect(b, MAC_A, IP_A, a->qp.base.init.qpn, o->a_psn, o->b_psn, o);
}

int post_send(struct ep *e, uint64_t wr_id, enum rct_wr_opcode op, struct host_mr *mr, uint32_t off,
              uint32_t len, uint64_t raddr, uint32_t rkey, uint32_t imm)
{
  struct rct_sge sge = { mr ? mr->va + off : 0, len, mr ? mr->lkey : 0 };
  struct rct_send_wr wr = { .wr_id = wr_id, .opcode = op, .send_flags = RCT_SEND_SIGNALED,
                            .sg_list = &sge, .num_sge = mr ? 1 : 0, .imm_data = imm,
                            .remote_addr = raddr, .rkey = rkey };
  return rct_post_send(&e->qp, &wr);
}

int post_recv(struct ep *e, uint64_t wr_id, struct host_mr *mr, uint32_t off, uint32_t len)
{
  struct rct_sge sge = { mr ? mr->va + off : 0, len, mr ? mr->lkey : 0 };
  struct rct_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = mr ? 1 : 0 };
  return rct_post_recv(&e->qp, &wr);
}

void link_init(struct link *l)
{
  memset(l, 0, sizeof(*l));
  l->latency = 1000;
}

/* Frames in flight, delivered in order after `latency`. */
struct inflight {
  uint8_t buf[8192];
  int len;
  bool to_b;
  uint64_t at;
};
#define LINK_Q 4096
static struct inflight *lq;
static unsigned lq_head, lq_tail;

uint64_t link_run(struct link *l, struct ep *a, struct ep *b, uint64_t until)
{
  struct rct_frame f;
  if (!lq)
    lq = malloc(sizeof(*lq) * LINK_Q);
  lq_head = lq_tail = 0;
  for (int guard = 0; guard < 2000000; guard++) {
    bool moved = false;
    uint64_t next;
    /* everything either side wants to send now */
    for (int side = 0; side < 2; side++) {
      struct ep *src = side == 0 ? a : b;
      while (lq_tail - lq_head < LINK_Q && rct_poll_transmit(&src->qp, l->now, &f)) {
        struct inflight *fl = &lq[lq_tail % LINK_Q];
        struct rct_pkt p;
        unsigned n = side == 0 ? l->sent_a++ : l->sent_b++;
        fl->len = rct_frame_linearize(&f, fl->buf, sizeof(fl->buf));
        ck_assert_int_gt(fl->len, 0);
        ck_assert_int_eq(rct_wire_parse_base(&p, fl->buf, (uint32_t)fl->len, false), RCT_PARSE_OK);
        ck_assert(rct_wire_icrc_ok(&p));
        rct_wire_parse_ext(&p);
        moved = true;
        if (l->drop && l->drop(l->ctx, side == 0, n, &p)) {
          l->dropped++;
          if (getenv("RCT_TRACE"))
            printf("%10llu %s DROP %-28s psn %06x\n", (unsigned long long)l->now,
                   side == 0 ? "A>B" : "B>A", rct_opcode_name(p.h.bth.opcode), p.h.bth.psn);
          continue;
        }
        if (getenv("RCT_TRACE"))
          printf("%10llu %s %-33s psn %06x a%d syn %02x off %u sack %llx\n",
                 (unsigned long long)l->now, side == 0 ? "A>B" : "B>A",
                 rct_opcode_name(p.h.bth.opcode), p.h.bth.psn, p.h.bth.ackreq,
                 (p.opflags & OPF_AETH) ? p.h.aeth.syndrome : 0, p.h.sreth.offset,
                 (unsigned long long)p.h.sack);
        fl->to_b = side == 0;
        fl->at = l->now + l->latency;
        lq_tail++;
      }
    }
    if (moved)
      continue;
    /* next event: a delivery or a timer */
    next = RCT_NEVER;
    if (lq_head != lq_tail)
      next = lq[lq_head % LINK_Q].at;
    if (rct_next_timeout(&a->qp) < next)
      next = rct_next_timeout(&a->qp);
    if (rct_next_timeout(&b->qp) < next)
      next = rct_next_timeout(&b->qp);
    if (next == RCT_NEVER || next > until)
      break;
    if (next > l->now)
      l->now = next;
    while (lq_head != lq_tail && lq[lq_head % LINK_Q].at <= l->now) {
      struct inflight *fl = &lq[lq_head % LINK_Q];
      lq_head++;
      rct_handle_frame(fl->to_b ? &b->dev : &a->dev, l->now, fl->buf, (size_t)fl->len);
    }
    if (rct_next_timeout(&a->qp) <= l->now) {
      if (getenv("RCT_TRACE"))
        printf("%10llu A timer (una %06x)\n", (unsigned long long)l->now, a->qp.comp.una);
      rct_handle_timeout(&a->qp, l->now);
    }
    if (rct_next_timeout(&b->qp) <= l->now)
      rct_handle_timeout(&b->qp, l->now);
  }
  return l->now;
}

void peer_for(struct peer *p, const struct ep *e)
{
  memcpy(p->mac, e->qp.base.attr.ah.dmac, 6);
  p->ip = e->qp.base.attr.ah.dipv4;
  p->qpn = e->qp.base.attr.dest_qp_num;
  p->sport = rct_udp_sport(p->qpn, e->qp.base.init.qpn);
  p->ip_id = 1;
}

uint32_t build_frame(uint8_t *buf, const struct ep *e, const struct peer *pr, struct rct_hdr *h,
                     const void *payload, uint32_t len)
{
  uint32_t hl, pad;
  struct rct_iov seg = { (uint8_t *)(uintptr_t)payload, len };
  uint8_t zeros[4] = { 0 };
  memcpy(h->dmac, e->dev.attr.mac, 6);
  memcpy(h->smac, pr->mac, 6);
  h->sip = pr->ip;
  h->dip = e->dev.attr.ipv4;
  h->sport = pr->sport;
  h->ip_id = pr->ip_id;
  if (!h->bth.pkey)
    h->bth.pkey = 0xffff;
  if (!h->bth.dqpn)
    h->bth.dqpn = e->qp.base.init.qpn;
  hl = rct_wire_build(buf, h, len);
  pad = h->bth.padcnt;
  if (len)
    memcpy(buf + hl, payload, len);
  memset(buf + hl + len, 0, pad);
  rct_wire_icrc_store(buf + hl + len + pad,
                  rct_icrc_compute(buf, hl, ETH_HLEN, h->encap, &seg, len ? 1 : 0, zeros, pad));
  return hl + len + pad + 4;
}

enum rct_rx_result inject(struct ep *e, const struct peer *pr, uint64_t now, struct rct_hdr *h,
                          const void *payload, uint32_t len)
{
  static uint8_t buf[8192];
  uint32_t n = build_frame(buf, e, pr, h, payload, len);
  return rct_handle_frame(&e->dev, now, buf, n);
}

int expect_frame(struct ep *e, uint64_t now, struct rct_pkt *p, uint8_t *buf)
{
  struct rct_frame f;
  int n;
  if (!rct_poll_transmit(&e->qp, now, &f))
    return 0;
  n = rct_frame_linearize(&f, buf, 8192);
  ck_assert_int_gt(n, 0);
  ck_assert_int_eq(rct_wire_parse_base(p, buf, (uint32_t)n, true), RCT_PARSE_OK);
  ck_assert_msg(rct_wire_icrc_ok(p), "frame with bad ICRC");
  ck_assert_int_eq(rct_wire_parse_ext(p), RCT_PARSE_OK);
  return 1;
}

void expect_nothing_(struct ep *e, uint64_t now, const char *file, int line)
{
  struct rct_frame f;
  int got = rct_poll_transmit(&e->qp, now, &f);
  ck_assert_msg(!got, "%s:%d: expected no frame, got opcode 0x%02x psn 0x%06x", file, line,
                f.opcode, f.psn);
}

int cq_pop(struct rct_cq *cq, struct rct_wc *wc)
{
  return rct_poll_cq(cq, wc, 1);
}

enum rct_rx_result inject_ack(struct ep *e, const struct peer *pr, uint64_t now, uint8_t syn, uint32_t psn,
                              uint32_t msn)
{
  struct rct_hdr h;
  memset(&h, 0, sizeof(h));
  h.bth.opcode = OP_ACK;
  h.bth.psn = psn & PSN_MASK;
  h.aeth.syndrome = syn;
  h.aeth.msn = msn;
  return inject(e, pr, now, &h, NULL, 0);
}

enum rct_rx_result inject_req(struct ep *e, const struct peer *pr, uint64_t now, uint8_t opcode, uint32_t psn,
                              bool ackreq, uint32_t len, uint8_t fill, const struct rct_reth *reth, uint32_t imm)
{
  static uint8_t pay[8192];
  struct rct_hdr h;
  memset(&h, 0, sizeof(h));
  memset(pay, fill, len);
  h.bth.opcode = opcode;
  h.bth.psn = psn & PSN_MASK;
  h.bth.ackreq = ackreq;
  if (reth)
    h.reth = *reth;
  h.imm = imm;
  return inject(e, pr, now, &h, pay, len);
}

static struct ep fx_ep;
static struct peer fx_pr;

struct ep *fx_a(void) { return &fx_ep; }
struct peer *fx_peer(void) { return &fx_pr; }

void fx_setup_opts(const struct conn_opts *o)
{
  ep_init(&fx_ep, MAC_A, IP_A, QPN_A, 0);
  ep_connect(&fx_ep, MAC_B, IP_B, QPN_B, o->b_psn, o->a_psn, o);
  peer_for(&fx_pr, &fx_ep);
}

void fx_setup(void)
{
  struct conn_opts o;
  conn_defaults(&o);
  fx_setup_opts(&o);
}

void fx_teardown(void)
{
  ep_free(&fx_ep);
}

void expect_wc_(struct rct_cq *cq, uint64_t wr_id, enum rct_wc_status st, const char *file, int line)
{
  struct rct_wc wc;
  ck_assert_msg(cq_pop(cq, &wc), "%s:%d: expected a completion", file, line);
  ck_assert_msg(wc.wr_id == wr_id && wc.status == st, "%s:%d: completion wr_id %llu status %s, "
                "expected wr_id %llu status %s", file, line, (unsigned long long)wc.wr_id,
                rct_wc_status_name(wc.status), (unsigned long long)wr_id, rct_wc_status_name(st));
}

void expect_no_wc_(struct rct_cq *cq, const char *file, int line)
{
  struct rct_wc wc;
  ck_assert_msg(!cq_pop(cq, &wc), "%s:%d: unexpected completion wr_id %llu status %s", file, line,
                (unsigned long long)wc.wr_id, rct_wc_status_name(wc.status));
}

const char *vectors_dir(void)
{
  const char *d = getenv("RCT_VECTORS");
  return d && *d ? d : "tests/vectors";
}
