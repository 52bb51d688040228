/*
 * test_rx.c: receive validation: every kind of bad frame is dropped,
 * counted once, answered by nothing and changes no QP state.
 */
#include "harness.h"

#define A (fx_a())
#define P (fx_peer())
#define E0 0x654321u
static uint8_t buf[8192];
static struct host_mr *R;

static void setup(void)
{
  fx_setup();
  A->allow_bad_frames = true;
  R = ep_reg_mr(A, 0x80000, 8192, RCT_ACCESS_LOCAL_WRITE);
  post_recv(A, 1, R, 0, 4096);
}

/* A valid SEND ONLY to A in buf; returns its length. */
static uint32_t good_frame(uint32_t paylen)
{
  struct rct_hdr h;
  uint8_t pay[64];
  memset(&h, 0, sizeof(h));
  memset(pay, 0x77, sizeof(pay));
  h.bth.opcode = OP_SEND_ONLY;
  h.bth.psn = E0;
  h.bth.ackreq = 1;
  return build_frame(buf, A, P, &h, pay, paylen);
}

/* Recompute IPv4 checksum and ICRC after editing buf. */
static void fix(uint32_t n)
{
  struct rct_iov seg;
  st16(buf + 24, rct_wire_ipv4_csum(buf + 14));
  seg.base = buf + 54;
  seg.len = n - 54 - 4;
  rct_wire_icrc_store(buf + n - 4, rct_icrc_compute(buf, 54, 14, RCT_ENCAP_V2, &seg, 1, 0, 0));
}

static uint64_t drops_total(void)
{
  const struct rct_dev_counters *d = &A->dev.cnt;
  const struct rct_qp_counters *q = &A->qp.base.cnt;
  return d->rx_truncated + d->rx_bad_header + d->rx_icrc_err + d->rx_bad_opcode + d->rx_unknown_qp +
         q->rx_bad_opcode + q->rx_bad_length + q->rx_bad_state + q->rx_wrong_encap + q->rx_wrong_peer +
         q->rx_truncated;
}

/* Nothing changed in the QP: no frame out, no completion, epsn unchanged. */
static void unchanged(void)
{
  expect_nothing(A, 0);
  expect_no_wc(&A->rcq);
  ck_assert_uint_eq(A->qp.resp.epsn, E0);
}

/* [RX-ORDER-1] [RX-ORDER-3] [CNT-QP-2] a good frame is accepted: the baseline */
START_TEST(test_rx_good_frame_accepted)
{
  uint32_t n = good_frame(10);
  ck_assert_int_eq(rct_handle_frame(&A->dev, 0, buf, n), RCT_RX_OK);
  ck_assert_uint_eq(drops_total(), 0);
  ck_assert_uint_eq(A->qp.base.cnt.rx_frames, 1);
  ck_assert_uint_eq(A->qp.base.cnt.rx_bytes, n);
}
END_TEST

/* [OPC-HDR-2] [RX-ORDER-1] [RX-PARSE-1] every truncation of a frame is dropped */
START_TEST(test_rx_truncated_headers)
{
  uint32_t n = good_frame(10);
  for (uint32_t len = 0; len < n; len++) {
    enum rct_rx_result r = rct_handle_frame(&A->dev, 0, buf, len);
    ck_assert_int_ne(r, RCT_RX_OK);
  }
  unchanged();
  ck_assert_uint_eq(A->dev.cnt.rx_frames, n);
}
END_TEST

/* [OPC-HDR-2] IP/UDP lengths claiming less than the opcode's headers */
START_TEST(test_rx_short_udp_payload)
{
  struct rct_hdr h;
  uint32_t n;
  struct rct_reth r = { 0x1000, 1, 8 };
  memset(&h, 0, sizeof(h));
  h.bth.opcode = OP_WRITE_ONLY;
  h.bth.psn = E0;
  h.reth = r;
  n = build_frame(buf, A, P, &h, NULL, 0);
  /* rewrite as a 12-byte-extension-less frame: cut the RETH */
  memmove(buf + 54, buf + 54 + 16, 4);
  n -= 16;
  st16(buf + 16, (uint16_t)(n - 14));
  st16(buf + 38, (uint16_t)(n - 34));
  fix(n);
  ck_assert_int_eq(rct_handle_frame(&A->dev, 0, buf, n), RCT_RX_DROPPED);
  ck_assert_uint_eq(A->dev.cnt.rx_truncated, 1);
  unchanged();
}
END_TEST

