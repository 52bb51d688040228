/*
 * test_ud.c: the UD type (proto-spec ud.md): two UD QPs on one host device,
 * frames looped back through rct_handle_frame (ICRC checked): sending and
 * receiving, the GRH area, immediate data, Q_Keys, the port MTU, missing
 * receive WRs, PSNs, the UD state machine.
 */
#include "harness.h"

#define UD_Q 16
#define UQPN_A 0x21u
#define UQPN_B 0x22u
#define QKEY_A 0x1111u
#define QKEY_B 0x2222u
#define UD_IP 0x0a000009u

struct uqp {
  struct rct_ud_qp qp;
  struct rct_send_wqe sq[UD_Q];
  struct rct_recv_wqe rq[UD_Q];
  struct rct_cq scq, rcq;
  struct rct_wc swc[UD_Q * 2], rwc[UD_Q * 2];
};

static struct udx {
  struct rct_dev dev;
  struct host_mr_table mrs;
  struct uqp a, b;
  struct host_mr *mr;         /* one MR for every buffer: [0, 64 KiB) */
  uint8_t *mem;
  uint8_t last[RCT_HDR_MAX + 8192]; /* the last frame looped back */
  int last_len;
} X;

static struct rct_qp_base *ud_lookup(void *ctx, uint32_t qpn)
{
  struct udx *x = ctx;
  if (qpn == UQPN_A && x->a.qp.base.dev)
    return &x->a.qp.base;
  if (qpn == UQPN_B && x->b.qp.base.dev)
    return &x->b.qp.base;
  return NULL;
}

static void uqp_init(struct uqp *u, uint32_t qpn)
{
  struct rct_qp_init_attr ia = { .qpn = qpn, .pd = 7, .sq = u->sq, .sq_size = UD_Q, .rq = u->rq,
                                 .rq_size = UD_Q, .send_cq = &u->scq, .recv_cq = &u->rcq };
  rct_cq_init(&u->scq, u->swc, UD_Q * 2);
  rct_cq_init(&u->rcq, u->rwc, UD_Q * 2);
  ck_assert_int_eq(rct_ud_qp_init(&X.dev, &u->qp, &ia), RCT_OK);
}

/* RESET -> INIT (port, P_Key index, Q_Key) -> RTR -> RTS (sq_psn) [UD-STATE-1]. */
static void uqp_up(struct uqp *u, uint32_t qkey, uint32_t sq_psn)
{
  struct rct_qp_attr a = { .qp_state = RCT_QPS_INIT, .port_num = RCT_PORT_NUM,
                           .pkey_index = RCT_PKEY_INDEX, .qkey = qkey };
  ck_assert_int_eq(rct_qpb_modify(&u->qp.base, &a, RCT_QP_STATE | RCT_QP_PORT | RCT_QP_PKEY_INDEX |
                                  RCT_QP_QKEY), RCT_OK);
  a.qp_state = RCT_QPS_RTR;
  ck_assert_int_eq(rct_qpb_modify(&u->qp.base, &a, RCT_QP_STATE), RCT_OK);
  a.qp_state = RCT_QPS_RTS;
  a.sq_psn = sq_psn;
  ck_assert_int_eq(rct_qpb_modify(&u->qp.base, &a, RCT_QP_STATE | RCT_QP_SQ_PSN), RCT_OK);
}

static void ud_setup_ip_mtu(uint32_t ip_mtu)
{
  struct rct_dev_attr da = { .mac = { 0x52, 0x54, 0, 0, 0, 0x09 }, .ipv4 = UD_IP, .ip_mtu = ip_mtu,
                             .mr_ops = &host_mr_ops, .mr_ctx = &X.mrs, .qp_lookup_any = ud_lookup,
                             .lookup_ctx = &X };
  memset(&X, 0, sizeof(X));
  rct_dev_init(&X.dev, &da);
  X.mem = calloc(1, 65536);
  X.mr = host_mr_reg(&X.mrs, 0x100, 0x200, 7, 0, 65536, RCT_ACCESS_LOCAL_WRITE, X.mem);
  ck_assert_ptr_nonnull(X.mr);
  uqp_init(&X.a, UQPN_A);
  uqp_init(&X.b, UQPN_B);
  uqp_up(&X.a, QKEY_A, 100);
  uqp_up(&X.b, QKEY_B, 200);
}

