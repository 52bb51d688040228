/*
 * opcode.h: facts about the RC and UD BTH opcodes, in one table (opcode.c).
 *
 * Logic tests a flag in rct_opcode_table[op].flags instead of listing
 * opcodes: which extension headers follow the BTH, whether the packet is
 * FIRST/MIDDLE/LAST of a message, carries payload, consumes a receive WQE,
 * and which direction it flows (request or response). IBTA 9.2 / Table 38.
 */
#ifndef RCT_OPCODE_H
#define RCT_OPCODE_H

#include <stdint.h>

enum rct_opcode {
  OP_SEND_FIRST = 0x00, OP_SEND_MIDDLE = 0x01, OP_SEND_LAST = 0x02,
  OP_SEND_LAST_IMM = 0x03, OP_SEND_ONLY = 0x04, OP_SEND_ONLY_IMM = 0x05,
  OP_WRITE_FIRST = 0x06, OP_WRITE_MIDDLE = 0x07, OP_WRITE_LAST = 0x08,
  OP_WRITE_LAST_IMM = 0x09, OP_WRITE_ONLY = 0x0a, OP_WRITE_ONLY_IMM = 0x0b,
  OP_READ_REQ = 0x0c, OP_READ_RESP_FIRST = 0x0d, OP_READ_RESP_MIDDLE = 0x0e,
  OP_READ_RESP_LAST = 0x0f, OP_READ_RESP_ONLY = 0x10, OP_ACK = 0x11,
  OP_ATOMIC_ACK = 0x12, OP_CMP_SWAP = 0x13, OP_FETCH_ADD = 0x14,
  OP_SEND_LAST_INV = 0x16, OP_SEND_ONLY_INV = 0x17,
  OP_UD_SEND_ONLY = 0x64, OP_UD_SEND_ONLY_IMM = 0x65,   /* UD class 011 [UD-WIRE-1] */
  OP_SR_BASE = 0xC0,       /* SR request opcode = 0xC0 | RC opcode [SR-WIRE-1] */
  OP_SR_SACK = 0xD1,       /* selective NAK [SR-WIRE-6] */
};

/* Flags. */
enum {
  OPF_VALID   = 1u << 0,   /* an RC opcode we know */
  OPF_REQ     = 1u << 1,   /* requester -> responder */
  OPF_RESP    = 1u << 2,   /* responder -> requester (ACK, READ response) */
  OPF_FIRST   = 1u << 3,
  OPF_MIDDLE  = 1u << 4,
  OPF_LAST    = 1u << 5,   /* ONLY = FIRST|LAST */
  OPF_PAYLOAD = 1u << 6,   /* may carry payload */
  OPF_RETH    = 1u << 7,
  OPF_AETH    = 1u << 8,
  OPF_IMM     = 1u << 9,
  OPF_SEND    = 1u << 10,  /* SEND: payload goes to the receive WQE's buffers */
  OPF_WRITE   = 1u << 11,
  OPF_READ    = 1u << 12,  /* READ request or response */
  OPF_ATOMIC  = 1u << 13,  /* atomic request (CmpSwap, FetchAdd) or ATOMIC_ACKNOWLEDGE */
  OPF_ACK     = 1u << 14,
  OPF_INV     = 1u << 15,  /* SEND with invalidate: not supported */
  OPF_ATOMETH = 1u << 16,  /* carries the 28-byte AtomicETH after the BTH (SR: after the SRXH) */
  OPF_ATOMACK = 1u << 17,  /* carries the 8-byte AtomicAckETH after the AETH */
  OPF_SUPPORTED = 1u << 18, /* this core implements it */
  OPF_RECV    = 1u << 19,  /* consumes a receive WQE (SEND, WRITE with immediate) */
  OPF_SR      = 1u << 20,  /* selective-repeat opcode (0xC0..0xCC, 0xD1) [SR-WIRE-1] */
  OPF_SRXH    = 1u << 21,  /* carries the 8-byte SRXH right after the BTH */
  OPF_SACKH   = 1u << 22,  /* carries the 8-byte SACK bitmap after the AETH */
  OPF_UD      = 1u << 23,  /* UD opcode class: the DETH follows the BTH [UD-WIRE-1] */
};
#define OPF_ONLY (OPF_FIRST | OPF_LAST)

struct rct_opcode_info {
  const char *name;
  uint32_t flags;
  uint8_t ext_len;         /* bytes of extension headers after the BTH */
};

extern const struct rct_opcode_info rct_opcode_table[256];

static inline uint32_t op_flags(uint8_t op) { return rct_opcode_table[op].flags; }

/* AETH syndrome (IBTA 9.7.5.1): bits 7..5 kind, 4..0 credit/timer/code. */
#define AETH_ACK        0x00   /* 000xxxxx: ACK, low 5 bits = credit count */
#define AETH_RNR_NAK    0x20   /* 001ttttt: RNR NAK, timer code */
#define AETH_NAK        0x60   /* 011nnnnn: NAK, code */
#define AETH_KIND_MASK  0xe0
#define AETH_NAK_PSN_SEQ   0x60
#define AETH_NAK_INV_REQ   0x61
#define AETH_NAK_REM_ACC   0x62
#define AETH_NAK_REM_OP    0x63
#define AETH_NAK_INV_RD    0x64
#define AETH_CREDIT_INVALID 0x1f   /* "credit count invalid" (no end-to-end flow control) */
#define AETH_SACK       0x40   /* 010xxxxx: reserved in IBTA; SR selective NAK (proto-spec SR) */

/* What an AETH syndrome means: one row per meaning, the only place that
 * maps syndromes to names, completion statuses and counters (opcode.c). */
enum rct_syn_kind { SYN_ACK, SYN_RNR_NAK, SYN_NAK_SEQ, SYN_NAK_FATAL, SYN_RESERVED };
#define SYN_NO_CNT 0xffffu
struct rct_syndrome_info {
  const char *name;
  uint8_t kind;            /* enum rct_syn_kind */
  uint8_t status;          /* enum rct_wc_status of the WR it fails (fatal NAK [WC-STATUS-2],
                            * RNR NAK once its retries are spent [REQ-RNR-1]) */
  uint16_t tx_cnt, rx_cnt; /* byte offsets in struct rct_qp_counters of the counters of
                            * sent and received ones, SYN_NO_CNT for none */
};
const struct rct_syndrome_info *rct_syndrome_info(uint8_t syn);

/* A packet's place in its message or READ response sequence, from whether
 * it is the first and whether it is the last: the one rule that chooses
 * FIRST / MIDDLE / LAST / ONLY opcodes [OPC-SEQ-1]. */
enum rct_pos { POS_FIRST = 0, POS_MIDDLE, POS_LAST, POS_ONLY, POS_COUNT };
static inline enum rct_pos op_pos(int first, int last)
{
  return first ? (last ? POS_ONLY : POS_FIRST) : (last ? POS_LAST : POS_MIDDLE);
}

#endif /* RCT_OPCODE_H */
