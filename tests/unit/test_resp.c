/*
 * test_resp.c: the responder, driven by a scripted requester: in-order
 * execution, ACKs and coalescing, MSN, duplicates, out-of-sequence NAKs,
 * RNR, receives, access checks, READ resources and replay, errors.
 */
#include "harness.h"

#define A (fx_a())
#define P (fx_peer())
#define E0 0x654321u                   /* A's rq_psn */
static uint8_t fb[8192];
static struct host_mr *W;              /* remote-writable/readable MR at 0x40000 */
static struct host_mr *R;              /* receive buffers at 0x80000 */

static void setup(void)
{
  fx_setup();
  W = ep_reg_mr(A, 0x40000, 16384, RCT_ACCESS_REMOTE_WRITE | RCT_ACCESS_REMOTE_READ | RCT_ACCESS_LOCAL_WRITE);
  R = ep_reg_mr(A, 0x80000, 16384, RCT_ACCESS_LOCAL_WRITE);
}

static struct rct_reth reth(uint64_t va, uint32_t rkey, uint32_t len)
{
  struct rct_reth r = { va, rkey, len };
  return r;
}

/* Expect one ACK-opcode frame with this syndrome, PSN and MSN. */
static void expect_ack_(uint64_t now, uint8_t syn, uint32_t psn, uint32_t msn, int line)
{
  struct rct_pkt p;
  ck_assert_msg(expect_frame(A, now, &p, fb), "line %d: no frame", line);
  ck_assert_msg(p.h.bth.opcode == OP_ACK && p.h.aeth.syndrome == syn && p.h.bth.psn == psn &&
                p.h.aeth.msn == msn, "line %d: got opcode %x syn %x psn %x msn %u, want syn %x psn %x msn %u",
                line, p.h.bth.opcode, p.h.aeth.syndrome, p.h.bth.psn, p.h.aeth.msn, syn, psn, msn);
  ck_assert_uint_eq(p.paylen, 0);
  ck_assert_uint_eq(p.udp_len, 28);                    /* [RESP-ACK-1] */
  ck_assert_uint_eq(p.h.bth.ackreq, 0);
}
#define expect_ack(now, syn, psn, msn) expect_ack_((now), (syn), (psn), (msn), __LINE__)

/* [RESP-PSN-1] [RESP-PSN-2] [RESP-RECV-1] [RESP-RECV-4] [RESP-ACK-1] [RESP-MSN-1] [OPC-TAB-2] */
START_TEST(test_resp_send_in_order)
{
  struct rct_wc wc;
  post_recv(A, 77, R, 0, 4096);
  inject_req(A, P, 0, OP_SEND_FIRST, E0, false, 1024, 0x11, NULL, 0);
  inject_req(A, P, 0, OP_SEND_MIDDLE, E0 + 1, false, 1024, 0x22, NULL, 0);
  expect_nothing(A, 0);                               /* no AckReq yet: coalescing */
  inject_req(A, P, 0, OP_SEND_LAST_IMM, E0 + 2, true, 100, 0x33, NULL, 0xabcdef01);
  expect_ack(0, 0x1f, E0 + 2, 1);
  ck_assert(cq_pop(&A->rcq, &wc));
  ck_assert_uint_eq(wc.wr_id, 77);
  ck_assert_int_eq(wc.status, RCT_WC_SUCCESS);
  ck_assert_int_eq(wc.opcode, RCT_WC_RECV);
  ck_assert_uint_eq(wc.byte_len, 2148);
  ck_assert_uint_eq(wc.wc_flags & RCT_WC_WITH_IMM, RCT_WC_WITH_IMM);
  ck_assert_uint_eq(wc.imm_data, 0xabcdef01);
  ck_assert_uint_eq(R->buf[0], 0x11);
  ck_assert_uint_eq(R->buf[1024], 0x22);
  ck_assert_uint_eq(R->buf[2147], 0x33);
  ck_assert_uint_eq(A->qp.resp.epsn, E0 + 3);
}
END_TEST

/* [RESP-ACK-2] at most ACK_COALESCE_MAX executed packets go unacknowledged */
START_TEST(test_resp_ack_coalescing)
{
  struct rct_reth r = reth(0x40000, W->rkey, 20 * 256);
  struct conn_opts o;
  conn_defaults(&o);
  o.mtu = RCT_MTU_256;
  fx_teardown();
  fx_setup_opts(&o);
  W = ep_reg_mr(A, 0x40000, 16384, RCT_ACCESS_REMOTE_WRITE);
  r.rkey = W->rkey;
  inject_req(A, P, 0, OP_WRITE_FIRST, E0, false, 256, 1, &r, 0);
  for (uint32_t i = 1; i < 15; i++)
    inject_req(A, P, 0, OP_WRITE_MIDDLE, E0 + i, false, 256, 1, NULL, 0);
  expect_nothing(A, 0);
  inject_req(A, P, 0, OP_WRITE_MIDDLE, E0 + 15, false, 256, 1, NULL, 0);
  expect_ack(0, 0x1f, E0 + 15, 0);                    /* one ACK covers all 16 */
  expect_nothing(A, 0);
}
END_TEST

/* [RESP-ACK-5] with ack_delay_ns set, an ACK waits for the QP's next request
 * and follows it (a ping-pong's answer overtakes the ACK), or goes out
 * alone once the delay has passed; a later ACK replaces the held one. */
START_TEST(test_resp_ack_delay_follows_request)
{
  struct rct_reth r = reth(0x40000, W->rkey, 100);
  struct rct_pkt p;
  uint64_t d = 200000;
  A->dev.attr.ack_delay_ns = d;
  inject_req(A, P, 10, OP_WRITE_ONLY, E0, true, 100, 1, &r, 0);
  expect_nothing(A, 10);                              /* held */
  ck_assert_uint_eq(rct_next_timeout(&A->qp), 10 + d);
  post_send(A, 5, RCT_WR_RDMA_WRITE, W, 0, 100, 0x1000, 0x77, 0);
  ck_assert(expect_frame(A, 20, &p, fb));             /* the answer first ... */
  ck_assert_uint_eq(p.h.bth.opcode, OP_WRITE_ONLY);
  expect_ack(20, 0x1f, E0, 1);                        /* ... then the ACK */
  expect_nothing(A, 20);
  ck_assert_uint_eq(A->qp.base.timer[RCT_TIMER_ACK], RCT_NEVER);
  inject_req(A, P, 30, OP_WRITE_ONLY, E0 + 1, true, 100, 1, &r, 0);
  inject_req(A, P, 40, OP_WRITE_ONLY, E0 + 2, true, 100, 1, &r, 0);
  expect_nothing(A, 40);                              /* first chance to go: held from here */
  expect_nothing(A, 40 + d - 1);
  rct_handle_timeout(&A->qp, 40 + d);
  expect_ack(40 + d, 0x1f, E0 + 2, 3);                /* one ACK for both, on time */
  expect_nothing(A, 40 + d);
  inject_req(A, P, 50 + d, OP_WRITE_ONLY, E0 + 3, true, 100, 1, &r, 0);
  expect_nothing(A, 50 + d);
  rct_qp_release_ack(&A->qp);                         /* the QP is about to go */
  expect_ack(51 + d, 0x1f, E0 + 3, 4);
}
END_TEST

