/*
 * test_cm.c: the connection-exchange codec (cm.c) against cm.md.
 */
#include "harness.h"
#include "rct_cm.h"

static struct rct_cm_msg req(void)
{
  struct rct_cm_msg m;
  memset(&m, 0, sizeof(m));
  m.type = RCT_CM_REQ;
  m.src_conn_id = 0x01020304;
  m.qpn = 0x123456;
  m.start_psn = 0xfffffe;
  m.path_mtu = RCT_MTU_1024;
  m.caps = RCT_CM_CAP_SR;
  m.responder_resources = 4;
  m.initiator_depth = 16;
  rct_cm_gid_from_ipv4(m.gid, IP_A);
  memcpy(m.mac, MAC_A, 6);
  m.private_len = 16;
  for (int i = 0; i < 16; i++)
    m.private_data[i] = (uint8_t)i;
  return m;
}

/* [CM-MSG-1] [CM-MSG-2] REQ layout and round trip */
START_TEST(test_cm_req_layout_roundtrip)
{
  struct rct_cm_msg m = req(), back;
  uint8_t buf[200];
  int n = rct_cm_encode(&m, buf, sizeof(buf));
  ck_assert_int_eq(n, 108);
  ck_assert_uint_eq(ld16(buf), 0x7872);
  ck_assert_uint_eq(buf[2], 1);
  ck_assert_uint_eq(buf[3], 1);
  ck_assert_uint_eq(ld32(buf + 4), 0x01020304);
  ck_assert_uint_eq(ld32(buf + 8), 0);
  ck_assert_uint_eq(ld32(buf + 12), 0x123456);
  ck_assert_uint_eq(ld32(buf + 16), 0xfffffe);
  ck_assert_uint_eq(buf[20], 3);
  ck_assert_uint_eq(buf[21], 1);                       /* [SR-NEG-1] CAP_SR */
  ck_assert_uint_eq(buf[22], 4);
  ck_assert_uint_eq(buf[23], 16);
  ck_assert_uint_eq(buf[28 + 10], 0xff);
  ck_assert_uint_eq(ld32(buf + 28 + 12), IP_A);
  ck_assert_int_eq(memcmp(buf + 44, MAC_A, 6), 0);
  ck_assert_uint_eq(buf[50], 16);
  ck_assert_uint_eq(buf[52 + 15], 15);
  ck_assert_uint_eq(buf[52 + 16], 0);
  ck_assert_int_eq(rct_cm_parse(&back, buf, (size_t)n), RCT_OK);
  ck_assert_uint_eq(back.qpn, m.qpn);
  ck_assert_uint_eq(back.start_psn, m.start_psn);
  ck_assert_uint_eq(back.caps, m.caps);
  ck_assert_int_eq(memcmp(back.private_data, m.private_data, 16), 0);
  ck_assert_int_eq(rct_cm_encode(&m, buf, 100), RCT_ETRUNC);
}
END_TEST

/* [CM-MSG-2] wrong lengths, magic, reserved bits are dropped */
START_TEST(test_cm_malformed_dropped)
{
  struct rct_cm_msg m = req(), back;
  uint8_t buf[200];
  int n = rct_cm_encode(&m, buf, sizeof(buf));
  ck_assert_int_eq(rct_cm_parse(&back, buf, (size_t)n - 1), RCT_EINVAL);
  ck_assert_int_eq(rct_cm_parse(&back, buf, 11), RCT_EINVAL);
  buf[0] ^= 1;
  ck_assert_int_eq(rct_cm_parse(&back, buf, (size_t)n), RCT_EINVAL);
  buf[0] ^= 1;
  buf[21] |= 2;
  ck_assert_int_eq(rct_cm_parse(&back, buf, (size_t)n), RCT_EINVAL);
  buf[21] &= 1;
  buf[3] = 9;
  ck_assert_int_eq(rct_cm_parse(&back, buf, (size_t)n), RCT_EINVAL);
}
END_TEST

/* [CM-MSG-4] invalid parameters and versions are answered with REJ reasons */
START_TEST(test_cm_invalid_param_and_version)
{
  struct rct_cm_msg m = req(), back;
  uint8_t buf[200];
  int n = rct_cm_encode(&m, buf, sizeof(buf));
  buf[20] = 6;
  ck_assert_int_eq(rct_cm_parse(&back, buf, (size_t)n), RCT_CM_REJ_INVALID_PARAM);
  buf[20] = 3;
  buf[12] = 1;                                         /* qpn >= 2^24 */
  ck_assert_int_eq(rct_cm_parse(&back, buf, (size_t)n), RCT_CM_REJ_INVALID_PARAM);
  buf[12] = 0;
  buf[22] = 17;
  ck_assert_int_eq(rct_cm_parse(&back, buf, (size_t)n), RCT_CM_REJ_INVALID_PARAM);
  buf[22] = 4;
  buf[50] = 57;
  ck_assert_int_eq(rct_cm_parse(&back, buf, (size_t)n), RCT_CM_REJ_INVALID_PARAM);
  buf[50] = 16;
  buf[2] = 2;
  ck_assert_int_eq(rct_cm_parse(&back, buf, (size_t)n), RCT_CM_REJ_UNSUPPORTED_VERSION);
  ck_assert_uint_eq(back.src_conn_id, 0x01020304);
  m.type = RCT_CM_RTU;
  n = rct_cm_encode(&m, buf, sizeof(buf));
  buf[2] = 2;
  ck_assert_int_eq(rct_cm_parse(&back, buf, (size_t)n), RCT_EINVAL);
}
END_TEST

