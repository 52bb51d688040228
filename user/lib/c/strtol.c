// strtol.c: numbers from text (<stdlib.h>'s strto*, ato*, abs): one
// unsigned parser (parse_digits) under the signed and unsigned forms, and
// strtod for decimal floating point.
#include "user.h"

#define ULL_MAX (~0ULL)
#define LL_MAX  ((long long)(ULL_MAX >> 1))

static int digit_value(int c)
{
  if (isdigit(c))
    return c - '0';
  if (isalpha(c))
    return tolower(c) - 'a' + 10;
  return 99;
}

// Skips space and a sign, takes the base's prefix (0x, 0), and accumulates
// the digits up to `limit`; sets *neg, *overflow and *end (s itself when
// there is no digit, as C says). Returns the magnitude, saturated.
static unsigned long long parse_digits(const char *s, char **end, int base,
                                       unsigned long long limit, int *neg,
                                       int *overflow)
{
  const char *p = s;
  *neg = 0;
  *overflow = 0;
  if (end)
    *end = (char *)s;
  if (base < 0 || base == 1 || base > 36) {
    errno = EINVAL;
    return 0;
  }
  while (isspace((unsigned char)*p))
    p++;
  if (*p == '+' || *p == '-')
    *neg = *p++ == '-';
  if ((base == 0 || base == 16) && p[0] == '0' && tolower(p[1]) == 'x' &&
      isxdigit((unsigned char)p[2])) {
    p += 2;
    base = 16;
  } else if (base == 0) {
    base = p[0] == '0' ? 8 : 10;
  }
  unsigned long long v = 0;
  const char *first = p;
  for (int d; (d = digit_value((unsigned char)*p)) < base; p++) {
    if (v > (limit - d) / base)
      *overflow = 1;
    else
      v = v * base + d;
  }
  if (p == first)
    return 0;
  if (end)
    *end = (char *)p;
  if (*overflow) {
    errno = ERANGE;
    return limit;
  }
  return v;
}

// Signed: the magnitude may reach max + 1 when negative.
static long long parse_signed(const char *s, char **end, int base, long long max)
{
  int neg, overflow;
  unsigned long long m = parse_digits(s, end, base, ULL_MAX, &neg, &overflow);
  unsigned long long limit = (unsigned long long)max + neg;
  if (overflow || m > limit) {
    errno = ERANGE;
    m = limit;
  }
  return neg ? (long long)(0 - m) : (long long)m;
}

// Unsigned: a '-' negates the value in the type, as C says.
unsigned long long strtoull(const char *s, char **end, int base)
{
  int neg, overflow;
  unsigned long long m = parse_digits(s, end, base, ULL_MAX, &neg, &overflow);
  return neg && !overflow ? 0 - m : m;
}

unsigned long strtoul(const char *s, char **end, int base)
{
  return strtoull(s, end, base);   // long is 64 bits
}

long long strtoll(const char *s, char **end, int base)
{
  return parse_signed(s, end, base, LL_MAX);
}

long strtol(const char *s, char **end, int base)
{
  return parse_signed(s, end, base, LL_MAX);
}

int atoi(const char *s) { return (int)strtol(s, NULL, 10); }
long atol(const char *s) { return strtol(s, NULL, 10); }
long long atoll(const char *s) { return strtoll(s, NULL, 10); }
int abs(int v) { return v < 0 ? -v : v; }
long labs(long v) { return v < 0 ? -v : v; }
long long llabs(long long v) { return v < 0 ? -v : v; }

// Decimal only (digits, '.', an exponent), "inf" and "nan"; the result is
// within a few units in the last place, not always the nearest double.
double strtod(const char *s, char **end)
{
  const char *p = s;
  while (isspace((unsigned char)*p))
    p++;
  int neg = 0;
  if (*p == '+' || *p == '-')
    neg = *p++ == '-';
  double v = 0;
  int digits = 0, exp10 = 0;
  if (strncasecmp(p, "inf", 3) == 0) {
    v = __builtin_inf();
    p += strncasecmp(p, "infinity", 8) == 0 ? 8 : 3;
    digits = 1;
  } else if (strncasecmp(p, "nan", 3) == 0) {
    v = __builtin_nan("");
    p += 3;
    digits = 1;
  } else {
    for (; isdigit((unsigned char)*p); p++, digits++)
      v = v * 10 + (*p - '0');
    if (*p == '.') {
      for (p++; isdigit((unsigned char)*p); p++, digits++, exp10--)
        v = v * 10 + (*p - '0');
    }
    if (digits && tolower(*p) == 'e') {
      char *after;
      long e = strtol(p + 1, &after, 10);
      if (after != p + 1) {
        exp10 += e < -9999 ? -9999 : e > 9999 ? 9999 : e;
        p = after;
      }
    }
  }
  if (!digits) {
    if (end)
      *end = (char *)s;
    return 0;
  }
  double scale = 10;
  for (int e = exp10 < 0 ? -exp10 : exp10; e > 0; e >>= 1, scale *= scale) {
    if (e & 1)
      v = exp10 < 0 ? v / scale : v * scale;
  }
  if (end)
    *end = (char *)p;
  return neg ? -v : v;
}
