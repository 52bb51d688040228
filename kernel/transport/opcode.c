/*
 * opcode.c: the opcode table (IBTA Table 38: the RC rows, the UD SEND rows), the only place
 * that says which header follows which opcode [WIRE-OP-*]; and the AETH
 * syndrome table (IBTA 9.7.5.1), the only place that says what a syndrome
 * means.
 */
#include "opcode.h"
#include "wire.h"

#define REQ (OPF_VALID | OPF_REQ | OPF_SUPPORTED)
#define SRQ (REQ | OPF_SR | OPF_SRXH)
#define X SRETH_LEN
#define RSP (OPF_VALID | OPF_RESP | OPF_SUPPORTED)

const struct rct_opcode_info rct_opcode_table[256] = {
  [OP_SEND_FIRST]  = { "SEND_FIRST",  REQ | OPF_SEND | OPF_RECV | OPF_FIRST | OPF_PAYLOAD, 0 },
  [OP_SEND_MIDDLE] = { "SEND_MIDDLE", REQ | OPF_SEND | OPF_RECV | OPF_MIDDLE | OPF_PAYLOAD, 0 },
  [OP_SEND_LAST]   = { "SEND_LAST",   REQ | OPF_SEND | OPF_RECV | OPF_LAST | OPF_PAYLOAD, 0 },
  [OP_SEND_LAST_IMM] = { "SEND_LAST_WITH_IMMEDIATE", REQ | OPF_SEND | OPF_RECV | OPF_LAST | OPF_PAYLOAD | OPF_IMM, IMMDT_LEN },
  [OP_SEND_ONLY]   = { "SEND_ONLY",   REQ | OPF_SEND | OPF_RECV | OPF_ONLY | OPF_PAYLOAD, 0 },
  [OP_SEND_ONLY_IMM] = { "SEND_ONLY_WITH_IMMEDIATE", REQ | OPF_SEND | OPF_RECV | OPF_ONLY | OPF_PAYLOAD | OPF_IMM, IMMDT_LEN },
  [OP_WRITE_FIRST] = { "RDMA_WRITE_FIRST", REQ | OPF_WRITE | OPF_FIRST | OPF_PAYLOAD | OPF_RETH, RETH_LEN },
  [OP_WRITE_MIDDLE] = { "RDMA_WRITE_MIDDLE", REQ | OPF_WRITE | OPF_MIDDLE | OPF_PAYLOAD, 0 },
  [OP_WRITE_LAST]  = { "RDMA_WRITE_LAST", REQ | OPF_WRITE | OPF_LAST | OPF_PAYLOAD, 0 },
  [OP_WRITE_LAST_IMM] = { "RDMA_WRITE_LAST_WITH_IMMEDIATE",
                          REQ | OPF_WRITE | OPF_RECV | OPF_LAST | OPF_PAYLOAD | OPF_IMM, IMMDT_LEN },
  [OP_WRITE_ONLY]  = { "RDMA_WRITE_ONLY", REQ | OPF_WRITE | OPF_ONLY | OPF_PAYLOAD | OPF_RETH, RETH_LEN },
  [OP_WRITE_ONLY_IMM] = { "RDMA_WRITE_ONLY_WITH_IMMEDIATE",
                          REQ | OPF_WRITE | OPF_RECV | OPF_ONLY | OPF_PAYLOAD | OPF_RETH | OPF_IMM,
                          RETH_LEN + IMMDT_LEN },
  [OP_READ_REQ]    = { "RDMA_READ_REQUEST", REQ | OPF_READ | OPF_ONLY | OPF_RETH, RETH_LEN },
  [OP_READ_RESP_FIRST] = { "RDMA_READ_RESPONSE_FIRST", RSP | OPF_READ | OPF_FIRST | OPF_PAYLOAD | OPF_AETH, AETH_LEN },
  [OP_READ_RESP_MIDDLE] = { "RDMA_READ_RESPONSE_MIDDLE", RSP | OPF_READ | OPF_MIDDLE | OPF_PAYLOAD, 0 },
  [OP_READ_RESP_LAST] = { "RDMA_READ_RESPONSE_LAST", RSP | OPF_READ | OPF_LAST | OPF_PAYLOAD | OPF_AETH, AETH_LEN },
  [OP_READ_RESP_ONLY] = { "RDMA_READ_RESPONSE_ONLY", RSP | OPF_READ | OPF_ONLY | OPF_PAYLOAD | OPF_AETH, AETH_LEN },
  [OP_ACK]         = { "ACKNOWLEDGE", RSP | OPF_ACK | OPF_ONLY | OPF_AETH, AETH_LEN },
  /* Atomics [OPC-VAL-1] [HDR-ATOM-1] [HDR-ATOM-2] */
  [OP_ATOMIC_ACK]  = { "ATOMIC_ACKNOWLEDGE", RSP | OPF_ATOMIC | OPF_ONLY | OPF_AETH | OPF_ATOMACK, AETH_LEN + ATOMACK_LEN },
  [OP_CMP_SWAP]    = { "COMPARE_SWAP", REQ | OPF_ONLY | OPF_ATOMIC | OPF_ATOMETH, ATOMETH_LEN },
  [OP_FETCH_ADD]   = { "FETCH_ADD", REQ | OPF_ONLY | OPF_ATOMIC | OPF_ATOMETH, ATOMETH_LEN },
  /* Known but not implemented: a request gets NAK invalid request. */
  [OP_SEND_LAST_INV] = { "SEND_LAST_WITH_INVALIDATE", OPF_VALID | OPF_REQ | OPF_SEND | OPF_RECV | OPF_LAST | OPF_PAYLOAD | OPF_INV, 4 },
  [OP_SEND_ONLY_INV] = { "SEND_ONLY_WITH_INVALIDATE", OPF_VALID | OPF_REQ | OPF_SEND | OPF_RECV | OPF_ONLY | OPF_PAYLOAD | OPF_INV, 4 },

  /* Selective repeat [SR-WIRE-1]: SRXH first, then RETH (every WRITE packet
   * [SR-WIRE-4], READ), then ImmDt. */
  [0xC0] = { "SR_SEND_FIRST",  SRQ | OPF_SEND | OPF_RECV | OPF_FIRST | OPF_PAYLOAD, X },
  [0xC1] = { "SR_SEND_MIDDLE", SRQ | OPF_SEND | OPF_RECV | OPF_MIDDLE | OPF_PAYLOAD, X },
  [0xC2] = { "SR_SEND_LAST",   SRQ | OPF_SEND | OPF_RECV | OPF_LAST | OPF_PAYLOAD, X },
  [0xC3] = { "SR_SEND_LAST_WITH_IMMEDIATE", SRQ | OPF_SEND | OPF_RECV | OPF_LAST | OPF_PAYLOAD | OPF_IMM, X + IMMDT_LEN },
  [0xC4] = { "SR_SEND_ONLY",   SRQ | OPF_SEND | OPF_RECV | OPF_ONLY | OPF_PAYLOAD, X },
  [0xC5] = { "SR_SEND_ONLY_WITH_IMMEDIATE", SRQ | OPF_SEND | OPF_RECV | OPF_ONLY | OPF_PAYLOAD | OPF_IMM, X + IMMDT_LEN },
  [0xC6] = { "SR_RDMA_WRITE_FIRST", SRQ | OPF_WRITE | OPF_FIRST | OPF_PAYLOAD | OPF_RETH, X + RETH_LEN },
  [0xC7] = { "SR_RDMA_WRITE_MIDDLE", SRQ | OPF_WRITE | OPF_MIDDLE | OPF_PAYLOAD | OPF_RETH, X + RETH_LEN },
  [0xC8] = { "SR_RDMA_WRITE_LAST", SRQ | OPF_WRITE | OPF_LAST | OPF_PAYLOAD | OPF_RETH, X + RETH_LEN },
  [0xC9] = { "SR_RDMA_WRITE_LAST_WITH_IMMEDIATE",
             SRQ | OPF_WRITE | OPF_RECV | OPF_LAST | OPF_PAYLOAD | OPF_RETH | OPF_IMM, X + RETH_LEN + IMMDT_LEN },
  [0xCA] = { "SR_RDMA_WRITE_ONLY", SRQ | OPF_WRITE | OPF_ONLY | OPF_PAYLOAD | OPF_RETH, X + RETH_LEN },
  [0xCB] = { "SR_RDMA_WRITE_ONLY_WITH_IMMEDIATE",
             SRQ | OPF_WRITE | OPF_RECV | OPF_ONLY | OPF_PAYLOAD | OPF_RETH | OPF_IMM, X + RETH_LEN + IMMDT_LEN },
  [0xCC] = { "SR_RDMA_READ_REQUEST", SRQ | OPF_READ | OPF_ONLY | OPF_RETH, X + RETH_LEN },
  [0xD3] = { "SR_COMPARE_SWAP", SRQ | OPF_ONLY | OPF_ATOMIC | OPF_ATOMETH, X + ATOMETH_LEN },   /* [SR-ATOM-1] */
  [0xD4] = { "SR_FETCH_ADD", SRQ | OPF_ONLY | OPF_ATOMIC | OPF_ATOMETH, X + ATOMETH_LEN },
  [OP_SR_SACK] = { "SR_SELECTIVE_NAK", RSP | OPF_SR | OPF_ACK | OPF_ONLY | OPF_AETH | OPF_SACKH, AETH_LEN + 8 },

  /* UD [UD-WIRE-1]: DETH, then ImmDt; one packet per message. */
  [OP_UD_SEND_ONLY] = { "UD_SEND_ONLY", REQ | OPF_UD | OPF_SEND | OPF_RECV | OPF_ONLY | OPF_PAYLOAD, DETH_LEN },
  [OP_UD_SEND_ONLY_IMM] = { "UD_SEND_ONLY_WITH_IMMEDIATE",
                            REQ | OPF_UD | OPF_SEND | OPF_RECV | OPF_ONLY | OPF_PAYLOAD | OPF_IMM, DETH_LEN + IMMDT_LEN },
};

