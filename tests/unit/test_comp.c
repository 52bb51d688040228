/*
 * test_comp.c: the completer: ACK/NAK handling, timers, retries, RNR,
 * go-back-N, READ responses, completions and the CQ. Scripted peer with
 * an owned clock: "inject at t, expect at t', nothing until t''".
 */
#include "harness.h"

#define A (fx_a())
#define P (fx_peer())
#define PSN0 0x123456u
#define RTO14 (4096ull << 14)          /* 67.108864 ms */
static uint8_t fb[8192];
static struct host_mr *M;

static void setup(void)
{
  fx_setup();
  M = ep_reg_mr(A, 0x10000, 65536, RCT_ACCESS_LOCAL_WRITE);
}

static void setup_with(struct conn_opts *o)
{
  fx_teardown();
  fx_setup_opts(o);
  M = ep_reg_mr(A, 0x10000, 65536, RCT_ACCESS_LOCAL_WRITE);
}

static int drain(uint64_t now, uint32_t *first_psn)
{
  struct rct_pkt p;
  int n = 0;
  while (expect_frame(A, now, &p, fb)) {
    if (!n && first_psn)
      *first_psn = p.h.bth.psn;
    n++;
  }
  return n;
}

/* [REQ-ACK-1] [REQ-CMPL-1] [REQ-CMPL-2] one coalesced ACK completes several WRs in order */
START_TEST(test_comp_coalesced_ack)
{
  for (int i = 0; i < 3; i++)
    post_send(A, (uint64_t)i, RCT_WR_SEND, M, 0, 100, 0, 0, 0);
  ck_assert_int_eq(drain(0, NULL), 3);
  ck_assert_int_eq(inject_ack(A, P, 5, 0x1f, PSN0 + 2, 3), RCT_RX_OK);
  for (int i = 0; i < 3; i++)
    expect_wc(&A->scq, (uint64_t)i, RCT_WC_SUCCESS);
  ck_assert_uint_eq(A->qp.base.cnt.rx_ack, 1);
  ck_assert_uint_eq(A->qp.comp.last_msn, 3);                /* [REQ-ACK-4] */
  ck_assert_uint_eq(rct_next_timeout(&A->qp), RCT_NEVER);
}
END_TEST

/* [REQ-ACK-2] [PSN-WIN-4] stale and never-sent ACKs change nothing */
START_TEST(test_comp_stale_and_future_ack)
{
  post_send(A, 1, RCT_WR_SEND, M, 0, 100, 0, 0, 0);
  post_send(A, 2, RCT_WR_SEND, M, 0, 100, 0, 0, 0);
  drain(0, NULL);
  inject_ack(A, P, 1, 0x1f, PSN0, 1);
  expect_wc(&A->scq, 1, RCT_WC_SUCCESS);
  inject_ack(A, P, 2, 0x1f, PSN0, 1);                /* una - 1: in window, nothing new */
  inject_ack(A, P, 2, 0x1f, PSN0 - 5, 0);            /* older */
  ck_assert_uint_eq(A->qp.base.cnt.rx_stale_ack, 1);
  inject_ack(A, P, 3, 0x1f, PSN0 + 7, 9);            /* never sent */
  ck_assert_uint_eq(A->qp.base.cnt.rx_out_of_window, 1);
  expect_no_wc(&A->scq);
  ck_assert_uint_eq(A->qp.comp.una, PSN0 + 1);
}
END_TEST

/* [REQ-TMO-1] [REQ-TMO-2] [REQ-GBN-1] [REQ-PSN-3] [REQ-ACKREQ-1] [REQ-TMO-6]
 * Nothing until the IBTA timeout, then everything outstanding again, then
 * the tail probe: one more copy of the oldest packet. */
START_TEST(test_comp_timeout_go_back_n)
{
  uint8_t first[8192];
  struct rct_pkt p, q;
  int n;
  post_send(A, 1, RCT_WR_RDMA_WRITE, M, 0, 3000, 0x5000, 0x77, 0);
  ck_assert(expect_frame(A, 0, &p, first));
  ck_assert_int_eq(drain(0, NULL), 2);
  ck_assert_uint_eq(rct_next_timeout(&A->qp), RTO14);
  rct_handle_timeout(&A->qp, RTO14 - 1);             /* spurious wakeup: harmless */
  expect_nothing(A, RTO14 - 1);
  rct_handle_timeout(&A->qp, RTO14);
  ck_assert(expect_frame(A, RTO14, &q, fb));
  ck_assert_uint_eq(q.h.bth.psn, PSN0);
  /* same transport bytes; only the IPv4 ID (and so checksum and ICRC) differ */
  ck_assert_int_eq(memcmp(fb + p.bth_off, first + p.bth_off, p.frame_len - p.bth_off - 4), 0);
  n = 1;
  while (n < 3 && expect_frame(A, RTO14, &q, fb))
    n++;
  ck_assert_int_eq(n, 3);
  ck_assert_uint_eq(q.h.bth.psn, PSN0 + 2);
  ck_assert(q.h.bth.ackreq);                           /* end of the burst */
  ck_assert(expect_frame(A, RTO14, &q, fb));          /* tail probe [REQ-TMO-6] */
  ck_assert_uint_eq(q.h.bth.psn, PSN0);
  ck_assert(q.h.bth.ackreq);
  expect_nothing(A, RTO14);
  ck_assert_uint_eq(A->qp.base.cnt.timeouts, 1);
  ck_assert_uint_eq(A->qp.base.cnt.tx_retransmits, 4);
  ck_assert_uint_eq(A->qp.comp.retry_left, 6);
  ck_assert_uint_eq(rct_next_timeout(&A->qp), 2 * RTO14);
}
END_TEST

/* [REQ-RETRY-2] [WC-STATUS-3] [QP-ERR-2] retries exhausted: RETRY_EXC_ERR then flush */
START_TEST(test_comp_retry_exhausted)
{
  struct conn_opts o;
  uint64_t t = 0;
  conn_defaults(&o);
  o.retry_cnt = 2;
  setup_with(&o);
  post_send(A, 1, RCT_WR_SEND, M, 0, 10, 0, 0, 0);
  post_send(A, 2, RCT_WR_SEND, M, 0, 10, 0, 0, 0);
  drain(0, NULL);
  for (int i = 0; i < 2; i++) {
    t = rct_next_timeout(&A->qp);
    rct_handle_timeout(&A->qp, t);
    ck_assert_int_eq(drain(t, NULL), 3);             /* both, and the tail probe [REQ-TMO-6] */
  }
  t = rct_next_timeout(&A->qp);
  rct_handle_timeout(&A->qp, t);
  expect_nothing(A, t);
  expect_wc(&A->scq, 1, RCT_WC_RETRY_EXC_ERR);
  expect_wc(&A->scq, 2, RCT_WC_WR_FLUSH_ERR);
  ck_assert_int_eq(A->qp.base.attr.qp_state, RCT_QPS_ERR);
  ck_assert_uint_eq(rct_next_timeout(&A->qp), RCT_NEVER);     /* [QP-ERR-3] */
}
END_TEST

/* [REQ-RETRY-1] progress resets the retry budget */
START_TEST(test_comp_retry_reset_on_progress)
{
  uint64_t t;
  post_send(A, 1, RCT_WR_SEND, M, 0, 10, 0, 0, 0);
  post_send(A, 2, RCT_WR_SEND, M, 0, 10, 0, 0, 0);
  drain(0, NULL);
  t = rct_next_timeout(&A->qp);
  rct_handle_timeout(&A->qp, t);
  drain(t, NULL);
  ck_assert_uint_eq(A->qp.comp.retry_left, 6);
  inject_ack(A, P, t + 10, 0x1f, PSN0, 1);
  ck_assert_uint_eq(A->qp.comp.retry_left, 7);
  ck_assert_uint_eq(rct_next_timeout(&A->qp), t + 10 + RTO14);   /* restarted on progress */
}
END_TEST

/* [REQ-TMO-1] timeout 0 waits forever */
START_TEST(test_comp_timeout_zero_is_infinite)
{
  struct conn_opts o;
  conn_defaults(&o);
  o.timeout = 0;
  setup_with(&o);
  post_send(A, 1, RCT_WR_SEND, M, 0, 10, 0, 0, 0);
  drain(0, NULL);
  ck_assert_uint_eq(rct_next_timeout(&A->qp), RCT_NEVER);
  ck_assert_uint_eq(rct_ack_timeout_ns(14), 67108864ull);
  ck_assert_uint_eq(rct_ack_timeout_ns(1), 8192ull);
}
END_TEST

/* [REQ-GBN-2] [REQ-RETRY-2] a sequence NAK: ack before p, resend from p once */
START_TEST(test_comp_seq_nak_go_back)
{
  uint32_t first;
  for (int i = 0; i < 5; i++)
    post_send(A, (uint64_t)i, RCT_WR_SEND, M, 0, 10, 0, 0, 0);
  drain(0, NULL);
  inject_ack(A, P, 10, AETH_NAK_PSN_SEQ, PSN0 + 2, 2);
  expect_wc(&A->scq, 0, RCT_WC_SUCCESS);
  expect_wc(&A->scq, 1, RCT_WC_SUCCESS);
  ck_assert_int_eq(drain(10, &first), 3);
  ck_assert_uint_eq(first, PSN0 + 2);
  ck_assert_uint_eq(A->qp.comp.retry_left, 7);             /* una advanced: no retry used */
  inject_ack(A, P, 11, AETH_NAK_PSN_SEQ, PSN0 + 2, 2);  /* same NAK again: ignored */
  expect_nothing(A, 11);
  ck_assert_uint_eq(A->qp.base.cnt.rx_nak_seq, 2);
}
END_TEST

/* GBN, MTU 256, window w: four 64-packet WRITEs posted, the window sent. */
static void loss_window_setup(bool sr, uint32_t w)
{
  struct conn_opts o;
  conn_defaults(&o);
  o.mtu = RCT_MTU_256;
  o.sr = sr;
  o.max_inflight = w;
  setup_with(&o);
  for (int i = 0; i < 4; i++)
    post_send(A, (uint64_t)i, RCT_WR_RDMA_WRITE, M, (uint32_t)i * 16384, 16384, 0x5000, 0x77, 0);
}

