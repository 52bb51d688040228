/*
 * test_qp.c: the QP state machine: transitions and their attributes,
 * posting per state, RESET, ERR and flush, SQD drain, query, names.
 */
#include "harness.h"

static struct ep e;

static void setup(void) { ep_init(&e, MAC_A, IP_A, QPN_A, 0); }
static void teardown(void) { ep_free(&e); }

static uint32_t init_mask(void)
{
  return RCT_QP_STATE | RCT_QP_ACCESS_FLAGS | RCT_QP_PKEY_INDEX | RCT_QP_PORT;
}

static int to_init(void)
{
  struct rct_qp_attr a = { .qp_state = RCT_QPS_INIT, .qp_access_flags = RCT_ACCESS_REMOTE_WRITE,
                           .port_num = RCT_PORT_NUM };
  return rct_qp_modify(&e.qp, &a, init_mask());
}

static uint32_t rtr_mask(void)
{
  return RCT_QP_STATE | RCT_QP_AV | RCT_QP_PATH_MTU | RCT_QP_DEST_QPN | RCT_QP_RQ_PSN |
         RCT_QP_MAX_DEST_RD_ATOMIC | RCT_QP_MIN_RNR_TIMER;
}

static uint32_t rts_mask(void)
{
  return RCT_QP_STATE | RCT_QP_SQ_PSN | RCT_QP_TIMEOUT | RCT_QP_RETRY_CNT | RCT_QP_RNR_RETRY |
         RCT_QP_MAX_QP_RD_ATOMIC;
}

static struct rct_qp_attr good(enum rct_qp_state s)
{
  struct rct_qp_attr a;
  memset(&a, 0, sizeof(a));
  a.qp_state = s;
  memcpy(a.ah.dmac, MAC_B, 6);
  a.ah.dipv4 = IP_B;
  a.path_mtu = RCT_MTU_1024;
  a.dest_qp_num = QPN_B;
  a.rq_psn = 5;
  a.sq_psn = 7;
  a.max_dest_rd_atomic = 4;
  a.max_rd_atomic = 4;
  a.min_rnr_timer = 12;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  return a;
}

/* [QP-STATE-1] a new QP is in RESET */
START_TEST(test_qp_new_is_reset)
{
  struct rct_qp_attr a;
  rct_qp_query(&e.qp, &a);
  ck_assert_int_eq(a.qp_state, RCT_QPS_RESET);
  ck_assert_str_eq(rct_qp_state_name(a.qp_state), "RESET");
}
END_TEST

