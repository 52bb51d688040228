// printf.c: formatted output for user programs (the printf family).
//
// One formatter (format) writes into a sink; a sink is either a caller's
// buffer (snprintf) or a small buffer flushed to a file descriptor
// (dprintf, fprintf to the streams of stdio.c). Output to an fd leaves in as few
// write() calls as possible so lines from concurrent processes rarely
// interleave.
//
// Conversions: %d %i %u %x %X %o %c %s %p %%, %f %F %e %E %g %G; the
// length modifiers hh h l ll z j t (%Lf reads a double: there is no long
// double); flags - + space # 0; width and precision, either may be *.
// Floating point is printed from the double's first 17 significant digits,
// rounded half up: digits past those print as 0, where glibc prints the
// binary value exactly, and a value exactly halfway rounds up where glibc
// rounds to even.
#include "user.h"
#include "libc_impl.h"

struct sink {
  char *buf;
  size_t size;     // capacity of buf
  size_t used;     // bytes in buf
  int fd;          // flush target, or -1 for a string sink
  int failed;      // a write() to fd failed
  size_t total;    // characters produced so far
};

static void sink_flush(struct sink *s)
{
  if (s->fd >= 0 && s->used > 0 && write(s->fd, s->buf, s->used) != (int)s->used)
    s->failed = 1;
  s->used = 0;
}

static void sink_put(struct sink *s, char c)
{
  s->total++;
  if (s->fd >= 0) {
    if (s->used == s->size)
      sink_flush(s);
    s->buf[s->used++] = c;
  } else if (s->used + 1 < s->size) {
    s->buf[s->used++] = c;   // keep room for the NUL
  }
}

static void sink_repeat(struct sink *s, char c, int n)
{
  for (; n > 0; n--)
    sink_put(s, c);
}

static void sink_text(struct sink *s, const char *text, int len)
{
  for (int i = 0; i < len; i++)
    sink_put(s, text[i]);
}

struct spec {
  int left, plus, space, alt, zero;   // flags - + space # 0
  int width;
  int prec;                           // -1: none given
  char size;                          // 'H' hh, 'h', 'l', 'L' ll/j/z/t, 0 int
  char conv;
};

// Lays out prefix (sign, 0x), zeros, body and the padding the spec asks for.
// zeros: leading zeros the precision asks for; -1 lets the '0' flag fill
// the width instead.
static void put_field(struct sink *s, const struct spec *sp, const char *prefix,
                      int zeros, const char *body, int len)
{
  int plen = strlen(prefix);
  if (zeros < 0)
    zeros = sp->zero && !sp->left && sp->width > plen + len ? sp->width - plen - len : 0;
  int pad = sp->width - plen - zeros - len;
  if (!sp->left)
    sink_repeat(s, ' ', pad);
  sink_text(s, prefix, plen);
  sink_repeat(s, '0', zeros);
  sink_text(s, body, len);
  if (sp->left)
    sink_repeat(s, ' ', pad);
}

static const char *sign_prefix(const struct spec *sp, int negative)
{
  return negative ? "-" : sp->plus ? "+" : sp->space ? " " : "";
}

// Precondition: ap holds an integer argument of the spec's size next.
static unsigned long long take_unsigned(va_list *ap, char size)
{
  switch (size) {
  case 'H': return (unsigned char)va_arg(*ap, unsigned int);
  case 'h': return (unsigned short)va_arg(*ap, unsigned int);
  case 'l': case 'L': return va_arg(*ap, unsigned long long);
  default:  return va_arg(*ap, unsigned int);
  }
}

static long long take_signed(va_list *ap, char size)
{
  switch (size) {
  case 'H': return (signed char)va_arg(*ap, int);
  case 'h': return (short)va_arg(*ap, int);
  case 'l': case 'L': return va_arg(*ap, long long);
  default:  return va_arg(*ap, int);
  }
}

static void put_integer(struct sink *s, const struct spec *sp, va_list *ap)
{
  char c = sp->conv, digits[24];
  int base = c == 'o' ? 8 : (c == 'x' || c == 'X' || c == 'p') ? 16 : 10;
  const char *set = c == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
  int negative = 0;
  unsigned long long v;
  if (c == 'd' || c == 'i') {
    long long sv = take_signed(ap, sp->size);
    negative = sv < 0;
    v = negative ? 0 - (unsigned long long)sv : (unsigned long long)sv;
  } else {
    v = c == 'p' ? (unsigned long)va_arg(*ap, void *) : take_unsigned(ap, sp->size);
  }
  int n = 0;
  for (unsigned long long u = v; u != 0; u /= base)
    digits[sizeof digits - 1 - n++] = set[u % base];
  if (v == 0 && sp->prec != 0)
    digits[sizeof digits - 1 - n++] = '0';   // precision 0 prints no digit for 0
  const char *prefix = sign_prefix(sp, negative);
  if (c == 'p' || (sp->alt && v != 0 && base == 16))
    prefix = c == 'X' ? "0X" : "0x";
  int zeros = sp->prec >= 0 ? (sp->prec > n ? sp->prec - n : 0) : -1;
  if (c == 'o' && sp->alt && zeros <= 0 && (n == 0 || digits[sizeof digits - n] != '0'))
    zeros = 1;   // # makes the first octal digit 0
  put_field(s, sp, prefix, zeros, digits + sizeof digits - n, n);
}

