// ln.c: make a second name for a file.   Usage: ln existing new
#include "user.h"

int main(int argc, char **argv)
{
  if (argc != 3) {
    fprintf(stderr, "usage: ln existing new\n");
    return 1;
  }
  if (link(argv[1], argv[2]) < 0) {
    fprintf(stderr, "ln: cannot link %s to %s\n", argv[2], argv[1]);
    return 1;
  }
  return 0;
}