/* [QP-STATE-2] required attributes, listed transitions, value ranges; failures change nothing */
START_TEST(test_qp_modify_checks)
{
  struct rct_qp_attr a = good(RCT_QPS_RTS);
  ck_assert_int_eq(rct_qp_modify(&e.qp, &a, rts_mask()), RCT_EINVAL);     /* RESET -> RTS */
  ck_assert_int_eq(e.qp.base.attr.qp_state, RCT_QPS_RESET);
  a.qp_state = RCT_QPS_INIT;
  ck_assert_int_eq(rct_qp_modify(&e.qp, &a, RCT_QP_STATE), RCT_EINVAL);   /* missing access flags */
  a.qp_access_flags = RCT_ACCESS_REMOTE_WRITE;
  a.port_num = RCT_PORT_NUM;
  ck_assert_int_eq(rct_qp_modify(&e.qp, &a, RCT_QP_STATE | RCT_QP_ACCESS_FLAGS | RCT_QP_PORT),
                   RCT_EINVAL);                                            /* missing P_Key index */
  ck_assert_int_eq(rct_qp_modify(&e.qp, &a, RCT_QP_STATE | RCT_QP_ACCESS_FLAGS | RCT_QP_PKEY_INDEX),
                   RCT_EINVAL);                                            /* missing port */
  a.port_num = 2;
  ck_assert_int_eq(rct_qp_modify(&e.qp, &a, init_mask()), RCT_EINVAL);    /* no such port */
  a.port_num = RCT_PORT_NUM;
  a.pkey_index = 1;
  ck_assert_int_eq(rct_qp_modify(&e.qp, &a, init_mask()), RCT_EINVAL);    /* no such P_Key */
  a.pkey_index = RCT_PKEY_INDEX;
  a.qp_access_flags = 0xffff;
  ck_assert_int_eq(rct_qp_modify(&e.qp, &a, init_mask()), RCT_EINVAL);    /* unknown access bits */
  ck_assert_int_eq(e.qp.base.attr.qp_state, RCT_QPS_RESET);
  ck_assert_int_eq(to_init(), RCT_OK);
  a = good(RCT_QPS_RTR);
  ck_assert_int_eq(rct_qp_modify(&e.qp, &a, rtr_mask() & ~RCT_QP_RQ_PSN), RCT_EINVAL);
  ck_assert_int_eq(rct_qp_modify(&e.qp, &a, rtr_mask() | RCT_QP_TIMEOUT), RCT_EINVAL);  /* not listed */
  a.path_mtu = 6;
  ck_assert_int_eq(rct_qp_modify(&e.qp, &a, rtr_mask()), RCT_EINVAL);
  a = good(RCT_QPS_RTR);
  a.rq_psn = 1u << 24;
  ck_assert_int_eq(rct_qp_modify(&e.qp, &a, rtr_mask()), RCT_EINVAL);
  a = good(RCT_QPS_RTR);
  a.min_rnr_timer = 32;
  ck_assert_int_eq(rct_qp_modify(&e.qp, &a, rtr_mask()), RCT_EINVAL);
  ck_assert_int_eq(e.qp.base.attr.qp_state, RCT_QPS_INIT);
  a = good(RCT_QPS_RTR);
  ck_assert_int_eq(rct_qp_modify(&e.qp, &a, rtr_mask()), RCT_OK);
  a = good(RCT_QPS_RTS);
  a.retry_cnt = 8;
  ck_assert_int_eq(rct_qp_modify(&e.qp, &a, rts_mask()), RCT_EINVAL);
  a = good(RCT_QPS_RTS);
  a.timeout = 32;
  ck_assert_int_eq(rct_qp_modify(&e.qp, &a, rts_mask()), RCT_EINVAL);
  a = good(RCT_QPS_RTS);
  a.sq_psn = 0x1000000;
  ck_assert_int_eq(rct_qp_modify(&e.qp, &a, rts_mask()), RCT_EINVAL);
  a = good(RCT_QPS_RTS);
  ck_assert_int_eq(rct_qp_modify(&e.qp, &a, rts_mask()), RCT_OK);
  ck_assert_int_eq(e.qp.base.attr.qp_state, RCT_QPS_RTS);
  ck_assert_uint_eq(e.qp.base.mtu, 1024);
}
END_TEST

/* [QP-STATE-2] CUR_STATE only where the table lists it, naming the state
 * the QP is in; RESET and ERR take STATE alone. */
START_TEST(test_qp_modify_cur_state_and_state_alone)
{
  struct rct_qp_attr a = good(RCT_QPS_INIT);
  a.cur_qp_state = RCT_QPS_RESET;                        /* right, but not listed for RESET -> INIT */
  ck_assert_int_eq(rct_qp_modify(&e.qp, &a, init_mask() | RCT_QP_CUR_STATE), RCT_EINVAL);
  ck_assert_int_eq(e.qp.base.attr.qp_state, RCT_QPS_RESET);
  ck_assert_int_eq(to_init(), RCT_OK);
  a = good(RCT_QPS_RTR);
  ck_assert_int_eq(rct_qp_modify(&e.qp, &a, rtr_mask()), RCT_OK);
  a = good(RCT_QPS_RTS);
  a.cur_qp_state = RCT_QPS_INIT;                         /* listed for RTR -> RTS, wrong state */
  ck_assert_int_eq(rct_qp_modify(&e.qp, &a, rts_mask() | RCT_QP_CUR_STATE), RCT_EINVAL);
  ck_assert_int_eq(e.qp.base.attr.qp_state, RCT_QPS_RTR);
  a.cur_qp_state = RCT_QPS_RTR;
  ck_assert_int_eq(rct_qp_modify(&e.qp, &a, rts_mask() | RCT_QP_CUR_STATE), RCT_OK);
  a = good(RCT_QPS_ERR);
  ck_assert_int_eq(rct_qp_modify(&e.qp, &a, RCT_QP_STATE | RCT_QP_ACCESS_FLAGS), RCT_EINVAL);
  a.qp_state = RCT_QPS_RESET;
  ck_assert_int_eq(rct_qp_modify(&e.qp, &a, RCT_QP_STATE | RCT_QP_CUR_STATE), RCT_EINVAL);
  ck_assert_int_eq(e.qp.base.attr.qp_state, RCT_QPS_RTS);
  ck_assert_int_eq(rct_qp_modify(&e.qp, &a, RCT_QP_STATE), RCT_OK);
  ck_assert_int_eq(e.qp.base.attr.qp_state, RCT_QPS_RESET);
}
END_TEST

