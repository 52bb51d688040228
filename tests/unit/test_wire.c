/*
 * test_wire.c: the frame codec and the ICRC (wire.c, icrc.c).
 */
#include "harness.h"

static uint32_t sample(uint8_t *buf, uint8_t opcode, uint32_t paylen, enum rct_encap encap)
{
  struct rct_hdr h;
  uint8_t pay[64];
  uint8_t zeros[4] = { 0 };
  struct rct_iov seg = { pay, paylen };
  uint32_t hl, pad;
  memset(&h, 0, sizeof(h));
  memset(pay, 0x5c, sizeof(pay));
  h.encap = encap;
  memcpy(h.dmac, MAC_B, 6);
  memcpy(h.smac, MAC_A, 6);
  h.sip = IP_A;
  h.dip = IP_B;
  h.ip_id = 0x1234;
  h.sport = 0xc121;
  h.bth.opcode = opcode;
  h.bth.pkey = 0xffff;
  h.bth.dqpn = 0x11;
  h.bth.psn = 0xabcdef;
  h.reth.va = 0x1122334455667788ull;
  h.reth.rkey = 0xaabbccdd;
  h.reth.dmalen = 3;
  hl = rct_wire_build(buf, &h, paylen);
  pad = h.bth.padcnt;
  memcpy(buf + hl, pay, paylen);
  memset(buf + hl + paylen, 0, pad);
  rct_wire_icrc_store(buf + hl + paylen + pad, rct_icrc_compute(buf, hl, ETH_HLEN, encap, &seg, 1, zeros, pad));
  return hl + paylen + pad + 4;
}

/* [ICRC-CALC-1] the CRC is zlib's crc32 */
START_TEST(test_wire_crc32_check_value)
{
  const char *s = "123456789";
  ck_assert_uint_eq(~rct_crc32_update(0xffffffffu, (const uint8_t *)s, 9), 0xcbf43926u);
  /* slice-by-8 equals bytewise for every length and alignment */
  {
    uint8_t b[100];
    for (int i = 0; i < 100; i++)
      b[i] = (uint8_t)(i * 13 + 1);
    for (int off = 0; off < 8; off++)
      for (int n = 0; n + off <= 100; n++) {
        uint32_t a = rct_crc32_update(0xffffffffu, b + off, (size_t)n), c = 0xffffffffu;
        for (int k = 0; k < n; k++)
          c = rct_crc32_update(c, b + off + k, 1);
        ck_assert_uint_eq(a, c);
      }
  }
}
END_TEST

/* [ICRC-CALC-1] [ICRC-CALC-3] [ICRC-CALC-5] masked fields do not change the ICRC, others do */
START_TEST(test_wire_icrc_masks)
{
  uint8_t buf[256];
  struct rct_pkt p;
  uint32_t n = sample(buf, OP_WRITE_ONLY, 3, RCT_ENCAP_V2);
  static const int masked[] = { 14 + 1, 14 + 8, 14 + 10, 14 + 11, 34 + 6, 34 + 7, 42 + 4 };
  ck_assert_int_eq(rct_wire_parse_base(&p, buf, n, false), RCT_PARSE_OK);
  ck_assert(rct_wire_icrc_ok(&p));
  for (size_t i = 0; i < sizeof(masked) / sizeof(masked[0]); i++) {
    buf[masked[i]] ^= 0x5a;
    ck_assert(rct_wire_icrc_ok(&p));
    buf[masked[i]] ^= 0x5a;
  }
  for (uint32_t i = 14; i < n - 4; i++) {
    bool m = false;
    for (size_t k = 0; k < sizeof(masked) / sizeof(masked[0]); k++)
      m |= masked[k] == (int)i;
    if (m)
      continue;
    buf[i] ^= 1;
    ck_assert_msg(!rct_wire_icrc_ok(&p), "byte %u not covered", i);
    buf[i] ^= 1;
  }
  /* least significant byte first */
  ck_assert_uint_eq(buf[n - 4], p.icrc & 0xff);
}
END_TEST

