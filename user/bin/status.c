// status.c: run a command and print how it ended.
//
// Usage: status CMD [ARG]...   Runs CMD (looked up as the shell does: as
// given, then under /) and, once it has exited, prints
// "status: CMD exited N" with its exit status N, and exits with N itself.
// The shell shows no exit statuses; tests that must see a program's status
// (tests/rdma/run_examples.py: the unmodified librdmacm examples) run it
// through this.
#include "user.h"

int main(int argc, char **argv)
{
  if (argc < 2) {
    fprintf(stderr, "usage: status CMD [ARG]...\n");
    exit(2);
  }
  int pid = fork();
  if (pid < 0) {
    fprintf(stderr, "status: fork failed\n");
    exit(1);
  }
  if (pid == 0) {
    char path[128];
    exec(argv[1], argv + 1);
    snprintf(path, sizeof path, "/%s", argv[1]);
    exec(path, argv + 1);
    fprintf(stderr, "status: %s: not found\n", argv[1]);
    exit(127);
  }
  int st = 0;
  if (wait(&st) != pid) {
    fprintf(stderr, "status: wait for %s failed\n", argv[1]);
    exit(1);
  }
  printf("status: %s exited %d\n", argv[1], st);
  exit(st);
}