static void ud_setup(void) { ud_setup_ip_mtu(1500); }

static void ud_teardown(void)
{
  host_mr_dereg(&X.mrs, X.mr);
  free(X.mem);
}

/* The destination B (or qpn) as an address handle would fill it. */
static struct rct_ud_dest dest_to(uint32_t qpn, uint32_t qkey)
{
  struct rct_ud_dest d = { .dmac = { 0x52, 0x54, 0, 0, 0, 0x09 }, .dipv4 = UD_IP, .dqpn = qpn, .qkey = qkey };
  return d;
}

/* A SEND (or SEND_WITH_IMM) of len bytes from mem[off] of QP u. */
static int ud_send(struct uqp *u, uint64_t id, enum rct_wr_opcode op, uint32_t off, uint32_t len,
                   const struct rct_ud_dest *d)
{
  struct rct_sge sge = { .addr = off, .length = len, .lkey = 0x100 };
  struct rct_send_wr wr = { .wr_id = id, .opcode = op, .send_flags = RCT_SEND_SIGNALED, .sg_list = &sge,
                            .num_sge = 1, .imm_data = 0xfeedbeef };
  return rct_ud_post_send(&u->qp, &wr, d);
}

static void ud_recv(struct uqp *u, uint64_t id, uint32_t off, uint32_t len)
{
  struct rct_sge sge = { .addr = off, .length = len, .lkey = 0x100 };
  struct rct_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 };
  ck_assert_int_eq(rct_qpb_post_recv(&u->qp.base, &wr), RCT_OK);
}

/* The device's next frame, linearized into X.last; 0 if none. */
static int next_frame(void)
{
  struct rct_frame f;
  if (!rct_dev_poll_transmit(&X.dev, 1000, &f))
    return 0;
  X.last_len = rct_frame_linearize(&f, X.last, sizeof(X.last));
  ck_assert_int_gt(X.last_len, 0);
  return 1;
}

/* Loop X.last back into the device (ICRC checked). */
static enum rct_rx_result loop_back(void)
{
  return rct_handle_frame(&X.dev, 2000, X.last, (size_t)X.last_len);
}

static void parse_last(struct rct_pkt *p)
{
  ck_assert_int_eq(rct_wire_parse_frame(p, X.last, (uint32_t)X.last_len, 0), RCT_PARSE_OK);
  ck_assert(rct_wire_icrc_ok(p));
  ck_assert_int_eq(rct_wire_parse_ext(p), RCT_PARSE_OK);
}