/* Frames sent at now: how many, and the last PSN. */
static int drain_last(uint64_t now, uint32_t *last)
{
  struct rct_pkt p;
  int n = 0;
  while (expect_frame(A, now, &p, fb)) {
    *last = p.h.bth.psn;
    n++;
  }
  return n;
}

/* [REQ-WIN-5] [REQ-GBN-2] a sequence NAK halves the loss window once per
 * window: a second NAK before una reaches recover replays, cuts nothing;
 * new packets wait for the halved window */
START_TEST(test_comp_gbn_loss_window_halves_once_per_window)
{
  uint32_t last = 0;
  loss_window_setup(false, 64);
  ck_assert_int_eq(drain_last(0, &last), 64);
  ck_assert_uint_eq(rct_comp_loss_window(&A->qp), 0);            /* unlimited until a loss */
  inject_ack(A, P, 10, AETH_NAK_PSN_SEQ, PSN0 + 10, 0);
  ck_assert_uint_eq(A->qp.base.cnt.window_cuts, 1);
  ck_assert_uint_eq(rct_comp_loss_window(&A->qp), 32);
  /* the replay of what was sent, bounded by [REQ-WIN-1] alone; nothing new */
  ck_assert_int_eq(drain_last(10, &last), 54);
  ck_assert_uint_eq(last, PSN0 + 63);
  inject_ack(A, P, 20, AETH_NAK_PSN_SEQ, PSN0 + 20, 0);      /* same window: no cut */
  ck_assert_int_eq(drain_last(20, &last), 44);
  ck_assert_uint_eq(A->qp.base.cnt.window_cuts, 1);
  ck_assert_uint_eq(rct_comp_loss_window(&A->qp), 32);
  inject_ack(A, P, 30, AETH_ACK, PSN0 + 40, 0);
  ck_assert_int_eq(drain_last(30, &last), 9);    /* una 41 + 32: PSNs 64..72 */
  ck_assert_uint_eq(last, PSN0 + 72);
  inject_ack(A, P, 31, AETH_ACK, PSN0 + 63, 1);
  ck_assert_int_eq(drain_last(31, &last), 23);   /* una 64 + 32: PSNs 73..95 */
  ck_assert_uint_eq(last, PSN0 + 95);
  ck_assert_uint_eq(rct_comp_loss_window(&A->qp), 32);   /* una reached recover: no credit yet */
}
END_TEST

/* [REQ-WIN-5] a window's worth of PSNs acknowledged after recover grows the
 * loss window by GBN_WINDOW_MIN; reaching the [REQ-WIN-1] window ends it */
START_TEST(test_comp_gbn_loss_window_grows_per_window_acked)
{
  uint32_t last = 0, una = PSN0;
  loss_window_setup(false, 64);
  drain_last(0, &last);
  inject_ack(A, P, 10, AETH_NAK_PSN_SEQ, PSN0, 0);
  drain_last(10, &last);
  inject_ack(A, P, 11, AETH_ACK, PSN0 + 63, 1);          /* una = recover: no credit yet */
  ck_assert_uint_eq(rct_comp_loss_window(&A->qp), 32);
  ck_assert_int_eq(drain_last(11, &last), 32);
  una = PSN0 + 64;
  for (uint32_t w = 32; w < 64; w += RCT_GBN_WINDOW_MIN) {
    ck_assert_uint_eq(rct_comp_loss_window(&A->qp), w);
    una = psn_add(una, w);
    inject_ack(A, P, 12, AETH_ACK, psn_prev(una), 2);    /* a whole window acknowledged */
    drain_last(12, &last);
  }
  ck_assert_uint_eq(rct_comp_loss_window(&A->qp), 0);     /* 32 + 16 + 16 = 64: unlimited */
  ck_assert_uint_eq(last, psn_add(una, 63));
  ck_assert_uint_eq(A->qp.base.cnt.window_cuts, 1);
}
END_TEST

/* [REQ-WIN-5] [REQ-TMO-2] a timeout is a loss event too; the window never
 * goes below GBN_WINDOW_MIN; a READ request is not held by it */
START_TEST(test_comp_gbn_loss_window_timeout_and_floor)
{
  uint32_t last = 0;
  loss_window_setup(false, 24);
  ck_assert_int_eq(drain_last(0, &last), 24);
  rct_handle_timeout(&A->qp, RTO14);
  ck_assert_uint_eq(A->qp.base.cnt.window_cuts, 1);
  ck_assert_uint_eq(rct_comp_loss_window(&A->qp), RCT_GBN_WINDOW_MIN);   /* 12 -> 16 */
  drain_last(RTO14, &last);
  ck_assert_uint_eq(last, PSN0);                                    /* the tail probe */
  rct_handle_timeout(&A->qp, 3 * RTO14);                 /* no progress since: no second cut */
  ck_assert_uint_eq(A->qp.base.cnt.window_cuts, 1);
}
END_TEST

/* [REQ-RNR-1] [REQ-RNR-2] [REQ-RNR-3] [HDR-AETH-3] RNR: wait the coded time, then resend */
START_TEST(test_comp_rnr_wait_and_retry)
{
  uint32_t first;
  uint64_t t0 = 1000, wait = 640000;               /* code 12 = 0.64 ms */
  post_send(A, 1, RCT_WR_SEND, M, 0, 3000, 0, 0, 0);
  drain(0, NULL);
  inject_ack(A, P, t0, AETH_RNR_NAK | 12, PSN0, 3);
  inject_ack(A, P, t0 + 1, AETH_NAK_PSN_SEQ, PSN0, 3);   /* rxe's follow-up NAK: ignored */
  ck_assert_uint_eq(rct_next_timeout(&A->qp), t0 + wait);
  ck_assert_uint_eq(A->qp.base.timer[RCT_TIMER_RETRANS], RCT_NEVER);
  expect_nothing(A, t0 + wait - 1);
  rct_handle_timeout(&A->qp, t0 + wait);
  ck_assert_int_eq(drain(t0 + wait, &first), 3);
  ck_assert_uint_eq(first, PSN0);
  ck_assert_uint_eq(A->qp.comp.retry_left, 7);              /* RNR does not use retry_cnt */
  ck_assert_uint_eq(A->qp.base.cnt.rnr_waits, 1);
  ck_assert_uint_eq(rct_rnr_timer_ns(0), 655360000ull);
  ck_assert_uint_eq(rct_rnr_timer_ns(1), 10000ull);
  ck_assert_uint_eq(rct_rnr_timer_ns(31), 491520000ull);
}
END_TEST

/* [REQ-RNR-1] waiting for RNR is one fact, the requester's pause: both
 * role states report it while it runs, nothing is sent, and its end is
 * the resend; the states are derived, IDLE again once all is acknowledged */
START_TEST(test_comp_rnr_wait_is_the_pause)
{
  uint64_t t0 = 1000, wait = 640000;               /* code 12 = 0.64 ms */
  ck_assert_int_eq(rct_qp_req_state(&A->qp), RCT_REQ_IDLE);
  ck_assert_int_eq(rct_qp_comp_state(&A->qp), RCT_COMP_IDLE);
  post_send(A, 1, RCT_WR_SEND, M, 0, 100, 0, 0, 0);
  ck_assert_int_eq(rct_qp_req_state(&A->qp), RCT_REQ_SENDING);
  drain(0, NULL);
  ck_assert_int_eq(rct_qp_comp_state(&A->qp), RCT_COMP_WAIT_ACK);
  inject_ack(A, P, t0, AETH_RNR_NAK | 12, PSN0, 0);
  ck_assert(rct_req_waiting_rnr(&A->qp));
  ck_assert_int_eq(rct_qp_req_state(&A->qp), RCT_REQ_WAIT_RNR);
  ck_assert_int_eq(rct_qp_comp_state(&A->qp), RCT_COMP_WAIT_RNR);
  ck_assert(!rct_req_has_work(&A->qp));
  expect_nothing(A, t0 + wait - 1);
  rct_handle_timeout(&A->qp, t0 + wait);
  ck_assert(!rct_req_waiting_rnr(&A->qp));
  ck_assert_int_eq(rct_qp_req_state(&A->qp), RCT_REQ_SENDING);
  ck_assert_int_eq(drain(t0 + wait, NULL), 1);     /* the resend */
  ck_assert_uint_eq(A->qp.base.cnt.rnr_timeouts, 1);
  inject_ack(A, P, t0 + wait + 10, AETH_ACK | 0x1f, PSN0, 1);
  expect_wc(&A->scq, 1, RCT_WC_SUCCESS);
  ck_assert_int_eq(rct_qp_req_state(&A->qp), RCT_REQ_IDLE);
  ck_assert_int_eq(rct_qp_comp_state(&A->qp), RCT_COMP_IDLE);
  rct_qp_modify(&A->qp, &(struct rct_qp_attr){ .qp_state = RCT_QPS_ERR }, RCT_QP_STATE);
  ck_assert_int_eq(rct_qp_req_state(&A->qp), RCT_REQ_ERROR);
  ck_assert_int_eq(rct_qp_comp_state(&A->qp), RCT_COMP_ERROR);
  ck_assert_int_eq(rct_qp_resp_state(&A->qp), RCT_RESP_ERROR);
}
END_TEST

/* [REQ-RETRY-1] rnr_retry 0: the first RNR NAK fails the WR */
START_TEST(test_comp_rnr_retry_exhausted)
{
  struct conn_opts o;
  conn_defaults(&o);
  o.rnr_retry = 0;
  setup_with(&o);
  post_send(A, 1, RCT_WR_SEND, M, 0, 10, 0, 0, 0);
  drain(0, NULL);
  inject_ack(A, P, 5, AETH_RNR_NAK | 1, PSN0, 0);
  expect_wc(&A->scq, 1, RCT_WC_RNR_RETRY_EXC_ERR);
  ck_assert_int_eq(A->qp.base.attr.qp_state, RCT_QPS_ERR);
}
END_TEST

