/*
 * test_opcode.c: the opcode table (opcode.c) against opcodes.md.
 */
#include "harness.h"

/* [OPC-VAL-1] [OPC-HDR-1]  header lengths per opcode */
START_TEST(test_opcode_header_lengths)
{
  static const struct { uint8_t op; uint8_t ext; } t[] = {
    { 0x00, 0 }, { 0x01, 0 }, { 0x02, 0 }, { 0x03, 4 }, { 0x04, 0 }, { 0x05, 4 },
    { 0x06, 16 }, { 0x07, 0 }, { 0x08, 0 }, { 0x09, 4 }, { 0x0a, 16 }, { 0x0b, 20 },
    { 0x0c, 16 }, { 0x0d, 4 }, { 0x0e, 0 }, { 0x0f, 4 }, { 0x10, 4 }, { 0x11, 4 },
    { 0x12, 12 }, { 0x13, 28 }, { 0x14, 28 },          /* [HDR-ATOM-1] [HDR-ATOM-2] */
  };
  for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
    ck_assert_msg(op_flags(t[i].op) & OPF_SUPPORTED, "op %x", t[i].op);
    ck_assert_uint_eq(rct_opcode_table[t[i].op].ext_len, t[i].ext);
    ck_assert_uint_eq(rct_wire_hdr_len(RCT_ENCAP_V2, t[i].op), 54u + t[i].ext);
  }
}
END_TEST

/* [OPC-VAL-1] [OPC-VAL-2] RC 0x15..0x1f (reserved, SEND with invalidate) and
 * other transports are not supported, but for the UD SENDs [UD-WIRE-1] */
START_TEST(test_opcode_unsupported)
{
  for (int op = 0x15; op <= 0x1f; op++)
    ck_assert(!(op_flags((uint8_t)op) & OPF_SUPPORTED));
  for (int op = 0x20; op < 0xc0; op++)
    if (op != OP_UD_SEND_ONLY && op != OP_UD_SEND_ONLY_IMM)
      ck_assert(!(op_flags((uint8_t)op) & OPF_VALID));
  ck_assert_uint_eq(op_flags(OP_UD_SEND_ONLY) & (OPF_UD | OPF_ONLY | OPF_IMM), OPF_UD | OPF_ONLY);
  ck_assert_uint_eq(op_flags(OP_UD_SEND_ONLY_IMM) & (OPF_UD | OPF_ONLY | OPF_IMM), OPF_UD | OPF_ONLY | OPF_IMM);
  ck_assert_uint_eq(rct_wire_hdr_len(RCT_ENCAP_V2, OP_UD_SEND_ONLY_IMM), 54u + DETH_LEN + IMMDT_LEN);
}
END_TEST

/* [OPC-TAB-2] which opcodes consume a receive WQE */
START_TEST(test_opcode_consumes_receive)
{
  for (int op = 0; op <= 0x11; op++) {
    bool want = op <= 0x05 || op == 0x09 || op == 0x0b;
    ck_assert_msg(!!(op_flags((uint8_t)op) & OPF_RECV) == want, "op %x", op);
  }
}
END_TEST

/* [OPC-SEQ-1] [OPC-SEQ-5] FIRST/MIDDLE/LAST/ONLY classification */
START_TEST(test_opcode_positions)
{
  ck_assert_uint_eq(op_flags(OP_SEND_ONLY) & OPF_ONLY, OPF_ONLY);
  ck_assert_uint_eq(op_flags(OP_READ_RESP_ONLY) & OPF_ONLY, OPF_ONLY);
  ck_assert(op_flags(OP_WRITE_MIDDLE) & OPF_MIDDLE);
  ck_assert(op_flags(OP_READ_RESP_LAST) & OPF_LAST);
  ck_assert(!(op_flags(OP_READ_RESP_MIDDLE) & OPF_AETH));
  ck_assert_str_eq(rct_opcode_name(0x0c), "RDMA_READ_REQUEST");
}
END_TEST

