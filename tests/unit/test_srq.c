/*
 * test_srq.c: shared receive queues (proto-spec srq.md): several RC QPs of
 * one device draw from one SRQ in posting order, posting to such a QP is
 * refused, an empty SRQ means RNR until a WQE is posted, the limit event
 * fires once and disarms, a QP to ERR flushes only the WQEs it took, a UD
 * QP on the SRQ, destroy refused while a QP uses it.
 */
#include "harness.h"

#define NQP 3
#define SRQ_N 8
#define TAKEN 2            /* each QP's ring of taken WQEs [SRQ-TAKE-4] */
#define SLOT 2048          /* bytes of the MR each WQE receives into */
#define PEER_QPN(i) (0x40u + (i))
#define QPN(i) (0x20u + (i))

static struct ep S;        /* the server's device (its own QP S.qp unused) */
static struct rct_srq srq;
static struct rct_recv_wqe srq_ring[SRQ_N];
static struct srq_qp {
  struct rct_qp qp;
  struct rct_send_wqe sq[4];
  struct rct_recv_wqe rq[TAKEN];
  struct rct_rd_res rd[4];
  struct peer pr;
  uint32_t epsn;           /* the next PSN the test sends it */
} Q[NQP];
static struct host_mr *R;
static uint64_t now;

static struct rct_qp *lookup(void *ctx, uint32_t qpn)
{
  (void)ctx;
  for (int i = 0; i < NQP; i++)
    if (Q[i].qp.base.dev && Q[i].qp.base.init.qpn == qpn)
      return &Q[i].qp;
  return NULL;
}

static void setup(void)
{
  struct conn_opts o;
  conn_defaults(&o);
  ep_init(&S, MAC_A, IP_A, QPN_A, 0);
  S.dev.attr.qp_lookup = lookup;
  ck_assert_int_eq(rct_srq_init(&S.dev, &srq, srq_ring, SRQ_N), RCT_OK);
  for (int i = 0; i < NQP; i++) {
    struct rct_qp_init_attr ia = { .qpn = QPN(i), .pd = S.pd, .sq = Q[i].sq, .sq_size = 4,
                                   .rq = Q[i].rq, .rq_size = TAKEN, .rd = Q[i].rd, .rd_size = 4,
                                   .send_cq = &S.scq, .recv_cq = &S.rcq, .srq = &srq };
    ck_assert_int_eq(rct_qp_init(&S.dev, &Q[i].qp, &ia), RCT_OK);
    qp_connect(&Q[i].qp, MAC_B, IP_B, PEER_QPN(i), 100, 200, &o);
    memcpy(Q[i].pr.mac, MAC_B, 6);
    Q[i].pr.ip = IP_B;
    Q[i].pr.qpn = PEER_QPN(i);
    Q[i].pr.sport = rct_udp_sport(PEER_QPN(i), QPN(i));
    Q[i].pr.ip_id = 1;
    Q[i].epsn = 100;
  }
  R = ep_reg_mr(&S, 0x100000, SRQ_N * SLOT, RCT_ACCESS_LOCAL_WRITE);
  now = 0;
}

static void teardown(void)
{
  for (int i = 0; i < NQP; i++)
    if (Q[i].qp.base.dev)
      rct_qp_destroy(&Q[i].qp);
  if (srq.dev)
    ck_assert_int_eq(rct_srq_destroy(&srq), RCT_OK);
  ep_free(&S);
}

/* Post WQE wr_id receiving into slot n of R. */
static int srq_post(uint64_t wr_id, uint32_t n)
{
  struct rct_sge sge = { R->va + n * SLOT, SLOT, R->lkey };
  struct rct_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 };
  return rct_srq_post_recv(&srq, &wr);
}

/* The peer of QP i sends one packet (len bytes of fill) at its next PSN. */
static void send_pkt(int i, uint8_t opcode, uint32_t len, uint8_t fill)
{
  static uint8_t pay[1024];
  struct rct_hdr h;
  memset(&h, 0, sizeof(h));
  memset(pay, fill, len);
  h.bth.opcode = opcode;
  h.bth.psn = Q[i].epsn;
  h.bth.ackreq = 1;
  h.bth.dqpn = QPN(i);
  ck_assert_int_eq(inject(&S, &Q[i].pr, now, &h, pay, len), RCT_RX_OK);
  if (Q[i].qp.resp.epsn != Q[i].epsn)
    Q[i].epsn = Q[i].qp.resp.epsn;       /* executed: the next PSN */
}

