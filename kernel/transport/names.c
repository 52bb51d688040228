/*
 * names.c: name tables for tracing (QP states, role states, WC status,
 * WR opcodes, AETH syndromes) and the IBTA timer tables. Opcode names live
 * in the opcode table (opcode.c).
 */
#include "core_int.h"

#define NAME(tab, i) (((size_t)(i) < sizeof(tab) / sizeof(tab[0]) && tab[i]) ? tab[i] : "?")

const char *rct_qp_state_name(enum rct_qp_state s)
{
  static const char *const t[] = { [RCT_QPS_RESET] = "RESET", [RCT_QPS_INIT] = "INIT",
    [RCT_QPS_RTR] = "RTR", [RCT_QPS_RTS] = "RTS", [RCT_QPS_SQD] = "SQD",
    [RCT_QPS_SQE] = "SQE", [RCT_QPS_ERR] = "ERR" };
  return NAME(t, s);
}

const char *rct_opcode_name(uint8_t op)
{
  const char *n = rct_opcode_table[op].name;
  return n ? n : "?";
}

const char *rct_wc_status_name(enum rct_wc_status s)
{
  static const char *const t[] = {
    [RCT_WC_SUCCESS] = "SUCCESS", [RCT_WC_LOC_LEN_ERR] = "LOC_LEN_ERR",
    [RCT_WC_LOC_QP_OP_ERR] = "LOC_QP_OP_ERR", [RCT_WC_LOC_EEC_OP_ERR] = "LOC_EEC_OP_ERR",
    [RCT_WC_LOC_PROT_ERR] = "LOC_PROT_ERR", [RCT_WC_WR_FLUSH_ERR] = "WR_FLUSH_ERR",
    [RCT_WC_MW_BIND_ERR] = "MW_BIND_ERR", [RCT_WC_BAD_RESP_ERR] = "BAD_RESP_ERR",
    [RCT_WC_LOC_ACCESS_ERR] = "LOC_ACCESS_ERR", [RCT_WC_REM_INV_REQ_ERR] = "REM_INV_REQ_ERR",
    [RCT_WC_REM_ACCESS_ERR] = "REM_ACCESS_ERR", [RCT_WC_REM_OP_ERR] = "REM_OP_ERR",
    [RCT_WC_RETRY_EXC_ERR] = "RETRY_EXC_ERR", [RCT_WC_RNR_RETRY_EXC_ERR] = "RNR_RETRY_EXC_ERR",
    [RCT_WC_LOC_RDD_VIOL_ERR] = "LOC_RDD_VIOL_ERR", [RCT_WC_REM_INV_RD_REQ_ERR] = "REM_INV_RD_REQ_ERR",
    [RCT_WC_REM_ABORT_ERR] = "REM_ABORT_ERR", [RCT_WC_INV_EECN_ERR] = "INV_EECN_ERR",
    [RCT_WC_INV_EEC_STATE_ERR] = "INV_EEC_STATE_ERR", [RCT_WC_FATAL_ERR] = "FATAL_ERR",
    [RCT_WC_RESP_TIMEOUT_ERR] = "RESP_TIMEOUT_ERR", [RCT_WC_GENERAL_ERR] = "GENERAL_ERR",
  };
  return NAME(t, s);
}

const char *rct_wr_opcode_name(enum rct_wr_opcode op)
{
  static const char *const t[] = { [RCT_WR_RDMA_WRITE] = "RDMA_WRITE",
    [RCT_WR_RDMA_WRITE_WITH_IMM] = "RDMA_WRITE_WITH_IMM", [RCT_WR_SEND] = "SEND",
    [RCT_WR_SEND_WITH_IMM] = "SEND_WITH_IMM", [RCT_WR_RDMA_READ] = "RDMA_READ",
    [RCT_WR_ATOMIC_CMP_AND_SWP] = "ATOMIC_CMP_AND_SWP", [RCT_WR_ATOMIC_FETCH_AND_ADD] = "ATOMIC_FETCH_AND_ADD" };
  return NAME(t, op);
}

const char *rct_req_state_name(enum rct_req_state s)
{
  static const char *const t[] = { [RCT_REQ_IDLE] = "IDLE", [RCT_REQ_SENDING] = "SENDING",
    [RCT_REQ_WAIT_RNR] = "WAIT_RNR", [RCT_REQ_ERROR] = "ERROR" };
  return NAME(t, s);
}

const char *rct_resp_state_name(enum rct_resp_state s)
{
  static const char *const t[] = { [RCT_RESP_IDLE] = "IDLE", [RCT_RESP_IN_SEND] = "IN_SEND",
    [RCT_RESP_IN_WRITE] = "IN_WRITE", [RCT_RESP_ERROR] = "ERROR" };
  return NAME(t, s);
}

const char *rct_comp_state_name(enum rct_comp_state s)
{
  static const char *const t[] = { [RCT_COMP_IDLE] = "IDLE", [RCT_COMP_WAIT_ACK] = "WAIT_ACK",
    [RCT_COMP_WAIT_RNR] = "WAIT_RNR", [RCT_COMP_ERROR] = "ERROR" };
  return NAME(t, s);
}

const char *rct_syndrome_name(uint8_t syn)
{
  return rct_syndrome_info(syn)->name;
}

/* [REQ-TMO-1] 4.096 us * 2^timeout; 0 = infinite. */
uint64_t rct_ack_timeout_ns(uint8_t timeout)
{
  if (timeout == 0 || timeout > 31)
    return RCT_NEVER;
  return 4096ull << timeout;
}

/* [REQ-RNR-2] RNR timer codes in units of 10 us. */
uint64_t rct_rnr_timer_ns(uint8_t code)
{
  static const uint32_t t10us[32] = {
    65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192,
    256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152,
  };
  return (uint64_t)t10us[code & 31] * 10000ull;
}