/* [CM-MSG-7] REJ and the short messages */
START_TEST(test_cm_rej_rtu_dreq_drep)
{
  struct rct_cm_msg m, back;
  uint8_t buf[200];
  int n;
  memset(&m, 0, sizeof(m));
  m.type = RCT_CM_REJ;
  m.src_conn_id = 0;
  m.dst_conn_id = 77;
  m.reject_reason = RCT_CM_REJ_NO_LISTENER;
  m.private_len = 3;
  n = rct_cm_encode(&m, buf, sizeof(buf));
  ck_assert_int_eq(n, 72);
  ck_assert_uint_eq(ld16(buf + 12), 2);
  ck_assert_int_eq(rct_cm_parse(&back, buf, (size_t)n), RCT_OK);
  ck_assert_uint_eq(back.reject_reason, 2);
  ck_assert_uint_eq(back.dst_conn_id, 77);
  for (int t = RCT_CM_RTU; t <= RCT_CM_DREP; t++) {
    m.type = (enum rct_cm_type)t;
    n = rct_cm_encode(&m, buf, sizeof(buf));
    ck_assert_int_eq(n, 12);
    ck_assert_int_eq(rct_cm_parse(&back, buf, (size_t)n), RCT_OK);
    ck_assert_int_eq(back.type, t);
  }
}
END_TEST

/* [CM-PARAM-1] [CM-PARAM-2] [CM-PARAM-3] [SR-NEG-1] QP attributes from REQ and REP */
START_TEST(test_cm_parameters_to_qp)
{
  struct rct_cm_msg r = req(), p = req();
  struct rct_qp_attr a;
  uint32_t m1, m2;
  p.type = RCT_CM_REP;
  p.qpn = 0x777;
  p.start_psn = 0x10;
  p.path_mtu = RCT_MTU_512;
  p.responder_resources = 2;
  p.initiator_depth = 1;
  p.caps = 0;
  rct_cm_gid_from_ipv4(p.gid, IP_B);
  memcpy(p.mac, MAC_B, 6);
  memset(&a, 0, sizeof(a));
  ck_assert_int_eq(rct_cm_qp_attr(&r, &p, &a, &m1, &m2), RCT_OK);
  ck_assert_int_eq(a.path_mtu, RCT_MTU_512);
  ck_assert_uint_eq(a.max_rd_atomic, 2);          /* min(16, 2) */
  ck_assert_uint_eq(a.max_dest_rd_atomic, 4);
  ck_assert_uint_eq(a.dest_qp_num, 0x777);
  ck_assert_uint_eq(a.rq_psn, 0x10);
  ck_assert_uint_eq(a.sq_psn, 0xfffffe);
  ck_assert_uint_eq(a.ah.dipv4, IP_B);
  ck_assert_int_eq(memcmp(a.ah.dmac, MAC_B, 6), 0);
  ck_assert(!a.sr_enable);                        /* the REP did not set CAP_SR */
  p.caps = RCT_CM_CAP_SR;
  rct_cm_qp_attr(&r, &p, &a, &m1, &m2);
  ck_assert(a.sr_enable);
  /* the masks drive a real QP to RTS */
  {
    struct ep e;
    ep_init(&e, MAC_A, IP_A, QPN_A, 0);
    a.qp_state = RCT_QPS_INIT;
    a.qp_access_flags = RCT_ACCESS_REMOTE_WRITE;
    a.port_num = RCT_PORT_NUM;
    ck_assert_int_eq(rct_qp_modify(&e.qp, &a, RCT_QP_STATE | RCT_QP_ACCESS_FLAGS | RCT_QP_PKEY_INDEX | RCT_QP_PORT), RCT_OK);
    a.qp_state = RCT_QPS_RTR;
    a.min_rnr_timer = 12;
    ck_assert_int_eq(rct_qp_modify(&e.qp, &a, m1), RCT_OK);
    a.qp_state = RCT_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    ck_assert_int_eq(rct_qp_modify(&e.qp, &a, m2), RCT_OK);
    ck_assert(e.qp.sr);
    ep_free(&e);
  }
  p.gid[0] = 1;
  ck_assert_int_eq(rct_cm_qp_attr(&r, &p, &a, &m1, &m2), RCT_EINVAL);
}
END_TEST

Suite *suite_cm(void)
{
  Suite *s = suite_create("cm");
  TCase *t = tcase_create("codec");
  tcase_add_test(t, test_cm_req_layout_roundtrip);
  tcase_add_test(t, test_cm_malformed_dropped);
  tcase_add_test(t, test_cm_invalid_param_and_version);
  tcase_add_test(t, test_cm_rej_rtu_dreq_drep);
  tcase_add_test(t, test_cm_parameters_to_qp);
  suite_add_tcase(s, t);
  return s;
}