/* [ENC-IP-3] a path MTU whose frames exceed the interface MTU is refused */
START_TEST(test_qp_path_mtu_fits_interface)
{
  struct rct_qp_attr a = good(RCT_QPS_RTR);
  e.dev.attr.ip_mtu = 1500;
  ck_assert_int_eq(to_init(), RCT_OK);
  a.path_mtu = RCT_MTU_2048;
  ck_assert_int_eq(rct_qp_modify(&e.qp, &a, rtr_mask()), RCT_EINVAL);
  a.path_mtu = RCT_MTU_1024;
  a.sr_enable = true;
  ck_assert_int_eq(rct_qp_modify(&e.qp, &a, rtr_mask() | RCT_QP_SR), RCT_OK);   /* 1100 <= 1500 */
  ck_assert_uint_eq(e.qp.base.mtu, 1024);
}
END_TEST

/* [QP-STATE-8] SQE cannot be entered */
START_TEST(test_qp_no_sqe)
{
  struct rct_qp_attr a = good(RCT_QPS_SQE);
  ck_assert_int_eq(to_init(), RCT_OK);
  ck_assert_int_eq(rct_qp_modify(&e.qp, &a, RCT_QP_STATE), RCT_EINVAL);
}
END_TEST

/* [QP-STATE-4] [QP-STATE-5] what posting does in each state */
START_TEST(test_qp_post_per_state)
{
  struct host_mr *m = ep_reg_mr(&e, 0x10000, 4096, RCT_ACCESS_LOCAL_WRITE);
  struct rct_qp_attr a;
  ck_assert_int_eq(post_send(&e, 1, RCT_WR_SEND, m, 0, 10, 0, 0, 0), RCT_EINVAL);   /* RESET */
  ck_assert_int_eq(post_recv(&e, 1, m, 0, 10), RCT_EINVAL);
  ck_assert_int_eq(to_init(), RCT_OK);
  ck_assert_int_eq(post_send(&e, 1, RCT_WR_SEND, m, 0, 10, 0, 0, 0), RCT_EINVAL);   /* INIT */
  ck_assert_int_eq(post_recv(&e, 1, m, 0, 10), RCT_OK);
  a = good(RCT_QPS_RTR);
  rct_qp_modify(&e.qp, &a, rtr_mask());
  ck_assert_int_eq(post_send(&e, 1, RCT_WR_SEND, m, 0, 10, 0, 0, 0), RCT_EINVAL);   /* RTR */
  a = good(RCT_QPS_RTS);
  rct_qp_modify(&e.qp, &a, rts_mask());
  ck_assert_int_eq(post_send(&e, 2, RCT_WR_SEND, m, 0, 10, 0, 0, 0), RCT_OK);
  {
    struct rct_send_wr bad = { .wr_id = 3, .opcode = (enum rct_wr_opcode)9 };
    ck_assert_int_eq(rct_post_send(&e.qp, &bad), RCT_EINVAL);
    bad.opcode = RCT_WR_SEND;
    bad.num_sge = RCT_MAX_SGE + 1;
    ck_assert_int_eq(rct_post_send(&e.qp, &bad), RCT_EINVAL);
  }
  for (int i = 1; i < EP_SQ; i++)
    ck_assert_int_eq(post_send(&e, 10, RCT_WR_SEND, m, 0, 10, 0, 0, 0), RCT_OK);
  ck_assert_int_eq(post_send(&e, 10, RCT_WR_SEND, m, 0, 10, 0, 0, 0), RCT_ENOSPC);
}
END_TEST

/* [QP-STATE-3] [CNT-QP-1] RESET drops queued work without completions, keeps counters */
START_TEST(test_qp_reset_discards_work)
{
  struct host_mr *m = ep_reg_mr(&e, 0x10000, 4096, RCT_ACCESS_LOCAL_WRITE);
  struct rct_qp_attr a = { .qp_state = RCT_QPS_RESET };
  ck_assert_int_eq(to_init(), RCT_OK);
  post_recv(&e, 1, m, 0, 10);
  e.qp.base.cnt.rx_dup = 3;
  ck_assert_int_eq(rct_qp_modify(&e.qp, &a, RCT_QP_STATE), RCT_OK);
  ck_assert_int_eq(e.qp.base.attr.qp_state, RCT_QPS_RESET);
  ck_assert_uint_eq(e.qp.base.rq_head, e.qp.base.rq_tail);
  expect_no_wc(&e.rcq);
  ck_assert_uint_eq(e.qp.base.cnt.rx_dup, 3);
}
END_TEST

