/*
 * frame_icrc.c: ICRC forging for the tests: the ICRC of a complete frame,
 * computed with the core's own CRC and header masking, so a test can repair
 * a frame it altered or damage one on purpose. Host only (the core never
 * needs it: it computes the ICRC as it builds a frame, rct_tx_emit).
 */
#include "harness.h"

/* The ICRC of a complete RoCEv2 or RoCE v1 frame (buf[0..len), the last 4
 * bytes being the ICRC field, whose contents are ignored) [ICRC-CALC-1]. On
 * success *icrc holds it as frame_set_icrc stores it (byte len-4 = bits
 * 7..0). Returns RCT_OK or RCT_EINVAL (not a RoCE frame, truncated). */
int frame_icrc(const uint8_t *buf, size_t len, uint32_t *icrc)
{
  struct rct_pkt p;
  uint32_t hl;
  struct rct_iov rest;
  if (len > 0xffff || rct_wire_parse_base(&p, buf, (uint32_t)len, true) != RCT_PARSE_OK)
    return RCT_EINVAL;
  hl = p.bth_off + BTH_LEN;
  rest.base = (uint8_t *)(uintptr_t)(buf + hl);
  rest.len = p.frame_len - hl - ICRC_LEN;
  *icrc = rct_icrc_compute(buf, hl, p.l3_off, p.h.encap, &rest, 1, 0, 0);   /* [ICRC-CALC-1] */
  return RCT_OK;
}

/* Compute and store the ICRC in the frame's last 4 bytes. RCT_OK or RCT_EINVAL. */
int frame_set_icrc(uint8_t *buf, size_t len)
{
  uint32_t v;
  if (frame_icrc(buf, len, &v) != RCT_OK)
    return RCT_EINVAL;
  rct_wire_icrc_store(buf + len - ICRC_LEN, v);
  return RCT_OK;
}