/* QP i sends what it has to (counting what it sends). */
static void drain_tx(int i)
{
  struct rct_frame f;
  while (rct_poll_transmit(&Q[i].qp, now, &f))
    ;
}

static void expect_recv(uint64_t wr_id, int i, uint32_t len)
{
  struct rct_wc wc;
  ck_assert_msg(cq_pop(&S.rcq, &wc), "expected the completion of WQE %llu", (unsigned long long)wr_id);
  ck_assert_uint_eq(wc.wr_id, wr_id);
  ck_assert_int_eq(wc.status, RCT_WC_SUCCESS);
  ck_assert_uint_eq(wc.qp_num, QPN(i));
  ck_assert_uint_eq(wc.byte_len, len);
}

/* Drain the device's events; the count of type t (and the last of them in *last). */
static int events(enum rct_event_type t, struct rct_event *last)
{
  struct rct_event ev;
  int n = 0;
  while (rct_dev_next_event(&S.dev, &ev))
    if (ev.type == t) {
      n++;
      if (last)
        *last = ev;
    }
  return n;
}

/* [SRQ-TAKE-1] three QPs draw from one SRQ in posting order, each WQE completing on the taker */
START_TEST(test_srq_qps_take_in_order)
{
  for (uint32_t n = 0; n < 4; n++)
    ck_assert_int_eq(srq_post(10 + n, n), RCT_OK);
  send_pkt(0, OP_SEND_ONLY, 100, 0xa0);
  send_pkt(1, OP_SEND_ONLY, 200, 0xa1);
  send_pkt(2, OP_SEND_ONLY, 300, 0xa2);
  send_pkt(0, OP_SEND_ONLY, 400, 0xa3);
  expect_recv(10, 0, 100);
  expect_recv(11, 1, 200);
  expect_recv(12, 2, 300);
  expect_recv(13, 0, 400);
  expect_no_wc(&S.rcq);
  for (uint32_t n = 0; n < 4; n++)
    ck_assert_uint_eq(R->buf[n * SLOT], 0xa0 + n);
  ck_assert_uint_eq(rct_srq_count(&srq), 0);
}
END_TEST

/* [SRQ-TAKE-2] a QP on an SRQ takes no receive WR of its own */
START_TEST(test_srq_qp_post_recv_refused)
{
  struct rct_sge sge = { R->va, 64, R->lkey };
  struct rct_recv_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 };
  ck_assert_int_eq(rct_post_recv(&Q[0].qp, &wr), RCT_EINVAL);
  ck_assert_uint_eq(Q[0].qp.base.rq_tail, Q[0].qp.base.rq_head);
  ck_assert_uint_eq(rct_srq_count(&srq), 0);
}
END_TEST

/* [SRQ-TAKE-3] [RESP-RECV-2] an empty SRQ: RNR NAK, nothing executed; a posted WQE serves the retry */
START_TEST(test_srq_empty_rnr_then_recovers)
{
  uint32_t e0 = Q[1].epsn;
  send_pkt(1, OP_SEND_ONLY, 64, 0x5c);
  drain_tx(1);
  ck_assert_uint_eq(Q[1].qp.base.cnt.tx_rnr_nak, 1);
  ck_assert_uint_eq(Q[1].qp.resp.epsn, e0);
  expect_no_wc(&S.rcq);
  ck_assert_int_eq(srq_post(7, 0), RCT_OK);
  send_pkt(1, OP_SEND_ONLY, 64, 0x5c);
  ck_assert_uint_eq(Q[1].qp.resp.epsn, e0 + 1);
  expect_recv(7, 1, 64);
  ck_assert_uint_eq(R->buf[0], 0x5c);
}
END_TEST