/* [HDR-BTH-4] [OPC-LEN-2] pad count and payload length */
START_TEST(test_wire_pad_and_lengths)
{
  uint8_t buf[256];
  struct rct_pkt p;
  for (uint32_t len = 0; len < 9; len++) {
    uint32_t n = sample(buf, OP_SEND_ONLY, len, RCT_ENCAP_V2);
    ck_assert_int_eq(rct_wire_parse_base(&p, buf, n, false), RCT_PARSE_OK);
    ck_assert_int_eq(rct_wire_parse_ext(&p), RCT_PARSE_OK);
    ck_assert_uint_eq(p.h.bth.padcnt, (4 - len % 4) % 4);
    ck_assert_uint_eq(p.paylen, len);
    ck_assert_uint_eq((p.paylen + p.h.bth.padcnt) % 4, 0);
    ck_assert_uint_eq(p.udp_len, 8 + 12 + len + p.h.bth.padcnt + 4);    /* [ENC-UDP-1] */
  }
}
END_TEST

/* [HDR-BTH-1] [HDR-RETH-1] [HDR-AETH-1] [ENC-IP-1] field layout round trip */
START_TEST(test_wire_field_layout)
{
  uint8_t buf[256];
  struct rct_pkt p;
  uint32_t n = sample(buf, OP_WRITE_ONLY, 3, RCT_ENCAP_V2);
  ck_assert_uint_eq(buf[42], OP_WRITE_ONLY);
  ck_assert_uint_eq(buf[42 + 1] & 0x30, 0x10);         /* PadCnt 1 */
  ck_assert_uint_eq(buf[42 + 5], 0x00);
  ck_assert_uint_eq(buf[42 + 7], 0x11);
  ck_assert_uint_eq(buf[42 + 9], 0xab);
  ck_assert_uint_eq(buf[54], 0x11);                    /* VA big-endian */
  ck_assert_uint_eq(buf[54 + 8], 0xaa);
  ck_assert_uint_eq(buf[54 + 15], 3);
  ck_assert_uint_eq(buf[14], 0x45);
  ck_assert_uint_eq(buf[14 + 6], 0x40);                /* DF */
  ck_assert_uint_eq(buf[14 + 8], 64);
  ck_assert_uint_eq(buf[14 + 9], 17);
  ck_assert_uint_eq(rct_wire_ipv4_csum(buf + 14), ld16(buf + 14 + 10));
  ck_assert_int_eq(rct_wire_parse_base(&p, buf, n, false), RCT_PARSE_OK);
  ck_assert_int_eq(rct_wire_parse_ext(&p), RCT_PARSE_OK);
  ck_assert_uint_eq(p.h.reth.va, 0x1122334455667788ull);
  ck_assert_uint_eq(p.h.reth.rkey, 0xaabbccdd);
  ck_assert_uint_eq(p.h.bth.psn, 0xabcdef);
}
END_TEST

/* [ENC-V1-1] [ICRC-CALC-4] RoCE v1: GRH instead of IPv4/UDP */
START_TEST(test_wire_roce_v1)
{
  uint8_t buf[256];
  struct rct_pkt p;
  uint32_t n = sample(buf, OP_SEND_ONLY, 5, RCT_ENCAP_V1);
  ck_assert_uint_eq(ld16(buf + 12), 0x8915);
  ck_assert_uint_eq(buf[14] >> 4, 6);
  ck_assert_uint_eq(buf[14 + 6], 0x1b);
  ck_assert_uint_eq(ld16(buf + 14 + 4), 12 + 5 + 3 + 4);
  ck_assert_int_eq(rct_wire_parse_base(&p, buf, n, false), RCT_PARSE_NOT_ROCE);
  ck_assert_int_eq(rct_wire_parse_base(&p, buf, n, true), RCT_PARSE_OK);
  ck_assert(rct_wire_icrc_ok(&p));
  buf[14 + 7] = 3;                                     /* hop limit is masked */
  buf[14 + 1] ^= 0xff;                                 /* traffic class / flow label too */
  ck_assert(rct_wire_icrc_ok(&p));
  ck_assert_int_eq(rct_wire_parse_ext(&p), RCT_PARSE_OK);
  ck_assert_uint_eq(p.paylen, 5);
  ck_assert_uint_eq(p.h.sip, IP_A);
}
END_TEST

