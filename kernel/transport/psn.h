/*
 * psn.h: all 24-bit PSN arithmetic of the transport core, in one place.
 *
 * PSNs live in [0, 2^24). Every comparison and distance in the core goes
 * through these helpers (docs/design.md "Units"): psn_diff(a, b) is the
 * signed distance a - b in [-2^23, 2^23), so "a is after b" is
 * psn_diff(a, b) > 0 even across the wrap. Tested at the wrap in
 * tests/unit/test_psn.c.
 */
#ifndef RCT_PSN_H
#define RCT_PSN_H

#include <stdint.h>

#define PSN_MASK 0xffffffu
#define PSN_HALF 0x800000u

/* a + n, wrapped to 24 bits (n may be "negative" as a uint32 two's complement). */
static inline uint32_t psn_add(uint32_t a, uint32_t n)
{
  return (a + n) & PSN_MASK;
}

/* a - 1, wrapped to 24 bits: the PSN before a. */
static inline uint32_t psn_prev(uint32_t a)
{
  return psn_add(a, PSN_MASK);
}

/* Signed 24-bit distance a - b in [-2^23, 2^23). */
static inline int32_t psn_diff(uint32_t a, uint32_t b)
{
  uint32_t d = (a - b) & PSN_MASK;
  return (int32_t)(d ^ PSN_HALF) - (int32_t)PSN_HALF;
}

static inline int psn_lt(uint32_t a, uint32_t b) { return psn_diff(a, b) < 0; }
static inline int psn_le(uint32_t a, uint32_t b) { return psn_diff(a, b) <= 0; }
static inline int psn_gt(uint32_t a, uint32_t b) { return psn_diff(a, b) > 0; }
static inline int psn_ge(uint32_t a, uint32_t b) { return psn_diff(a, b) >= 0; }

/* a in the half-open window [lo, lo + n)? (n <= 2^23) */
static inline int psn_in_window(uint32_t a, uint32_t lo, uint32_t n)
{
  return ((a - lo) & PSN_MASK) < n;
}

#endif /* RCT_PSN_H */