/* [UD-SEND-1] [UD-RECV-2] [UD-WIRE-1] [UD-WIRE-2] */
START_TEST(test_ud_loopback_send)
{
  struct rct_ud_dest d = dest_to(UQPN_B, QKEY_B);
  struct rct_wc wc;
  struct rct_pkt p;
  for (int i = 0; i < 100; i++)
    X.mem[i] = (uint8_t)(i * 3 + 1);
  ud_recv(&X.b, 9, 4096, 1024);
  ck_assert_int_eq(ud_send(&X.a, 1, RCT_WR_SEND, 0, 100, &d), RCT_OK);
  ck_assert_int_eq(next_frame(), 1);
  ck_assert_int_eq(cq_pop(&X.a.scq, &wc), 1);                 /* complete at hand-out, no ACK */
  ck_assert_int_eq(wc.status, RCT_WC_SUCCESS);
  ck_assert_int_eq(wc.opcode, RCT_WC_SEND);
  ck_assert_uint_eq(wc.wr_id, 1);
  parse_last(&p);
  ck_assert_uint_eq(p.h.bth.opcode, OP_UD_SEND_ONLY);
  ck_assert_uint_eq(p.h.bth.dqpn, UQPN_B);
  ck_assert_uint_eq(p.h.deth.qkey, QKEY_B);
  ck_assert_uint_eq(p.h.deth.srcqp, UQPN_A);
  ck_assert_uint_eq(p.paylen, 100);
  ck_assert_uint_eq(p.h.dip, UD_IP);                          /* addressed from the WR's destination */
  ck_assert_mem_eq(p.h.dmac, d.dmac, 6);
  ck_assert_uint_eq(p.h.sport, rct_udp_sport(UQPN_A, UQPN_B));
  ck_assert_uint_eq(p.h.ttl, 64);
  ck_assert_int_eq(loop_back(), RCT_RX_OK);
  ck_assert_int_eq(cq_pop(&X.b.rcq, &wc), 1);
  ck_assert_int_eq(wc.status, RCT_WC_SUCCESS);
  ck_assert_int_eq(wc.opcode, RCT_WC_RECV);
  ck_assert_uint_eq(wc.wr_id, 9);
  ck_assert_uint_eq(wc.byte_len, 40 + 100);
  ck_assert_uint_eq(wc.wc_flags, RCT_WC_GRH);
  ck_assert_uint_eq(wc.src_qp, UQPN_A);
  ck_assert_uint_eq(wc.qp_num, UQPN_B);
  ck_assert_mem_eq(X.mem + 4096 + 40, X.mem, 100);
  ck_assert_int_eq(next_frame(), 0);                           /* nothing answers a UD frame */
  ck_assert_uint_eq(X.b.qp.base.cnt.rx_frames, 1);
  d.udp_sport = 0xd00d;
  d.ttl = 9;
  d.dscp = 3;
  ck_assert_int_eq(ud_send(&X.a, 2, RCT_WR_SEND, 0, 1, &d), RCT_OK);
  ck_assert_int_eq(next_frame(), 1);
  parse_last(&p);
  ck_assert_uint_eq(p.h.sport, 0xd00d);
  ck_assert_uint_eq(p.h.ttl, 9);
  ck_assert_uint_eq(p.h.tos, 3 << 2);
}
END_TEST

/* [UD-RECV-2]: 20 zero bytes, then the IPv4 header as received. */
START_TEST(test_ud_grh_area_holds_the_ipv4_header)
{
  struct rct_ud_dest d = dest_to(UQPN_B, QKEY_B);
  struct rct_wc wc;
  uint8_t zero[20] = { 0 };
  memset(X.mem + 8192, 0xee, 64);
  ud_recv(&X.b, 1, 8192, 64);
  ck_assert_int_eq(ud_send(&X.a, 1, RCT_WR_SEND, 0, 8, &d), RCT_OK);
  ck_assert_int_eq(next_frame(), 1);
  ck_assert_int_eq(loop_back(), RCT_RX_OK);
  ck_assert_int_eq(cq_pop(&X.b.rcq, &wc), 1);
  ck_assert_int_eq(wc.status, RCT_WC_SUCCESS);
  ck_assert_mem_eq(X.mem + 8192, zero, 20);
  ck_assert_mem_eq(X.mem + 8192 + 20, X.last + ETH_HLEN, IPV4_HLEN);
  ck_assert_uint_eq(X.mem[8192 + 20], 0x45);
  ck_assert_uint_eq(X.mem[8192 + 48], 0xee);                  /* nothing past 40 + 8 */
}
END_TEST

