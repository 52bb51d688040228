// wc.c: count lines, words and bytes.
// Usage: wc [file...]   prints "lines words bytes name" per input.
#include "user.h"

struct counts {
  long lines, words, bytes;
};

static int is_space(char c)
{
  return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\v';
}

static int count_fd(int fd, struct counts *c)
{
  char buf[512];
  int n, in_word = 0;
  memset(c, 0, sizeof *c);
  while ((n = read(fd, buf, sizeof buf)) > 0) {
    for (int i = 0; i < n; i++) {
      c->bytes++;
      if (buf[i] == '\n')
        c->lines++;
      if (is_space(buf[i])) {
        in_word = 0;
      } else if (!in_word) {
        in_word = 1;
        c->words++;
      }
    }
  }
  return n;
}

int main(int argc, char **argv)
{
  struct counts c;
  if (argc < 2) {
    if (count_fd(STDIN, &c) < 0)
      return 1;
    printf("%ld %ld %ld\n", c.lines, c.words, c.bytes);
    return 0;
  }
  int status = 0;
  for (int i = 1; i < argc; i++) {
    int fd = open(argv[i], O_RDONLY);
    if (fd < 0 || count_fd(fd, &c) < 0) {
      fprintf(stderr, "wc: cannot read %s\n", argv[i]);
      status = 1;
    } else {
      printf("%ld %ld %ld %s\n", c.lines, c.words, c.bytes, argv[i]);
    }
    if (fd >= 0)
      close(fd);
  }
  return status;
}