/* [ICRC-CALC-5] [RX-ORDER-2] a corrupt frame is dropped, counted, and touches no QP */
START_TEST(test_rx_bad_icrc)
{
  uint32_t n = good_frame(10);
  buf[60] ^= 0x40;                                    /* payload bit flip */
  ck_assert_int_eq(rct_handle_frame(&A->dev, 0, buf, n), RCT_RX_DROPPED);
  ck_assert_uint_eq(A->dev.cnt.rx_icrc_err, 1);
  ck_assert_uint_eq(A->qp.base.cnt.rx_frames, 0);
  unchanged();
  n = good_frame(10);
  buf[n - 1] ^= 1;                                    /* ICRC itself */
  ck_assert_int_eq(rct_handle_frame(&A->dev, 0, buf, n), RCT_RX_DROPPED);
  ck_assert_uint_eq(A->dev.cnt.rx_icrc_err, 2);
}
END_TEST

/* [RX-ORDER-1] unknown QP */
START_TEST(test_rx_unknown_qp)
{
  struct rct_hdr h;
  uint32_t n;
  memset(&h, 0, sizeof(h));
  h.bth.opcode = OP_SEND_ONLY;
  h.bth.psn = E0;
  h.bth.dqpn = 0x999;
  n = build_frame(buf, A, P, &h, NULL, 0);
  ck_assert_int_eq(rct_handle_frame(&A->dev, 0, buf, n), RCT_RX_DROPPED);
  ck_assert_uint_eq(A->dev.cnt.rx_unknown_qp, 1);
  unchanged();
}
END_TEST

/* [QP-ERR-3] [QP-STATE-6] a QP in ERR (or RESET) takes nothing */
START_TEST(test_rx_errored_qp)
{
  struct rct_qp_attr a = { .qp_state = RCT_QPS_ERR };
  uint32_t n = good_frame(10);
  rct_qp_modify(&A->qp, &a, RCT_QP_STATE);
  expect_wc(&A->rcq, 1, RCT_WC_WR_FLUSH_ERR);
  ck_assert_int_eq(rct_handle_frame(&A->dev, 0, buf, n), RCT_RX_DROPPED);
  ck_assert_uint_eq(A->qp.base.cnt.rx_bad_state, 1);
  ck_assert_int_eq(inject_ack(A, P, 0, 0x1f, 0x123456, 0), RCT_RX_DROPPED);
  ck_assert_uint_eq(A->qp.base.cnt.rx_bad_state, 2);
  expect_nothing(A, 0);
}
END_TEST

/* [SEC-FORGE-1] [RX-ORDER-1] a frame from another address than the peer */
START_TEST(test_rx_wrong_peer)
{
  struct peer other = *P;
  struct rct_hdr h;
  memset(&h, 0, sizeof(h));
  h.bth.opcode = OP_SEND_ONLY;
  h.bth.psn = E0;
  other.ip = 0x0a000063;
  ck_assert_int_eq(inject(A, &other, 0, &h, NULL, 0), RCT_RX_DROPPED);
  ck_assert_uint_eq(A->qp.base.cnt.rx_wrong_peer, 1);
  unchanged();
}
END_TEST

/* [HDR-BTH-2] TVer other than 0 or a foreign P_Key */
START_TEST(test_rx_bad_tver_pkey)
{
  uint32_t n = good_frame(10);
  buf[43] |= 1;                                       /* TVer 1 */
  fix(n);
  ck_assert_int_eq(rct_handle_frame(&A->dev, 0, buf, n), RCT_RX_DROPPED);
  n = good_frame(10);
  buf[44] = 0x7f;                                     /* P_Key 0x7fff */
  fix(n);
  ck_assert_int_eq(rct_handle_frame(&A->dev, 0, buf, n), RCT_RX_DROPPED);
  ck_assert_uint_eq(A->dev.cnt.rx_bad_header, 2);
  unchanged();
}
END_TEST

