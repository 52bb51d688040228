// rm.c: remove names (files, or empty directories).   Usage: rm name...
#include "user.h"

int main(int argc, char **argv)
{
  int status = 0;
  if (argc < 2) {
    fprintf(stderr, "usage: rm name...\n");
    return 1;
  }
  for (int i = 1; i < argc; i++) {
    if (unlink(argv[i]) < 0) {
      fprintf(stderr, "rm: cannot remove %s\n", argv[i]);
      status = 1;
    }
  }
  return status;
}
