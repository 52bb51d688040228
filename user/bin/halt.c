// halt.c: power the machine off.   Usage: halt [status]
// QEMU exits with a status derived from the argument (0 by default), which
// lets the host harness tell a clean shutdown from a failure.
#include "user.h"

int main(int argc, char **argv)
{
  int status = argc > 1 ? atoi(argv[1]) : 0;
  halt(status);
  fprintf(stderr, "halt: the kernel refused to power off\n");
  return 1;
}
