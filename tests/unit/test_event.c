/*
 * test_event.c: the events the caller drains (event.c): each kind reported
 * once and in order, several kinds on one object, destroyed objects leaving
 * the pending list, the CQ queries and the key-in-use query and watches.
 */
#include "harness.h"

#define A (fx_a())
#define P (fx_peer())
#define A_PSN 0x123456u
#define B_PSN 0x654321u
static struct host_mr *M;

static void setup(void)
{
  fx_setup();
  M = ep_reg_mr(A, 0x10000, 65536, RCT_ACCESS_LOCAL_WRITE);
}

/* The next event is of type t on qp or cq; returns its info. */
static uint32_t expect_event_(enum rct_event_type t, const struct rct_qp *qp, const struct rct_cq *cq,
                              const char *file, int line)
{
  struct rct_event ev;
  ck_assert_msg(rct_dev_next_event(&A->dev, &ev), "%s:%d: expected event %d", file, line, (int)t);
  ck_assert_msg(ev.type == t && ev.qp == qp && ev.cq == cq, "%s:%d: event %d (qp %p cq %p), expected "
                "%d (qp %p cq %p)", file, line, (int)ev.type, (void *)ev.qp, (void *)ev.cq, (int)t,
                (const void *)qp, (const void *)cq);
  return ev.info;
}
#define expect_event(t, qp, cq) expect_event_((t), (qp), (cq), __FILE__, __LINE__)

static void expect_no_event(void)
{
  struct rct_event ev;
  ck_assert(!rct_dev_next_event(&A->dev, &ev));
}

static void modify_to(enum rct_qp_state s)
{
  struct rct_qp_attr a = { .qp_state = s };
  ck_assert_int_eq(rct_qp_modify(&A->qp, &a, RCT_QP_STATE), RCT_OK);
}

/* Connecting (RESET -> RTS) and posting with no completion report nothing. */
START_TEST(test_event_none_when_nothing_happened)
{
  expect_no_event();
  post_recv(A, 1, M, 0, 100);
  expect_no_event();
}
END_TEST

/* [QP-ERR-1] entering ERR is reported once, with its cause; a second move to
 * ERR (already there) reports nothing. */
START_TEST(test_event_qp_err_once_with_cause)
{
  modify_to(RCT_QPS_ERR);
  ck_assert_uint_eq(expect_event(RCT_EV_QP_ERR, &A->qp, NULL), RCT_QP_ERR_MODIFY);
  expect_no_event();
  modify_to(RCT_QPS_ERR);
  expect_no_event();
}
END_TEST

/* A NAK remote access error moves the QP to ERR: the failed send's
 * completion (an error, so "solicited"), the flush, then the QP. */
START_TEST(test_event_transport_error_after_completions)
{
  uint8_t buf[8192];
  struct rct_pkt p;
  post_send(A, 1, RCT_WR_SEND, M, 0, 100, 0, 0, 0);
  post_send(A, 2, RCT_WR_SEND, M, 0, 100, 0, 0, 0);
  while (expect_frame(A, 0, &p, buf))
    ;
  ck_assert_int_eq(inject_ack(A, P, 1, 0x62, A_PSN, 0), RCT_RX_OK);   /* NAK remote access */
  ck_assert_uint_eq(expect_event(RCT_EV_CQ_COMP, NULL, &A->scq), RCT_EV_SOLICITED);
  ck_assert_uint_eq(expect_event(RCT_EV_QP_ERR, &A->qp, NULL), RCT_QP_ERR_TRANSPORT);
  expect_no_event();
  ck_assert_uint_eq(rct_cq_count(&A->scq), 2);
  expect_wc(&A->scq, 1, RCT_WC_REM_ACCESS_ERR);
  expect_wc(&A->scq, 2, RCT_WC_WR_FLUSH_ERR);
}
END_TEST

/* [HDR-BTH-3] a receive completion: one event for several completions, the
 * solicited flag only if one of them had BTH.SE. */