/* [UD-WIRE-1] [UD-RECV-2] */
START_TEST(test_ud_send_with_imm)
{
  struct rct_ud_dest d = dest_to(UQPN_B, QKEY_B);
  struct rct_wc wc;
  struct rct_pkt p;
  ud_recv(&X.b, 2, 0x3000, 256);
  ck_assert_int_eq(ud_send(&X.a, 3, RCT_WR_SEND_WITH_IMM, 0, 33, &d), RCT_OK);
  ck_assert_int_eq(next_frame(), 1);
  parse_last(&p);
  ck_assert_uint_eq(p.h.bth.opcode, OP_UD_SEND_ONLY_IMM);
  ck_assert_uint_eq(p.h.imm, 0xfeedbeef);
  ck_assert_int_eq(loop_back(), RCT_RX_OK);
  ck_assert_int_eq(cq_pop(&X.b.rcq, &wc), 1);
  ck_assert_uint_eq(wc.wc_flags, RCT_WC_GRH | RCT_WC_WITH_IMM);
  ck_assert_uint_eq(wc.imm_data, 0xfeedbeef);
  ck_assert_uint_eq(wc.byte_len, 40 + 33);
}
END_TEST

/* [UD-QKEY-1] */
START_TEST(test_ud_qkey_mismatch_dropped_and_counted)
{
  struct rct_ud_dest bad = dest_to(UQPN_B, QKEY_B + 1), good = dest_to(UQPN_B, QKEY_B);
  struct rct_wc wc;
  ud_recv(&X.b, 5, 0x3000, 256);
  ck_assert_int_eq(ud_send(&X.a, 1, RCT_WR_SEND, 0, 10, &bad), RCT_OK);
  ck_assert_int_eq(next_frame(), 1);
  ck_assert_int_eq(loop_back(), RCT_RX_DROPPED);
  ck_assert_uint_eq(X.b.qp.base.cnt.rx_bad_qkey, 1);
  ck_assert_int_eq(cq_pop(&X.b.rcq, &wc), 0);
  ck_assert_int_eq(ud_send(&X.a, 2, RCT_WR_SEND, 0, 10, &good), RCT_OK);
  ck_assert_int_eq(next_frame(), 1);
  ck_assert_int_eq(loop_back(), RCT_RX_OK);
  ck_assert_int_eq(cq_pop(&X.b.rcq, &wc), 1);                 /* the WR the bad frame left */
  ck_assert_uint_eq(wc.wr_id, 5);
  ck_assert_uint_eq(X.b.qp.base.cnt.rx_bad_qkey, 1);
}
END_TEST

/* [UD-QKEY-2]: bit 31 set in the WR's Q_Key = the sender's own. */
START_TEST(test_ud_controlled_qkey)
{
  struct rct_ud_dest d = dest_to(UQPN_B, RCT_QKEY_CONTROLLED | 0x5);
  struct rct_qp_attr a = { .qp_state = RCT_QPS_RTS, .qkey = QKEY_B };
  struct rct_wc wc;
  struct rct_pkt p;
  ud_recv(&X.b, 1, 0x3000, 256);
  ud_recv(&X.b, 2, 0x3000, 256);
  ck_assert_int_eq(ud_send(&X.a, 1, RCT_WR_SEND, 0, 4, &d), RCT_OK);   /* A's Q_Key is QKEY_A */
  ck_assert_int_eq(next_frame(), 1);
  parse_last(&p);
  ck_assert_uint_eq(p.h.deth.qkey, QKEY_A);
  ck_assert_int_eq(loop_back(), RCT_RX_DROPPED);
  ck_assert_uint_eq(X.b.qp.base.cnt.rx_bad_qkey, 1);
  ck_assert_int_eq(rct_qpb_modify(&X.a.qp.base, &a, RCT_QP_STATE | RCT_QP_QKEY), RCT_OK);
  ck_assert_int_eq(ud_send(&X.a, 2, RCT_WR_SEND, 0, 4, &d), RCT_OK);
  ck_assert_int_eq(next_frame(), 1);
  parse_last(&p);
  ck_assert_uint_eq(p.h.deth.qkey, QKEY_B);
  ck_assert_int_eq(loop_back(), RCT_RX_OK);
  ck_assert_int_eq(cq_pop(&X.b.rcq, &wc), 1);
  ck_assert_int_eq(wc.status, RCT_WC_SUCCESS);
}
END_TEST