/* [SRQ-TAKE-4] a QP holds at most its ring of taken WQEs: a third unfinished message waits (RNR) */
START_TEST(test_srq_taken_ring_bounds_a_qp)
{
  for (uint32_t n = 0; n < 4; n++)
    ck_assert_int_eq(srq_post(20 + n, n), RCT_OK);
  send_pkt(0, OP_SEND_ONLY, 10, 1);
  send_pkt(0, OP_SEND_ONLY, 10, 2);
  expect_recv(20, 0, 10);
  expect_recv(21, 0, 10);
  ck_assert_uint_eq(Q[0].qp.base.rq_tail - Q[0].qp.base.rq_head, 0);   /* completed ones leave it */
  ck_assert_uint_eq(rct_srq_count(&srq), 2);
  ck_assert_ptr_nonnull(rct_rq_at(&Q[0].qp.base, 1));                 /* takes two ahead */
  ck_assert_ptr_null(rct_rq_at(&Q[0].qp.base, 2));                    /* a third: its ring is full */
  ck_assert_uint_eq(rct_srq_count(&srq), 0);
}
END_TEST

/* [SRQ-LIMIT-1] [SRQ-LIMIT-2] the limit event: once when a take leaves fewer than the limit, then disarmed */
START_TEST(test_srq_limit_event_once)
{
  struct rct_event ev;
  ck_assert_int_eq(rct_srq_set_limit(&srq, SRQ_N + 1), RCT_EINVAL);
  ck_assert_uint_eq(srq.limit, 0);
  for (uint32_t n = 0; n < 5; n++)
    ck_assert_int_eq(srq_post(30 + n, n), RCT_OK);
  ck_assert_int_eq(rct_srq_set_limit(&srq, 4), RCT_OK);
  send_pkt(0, OP_SEND_ONLY, 8, 1);                       /* 4 left: not below */
  ck_assert_int_eq(events(RCT_EV_SRQ_LIMIT, NULL), 0);
  send_pkt(1, OP_SEND_ONLY, 8, 1);                       /* 3 left: below 4 */
  memset(&ev, 0, sizeof(ev));
  ck_assert_int_eq(events(RCT_EV_SRQ_LIMIT, &ev), 1);
  ck_assert_ptr_eq(ev.srq, &srq);
  ck_assert_uint_eq(srq.limit, 0);                       /* disarmed */
  send_pkt(2, OP_SEND_ONLY, 8, 1);
  ck_assert_int_eq(srq_post(40, 5), RCT_OK);
  send_pkt(2, OP_SEND_ONLY, 8, 1);
  ck_assert_int_eq(events(RCT_EV_SRQ_LIMIT, NULL), 0);   /* not again until re-armed */
  ck_assert_int_eq(rct_srq_set_limit(&srq, 3), RCT_OK);   /* 2 left: a take makes 1 */
  ck_assert_int_eq(events(RCT_EV_SRQ_LIMIT, NULL), 0);   /* setting it raises nothing */
  send_pkt(0, OP_SEND_ONLY, 8, 1);
  ck_assert_int_eq(events(RCT_EV_SRQ_LIMIT, NULL), 1);
}
END_TEST

/* [SRQ-ERR-1] [SRQ-ERR-2] a QP to ERR flushes the WQE it took; the SRQ's other WQEs serve the rest */
START_TEST(test_srq_qp_err_flushes_only_its_own)
{
  struct rct_qp_attr a = { .qp_state = RCT_QPS_ERR };
  struct rct_wc wc;
  struct rct_event ev;
  int err = 0, last = 0;
  for (uint32_t n = 0; n < 4; n++)
    ck_assert_int_eq(srq_post(50 + n, n), RCT_OK);
  send_pkt(0, OP_SEND_FIRST, 1024, 1);                    /* QP 0 takes 50 */
  send_pkt(1, OP_SEND_FIRST, 1024, 2);                    /* QP 1 takes 51 */
  expect_no_wc(&S.rcq);
  while (rct_dev_next_event(&S.dev, &ev))
    ;
  ck_assert_int_eq(rct_qp_modify(&Q[0].qp, &a, RCT_QP_STATE), RCT_OK);
  ck_assert(cq_pop(&S.rcq, &wc));
  ck_assert_uint_eq(wc.wr_id, 50);
  ck_assert_int_eq(wc.status, RCT_WC_WR_FLUSH_ERR);
  ck_assert_uint_eq(wc.qp_num, QPN(0));
  expect_no_wc(&S.rcq);
  ck_assert_uint_eq(rct_srq_count(&srq), 2);
  while (rct_dev_next_event(&S.dev, &ev)) {
    if (!ev.qp_base)
      continue;                                           /* the CQ's */
    ck_assert_ptr_eq(ev.qp_base, &Q[0].qp.base);
    err += ev.type == RCT_EV_QP_ERR;
    last += ev.type == RCT_EV_QP_LAST_WQE;
    ck_assert_msg(ev.type != RCT_EV_QP_LAST_WQE || err == 1, "LAST_WQE before QP_ERR");
  }
  ck_assert_int_eq(err, 1);
  ck_assert_int_eq(last, 1);
  send_pkt(1, OP_SEND_LAST, 10, 2);
  expect_recv(51, 1, 1034);
  send_pkt(2, OP_SEND_ONLY, 10, 3);
  expect_recv(52, 2, 10);
}
END_TEST