/* [REQ-RETRY-1] rnr_retry 7 is infinite */
START_TEST(test_comp_rnr_retry_infinite)
{
  uint64_t t = 0;
  post_send(A, 1, RCT_WR_SEND, M, 0, 10, 0, 0, 0);
  drain(0, NULL);
  for (int i = 0; i < 50; i++) {
    inject_ack(A, P, t, AETH_RNR_NAK | 1, PSN0, 0);
    t = rct_next_timeout(&A->qp);
    rct_handle_timeout(&A->qp, t);
    ck_assert_int_eq(drain(t, NULL), 1);
  }
  ck_assert_uint_eq(A->qp.comp.rnr_left, 7);
  inject_ack(A, P, t + 1, 0x1f, PSN0, 1);
  expect_wc(&A->scq, 1, RCT_WC_SUCCESS);
}
END_TEST

/* [REQ-ACK-6] [WC-STATUS-2] [WC-STATUS-4] fatal NAKs map to statuses and end the QP */
START_TEST(test_comp_fatal_nak_status)
{
  static const struct { uint8_t syn; enum rct_wc_status st; } t[] = {
    { 0x61, RCT_WC_REM_INV_REQ_ERR }, { 0x62, RCT_WC_REM_ACCESS_ERR },
    { 0x63, RCT_WC_REM_OP_ERR }, { 0x64, RCT_WC_GENERAL_ERR },
  };
  for (int i = 0; i < 4; i++) {
    struct rct_wc wc;
    if (i) {
      fx_teardown();
      setup();
    }
    post_send(A, 1, RCT_WR_SEND, M, 0, 10, 0, 0, 0);
    post_send(A, 2, RCT_WR_RDMA_WRITE, M, 0, 10, 0x5000, 0x77, 0);
    post_send(A, 3, RCT_WR_SEND, M, 0, 10, 0, 0, 0);
    drain(0, NULL);
    inject_ack(A, P, 5, t[i].syn, PSN0 + 1, 1);
    expect_wc(&A->scq, 1, RCT_WC_SUCCESS);
    ck_assert(cq_pop(&A->scq, &wc));
    ck_assert_int_eq(wc.status, t[i].st);
    ck_assert_uint_eq(wc.wr_id, 2);
    ck_assert_int_eq(wc.opcode, RCT_WC_RDMA_WRITE);
    ck_assert_uint_eq(wc.byte_len, 0);
    ck_assert_uint_eq(wc.vendor_err, t[i].syn);
    expect_wc(&A->scq, 3, RCT_WC_WR_FLUSH_ERR);
    ck_assert_int_eq(A->qp.base.attr.qp_state, RCT_QPS_ERR);
  }
}
END_TEST

/* [REQ-ACK-7] an invalid syndrome is an unexpected response */
START_TEST(test_comp_bad_aeth)
{
  post_send(A, 1, RCT_WR_SEND, M, 0, 10, 0, 0, 0);
  drain(0, NULL);
  inject_ack(A, P, 5, 0x45, PSN0, 0);
  expect_wc(&A->scq, 1, RCT_WC_BAD_RESP_ERR);
  ck_assert_uint_eq(A->qp.base.cnt.rx_bad_aeth, 1);
}
END_TEST

/* [REQ-READ-1] [REQ-CMPL-1] [OPC-SEQ-5] READ responses land in the scatter list */
START_TEST(test_comp_read_response_placed)
{
  struct rct_wc wc;
  post_send(A, 1, RCT_WR_RDMA_READ, M, 100, 3000, 0x9000, 0x55, 0);
  drain(0, NULL);
  inject_req(A, P, 1, OP_READ_RESP_FIRST, PSN0, false, 1024, 0x11, NULL, 0);
  inject_req(A, P, 2, OP_READ_RESP_MIDDLE, PSN0 + 1, false, 1024, 0x22, NULL, 0);
  expect_no_wc(&A->scq);
  inject_req(A, P, 3, OP_READ_RESP_LAST, PSN0 + 2, false, 952, 0x33, NULL, 0);
  ck_assert(cq_pop(&A->scq, &wc));
  ck_assert_int_eq(wc.status, RCT_WC_SUCCESS);
  ck_assert_int_eq(wc.opcode, RCT_WC_RDMA_READ);
  ck_assert_uint_eq(wc.byte_len, 3000);
  ck_assert_uint_eq(M->buf[100], 0x11);
  ck_assert_uint_eq(M->buf[100 + 1024], 0x22);
  ck_assert_uint_eq(M->buf[100 + 2999], 0x33);
  ck_assert_uint_ne(M->buf[100 + 3000], 0x33);
  ck_assert_uint_eq(rct_next_timeout(&A->qp), RCT_NEVER);
}
END_TEST

/* [REQ-ACK-3] a READ response acknowledges the requests before the READ */
START_TEST(test_comp_read_implied_ack)
{
  post_send(A, 1, RCT_WR_SEND, M, 0, 10, 0, 0, 0);
  post_send(A, 2, RCT_WR_RDMA_READ, M, 0, 10, 0x9000, 0x55, 0);
  drain(0, NULL);
  inject_req(A, P, 1, OP_READ_RESP_ONLY, PSN0 + 1, false, 10, 0x44, NULL, 0);
  expect_wc(&A->scq, 1, RCT_WC_SUCCESS);
  expect_wc(&A->scq, 2, RCT_WC_SUCCESS);
}
END_TEST

/* [OPC-SEQ-6] [OPC-LEN-2] [REQ-ACK-7] wrong opcode or length in a READ response */
START_TEST(test_comp_read_response_unexpected)
{
  post_send(A, 1, RCT_WR_RDMA_READ, M, 0, 3000, 0x9000, 0x55, 0);
  drain(0, NULL);
  inject_req(A, P, 1, OP_READ_RESP_MIDDLE, PSN0, false, 1024, 0x11, NULL, 0);
  expect_wc(&A->scq, 1, RCT_WC_BAD_RESP_ERR);
  fx_teardown();
  setup();
  post_send(A, 1, RCT_WR_RDMA_READ, M, 0, 3000, 0x9000, 0x55, 0);
  drain(0, NULL);
  inject_req(A, P, 1, OP_READ_RESP_FIRST, PSN0, false, 1000, 0x11, NULL, 0);
  expect_wc(&A->scq, 1, RCT_WC_BAD_RESP_ERR);
}
END_TEST

/* [REQ-ACK-7] a READ response matching no READ is dropped and counted */
START_TEST(test_comp_read_response_without_read)
{
  post_send(A, 1, RCT_WR_SEND, M, 0, 10, 0, 0, 0);
  drain(0, NULL);
  inject_req(A, P, 1, OP_READ_RESP_ONLY, PSN0, false, 10, 0x11, NULL, 0);
  ck_assert_uint_eq(A->qp.base.cnt.rx_unexpected, 1);
  ck_assert_int_eq(A->qp.base.attr.qp_state, RCT_QPS_RTS);
  expect_no_wc(&A->scq);
}
END_TEST

/* [REQ-READ-1] duplicate and early READ responses are dropped */
START_TEST(test_comp_read_response_dup_and_early)
{
  post_send(A, 1, RCT_WR_RDMA_READ, M, 0, 3000, 0x9000, 0x55, 0);
  drain(0, NULL);
  inject_req(A, P, 1, OP_READ_RESP_FIRST, PSN0, false, 1024, 0x11, NULL, 0);
  inject_req(A, P, 2, OP_READ_RESP_FIRST, PSN0, false, 1024, 0x11, NULL, 0);
  inject_req(A, P, 3, OP_READ_RESP_LAST, PSN0 + 2, false, 952, 0x33, NULL, 0);
  ck_assert_uint_eq(A->qp.base.cnt.rx_dup, 1);
  ck_assert_uint_eq(A->qp.base.cnt.rx_out_of_seq, 1);
  expect_no_wc(&A->scq);
}
END_TEST

/* [REQ-ACK-5] [REQ-READ-3] an ACK past a READ with missing responses re-requests the rest */
START_TEST(test_comp_read_rerequest_after_ack)
{
  struct rct_pkt p;
  post_send(A, 1, RCT_WR_RDMA_READ, M, 0, 3000, 0x9000, 0x55, 0);
  post_send(A, 2, RCT_WR_SEND, M, 0, 10, 0, 0, 0);
  drain(0, NULL);
  inject_req(A, P, 1, OP_READ_RESP_FIRST, PSN0, false, 1024, 0x11, NULL, 0);
  inject_ack(A, P, 2, 0x1f, PSN0 + 3, 2);          /* the SEND is acked: responses 2, 3 were lost */
  ck_assert(expect_frame(A, 2, &p, fb));
  ck_assert_uint_eq(p.h.bth.opcode, OP_READ_REQ);
  ck_assert_uint_eq(p.h.bth.psn, PSN0 + 1);
  ck_assert_uint_eq(p.h.reth.va, 0x9000 + 1024);
  ck_assert_uint_eq(p.h.reth.dmalen, 3000 - 1024);
  ck_assert_uint_eq(p.h.reth.rkey, 0x55);
  ck_assert_uint_eq(A->qp.comp.retry_left, 7);
  ck_assert(expect_frame(A, 2, &p, fb));              /* and the SEND again (go-back-N) */
  inject_req(A, P, 3, OP_READ_RESP_FIRST, PSN0 + 1, false, 1024, 0x22, NULL, 0);  /* relative to the re-request */
  inject_req(A, P, 4, OP_READ_RESP_LAST, PSN0 + 2, false, 952, 0x33, NULL, 0);
  expect_wc(&A->scq, 1, RCT_WC_SUCCESS);
  inject_ack(A, P, 5, 0x1f, PSN0 + 3, 2);
  expect_wc(&A->scq, 2, RCT_WC_SUCCESS);
}
END_TEST

/* [REQ-READ-6] [REQ-WIN-1] [REQ-WIN-2] a READ with more response PSNs than
 * the window goes as READ requests of one piece each (a quarter of the READ
 * window), each sent once its responses fit the window; the WR completes
 * when every piece is placed, and the next WR follows its last piece. */