/* [UD-MTU-1] [UD-STATE-2]: at 1500 the port MTU is 1024. */
START_TEST(test_ud_oversize_send_local_length_error)
{
  struct rct_ud_dest d = dest_to(UQPN_B, QKEY_B);
  struct rct_qp_attr a = { .qp_state = RCT_QPS_RTS };
  struct rct_wc wc;
  ck_assert_uint_eq(rct_ud_mtu(&X.dev), 1024);
  ud_recv(&X.b, 1, 0x4000, 2048);
  ck_assert_int_eq(ud_send(&X.a, 1, RCT_WR_SEND, 0, 1025, &d), RCT_OK);
  ck_assert_int_eq(ud_send(&X.a, 2, RCT_WR_SEND, 0, 10, &d), RCT_OK);
  ck_assert_int_eq(next_frame(), 0);
  ck_assert_int_eq(cq_pop(&X.a.scq, &wc), 1);
  ck_assert_uint_eq(wc.wr_id, 1);
  ck_assert_int_eq(wc.status, RCT_WC_LOC_LEN_ERR);
  ck_assert_int_eq(cq_pop(&X.a.scq, &wc), 1);
  ck_assert_uint_eq(wc.wr_id, 2);
  ck_assert_int_eq(wc.status, RCT_WC_WR_FLUSH_ERR);
  ck_assert_int_eq(X.a.qp.base.attr.qp_state, RCT_QPS_SQE);
  ck_assert_int_eq(ud_send(&X.a, 3, RCT_WR_SEND, 0, 10, &d), RCT_OK);   /* in SQE: flushed at once */
  ck_assert_int_eq(cq_pop(&X.a.scq, &wc), 1);
  ck_assert_int_eq(wc.status, RCT_WC_WR_FLUSH_ERR);
  ck_assert_int_eq(rct_qpb_modify(&X.a.qp.base, &a, RCT_QP_STATE), RCT_OK);   /* SQE -> RTS */
  ck_assert_int_eq(ud_send(&X.a, 4, RCT_WR_SEND, 0, 1024, &d), RCT_OK);     /* exactly the MTU */
  ck_assert_int_eq(next_frame(), 1);
  ck_assert_int_eq(cq_pop(&X.a.scq, &wc), 1);
  ck_assert_int_eq(wc.status, RCT_WC_SUCCESS);
  ck_assert_int_eq(loop_back(), RCT_RX_OK);
  ck_assert_int_eq(cq_pop(&X.b.rcq, &wc), 1);
  ck_assert_uint_eq(wc.byte_len, 40 + 1024);
}
END_TEST

/* [UD-MTU-1]: the port MTU follows the interface's IP MTU. */
START_TEST(test_ud_mtu_follows_ip_mtu)
{
  ud_teardown();
  ud_setup_ip_mtu(0);
  ck_assert_uint_eq(rct_ud_mtu(&X.dev), 4096);
  ck_assert_uint_eq(X.a.qp.base.mtu, 4096);
  X.dev.attr.ip_mtu = 20 + 8 + 12 + 8 + 4 + 2048 + 4;
  ck_assert_uint_eq(rct_ud_mtu(&X.dev), 2048);
  X.dev.attr.ip_mtu -= 1;
  ck_assert_uint_eq(rct_ud_mtu(&X.dev), 1024);
}
END_TEST

/* [UD-RECV-1] */
START_TEST(test_ud_no_recv_wqe_dropped_and_counted)
{
  struct rct_ud_dest d = dest_to(UQPN_B, QKEY_B);
  struct rct_wc wc;
  ck_assert_int_eq(ud_send(&X.a, 1, RCT_WR_SEND, 0, 10, &d), RCT_OK);
  ck_assert_int_eq(next_frame(), 1);
  ck_assert_int_eq(loop_back(), RCT_RX_DROPPED);
  ck_assert_uint_eq(X.b.qp.base.cnt.rx_no_recv, 1);
  ck_assert_int_eq(cq_pop(&X.b.rcq, &wc), 0);
  ck_assert_int_eq(next_frame(), 0);                           /* no RNR NAK */
}
END_TEST

