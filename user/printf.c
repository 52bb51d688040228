// printf.c: formatted output for user programs.
//
// One formatter (format) writes into a sink; a sink is either a caller's
// buffer (snprintf) or a small buffer flushed to a file descriptor
// (fprintf). Output to an fd leaves in as few write() calls as possible so
// lines from concurrent processes rarely interleave.
//
// Conversions: %d %i %u %x %p %s %c %%, the 'l' length modifier (%ld %lu
// %lx), a field width, '0' padding and '-' left alignment.
#include "user.h"

struct sink {
  char *buf;
  int size;      // capacity of buf
  int used;      // bytes in buf
  int fd;        // flush target, or -1 for a string sink
  int total;     // characters produced so far
};

static void sink_flush(struct sink *s)
{
  if (s->fd >= 0 && s->used > 0)
    write(s->fd, s->buf, s->used);
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

struct spec {
  int width;
  int zero_pad;
  int left;
  int is_long;
};

static void put_padded(struct sink *s, const char *text, int len,
                       const struct spec *sp)
{
  int pad = sp->width > len ? sp->width - len : 0;
  char fill = sp->zero_pad && !sp->left ? '0' : ' ';
  if (fill == '0' && len > 0 && text[0] == '-') {
    sink_put(s, '-');   // the sign goes before the zeros
    text++;
    len--;
  }
  for (; !sp->left && pad > 0; pad--)
    sink_put(s, fill);
  for (int i = 0; i < len; i++)
    sink_put(s, text[i]);
  for (; pad > 0; pad--)
    sink_put(s, ' ');
}

static void put_number(struct sink *s, char conv, va_list *ap,
                       const struct spec *sp)
{
  char text[70];
  int len;
  if (conv == 'd' || conv == 'i') {
    long v = sp->is_long ? va_arg(*ap, long) : va_arg(*ap, int);
    len = itoa(v, text, 10);
  } else if (conv == 'p') {
    text[0] = '0';
    text[1] = 'x';
    len = 2 + itoa((long)va_arg(*ap, void *), text + 2, 16);
  } else {
    unsigned long v = sp->is_long ? va_arg(*ap, unsigned long)
                                  : va_arg(*ap, unsigned int);
    len = conv == 'x' ? itoa((long)v, text, 16) : 0;
    if (conv == 'u') {
      // itoa treats negative longs as signed in base 10; print unsigned.
      char rev[24];
      int n = 0;
      do {
        rev[n++] = '0' + v % 10;
        v /= 10;
      } while (v);
      while (n > 0)
        text[len++] = rev[--n];
      text[len] = 0;
    }
  }
  put_padded(s, text, len, sp);
}

// Parses flags, width and length after '%'; returns the conversion char.
static const char *parse_spec(const char *f, struct spec *sp)
{
  memset(sp, 0, sizeof *sp);
  for (;; f++) {
    if (*f == '0')
      sp->zero_pad = 1;
    else if (*f == '-')
      sp->left = 1;
    else
      break;
  }
  while (*f >= '0' && *f <= '9')
    sp->width = sp->width * 10 + (*f++ - '0');
  while (*f == 'l') {
    sp->is_long = 1;
    f++;
  }
  return f;
}

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
    f = parse_spec(f + 1, &sp);
    if (*f == 0)
      break;
    if (*f == 's') {
      const char *str = va_arg(*ap, const char *);
      if (str == NULL)
        str = "(null)";
      put_padded(s, str, strlen(str), &sp);
    } else if (*f == 'c') {
      char c = (char)va_arg(*ap, int);
      put_padded(s, &c, 1, &sp);
    } else if (strchr("diuxp", *f)) {
      put_number(s, *f, ap, &sp);
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

int vfprintf(int fd, const char *fmt, va_list ap)
{
  char buf[256];
  struct sink s = { buf, sizeof buf, 0, fd, 0 };
  run_format(&s, fmt, ap);
  sink_flush(&s);
  return s.total;
}

int fprintf(int fd, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int n = vfprintf(fd, fmt, ap);
  va_end(ap);
  return n;
}

int printf(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int n = vfprintf(STDOUT, fmt, ap);
  va_end(ap);
  return n;
}

int vsnprintf(char *buf, int size, const char *fmt, va_list ap)
{
  struct sink s = { buf, size, 0, -1, 0 };
  run_format(&s, fmt, ap);
  if (size > 0)
    buf[s.used] = 0;
  return s.total;
}

int snprintf(char *buf, int size, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, size, fmt, ap);
  va_end(ap);
  return n;
}