/* [RESP-ACK-5] the ACK hold is one state of the responder: idle, owed,
 * held until a time (a later ACK joins it without moving the time), send
 * now (the time passed, or a release); sending it makes it idle */
START_TEST(test_resp_ack_hold_states)
{
  struct rct_reth r = reth(0x40000, W->rkey, 100);
  uint64_t d = 200000;
  A->dev.attr.ack_delay_ns = d;
  ck_assert_uint_eq(A->qp.resp.ack.state, RCT_ACK_IDLE);
  ck_assert(!rct_qp_release_ack(&A->qp));            /* nothing owed */
  inject_req(A, P, 10, OP_WRITE_ONLY, E0, true, 100, 1, &r, 0);
  ck_assert_uint_eq(A->qp.resp.ack.state, RCT_ACK_OWED);
  expect_nothing(A, 10);
  ck_assert_uint_eq(A->qp.resp.ack.state, RCT_ACK_HELD);
  ck_assert_uint_eq(A->qp.resp.ack.until, 10 + d);
  ck_assert_uint_eq(rct_next_timeout(&A->qp), 10 + d);
  inject_req(A, P, 20, OP_WRITE_ONLY, E0 + 1, true, 100, 1, &r, 0);
  expect_nothing(A, 20);
  ck_assert_uint_eq(A->qp.resp.ack.state, RCT_ACK_HELD);
  ck_assert_uint_eq(A->qp.resp.ack.until, 10 + d);   /* the first chance counts */
  ck_assert_uint_eq(A->qp.resp.ack.psn, E0 + 1);
  rct_handle_timeout(&A->qp, 10 + d);
  ck_assert_uint_eq(A->qp.resp.ack.state, RCT_ACK_SEND_NOW);
  expect_ack(10 + d, 0x1f, E0 + 1, 2);
  ck_assert_uint_eq(A->qp.resp.ack.state, RCT_ACK_IDLE);
  ck_assert_uint_eq(rct_next_timeout(&A->qp), RCT_NEVER);
  inject_req(A, P, 30 + d, OP_WRITE_ONLY, E0 + 2, true, 100, 1, &r, 0);
  ck_assert(rct_qp_release_ack(&A->qp));             /* owed: goes at once */
  ck_assert_uint_eq(A->qp.resp.ack.state, RCT_ACK_SEND_NOW);
  expect_ack(30 + d, 0x1f, E0 + 2, 3);
  ck_assert_uint_eq(A->qp.resp.ack.state, RCT_ACK_IDLE);
  A->dev.attr.ack_delay_ns = 0;                      /* no delay: owed goes at the next poll */
  inject_req(A, P, 40 + d, OP_WRITE_ONLY, E0 + 3, true, 100, 1, &r, 0);
  expect_ack(40 + d, 0x1f, E0 + 3, 4);
  ck_assert_uint_eq(A->qp.resp.ack.state, RCT_ACK_IDLE);
}
END_TEST

static void modify_state(enum rct_qp_state to)
{
  ck_assert_int_eq(rct_qp_modify(&A->qp, &(struct rct_qp_attr){ .qp_state = to }, RCT_QP_STATE), RCT_OK);
}

/* [RESP-ACK-6] [RESP-ACK-5] [QP-ERR-3] an ACK held when the QP is moved to
 * ERR (the application disconnects right after its receive completed) is
 * not dropped: it is the QP's parting frame, then nothing else goes */
START_TEST(test_resp_held_ack_sent_on_modify_to_err)
{
  struct rct_reth r = reth(0x40000, W->rkey, 100);
  A->dev.attr.ack_delay_ns = 200000;
  inject_req(A, P, 10, OP_WRITE_ONLY, E0, true, 100, 1, &r, 0);
  expect_nothing(A, 10);                              /* held */
  ck_assert_uint_eq(A->qp.resp.ack.state, RCT_ACK_HELD);
  modify_state(RCT_QPS_ERR);
  ck_assert_uint_eq(A->qp.base.timer[RCT_TIMER_ACK], RCT_NEVER);
  ck_assert(A->qp.base.on_ready);                          /* the device polls it */
  expect_ack(11, 0x1f, E0, 1);
  expect_nothing(A, 11);
  ck_assert_uint_eq(rct_next_timeout(&A->qp), RCT_NEVER);
  ck_assert_uint_eq(A->qp.base.cnt.tx_ack, 1);
}
END_TEST

/* [RESP-ACK-6] [QP-ERR-3] in ERR a duplicate SEND/WRITE has the parting ACK
 * sent again (a lost parting ACK costs a retransmission, not the WR); a
 * request it never executed and a duplicate READ are dropped silently */
START_TEST(test_resp_err_answers_duplicate_with_parting_ack)
{
  struct rct_reth r = reth(0x40000, W->rkey, 100);
  A->dev.attr.ack_delay_ns = 200000;
  inject_req(A, P, 10, OP_WRITE_ONLY, E0, true, 100, 1, &r, 0);
  expect_nothing(A, 10);
  modify_state(RCT_QPS_ERR);
  expect_ack(11, 0x1f, E0, 1);                        /* lost on the way, say */
  inject_req(A, P, 20, OP_WRITE_ONLY, E0, true, 100, 1, &r, 0);   /* the requester resends */
  expect_ack(20, 0x1f, E0, 1);
  expect_nothing(A, 20);
  inject_req(A, P, 30, OP_WRITE_ONLY, E0 + 1, true, 100, 1, &r, 0);   /* never executed */
  expect_nothing(A, 30);
  inject_req(A, P, 40, OP_READ_REQ, E0 - 1, true, 0, 1, &r, 0);
  expect_nothing(A, 40);
  ck_assert_uint_eq(A->qp.base.cnt.rx_bad_state, 3);
  ck_assert_uint_eq(A->qp.base.cnt.tx_ack, 2);
}
END_TEST