/* [SR-WIRE-1] SR opcodes mirror the RC ones with the SRXH first */
START_TEST(test_opcode_sr_variants)
{
  for (int op = 0; op <= 0x0c; op++) {
    uint32_t f = op_flags((uint8_t)op), g = op_flags((uint8_t)(0xc0 | op));
    ck_assert(g & OPF_SR);
    ck_assert(g & OPF_SRXH);
    ck_assert_uint_eq(f & (OPF_FIRST | OPF_MIDDLE | OPF_LAST | OPF_IMM | OPF_RECV),
                      g & (OPF_FIRST | OPF_MIDDLE | OPF_LAST | OPF_IMM | OPF_RECV));
    if (f & OPF_WRITE)
      ck_assert(g & OPF_RETH);    /* [SR-WIRE-4] */
  }
  ck_assert(op_flags(OP_SR_SACK) & OPF_SACKH);
}
END_TEST

/* [WC-STATUS-2] one syndrome table: kind, name, status and counters of every syndrome */
START_TEST(test_opcode_syndrome_table)
{
  static const struct { uint8_t syn; uint8_t kind; const char *name; enum rct_wc_status st; } rows[] = {
    { 0x1f, SYN_ACK, "ACK", RCT_WC_SUCCESS },
    { 0x2c, SYN_RNR_NAK, "RNR_NAK", RCT_WC_RNR_RETRY_EXC_ERR },
    { 0x60, SYN_NAK_SEQ, "NAK_PSN_SEQ_ERR", RCT_WC_SUCCESS },
    { 0x61, SYN_NAK_FATAL, "NAK_INVALID_REQUEST", RCT_WC_REM_INV_REQ_ERR },
    { 0x62, SYN_NAK_FATAL, "NAK_REMOTE_ACCESS", RCT_WC_REM_ACCESS_ERR },
    { 0x63, SYN_NAK_FATAL, "NAK_REMOTE_OP", RCT_WC_REM_OP_ERR },
    { 0x64, SYN_NAK_FATAL, "NAK_INVALID_RD_REQUEST", RCT_WC_GENERAL_ERR },
    { 0x65, SYN_RESERVED, "NAK_RESERVED", RCT_WC_SUCCESS },
    { 0x40, SYN_RESERVED, "RESERVED", RCT_WC_SUCCESS },
    { 0xe0, SYN_RESERVED, "RESERVED", RCT_WC_SUCCESS },
  };
  struct rct_qp_counters c;
  for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
    const struct rct_syndrome_info *si = rct_syndrome_info(rows[i].syn);
    ck_assert_uint_eq(si->kind, rows[i].kind);
    ck_assert_str_eq(si->name, rows[i].name);
    ck_assert_str_eq(rct_syndrome_name(rows[i].syn), rows[i].name);
    ck_assert_uint_eq(si->status, rows[i].st);
  }
  memset(&c, 0, sizeof(c));
  rct_cnt_bump(&c, rct_syndrome_info(AETH_NAK_REM_ACC)->rx_cnt);
  rct_cnt_bump(&c, rct_syndrome_info(AETH_RNR_NAK | 3)->tx_cnt);
  rct_cnt_bump(&c, rct_syndrome_info(0x65)->rx_cnt);                /* reserved: none */
  ck_assert_uint_eq(c.rx_nak_acc, 1);
  ck_assert_uint_eq(c.tx_rnr_nak, 1);
  ck_assert_uint_eq(c.rx_nak_acc + c.tx_rnr_nak, 2);
  ck_assert_uint_eq(c.rx_bad_aeth + c.rx_nak_seq + c.tx_nak_acc, 0);
}
END_TEST

Suite *suite_opcode(void)
{
  Suite *s = suite_create("opcode");
  TCase *t = tcase_create("table");
  tcase_add_test(t, test_opcode_header_lengths);
  tcase_add_test(t, test_opcode_unsupported);
  tcase_add_test(t, test_opcode_consumes_receive);
  tcase_add_test(t, test_opcode_positions);
  tcase_add_test(t, test_opcode_sr_variants);
  tcase_add_test(t, test_opcode_syndrome_table);
  suite_add_tcase(s, t);
  return s;
}