// ---- floating point ----

#define FLOAT_DIGITS 17    // significant digits that a double determines
#define FLOAT_RAW 18       // digits generated, one more to round by
#define FLOAT_MAX_PREC 120 // precision is capped here (the field buffer's size)

// x > 0: returns x / 10^*e10 near [1, 10). Scales by powers of 10 found by
// squaring, which keeps the error within a few units in the last place.
static double float_scale(double x, int *e10)
{
  static const double big[] = { 1e1, 1e2, 1e4, 1e8, 1e16, 1e32, 1e64, 1e128, 1e256 };
  int e = 0;
  if (x < 1e-300) {   // keep the scaling below out of the subnormals
    x *= 1e18;
    e -= 18;
  }
  for (int i = 8; i >= 0; i--) {
    if (x >= big[i]) {
      x /= big[i];
      e += 1 << i;
    }
  }
  for (int i = 8; i >= 0; i--) {
    if (x * big[i] < 10) {
      x *= big[i];
      e -= 1 << i;
    }
  }
  *e10 = e;
  return x;
}

// The first FLOAT_RAW decimal digits of x > 0 (finite) into d; returns the
// exponent of d[0]. Between 1e-4 and 1e18 the integer part is exact and
// the fraction's digits come from exact subtractions, so 2.675 (really
// 2.67499999...) gives 2674999...; elsewhere x is scaled first.
static int float_raw(double x, char *d)
{
  int e10 = 0, n = 0, k = 0;
  char rev[20];
  if (x >= 1e18 || x < 1e-4)
    x = float_scale(x, &e10);
  unsigned long long ip = (unsigned long long)x;
  double frac = x - (double)ip;
  for (; ip != 0; ip /= 10)
    rev[k++] = '0' + ip % 10;
  if (k > 0) {
    e10 += k - 1;
    while (k > 0 && n < FLOAT_RAW)
      d[n++] = rev[--k];
  } else {
    for (e10--; (int)(frac * 10) == 0; e10--)   // 0.0x: skip the zeros
      frac *= 10;
  }
  while (n < FLOAT_RAW) {
    frac *= 10;
    int digit = (int)frac > 9 ? 9 : (int)frac;
    frac -= digit;
    d[n++] = '0' + digit;
  }
  return e10;
}

// The first n > 0 significant decimal digits of x >= 0, rounded half up,
// into d (n characters, no NUL); returns the exponent of the first digit,
// which the rounding may raise by one (9.99 -> 10.0). Digits past
// FLOAT_DIGITS are '0'.
static int float_digits(double x, char *d, int n)
{
  char raw[FLOAT_RAW];
  if (x == 0) {
    memset(d, '0', n);
    return 0;
  }
  int e10 = float_raw(x, raw);
  int keep = n < FLOAT_DIGITS ? n : FLOAT_DIGITS;
  memcpy(d, raw, keep);
  if (raw[keep] >= '5') {
    int i = keep - 1;
    while (i >= 0 && d[i] == '9')
      d[i--] = '0';
    if (i >= 0) {
      d[i]++;
    } else {
      d[0] = '1';
      e10++;
    }
  }
  memset(d + keep, '0', n - keep);
  return e10;
}

// %f body of x >= 0 with prec digits after the point.
static int put_fixed(char *out, double x, int prec, int alt)
{
  char d[FLOAT_MAX_PREC + 340];
  int e10 = 0;
  if (x != 0)
    e10 = float_raw(x, d);
  int n = e10 + 1 + prec;   // significant digits down to 10^-prec
  if (n <= 0) {
    // x < 10^-prec: it rounds to 0, or to one unit from half a unit up.
    double unit = 1;
    for (int i = 0; i < prec; i++)
      unit /= 10;
    n = x >= unit / 2;
    e10 = -prec;
    d[0] = '1';
  } else if (float_digits(x, d, n) > e10) {
    d[n++] = '0';   // 9.99 -> 10.0: the digits now end one place higher
    e10++;
  }
  int len = 0;
  // The digit at 10^k is d[e10 - k] inside the n digits, else '0'.
  for (int k = e10 > 0 ? e10 : 0; k >= -prec; k--) {
    if (k == -1)
      out[len++] = '.';
    int i = e10 - k;
    out[len++] = i >= 0 && i < n ? d[i] : '0';
  }
  if (prec == 0 && alt)
    out[len++] = '.';
  return len;
}