/* [RESP-ACK-6] with no ACK owed at the transition, ERR sends nothing, yet
 * a duplicate is answered with an ACK for epsn - 1 (the last ACK may have
 * been lost) */
START_TEST(test_resp_err_without_owed_ack_answers_duplicates)
{
  struct rct_reth r = reth(0x40000, W->rkey, 100);
  inject_req(A, P, 10, OP_WRITE_ONLY, E0, true, 100, 1, &r, 0);
  expect_ack(10, 0x1f, E0, 1);                        /* no hold: sent at once */
  modify_state(RCT_QPS_ERR);
  expect_nothing(A, 11);
  inject_req(A, P, 20, OP_WRITE_ONLY, E0, true, 100, 1, &r, 0);
  expect_ack(20, 0x1f, E0, 1);
  expect_nothing(A, 20);
}
END_TEST

/* [RESP-ACK-6] [QP-STATE-3] RTS -> RESET sends the held ACK too; RESET ->
 * INIT -> RTR discards a parting ACK nobody polled */
START_TEST(test_resp_held_ack_sent_on_reset)
{
  struct rct_reth r = reth(0x40000, W->rkey, 100);
  struct conn_opts o;
  A->dev.attr.ack_delay_ns = 200000;
  inject_req(A, P, 10, OP_WRITE_ONLY, E0, true, 100, 1, &r, 0);
  expect_nothing(A, 10);
  modify_state(RCT_QPS_RESET);
  expect_ack(11, 0x1f, E0, 1);
  expect_nothing(A, 11);
  conn_defaults(&o);
  ep_connect(A, MAC_B, IP_B, QPN_B, o.b_psn, o.a_psn, &o);
  inject_req(A, P, 20, OP_WRITE_ONLY, E0, true, 100, 1, &r, 0);
  expect_nothing(A, 20);                              /* held again */
  modify_state(RCT_QPS_RESET);                        /* parting, not polled */
  ep_connect(A, MAC_B, IP_B, QPN_B, o.b_psn, o.a_psn, &o);
  expect_nothing(A, 30);
}
END_TEST

/* [RESP-OOS-1] [RESP-OOS-3] [SEC-FORGE-5] one NAK per gap */
START_TEST(test_resp_out_of_sequence_nak_once)
{
  struct rct_reth r = reth(0x40000, W->rkey, 4096);
  inject_req(A, P, 0, OP_WRITE_FIRST, E0 + 1, false, 1024, 1, &r, 0);   /* E0 lost */
  expect_ack(0, AETH_NAK_PSN_SEQ, E0, 0);
  for (int i = 2; i < 10; i++)
    inject_req(A, P, 0, OP_WRITE_MIDDLE, E0 + (uint32_t)i, false, 1024, 1, NULL, 0);
  expect_nothing(A, 0);
  ck_assert_uint_eq(A->qp.base.cnt.rx_out_of_seq, 9);
  ck_assert_uint_eq(A->qp.base.cnt.tx_nak_seq, 1);
  r.dmalen = 8;
  inject_req(A, P, 1, OP_WRITE_ONLY, E0, true, 8, 1, &r, 0);             /* the resend */
  expect_ack(1, 0x1f, E0, 1);
  inject_req(A, P, 1, OP_WRITE_ONLY, E0 + 2, true, 8, 1, &r, 0);         /* new gap, new NAK */
  expect_ack(1, AETH_NAK_PSN_SEQ, E0 + 1, 1);
}
END_TEST

/* [RESP-DUP-1] a duplicate SEND/WRITE is acknowledged, not executed again */
START_TEST(test_resp_duplicate_acked)
{
  struct rct_reth r = reth(0x40000, W->rkey, 8);
  post_recv(A, 1, R, 0, 4096);
  inject_req(A, P, 0, OP_SEND_ONLY, E0, true, 10, 0x55, NULL, 0);
  expect_ack(0, 0x1f, E0, 1);
  inject_req(A, P, 0, OP_WRITE_ONLY, E0 + 1, true, 8, 0x66, &r, 0);
  expect_ack(0, 0x1f, E0 + 1, 2);
  expect_wc(&A->rcq, 1, RCT_WC_SUCCESS);
  inject_req(A, P, 1, OP_SEND_ONLY, E0, true, 10, 0x77, NULL, 0);
  expect_ack(1, 0x1f, E0 + 1, 2);                     /* epsn - 1 and the current MSN */
  expect_no_wc(&A->rcq);
  ck_assert_uint_eq(R->buf[0], 0x55);
  ck_assert_uint_eq(A->qp.base.cnt.rx_dup, 1);
}
END_TEST

/* [RESP-PSN-3] [PSN-WIN-3] far outside the window: silent drop */
START_TEST(test_resp_outside_window_silent)
{
  post_recv(A, 1, R, 0, 4096);
  inject_req(A, P, 0, OP_SEND_ONLY, E0 + 0x20000, true, 10, 0x55, NULL, 0);
  inject_req(A, P, 0, OP_SEND_ONLY, E0 - 0x20000, true, 10, 0x55, NULL, 0);
  expect_nothing(A, 0);
  ck_assert_uint_eq(A->qp.base.cnt.rx_out_of_window, 2);
  ck_assert_uint_eq(A->qp.resp.epsn, E0);
}
END_TEST

/* [RESP-RECV-2] [RESP-OOS-3] [HDR-AETH-3] no receive posted: RNR NAK, nothing executed */
START_TEST(test_resp_rnr_nak)
{
  inject_req(A, P, 0, OP_SEND_FIRST, E0, false, 1024, 1, NULL, 0);
  expect_ack(0, AETH_RNR_NAK | 12, E0, 0);
  ck_assert_uint_eq(A->qp.resp.epsn, E0);
  ck_assert_uint_eq(A->qp.resp.nak_latch, 0);
  inject_req(A, P, 0, OP_SEND_MIDDLE, E0 + 1, false, 1024, 1, NULL, 0);
  expect_ack(0, AETH_NAK_PSN_SEQ, E0, 0);             /* what rxe does too */
  post_recv(A, 5, R, 0, 4096);
  inject_req(A, P, 1, OP_SEND_FIRST, E0, false, 1024, 1, NULL, 0);
  inject_req(A, P, 1, OP_SEND_LAST, E0 + 1, true, 10, 1, NULL, 0);
  expect_ack(1, 0x1f, E0 + 1, 1);
  expect_wc(&A->rcq, 5, RCT_WC_SUCCESS);
  ck_assert_uint_eq(A->qp.base.cnt.tx_rnr_nak, 1);
}
END_TEST

