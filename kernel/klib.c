// klib.c: memory and string helpers for a freestanding kernel (see klib.h).
#include "klib.h"

void *memset(void *dst, int c, uint64 n) {
  uint8 *d = dst;
  while (n-- > 0) *d++ = (uint8)c;
  return dst;
}

void *memmove(void *dst, const void *src, uint64 n) {
  uint8 *d = dst;
  const uint8 *s = src;
  if (d == s || n == 0) return dst;
  if (d < s || d >= s + n) {
    while (n-- > 0) *d++ = *s++;
  } else {                    // overlapping with dst after src: copy backwards
    d += n; s += n;
    while (n-- > 0) *--d = *--s;
  }
  return dst;
}

void *memcpy(void *dst, const void *src, uint64 n) { return memmove(dst, src, n); }

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
