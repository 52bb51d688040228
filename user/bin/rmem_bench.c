// rmem_bench.c: READ / WRITE latency and throughput against a memory node
// through librmem, perftest-style. Per op and size: latency of one access
// at a time (average, median, p99 over -n accesses) and throughput with -d
// accesses in flight (-n accesses of that size). Builds for xv6 and Linux.
//
//   rmem_bench -s SERVER [-p port] [-t read|write|both] [-a | -S bytes]
//              [-n iters] [-d depth] [-c] [-r]
//     -a   every power of two from 64 B to 1 MiB (default: 64 B, 4 KiB, 64 KiB, 1 MiB)
//     -c   also one CSV line per row: "csv,op,bytes,iters,depth,lat_avg_us,
//          lat_p50_us,lat_p99_us,bw_MBps" (bench/rdma/rmem_bench.py reads them)
//     -r   offer selective repeat (xv6's transport extension; the default is go-back-N)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <time.h>
#include <getopt.h>
#include "user/lib/rmem/rmem.h"

#define MIN_SIZE 64
#define MAX_SIZE (1u << 20)
#define REGION_MAX (4u << 20)          // the region the accesses cycle over, at most

static struct {
  const char *server;
  int port, ops, all, csv, iters, depth, sr;   // ops: bit 0 READ, bit 1 WRITE
  uint32_t size;
} opt = { 0, 0, 3, 0, 0, 200, 16, 0, 0 };

static struct rmem *m;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die(const char *what) {
  printf("rmem_bench: %s: %s\n", what, rmem_last_error(m));
  exit(1);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

// One access at a time: latencies in ns into lat[0..n).
static void latency(int write, const struct rmem_region *r, uint8_t *buf, uint32_t size, uint64_t *lat) {
  uint64_t slots = r->length / size;
  for (int i = 0; i < opt.iters; i++) {
    uint64_t off = (uint64_t)(i % slots) * size, t = now_ns();
    if (write ? rmem_write(m, r, off, buf + off, size) : rmem_read(m, r, off, buf + off, size))
      die(write ? "write" : "read");
    lat[i] = now_ns() - t;
  }
}

// opt.iters accesses with opt.depth in flight; the ns they took.
static uint64_t throughput(int write, const struct rmem_region *r, uint8_t *buf, uint32_t size) {
  uint64_t slots = r->length / size, t = now_ns();
  int posted = 0, done = 0;
  while (done < opt.iters) {
    while (posted < opt.iters && rmem_inflight(m) < opt.depth) {
      uint64_t off = (uint64_t)(posted % slots) * size;
      int rc = write ? rmem_post_write(m, r, off, buf + off, size, (uint64_t)posted)
                     : rmem_post_read(m, r, off, buf + off, size, (uint64_t)posted);
      if (rc) die("post");
      posted++;
    }
    struct rmem_comp c[32];
    int n = rmem_wait(m, c, 32, 60000);
    if (n < 0) die("wait");
    for (int k = 0; k < n; k++)
      if (c[k].error) die("an access");
    done += n;
  }
  return now_ns() - t;
}

static void row(int write, uint32_t size, uint8_t *buf) {
  struct rmem_region r;
  uint64_t region = (uint64_t)size * (uint64_t)opt.depth;
  if (region > REGION_MAX) region = REGION_MAX < size ? size : REGION_MAX;
  if (rmem_alloc(m, region, &r)) die("alloc");
  uint64_t *lat = malloc(sizeof(uint64_t) * (size_t)opt.iters);
  if (!lat) die("malloc");
  latency(write, &r, buf, size, lat);
  qsort(lat, (size_t)opt.iters, sizeof *lat, cmp_u64);
  uint64_t total = 0;
  for (int i = 0; i < opt.iters; i++) total += lat[i];
  double avg = (double)total / opt.iters / 1000.0, p50 = (double)lat[opt.iters / 2] / 1000.0;
  double p99 = (double)lat[(opt.iters * 99) / 100 < opt.iters ? (opt.iters * 99) / 100 : opt.iters - 1] / 1000.0;
  uint64_t ns = throughput(write, &r, buf, size);
  double mbps = (double)size * opt.iters / ((double)ns / 1e9) / 1e6;
  const char *op = write ? "WRITE" : "READ";
  printf(" %-5s %8u %8d %5d %10.2f %10.2f %10.2f %10.2f\n", op, size, opt.iters, opt.depth, avg, p50, p99, mbps);
  if (opt.csv)
    printf("csv,%s,%u,%d,%d,%.2f,%.2f,%.2f,%.2f\n", op, size, opt.iters, opt.depth, avg, p50, p99, mbps);
  free(lat);
  if (rmem_free(m, r.id)) die("free");
}

static void usage(void) {
  printf("usage: rmem_bench -s SERVER [-p port] [-t read|write|both] [-a | -S bytes] [-n iters] [-d depth] [-c] [-r]\n");
  exit(2);
}

static void parse(int argc, char **argv) {
  int ch;
  while ((ch = getopt(argc, argv, "s:p:t:aS:n:d:cr")) != -1) {
    switch (ch) {
    case 's': opt.server = optarg; break;
    case 'p': opt.port = atoi(optarg); break;
    case 't': opt.ops = !strcmp(optarg, "read") ? 1 : !strcmp(optarg, "write") ? 2 : !strcmp(optarg, "both") ? 3 : 0; break;
    case 'a': opt.all = 1; break;
    case 'S': opt.size = (uint32_t)atoi(optarg); break;
    case 'n': opt.iters = atoi(optarg); break;
    case 'd': opt.depth = atoi(optarg); break;
    case 'c': opt.csv = 1; break;
    case 'r': opt.sr = 1; break;
    default: usage();
    }
  }
  if (!opt.server || !opt.ops || opt.iters < 1 || opt.iters > 1000000 || opt.depth < 1 ||
      opt.depth > RMEM_MAX_INFLIGHT || (opt.size && (opt.size < 1 || opt.size > MAX_SIZE)) || optind != argc)
    usage();
}

int main(int argc, char **argv) {
  static const uint32_t few[] = { 64, 4096, 65536, 1u << 20 };
  parse(argc, argv);
  struct rmem_opts o = { opt.sr };
  m = rmem_connect_opts(opt.server, opt.port, &o);
  if (!m) die("connect");
  uint8_t *buf = malloc(REGION_MAX);
  if (!buf || rmem_reg(m, buf, REGION_MAX)) die("registering the local buffer");
  memset(buf, 0x5a, REGION_MAX);
  printf(" %-5s %8s %8s %5s %10s %10s %10s %10s\n", "op", "#bytes", "#iters", "depth", "t_avg[us]",
         "t_p50[us]", "t_p99[us]", "BW[MB/s]");
  for (int write = 0; write < 2; write++) {
    if (!(opt.ops & (1 << write))) continue;
    if (opt.size) row(write, opt.size, buf);
    else if (opt.all) for (uint32_t s = MIN_SIZE; s <= MAX_SIZE; s *= 2) row(write, s, buf);
    else for (size_t i = 0; i < sizeof few / sizeof few[0]; i++) row(write, few[i], buf);
  }
  rmem_close(m);
  printf("rmem_bench: done\n");
  return 0;
}