/* [RESP-OOS-5] [RESP-RECV-2] [RESP-OOS-3] packets behind an RNR-NAKed one,
 * taken in before the responder answers: the RNR NAK goes, not a sequence NAK */
START_TEST(test_resp_rnr_nak_kept_behind_oos)
{
  inject_req(A, P, 0, OP_SEND_FIRST, E0, false, 1024, 1, NULL, 0);
  for (uint32_t i = 1; i < 4; i++)
    inject_req(A, P, 0, OP_SEND_MIDDLE, E0 + i, false, 1024, 1, NULL, 0);
  expect_ack(0, AETH_RNR_NAK | 12, E0, 0);
  expect_nothing(A, 0);
  ck_assert_uint_eq(A->qp.base.cnt.rx_out_of_seq, 3);
  ck_assert_uint_eq(A->qp.base.cnt.tx_rnr_nak, 1);
  ck_assert_uint_eq(A->qp.base.cnt.tx_nak_seq, 0);
  ck_assert_uint_eq(A->qp.resp.nak_latch, 0);
  inject_req(A, P, 0, OP_SEND_MIDDLE, E0 + 4, false, 1024, 1, NULL, 0);
  expect_ack(0, AETH_NAK_PSN_SEQ, E0, 0);             /* the RNR NAK has gone: [RESP-OOS-1] */
  post_recv(A, 5, R, 0, 8192);
  inject_req(A, P, 1, OP_SEND_FIRST, E0, false, 1024, 1, NULL, 0);
  inject_req(A, P, 1, OP_SEND_LAST, E0 + 1, true, 10, 1, NULL, 0);
  expect_ack(1, 0x1f, E0 + 1, 1);
  expect_wc(&A->rcq, 5, RCT_WC_SUCCESS);
}
END_TEST

/* [RESP-RECV-3] a SEND longer than the receive: NAK invalid request, LOC_LEN_ERR, ERR */
START_TEST(test_resp_send_too_long)
{
  post_recv(A, 9, R, 0, 100);
  post_recv(A, 10, R, 0, 100);
  inject_req(A, P, 0, OP_SEND_ONLY, E0, true, 101, 1, NULL, 0);
  expect_ack(0, AETH_NAK_INV_REQ, E0, 0);
  expect_wc(&A->rcq, 9, RCT_WC_LOC_LEN_ERR);
  expect_wc(&A->rcq, 10, RCT_WC_WR_FLUSH_ERR);
  ck_assert_int_eq(A->qp.base.attr.qp_state, RCT_QPS_ERR);
  ck_assert_uint_eq(R->buf[0], (uint8_t)(0 * 7 + 1));     /* nothing written */
}
END_TEST

/* [RESP-ACC-4] a receive whose lkey is bad: NAK remote operational error */
START_TEST(test_resp_recv_bad_lkey)
{
  struct rct_sge sge = { 0x80000, 100, 0xbad };
  struct rct_recv_wr wr = { .wr_id = 3, .sg_list = &sge, .num_sge = 1 };
  rct_post_recv(&A->qp, &wr);
  inject_req(A, P, 0, OP_SEND_ONLY, E0, true, 10, 1, NULL, 0);
  expect_ack(0, AETH_NAK_REM_OP, E0, 0);
  expect_wc(&A->rcq, 3, RCT_WC_LOC_PROT_ERR);
  ck_assert_int_eq(A->qp.base.attr.qp_state, RCT_QPS_ERR);
}
END_TEST

/* [RESP-ACC-1] [SEC-FORGE-3] [RESP-ERR-2] wrong rkey, out of bounds, no access: NAK 0x62, memory untouched */
START_TEST(test_resp_write_access_errors)
{
  struct host_mr *ro;
  struct rct_reth bad[4];
  static uint8_t snap_w[16384], snap_r[4096];
  bad[0] = reth(0x40000, 0xdead, 8);                     /* wrong rkey */
  bad[1] = reth(0x40000 + 16380, W->rkey, 8);             /* beyond the MR */
  bad[2] = reth(0x3fff8, W->rkey, 16);                    /* before the MR */
  for (int i = 0; i < 4; i++) {
    if (i) {
      fx_teardown();
      setup();
    }
    ro = ep_reg_mr(A, 0x100000, 4096, RCT_ACCESS_REMOTE_READ);
    if (i == 3)
      bad[3] = reth(0x100000, ro->rkey, 8);           /* MR lacks remote write */
    else
      bad[i].rkey = i == 0 ? 0xdead : W->rkey;
    memcpy(snap_w, W->buf, W->len);
    memcpy(snap_r, ro->buf, ro->len);
    inject_req(A, P, 0, OP_WRITE_ONLY, E0, true, 8, 0xee, &bad[i], 0);
    expect_ack(0, AETH_NAK_REM_ACC, E0, 0);
    ck_assert_int_eq(A->qp.base.attr.qp_state, RCT_QPS_ERR);
    ck_assert_int_eq(memcmp(snap_w, W->buf, W->len), 0);
    ck_assert_int_eq(memcmp(snap_r, ro->buf, ro->len), 0);
  }
}
END_TEST

/* [RESP-ACC-1] the QP's access flags must allow the operation */
START_TEST(test_resp_qp_access_flags)
{
  struct conn_opts o;
  struct rct_reth r;
  conn_defaults(&o);
  o.access = RCT_ACCESS_REMOTE_READ;
  fx_teardown();
  fx_setup_opts(&o);
  W = ep_reg_mr(A, 0x40000, 16384, RCT_ACCESS_REMOTE_WRITE);
  r = reth(0x40000, W->rkey, 8);
  inject_req(A, P, 0, OP_WRITE_ONLY, E0, true, 8, 0xee, &r, 0);
  expect_ack(0, AETH_NAK_REM_ACC, E0, 0);
}
END_TEST

