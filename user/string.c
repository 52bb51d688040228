// string.c: string and memory helpers of the user C library.
//
// Plain byte loops: programs here are small and clarity beats speed. The
// compiler may also emit calls to memset/memcpy for struct copies, so these
// names must exist even in programs that never call them.
#include "user.h"

size_t strlen(const char *s)
{
  size_t n = 0;
  while (s[n])
    n++;
  return n;
}

int strcmp(const char *a, const char *b)
{
  while (*a && *a == *b) {
    a++;
    b++;
  }
  return (unsigned char)*a - (unsigned char)*b;
}

int strncmp(const char *a, const char *b, size_t n)
{
  for (; n > 0; n--, a++, b++) {
    if (*a != *b || *a == 0)
      return (unsigned char)*a - (unsigned char)*b;
  }
  return 0;
}

char *strcpy(char *dst, const char *src)
{
  char *out = dst;
  while ((*dst++ = *src++) != 0)
    ;
  return out;
}

// Copy at most size-1 bytes and always terminate (unlike strncpy).
char *strncpy_z(char *dst, const char *src, size_t size)
{
  size_t i = 0;
  if (size == 0)
    return dst;
  for (; i + 1 < size && src[i]; i++)
    dst[i] = src[i];
  dst[i] = 0;
  return dst;
}

char *strchr(const char *s, int c)
{
  for (; *s; s++) {
    if (*s == (char)c)
      return (char *)s;
  }
  return c == 0 ? (char *)s : NULL;
}

char *strstr(const char *haystack, const char *needle)
{
  size_t n = strlen(needle);
  for (; *haystack; haystack++) {
    if (strncmp(haystack, needle, n) == 0)
      return (char *)haystack;
  }
  return n == 0 ? (char *)haystack : NULL;
}

void *memset(void *dst, int c, size_t n)
{
  unsigned char *d = dst;
  while (n-- > 0)
    *d++ = (unsigned char)c;
  return dst;
}

void *memcpy(void *dst, const void *src, size_t n)
{
  return memmove(dst, src, n);
}

// Copies backwards when the ranges overlap with dst above src.
void *memmove(void *dst, const void *src, size_t n)
{
  unsigned char *d = dst;
  const unsigned char *s = src;
  if (d > s && d < s + n) {
    while (n-- > 0)
      d[n] = s[n];
  } else {
    while (n-- > 0)
      *d++ = *s++;
  }
  return dst;
}

int memcmp(const void *a, const void *b, size_t n)
{
  const unsigned char *x = a, *y = b;
  for (; n > 0; n--, x++, y++) {
    if (*x != *y)
      return *x - *y;
  }
  return 0;
}

// Decimal with an optional leading '-'; stops at the first non-digit.
int atoi(const char *s)
{
  int sign = 1, value = 0;
  if (*s == '-') {
    sign = -1;
    s++;
  }
  while (*s >= '0' && *s <= '9')
    value = value * 10 + (*s++ - '0');
  return sign * value;
}

// Writes value in base 2..16 into buf (at least 66 bytes) and returns the
// number of characters written, not counting the terminating NUL.
int itoa(long value, char *buf, int base)
{
  char digits[66];
  unsigned long u = value < 0 && base == 10 ? -(unsigned long)value : value;
  int n = 0, len = 0;
  do {
    digits[n++] = "0123456789abcdef"[u % base];
    u /= base;
  } while (u != 0);
  if (value < 0 && base == 10)
    buf[len++] = '-';
  while (n > 0)
    buf[len++] = digits[--n];
  buf[len] = 0;
  return len;
}

// stat by name: open, fstat, close.
int stat(const char *path, struct stat *st)
{
  int fd = open(path, O_RDONLY);
  if (fd < 0)
    return -1;
  int r = fstat(fd, st);
  close(fd);
  return r;
}