/* [OPC-VAL-2] opcodes of other transports (UD 0x66, no UD SEND; UD SENDs to an
 * RC QP: test_ud_opcode_class_checked) */
START_TEST(test_rx_other_transport_opcode)
{
  uint32_t n = good_frame(10);
  buf[42] = 0x66;
  fix(n);
  ck_assert_int_eq(rct_handle_frame(&A->dev, 0, buf, n), RCT_RX_DROPPED);
  ck_assert_uint_eq(A->dev.cnt.rx_bad_opcode, 1);
  unchanged();
}
END_TEST

/* [OPC-LEN-5] an ACK with payload bytes */
START_TEST(test_rx_ack_with_payload)
{
  struct rct_hdr h;
  uint8_t pay[8] = { 0 };
  memset(&h, 0, sizeof(h));
  h.bth.opcode = OP_ACK;
  h.bth.psn = 0x123456;
  h.aeth.syndrome = 0x1f;
  ck_assert_int_eq(inject(A, P, 0, &h, pay, 8), RCT_RX_DROPPED);
  ck_assert_uint_eq(A->qp.base.cnt.rx_bad_length, 1);
}
END_TEST

/* [RX-ORDER-1] not RoCE: ARP, TCP, another UDP port, IPv4 options, fragments, bad checksum, not our IP */
START_TEST(test_rx_not_roce_and_bad_ip)
{
  uint32_t n = good_frame(10);
  uint8_t arp[60] = { 0 };
  st16(arp + 12, 0x0806);
  ck_assert_int_eq(rct_handle_frame(&A->dev, 0, arp, sizeof(arp)), RCT_RX_NOT_ROCE);
  buf[23] = 6;                                        /* TCP */
  fix(n);
  ck_assert_int_eq(rct_handle_frame(&A->dev, 0, buf, n), RCT_RX_NOT_ROCE);
  n = good_frame(10);
  st16(buf + 36, 4792);                               /* other UDP port */
  fix(n);
  ck_assert_int_eq(rct_handle_frame(&A->dev, 0, buf, n), RCT_RX_NOT_ROCE);
  n = good_frame(10);
  buf[20] = 0x20;                                     /* MF: a fragment */
  fix(n);
  ck_assert_int_eq(rct_handle_frame(&A->dev, 0, buf, n), RCT_RX_DROPPED);
  n = good_frame(10);
  buf[24] ^= 1;                                       /* header checksum */
  ck_assert_int_eq(rct_handle_frame(&A->dev, 0, buf, n), RCT_RX_DROPPED);
  n = good_frame(10);
  buf[14] = 0x46;                                     /* options */
  fix(n);
  ck_assert_int_eq(rct_handle_frame(&A->dev, 0, buf, n), RCT_RX_DROPPED);
  n = good_frame(10);
  st32(buf + 30, 0x0a000009);                         /* not our address */
  fix(n);
  ck_assert_int_eq(rct_handle_frame(&A->dev, 0, buf, n), RCT_RX_DROPPED);
  ck_assert_uint_eq(A->dev.cnt.rx_bad_header, 4);
  unchanged();
}
END_TEST

/* [RX-ORDER-1] a frame an IP stack took in (RCT_RX_IP_CHECKED) skips the
 * IPv4 checks the stack made (header checksum, fragment) and still meets
 * the RoCE-only ones: IHL 5, our own address, the UDP length */
