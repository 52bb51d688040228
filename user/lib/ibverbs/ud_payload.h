// ud_payload.h: the UD ping-pong's payload, one definition for both ends:
// xv6's udping (user/bin/udping.c) and the Linux peer's ud-server /
// ud-client (tests/linux/peer/ud.c; docs/interop.md "UD"). A payload is
// its message's sequence number (4 bytes, big-endian), then byte k =
// (seq + k) mod 256 for k >= 4; a SEND_WITH_IMM carries seq ^ UD_IMM_SALT.
// Header only, C99, no includes: the includer provides uint8_t / uint32_t.
#ifndef UD_PAYLOAD_H
#define UD_PAYLOAD_H

#define UD_SEQ_LEN 4                  // the sequence number: the smallest payload
#define UD_IMM_SALT 0xc0de0000u

static inline void ud_put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (24 - 8 * i));
}

static inline uint32_t ud_get32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline void ud_fill_payload(uint8_t *p, uint32_t len, uint32_t seq) {
  ud_put32(p, seq);
  for (uint32_t k = UD_SEQ_LEN; k < len; k++) p[k] = (uint8_t)(seq + k);
}

// 1 if p holds a valid payload of len bytes (its sequence number in *seq).
static inline int ud_payload_ok(const uint8_t *p, uint32_t len, uint32_t *seq) {
  if (len < UD_SEQ_LEN) return 0;
  *seq = ud_get32(p);
  for (uint32_t k = UD_SEQ_LEN; k < len; k++)
    if (p[k] != (uint8_t)(*seq + k)) return 0;
  return 1;
}

#endif
