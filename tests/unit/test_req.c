/*
 * test_req.c: the requester, against a scripted peer: PSN assignment,
 * fragmentation, opcodes and headers, AckReq policy, window and READ
 * credit, local checks, completions.
 */
#include "harness.h"

#define A (fx_a())
#define P (fx_peer())
static uint8_t fb[8192];

/* [REQ-FRAG-1] [OPC-SEQ-1] [OPC-SEQ-2] [REQ-PSN-1] [REQ-ACKREQ-1] [HDR-RETH-1] [HDR-BTH-2] [ENC-ETH-1] */
START_TEST(test_req_write_fragments_at_mtu)
{
  struct host_mr *m = ep_reg_mr(A, 0x10000, 8192, RCT_ACCESS_LOCAL_WRITE);
  struct rct_pkt p;
  static const uint8_t ops[3] = { OP_WRITE_FIRST, OP_WRITE_MIDDLE, OP_WRITE_LAST };
  static const uint32_t lens[3] = { 1024, 1024, 452 };
  ck_assert_int_eq(post_send(A, 1, RCT_WR_RDMA_WRITE, m, 0, 2500, 0x5000, 0x77, 0), RCT_OK);
  for (int i = 0; i < 3; i++) {
    ck_assert(expect_frame(A, 0, &p, fb));
    ck_assert_uint_eq(p.h.bth.opcode, ops[i]);
    ck_assert_uint_eq(p.h.bth.psn, psn_add(0x123456, (uint32_t)i));
    ck_assert_uint_eq(p.paylen, lens[i]);
    ck_assert_int_eq(memcmp(p.payload, m->buf + i * 1024, lens[i]), 0);
    ck_assert_uint_eq(p.h.bth.ackreq, i == 2);
    ck_assert_uint_eq(p.h.bth.pkey, 0xffff);
    ck_assert_uint_eq(p.h.bth.dqpn, QPN_B);
    ck_assert_int_eq(memcmp(p.h.dmac, MAC_B, 6), 0);
    ck_assert_uint_eq(p.h.bth.padcnt, (4 - lens[i] % 4) % 4);
    if (i == 0) {
      ck_assert_uint_eq(p.h.reth.va, 0x5000);
      ck_assert_uint_eq(p.h.reth.rkey, 0x77);
      ck_assert_uint_eq(p.h.reth.dmalen, 2500);
    }
  }
  expect_nothing(A, 0);
  inject_ack(A, P, 10, 0x1f, psn_add(0x123456, 2), 1);
  expect_wc(&A->scq, 1, RCT_WC_SUCCESS);
}
END_TEST

/* [REQ-FRAG-1] a zero-length message is one ONLY packet */
START_TEST(test_req_zero_length_send)
{
  struct rct_pkt p;
  ck_assert_int_eq(post_send(A, 2, RCT_WR_SEND, NULL, 0, 0, 0, 0, 0), RCT_OK);
  ck_assert(expect_frame(A, 0, &p, fb));
  ck_assert_uint_eq(p.h.bth.opcode, OP_SEND_ONLY);
  ck_assert_uint_eq(p.paylen, 0);
  ck_assert(p.h.bth.ackreq);
}
END_TEST

/* [REQ-FRAG-2] an SGE reaching beyond its MR fails before anything is sent */
START_TEST(test_req_sge_beyond_mr)
{
  struct host_mr *m = ep_reg_mr(A, 0x10000, 40 * 256, RCT_ACCESS_LOCAL_WRITE);
  ck_assert_int_eq(post_send(A, 3, RCT_WR_SEND, m, 0, 20 * 1024, 0, 0, 0), RCT_OK);
  expect_nothing(A, 0);
  expect_wc(&A->scq, 3, RCT_WC_LOC_PROT_ERR);
  ck_assert_int_eq(A->qp.base.attr.qp_state, RCT_QPS_ERR);
}
END_TEST

