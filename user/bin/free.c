// free.c: print memory and process counts from sysinfo().
// Usage: free      Output lines are "key: value" for easy parsing by tests.
#include "user.h"

int main(void)
{
  struct sysinfo info;
  if (sysinfo(&info) < 0) {
    fprintf(stderr, "free: sysinfo failed\n");
    return 1;
  }
  unsigned long used = info.totalpages - info.freepages;
  printf("total: %lu pages (%lu KiB)\n", info.totalpages, info.totalpages * 4);
  printf("used:  %lu pages (%lu KiB)\n", used, used * 4);
  printf("free:  %lu pages (%lu KiB)\n", info.freepages, info.freepages * 4);
  printf("procs: %u\n", info.nproc);
  printf("cpus:  %u\n", info.ncpu);
  return 0;
}