START_TEST(test_comp_read_split_into_pieces)
{
  struct conn_opts o;
  struct rct_pkt p;
  conn_defaults(&o);
  o.max_inflight = 8;                                  /* READ window 8: pieces of 2 */
  setup_with(&o);
  post_send(A, 1, RCT_WR_SEND, M, 0, 10, 0, 0, 0);
  post_send(A, 2, RCT_WR_RDMA_READ, M, 0, 7 * 1024 + 100, 0x9000, 0x55, 0);   /* 8 PSNs */
  post_send(A, 3, RCT_WR_SEND, M, 0, 10, 0, 0, 0);
  ck_assert(expect_frame(A, 0, &p, fb));
  ck_assert_uint_eq(p.h.bth.psn, PSN0);
  for (uint32_t i = 0; i < 3; i++) {                   /* pieces PSN0+1..2, +3..4, +5..6 */
    ck_assert(expect_frame(A, 0, &p, fb));
    ck_assert_uint_eq(p.h.bth.opcode, OP_READ_REQ);
    ck_assert_uint_eq(p.h.bth.psn, PSN0 + 1 + 2 * i);
    ck_assert_uint_eq(p.h.reth.va, 0x9000 + 2048 * i);
    ck_assert_uint_eq(p.h.reth.dmalen, 2048);
  }
  expect_nothing(A, 0);                                /* PSN0+7..8 would be 8 from una */
  inject_ack(A, P, 1, 0x1f, PSN0, 1);
  expect_wc(&A->scq, 1, RCT_WC_SUCCESS);
  ck_assert(expect_frame(A, 1, &p, fb));               /* the last piece: the rest */
  ck_assert_uint_eq(p.h.bth.psn, PSN0 + 7);
  ck_assert_uint_eq(p.h.reth.va, 0x9000 + 6144);
  ck_assert_uint_eq(p.h.reth.dmalen, 1024 + 100);
  expect_nothing(A, 1);                                /* the SEND: PSN0+9 is 8 from una */
  for (uint32_t piece = 0; piece < 4; piece++) {
    uint32_t first = PSN0 + 1 + 2 * piece;
    inject_req(A, P, 2, OP_READ_RESP_FIRST, first, false, 1024, 0x11, NULL, 0);
    inject_req(A, P, 2, OP_READ_RESP_LAST, first + 1, false, piece == 3 ? 100 : 1024, 0x11, NULL, 0);
    if (piece == 0) {
      ck_assert(expect_frame(A, 2, &p, fb));           /* the SEND after the READ's last piece */
      ck_assert_uint_eq(p.h.bth.psn, PSN0 + 9);
    } else if (piece < 3) {
      expect_no_wc(&A->scq);
    }
  }
  expect_wc(&A->scq, 2, RCT_WC_SUCCESS);
  ck_assert_uint_eq(A->qp.base.cnt.rx_read_resp, 8);
}
END_TEST

/* [REQ-WIN-2] each READ request holds a READ credit until una passes its
 * last response PSN: max_rd_atomic 1 sends one piece at a time */
START_TEST(test_comp_read_pieces_use_credit)
{
  struct conn_opts o;
  struct rct_pkt p;
  struct host_mr *big;
  conn_defaults(&o);
  o.rd_atomic = 1;
  setup_with(&o);
  big = ep_reg_mr(A, 0x100000, (RCT_READ_PIECE + 1) * 1024, RCT_ACCESS_LOCAL_WRITE);
  post_send(A, 1, RCT_WR_RDMA_READ, big, 0, (RCT_READ_PIECE + 1) * 1024, 0x9000, 0x55, 0);
  ck_assert(expect_frame(A, 0, &p, fb));
  ck_assert_uint_eq(p.h.reth.dmalen, RCT_READ_PIECE * 1024);
  expect_nothing(A, 0);
  inject_req(A, P, 1, OP_READ_RESP_FIRST, PSN0, false, 1024, 0x11, NULL, 0);
  for (uint32_t i = 1; i + 1 < RCT_READ_PIECE; i++)
    inject_req(A, P, 1, OP_READ_RESP_MIDDLE, PSN0 + i, false, 1024, 0x11, NULL, 0);
  expect_nothing(A, 1);                                /* one response of piece 1 to come */
  inject_req(A, P, 1, OP_READ_RESP_LAST, PSN0 + RCT_READ_PIECE - 1, false, 1024, 0x11, NULL, 0);
  ck_assert(expect_frame(A, 1, &p, fb));
  ck_assert_uint_eq(p.h.bth.psn, PSN0 + RCT_READ_PIECE);
  ck_assert_uint_eq(p.h.reth.dmalen, 1024);
}
END_TEST

/* [REQ-READ-7] [REQ-ACK-7] a response that cannot come from a request of
 * one piece (MIDDLE at a piece's first PSN) is a bad response */
START_TEST(test_comp_read_response_position_per_piece)
{
  struct conn_opts o;
  conn_defaults(&o);
  o.max_inflight = 8;                                  /* pieces of 2 */
  setup_with(&o);
  post_send(A, 1, RCT_WR_RDMA_READ, M, 0, 4 * 1024, 0x9000, 0x55, 0);
  drain(0, NULL);
  inject_req(A, P, 1, OP_READ_RESP_FIRST, PSN0, false, 1024, 0x11, NULL, 0);
  inject_req(A, P, 1, OP_READ_RESP_LAST, PSN0 + 1, false, 1024, 0x11, NULL, 0);
  drain(1, NULL);
  inject_req(A, P, 2, OP_READ_RESP_MIDDLE, PSN0 + 2, false, 1024, 0x11, NULL, 0);
  expect_wc(&A->scq, 1, RCT_WC_BAD_RESP_ERR);
}
END_TEST

/* [REQ-READ-5] [REQ-ACK-3] [REQ-ACK-5] [REQ-READ-1] [REQ-RETRY-4] go-back-N:
 * a READ response beyond the next expected one is dropped, but it acks the
 * SEND before the READ and re-requests the READ once; after a timeout the
 * next one re-requests again and gives the retry back. */
START_TEST(test_comp_read_out_of_order_response_gbn)
{
  struct rct_pkt p;
  uint64_t t;
  post_send(A, 1, RCT_WR_SEND, M, 0, 10, 0, 0, 0);
  post_send(A, 2, RCT_WR_RDMA_READ, M, 0, 3000, 0x9000, 0x55, 0);
  drain(0, NULL);
  /* the first response (PSN0 + 1) is lost */
  inject_req(A, P, 1, OP_READ_RESP_MIDDLE, PSN0 + 2, false, 1024, 0x22, NULL, 0);
  expect_wc(&A->scq, 1, RCT_WC_SUCCESS);               /* implied ACK of the SEND */
  ck_assert_uint_eq(A->qp.base.cnt.rx_out_of_seq, 1);
  ck_assert(expect_frame(A, 1, &p, fb));
  ck_assert_uint_eq(p.h.bth.opcode, OP_READ_REQ);
  ck_assert_uint_eq(p.h.bth.psn, PSN0 + 1);
  ck_assert_uint_eq(p.h.reth.dmalen, 3000);
  expect_nothing(A, 1);
  inject_req(A, P, 2, OP_READ_RESP_LAST, PSN0 + 3, false, 952, 0x33, NULL, 0);
  expect_nothing(A, 2);                                /* once per first missing PSN */
  ck_assert_uint_eq(A->qp.base.cnt.rx_out_of_seq, 2);
  ck_assert_uint_eq(A->qp.comp.retry_left, 7);
  t = rct_next_timeout(&A->qp);
  rct_handle_timeout(&A->qp, t);
  ck_assert_int_eq(drain(t, NULL), 2);                 /* the READ, and the tail probe */
  ck_assert_uint_eq(A->qp.comp.retry_left, 6);
  inject_req(A, P, t + 1, OP_READ_RESP_MIDDLE, PSN0 + 2, false, 1024, 0x22, NULL, 0);
  ck_assert_uint_eq(A->qp.comp.retry_left, 7);              /* the responder executed it */
  ck_assert(expect_frame(A, t + 1, &p, fb));
  ck_assert_uint_eq(p.h.bth.psn, PSN0 + 1);
  expect_no_wc(&A->scq);
}
END_TEST

/* [SR-REQ-16] [REQ-READ-6] [SR-REQ-7] SR: a READ of more than SR_WINDOW
 * response PSNs goes in pieces inside the READ window; responses are taken
 * in any order, and each run of missing responses is re-requested alone,
 * once (again only when its re-request shows lost), not the rest of the READ. */
