// stdio.c: FILE streams (<stdio.h>): stdin, stdout, stderr and fopen'd
// files over file descriptors.
//
// Output is not kept across calls: every call (fputs, fwrite, fprintf, ...)
// leaves in write()s before it returns, so nothing is lost at exit (exit is
// the bare system call) and fflush has nothing to do. Input is read ahead
// in a buffer of FILE_RBUF bytes per stream.
#include "user.h"

static FILE std_streams[3] = { { .fd = 0 }, { .fd = 1 }, { .fd = 2 } };
FILE *stdin = &std_streams[0];
FILE *stdout = &std_streams[1];
FILE *stderr = &std_streams[2];

// fopen's modes and the open() flags they mean ('b' is ignored).
static const struct { const char *mode; int flags; } modes[] = {
  { "r", O_RDONLY }, { "r+", O_RDWR },
  { "w", O_WRONLY | O_CREAT | O_TRUNC }, { "w+", O_RDWR | O_CREAT | O_TRUNC },
};

static int mode_flags(const char *mode)
{
  char m[3] = { 0 };
  for (int n = 0; *mode && n < 2; mode++) {
    if (*mode != 'b')
      m[n++] = *mode;
  }
  for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
    if (strcmp(modes[i].mode, m) == 0)
      return modes[i].flags;
  }
  return -1;
}

FILE *fdopen(int fd, const char *mode)
{
  if (fd < 0 || mode_flags(mode) < 0) {
    errno = EINVAL;
    return NULL;
  }
  FILE *f = calloc(1, sizeof *f);
  if (f)
    f->fd = fd;
  return f;
}

// Modes r, r+, w, w+ (with or without b); "a" is refused with EINVAL: the
// kernel has no O_APPEND.
FILE *fopen(const char *path, const char *mode)
{
  int flags = mode_flags(mode);
  if (flags < 0) {
    errno = EINVAL;
    return NULL;
  }
  int fd = open(path, flags, 0666);
  if (fd < 0) {
    errno = ENOENT;
    return NULL;
  }
  FILE *f = fdopen(fd, mode);
  if (f == NULL)
    close(fd);
  return f;
}

int fclose(FILE *f)
{
  int r = close(f->fd);
  if (f >= std_streams && f < std_streams + 3)
    f->fd = -1;
  else
    free(f);
  return r < 0 ? EOF : 0;
}

int fflush(FILE *f)
{
  (void)f;
  return 0;
}

int fileno(FILE *f) { return f->fd; }
int feof(FILE *f) { return f->eof; }
int ferror(FILE *f) { return f->err; }
void clearerr(FILE *f) { f->eof = f->err = 0; }

// Buffering is fixed (see the top of the file): accepted and ignored.
int setvbuf(FILE *f, char *buf, int mode, size_t size)
{
  (void)f; (void)buf; (void)mode; (void)size;
  return 0;
}

void setbuf(FILE *f, char *buf)
{
  setvbuf(f, buf, buf ? _IOFBF : _IONBF, BUFSIZ);
}

size_t fwrite(const void *p, size_t size, size_t count, FILE *f)
{
  size_t total = size * count, done = 0;
  while (done < total) {
    int chunk = total - done > (1u << 30) ? 1 << 30 : (int)(total - done);
    int r = write(f->fd, (const char *)p + done, chunk);
    if (r <= 0) {
      f->err = 1;
      errno = EIO;
      break;
    }
    done += r;
  }
  return size ? done / size : 0;
}

int fputs(const char *s, FILE *f)
{
  size_t n = strlen(s);
  return fwrite(s, 1, n, f) == n ? 0 : EOF;
}

int puts(const char *s)
{
  size_t n = strlen(s);
  char *line = malloc(n + 1);
  if (line == NULL)   // two writes rather than none
    return fputs(s, stdout) == EOF ? EOF : fputc('\n', stdout);
  memcpy(line, s, n);
  line[n] = '\n';
  int r = fwrite(line, 1, n + 1, stdout) == n + 1 ? 0 : EOF;
  free(line);
  return r;
}

int fputc(int c, FILE *f)
{
  unsigned char b = (unsigned char)c;
  return fwrite(&b, 1, 1, f) == 1 ? b : EOF;
}

int putc(int c, FILE *f) { return fputc(c, f); }
int putchar(int c) { return fputc(c, stdout); }

int fgetc(FILE *f)
{
  if (f->rpos == f->rlen) {
    int r = read(f->fd, f->rbuf, sizeof f->rbuf);
    if (r <= 0) {
      if (r < 0)
        f->err = 1;
      else
        f->eof = 1;
      return EOF;
    }
    f->rpos = 0;
    f->rlen = r;
  }
  return f->rbuf[f->rpos++];
}

int getc(FILE *f) { return fgetc(f); }
int getchar(void) { return fgetc(stdin); }

// One push back, as C promises.
int ungetc(int c, FILE *f)
{
  if (c == EOF || f->rpos == 0)
    return EOF;
  f->rbuf[--f->rpos] = (unsigned char)c;
  f->eof = 0;
  return (unsigned char)c;
}

size_t fread(void *p, size_t size, size_t count, FILE *f)
{
  size_t total = size * count, done = 0;
  unsigned char *out = p;
  for (int c; done < total && (c = fgetc(f)) != EOF; )
    out[done++] = (unsigned char)c;
  return size ? done / size : 0;
}

// Reads up to size-1 bytes, through the first newline (kept).
char *fgets(char *buf, int size, FILE *f)
{
  int n = 0;
  for (int c; n + 1 < size && (c = fgetc(f)) != EOF; ) {
    buf[n++] = (char)c;
    if (c == '\n')
      break;
  }
  if (n == 0 || size <= 0)
    return NULL;
  buf[n] = 0;
  return buf;
}

void perror(const char *what)
{
  const char *text = strerror(errno);
  if (what && *what)
    dprintf(STDERR, "%s: %s\n", what, text);
  else
    dprintf(STDERR, "%s\n", text);
}

// Every assertion failure ends here (<assert.h>).
void assert_fail(const char *expr, const char *file, int line, const char *func)
{
  dprintf(STDERR, "%s:%d: %s: Assertion `%s' failed.\n", file, line, func, expr);
  abort();
}