// %e body of x >= 0 with prec digits after the point.
static int put_exponent(char *out, double x, int prec, int alt, int upper)
{
  char digs[FLOAT_MAX_PREC + 2];
  int e10 = float_digits(x, digs, prec + 1);
  int len = 0;
  out[len++] = digs[0];
  if (prec > 0 || alt)
    out[len++] = '.';
  memcpy(out + len, digs + 1, prec);
  len += prec;
  out[len++] = upper ? 'E' : 'e';
  out[len++] = e10 < 0 ? '-' : '+';
  int mag = e10 < 0 ? -e10 : e10;
  if (mag >= 100)
    out[len++] = '0' + mag / 100;
  out[len++] = '0' + mag / 10 % 10;
  out[len++] = '0' + mag % 10;
  return len;
}

// %g: %e when the exponent is below -4 or at least the precision, else %f;
// trailing zeros go unless '#'.
static int put_general(char *out, double x, int prec, int alt, int upper)
{
  char digs[FLOAT_MAX_PREC + 2];
  int p = prec == 0 ? 1 : prec;
  int e10 = x == 0 ? 0 : float_digits(x, digs, p);
  int len = e10 < -4 || e10 >= p ? put_exponent(out, x, p - 1, alt, upper)
                                 : put_fixed(out, x, p - 1 - e10, alt);
  if (alt || !memchr(out, '.', len))
    return len;
  int exp_at = len;
  for (int i = 0; i < len; i++) {
    if (out[i] == 'e' || out[i] == 'E')
      exp_at = i;
  }
  int end = exp_at;
  while (out[end - 1] == '0')
    end--;
  if (out[end - 1] == '.')
    end--;
  memmove(out + end, out + exp_at, len - exp_at);
  return end + len - exp_at;
}

static void put_float(struct sink *s, const struct spec *sp, va_list *ap)
{
  double x = va_arg(*ap, double);
  char c = sp->conv, body[FLOAT_MAX_PREC + 360];
  int upper = c == 'F' || c == 'E' || c == 'G';
  int negative = __builtin_signbit(x) != 0;
  if (negative)
    x = -x;
  int prec = sp->prec < 0 ? 6 : sp->prec > FLOAT_MAX_PREC ? FLOAT_MAX_PREC : sp->prec;
  int len;
  struct spec plain = *sp;
  if (x != x || x == __builtin_inf()) {
    memcpy(body, x != x ? (upper ? "NAN" : "nan") : (upper ? "INF" : "inf"), 3);
    len = 3;
    plain.zero = 0;
  } else if (c == 'f' || c == 'F') {
    len = put_fixed(body, x, prec, sp->alt);
  } else if (c == 'e' || c == 'E') {
    len = put_exponent(body, x, prec, sp->alt, upper);
  } else {
    len = put_general(body, x, prec, sp->alt, upper);
  }
  put_field(s, &plain, sign_prefix(sp, negative), -1, body, len);
}

// ---- the format string ----

static void put_string(struct sink *s, const struct spec *sp, va_list *ap)
{
  char c;
  const char *str = &c;
  int len = 1;
  if (sp->conv == 'c') {
    c = (char)va_arg(*ap, int);
  } else {
    str = va_arg(*ap, const char *);
    if (str == NULL)
      str = "(null)";
    len = sp->prec >= 0 ? (int)strnlen(str, sp->prec) : (int)strlen(str);
  }
  struct spec plain = *sp;
  plain.zero = 0;
  put_field(s, &plain, "", 0, str, len);
}

static const char *parse_number(const char *f, int *out, va_list *ap)
{
  if (*f == '*') {
    *out = va_arg(*ap, int);
    return f + 1;
  }
  for (*out = 0; isdigit((unsigned char)*f); f++)
    *out = *out * 10 + (*f - '0');
  return f;
}

// Length modifiers and the size they read: H is hh; l, ll, j, z, t read 64
// bits ('l' and 'L' are the same width on RV64).
static const struct { const char *text; char size; } sizes[] = {
  { "hh", 'H' }, { "ll", 'L' }, { "h", 'h' }, { "l", 'l' }, { "j", 'L' },
  { "z", 'l' }, { "t", 'l' }, { "L", 'L' },
};