START_TEST(test_comp_sr_read_rerequests_missing_runs)
{
  struct conn_opts o;
  struct rct_pkt p;
  struct host_mr *big;
  uint32_t n = RCT_READ_WINDOW / RCT_READ_PIECE;
  conn_defaults(&o);
  o.sr = true;
  setup_with(&o);
  big = ep_reg_mr(A, 0x100000, (RCT_SR_WINDOW + 6) * 1024, RCT_ACCESS_LOCAL_WRITE);
  post_send(A, 1, RCT_WR_RDMA_READ, big, 0, (RCT_SR_WINDOW + 6) * 1024, 0x9000, 0x55, 0);   /* > SR_WINDOW PSNs */
  for (uint32_t i = 0; i < n; i++) {
    ck_assert(expect_frame(A, 0, &p, fb));
    ck_assert_uint_eq(p.h.bth.opcode, OP_SR_BASE | OP_READ_REQ);
    ck_assert_uint_eq(p.h.bth.psn, PSN0 + i * RCT_READ_PIECE);
    ck_assert_uint_eq(p.h.reth.dmalen, RCT_READ_PIECE * 1024);
  }
  expect_nothing(A, 0);                                /* the READ window is full */
  /* PSN0 + 1 and PSN0 + 3, 4 lost */
  inject_req(A, P, 1, OP_READ_RESP_FIRST, PSN0, false, 1024, 0x11, NULL, 0);
  inject_req(A, P, 1, OP_READ_RESP_MIDDLE, PSN0 + 2, false, 1024, 0x22, NULL, 0);
  ck_assert(expect_frame(A, 1, &p, fb));
  ck_assert_uint_eq(p.h.bth.opcode, OP_SR_BASE | OP_READ_REQ);
  ck_assert_uint_eq(p.h.bth.psn, PSN0 + 1);
  ck_assert_uint_eq(p.h.reth.va, 0x9000 + 1024);
  ck_assert_uint_eq(p.h.reth.dmalen, 1024);            /* the run, not the rest */
  expect_nothing(A, 1);
  inject_req(A, P, 2, OP_READ_RESP_MIDDLE, PSN0 + 5, false, 1024, 0x22, NULL, 0);
  ck_assert(expect_frame(A, 2, &p, fb));
  ck_assert_uint_eq(p.h.bth.psn, PSN0 + 3);
  ck_assert_uint_eq(p.h.reth.dmalen, 2048);
  expect_nothing(A, 2);                                /* PSN0 + 1 asked for once */
  inject_req(A, P, 3, OP_READ_RESP_MIDDLE, PSN0 + 6, false, 1024, 0x22, NULL, 0);
  expect_nothing(A, 3);
  ck_assert_uint_eq(A->qp.comp.una, PSN0 + 1);
  /* the run re-requested second is answered while the first is still
   * missing: the first's replay was lost, it is asked again */
  inject_req(A, P, 4, OP_READ_RESP_FIRST, PSN0 + 3, false, 1024, 0x33, NULL, 0);
  ck_assert(expect_frame(A, 4, &p, fb));
  ck_assert_uint_eq(p.h.bth.psn, PSN0 + 1);
  ck_assert_uint_eq(p.h.reth.dmalen, 1024);
  inject_req(A, P, 4, OP_READ_RESP_LAST, PSN0 + 4, false, 1024, 0x33, NULL, 0);
  expect_nothing(A, 4);
  inject_req(A, P, 5, OP_READ_RESP_ONLY, PSN0 + 1, false, 1024, 0x33, NULL, 0);
  ck_assert_uint_eq(A->qp.comp.una, PSN0 + 7);
  ck_assert_uint_eq(big->buf[1024], 0x33);
  ck_assert_uint_eq(big->buf[2 * 1024], 0x22);
  ck_assert_uint_eq(A->qp.base.cnt.rx_read_resp, 7);
}
END_TEST

/* [REQ-READ-8] [REQ-READ-6] SR: the READ window counts the responses
 * requested and not yet received, not the distance from una: while a hole
 * at una is re-requested, each received response lets the next piece go;
 * never beyond SR_WINDOW from una, and never past the READ credit. */
START_TEST(test_comp_sr_read_window_counts_unreceived)
{
  struct conn_opts o;
  struct rct_pkt p;
  conn_defaults(&o);
  o.sr = true;
  o.max_inflight = 8;                                  /* READ window 8: pieces of 2 */
  o.rd_atomic = 8;                                     /* credit to spare */
  setup_with(&o);
  post_send(A, 1, RCT_WR_RDMA_READ, M, 0, 16 * 1024, 0x9000, 0x55, 0);   /* 16 PSNs, 8 pieces */
  for (uint32_t i = 0; i < 4; i++) {
    ck_assert(expect_frame(A, 0, &p, fb));
    ck_assert_uint_eq(p.h.bth.psn, PSN0 + 2 * i);
  }
  expect_nothing(A, 0);                                /* 8 responses requested, none received */
  /* PSN0 lost: PSN0 + 1 shows it, the run is re-requested */
  inject_req(A, P, 1, OP_READ_RESP_LAST, PSN0 + 1, false, 1024, 0x22, NULL, 0);
  ck_assert(expect_frame(A, 1, &p, fb));
  ck_assert_uint_eq(p.h.bth.psn, PSN0);
  ck_assert_uint_eq(p.h.reth.dmalen, 1024);
  expect_nothing(A, 1);                                /* 7 unreceived: a piece of 2 does not fit */
  inject_req(A, P, 2, OP_READ_RESP_FIRST, PSN0 + 2, false, 1024, 0x22, NULL, 0);
  ck_assert(expect_frame(A, 2, &p, fb));               /* una still PSN0, the next piece goes */
  ck_assert_uint_eq(p.h.bth.opcode, OP_SR_BASE | OP_READ_REQ);
  ck_assert_uint_eq(p.h.bth.psn, PSN0 + 8);
  ck_assert_uint_eq(p.h.reth.va, 0x9000 + 8 * 1024);
  ck_assert_uint_eq(p.h.reth.dmalen, 2048);
  ck_assert_uint_eq(A->qp.comp.una, PSN0);
  inject_req(A, P, 3, OP_READ_RESP_LAST, PSN0 + 3, false, 1024, 0x22, NULL, 0);
  inject_req(A, P, 3, OP_READ_RESP_FIRST, PSN0 + 4, false, 1024, 0x22, NULL, 0);
  ck_assert(expect_frame(A, 3, &p, fb));
  ck_assert_uint_eq(p.h.bth.psn, PSN0 + 10);
  expect_nothing(A, 3);
  /* the replay arrives: everything up to PSN0 + 4 is in, una moves */
  inject_req(A, P, 4, OP_READ_RESP_ONLY, PSN0, false, 1024, 0x33, NULL, 0);
  ck_assert_uint_eq(A->qp.comp.una, PSN0 + 5);
  ck_assert_uint_eq(M->buf[0], 0x33);
  ck_assert_uint_eq(M->buf[1024], 0x22);
  expect_nothing(A, 4);                                /* 7 unreceived (PSN0 + 5 .. 11) */
  inject_req(A, P, 5, OP_READ_RESP_LAST, PSN0 + 5, false, 1024, 0x22, NULL, 0);
  ck_assert(expect_frame(A, 5, &p, fb));
  ck_assert_uint_eq(p.h.bth.psn, PSN0 + 12);
}
END_TEST

/* [REQ-WIN-2] [REQ-READ-8] SR: a READ piece still waits for a READ credit
 * while una stalls at a hole, however few responses are unreceived */
START_TEST(test_comp_sr_read_window_keeps_credit)
{
  struct conn_opts o;
  struct rct_pkt p;
  conn_defaults(&o);
  o.sr = true;
  o.max_inflight = 8;                                  /* pieces of 2 */
  o.rd_atomic = 2;
  setup_with(&o);
  post_send(A, 1, RCT_WR_RDMA_READ, M, 0, 8 * 1024, 0x9000, 0x55, 0);
  ck_assert_int_eq(drain(0, NULL), 2);                 /* two credits: two pieces */
  inject_req(A, P, 1, OP_READ_RESP_LAST, PSN0 + 1, false, 1024, 0x22, NULL, 0);   /* PSN0 lost */
  ck_assert(expect_frame(A, 1, &p, fb));
  ck_assert_uint_eq(p.h.bth.psn, PSN0);                /* its re-request takes no credit */
  inject_req(A, P, 2, OP_READ_RESP_FIRST, PSN0 + 2, false, 1024, 0x22, NULL, 0);
  inject_req(A, P, 2, OP_READ_RESP_LAST, PSN0 + 3, false, 1024, 0x22, NULL, 0);
  expect_nothing(A, 2);                                /* 1 unreceived, but both credits held */
  inject_req(A, P, 3, OP_READ_RESP_ONLY, PSN0, false, 1024, 0x33, NULL, 0);
  ck_assert_int_eq(drain(3, NULL), 2);                 /* una passed both: two more pieces */
}
END_TEST

/* [REQ-READ-8] [SR-REQ-1] [REQ-WIN-2] SR, READ window READ_WINDOW (a
 * quarter of SR_WINDOW): while a lost first response holds una, each
 * piece's worth of responses that arrives lets one more piece go, beyond
 * the READ window from una, up to SR_WINDOW from una and no further.
 * SR_WINDOW is MAX_RD_ATOMIC pieces of READ_PIECE, so for READs alone the
 * window and the credits stop the pieces at the same PSN: this checks the
 * two bounds together (a hole that is not a READ is acknowledged by the
 * first READ response after it, [REQ-ACK-3], so it cannot hold una). */
START_TEST(test_comp_sr_read_window_room_past_hole)
{
  struct conn_opts o;
  struct rct_pkt p;
  struct host_mr *big;
  uint32_t w = RCT_READ_WINDOW, piece = w / 4, n = RCT_SR_WINDOW + 2 * piece, sent = 0;
  conn_defaults(&o);
  o.sr = true;
  o.max_inflight = w;
  o.rd_atomic = RCT_MAX_RD_ATOMIC;
  setup_with(&o);
  big = ep_reg_mr(A, 0x100000, n * 1024, RCT_ACCESS_LOCAL_WRITE);
  post_send(A, 1, RCT_WR_RDMA_READ, big, 0, n * 1024, 0x9000, 0x55, 0);
  while (expect_frame(A, 0, &p, fb)) {
    ck_assert_uint_eq(p.h.bth.psn, PSN0 + sent);
    ck_assert_uint_eq(p.h.reth.dmalen, piece * 1024);
    sent += piece;
  }
  ck_assert_uint_eq(sent, w);
  /* PSN0 lost; every later response requested arrives, and each piece's
   * worth lets one more piece go */
  for (uint32_t k = 1; k < sent; k++) {
    uint32_t pos = k % piece;
    uint8_t op = pos == 0 ? OP_READ_RESP_FIRST : pos == piece - 1 ? OP_READ_RESP_LAST : OP_READ_RESP_MIDDLE;
    inject_req(A, P, k, op, PSN0 + k, false, 1024, 0x22, NULL, 0);
    while (expect_frame(A, k, &p, fb))
      if (p.h.bth.psn == PSN0 + sent) {
        ck_assert_uint_eq(p.h.reth.dmalen, piece * 1024);
        sent += piece;
      }
  }
  ck_assert_uint_eq(A->qp.comp.una, PSN0);
  ck_assert_uint_eq(sent, RCT_SR_WINDOW);              /* beyond w from una, up to SR_WINDOW */
  expect_nothing(A, 99);
}
END_TEST