START_TEST(test_event_cq_comp_solicited_flag)
{
  struct rct_hdr h;
  static uint8_t pay[64];
  for (int i = 0; i < 3; i++)
    post_recv(A, (uint64_t)i, M, 0, 100);
  ck_assert_int_eq(inject_req(A, P, 0, OP_SEND_ONLY, B_PSN, false, 10, 1, NULL, 0), RCT_RX_OK);
  ck_assert_int_eq(inject_req(A, P, 0, OP_SEND_ONLY, B_PSN + 1, false, 10, 1, NULL, 0), RCT_RX_OK);
  ck_assert_uint_eq(expect_event(RCT_EV_CQ_COMP, NULL, &A->rcq), 0);
  expect_no_event();
  memset(&h, 0, sizeof(h));
  h.bth.opcode = OP_SEND_ONLY;
  h.bth.psn = B_PSN + 2;
  h.bth.se = 1;
  ck_assert_int_eq(inject(A, P, 0, &h, pay, 10), RCT_RX_OK);
  ck_assert_uint_eq(expect_event(RCT_EV_CQ_COMP, NULL, &A->rcq), RCT_EV_SOLICITED);
  expect_no_event();
  ck_assert_uint_eq(rct_cq_count(&A->rcq), 3);
}
END_TEST

/* One object with two kinds pending (a CQ of one entry that overflows) and
 * a second object: each kind once, the CQ's in enum order, then the QP. */
START_TEST(test_event_several_kinds_on_one_object)
{
  static struct rct_wc ring[1];
  rct_cq_destroy(&A->rcq);
  rct_cq_init(&A->rcq, ring, 1);
  post_recv(A, 1, M, 0, 100);
  post_recv(A, 2, M, 0, 100);
  post_recv(A, 3, M, 0, 100);
  modify_to(RCT_QPS_ERR);                       /* three flushes, two do not fit */
  expect_event(RCT_EV_CQ_OVERFLOW, NULL, &A->rcq);
  ck_assert_uint_eq(expect_event(RCT_EV_CQ_COMP, NULL, &A->rcq), RCT_EV_SOLICITED);
  expect_event(RCT_EV_QP_ERR, &A->qp, NULL);
  expect_no_event();
  ck_assert_uint_eq(rct_cq_count(&A->rcq), 1);
  ck_assert_uint_eq(rct_cq_overflow(&A->rcq), 2);
  ck_assert_uint_eq(A->qp.base.cnt.cq_overflow, 2);
  A->qp.base.cnt.cq_overflow = 0;                    /* wanted here: the teardown checks it */
}
END_TEST

/* After its events are taken an object queues again for new ones. */
START_TEST(test_event_object_queues_again)
{
  struct rct_wc wc;
  modify_to(RCT_QPS_ERR);
  expect_event(RCT_EV_QP_ERR, &A->qp, NULL);
  post_recv(A, 1, M, 0, 100);                   /* flushed at once in ERR */
  expect_event(RCT_EV_CQ_COMP, NULL, &A->rcq);
  ck_assert_int_eq(rct_poll_cq(&A->rcq, &wc, 1), 1);
  ck_assert_uint_eq(rct_cq_count(&A->rcq), 0);
  post_recv(A, 2, M, 0, 100);
  expect_event(RCT_EV_CQ_COMP, NULL, &A->rcq);
  expect_no_event();
}
END_TEST

/* A destroyed QP or CQ leaves the pending list; the others stay in order. */
START_TEST(test_event_destroyed_objects_leave_the_list)
{
  post_send(A, 1, RCT_WR_SEND, M, 0, 100, 0, 0, 0);
  post_recv(A, 2, M, 0, 100);
  modify_to(RCT_QPS_ERR);                       /* scq, rcq, then the QP */
  rct_cq_destroy(&A->rcq);
  rct_cq_destroy(&A->rcq);                      /* harmless twice */
  rct_qp_destroy(&A->qp);
  expect_event(RCT_EV_CQ_COMP, NULL, &A->scq);
  expect_no_event();
  rct_cq_destroy(&A->scq);                      /* not queued: harmless */
  ck_assert_ptr_null(A->dev.ev_head);
  ck_assert_ptr_null(A->dev.ev_tail);
}
END_TEST

/* The head and the tail of the list can leave too. */
START_TEST(test_event_destroy_tail_then_head)
{
  post_send(A, 1, RCT_WR_SEND, M, 0, 100, 0, 0, 0);
  post_recv(A, 2, M, 0, 100);
  modify_to(RCT_QPS_ERR);                       /* scq, rcq, QP */
  rct_qp_destroy(&A->qp);
  rct_cq_destroy(&A->scq);
  expect_event(RCT_EV_CQ_COMP, NULL, &A->rcq);
  expect_no_event();
  modify_to(RCT_QPS_ERR);                       /* the QP is gone from the device: nothing */
  expect_no_event();
}
END_TEST

/* rct_key_in_use: a posted send's lkey until its ACK, a posted receive's
 * lkey until it is consumed, a responder WRITE's rkey while it is open. */