/* [RESP-ACC-2] a zero-length WRITE checks nothing and touches nothing */
START_TEST(test_resp_zero_length_write)
{
  struct rct_reth r = reth(0xdeadbeef, 0x999, 0);
  inject_req(A, P, 0, OP_WRITE_ONLY, E0, true, 0, 0, &r, 0);
  expect_ack(0, 0x1f, E0, 1);
}
END_TEST

/* [RESP-ACC-1] [OPC-LEN-6] payload beyond the DMA length, or short of it */
START_TEST(test_resp_write_length_mismatch)
{
  struct rct_reth r = reth(0x40000, W->rkey, 1500);
  inject_req(A, P, 0, OP_WRITE_FIRST, E0, false, 1024, 1, &r, 0);
  inject_req(A, P, 0, OP_WRITE_MIDDLE, E0 + 1, false, 1024, 0xee, NULL, 0);
  expect_ack(0, AETH_NAK_INV_REQ, E0 + 1, 0);
  ck_assert_uint_ne(W->buf[1024], 0xee);
  fx_teardown();
  setup();
  r.rkey = W->rkey;
  inject_req(A, P, 0, OP_WRITE_FIRST, E0, false, 1024, 1, &r, 0);
  inject_req(A, P, 0, OP_WRITE_LAST, E0 + 1, true, 100, 1, NULL, 0);
  expect_ack(0, AETH_NAK_INV_REQ, E0 + 1, 0);
}
END_TEST

/* [RESP-ACC-5] WRITE with immediate failing the R_Key check: the receive it took fails */
START_TEST(test_resp_write_imm_access_error_fails_receive)
{
  struct rct_reth r = reth(0x40000, 0xdead, 8);
  post_recv(A, 4, R, 0, 100);
  inject_req(A, P, 0, OP_WRITE_ONLY_IMM, E0, true, 8, 1, &r, 5);
  expect_ack(0, AETH_NAK_REM_ACC, E0, 0);
  expect_wc(&A->rcq, 4, RCT_WC_LOC_ACCESS_ERR);
}
END_TEST

/* [OPC-SEQ-3] [RESP-ERR-1] [QP-ERR-3] [QP-ERR-1] invalid opcode sequence */
START_TEST(test_resp_bad_opcode_sequence)
{
  struct rct_reth r = reth(0x40000, W->rkey, 4096);
  post_recv(A, 1, R, 0, 4096);
  inject_req(A, P, 0, OP_SEND_FIRST, E0, false, 1024, 1, NULL, 0);
  inject_req(A, P, 0, OP_WRITE_MIDDLE, E0 + 1, false, 1024, 1, &r, 0);
  expect_ack(0, AETH_NAK_INV_REQ, E0 + 1, 0);
  ck_assert_int_eq(A->qp.base.attr.qp_state, RCT_QPS_ERR);
  inject_req(A, P, 1, OP_SEND_ONLY, E0 + 1, true, 10, 1, NULL, 0);
  expect_nothing(A, 1);
  ck_assert_uint_eq(A->qp.base.cnt.rx_bad_state, 1);
}
END_TEST

/* [OPC-LEN-2] FIRST shorter than the MTU; LAST with no payload */
START_TEST(test_resp_bad_packet_lengths)
{
  post_recv(A, 1, R, 0, 4096);
  inject_req(A, P, 0, OP_SEND_FIRST, E0, false, 1000, 1, NULL, 0);
  expect_ack(0, AETH_NAK_INV_REQ, E0, 0);
  fx_teardown();
  setup();
  post_recv(A, 1, R, 0, 4096);
  inject_req(A, P, 0, OP_SEND_FIRST, E0, false, 1024, 1, NULL, 0);
  inject_req(A, P, 0, OP_SEND_LAST, E0 + 1, true, 0, 1, NULL, 0);
  expect_ack(0, AETH_NAK_INV_REQ, E0 + 1, 0);
  fx_teardown();
  setup();
  post_recv(A, 1, R, 0, 4096);
  inject_req(A, P, 0, OP_SEND_ONLY, E0, true, 1025, 1, NULL, 0);
  expect_ack(0, AETH_NAK_INV_REQ, E0, 0);
}
END_TEST

/* [RESP-READ-1] [RESP-READ-2] [RESP-ACK-1] [RESP-MSN-1] [OPC-SEQ-5] a READ answered in MTU pieces */
START_TEST(test_resp_read_responses)
{
  struct rct_reth r = reth(0x40000 + 10, W->rkey, 3000);
  struct rct_pkt p;
  static const uint8_t ops[3] = { OP_READ_RESP_FIRST, OP_READ_RESP_MIDDLE, OP_READ_RESP_LAST };
  inject_req(A, P, 0, OP_READ_REQ, E0, true, 0, 0, &r, 0);
  ck_assert_uint_eq(A->qp.resp.epsn, E0 + 3);
  for (uint32_t i = 0; i < 3; i++) {
    ck_assert(expect_frame(A, 0, &p, fb));
    ck_assert_uint_eq(p.h.bth.opcode, ops[i]);
    ck_assert_uint_eq(p.h.bth.psn, E0 + i);
    ck_assert_int_eq(memcmp(p.payload, W->buf + 10 + i * 1024, p.paylen), 0);
    ck_assert_uint_eq(p.paylen, i < 2 ? 1024 : 952);
    if (i != 1) {
      ck_assert_uint_eq(p.h.aeth.syndrome, 0x1f);
      ck_assert_uint_eq(p.h.aeth.msn, 1);
    }
  }
  expect_nothing(A, 0);                               /* no separate ACK */
}
END_TEST

/* [RESP-READ-2] a reply to a later request waits for the READ's responses */
START_TEST(test_resp_read_then_write_ordering)
{
  struct rct_reth r = reth(0x40000, W->rkey, 2048), w = reth(0x41000, W->rkey, 8);
  struct rct_pkt p;
  inject_req(A, P, 0, OP_READ_REQ, E0, true, 0, 0, &r, 0);
  inject_req(A, P, 0, OP_WRITE_ONLY, E0 + 2, true, 8, 1, &w, 0);
  ck_assert(expect_frame(A, 0, &p, fb));
  ck_assert_uint_eq(p.h.bth.opcode, OP_READ_RESP_FIRST);
  ck_assert(expect_frame(A, 0, &p, fb));
  ck_assert_uint_eq(p.h.bth.opcode, OP_READ_RESP_LAST);
  expect_ack(0, 0x1f, E0 + 2, 2);
}
END_TEST