/* [SRQ-VERB-4] destroy is refused while a QP uses the SRQ; the last QP gone, it succeeds */
START_TEST(test_srq_destroy_refused_while_used)
{
  ck_assert_int_eq(srq_post(1, 0), RCT_OK);
  ck_assert_int_eq(rct_srq_destroy(&srq), RCT_ESTATE);
  ck_assert_uint_eq(rct_srq_count(&srq), 1);
  for (int i = 0; i < NQP - 1; i++)
    rct_qp_destroy(&Q[i].qp);
  ck_assert_int_eq(rct_srq_destroy(&srq), RCT_ESTATE);
  rct_qp_destroy(&Q[NQP - 1].qp);
  ck_assert_int_eq(rct_srq_destroy(&srq), RCT_OK);
  expect_no_wc(&S.rcq);
}
END_TEST

/* [SRQ-VERB-5] posting: full is ENOSPC, a bad WR EINVAL, neither changes the SRQ; its WQEs hold their keys */
START_TEST(test_srq_post_full_and_bad)
{
  struct rct_recv_wr bad = { .wr_id = 99, .sg_list = NULL, .num_sge = 1 };
  ck_assert(!rct_key_in_use(&S.dev, R->lkey));
  ck_assert_int_eq(rct_srq_post_recv(&srq, &bad), RCT_EINVAL);
  bad.num_sge = RCT_MAX_SGE + 1;
  ck_assert_int_eq(rct_srq_post_recv(&srq, &bad), RCT_EINVAL);
  for (uint32_t n = 0; n < SRQ_N; n++)
    ck_assert_int_eq(srq_post(n, n), RCT_OK);
  ck_assert_int_eq(srq_post(SRQ_N, 0), RCT_ENOSPC);
  ck_assert_uint_eq(rct_srq_count(&srq), SRQ_N);
  ck_assert(rct_key_in_use(&S.dev, R->lkey));
}
END_TEST

/* [SRQ-TAKE-1] [SRQ-TAKE-3] a UD QP on the SRQ: takes its oldest WQE; none: the SEND dropped, rx_no_recv */
START_TEST(test_srq_ud_qp_takes)
{
  static struct rct_ud_qp ud;
  static struct rct_send_wqe sq[4];
  static struct rct_recv_wqe rq[TAKEN];
  struct rct_qp_init_attr ia = { .qpn = 0x77, .pd = S.pd, .sq = sq, .sq_size = 4, .rq = rq,
                                 .rq_size = TAKEN, .send_cq = &S.scq, .recv_cq = &S.rcq, .srq = &srq };
  struct rct_recv_wr wr = { .wr_id = 1 };
  ck_assert_int_eq(rct_ud_qp_init(&S.dev, &ud, &ia), RCT_OK);
  ck_assert_int_eq(rct_qpb_post_recv(&ud.base, &wr), RCT_EINVAL);
  ck_assert_ptr_null(rct_rq_at(&ud.base, 0));
  ck_assert_int_eq(srq_post(61, 0), RCT_OK);
  ck_assert_uint_eq(rct_rq_at(&ud.base, 0)->wr_id, 61);
  ck_assert_uint_eq(rct_srq_count(&srq), 0);
  ck_assert_int_eq(rct_srq_destroy(&srq), RCT_ESTATE);
  rct_qpb_destroy(&ud.base);
}
END_TEST