/* [UD-RECV-3] */
START_TEST(test_ud_recv_buffer_too_short_local_length_error)
{
  struct rct_ud_dest d = dest_to(UQPN_B, QKEY_B);
  struct rct_wc wc;
  ud_recv(&X.b, 7, 0x3000, 40 + 19);
  ck_assert_int_eq(ud_send(&X.a, 1, RCT_WR_SEND, 0, 20, &d), RCT_OK);
  ck_assert_int_eq(next_frame(), 1);
  ck_assert_int_eq(loop_back(), RCT_RX_OK);
  ck_assert_int_eq(cq_pop(&X.b.rcq, &wc), 1);
  ck_assert_uint_eq(wc.wr_id, 7);
  ck_assert_int_eq(wc.status, RCT_WC_LOC_LEN_ERR);
  ck_assert_int_eq(X.b.qp.base.attr.qp_state, RCT_QPS_RTS);
}
END_TEST

/* [UD-PSN-1]: sq_psn, then one more per frame, modulo 2^24; the receiver takes any order. */
START_TEST(test_ud_psn_per_packet_any_order)
{
  struct rct_ud_dest d = dest_to(UQPN_B, QKEY_B);
  struct rct_qp_attr a = { .qp_state = RCT_QPS_RTS, .sq_psn = 0xfffffe };
  uint8_t frames[3][256];
  int lens[3];
  struct rct_pkt p;
  struct rct_wc wc;
  uqp_init(&X.a, UQPN_A);
  uqp_up(&X.a, QKEY_A, a.sq_psn);
  for (int i = 0; i < 3; i++) {
    ud_recv(&X.b, (uint64_t)i, 0x3000 + 256 * (uint32_t)i, 256);
    ck_assert_int_eq(ud_send(&X.a, (uint64_t)i, RCT_WR_SEND, 0, 4, &d), RCT_OK);
    ck_assert_int_eq(next_frame(), 1);
    parse_last(&p);
    ck_assert_uint_eq(p.h.bth.psn, (0xfffffeu + (uint32_t)i) & 0xffffff);
    memcpy(frames[i], X.last, (size_t)X.last_len);
    lens[i] = X.last_len;
  }
  for (int i = 2; i >= 0; i--)
    ck_assert_int_eq(rct_handle_frame(&X.dev, 3000, frames[i], (size_t)lens[i]), RCT_RX_OK);
  for (int i = 0; i < 3; i++)
    ck_assert_int_eq(cq_pop(&X.b.rcq, &wc), 1);
  ck_assert_int_eq(rct_qpb_query(&X.a.qp.base, &a), RCT_OK);
  ck_assert_uint_eq(a.sq_psn, 1);
}
END_TEST