/* [QP-ERR-1] [QP-ERR-2] [QP-ERR-3] [REQ-CMPL-3] modify to ERR flushes everything */
START_TEST(test_qp_err_flushes_in_order)
{
  struct host_mr *m = ep_reg_mr(&e, 0x10000, 4096, RCT_ACCESS_LOCAL_WRITE);
  struct rct_qp_attr a;
  struct rct_frame f;
  struct conn_opts o;
  struct rct_wc wc;
  conn_defaults(&o);
  ep_connect(&e, MAC_B, IP_B, QPN_B, 1, 1, &o);
  for (int i = 0; i < 3; i++)
    post_recv(&e, (uint64_t)(10 + i), m, 0, 10);
  for (int i = 0; i < 3; i++)
    post_send(&e, (uint64_t)i, RCT_WR_SEND, m, 0, 10, 0, 0, 0);
  ck_assert(rct_poll_transmit(&e.qp, 0, &f));          /* one outstanding */
  a.qp_state = RCT_QPS_ERR;
  ck_assert_int_eq(rct_qp_modify(&e.qp, &a, RCT_QP_STATE), RCT_OK);
  for (int i = 0; i < 3; i++) {
    ck_assert(cq_pop(&e.scq, &wc));
    ck_assert_uint_eq(wc.wr_id, (uint64_t)i);
    ck_assert_int_eq(wc.status, RCT_WC_WR_FLUSH_ERR);
    ck_assert_int_eq(wc.opcode, RCT_WC_SEND);
  }
  for (int i = 0; i < 3; i++)
    expect_wc(&e.rcq, (uint64_t)(10 + i), RCT_WC_WR_FLUSH_ERR);
  ck_assert(!rct_poll_transmit(&e.qp, 0, &f));
  ck_assert_uint_eq(rct_next_timeout(&e.qp), RCT_NEVER);
  /* posted later: flushed at once */
  ck_assert_int_eq(post_send(&e, 7, RCT_WR_SEND, m, 0, 10, 0, 0, 0), RCT_OK);
  expect_wc(&e.scq, 7, RCT_WC_WR_FLUSH_ERR);
  ck_assert_int_eq(post_recv(&e, 8, m, 0, 10), RCT_OK);
  expect_wc(&e.rcq, 8, RCT_WC_WR_FLUSH_ERR);
  ck_assert_uint_eq(e.qp.base.cnt.flushed, 8);
}
END_TEST

/* [QP-STATE-7] SQD: started WRs finish, new ones wait for RTS */
START_TEST(test_qp_sqd_drains)
{
  struct host_mr *m = ep_reg_mr(&e, 0x10000, 8192, RCT_ACCESS_LOCAL_WRITE);
  struct rct_qp_attr a;
  struct rct_frame f;
  struct conn_opts o;
  struct peer pr;
  conn_defaults(&o);
  ep_connect(&e, MAC_B, IP_B, QPN_B, 1, 100, &o);
  peer_for(&pr, &e);
  post_send(&e, 1, RCT_WR_SEND, m, 0, 3000, 0, 0, 0);
  post_send(&e, 2, RCT_WR_SEND, m, 0, 10, 0, 0, 0);
  ck_assert(rct_poll_transmit(&e.qp, 0, &f));          /* first packet of WR 1 */
  a.qp_state = RCT_QPS_SQD;
  ck_assert_int_eq(rct_qp_modify(&e.qp, &a, RCT_QP_STATE), RCT_OK);
  ck_assert(rct_poll_transmit(&e.qp, 0, &f));
  ck_assert(rct_poll_transmit(&e.qp, 0, &f));          /* WR 1 completes its packets */
  ck_assert(!rct_poll_transmit(&e.qp, 0, &f));         /* WR 2 waits */
  ck_assert_int_eq(post_send(&e, 3, RCT_WR_SEND, m, 0, 10, 0, 0, 0), RCT_OK);   /* queued */
  inject_ack(&e, &pr, 1, 0x1f, 102, 1);
  expect_wc(&e.scq, 1, RCT_WC_SUCCESS);
  a.qp_state = RCT_QPS_RTS;
  ck_assert_int_eq(rct_qp_modify(&e.qp, &a, RCT_QP_STATE), RCT_OK);
  ck_assert(rct_poll_transmit(&e.qp, 2, &f));
  ck_assert_uint_eq(f.psn, 103);
}
END_TEST