/* [ENC-V1-3] a QP in v1 mode talks v1 end to end */
START_TEST(test_wire_roce_v1_endpoints)
{
  static struct ep a, b;
  struct conn_opts o;
  struct link l;
  struct host_mr *src, *dst;
  struct rct_frame f;
  uint8_t buf[8192];
  int n;
  ep_init(&a, MAC_A, IP_A, QPN_A, RCT_DEV_ROCE_V1);
  ep_init(&b, MAC_B, IP_B, QPN_B, RCT_DEV_ROCE_V1);
  conn_defaults(&o);
  ep_connect(&a, MAC_B, IP_B, QPN_B, o.b_psn, o.a_psn, &o);
  ep_connect(&b, MAC_A, IP_A, QPN_A, o.a_psn, o.b_psn, &o);
  a.qp.base.encap = b.qp.base.encap = RCT_ENCAP_V1;      /* as if ah.roce_v1 had been set at RTR */
  src = ep_reg_mr(&a, 0x1000, 4096, RCT_ACCESS_LOCAL_WRITE);
  dst = ep_reg_mr(&b, 0x1000, 4096, RCT_ACCESS_REMOTE_WRITE);
  post_send(&a, 1, RCT_WR_RDMA_WRITE, src, 0, 2000, 0x1000, dst->rkey, 0);
  ck_assert(rct_poll_transmit(&a.qp, 0, &f));
  n = rct_frame_linearize(&f, buf, sizeof(buf));
  ck_assert_uint_eq(ld16(buf + 12), 0x8915);
  ck_assert_int_eq(rct_handle_frame(&b.dev, 0, buf, (size_t)n), RCT_RX_OK);
  b.qp.base.encap = RCT_ENCAP_V2;                   /* a v2 QP drops v1 frames */
  ck_assert_int_eq(rct_handle_frame(&b.dev, 0, buf, (size_t)n), RCT_RX_DROPPED);
  ck_assert_uint_eq(b.qp.base.cnt.rx_wrong_encap, 1);
  b.allow_bad_frames = true;
  b.qp.base.encap = RCT_ENCAP_V1;
  link_init(&l);
  (void)l;
  ep_free(&a);
  ep_free(&b);
}
END_TEST

static uint16_t iface_id;

static uint16_t iface_next_id(void *ctx)
{
  (void)ctx;
  return iface_id++;
}

/* [ENC-IP-2] with next_ip_id set, every IPv4 frame takes its Identification
 * from the interface's counter (the core's own stays untouched); a v1 frame
 * has no IPv4 header and takes none. The frame names its destination. */
START_TEST(test_wire_ip_id_from_interface)
{
  static struct ep a;
  struct conn_opts o;
  struct host_mr *m;
  struct rct_frame f;
  uint8_t buf[256];
  ep_init(&a, MAC_A, IP_A, QPN_A, RCT_DEV_ROCE_V1);
  a.dev.attr.next_ip_id = iface_next_id;
  iface_id = 0x7000;
  conn_defaults(&o);
  ep_connect(&a, MAC_B, IP_B, QPN_B, o.b_psn, o.a_psn, &o);
  m = ep_reg_mr(&a, 0x1000, 4096, RCT_ACCESS_LOCAL_WRITE);
  for (uint16_t id = 0x7000; id < 0x7002; id++) {
    post_send(&a, id, RCT_WR_SEND, m, 0, 16, 0, 0, 0);
    ck_assert(rct_poll_transmit(&a.qp, 0, &f));
    ck_assert_int_gt(rct_frame_linearize(&f, buf, sizeof(buf)), 0);
    ck_assert_uint_eq(ld16(buf + ETH_HLEN + 4), id);
    ck_assert_uint_eq(f.dipv4, IP_B);
  }
  ck_assert_uint_eq(a.dev.ip_id, 0);
  a.qp.base.encap = RCT_ENCAP_V1;
  post_send(&a, 3, RCT_WR_SEND, m, 0, 16, 0, 0, 0);
  ck_assert(rct_poll_transmit(&a.qp, 0, &f));
  ck_assert_uint_eq(f.dipv4, IP_B);
  ck_assert_uint_eq(iface_id, 0x7002);
  ep_free(&a);
}
END_TEST

