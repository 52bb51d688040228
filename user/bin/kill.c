// kill.c: kill processes by pid.   Usage: kill pid...
#include "user.h"

int main(int argc, char **argv)
{
  int status = 0;
  if (argc < 2) {
    fprintf(stderr, "usage: kill pid...\n");
    return 1;
  }
  for (int i = 1; i < argc; i++) {
    if (kill(atoi(argv[i])) < 0) {
      fprintf(stderr, "kill: no process %s\n", argv[i]);
      status = 1;
    }
  }
  return status;
}