/* rct_qp_query reports the live PSNs */
START_TEST(test_qp_query_and_names)
{
  struct conn_opts o;
  struct rct_qp_attr a;
  conn_defaults(&o);
  ep_connect(&e, MAC_B, IP_B, QPN_B, 0x10, 0x20, &o);
  rct_qp_query(&e.qp, &a);
  ck_assert_int_eq(a.qp_state, RCT_QPS_RTS);
  ck_assert_uint_eq(a.sq_psn, 0x20);
  ck_assert_uint_eq(a.rq_psn, 0x10);
  ck_assert_uint_eq(a.path_mtu, RCT_MTU_1024);
  ck_assert_str_eq(rct_wc_status_name(RCT_WC_RNR_RETRY_EXC_ERR), "RNR_RETRY_EXC_ERR");
  ck_assert_str_eq(rct_wr_opcode_name(RCT_WR_RDMA_READ), "RDMA_READ");
  ck_assert_str_eq(rct_syndrome_name(0x2c), "RNR_NAK");
  ck_assert_str_eq(rct_syndrome_name(0x62), "NAK_REMOTE_ACCESS");
  ck_assert_str_eq(rct_req_state_name(RCT_REQ_WAIT_RNR), "WAIT_RNR");
  ck_assert_str_eq(rct_resp_state_name(RCT_RESP_IN_SEND), "IN_SEND");
  ck_assert_str_eq(rct_comp_state_name(RCT_COMP_WAIT_ACK), "WAIT_ACK");
  ck_assert_str_eq(rct_qp_state_name((enum rct_qp_state)42), "?");
  ck_assert_uint_eq(rct_mtu_bytes(RCT_MTU_256), 256);
  ck_assert_uint_eq(rct_mtu_bytes(RCT_MTU_4096), 4096);
  ck_assert_uint_eq(rct_mtu_bytes((enum rct_mtu)0), 0);
}
END_TEST

/* [OPC-LEN-1] every path MTU fragments correctly */
START_TEST(test_qp_every_mtu)
{
  struct rct_frame f;
  struct conn_opts o;
  struct host_mr *m = ep_reg_mr(&e, 0x10000, 16384, RCT_ACCESS_LOCAL_WRITE);
  uint32_t mtu = 128u << _i, n = 0, total = 0;
  conn_defaults(&o);
  o.mtu = (enum rct_mtu)_i;
  ep_connect(&e, MAC_B, IP_B, QPN_B, 1, 1, &o);
  post_send(&e, 1, RCT_WR_RDMA_WRITE, m, 0, 10000, 0x1000, 1, 0);
  while (rct_poll_transmit(&e.qp, 0, &f)) {
    uint32_t pay = f.len - f.hdr_len - f.trailer_len;
    ck_assert_uint_le(pay, mtu);
    total += pay;
    n++;
  }
  ck_assert_uint_eq(total, 10000);
  ck_assert_uint_eq(n, (10000 + mtu - 1) / mtu);
}
END_TEST

/* Two QPs on one device: lookup by QPN, round-robin transmit, device-wide timers, destroy. */
static struct rct_qp *two_lookup(void *ctx, uint32_t qpn)
{
  struct rct_qp **q = ctx;
  for (int i = 0; i < 2; i++)
    if (q[i] && q[i]->base.init.qpn == qpn)
      return q[i];
  return NULL;
}