START_TEST(test_req_ackreq_every_16th)
{
  struct host_mr *m = ep_reg_mr(A, 0x10000, 20 * 1024, RCT_ACCESS_LOCAL_WRITE);
  struct rct_pkt p;
  ck_assert_int_eq(post_send(A, 3, RCT_WR_SEND, m, 0, 20 * 1024, 0, 0, 0), RCT_OK);
  for (int i = 0; i < 20; i++) {
    ck_assert(expect_frame(A, 0, &p, fb));
    ck_assert_uint_eq(p.h.bth.ackreq, i == 15 || i == 19);   /* [REQ-ACKREQ-2] */
  }
}
END_TEST

/* [REQ-PSN-2] [PSN-WIN-2] a READ takes one PSN per response packet */
START_TEST(test_req_read_consumes_response_psns)
{
  struct host_mr *m = ep_reg_mr(A, 0x10000, 8192, RCT_ACCESS_LOCAL_WRITE);
  struct rct_pkt p;
  post_send(A, 1, RCT_WR_RDMA_READ, m, 0, 3000, 0x9000, 0x55, 0);
  post_send(A, 2, RCT_WR_SEND, m, 0, 10, 0, 0, 0);
  ck_assert(expect_frame(A, 0, &p, fb));
  ck_assert_uint_eq(p.h.bth.opcode, OP_READ_REQ);
  ck_assert_uint_eq(p.h.bth.psn, 0x123456);
  ck_assert_uint_eq(p.h.reth.dmalen, 3000);
  ck_assert(p.h.bth.ackreq);
  ck_assert(expect_frame(A, 0, &p, fb));
  ck_assert_uint_eq(p.h.bth.opcode, OP_SEND_ONLY);
  ck_assert_uint_eq(p.h.bth.psn, 0x123459);
}
END_TEST

/* [REQ-WIN-1] [PSN-WIN-1] no more than the window outstanding */
START_TEST(test_req_window_limits_outstanding)
{
  struct conn_opts o;
  struct host_mr *m;
  struct rct_pkt p;
  int n = 0;
  fx_teardown();
  conn_defaults(&o);
  o.max_inflight = 4;
  fx_setup_opts(&o);
  m = ep_reg_mr(A, 0x10000, 8192, RCT_ACCESS_LOCAL_WRITE);
  for (int i = 0; i < 10; i++)
    post_send(A, (uint64_t)i, RCT_WR_SEND, m, 0, 100, 0, 0, 0);
  while (expect_frame(A, 0, &p, fb))
    n++;
  ck_assert_int_eq(n, 4);
  inject_ack(A, P, 5, 0x1f, psn_add(0x123456, 1), 2);   /* two acked: two more may go */
  n = 0;
  while (expect_frame(A, 5, &p, fb))
    n++;
  ck_assert_int_eq(n, 2);
}
END_TEST

/* [REQ-WIN-2] READ credit: a later WR waits behind a READ */
START_TEST(test_req_read_credit)
{
  struct conn_opts o;
  struct host_mr *m;
  struct rct_pkt p;
  fx_teardown();
  conn_defaults(&o);
  o.rd_atomic = 1;
  fx_setup_opts(&o);
  m = ep_reg_mr(A, 0x10000, 8192, RCT_ACCESS_LOCAL_WRITE);
  post_send(A, 1, RCT_WR_RDMA_READ, m, 0, 100, 0x9000, 0x55, 0);
  post_send(A, 2, RCT_WR_RDMA_READ, m, 100, 100, 0x9000, 0x55, 0);
  post_send(A, 3, RCT_WR_SEND, m, 0, 10, 0, 0, 0);
  ck_assert(expect_frame(A, 0, &p, fb));
  ck_assert_uint_eq(p.h.bth.opcode, OP_READ_REQ);
  expect_nothing(A, 0);                              /* second READ and the SEND wait */
  inject_req(A, P, 1, OP_READ_RESP_ONLY, 0x123456, false, 100, 0xab, NULL, 0);
  /* the responder's AETH */
  expect_wc(&A->scq, 1, RCT_WC_SUCCESS);
  ck_assert(expect_frame(A, 1, &p, fb));
  ck_assert_uint_eq(p.h.bth.opcode, OP_READ_REQ);
  ck_assert_uint_eq(p.h.bth.psn, 0x123457);
}
END_TEST