/* [RESP-DUP-2] [RESP-DUP-3] duplicate READs are replayed from memory */
START_TEST(test_resp_duplicate_read_replay)
{
  struct rct_reth r = reth(0x40000, W->rkey, 3000);
  struct rct_reth resumed = reth(0x40000 + 1024, W->rkey, 3000 - 1024);
  struct rct_reth wrong = reth(0x40000 + 8, W->rkey, 3000 - 1024);
  struct rct_pkt p;
  inject_req(A, P, 0, OP_READ_REQ, E0, true, 0, 0, &r, 0);
  for (int i = 0; i < 3; i++)
    ck_assert(expect_frame(A, 0, &p, fb));
  W->buf[1024] = 0x5a;                                /* memory changed since */
  inject_req(A, P, 1, OP_READ_REQ, E0 + 1, true, 0, 0, &resumed, 0);
  ck_assert(expect_frame(A, 1, &p, fb));
  ck_assert_uint_eq(p.h.bth.psn, E0 + 1);
  ck_assert_uint_eq(p.h.bth.opcode, OP_READ_RESP_FIRST);   /* a new sequence from q [REQ-READ-3] */
  ck_assert_uint_eq(p.h.aeth.msn, 1);
  ck_assert_uint_eq(p.payload[0], 0x5a);              /* re-read */
  ck_assert(expect_frame(A, 1, &p, fb));
  ck_assert_uint_eq(p.h.bth.opcode, OP_READ_RESP_LAST);
  expect_nothing(A, 1);
  ck_assert_uint_eq(A->qp.resp.epsn, E0 + 3);
  ck_assert_uint_eq(A->qp.resp.msn, 1);
  inject_req(A, P, 2, OP_READ_REQ, E0 + 1, true, 0, 0, &wrong, 0);   /* VA does not match */
  expect_nothing(A, 2);
  ck_assert_uint_eq(A->qp.base.cnt.read_replays, 1);
  ck_assert_uint_eq(A->qp.base.cnt.rx_dup, 2);
}
END_TEST

/* [RESP-DUP-5] a duplicate READ asks for its DMA length only: the replay
 * sends that range (FIRST..LAST of its own) and stops */
START_TEST(test_resp_duplicate_read_replays_its_range)
{
  struct rct_reth r = reth(0x40000, W->rkey, 5 * 1024);
  struct rct_reth run = reth(0x40000 + 1024, W->rkey, 2 * 1024);
  struct rct_pkt p;
  inject_req(A, P, 0, OP_READ_REQ, E0, true, 0, 0, &r, 0);
  for (int i = 0; i < 5; i++)
    ck_assert(expect_frame(A, 0, &p, fb));
  inject_req(A, P, 1, OP_READ_REQ, E0 + 1, true, 0, 0, &run, 0);
  ck_assert(expect_frame(A, 1, &p, fb));
  ck_assert_uint_eq(p.h.bth.psn, E0 + 1);
  ck_assert_uint_eq(p.h.bth.opcode, OP_READ_RESP_FIRST);
  ck_assert(expect_frame(A, 1, &p, fb));
  ck_assert_uint_eq(p.h.bth.psn, E0 + 2);
  ck_assert_uint_eq(p.h.bth.opcode, OP_READ_RESP_LAST);
  ck_assert_uint_eq(p.paylen, 1024);
  expect_nothing(A, 1);                               /* not the rest of the READ */
  ck_assert_uint_eq(A->qp.base.cnt.read_replays, 1);
}
END_TEST

/* [RESP-DUP-5] a duplicate READ for responses before those the first
 * sequence is still sending: the range goes first, then the first sequence
 * resumes where it was (as MIDDLE/LAST of its own request); a duplicate for
 * responses it has still to send adds nothing */
START_TEST(test_resp_duplicate_read_interrupts_first_sequence)
{
  struct rct_reth r = reth(0x40000, W->rkey, 6 * 1024);
  struct rct_reth one = reth(0x40000 + 1024, W->rkey, 1024);
  struct rct_reth ahead = reth(0x40000 + 4 * 1024, W->rkey, 1024);
  struct rct_pkt p;
  static const uint32_t want_psn[] = { 1, 3, 4, 5 };
  static const uint8_t want_op[] = { OP_READ_RESP_ONLY, OP_READ_RESP_MIDDLE, OP_READ_RESP_MIDDLE,
                                     OP_READ_RESP_LAST };
  inject_req(A, P, 0, OP_READ_REQ, E0, true, 0, 0, &r, 0);
  ck_assert(expect_frame(A, 0, &p, fb));              /* E0 */
  inject_req(A, P, 0, OP_READ_REQ, E0, true, 0, 0, &r, 0);   /* an early duplicate of all of it... */
  ck_assert(expect_frame(A, 0, &p, fb));              /* ... replays from E0 (E0 only: E0+1 on is queued) */
  ck_assert_uint_eq(p.h.bth.psn, E0);
  ck_assert(expect_frame(A, 0, &p, fb));              /* E0+1 of the first sequence */
  ck_assert(expect_frame(A, 0, &p, fb));              /* E0+2 */
  ck_assert_uint_eq(p.h.bth.psn, E0 + 2);
  inject_req(A, P, 1, OP_READ_REQ, E0 + 4, true, 0, 0, &ahead, 0);   /* still to come */
  inject_req(A, P, 1, OP_READ_REQ, E0 + 1, true, 0, 0, &one, 0);     /* E0+1 lost */
  for (int i = 0; i < 4; i++) {
    ck_assert(expect_frame(A, 1, &p, fb));
    ck_assert_uint_eq(p.h.bth.psn, E0 + want_psn[i]);
    ck_assert_uint_eq(p.h.bth.opcode, want_op[i]);
  }
  expect_nothing(A, 1);
  ck_assert_int_eq(A->qp.base.attr.qp_state, RCT_QPS_RTS);
}
END_TEST

/* [RESP-DUP-5] duplicates for two runs of one READ, the second while the
 * first is being replayed: each run is sent as its own sequence, not the
 * responses between them */
