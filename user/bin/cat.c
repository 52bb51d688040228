// cat.c: copy files (or standard input) to standard output.
// Usage: cat [file...]     Exit status 1 if any file could not be read.
#include "user.h"

static int copy_fd(int fd, const char *name)
{
  char buf[1024];
  int n;
  while ((n = read(fd, buf, sizeof buf)) > 0) {
    if (write(STDOUT, buf, n) != n) {
      fprintf(stderr, "cat: write error\n");
      return -1;
    }
  }
  if (n < 0)
    fprintf(stderr, "cat: cannot read %s\n", name);
  return n;
}

int main(int argc, char **argv)
{
  int status = 0;
  if (argc < 2)
    return copy_fd(STDIN, "stdin") < 0;
  for (int i = 1; i < argc; i++) {
    int fd = open(argv[i], O_RDONLY);
    if (fd < 0) {
      fprintf(stderr, "cat: cannot open %s\n", argv[i]);
      status = 1;
      continue;
    }
    if (copy_fd(fd, argv[i]) < 0)
      status = 1;
    close(fd);
  }
  return status;
}