/* [SEC-RAND-3] [PSN-ARITH-1] starting just below the wrap */
START_TEST(test_req_psn_wrap)
{
  struct conn_opts o;
  struct host_mr *m;
  struct rct_pkt p;
  fx_teardown();
  conn_defaults(&o);
  o.a_psn = 0xfffffe;
  fx_setup_opts(&o);
  m = ep_reg_mr(A, 0x10000, 8192, RCT_ACCESS_LOCAL_WRITE);
  post_send(A, 9, RCT_WR_RDMA_WRITE, m, 0, 4096, 0x5000, 0x77, 0);
  for (uint32_t i = 0; i < 4; i++) {
    ck_assert(expect_frame(A, 0, &p, fb));
    ck_assert_uint_eq(p.h.bth.psn, psn_add(0xfffffe, i));
  }
  inject_ack(A, P, 1, 0x1f, 0x000000, 0);   /* partial */
  expect_no_wc(&A->scq);
  inject_ack(A, P, 2, 0x1f, 0x000001, 1);
  expect_wc(&A->scq, 9, RCT_WC_SUCCESS);
  ck_assert_uint_eq(A->qp.comp.una, 2);
}
END_TEST

/* [REQ-FRAG-2] [WC-STATUS-1] [WC-STATUS-3] a bad lkey fails before anything is sent */
START_TEST(test_req_bad_lkey_loc_prot_err)
{
  struct rct_sge sge = { 0x10000, 100, 0xdead };
  struct rct_send_wr wr = { .wr_id = 5, .opcode = RCT_WR_SEND, .sg_list = &sge, .num_sge = 1 };
  ck_assert_int_eq(rct_post_send(&A->qp, &wr), RCT_OK);
  expect_nothing(A, 0);
  expect_wc(&A->scq, 5, RCT_WC_LOC_PROT_ERR);
  ck_assert_int_eq(A->qp.base.attr.qp_state, RCT_QPS_ERR);
}
END_TEST

/* [REQ-FRAG-2] a WR longer than 2^31 completes with LOC_LEN_ERR */
START_TEST(test_req_too_long_loc_len_err)
{
  struct rct_sge sge[2] = { { 0x10000, 0x80000000u, 1 }, { 0x10000, 1, 1 } };
  struct rct_send_wr wr = { .wr_id = 6, .opcode = RCT_WR_SEND, .sg_list = sge, .num_sge = 2 };
  ck_assert_int_eq(rct_post_send(&A->qp, &wr), RCT_OK);
  expect_nothing(A, 0);
  expect_wc(&A->scq, 6, RCT_WC_LOC_LEN_ERR);
}
END_TEST

/* [REQ-FRAG-2] a READ into memory without local write access */
START_TEST(test_req_read_needs_local_write)
{
  struct host_mr *m = ep_reg_mr(A, 0x10000, 8192, 0);
  post_send(A, 7, RCT_WR_RDMA_READ, m, 0, 100, 0x9000, 0x55, 0);
  expect_nothing(A, 0);
  expect_wc(&A->scq, 7, RCT_WC_LOC_PROT_ERR);
}
END_TEST

/* [REQ-CMPL-3] [REQ-CMPL-2] unsignaled WRs complete silently, in order */
START_TEST(test_req_unsignaled)
{
  struct host_mr *m = ep_reg_mr(A, 0x10000, 8192, RCT_ACCESS_LOCAL_WRITE);
  struct rct_sge sge = { m->va, 10, m->lkey };
  struct rct_send_wr wr = { .wr_id = 1, .opcode = RCT_WR_SEND, .sg_list = &sge, .num_sge = 1 };
  struct rct_pkt p;
  rct_post_send(&A->qp, &wr);
  post_send(A, 2, RCT_WR_SEND, m, 0, 10, 0, 0, 0);
  ck_assert(expect_frame(A, 0, &p, fb));
  ck_assert(expect_frame(A, 0, &p, fb));
  inject_ack(A, P, 1, 0x1f, 0x123457, 2);
  expect_wc(&A->scq, 2, RCT_WC_SUCCESS);
  expect_no_wc(&A->scq);
  ck_assert_uint_eq(A->qp.base.sq_head, A->qp.base.sq_tail);   /* both slots free */
}
END_TEST