/* [PSN-WIN-4] a NAK naming una - 1 is outside the window */
START_TEST(test_comp_nak_before_una_ignored)
{
  post_send(A, 1, RCT_WR_SEND, M, 0, 10, 0, 0, 0);
  post_send(A, 2, RCT_WR_SEND, M, 0, 10, 0, 0, 0);
  drain(0, NULL);
  inject_ack(A, P, 1, 0x1f, PSN0, 1);
  expect_wc(&A->scq, 1, RCT_WC_SUCCESS);
  inject_ack(A, P, 2, AETH_NAK_PSN_SEQ, PSN0, 1);     /* una - 1 */
  inject_ack(A, P, 2, AETH_NAK_REM_ACC, PSN0, 1);
  expect_nothing(A, 2);
  expect_no_wc(&A->scq);
  ck_assert_int_eq(A->qp.base.attr.qp_state, RCT_QPS_RTS);
  ck_assert_uint_eq(A->qp.base.cnt.rx_stale_ack, 2);
}
END_TEST

/* [REQ-READ-3] [OPC-SEQ-6] an old in-flight MIDDLE is still accepted after a re-request */
START_TEST(test_comp_read_old_middle_after_rerequest)
{
  struct rct_pkt p;
  uint64_t t;
  post_send(A, 1, RCT_WR_RDMA_READ, M, 0, 3000, 0x9000, 0x55, 0);
  drain(0, NULL);
  inject_req(A, P, 1, OP_READ_RESP_FIRST, PSN0, false, 1024, 0x11, NULL, 0);
  t = rct_next_timeout(&A->qp);
  rct_handle_timeout(&A->qp, t);
  ck_assert(expect_frame(A, t, &p, fb));
  ck_assert_uint_eq(p.h.bth.opcode, OP_READ_REQ);
  ck_assert_uint_eq(p.h.bth.psn, PSN0 + 1);
  inject_req(A, P, t + 1, OP_READ_RESP_MIDDLE, PSN0 + 1, false, 1024, 0x22, NULL, 0);
  inject_req(A, P, t + 2, OP_READ_RESP_LAST, PSN0 + 2, false, 952, 0x33, NULL, 0);
  expect_wc(&A->scq, 1, RCT_WC_SUCCESS);
}
END_TEST

/* [REQ-TMO-4] adaptive RTO from un-retransmitted samples, clamped */
START_TEST(test_comp_adaptive_rto)
{
  struct conn_opts o;
  conn_defaults(&o);
  o.adaptive = true;
  setup_with(&o);
  ck_assert_uint_eq(rct_comp_rto(&A->qp), 4 * RCT_MIN_RTO_DEFAULT_NS);   /* no sample yet */
  post_send(A, 1, RCT_WR_SEND, M, 0, 10, 0, 0, 0);
  drain(0, NULL);
  inject_ack(A, P, 4000000, 0x1f, PSN0, 1);            /* RTT 4 ms */
  ck_assert_uint_eq(A->qp.comp.srtt, 4000000);
  ck_assert_uint_eq(A->qp.comp.rttvar, 2000000);
  ck_assert_uint_eq(rct_comp_rto(&A->qp), 12000000);       /* SRTT + 4 RTTVAR */
  post_send(A, 2, RCT_WR_SEND, M, 0, 10, 0, 0, 0);
  drain(5000000, NULL);
  ck_assert_uint_eq(A->qp.base.timer[RCT_TIMER_RETRANS], 5000000 + 12000000);
  rct_handle_timeout(&A->qp, 17000000);
  ck_assert_uint_eq(rct_comp_rto(&A->qp), 24000000);       /* backoff */
  drain(17000000, NULL);
  inject_ack(A, P, 18000000, 0x1f, PSN0 + 1, 2);       /* retransmitted: no sample (Karn) */
  ck_assert_uint_eq(A->qp.comp.srtt, 4000000);
  /* tiny RTTs are clamped to min_rto */
  post_send(A, 3, RCT_WR_SEND, M, 0, 10, 0, 0, 0);
  A->qp.comp.rto = 1000;
  ck_assert_uint_eq(rct_comp_rto(&A->qp), RCT_MIN_RTO_DEFAULT_NS);
}
END_TEST

/* [REQ-TMO-4] [REQ-TMO-9] [REQ-TMO-7] before the first RTT sample the
 * adaptive RTO is 4 x min_rto, not the IBTA timeout: a lost first packet
 * costs 4 ms here, not 67 ms (a second with rdma_cm's timeout 18). Backoff
 * doubles it; una advancing without a sample brings it back; it never
 * exceeds the IBTA value. */
START_TEST(test_comp_initial_rto_before_first_sample)
{
  struct conn_opts o;
  uint64_t rto0 = 4 * RCT_MIN_RTO_DEFAULT_NS;
  conn_defaults(&o);
  o.adaptive = true;
  setup_with(&o);
  post_send(A, 1, RCT_WR_SEND, M, 0, 10, 0, 0, 0);
  drain(0, NULL);                                      /* lost */
  ck_assert_uint_eq(rct_next_timeout(&A->qp), rto0);
  rct_handle_timeout(&A->qp, rto0);
  ck_assert_uint_eq(A->qp.base.cnt.timeouts, 1);
  ck_assert_uint_eq(rct_comp_rto(&A->qp), 2 * rto0);   /* backoff */
  drain(rto0, NULL);                                   /* the resend and its tail probe */
  ck_assert_uint_eq(rct_next_timeout(&A->qp), rto0 + 2 * rto0);
  inject_ack(A, P, rto0 + 500000, 0x1f, PSN0, 1);      /* a resend's ACK: no sample (Karn) */
  expect_wc(&A->scq, 1, RCT_WC_SUCCESS);
  ck_assert_uint_eq(A->qp.comp.srtt, 0);
  ck_assert_uint_eq(rct_comp_rto(&A->qp), rto0);       /* una moved: backoff over */
  o.timeout = 8;                                       /* IBTA 1.048576 ms < 4 ms */
  setup_with(&o);
  ck_assert_uint_eq(rct_comp_rto(&A->qp), 4096ull << 8);
}
END_TEST

/* An adaptive-RTO connection (min_rto_ns 0: the default floor) whose
 * first SEND was acknowledged rtt_ns after it left at t=0: one RTT sample. */
static void adaptive_after_sample(uint64_t min_rto_ns, uint64_t rtt_ns)
{
  struct conn_opts o;
  conn_defaults(&o);
  o.adaptive = true;
  setup_with(&o);
  if (min_rto_ns)
    A->qp.base.attr.min_rto_ns = min_rto_ns;
  post_send(A, 1, RCT_WR_SEND, M, 0, 10, 0, 0, 0);
  drain(0, NULL);
  inject_ack(A, P, rtt_ns, 0x1f, PSN0, 1);
}

/* [REQ-TMO-9] an estimate under min_rto backs off from min_rto: the
 * timeouts of an outage spread out from the first one */
START_TEST(test_comp_backoff_from_clamped_rto)
{
  uint64_t t, gap[3];
  adaptive_after_sample(10000000, 2000000);            /* 10 ms floor; RTT 2 ms: estimate 6 ms */
  ck_assert_uint_eq(rct_comp_rto(&A->qp), 10000000);       /* clamped up */
  post_send(A, 2, RCT_WR_SEND, M, 0, 10, 0, 0, 0);
  drain(3000000, NULL);
  t = 3000000;
  for (int i = 0; i < 3; i++) {
    uint64_t next = A->qp.base.timer[RCT_TIMER_RETRANS];
    gap[i] = next - t;
    t = next;
    rct_handle_timeout(&A->qp, t);
    drain(t, NULL);
  }
  ck_assert_uint_eq(gap[0], 10000000);
  ck_assert_uint_eq(gap[1], 20000000);                     /* not 2 x 6 ms */
  ck_assert_uint_eq(gap[2], 40000000);
}
END_TEST

/* [REQ-TMO-7] una advancing without a sample (Karn) ends the backoff */
START_TEST(test_comp_backoff_ends_with_progress)
{
  uint64_t t;
  adaptive_after_sample(0, 4000000);                   /* sample: RTO 12 ms */
  post_send(A, 2, RCT_WR_SEND, M, 0, 10, 0, 0, 0);
  drain(5000000, NULL);
  t = A->qp.base.timer[RCT_TIMER_RETRANS];
  rct_handle_timeout(&A->qp, t);
  drain(t, NULL);
  t = A->qp.base.timer[RCT_TIMER_RETRANS];
  rct_handle_timeout(&A->qp, t);
  drain(t, NULL);
  ck_assert_uint_eq(rct_comp_rto(&A->qp), 48000000);       /* doubled twice */
  inject_ack(A, P, t + 1000, 0x1f, PSN0 + 1, 2);       /* retransmitted: no sample */
  ck_assert_uint_eq(A->qp.comp.srtt, 4000000);
  ck_assert_uint_eq(rct_comp_rto(&A->qp), 12000000);       /* back to SRTT + 4 RTTVAR */
  post_send(A, 3, RCT_WR_SEND, M, 0, 10, 0, 0, 0);
  drain(t + 2000, NULL);
  ck_assert_uint_eq(A->qp.base.timer[RCT_TIMER_RETRANS], t + 2000 + 12000000);
}
END_TEST

/* [REQ-TMO-8] [REQ-TMO-6] 2 SRTT + 1 ms after the timer starts, before the
 * RTO, the packet at una goes once more with AckReq: no retry used, no
 * backoff, once until una moves */
