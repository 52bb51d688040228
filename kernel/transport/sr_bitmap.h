/*
 * sr_bitmap.h: the selective-repeat bitmaps of the core: RCT_SR_WINDOW bits,
 * bit i standing for PSN base + i (the completer's sacked/resent sets, the
 * responder's placed set). Test, set, clear, and shift the base forward.
 */
#ifndef RCT_SR_BITMAP_H
#define RCT_SR_BITMAP_H

#include "rct_types.h"

_Static_assert(RCT_SR_WINDOW % 64 == 0 && (RCT_SR_WINDOW & (RCT_SR_WINDOW - 1)) == 0,
               "SR_WINDOW: whole SACKH words, and PSN % SR_WINDOW stays a slot across the PSN wrap");

static inline int bm_test(const uint32_t *bm, uint32_t i) { return (bm[i >> 5] >> (i & 31)) & 1; }
static inline void bm_set(uint32_t *bm, uint32_t i) { bm[i >> 5] |= 1u << (i & 31); }
static inline void bm_clear(uint32_t *bm, uint32_t i) { bm[i >> 5] &= ~(1u << (i & 31)); }
static inline void bm_clear_all(uint32_t *bm) { for (int i = 0; i < RCT_SR_WORDS; i++) bm[i] = 0; }

/* Drop the n lowest bits (the base moved forward by n). */
static inline void rct_bm_shift(uint32_t *bm, uint32_t n)
{
  while (n >= 32) {
    for (int i = 0; i < RCT_SR_WORDS - 1; i++)
      bm[i] = bm[i + 1];
    bm[RCT_SR_WORDS - 1] = 0;
    n -= 32;
  }
  if (n) {
    for (int i = 0; i < RCT_SR_WORDS - 1; i++)
      bm[i] = (bm[i] >> n) | (bm[i + 1] << (32 - n));
    bm[RCT_SR_WORDS - 1] >>= n;
  }
}

static inline uint32_t bm_popcount(uint32_t x)
{
  x = x - ((x >> 1) & 0x55555555u);
  x = (x & 0x33333333u) + ((x >> 2) & 0x33333333u);
  return (((x + (x >> 4)) & 0x0f0f0f0fu) * 0x01010101u) >> 24;
}

/* Bits set among the n lowest (n <= RCT_SR_WINDOW). */
static inline uint32_t rct_bm_count(const uint32_t *bm, uint32_t n)
{
  uint32_t c = 0;
  for (uint32_t i = 0; i < n >> 5; i++)
    c += bm_popcount(bm[i]);
  if (n & 31)
    c += bm_popcount(bm[n >> 5] & ((1u << (n & 31)) - 1));
  return c;
}

/* The lowest set bit's index (x != 0). */
static inline uint32_t bm_lowest(uint32_t x) { return bm_popcount((x & -x) - 1); }

/* The first i in [from, n) whose bit in a, xor flip, is set and whose
 * bit in b is clear (b may be 0); n when there is none (n <= RCT_SR_WINDOW).
 * Word by word: the scans of a window run once per frame. */
static inline uint32_t bm_scan(const uint32_t *a, uint32_t flip, const uint32_t *b, uint32_t from, uint32_t n)
{
  for (uint32_t i = from; i < n; i = (i | 31) + 1) {
    uint32_t x = ((a[i >> 5] ^ flip) & ~(b ? b[i >> 5] : 0)) >> (i & 31);
    if (x) {
      i += bm_lowest(x);
      return i < n ? i : n;
    }
  }
  return n;
}

/* The first i in [from, n) set in a and clear in b (b may be 0); n if none. */
static inline uint32_t rct_bm_next(const uint32_t *a, const uint32_t *b, uint32_t from, uint32_t n)
{
  return bm_scan(a, 0, b, from, n);
}

/* The first i in [from, n) whose bit is clear; n when every one is set. */
static inline uint32_t rct_bm_next_clear(const uint32_t *bm, uint32_t from, uint32_t n)
{
  return bm_scan(bm, ~0u, 0, from, n);
}

/* Any bit set? */
static inline int rct_bm_any(const uint32_t *bm)
{
  for (int i = 0; i < RCT_SR_WORDS; i++)
    if (bm[i])
      return 1;
  return 0;
}

#endif /* RCT_SR_BITMAP_H */