START_TEST(test_resp_duplicate_read_runs_queue)
{
  struct rct_reth r = reth(0x40000, W->rkey, 6 * 1024);
  struct rct_reth run1 = reth(0x40000 + 1024, W->rkey, 2 * 1024);
  struct rct_reth run2 = reth(0x40000 + 4 * 1024, W->rkey, 1024);
  struct rct_pkt p;
  static const uint32_t want_psn[] = { 1, 2, 4 };
  static const uint8_t want_op[] = { OP_READ_RESP_FIRST, OP_READ_RESP_LAST, OP_READ_RESP_ONLY };
  inject_req(A, P, 0, OP_READ_REQ, E0, true, 0, 0, &r, 0);
  for (int i = 0; i < 6; i++)
    ck_assert(expect_frame(A, 0, &p, fb));
  inject_req(A, P, 1, OP_READ_REQ, E0 + 1, true, 0, 0, &run1, 0);
  inject_req(A, P, 1, OP_READ_REQ, E0 + 4, true, 0, 0, &run2, 0);
  for (int i = 0; i < 3; i++) {
    ck_assert(expect_frame(A, 1, &p, fb));
    ck_assert_uint_eq(p.h.bth.psn, E0 + want_psn[i]);
    ck_assert_uint_eq(p.h.bth.opcode, want_op[i]);
  }
  expect_nothing(A, 1);
  ck_assert_uint_eq(A->qp.base.cnt.read_replays, 2);
}
END_TEST

static void setup_rd(uint8_t rd_atomic)
{
  struct conn_opts o;
  conn_defaults(&o);
  o.rd_atomic = rd_atomic;
  fx_teardown();
  fx_setup_opts(&o);
  W = ep_reg_mr(A, 0x40000, 16384, RCT_ACCESS_REMOTE_READ);
}

/* [RESP-READ-4] [RESP-DUP-2] [RESP-DUP-3] all READ resources in use and the
 * oldest replaying for a late duplicate: a new READ retires it, the replay
 * stops, and the new READ is answered (no NAK, no ERR). */
START_TEST(test_resp_new_read_retires_replaying_oldest)
{
  struct rct_reth r1, r2, r3;
  struct rct_pkt p;
  setup_rd(2);
  r1 = reth(0x40000, W->rkey, 3000);
  r2 = reth(0x41000, W->rkey, 1000);
  r3 = reth(0x42000, W->rkey, 8);
  /* t=0: READ 1, E0..E0+2 */
  inject_req(A, P, 0, OP_READ_REQ, E0, true, 0, 0, &r1, 0);
  for (int i = 0; i < 3; i++)
    ck_assert(expect_frame(A, 0, &p, fb));
  /* t=1: READ 2, E0+3: both resources held */
  inject_req(A, P, 1, OP_READ_REQ, E0 + 3, true, 0, 0, &r2, 0);
  ck_assert(expect_frame(A, 1, &p, fb));
  ck_assert_uint_eq(p.h.bth.opcode, OP_READ_RESP_ONLY);
  /* t=2: a late duplicate of READ 1: the replay starts, one response out */
  inject_req(A, P, 2, OP_READ_REQ, E0, true, 0, 0, &r1, 0);
  ck_assert(expect_frame(A, 2, &p, fb));
  ck_assert_uint_eq(p.h.bth.psn, E0);
  ck_assert_uint_eq(A->qp.base.cnt.read_replays, 1);
  /* t=3: READ 3 at E0+4, replay of READ 1 still pending: READ 1 retires */
  inject_req(A, P, 3, OP_READ_REQ, E0 + 4, true, 0, 0, &r3, 0);
  ck_assert(expect_frame(A, 3, &p, fb));
  ck_assert_uint_eq(p.h.bth.opcode, OP_READ_RESP_ONLY);
  ck_assert_uint_eq(p.h.bth.psn, E0 + 4);
  ck_assert_uint_eq(p.h.aeth.msn, 3);
  expect_nothing(A, 3);                                /* the replay stopped */
  ck_assert_int_eq(A->qp.base.attr.qp_state, RCT_QPS_RTS);
  ck_assert_uint_eq(A->qp.resp.epsn, E0 + 5);
  /* READ 1 is forgotten: a duplicate of it is dropped; READ 2 still replays */
  inject_req(A, P, 4, OP_READ_REQ, E0, true, 0, 0, &r1, 0);
  expect_nothing(A, 4);
  inject_req(A, P, 5, OP_READ_REQ, E0 + 3, true, 0, 0, &r2, 0);
  ck_assert(expect_frame(A, 5, &p, fb));
  ck_assert_uint_eq(p.h.bth.psn, E0 + 3);
  expect_nothing(A, 5);
}
END_TEST

/* [RESP-ERR-1] [RESP-READ-2] a READ beyond the credit while the oldest is
 * still sending its first responses: NAK invalid request after them, ERR */
START_TEST(test_resp_read_beyond_credit)
{
  struct rct_reth r1, r2;
  struct rct_pkt p;
  setup_rd(1);
  r1 = reth(0x40000, W->rkey, 3000);
  r2 = reth(0x41000, W->rkey, 8);
  inject_req(A, P, 0, OP_READ_REQ, E0, true, 0, 0, &r1, 0);
  inject_req(A, P, 0, OP_READ_REQ, E0 + 3, true, 0, 0, &r2, 0);
  for (int i = 0; i < 3; i++) {
    ck_assert(expect_frame(A, 0, &p, fb));
    ck_assert_uint_eq(p.h.bth.psn, E0 + (uint32_t)i);
  }
  expect_ack(0, AETH_NAK_INV_REQ, E0 + 3, 1);
  ck_assert_int_eq(A->qp.base.attr.qp_state, RCT_QPS_ERR);
}
END_TEST

/* [RESP-ERR-1] READ with no READ resources */
START_TEST(test_resp_read_without_resources)
{
  struct conn_opts o;
  struct rct_reth r;
  conn_defaults(&o);
  o.rd_atomic = 0;
  fx_teardown();
  fx_setup_opts(&o);
  W = ep_reg_mr(A, 0x40000, 16384, RCT_ACCESS_REMOTE_READ);
  r = reth(0x40000, W->rkey, 8);
  inject_req(A, P, 0, OP_READ_REQ, E0, true, 0, 0, &r, 0);
  expect_ack(0, AETH_NAK_INV_REQ, E0, 0);
}
END_TEST