START_TEST(test_qp_device_wide_calls)
{
  static struct ep x;
  static struct rct_qp q2;
  static struct rct_send_wqe sq2[8];
  static struct rct_recv_wqe rq2[8];
  struct rct_qp *tab[2] = { &x.qp, &q2 };
  struct rct_qp_init_attr ia;
  struct conn_opts o;
  struct rct_frame f;
  struct host_mr *m;
  int from1 = 0, from2 = 0, last = 0, alternations = 0;
  uint64_t t;
  ep_init(&x, MAC_A, IP_A, QPN_A, 0);
  x.dev.attr.qp_lookup = two_lookup;
  x.dev.attr.lookup_ctx = tab;
  memset(&ia, 0, sizeof(ia));
  ia.qpn = 0x99; ia.pd = x.pd;
  ia.sq = sq2; ia.sq_size = 8; ia.rq = rq2; ia.rq_size = 8;
  ia.send_cq = &x.scq; ia.recv_cq = &x.rcq;
  ck_assert_int_eq(rct_qp_init(&x.dev, &q2, &ia), RCT_OK);
  conn_defaults(&o);
  ep_connect(&x, MAC_B, IP_B, QPN_B, 1, 100, &o);
  {
    struct rct_qp_attr a = good(RCT_QPS_INIT);
    a.qp_access_flags = 0;
    a.port_num = RCT_PORT_NUM;
    rct_qp_modify(&q2, &a, RCT_QP_STATE | RCT_QP_ACCESS_FLAGS | RCT_QP_PKEY_INDEX | RCT_QP_PORT);
    a = good(RCT_QPS_RTR);
    a.max_dest_rd_atomic = 0;
    rct_qp_modify(&q2, &a, rtr_mask());
    a = good(RCT_QPS_RTS);
    a.sq_psn = 500;
    a.timeout = 10;
    ck_assert_int_eq(rct_qp_modify(&q2, &a, rts_mask()), RCT_OK);
  }
  m = ep_reg_mr(&x, 0x10000, 8192, RCT_ACCESS_LOCAL_WRITE);
  post_send(&x, 1, RCT_WR_SEND, m, 0, 4096, 0, 0, 0);
  {
    struct rct_sge sge = { m->va, 4096, m->lkey };
    struct rct_send_wr wr = { .wr_id = 2, .opcode = RCT_WR_SEND, .send_flags = RCT_SEND_SIGNALED,
                              .sg_list = &sge, .num_sge = 1 };
    ck_assert_int_eq(rct_post_send(&q2, &wr), RCT_OK);
  }
  while (rct_dev_poll_transmit(&x.dev, 0, &f)) {
    int who = f.qpn == QPN_A ? 1 : 2;
    from1 += who == 1;
    from2 += who == 2;
    alternations += last && last != who;
    last = who;
  }
  ck_assert_int_eq(from1, 4);
  ck_assert_int_eq(from2, 4);
  ck_assert_int_ge(alternations, 6);                   /* round robin */
  t = rct_dev_next_timeout(&x.dev);
  ck_assert_uint_eq(t, 4096ull << 10);                /* q2's shorter timeout */
  rct_dev_handle_timeout(&x.dev, t);
  ck_assert_uint_eq(q2.base.cnt.timeouts, 1);
  ck_assert_uint_eq(x.qp.base.cnt.timeouts, 0);
  ck_assert(rct_dev_poll_transmit(&x.dev, t, &f));
  ck_assert_uint_eq(f.qpn, 0x99);
  ck_assert_uint_eq(f.psn, 500);
  rct_qp_destroy(&q2);
  tab[1] = NULL;
  ck_assert_uint_eq(rct_dev_next_timeout(&x.dev), 4096ull << 14);
  while (rct_dev_poll_transmit(&x.dev, t, &f))
    ck_assert_uint_eq(f.qpn, QPN_A);
  ep_free(&x);
}
END_TEST

Suite *suite_qp(void)
{
  Suite *s = suite_create("qp");
  TCase *t = tcase_create("state-machine");
  tcase_add_checked_fixture(t, setup, teardown);
  tcase_add_test(t, test_qp_new_is_reset);
  tcase_add_test(t, test_qp_modify_checks);
  tcase_add_test(t, test_qp_modify_cur_state_and_state_alone);
  tcase_add_test(t, test_qp_no_sqe);
  tcase_add_test(t, test_qp_path_mtu_fits_interface);
  tcase_add_test(t, test_qp_post_per_state);
  tcase_add_test(t, test_qp_reset_discards_work);
  tcase_add_test(t, test_qp_err_flushes_in_order);
  tcase_add_test(t, test_qp_sqd_drains);
  tcase_add_test(t, test_qp_query_and_names);
  tcase_add_loop_test(t, test_qp_every_mtu, 1, 6);
  tcase_add_test(t, test_qp_device_wide_calls);
  suite_add_tcase(s, t);
  return s;
}