const char *fmt_length(const char *f, char *size)
{
  *size = 0;
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    size_t n = strlen(sizes[i].text);
    if (strncmp(f, sizes[i].text, n) == 0) {
      *size = sizes[i].size;
      return f + n;
    }
  }
  return f;
}

// Parses flags, width, precision and length after '%'.
static const char *parse_spec(const char *f, struct spec *sp, va_list *ap)
{
  static const char flags[] = "-+ #0";
  memset(sp, 0, sizeof *sp);
  int *const set[] = { &sp->left, &sp->plus, &sp->space, &sp->alt, &sp->zero };
  for (const char *at; *f && (at = strchr(flags, *f)) != NULL; f++)
    *set[at - flags] = 1;
  f = parse_number(f, &sp->width, ap);
  if (sp->width < 0) {             // a negative * width means '-'
    sp->left = 1;
    sp->width = -sp->width;
  }
  sp->prec = -1;
  if (*f == '.') {
    f = parse_number(f + 1, &sp->prec, ap);
    if (sp->prec < 0)
      sp->prec = -1;               // a negative * precision means none
  }
  f = fmt_length(f, &sp->size);
  sp->conv = *f;
  return f;
}

// Which conversions go to which printer.
static const struct {
  const char *convs;
  void (*put)(struct sink *, const struct spec *, va_list *);
} printers[] = {
  { "diuoxXp", put_integer },
  { "fFeEgG", put_float },
  { "sc", put_string },
};

// ap points to a local va_list (see run_format) so that helpers can
// consume arguments through it portably.
static void format(struct sink *s, const char *f, va_list *ap)
{
  struct spec sp;
  for (; *f; f++) {
    if (*f != '%') {
      sink_put(s, *f);
      continue;
    }
    f = parse_spec(f + 1, &sp, ap);
    if (*f == 0)
      break;
    size_t i = 0;
    while (i < sizeof printers / sizeof printers[0] && !strchr(printers[i].convs, *f))
      i++;
    if (i < sizeof printers / sizeof printers[0]) {
      printers[i].put(s, &sp, ap);
    } else {
      sink_put(s, '%');   // unknown or %%: print literally
      if (*f != '%')
        sink_put(s, *f);
    }
  }
}

static void run_format(struct sink *s, const char *fmt, va_list ap)
{
  va_list args;
  va_copy(args, ap);
  format(s, fmt, &args);
  va_end(args);
}

// Returns the characters produced, or -1 (errno EIO) when a write failed.
int vdprintf(int fd, const char *fmt, va_list ap)
{
  char buf[256];
  struct sink s = { buf, sizeof buf, 0, fd, 0, 0 };
  run_format(&s, fmt, ap);
  sink_flush(&s);
  if (s.failed) {
    errno = EIO;
    return -1;
  }
  return (int)s.total;
}

int dprintf(int fd, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int n = vdprintf(fd, fmt, ap);
  va_end(ap);
  return n;
}

// A failed write also sets the stream's error flag (ferror).
int vfprintf(FILE *f, const char *fmt, va_list ap)
{
  int n = vdprintf(f->fd, fmt, ap);
  if (n < 0)
    f->err = 1;
  return n;
}

int fprintf(FILE *f, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int n = vfprintf(f, fmt, ap);
  va_end(ap);
  return n;
}

int vprintf(const char *fmt, va_list ap)
{
  return vdprintf(STDOUT, fmt, ap);
}

int printf(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int n = vdprintf(STDOUT, fmt, ap);
  va_end(ap);
  return n;
}

int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
  struct sink s = { buf, size, 0, -1, 0, 0 };
  run_format(&s, fmt, ap);
  if (size > 0)
    buf[s.used] = 0;
  return (int)s.total;
}

int snprintf(char *buf, size_t size, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, size, fmt, ap);
  va_end(ap);
  return n;
}

int vasprintf(char **out, const char *fmt, va_list ap)
{
  va_list again;
  va_copy(again, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  char *buf = malloc(n + 1);
  if (buf)
    vsnprintf(buf, n + 1, fmt, again);
  va_end(again);
  if (buf == NULL)
    return -1;
  *out = buf;
  return n;
}

int asprintf(char **out, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int n = vasprintf(out, fmt, ap);
  va_end(ap);
  return n;
}

int vsprintf(char *buf, const char *fmt, va_list ap)
{
  return vsnprintf(buf, (size_t)1 << 30, fmt, ap);
}

int sprintf(char *buf, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, (size_t)1 << 30, fmt, ap);
  va_end(ap);
  return n;
}