START_TEST(test_rx_ip_checked_keeps_roce_checks)
{
  uint32_t n = good_frame(10);
  buf[24] ^= 1;                                       /* header checksum (masked in the ICRC) */
  ck_assert_int_eq(rct_handle_frame(&A->dev, 0, buf, n), RCT_RX_DROPPED);
  ck_assert_int_eq(rct_handle_frame_ex(&A->dev, 0, buf, n, RCT_RX_IP_CHECKED), RCT_RX_OK);
  expect_wc(&A->rcq, 1, RCT_WC_SUCCESS);
  n = good_frame(10);
  buf[14] = 0x46;                                     /* options */
  fix(n);
  ck_assert_int_eq(rct_handle_frame_ex(&A->dev, 0, buf, n, RCT_RX_IP_CHECKED), RCT_RX_DROPPED);
  n = good_frame(10);
  st32(buf + 30, 0xffffffff);                         /* broadcast: a stack takes it, RoCE does not */
  fix(n);
  ck_assert_int_eq(rct_handle_frame_ex(&A->dev, 0, buf, n, RCT_RX_IP_CHECKED), RCT_RX_DROPPED);
  n = good_frame(10);
  st16(buf + 38, ld16(buf + 38) - 4);                 /* UDP length short of Total Length - 20 */
  fix(n);
  ck_assert_int_eq(rct_handle_frame_ex(&A->dev, 0, buf, n, RCT_RX_IP_CHECKED), RCT_RX_DROPPED);
  ck_assert_uint_eq(A->dev.cnt.rx_bad_header, 3);     /* the first, options, broadcast */
  ck_assert_uint_eq(A->dev.cnt.rx_truncated, 1);      /* the UDP length */
}
END_TEST

/* [RX-PARSE-1] [ENC-UDP-3] Ethernet padding after the ICRC is ignored; a UDP checksum is not checked */
START_TEST(test_rx_ethernet_padding_and_udp_csum)
{
  uint32_t n = good_frame(0);
  memset(buf + n, 0xee, 20);
  st16(buf + 40, 0xbeef);                              /* non-zero UDP checksum: masked in the ICRC */
  ck_assert_int_eq(rct_handle_frame(&A->dev, 0, buf, n + 20), RCT_RX_OK);
  expect_wc(&A->rcq, 1, RCT_WC_SUCCESS);
}
END_TEST

/* [SEC-FORGE-4] a forged in-window NAK can at most end the connection */
START_TEST(test_rx_forged_nak_ends_connection_only)
{
  struct host_mr *m = ep_reg_mr(A, 0x10000, 4096, RCT_ACCESS_LOCAL_WRITE);
  struct rct_frame f;
  post_send(A, 5, RCT_WR_SEND, m, 0, 10, 0, 0, 0);
  ck_assert(rct_poll_transmit(&A->qp, 0, &f));
  inject_ack(A, P, 1, AETH_NAK_REM_ACC, 0x123456, 0);
  expect_wc(&A->scq, 5, RCT_WC_REM_ACCESS_ERR);
  ck_assert_int_eq(A->qp.base.attr.qp_state, RCT_QPS_ERR);
  ck_assert(!rct_poll_transmit(&A->qp, 2, &f));
}
END_TEST

/* [RX-ORDER-4] [CNT-QP-1] counters survive RESET and keep counting per frame */
START_TEST(test_rx_counters_kept)
{
  uint32_t n = good_frame(10);
  struct rct_qp_attr a = { .qp_state = RCT_QPS_RESET };
  rct_handle_frame(&A->dev, 0, buf, n);
  rct_handle_frame(&A->dev, 0, buf, n);               /* duplicate */
  ck_assert_uint_eq(A->qp.base.cnt.rx_dup, 1);
  ck_assert_uint_eq(A->qp.base.cnt.rx_frames, 2);
  rct_qp_modify(&A->qp, &a, RCT_QP_STATE);
  ck_assert_uint_eq(A->qp.base.cnt.rx_frames, 2);
  ck_assert_uint_eq(A->qp.base.cnt.rx_dup, 1);
}
END_TEST

/* [ICRC-CALC-1] [ICRC-CALC-5] [RX-ORDER-2] frame_icrc computes the ICRC the
 * core puts on the wire; frame_set_icrc repairs a damaged one; a frame
 * handed over with RCT_RX_TRUSTED (loopback) skips the check, per call. */