START_TEST(test_comp_early_probe)
{
  struct conn_opts o;
  struct rct_pkt p;
  uint64_t t;
  conn_defaults(&o);
  o.adaptive = true;
  setup_with(&o);
  post_send(A, 1, RCT_WR_SEND, M, 0, 10, 0, 0, 0);
  drain(0, NULL);
  ck_assert_uint_eq(A->qp.base.timer[RCT_TIMER_PROBE], RCT_NEVER);   /* no SRTT yet */
  inject_ack(A, P, 4000000, 0x1f, PSN0, 1);            /* SRTT 4 ms, RTO 12 ms */
  post_send(A, 2, RCT_WR_SEND, M, 0, 10, 0, 0, 0);
  post_send(A, 3, RCT_WR_SEND, M, 0, 10, 0, 0, 0);
  ck_assert_int_eq(drain(5000000, NULL), 2);
  t = rct_next_timeout(&A->qp);
  ck_assert_uint_eq(t, 5000000 + 9000000);             /* 2 x 4 ms + 1 ms < 12 ms */
  rct_handle_timeout(&A->qp, t);
  ck_assert(expect_frame(A, t, &p, fb));
  ck_assert_uint_eq(p.h.bth.psn, PSN0 + 1);            /* una */
  ck_assert_uint_eq(p.h.bth.ackreq, 1);
  expect_nothing(A, t);
  ck_assert_uint_eq(A->qp.base.cnt.early_probes, 1);
  ck_assert_uint_eq(A->qp.base.cnt.timeouts, 0);
  ck_assert_uint_eq(A->qp.comp.retry_left, 7);
  ck_assert_uint_eq(rct_comp_rto(&A->qp), 12000000);       /* no backoff */
  ck_assert_uint_eq(A->qp.base.timer[RCT_TIMER_PROBE], RCT_NEVER);   /* once until una moves */
  inject_ack(A, P, t + 10, 0x1f, PSN0 + 1, 2);
  ck_assert_uint_eq(A->qp.base.timer[RCT_TIMER_PROBE], t + 10 + 2 * A->qp.comp.srtt + 1000000);
}
END_TEST

/* Connected with o and the adaptive RTO; a SEND (wr 1) acknowledged 4 ms
 * after it went: SRTT 4 ms, RTO 12 ms. */
static void srtt_4ms(struct conn_opts *o)
{
  o->adaptive = true;
  setup_with(o);
  post_send(A, 1, RCT_WR_SEND, M, 0, 10, 0, 0, 0);
  drain(0, NULL);
  inject_ack(A, P, 4000000, 0x1f, PSN0, 1);
}

/* [REQ-TMO-11] [REQ-TMO-8] a probe handled more than the slack after its
 * deadline (this side was paused) waits once, 2 SRTT + the slack from
 * then; the second expiry probes however late it comes; una moving
 * allows one more wait */
START_TEST(test_comp_late_probe_waits_once)
{
  struct conn_opts o;
  struct rct_pkt p;
  uint64_t d, late, again;
  conn_defaults(&o);
  srtt_4ms(&o);
  A->qp.base.attr.min_rto_ns = 40000000;                     /* RTO 40 ms: room for the wait */
  post_send(A, 2, RCT_WR_SEND, M, 0, 10, 0, 0, 0);
  post_send(A, 3, RCT_WR_SEND, M, 0, 10, 0, 0, 0);
  ck_assert_int_eq(drain(5000000, NULL), 2);
  d = A->qp.base.timer[RCT_TIMER_PROBE];
  ck_assert_uint_eq(d, 5000000 + 9000000);
  late = d + 1000000 + 1;                               /* 1 ms slack + 1 ns late */
  rct_handle_timeout(&A->qp, late);
  expect_nothing(A, late);
  ck_assert_uint_eq(A->qp.base.cnt.late_probes, 1);
  ck_assert_uint_eq(A->qp.base.cnt.early_probes, 0);
  again = late + 9000000;
  ck_assert_uint_eq(A->qp.base.timer[RCT_TIMER_PROBE], again);
  rct_handle_timeout(&A->qp, again + 5000000);           /* late again: it probes now */
  ck_assert(expect_frame(A, again + 5000000, &p, fb));
  ck_assert_uint_eq(p.h.bth.psn, PSN0 + 1);
  ck_assert_uint_eq(A->qp.base.cnt.early_probes, 1);
  ck_assert_uint_eq(A->qp.base.cnt.late_probes, 1);
  /* una moves: the next probe may wait once more */
  inject_ack(A, P, again + 6000000, 0x1f, PSN0 + 1, 2);
  d = A->qp.base.timer[RCT_TIMER_PROBE];
  rct_handle_timeout(&A->qp, d + 2000000);
  expect_nothing(A, d + 2000000);
  ck_assert_uint_eq(A->qp.base.cnt.late_probes, 2);
  d = A->qp.base.timer[RCT_TIMER_PROBE];
  rct_handle_timeout(&A->qp, d + 1000000);                /* its second expiry probes */
  ck_assert(expect_frame(A, d + 1000000, &p, fb));
  ck_assert_uint_eq(p.h.bth.psn, PSN0 + 2);
}
END_TEST

/* A READ of n responses in pieces of 8 (READ window 32), go-back-N or SR,
 * its first k responses in, SRTT known. */
static uint64_t read_started(bool sr, uint32_t n, uint32_t k)
{
  struct conn_opts o;
  uint64_t t = 5000000;
  conn_defaults(&o);
  o.sr = sr;
  o.max_inflight = 32;
  srtt_4ms(&o);
  expect_wc(&A->scq, 1, RCT_WC_SUCCESS);
  post_send(A, 2, RCT_WR_RDMA_READ, M, 0, n * 1024, 0x9000, 0x55, 0);   /* PSN0 + 1 .. PSN0 + n */
  ck_assert_int_eq(drain(t, NULL), (int)((n + 7) / 8));
  for (uint32_t i = 1; i <= k; i++)
    inject_req(A, P, ++t, i == 1 ? OP_READ_RESP_FIRST : OP_READ_RESP_MIDDLE, PSN0 + i, false, 1024, 0x11, NULL, 0);
  return t;
}

/* The early probe fires, before the RTO: its frame in *p. */
static uint64_t early_probe(struct rct_pkt *p)
{
  uint64_t t = A->qp.base.timer[RCT_TIMER_PROBE];
  ck_assert(t < A->qp.base.timer[RCT_TIMER_RETRANS]);
  rct_handle_timeout(&A->qp, t);
  ck_assert_uint_eq(A->qp.base.cnt.early_probes, 1);
  ck_assert(expect_frame(A, t, p, fb));
  expect_nothing(A, t);
  return t;
}

/* read_started, then the early probe: a READ request with AckReq for
 * len bytes from response PSN0 + psn. */
static uint64_t started_then_probe(bool sr, uint32_t n, uint32_t k, uint32_t psn, uint32_t len)
{
  struct rct_pkt p;
  uint64_t t;
  read_started(sr, n, k);
  t = early_probe(&p);
  ck_assert_uint_eq(p.h.bth.opcode, sr ? OP_SR_BASE | OP_READ_REQ : OP_READ_REQ);
  ck_assert_uint_eq(p.h.bth.ackreq, 1);
  ck_assert_uint_eq(p.h.bth.psn, PSN0 + psn);
  ck_assert_uint_eq(p.h.reth.va, 0x9000 + (psn - 1) * 1024);
  ck_assert_uint_eq(p.h.reth.dmalen, len);
  return t;
}

/* Responses from .. to of read_started's READ (pieces of 8), in order. */
static uint64_t responses(uint64_t t, uint32_t from, uint32_t to)
{
  for (uint32_t i = from; i <= to; i++) {
    uint8_t op = i % 8 == 1 ? OP_READ_RESP_FIRST : i % 8 == 0 ? OP_READ_RESP_LAST : OP_READ_RESP_MIDDLE;
    inject_req(A, P, ++t, op, PSN0 + i, false, 1024, 0x11, NULL, 0);
  }
  return t;
}

/* Responses 3 and 4 lost, 5 in: the gap re-requests from 3 (len bytes);
 * then the early probe asks for the same again, AckReq set. */
static uint64_t gap_then_early_probe(uint64_t t, uint32_t len)
{
  struct rct_pkt p;
  inject_req(A, P, ++t, OP_READ_RESP_MIDDLE, PSN0 + 5, false, 1024, 0x11, NULL, 0);
  ck_assert(expect_frame(A, t, &p, fb));
  ck_assert_uint_eq(p.h.bth.psn, PSN0 + 3);
  ck_assert_uint_eq(p.h.reth.dmalen, len);
  t = early_probe(&p);
  ck_assert_uint_eq(p.h.bth.ackreq, 1);
  ck_assert_uint_eq(p.h.bth.psn, PSN0 + 3);            /* the run again, whole */
  ck_assert_uint_eq(p.h.reth.va, 0x9000 + 2 * 1024);
  ck_assert_uint_eq(p.h.reth.dmalen, len);
  return t;
}

/* [REQ-TMO-8] [REQ-READ-1] go-back-N: the early probe of a READ asks for
 * the rest of the piece from the first missing response (a go-back-N peer
 * may be an IBTA responder, which restarts the READ's responses at a
 * duplicate's PSN); when the responses were only late, the READ completes
 * with them and the replay's late copies count as duplicates, not drops. */
START_TEST(test_comp_gbn_read_early_probe_asks_from_first_missing)
{
  uint64_t t = started_then_probe(false, 16, 2, 3, 6 * 1024);   /* 3 .. 8, the piece's end */
  t = responses(t, 3, 16);                             /* the originals, late */
  expect_wc(&A->scq, 2, RCT_WC_SUCCESS);
  expect_nothing(A, t);                                /* nothing re-requested */
  ck_assert_uint_eq(A->qp.base.cnt.rx_dup, 0);
  inject_req(A, P, ++t, OP_READ_RESP_FIRST, PSN0 + 3, false, 1024, 0x11, NULL, 0);   /* the replay */
  ck_assert_uint_eq(A->qp.base.cnt.rx_dup, 1);
  ck_assert_uint_eq(A->qp.base.cnt.rx_unexpected, 0);
  ck_assert_uint_eq(A->qp.base.cnt.rx_out_of_seq, 0);
  expect_nothing(A, t);
}
END_TEST

/* [REQ-TMO-8] [SR-REQ-16] SR: with no loss seen the early probe of a READ
 * asks for the last response of the missing run at una alone; the late
 * originals complete the READ and the probe's answer is a duplicate. */
START_TEST(test_comp_sr_read_early_probe_asks_last_response)
{
  uint64_t t = started_then_probe(true, 16, 2, 8, 1024);    /* the run 3 .. 8 ends with its piece */
  t = responses(t, 3, 16);
  expect_wc(&A->scq, 2, RCT_WC_SUCCESS);
  expect_nothing(A, t);
  inject_req(A, P, ++t, OP_READ_RESP_ONLY, PSN0 + 8, false, 1024, 0x11, NULL, 0);
  ck_assert_uint_eq(A->qp.base.cnt.rx_dup, 1);
  ck_assert_uint_eq(A->qp.base.cnt.rx_unexpected, 0);
}
END_TEST