/* Drop A's first frame. */
static bool drop_first(void *ctx, bool from_a, unsigned n, const struct rct_pkt *p)
{
  (void)ctx; (void)p;
  return from_a && n == 0;
}

/* [SRQ-TAKE-4] [SR-RESP-7] selective repeat over an SRQ: the messages placed
 * ahead of a lost one take the SRQ's next WQEs, and all complete in order */
START_TEST(test_srq_sr_places_ahead)
{
  static struct ep a, b;
  static struct rct_srq s;
  static struct rct_recv_wqe ring[8];
  struct rct_qp_init_attr ia;
  struct host_mr *src, *dst;
  struct conn_opts o;
  struct link l;
  struct rct_wc wc;
  conn_defaults(&o);
  o.sr = true;
  o.timeout = 8;
  ep_init(&a, MAC_A, IP_A, QPN_A, 0);
  ep_init(&b, MAC_B, IP_B, QPN_B, 0);
  ia = b.qp.base.init;                              /* b's QP again, on the SRQ */
  rct_qp_destroy(&b.qp);
  ck_assert_int_eq(rct_srq_init(&b.dev, &s, ring, 8), RCT_OK);
  ia.srq = &s;
  ia.rq_size = 4;
  ck_assert_int_eq(rct_qp_init(&b.dev, &b.qp, &ia), RCT_OK);
  pair_connect(&a, &b, &o);
  src = ep_reg_mr(&a, 0x10000, 16384, RCT_ACCESS_LOCAL_WRITE);
  dst = ep_reg_mr(&b, 0x40000, 16384, RCT_ACCESS_LOCAL_WRITE);
  for (uint32_t i = 0; i < 4; i++) {
    struct rct_sge sge = { dst->va + i * 4096, 4096, dst->lkey };
    struct rct_recv_wr wr = { .wr_id = 10 + i, .sg_list = &sge, .num_sge = 1 };
    ck_assert_int_eq(rct_srq_post_recv(&s, &wr), RCT_OK);
  }
  for (int i = 0; i < 4; i++)
    post_send(&a, (uint64_t)i, RCT_WR_SEND, src, (uint32_t)i * 1000, 1000 + (uint32_t)i, 0, 0, 0);
  link_init(&l);
  l.drop = drop_first;
  link_run(&l, &a, &b, 1000000000ull);
  ck_assert_uint_eq(b.qp.base.cnt.sr_placed_ooo, 3);
  for (int i = 0; i < 4; i++) {
    expect_wc(&a.scq, (uint64_t)i, RCT_WC_SUCCESS);
    ck_assert(cq_pop(&b.rcq, &wc));
    ck_assert_uint_eq(wc.wr_id, (uint64_t)(10 + i));
    ck_assert_uint_eq(wc.byte_len, 1000 + (uint32_t)i);
    ck_assert_int_eq(memcmp(dst->buf + i * 4096, src->buf + i * 1000, 1000), 0);
  }
  ck_assert_uint_eq(rct_srq_count(&s), 0);
  ep_free(&a);
  ep_free(&b);
  ck_assert_int_eq(rct_srq_destroy(&s), RCT_OK);
}
END_TEST

Suite *suite_srq(void)
{
  Suite *s = suite_create("srq");
  TCase *t = tcase_create("srq");
  tcase_add_checked_fixture(t, setup, teardown);
  tcase_add_test(t, test_srq_qps_take_in_order);
  tcase_add_test(t, test_srq_qp_post_recv_refused);
  tcase_add_test(t, test_srq_empty_rnr_then_recovers);
  tcase_add_test(t, test_srq_taken_ring_bounds_a_qp);
  tcase_add_test(t, test_srq_limit_event_once);
  tcase_add_test(t, test_srq_qp_err_flushes_only_its_own);
  tcase_add_test(t, test_srq_destroy_refused_while_used);
  tcase_add_test(t, test_srq_post_full_and_bad);
  tcase_add_test(t, test_srq_ud_qp_takes);
  suite_add_tcase(s, t);
  t = tcase_create("srq_sr");
  tcase_add_test(t, test_srq_sr_places_ahead);
  suite_add_tcase(s, t);
  return s;
}
