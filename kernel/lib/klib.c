// klib.c: memory and string helpers for a freestanding kernel (see klib.h).
#include "lib/klib.h"

// memset moves 8 bytes at a time into an aligned buffer, memmove 8 bytes
// at a time whenever it can align the destination (any source alignment):
// the kernel copies whole pages and blocks all the time.
HOT_LOOP void *memset(void *dst, int c, uint64 n) {
  uint8 *d = dst;
  if (((uint64)d % 8) == 0) {
    uint64 word = 0x0101010101010101ULL * (uint8)c;
    for (; n >= 8; n -= 8, d += 8) *(uint64 *)d = word;
  }
  while (n-- > 0) *d++ = (uint8)c;
  return dst;
}

static int words_ok(const void *a, const void *b) { return (((uint64)a | (uint64)b) % 8) == 0; }

// dst 8-aligned, src not: every load is an aligned word, two of them
// shifted together (little-endian), so a misaligned source (a payload
// behind a 54-byte RoCE header) still moves 8 bytes per step. Each word
// loaded holds at least one source byte: nothing past the source's page.
HOT_LOOP static void copy_words_shifted(uint64 *d, const uint8 *s, uint64 words) {
  uint64 off = (uint64)s % 8, sh = off * 8;
  const uint64 *w = (const uint64 *)(s - off);
  uint64 lo = *w++;
  for (; words > 0; words--) {
    uint64 hi = *w++;
    *d++ = (lo >> sh) | (hi << (64 - sh));
    lo = hi;
  }
}

HOT_LOOP void *memmove(void *dst, const void *src, uint64 n) {
  uint8 *d = dst;
  const uint8 *s = src;
  if (d == s || n == 0) return dst;
  if (d + n <= s || s + n <= d) {           // disjoint
    if (n >= 16) {
      for (; (uint64)d % 8; n--) *d++ = *s++;   // at most 7: n stays >= 9
      uint64 words = n / 8;
      if ((uint64)s % 8 == 0)
        for (uint64 k = 0; k < words; k++) ((uint64 *)d)[k] = ((const uint64 *)s)[k];
      else
        copy_words_shifted((uint64 *)d, s, words);
      d += words * 8; s += words * 8; n -= words * 8;
    }
    while (n-- > 0) *d++ = *s++;
  } else if (d < s) {                       // overlapping, dst before src: copy forwards
    if (words_ok(d, s))
      for (; n >= 8; n -= 8, d += 8, s += 8) *(uint64 *)d = *(const uint64 *)s;
    while (n-- > 0) *d++ = *s++;
  } else {                    // overlapping with dst after src: copy backwards
    d += n; s += n;
    if (words_ok(d, s))
      for (; n >= 8; n -= 8) { d -= 8; s -= 8; *(uint64 *)d = *(const uint64 *)s; }
    while (n-- > 0) *--d = *--s;
  }
  return dst;
}

// On memmove's page: the jump to it is then chained, not looked up (kernel.ld).
HOT_LOOP void *memcpy(void *dst, const void *src, uint64 n) { return memmove(dst, src, n); }

int memcmp(const void *a, const void *b, uint64 n) {
  const uint8 *x = a, *y = b;
  for (; n > 0; n--, x++, y++)
    if (*x != *y) return *x - *y;
  return 0;
}

uint64 strlen(const char *s) {
  uint64 n = 0;
  while (s[n]) n++;
  return n;
}

int strncmp(const char *a, const char *b, uint64 n) {
  for (; n > 0; n--, a++, b++) {
    if (*a != *b) return (uint8)*a - (uint8)*b;
    if (*a == 0) return 0;
  }
  return 0;
}

void str_copy(char *dst, const char *src, uint64 n) {
  uint64 i = 0;
  if (n == 0) return;
  for (; i + 1 < n && src[i]; i++) dst[i] = src[i];
  dst[i] = 0;
}