/* [REQ-TMO-8] [SR-REQ-13] [SR-REQ-16] SR: a run re-requested this round
 * (a gap showed it lost) is asked for whole by the early probe; with none
 * seen, the probe's answer beyond a lost tail re-requests the missing run. */
START_TEST(test_comp_sr_read_early_probe_after_gap_or_tail_loss)
{
  struct rct_pkt p;
  uint64_t t = gap_then_early_probe(read_started(true, 16, 2), 2 * 1024);   /* the run 3 .. 4 */
  inject_req(A, P, ++t, OP_READ_RESP_FIRST, PSN0 + 3, false, 1024, 0x11, NULL, 0);
  inject_req(A, P, ++t, OP_READ_RESP_LAST, PSN0 + 4, false, 1024, 0x11, NULL, 0);
  t = responses(t, 6, 13);                             /* 14 .. 16 lost */
  expect_nothing(A, t);
  t = A->qp.base.timer[RCT_TIMER_PROBE];
  ck_assert(t < A->qp.base.timer[RCT_TIMER_RETRANS]);
  rct_handle_timeout(&A->qp, t);
  ck_assert(expect_frame(A, t, &p, fb));
  ck_assert_uint_eq(p.h.bth.psn, PSN0 + 16);           /* no loss seen at 14: the run's last */
  ck_assert_uint_eq(p.h.reth.dmalen, 1024);
  inject_req(A, P, ++t, OP_READ_RESP_ONLY, PSN0 + 16, false, 1024, 0x11, NULL, 0);
  ck_assert(expect_frame(A, t, &p, fb));
  ck_assert_uint_eq(p.h.bth.psn, PSN0 + 14);           /* the gap it shows [SR-REQ-13] */
  ck_assert_uint_eq(p.h.reth.dmalen, 2 * 1024);
  expect_nothing(A, t);
  ck_assert_uint_eq(A->qp.base.cnt.timeouts, 0);
}
END_TEST

/* [REQ-TMO-10] [REQ-TMO-8] with the adaptive RTO a probe slack replaces
 * the 1 ms: the early probe comes at 2 SRTT + the slack, also in go-back-N */
START_TEST(test_comp_early_probe_slack)
{
  struct conn_opts o;
  conn_defaults(&o);
  o.probe_slack_ns = 50000;
  srtt_4ms(&o);
  post_send(A, 2, RCT_WR_SEND, M, 0, 10, 0, 0, 0);
  ck_assert_int_eq(drain(5000000, NULL), 1);
  ck_assert_uint_eq(A->qp.base.timer[RCT_TIMER_PROBE], 5000000 + 8000000 + 50000);
  rct_handle_timeout(&A->qp, 13050000);
  ck_assert_uint_eq(A->qp.base.cnt.early_probes, 1);
  ck_assert_int_eq(drain(13050000, NULL), 1);          /* the packet at una again */
  ck_assert_uint_eq(A->qp.base.cnt.timeouts, 0);
}
END_TEST

/* [REQ-RETRY-5] [REQ-RETRY-2] an RNR NAK resets retry_left: timeouts spread
 * over many RNR rounds do not add up to RETRY_EXC_ERR */
START_TEST(test_comp_rnr_nak_resets_retry)
{
  struct conn_opts o;
  uint64_t t = 0;
  conn_defaults(&o);
  o.retry_cnt = 1;
  setup_with(&o);
  post_send(A, 1, RCT_WR_SEND, M, 0, 10, 0, 0, 0);
  drain(0, NULL);
  for (int i = 0; i < 5; i++) {
    t = rct_next_timeout(&A->qp);                /* the request or its NAK was lost */
    rct_handle_timeout(&A->qp, t);
    ck_assert_int_eq(drain(t, NULL), 2);         /* resend + tail probe [REQ-TMO-6] */
    ck_assert_uint_eq(A->qp.comp.retry_left, 0);
    inject_ack(A, P, t + 10, AETH_RNR_NAK | 1, PSN0, 0);
    ck_assert_uint_eq(A->qp.comp.retry_left, 1);
    t = rct_next_timeout(&A->qp);                /* the RNR wait */
    rct_handle_timeout(&A->qp, t);
    ck_assert_int_eq(drain(t, NULL), 1);
  }
  ck_assert_int_eq(A->qp.base.attr.qp_state, RCT_QPS_RTS);
  expect_no_wc(&A->scq);
  inject_ack(A, P, t + 1, 0x1f, PSN0, 1);
  expect_wc(&A->scq, 1, RCT_WC_SUCCESS);
}
END_TEST

/* CQ overflow is counted, never overwrites */
START_TEST(test_comp_cq_overflow_counted)
{
  struct rct_cq small;
  struct rct_wc ring[2];
  rct_cq_init(&small, ring, 2);
  A->qp.base.init.send_cq = &small;
  for (int i = 0; i < 3; i++)
    post_send(A, (uint64_t)i, RCT_WR_SEND, M, 0, 10, 0, 0, 0);
  drain(0, NULL);
  inject_ack(A, P, 1, 0x1f, PSN0 + 2, 3);
  ck_assert_uint_eq(small.overflow, 1);
  expect_wc(&small, 0, RCT_WC_SUCCESS);
  expect_wc(&small, 1, RCT_WC_SUCCESS);
  A->qp.base.cnt.cq_overflow = 0;                            /* expected here */
  A->qp.base.init.send_cq = &A->scq;
}
END_TEST

/* The free-running counters wrap at 2^32, which a CQ size of 3 does not
 * divide: completions still come out in order, none overwritten. */
START_TEST(test_comp_cq_counter_wrap)
{
  struct rct_cq cq;
  struct rct_wc ring[3], wc;
  rct_cq_init(&cq, ring, 3);
  cq.head = cq.tail = 0xfffffffeu;
  for (uint64_t round = 0; round < 3; round++) {
    for (uint64_t i = 0; i < 3; i++) {
      struct rct_wc w = { .wr_id = round * 3 + i, .status = RCT_WC_SUCCESS };
      rct_cq_push(&A->qp.base, &cq, &w);
    }
    ck_assert_uint_eq(cq.overflow, 0);
    for (uint64_t i = 0; i < 3; i++) {
      ck_assert_int_eq(rct_poll_cq(&cq, &wc, 1), 1);
      ck_assert_uint_eq(wc.wr_id, round * 3 + i);
    }
  }
}
END_TEST

Suite *suite_comp(void)
{
  Suite *s = suite_create("comp");
  TCase *t = tcase_create("completer");
  tcase_add_checked_fixture(t, setup, fx_teardown);
  tcase_add_test(t, test_comp_coalesced_ack);
  tcase_add_test(t, test_comp_rnr_wait_is_the_pause);
  tcase_add_test(t, test_comp_stale_and_future_ack);
  tcase_add_test(t, test_comp_timeout_go_back_n);
  tcase_add_test(t, test_comp_retry_exhausted);
  tcase_add_test(t, test_comp_retry_reset_on_progress);
  tcase_add_test(t, test_comp_timeout_zero_is_infinite);
  tcase_add_test(t, test_comp_seq_nak_go_back);
  tcase_add_test(t, test_comp_gbn_loss_window_halves_once_per_window);
  tcase_add_test(t, test_comp_gbn_loss_window_grows_per_window_acked);
  tcase_add_test(t, test_comp_gbn_loss_window_timeout_and_floor);
  tcase_add_test(t, test_comp_rnr_wait_and_retry);
  tcase_add_test(t, test_comp_rnr_retry_exhausted);
  tcase_add_test(t, test_comp_rnr_retry_infinite);
  tcase_add_test(t, test_comp_fatal_nak_status);
  tcase_add_test(t, test_comp_bad_aeth);
  tcase_add_test(t, test_comp_read_response_placed);
  tcase_add_test(t, test_comp_read_implied_ack);
  tcase_add_test(t, test_comp_read_response_unexpected);
  tcase_add_test(t, test_comp_read_response_without_read);
  tcase_add_test(t, test_comp_read_response_dup_and_early);
  tcase_add_test(t, test_comp_read_rerequest_after_ack);
  tcase_add_test(t, test_comp_adaptive_rto);
  tcase_add_test(t, test_comp_initial_rto_before_first_sample);
  tcase_add_test(t, test_comp_backoff_from_clamped_rto);
  tcase_add_test(t, test_comp_backoff_ends_with_progress);
  tcase_add_test(t, test_comp_early_probe);
  tcase_add_test(t, test_comp_late_probe_waits_once);
  tcase_add_test(t, test_comp_gbn_read_early_probe_asks_from_first_missing);
  tcase_add_test(t, test_comp_sr_read_early_probe_asks_last_response);
  tcase_add_test(t, test_comp_sr_read_early_probe_after_gap_or_tail_loss);
  tcase_add_test(t, test_comp_early_probe_slack);
  tcase_add_test(t, test_comp_rnr_nak_resets_retry);
  tcase_add_test(t, test_comp_nak_before_una_ignored);
  tcase_add_test(t, test_comp_read_old_middle_after_rerequest);
  tcase_add_test(t, test_comp_read_split_into_pieces);
  tcase_add_test(t, test_comp_read_pieces_use_credit);
  tcase_add_test(t, test_comp_read_response_position_per_piece);
  tcase_add_test(t, test_comp_read_out_of_order_response_gbn);
  tcase_add_test(t, test_comp_sr_read_rerequests_missing_runs);
  tcase_add_test(t, test_comp_sr_read_window_counts_unreceived);
  tcase_add_test(t, test_comp_sr_read_window_keeps_credit);
  tcase_add_test(t, test_comp_sr_read_window_room_past_hole);
  tcase_add_test(t, test_comp_cq_overflow_counted);
  tcase_add_test(t, test_comp_cq_counter_wrap);
  suite_add_tcase(s, t);
  return s;
}