/* [RESP-RECV-4] [OPC-TAB-2] WRITE with immediate: data at the VA, a receive with the immediate */
START_TEST(test_resp_write_with_immediate)
{
  struct rct_reth r = reth(0x40000, W->rkey, 2000);
  struct rct_wc wc;
  post_recv(A, 8, R, 0, 16);
  inject_req(A, P, 0, OP_WRITE_FIRST, E0, false, 1024, 0x21, &r, 0);
  inject_req(A, P, 0, OP_WRITE_LAST_IMM, E0 + 1, true, 976, 0x22, NULL, 0x0badcafe);
  expect_ack(0, 0x1f, E0 + 1, 1);
  ck_assert(cq_pop(&A->rcq, &wc));
  ck_assert_int_eq(wc.opcode, RCT_WC_RECV_RDMA_WITH_IMM);
  ck_assert_uint_eq(wc.imm_data, 0x0badcafe);
  ck_assert_uint_eq(wc.byte_len, 2000);               /* the WRITE's length, as rxe */
  ck_assert_uint_eq(W->buf[1999], 0x22);
  ck_assert_uint_eq(R->buf[0], 1);                     /* receive buffer untouched */
}
END_TEST

/* [RESP-RECV-4] a WRITE_ONLY with immediate: byte_len is its DMA length, 0 for an empty one */
START_TEST(test_resp_write_only_imm_byte_len)
{
  struct rct_reth r = reth(0x40000, W->rkey, 300), z = reth(0, 0, 0);
  struct rct_wc wc;
  post_recv(A, 8, R, 0, 16);
  post_recv(A, 9, R, 0, 16);
  inject_req(A, P, 0, OP_WRITE_ONLY_IMM, E0, true, 300, 0x31, &r, 7);
  inject_req(A, P, 0, OP_WRITE_ONLY_IMM, E0 + 1, true, 0, 0, &z, 8);
  ck_assert(cq_pop(&A->rcq, &wc));
  ck_assert_uint_eq(wc.byte_len, 300);
  ck_assert_uint_eq(wc.imm_data, 7);
  ck_assert(cq_pop(&A->rcq, &wc));
  ck_assert_uint_eq(wc.byte_len, 0);
  ck_assert_uint_eq(wc.imm_data, 8);
}
END_TEST

/* [RESP-RECV-4] receives are consumed and completed in order */
START_TEST(test_resp_receives_in_order)
{
  for (int i = 0; i < 4; i++)
    post_recv(A, (uint64_t)(100 + i), R, (uint32_t)i * 1024, 1024);
  for (uint32_t i = 0; i < 4; i++)
    inject_req(A, P, 0, OP_SEND_ONLY, E0 + i, i == 3, 10 + i, (uint8_t)i, NULL, 0);
  for (int i = 0; i < 4; i++)
    expect_wc(&A->rcq, (uint64_t)(100 + i), RCT_WC_SUCCESS);
  expect_ack(0, 0x1f, E0 + 3, 4);
}
END_TEST

/* [SEC-RAND-3] the responder across the wrap */
START_TEST(test_resp_psn_wrap)
{
  struct conn_opts o;
  struct rct_reth r;
  conn_defaults(&o);
  o.b_psn = 0xffffff;
  fx_teardown();
  fx_setup_opts(&o);
  W = ep_reg_mr(A, 0x40000, 16384, RCT_ACCESS_REMOTE_WRITE);
  r = reth(0x40000, W->rkey, 3072);
  inject_req(A, P, 0, OP_WRITE_FIRST, 0xffffff, false, 1024, 1, &r, 0);
  inject_req(A, P, 0, OP_WRITE_MIDDLE, 0x000000, false, 1024, 1, NULL, 0);
  inject_req(A, P, 0, OP_WRITE_LAST, 0x000001, true, 1024, 1, NULL, 0);
  expect_ack(0, 0x1f, 0x000001, 1);
  inject_req(A, P, 0, OP_WRITE_ONLY, 0xffffff, true, 8, 1, &r, 0);    /* duplicate across the wrap */
  expect_ack(0, 0x1f, 0x000001, 1);
}
END_TEST

Suite *suite_resp(void)
{
  Suite *s = suite_create("resp");
  TCase *t = tcase_create("responder");
  tcase_add_checked_fixture(t, setup, fx_teardown);
  tcase_add_test(t, test_resp_send_in_order);
  tcase_add_test(t, test_resp_ack_delay_follows_request);
  tcase_add_test(t, test_resp_ack_hold_states);
  tcase_add_test(t, test_resp_held_ack_sent_on_modify_to_err);
  tcase_add_test(t, test_resp_err_answers_duplicate_with_parting_ack);
  tcase_add_test(t, test_resp_err_without_owed_ack_answers_duplicates);
  tcase_add_test(t, test_resp_held_ack_sent_on_reset);
  tcase_add_test(t, test_resp_ack_coalescing);
  tcase_add_test(t, test_resp_out_of_sequence_nak_once);
  tcase_add_test(t, test_resp_duplicate_acked);
  tcase_add_test(t, test_resp_outside_window_silent);
  tcase_add_test(t, test_resp_rnr_nak);
  tcase_add_test(t, test_resp_rnr_nak_kept_behind_oos);
  tcase_add_test(t, test_resp_send_too_long);
  tcase_add_test(t, test_resp_recv_bad_lkey);
  tcase_add_test(t, test_resp_write_access_errors);
  tcase_add_test(t, test_resp_qp_access_flags);
  tcase_add_test(t, test_resp_zero_length_write);
  tcase_add_test(t, test_resp_write_length_mismatch);
  tcase_add_test(t, test_resp_write_imm_access_error_fails_receive);
  tcase_add_test(t, test_resp_bad_opcode_sequence);
  tcase_add_test(t, test_resp_bad_packet_lengths);
  tcase_add_test(t, test_resp_read_responses);
  tcase_add_test(t, test_resp_read_then_write_ordering);
  tcase_add_test(t, test_resp_duplicate_read_replay);
  tcase_add_test(t, test_resp_duplicate_read_replays_its_range);
  tcase_add_test(t, test_resp_duplicate_read_interrupts_first_sequence);
  tcase_add_test(t, test_resp_duplicate_read_runs_queue);
  tcase_add_test(t, test_resp_new_read_retires_replaying_oldest);
  tcase_add_test(t, test_resp_read_beyond_credit);
  tcase_add_test(t, test_resp_read_without_resources);
  tcase_add_test(t, test_resp_write_with_immediate);
  tcase_add_test(t, test_resp_write_only_imm_byte_len);
  tcase_add_test(t, test_resp_receives_in_order);
  tcase_add_test(t, test_resp_psn_wrap);
  suite_add_tcase(s, t);
  return s;
}