START_TEST(test_event_key_in_use_follows_the_rings)
{
  uint8_t buf[8192];
  struct rct_pkt p;
  struct host_mr *r = ep_reg_mr(A, 0x40000, 8192, RCT_ACCESS_LOCAL_WRITE | RCT_ACCESS_REMOTE_WRITE);
  struct rct_reth reth = { .va = 0x40000, .rkey = r->rkey, .dmalen = 2048 };
  ck_assert(!rct_key_in_use(&A->dev, M->lkey));
  post_send(A, 1, RCT_WR_SEND, M, 0, 100, 0, 0, 0);
  ck_assert(rct_key_in_use(&A->dev, M->lkey));
  ck_assert(rct_qp_key_in_use(&A->qp, M->lkey));
  ck_assert(!rct_key_in_use(&A->dev, r->lkey));
  while (expect_frame(A, 0, &p, buf))
    ;
  inject_ack(A, P, 1, 0x1f, A_PSN, 1);
  ck_assert(!rct_key_in_use(&A->dev, M->lkey));
  post_recv(A, 2, r, 0, 100);
  ck_assert(rct_key_in_use(&A->dev, r->lkey));
  ck_assert_int_eq(inject_req(A, P, 2, OP_SEND_ONLY, B_PSN, false, 10, 1, NULL, 0), RCT_RX_OK);
  ck_assert(!rct_key_in_use(&A->dev, r->lkey));
  ck_assert_int_eq(inject_req(A, P, 3, OP_WRITE_FIRST, B_PSN + 1, false, 1024, 2, &reth, 0), RCT_RX_OK);
  ck_assert(rct_key_in_use(&A->dev, r->rkey));
  ck_assert_int_eq(inject_req(A, P, 4, OP_WRITE_LAST, B_PSN + 2, false, 1024, 2, NULL, 0), RCT_RX_OK);
  ck_assert(!rct_key_in_use(&A->dev, r->rkey));
}
END_TEST

/* A watch on a busy key reports its last use once, after the events of the
 * objects; a watch on an idle key is refused; unwatch cancels. */
START_TEST(test_event_key_watch_reports_last_use)
{
  uint8_t buf[8192];
  struct rct_pkt p;
  struct rct_key_watch w, idle, cancelled;
  struct rct_event ev;
  memset(&w, 0, sizeof(w));
  memset(&idle, 0, sizeof(idle));
  memset(&cancelled, 0, sizeof(cancelled));
  ck_assert(!rct_key_watch(&A->dev, &idle, M->lkey));
  post_send(A, 1, RCT_WR_SEND, M, 0, 100, 0, 0, 0);
  post_send(A, 2, RCT_WR_SEND, M, 200, 100, 0, 0, 0);
  ck_assert(rct_key_watch(&A->dev, &w, M->lkey));
  ck_assert(rct_key_watch(&A->dev, &cancelled, M->lkey));
  rct_key_unwatch(&A->dev, &cancelled);
  while (expect_frame(A, 0, &p, buf))
    ;
  expect_no_event();
  inject_ack(A, P, 1, 0x1f, A_PSN, 1);          /* the first send only */
  expect_event(RCT_EV_CQ_COMP, NULL, &A->scq);
  expect_no_event();
  inject_ack(A, P, 2, 0x1f, A_PSN + 1, 2);
  expect_event(RCT_EV_CQ_COMP, NULL, &A->scq);
  ck_assert(rct_dev_next_event(&A->dev, &ev));
  ck_assert_int_eq(ev.type, RCT_EV_KEY_IDLE);
  ck_assert_uint_eq(ev.key, M->lkey);
  ck_assert(!w.linked);
  expect_no_event();
}
END_TEST

Suite *suite_event(void)
{
  Suite *s = suite_create("event");
  TCase *t = tcase_create("event");
  tcase_add_checked_fixture(t, setup, fx_teardown);
  tcase_add_test(t, test_event_none_when_nothing_happened);
  tcase_add_test(t, test_event_qp_err_once_with_cause);
  tcase_add_test(t, test_event_transport_error_after_completions);
  tcase_add_test(t, test_event_cq_comp_solicited_flag);
  tcase_add_test(t, test_event_several_kinds_on_one_object);
  tcase_add_test(t, test_event_object_queues_again);
  tcase_add_test(t, test_event_destroyed_objects_leave_the_list);
  tcase_add_test(t, test_event_destroy_tail_then_head);
  tcase_add_test(t, test_event_key_in_use_follows_the_rings);
  tcase_add_test(t, test_event_key_watch_reports_last_use);
  suite_add_tcase(s, t);
  return s;
}