/* [ENC-UDP-2] the source port formula */
START_TEST(test_wire_udp_sport)
{
  ck_assert_uint_eq(rct_udp_sport(0x11, 0x11), 0xc121);
  ck_assert_uint_eq(rct_udp_sport(0x12, 0x34), rct_udp_sport(0x34, 0x12));
  for (uint32_t q = 2; q < 5000; q += 37)
    ck_assert_uint_ge(rct_udp_sport(q, q * 3 + 1), 0xc000);
}
END_TEST

/* rct_frame_linearize refuses a short buffer */
START_TEST(test_wire_linearize_bounds)
{
  struct ep e;
  struct conn_opts o;
  struct rct_frame f;
  uint8_t buf[64];
  struct host_mr *m;
  ep_init(&e, MAC_A, IP_A, QPN_A, 0);
  conn_defaults(&o);
  ep_connect(&e, MAC_B, IP_B, QPN_B, 1, 1, &o);
  m = ep_reg_mr(&e, 0x1000, 8192, RCT_ACCESS_LOCAL_WRITE);
  post_send(&e, 1, RCT_WR_SEND, m, 4000, 1000, 0, 0, 0);    /* crosses a page: 2 segments */
  ck_assert(rct_poll_transmit(&e.qp, 0, &f));
  ck_assert_uint_eq(f.nseg, 2);
  ck_assert_ptr_eq(f.seg[0].base, m->buf + 4000);           /* zero copy: points into the MR */
  ck_assert_int_eq(rct_frame_linearize(&f, buf, sizeof(buf)), RCT_ETRUNC);
  ep_free(&e);
}
END_TEST

/* ICRC offload: nothing computed on send, nothing checked on receive */
START_TEST(test_wire_icrc_offload)
{
  struct ep a, b;
  struct conn_opts o;
  struct rct_frame f;
  uint8_t buf[8192];
  struct host_mr *m, *r;
  int n;
  ep_init(&a, MAC_A, IP_A, QPN_A, RCT_DEV_ICRC_OFFLOAD);
  ep_init(&b, MAC_B, IP_B, QPN_B, RCT_DEV_ICRC_OFFLOAD);
  conn_defaults(&o);
  pair_connect(&a, &b, &o);
  m = ep_reg_mr(&a, 0x1000, 4096, RCT_ACCESS_LOCAL_WRITE);
  r = ep_reg_mr(&b, 0x1000, 4096, RCT_ACCESS_LOCAL_WRITE);
  post_recv(&b, 5, r, 0, 4096);
  post_send(&a, 1, RCT_WR_SEND, m, 0, 100, 0, 0, 0);
  ck_assert(rct_poll_transmit(&a.qp, 0, &f));
  n = rct_frame_linearize(&f, buf, sizeof(buf));
  ck_assert_uint_eq(ld32(buf + n - 4), 0);
  ck_assert_int_eq(rct_handle_frame(&b.dev, 0, buf, (size_t)n), RCT_RX_OK);
  expect_wc(&b.rcq, 5, RCT_WC_SUCCESS);
  ep_free(&a);
  ep_free(&b);
}
END_TEST

Suite *suite_wire(void)
{
  Suite *s = suite_create("wire");
  TCase *t = tcase_create("codec");
  tcase_add_test(t, test_wire_crc32_check_value);
  tcase_add_test(t, test_wire_icrc_masks);
  tcase_add_test(t, test_wire_pad_and_lengths);
  tcase_add_test(t, test_wire_field_layout);
  tcase_add_test(t, test_wire_roce_v1);
  tcase_add_test(t, test_wire_roce_v1_endpoints);
  tcase_add_test(t, test_wire_ip_id_from_interface);
  tcase_add_test(t, test_wire_udp_sport);
  tcase_add_test(t, test_wire_linearize_bounds);
  tcase_add_test(t, test_wire_icrc_offload);
  suite_add_tcase(s, t);
  return s;
}