START_TEST(test_rx_icrc_api_and_trusted_frames)
{
  uint32_t n = good_frame(16), v;
  struct rct_wc wc;
  ck_assert_int_eq(frame_icrc(buf, n, &v), RCT_OK);
  ck_assert_uint_eq(v, rct_wire_icrc_load(buf + n - 4));
  ck_assert_int_eq(frame_icrc(buf, 20, &v), RCT_EINVAL);
  buf[n - 1] ^= 0xff;                                  /* damaged ICRC */
  ck_assert_int_eq(rct_handle_frame(&A->dev, 0, buf, n), RCT_RX_DROPPED);
  ck_assert_uint_eq(A->dev.cnt.rx_icrc_err, 1);
  unchanged();
  ck_assert_int_eq(rct_handle_frame_ex(&A->dev, 0, buf, n, RCT_RX_TRUSTED), RCT_RX_OK);
  ck_assert_uint_eq(A->dev.cnt.rx_icrc_err, 1);
  ck_assert(cq_pop(&A->rcq, &wc));
  ck_assert_int_eq(wc.status, RCT_WC_SUCCESS);
  ck_assert_uint_eq(wc.solicited, 0);
  ck_assert_int_eq(frame_set_icrc(buf, n), RCT_OK);
  ck_assert_uint_eq(rct_wire_icrc_load(buf + n - 4), v);
}
END_TEST

/* [HDR-BTH-3] [RESP-RECV-4] a receive completion reports BTH.SE of the
 * message's last packet in rct_wc.solicited; wc_flags keeps libibverbs'
 * meanings only (bit 4 is IBV_WC_IP_CSUM_OK there), so a SEND without
 * immediate has none */
START_TEST(test_rx_solicited_flag)
{
  struct rct_hdr h;
  struct rct_wc wc;
  uint8_t pay[8] = { 0 };
  post_recv(A, 2, R, 4096, 4096);
  memset(&h, 0, sizeof(h));
  h.bth.opcode = OP_SEND_ONLY;
  h.bth.psn = E0;
  h.bth.se = 1;
  inject(A, P, 0, &h, pay, 8);
  ck_assert(cq_pop(&A->rcq, &wc));
  ck_assert_uint_eq(wc.wr_id, 1);
  ck_assert_uint_eq(wc.solicited, 1);
  ck_assert_uint_eq(wc.wc_flags, 0);
  h.bth.psn = E0 + 1;
  h.bth.se = 0;
  inject(A, P, 0, &h, pay, 8);
  ck_assert(cq_pop(&A->rcq, &wc));
  ck_assert_uint_eq(wc.wr_id, 2);
  ck_assert_uint_eq(wc.solicited, 0);
  ck_assert_uint_eq(wc.wc_flags, 0);
}
END_TEST

Suite *suite_rx(void)
{
  Suite *s = suite_create("rx");
  TCase *t = tcase_create("validation");
  tcase_add_checked_fixture(t, setup, fx_teardown);
  tcase_add_test(t, test_rx_good_frame_accepted);
  tcase_add_test(t, test_rx_truncated_headers);
  tcase_add_test(t, test_rx_short_udp_payload);
  tcase_add_test(t, test_rx_bad_icrc);
  tcase_add_test(t, test_rx_unknown_qp);
  tcase_add_test(t, test_rx_errored_qp);
  tcase_add_test(t, test_rx_wrong_peer);
  tcase_add_test(t, test_rx_bad_tver_pkey);
  tcase_add_test(t, test_rx_other_transport_opcode);
  tcase_add_test(t, test_rx_ack_with_payload);
  tcase_add_test(t, test_rx_not_roce_and_bad_ip);
  tcase_add_test(t, test_rx_ip_checked_keeps_roce_checks);
  tcase_add_test(t, test_rx_ethernet_padding_and_udp_csum);
  tcase_add_test(t, test_rx_forged_nak_ends_connection_only);
  tcase_add_test(t, test_rx_counters_kept);
  tcase_add_test(t, test_rx_icrc_api_and_trusted_frames);
  tcase_add_test(t, test_rx_solicited_flag);
  suite_add_tcase(s, t);
  return s;
}