/* [UD-STATE-1]: the UD attributes only; refusals change nothing. */
START_TEST(test_ud_state_machine_refuses_rc_attributes)
{
  struct rct_qp_attr a = { .qp_state = RCT_QPS_INIT, .port_num = RCT_PORT_NUM, .pkey_index = RCT_PKEY_INDEX,
                           .qkey = 1, .path_mtu = RCT_MTU_1024, .timeout = 14 };
  struct rct_qp_base *b = &X.a.qp.base;
  uint32_t init = RCT_QP_STATE | RCT_QP_PORT | RCT_QP_PKEY_INDEX | RCT_QP_QKEY;
  uqp_init(&X.a, UQPN_A);
  ck_assert_int_eq(rct_qpb_modify(b, &a, init & ~RCT_QP_QKEY), RCT_EINVAL);
  ck_assert_int_eq(rct_qpb_modify(b, &a, init | RCT_QP_ACCESS_FLAGS), RCT_EINVAL);
  ck_assert_int_eq(b->attr.qp_state, RCT_QPS_RESET);
  ck_assert_int_eq(rct_qpb_modify(b, &a, init), RCT_OK);
  a.qp_state = RCT_QPS_RTR;
  ck_assert_int_eq(rct_qpb_modify(b, &a, RCT_QP_STATE | RCT_QP_AV), RCT_EINVAL);
  ck_assert_int_eq(rct_qpb_modify(b, &a, RCT_QP_STATE | RCT_QP_PATH_MTU), RCT_EINVAL);
  ck_assert_int_eq(rct_qpb_modify(b, &a, RCT_QP_STATE | RCT_QP_DEST_QPN), RCT_EINVAL);
  ck_assert_int_eq(rct_qpb_modify(b, &a, RCT_QP_STATE | RCT_QP_RQ_PSN), RCT_EINVAL);
  ck_assert_int_eq(b->attr.qp_state, RCT_QPS_INIT);
  ck_assert_int_eq(rct_qpb_modify(b, &a, RCT_QP_STATE), RCT_OK);
  a.qp_state = RCT_QPS_RTS;
  ck_assert_int_eq(rct_qpb_modify(b, &a, RCT_QP_STATE), RCT_EINVAL);          /* sq_psn required */
  ck_assert_int_eq(rct_qpb_modify(b, &a, RCT_QP_STATE | RCT_QP_SQ_PSN | RCT_QP_TIMEOUT), RCT_EINVAL);
  ck_assert_int_eq(b->attr.qp_state, RCT_QPS_RTR);
  ck_assert_int_eq(rct_qpb_modify(b, &a, RCT_QP_STATE | RCT_QP_SQ_PSN), RCT_OK);
  ck_assert_int_eq(b->attr.qp_state, RCT_QPS_RTS);
  /* and an RC QP takes no Q_Key */
  {
    struct ep e;
    struct rct_qp_attr r = { .qp_state = RCT_QPS_INIT, .port_num = RCT_PORT_NUM,
                             .pkey_index = RCT_PKEY_INDEX, .qkey = 1 };
    ep_init(&e, MAC_A, IP_A, QPN_A, 0);
    ck_assert_int_eq(rct_qp_modify(&e.qp, &r, RCT_QP_STATE | RCT_QP_PORT | RCT_QP_PKEY_INDEX |
                                   RCT_QP_ACCESS_FLAGS | RCT_QP_QKEY), RCT_EINVAL);
    ep_free(&e);
  }
}
END_TEST

/* [UD-RX-1]: a UD frame to an RC QP and an RC frame to a UD QP are bad opcodes; UD sends only SENDs. */
START_TEST(test_ud_opcode_class_checked)
{
  struct rct_ud_dest d = dest_to(UQPN_B, QKEY_B);
  struct rct_pkt p;
  ud_recv(&X.b, 1, 0x3000, 256);
  ck_assert_int_eq(ud_send(&X.a, 1, RCT_WR_RDMA_WRITE, 0, 4, &d), RCT_EINVAL);
  ck_assert_int_eq(rct_ud_post_send(&X.a.qp, &(struct rct_send_wr){ .opcode = RCT_WR_SEND }, NULL),
                   RCT_EINVAL);
  ck_assert_int_eq(ud_send(&X.a, 1, RCT_WR_SEND, 0, 4, &d), RCT_OK);
  ck_assert_int_eq(next_frame(), 1);
  parse_last(&p);
  X.last[p.bth_off] = OP_SEND_ONLY;                          /* RC opcode, same length with DETH as payload */
  ck_assert_int_eq(frame_set_icrc(X.last, (size_t)X.last_len), RCT_OK);
  ck_assert_int_eq(loop_back(), RCT_RX_DROPPED);
  ck_assert_uint_eq(X.b.qp.base.cnt.rx_bad_opcode, 1);
  {
    struct ep e;
    struct peer pr;
    struct rct_hdr h;
    struct conn_opts o;
    conn_defaults(&o);
    ep_init(&e, MAC_A, IP_A, QPN_A, 0);
    ep_connect(&e, MAC_B, IP_B, QPN_B, 0, 0, &o);
    peer_for(&pr, &e);
    rct_hdr_clear(&h);
    h.bth.opcode = OP_UD_SEND_ONLY;
    h.deth.qkey = 1;
    h.deth.srcqp = QPN_B;
    ck_assert_int_eq(inject(&e, &pr, 0, &h, "abcd", 4), RCT_RX_DROPPED);
    ck_assert_uint_eq(e.qp.base.cnt.rx_bad_opcode, 1);
    ep_free(&e);
  }
}
END_TEST

