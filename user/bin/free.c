// free.c: print memory and process counts from sysinfo(), and the demand
// pager's page counts from pagestat(); -v adds every paging counter.
// Usage: free [-v]  Output lines are "key: value" for easy parsing by tests.
#include "user.h"

// pagestat's counters, in struct order after the page counts.
static const struct { const char *name; unsigned long off; } counters[] = {
#define C(f) { #f, __builtin_offsetof(struct pagestat, f) }
  C(slots_used), C(faults), C(evictions), C(clean_evictions), C(writebacks),
  C(wb_batches), C(ra_issued), C(ra_hits), C(io_errors), C(oom),
  C(lat_count), C(lat_sum_ns), C(lat_max_ns),
#undef C
};

static void print_paging(const struct pagestat *ps) {
  for (unsigned i = 0; i < sizeof counters / sizeof counters[0]; i++)
    printf("%s: %lu\n", counters[i].name,
           *(const unsigned long *)((const char *)ps + counters[i].off));
  printf("lat_hist_us:");                  // bucket i: [2^i, 2^(i+1)) us
  for (int i = 0; i < PAGESTAT_BUCKETS; i++) printf(" %lu", ps->lat_hist[i]);
  printf("\n");
}

int main(int argc, char *argv[])
{
  int verbose = argc > 1 && strcmp(argv[1], "-v") == 0;
  struct sysinfo info;
  struct pagestat ps;
  if (sysinfo(&info) < 0 || pagestat(&ps) < 0) {
    fprintf(stderr, "free: sysinfo or pagestat failed\n");
    return 1;
  }
  unsigned long used = info.totalpages - info.freepages;
  printf("total: %lu pages (%lu KiB)\n", info.totalpages, info.totalpages * 4);
  printf("used:  %lu pages (%lu KiB)\n", used, used * 4);
  printf("free:  %lu pages (%lu KiB)\n", info.freepages, info.freepages * 4);
  printf("resident: %lu pages (user memory in RAM)\n", ps.resident);
  printf("paged: %lu pages (user memory in the store; store %lu pages%s)\n",
         ps.paged_out, ps.store_slots, ps.store_slots ? "" : ", paging off");
  printf("procs: %u\n", info.nproc);
  printf("cpus:  %u\n", info.ncpu);
  if (verbose) print_paging(&ps);
  return 0;
}