bool rct_opcode_is_ack(uint8_t bth_opcode)
{
  return (op_flags(bth_opcode) & OPF_ACK) != 0;
}

#define QCNT(f) ((uint16_t)offsetof(struct rct_qp_counters, f))
#define NONE SYN_NO_CNT

/* Indexed by syndrome_row(). */
static const struct rct_syndrome_info syndromes[] = {
  { "ACK", SYN_ACK, RCT_WC_SUCCESS, QCNT(tx_ack), QCNT(rx_ack) },
  { "RNR_NAK", SYN_RNR_NAK, RCT_WC_RNR_RETRY_EXC_ERR, QCNT(tx_rnr_nak), QCNT(rx_rnr_nak) },
  { "NAK_PSN_SEQ_ERR", SYN_NAK_SEQ, RCT_WC_SUCCESS, QCNT(tx_nak_seq), QCNT(rx_nak_seq) },
  { "NAK_INVALID_REQUEST", SYN_NAK_FATAL, RCT_WC_REM_INV_REQ_ERR, QCNT(tx_nak_inv), QCNT(rx_nak_inv) },
  { "NAK_REMOTE_ACCESS", SYN_NAK_FATAL, RCT_WC_REM_ACCESS_ERR, QCNT(tx_nak_acc), QCNT(rx_nak_acc) },
  { "NAK_REMOTE_OP", SYN_NAK_FATAL, RCT_WC_REM_OP_ERR, QCNT(tx_nak_op), QCNT(rx_nak_op) },
  { "NAK_INVALID_RD_REQUEST", SYN_NAK_FATAL, RCT_WC_GENERAL_ERR, NONE, NONE },
  { "NAK_RESERVED", SYN_RESERVED, RCT_WC_SUCCESS, NONE, NONE },
  { "RESERVED", SYN_RESERVED, RCT_WC_SUCCESS, NONE, NONE },
};

/* Row of a syndrome: kind in bits 7..5; for NAKs, the code in bits 4..0
 * (0 PSN sequence error .. 4 invalid RD request, the rest reserved). */
static unsigned syndrome_row(uint8_t syn)
{
  uint8_t code = syn & 0x1f;
  switch (syn & AETH_KIND_MASK) {
  case AETH_ACK: return 0;
  case AETH_RNR_NAK: return 1;
  case AETH_NAK: return code <= 4 ? 2u + code : 7;
  default: return 8;
  }
}

const struct rct_syndrome_info *rct_syndrome_info(uint8_t syn)
{
  return &syndromes[syndrome_row(syn)];
}
