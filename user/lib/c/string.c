// string.c: string and memory helpers of the user C library (<string.h>,
// <strings.h>, <libgen.h>).
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

size_t strnlen(const char *s, size_t max)
{
  size_t n = 0;
  while (n < max && s[n])
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

int strcasecmp(const char *a, const char *b)
{
  return strncasecmp(a, b, (size_t)-1);
}

int strncasecmp(const char *a, const char *b, size_t n)
{
  for (; n > 0; n--, a++, b++) {
    int x = tolower((unsigned char)*a), y = tolower((unsigned char)*b);
    if (x != y || x == 0)
      return x - y;
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

// C's strncpy: pads with NULs to n and leaves dst unterminated when src
// has n or more bytes.
char *strncpy(char *dst, const char *src, size_t n)
{
  size_t i = 0;
  for (; i < n && src[i]; i++)
    dst[i] = src[i];
  for (; i < n; i++)
    dst[i] = 0;
  return dst;
}

char *strcat(char *dst, const char *src)
{
  strcpy(dst + strlen(dst), src);
  return dst;
}

// Appends at most n bytes of src and always terminates.
char *strncat(char *dst, const char *src, size_t n)
{
  char *d = dst + strlen(dst);
  size_t k = strnlen(src, n);
  memcpy(d, src, k);
  d[k] = 0;
  return dst;
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

char *strrchr(const char *s, int c)
{
  const char *last = NULL;
  do {
    if (*s == (char)c)
      last = s;
  } while (*s++);
  return (char *)last;
}

size_t strspn(const char *s, const char *accept)
{
  size_t n = 0;
  while (s[n] && strchr(accept, s[n]))
    n++;
  return n;
}

size_t strcspn(const char *s, const char *reject)
{
  size_t n = 0;
  while (s[n] && !strchr(reject, s[n]))
    n++;
  return n;
}

char *strpbrk(const char *s, const char *accept)
{
  s += strcspn(s, accept);
  return *s ? (char *)s : NULL;
}

// Precondition: *save is s's remainder from the previous call when s is NULL.
char *strtok_r(char *s, const char *delim, char **save)
{
  if (s == NULL)
    s = *save;
  s += strspn(s, delim);
  if (*s == 0) {
    *save = s;
    return NULL;
  }
  char *end = s + strcspn(s, delim);
  if (*end)
    *end++ = 0;
  *save = end;
  return s;
}

char *strtok(char *s, const char *delim)
{
  static char *save = "";
  return strtok_r(s, delim, &save);
}

char *strsep(char **sp, const char *delim)
{
  char *s = *sp;
  if (s == NULL)
    return NULL;
  char *end = s + strcspn(s, delim);
  *sp = *end ? end + 1 : NULL;
  *end = 0;
  return s;
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

void *memchr(const void *s, int c, size_t n)
{
  const unsigned char *p = s;
  for (; n > 0; n--, p++) {
    if (*p == (unsigned char)c)
      return (void *)p;
  }
  return NULL;
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

// POSIX basename/dirname: may write into path (they cut trailing slashes);
// "" and NULL give ".", a path of slashes gives "/".
char *basename(char *path)
{
  if (path == NULL || *path == 0)
    return ".";
  size_t n = strlen(path);
  while (n > 1 && path[n - 1] == '/')
    path[--n] = 0;
  char *slash = strrchr(path, '/');
  return slash && slash[1] ? slash + 1 : path;
}

char *dirname(char *path)
{
  if (path == NULL || *path == 0)
    return ".";
  size_t n = strlen(path);
  while (n > 1 && path[n - 1] == '/')
    n--;
  while (n > 0 && path[n - 1] != '/')
    n--;
  if (n == 0)
    return ".";
  while (n > 1 && path[n - 1] == '/')
    n--;
  path[n] = 0;
  return path;
}