/* [HDR-BTH-3] [HDR-IMM-1] solicited event and immediate on the last packet only */
START_TEST(test_req_solicited_and_immediate)
{
  struct host_mr *m = ep_reg_mr(A, 0x10000, 8192, RCT_ACCESS_LOCAL_WRITE);
  struct rct_sge sge = { m->va, 1500, m->lkey };
  struct rct_send_wr wr = { .wr_id = 1, .opcode = RCT_WR_SEND_WITH_IMM, .send_flags = RCT_SEND_SOLICITED,
                            .sg_list = &sge, .num_sge = 1, .imm_data = 0xabcdef01 };
  struct rct_pkt p;
  rct_post_send(&A->qp, &wr);
  ck_assert(expect_frame(A, 0, &p, fb));
  ck_assert_uint_eq(p.h.bth.se, 0);
  ck_assert(expect_frame(A, 0, &p, fb));
  ck_assert_uint_eq(p.h.bth.opcode, OP_SEND_LAST_IMM);
  ck_assert_uint_eq(p.h.bth.se, 1);
  ck_assert_uint_eq(p.h.imm, 0xabcdef01);
  ck_assert_uint_eq(fb[p.hdr_len - 4], 0xab);    /* big-endian on the wire */
}
END_TEST

/* [REQ-WIN-2] [REQ-CMPL-6] WRs leave in posting order, each completes once */
START_TEST(test_req_posting_order)
{
  struct host_mr *m = ep_reg_mr(A, 0x10000, 8192, RCT_ACCESS_LOCAL_WRITE);
  struct rct_pkt p;
  for (int i = 0; i < 5; i++)
    post_send(A, (uint64_t)i, i % 2 ? RCT_WR_RDMA_WRITE : RCT_WR_SEND, m, 0, 1500, 0x5000, 0x77, 0);
  for (uint32_t i = 0; i < 10; i++) {
    ck_assert(expect_frame(A, 0, &p, fb));
    ck_assert_uint_eq(p.h.bth.psn, psn_add(0x123456, i));
    ck_assert_uint_eq(!!(p.opflags & OPF_WRITE), (i / 2) % 2);
  }
  inject_ack(A, P, 1, 0x1f, psn_add(0x123456, 9), 5);
  for (int i = 0; i < 5; i++)
    expect_wc(&A->scq, (uint64_t)i, RCT_WC_SUCCESS);
  expect_no_wc(&A->scq);
}
END_TEST

Suite *suite_req(void)
{
  Suite *s = suite_create("req");
  TCase *t = tcase_create("requester");
  tcase_add_checked_fixture(t, fx_setup, fx_teardown);
  tcase_add_test(t, test_req_write_fragments_at_mtu);
  tcase_add_test(t, test_req_zero_length_send);
  tcase_add_test(t, test_req_sge_beyond_mr);
  tcase_add_test(t, test_req_ackreq_every_16th);
  tcase_add_test(t, test_req_read_consumes_response_psns);
  tcase_add_test(t, test_req_window_limits_outstanding);
  tcase_add_test(t, test_req_read_credit);
  tcase_add_test(t, test_req_psn_wrap);
  tcase_add_test(t, test_req_bad_lkey_loc_prot_err);
  tcase_add_test(t, test_req_too_long_loc_len_err);
  tcase_add_test(t, test_req_read_needs_local_write);
  tcase_add_test(t, test_req_unsignaled);
  tcase_add_test(t, test_req_solicited_and_immediate);
  tcase_add_test(t, test_req_posting_order);
  suite_add_tcase(s, t);
  return s;
}
