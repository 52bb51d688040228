// memtouch.c: touches a working set larger than the guest's memory and
// checks every byte, to test demand paging (kernel/core/pager.c).
//
// Usage: memtouch [-m MiB] [-p passes] [-r touches] [-s seed] [-f] [-n N] [-q]
//   -m  working set (default 16 MiB), taken with sbrk
//   -p  sequential passes, each reading every page and checking it (default 2)
//   -r  random 4 KiB touches: read and check a page, then rewrite it (default 2000)
//   -s  seed of the pattern and the random touches (default 1)
//   -f  fork a second toucher (seed + 1) running at the same time (-n 2)
//   -n  N touchers at once (seeds seed .. seed + N - 1), 1..MAX_TOUCHERS
//   -q  no progress lines
// Every 8-byte word holds a value made from (seed, page, the page's write
// generation, word), so a wrong, stale or misplaced page is caught. Prints
// progress lines and one result line:
//   memtouch: ok pid P MiB N seq_ms S rand_ms R faults F evictions E
//             ra_hits H lat_median_us M lat_p99_us Q
// (one line; the latencies are log2-bucket upper bounds from pagestat),
// or "memtouch: MISMATCH ..." / "memtouch: FAILED ..." and exit status 1.
#include "user.h"

#define PAGE 4096
#define WORDS (PAGE / 8)
#define MAX_TOUCHERS 8

static unsigned long seed = 1;
static int quiet;

static unsigned long mix(unsigned long x) {
  x ^= x >> 31; x *= 0x7fb5d329728ea185UL;
  x ^= x >> 27; x *= 0x81dadef4bc2dd44dUL;
  return x ^ (x >> 33);
}

static unsigned long word_value(unsigned long page, unsigned gen, unsigned long w) {
  return mix(seed * 0x9e3779b97f4a7c15UL ^ (page << 24) ^ ((unsigned long)gen << 12)) + w;
}

static void fill(unsigned long *p, unsigned long page, unsigned gen) {
  for (unsigned long w = 0; w < WORDS; w++) p[w] = word_value(page, gen, w);
}

static void check(const unsigned long *p, unsigned long page, unsigned gen) {
  for (unsigned long w = 0; w < WORDS; w++) {
    unsigned long want = word_value(page, gen, w);
    if (p[w] != want) {
      printf("memtouch: MISMATCH pid %d page %lu word %lu (gen %u): got %lx want %lx\n",
             getpid(), page, w, gen, p[w], want);
      exit(1);
    }
  }
}

static unsigned long rng_state;
static unsigned long rng(void) { return mix(++rng_state); }

// Upper bound in us of the bucket holding the q-th quantile (0..100) of
// the faults counted between a and b.
static unsigned long lat_quantile(const struct pagestat *a, const struct pagestat *b, int q) {
  unsigned long n = b->lat_count - a->lat_count, seen = 0;
  if (n == 0) return 0;
  for (int i = 0; i < PAGESTAT_BUCKETS; i++) {
    seen += b->lat_hist[i] - a->lat_hist[i];
    if (seen * 100 >= n * (unsigned long)q) return 1UL << (i + 1);
  }
  return 1UL << PAGESTAT_BUCKETS;
}

static void progress(const char *what, unsigned long ms) {
  if (quiet) return;
  struct pagestat ps;
  pagestat(&ps);
  printf("memtouch: pid %d %s done in %lu ms (resident %lu paged %lu faults %lu evictions %lu)\n",
         getpid(), what, ms, ps.resident, ps.paged_out, ps.faults, ps.evictions);
}

static int toucher(unsigned long mib, int passes, int touches) {
  unsigned long npages = mib * 1024 * 1024 / PAGE;
  unsigned char *gen = malloc(npages);
  char *base = sbrk(0);
  if (!gen || (unsigned long)base % PAGE) sbrk(PAGE - (unsigned long)base % PAGE);
  base = sbrk((int)(npages * PAGE));
  if (!gen || base == (char *)-1) {
    printf("memtouch: FAILED pid %d: cannot get %lu MiB (sbrk)\n", getpid(), mib);
    return 1;
  }
  rng_state = seed << 32;
  struct pagestat before, after;
  pagestat(&before);
  unsigned long t0 = clock_ns();
  for (unsigned long i = 0; i < npages; i++) {
    gen[i] = 0;
    fill((unsigned long *)(base + i * PAGE), i, 0);
  }
  progress("write", (clock_ns() - t0) / 1000000);
  unsigned long t1 = clock_ns();
  for (int p = 0; p < passes; p++)
    for (unsigned long i = 0; i < npages; i++)
      check((unsigned long *)(base + i * PAGE), i, gen[i]);
  unsigned long seq_ms = (clock_ns() - t1) / 1000000;
  progress("sequential scan", seq_ms);
  unsigned long t2 = clock_ns();
  for (int k = 0; k < touches; k++) {
    unsigned long i = rng() % npages;
    unsigned long *pg = (unsigned long *)(base + i * PAGE);
    check(pg, i, gen[i]);
    fill(pg, i, ++gen[i]);
  }
  unsigned long rand_ms = (clock_ns() - t2) / 1000000;
  progress("random touches", rand_ms);
  for (unsigned long i = 0; i < npages; i++)
    check((unsigned long *)(base + i * PAGE), i, gen[i]);
  pagestat(&after);
  printf("memtouch: ok pid %d MiB %lu seq_ms %lu rand_ms %lu faults %lu evictions %lu "
         "ra_hits %lu lat_median_us %lu lat_p99_us %lu\n",
         getpid(), mib, seq_ms, rand_ms, after.faults - before.faults,
         after.evictions - before.evictions, after.ra_hits - before.ra_hits,
         lat_quantile(&before, &after, 50), lat_quantile(&before, &after, 99));
  return 0;
}

int main(int argc, char *argv[]) {
  unsigned long mib = 16;
  int passes = 2, touches = 2000, n = 1, c;
  while ((c = getopt(argc, argv, "m:p:r:s:fn:q")) != -1) {
    switch (c) {
    case 'm': mib = strtoul(optarg, 0, 10); break;
    case 'p': passes = atoi(optarg); break;
    case 'r': touches = atoi(optarg); break;
    case 's': seed = strtoul(optarg, 0, 10); break;
    case 'f': n = 2; break;
    case 'n': n = atoi(optarg); break;
    case 'q': quiet = 1; break;
    default:
      fprintf(stderr, "usage: memtouch [-m MiB] [-p passes] [-r touches] [-s seed] [-f] [-n N] [-q]\n");
      return 2;
    }
  }
  if (mib == 0 || mib > 512) {
    fprintf(stderr, "memtouch: -m %lu: the working set must be 1..512 MiB\n", mib);
    return 2;
  }
  if (n < 1 || n > MAX_TOUCHERS) {
    fprintf(stderr, "memtouch: -n %d: 1..%d touchers\n", n, MAX_TOUCHERS);
    return 2;
  }
  int forked = 0, r = 0;
  for (; forked < n - 1; forked++) {
    int pid = fork();
    if (pid == 0) {
      seed += forked + 1;
      exit(toucher(mib, passes, touches));
    }
    if (pid < 0) {
      printf("memtouch: FAILED fork of toucher %d\n", forked + 2);
      r = 1;
      break;
    }
  }
  if (r == 0) r = toucher(mib, passes, touches);
  for (int k = 0; k < forked; k++) {   // the children only: any order
    int status = -1, pid = wait(&status);
    if (pid < 0 || status != 0) {
      printf("memtouch: FAILED toucher pid %d exit status %d\n", pid, status);
      r = 1;
    }
  }
  return r;
}
