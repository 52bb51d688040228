// scanf.c: sscanf, fields from a string (<stdio.h>). Conversions: %d %i
// %u %o %x %X, %f %e %g (float, or double with l), %s, %c, %[set] and
// %[^set], %n and %%; a width, '*' (read, assign nothing) and the size
// modifiers hh h l ll j z t. No stream forms: there is no input stream
// worth parsing this way here (readline + sscanf does it).
#include "user.h"
#include "libc_impl.h"

struct field {
  int skip;      // '*': assign nothing
  int width;     // 0: none
  char size;     // as printf.c: 'H' hh, 'h', 'l' (l z t j), 'L' ll, 0 int
  char conv;
};

// Precondition: ap holds a pointer of the field's size next.
static void store_integer(va_list *ap, char size, unsigned long long v)
{
  switch (size) {
  case 'H': *va_arg(*ap, unsigned char *) = (unsigned char)v; break;
  case 'h': *va_arg(*ap, unsigned short *) = (unsigned short)v; break;
  case 'l': case 'L': *va_arg(*ap, unsigned long long *) = v; break;
  default:  *va_arg(*ap, unsigned int *) = (unsigned int)v; break;
  }
}

// Integer and floating fields: up to width characters into a bounded copy,
// then the strto* functions. Returns characters used, 0 if none matched.
static int scan_number(const char *in, const struct field *fd, va_list *ap)
{
  static const struct { char conv; int base; } bases[] = {
    { 'd', 10 }, { 'u', 10 }, { 'i', 0 }, { 'o', 8 }, { 'x', 16 }, { 'X', 16 },
  };
  char text[64], *end;
  int w = fd->width && fd->width < (int)sizeof text ? fd->width : (int)sizeof text - 1;
  strncpy_z(text, in, w + 1);
  if (strchr("feEgGaA", fd->conv)) {
    double v = strtod(text, &end);
    if (end != text && !fd->skip) {
      if (fd->size == 'l' || fd->size == 'L')
        *va_arg(*ap, double *) = v;
      else
        *va_arg(*ap, float *) = (float)v;
    }
    return end - text;
  }
  int base = 10;
  for (size_t i = 0; i < sizeof bases / sizeof bases[0]; i++) {
    if (bases[i].conv == fd->conv)
      base = bases[i].base;
  }
  unsigned long long v = fd->conv == 'd' || fd->conv == 'i'
    ? (unsigned long long)strtoll(text, &end, base) : strtoull(text, &end, base);
  if (end != text && !fd->skip)
    store_integer(ap, fd->size, v);
  return end - text;
}

// Is c in the scanset that starts after '[' at *setp? Leaves *setp at the
// closing ']'.
static int in_scanset(const char *set, int c, const char **close)
{
  int negate = *set == '^', found = 0;
  if (negate)
    set++;
  const char *p = set;
  if (*p == ']')
    p++;   // a leading ']' is a member
  for (; *p && *p != ']'; p++) {
    if (p[1] == '-' && p[2] && p[2] != ']') {
      found |= c >= (unsigned char)p[0] && c <= (unsigned char)p[2];
      p += 2;
    } else {
      found |= c == (unsigned char)*p;
    }
  }
  if (*set == ']' && c == ']')
    found = 1;
  *close = p;
  return found != negate;
}

// %s, %c and %[: characters copied (with a NUL except for %c).
static int scan_chars(const char *in, struct field *fd, const char **fmt, va_list *ap)
{
  char *out = fd->skip ? NULL : va_arg(*ap, char *);
  int max = fd->width ? fd->width : fd->conv == 'c' ? 1 : 1 << 30, n = 0;
  const char *close = *fmt;
  for (; n < max && in[n]; n++) {
    int c = (unsigned char)in[n];
    if (fd->conv == 's' ? isspace(c) : fd->conv == '[' ? !in_scanset(*fmt + 1, c, &close) : 0)
      break;
    if (out)
      out[n] = in[n];
  }
  if (fd->conv == '[')
    in_scanset(*fmt + 1, 0, &close);   // find the end of the set even when n == 0
  *fmt = fd->conv == '[' ? close : *fmt;
  if (out && fd->conv != 'c' && n > 0)
    out[n] = 0;
  return fd->conv == 'c' && n < max ? 0 : n;
}

static const char *parse_field(const char *f, struct field *fd)
{
  memset(fd, 0, sizeof *fd);
  if (*f == '*') {
    fd->skip = 1;
    f++;
  }
  while (isdigit((unsigned char)*f))
    fd->width = fd->width * 10 + (*f++ - '0');
  f = fmt_length(f, &fd->size);
  fd->conv = *f;
  return f;
}

int vsscanf(const char *str, const char *fmt, va_list ap_in)
{
  va_list ap;
  va_copy(ap, ap_in);
  const char *in = str;
  int assigned = 0, converted = 0;
  struct field fd;
  for (const char *f = fmt; *f; f++) {
    if (isspace((unsigned char)*f)) {
      while (isspace((unsigned char)*in))
        in++;
      continue;
    }
    if (*f != '%' || f[1] == '%') {
      f += *f == '%';
      if (*f == '%')
        while (isspace((unsigned char)*in))
          in++;
      if (*in != *f)
        break;
      in++;
      continue;
    }
    f = parse_field(f + 1, &fd);
    if (fd.conv == 'n') {
      if (!fd.skip)
        store_integer(&ap, fd.size, in - str);
      continue;
    }
    if (fd.conv != 'c' && fd.conv != '[')
      while (isspace((unsigned char)*in))
        in++;
    if (*in == 0 || fd.conv == 0)
      break;
    int used = strchr("sc[", fd.conv) ? scan_chars(in, &fd, &f, &ap)
                                      : scan_number(in, &fd, &ap);
    if (used == 0)
      break;
    in += used;
    converted++;
    assigned += !fd.skip;
  }
  va_end(ap);
  return converted == 0 && *in == 0 && *fmt ? -1 : assigned;
}

int sscanf(const char *str, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int n = vsscanf(str, fmt, ap);
  va_end(ap);
  return n;
}