/* [QP-ERR-2] for UD: ERR flushes what is posted; the event names the base, not an RC QP. */
START_TEST(test_ud_err_flushes_and_reports)
{
  struct rct_qp_attr a = { .qp_state = RCT_QPS_ERR };
  struct rct_event ev;
  struct rct_wc wc;
  ud_recv(&X.b, 1, 0x3000, 256);
  ud_recv(&X.b, 2, 0x3100, 256);
  ck_assert_int_eq(rct_qpb_modify(&X.b.qp.base, &a, RCT_QP_STATE), RCT_OK);
  for (uint64_t i = 1; i <= 2; i++) {
    ck_assert_int_eq(cq_pop(&X.b.rcq, &wc), 1);
    ck_assert_uint_eq(wc.wr_id, i);
    ck_assert_int_eq(wc.status, RCT_WC_WR_FLUSH_ERR);
  }
  while (rct_dev_next_event(&X.dev, &ev) && ev.type != RCT_EV_QP_ERR)
    ;
  ck_assert_int_eq(ev.type, RCT_EV_QP_ERR);
  ck_assert_ptr_eq(ev.qp_base, &X.b.qp.base);
  ck_assert_ptr_null(ev.qp);
}
END_TEST

/* The point of the split: a UD QP carries no RC windows. */
START_TEST(test_ud_qp_is_small)
{
  printf("test_ud_qp_is_small: sizeof(struct rct_qp) (RC) = %zu, sizeof(struct rct_ud_qp) = %zu, "
         "sizeof(struct rct_qp_base) = %zu\n", sizeof(struct rct_qp), sizeof(struct rct_ud_qp),
         sizeof(struct rct_qp_base));
  ck_assert_uint_lt(sizeof(struct rct_ud_qp), 1024);
  ck_assert_uint_gt(sizeof(struct rct_qp), 16 * sizeof(struct rct_ud_qp));
}
END_TEST

Suite *suite_ud(void)
{
  Suite *s = suite_create("ud");
  TCase *t = tcase_create("ud");
  tcase_add_checked_fixture(t, ud_setup, ud_teardown);
  tcase_add_test(t, test_ud_loopback_send);
  tcase_add_test(t, test_ud_grh_area_holds_the_ipv4_header);
  tcase_add_test(t, test_ud_send_with_imm);
  tcase_add_test(t, test_ud_qkey_mismatch_dropped_and_counted);
  tcase_add_test(t, test_ud_controlled_qkey);
  tcase_add_test(t, test_ud_oversize_send_local_length_error);
  tcase_add_test(t, test_ud_mtu_follows_ip_mtu);
  tcase_add_test(t, test_ud_no_recv_wqe_dropped_and_counted);
  tcase_add_test(t, test_ud_recv_buffer_too_short_local_length_error);
  tcase_add_test(t, test_ud_psn_per_packet_any_order);
  tcase_add_test(t, test_ud_state_machine_refuses_rc_attributes);
  tcase_add_test(t, test_ud_opcode_class_checked);
  tcase_add_test(t, test_ud_err_flushes_and_reports);
  tcase_add_test(t, test_ud_qp_is_small);
  suite_add_tcase(s, t);
  return s;
}
