/*
 * bench.c: transport benchmarks in the host simulator (make bench-sim).
 *
 * 1. Goodput and message completion time (p50/p99) of RDMA WRITEs (64 KiB
 *    and 1 MiB) and READs (1 MiB) against
 *    random loss {0, 0.1, 0.5, 1, 2, 5, 10 %} (both directions), go-back-N
 *    against selective repeat, path MTU 4096,
 *    on two simulated links:
 *      100g: rate 100gbit, delay 5us each way (10 us RTT)
 *      1g:   rate 1gbit,   delay 100us each way (200 us RTT)
 *    Enough messages are kept posted to hold ~4 bandwidth-delay products in
 *    flight; a message's completion time runs from its post to its CQE.
 * 2. The core's host CPU cost: time inside rct_handle_frame,
 *    rct_dev_poll_transmit and rct_dev_handle_timeout (the link, the
 *    simulator and frame linearization excluded), as frames processed per
 *    second per core, with software ICRC and with RCT_DEV_ICRC_OFFLOAD; the
 *    payload placement copy is excluded by subtracting its calibrated cost, and
 *    so is the cost of the clock reads around each timed call. Timed twice:
 *    with the thread's CPU-time clock (ignores preemption on a shared host,
 *    but each read is a system call) and with the wall clock.
 * Output: OUT/sim-goodput.csv, OUT/sim-cpu.csv (bench/sim/plot.py draws the
 * PNGs and writes sim-summary.md). Progress lines go to stdout.
 *
 * Usage: sim-bench [--out DIR] [--seed N] [--mib N] [--quick] [--op WRITE|READ]
 *                  [--inflight N100G N1G] [--timeout CODE100G CODE1G]
 *                  [--adaptive-rto MIN_NS] [--probe-slack NS100G NS1G]
 *                  [--trace-point NAME FILE]
 */
#include "scenario.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct linkdef {
  const char *name, *spec;
  double gbps, rtt_us;
  uint32_t max_inflight;
  uint8_t timeout;                      /* IBTA code */
  uint64_t probe_slack_ns;              /* early probe at 2 SRTT + this [REQ-TMO-10] */
};

/* In-flight caps, the same for SR and GBN (the spec gives GBN no other
 * window): 100g: BDP 125 KB = 30 packets -> 128 (about 4 BDPs: an SR loss
 * holds una for about 2 RTTs, the SACK and the resend, so 2 BDPs stalled
 * the sender once per loss; the core's SR window is 256); 1g: BDP 25 KB =
 * 6 packets -> 32. The IBTA timeout sits just above RTT + the queue the
 * window can build at the bottleneck (128 x 4 KiB at 100 Gb/s = 42 us;
 * 32 x 4 KiB at 1 Gb/s = 1.05 ms). The early probe's slack [REQ-TMO-10] is
 * about a tenth of the unloaded RTT: SRTT under load is about 25 us (100g)
 * and 1 ms (1g), so 2 SRTT + slack must stay under the RTO for the probe
 * to come first; 2 us / 20 us beat 5 / 50 and 20 / 200 at 5 and 10 % loss.
 * Other choices: --inflight / --timeout / --adaptive-rto / --probe-slack. */
static struct linkdef links[] = {
  {"100g", "rate 100gbit delay 5us", 100, 10, 128, 4, 2000},    /* RTO 65.5 us */
  {"1g", "rate 1gbit delay 100us", 1, 200, 32, 9, 20000},      /* RTO 2.1 ms */
};
static uint64_t adaptive_min_rto_ns;    /* --adaptive-rto NS: RFC 6298-style RTO */
static const char *trace_point;          /* --trace-point NAME: trace that run */
static const char *trace_file = "bench-trace.txt";
static const char *only_op;              /* --op NAME: only that workload's goodput cells, no CPU cost */

static const double losses[] = {0, 0.1, 0.5, 1, 2, 5, 10};
/* The goodput table's workloads (the CSV's op and size columns). */
static const struct workload { enum rct_wr_opcode op; const char *name; uint32_t size; } workloads[] = {
  {RCT_WR_RDMA_WRITE, "WRITE", 64u << 10},
  {RCT_WR_RDMA_WRITE, "WRITE", 1u << 20},
  {RCT_WR_RDMA_READ, "READ", 1u << 20},
};

static double wall(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_u64(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static uint32_t pow2_at_least(uint32_t n)
{
  uint32_t p = 1;
  while (p < n)
    p <<= 1;
  return p;
}

static void setup(struct scenario *sc, const struct linkdef *l, int sr, const struct workload *wl, double loss,
                  uint64_t seed, uint64_t total_bytes)
{
  uint32_t size = wl->size;
  memset(sc, 0, sizeof *sc);
  snprintf(sc->name, sizeof sc->name, "%s %s %s %u loss %g%%", l->name, sr ? "sr" : "gbn", wl->name, size, loss);
  sc->op = wl->op;
  sc->size = size;
  sc->nmsgs = (uint32_t)(total_bytes / size);
  if (sc->nmsgs < 8)
    sc->nmsgs = 8;
  snprintf(sc->link, sizeof sc->link, "%s loss %g%%", l->spec, loss);
  sim_default_params(&sc->p);
  sc->p.sr = sr;
  sc->p.max_inflight = l->max_inflight;
  sc->p.timeout = l->timeout;
  sc->p.probe_slack_ns = l->probe_slack_ns;
  double bdp = l->gbps * 1e9 / 8 * l->rtt_us * 1e-6;
  uint32_t depth = (uint32_t)ceil(4 * bdp / size);
  sc->p.sq_size = pow2_at_least(depth < 2 ? 2 : depth);
  if (adaptive_min_rto_ns) {
    sc->p.adaptive_rto = true;
    sc->p.min_rto_ns = adaptive_min_rto_ns;
  }
  sc->regions = 16;
  sc->seed = seed;
  sc->limit_ns = 36000ull * 1000000000ull;
}

/* The requester's timeouts by cause (sim.h), "tail=N resend=N ack=N unanswered=N". */
static void tmo_causes(const struct scenario_result *r, char *buf, size_t n)
{
  size_t k = 0;
  buf[0] = 0;
  for (int c = 0; c < SIM_TMO_CAUSES && k < n; c++)
    k += (size_t)snprintf(buf + k, n - k, "%s%s=%llu", c ? " " : "", sim_tmo_cause_name[c],
                          (unsigned long long)r->tmo_cause[c]);
}

static int goodput(const char *out, uint64_t seed, uint64_t total, int quick)
{
  char path[4096];
  snprintf(path, sizeof path, "%s/sim-goodput.csv", out);
  FILE *f = fopen(path, "w");
  if (!f) {
    perror(path);
    return -1;
  }
  fprintf(f, "link,mode,size,loss_pct,goodput_gbps,fraction_of_lossless,p50_us,p99_us,"
             "messages,frames_data,retransmits,timeouts,vtime_s,seed,ok,max_inflight,ack_timeout_us,"
             "adaptive_min_rto_us,sq_depth,op,timeouts_by_cause,probe_slack_us\n");
  int bad = 0;
  for (unsigned li = 0; li < 2; li++)
    for (unsigned zi = 0; zi < sizeof workloads / sizeof workloads[0]; zi++)
      for (int sr = 0; sr < 2; sr++) {
        double lossless = 0;
        if (only_op && strcmp(only_op, workloads[zi].name))
          continue;
        for (unsigned k = 0; k < sizeof losses / sizeof losses[0]; k++) {
          if (quick && losses[k] != 0 && losses[k] != 1 && losses[k] != 5)
            continue;
          struct scenario sc;
          struct scenario_result r;
          setup(&sc, &links[li], sr, &workloads[zi], losses[k], seed, total);
          uint64_t *lat = calloc(sc.nmsgs, sizeof *lat);
          sc.latency_ns = lat;
          FILE *tr = trace_point && !strcmp(trace_point, sc.name) ? fopen(trace_file, "w") : NULL;
          scenario_run(&sc, &r, tr, 0);
          if (tr)
            fclose(tr);
          double gbps = r.ok ? (double)sc.size * sc.nmsgs * 8 / (double)r.done_ns : 0;
          if (losses[k] == 0)
            lossless = gbps;
          qsort(lat, sc.nmsgs, sizeof *lat, cmp_u64);
          double p50 = lat[sc.nmsgs / 2] / 1e3, p99 = lat[(sc.nmsgs * 99) / 100] / 1e3;
          double frac = lossless > 0 ? gbps / lossless : 0;
          char causes[128];
          tmo_causes(&r, causes, sizeof causes);
          fprintf(f, "%s,%s,%u,%g,%.4f,%.4f,%.1f,%.1f,%u,%llu,%llu,%llu,%.6f,%llu,%d,%u,%.1f,%.1f,%u,%s,%s,%.1f\n",
                  links[li].name, sr ? "sr" : "gbn", sc.size, losses[k], gbps, frac, p50, p99,
                  sc.nmsgs, (unsigned long long)r.frames[0], (unsigned long long)r.qa.tx_retransmits,
                  (unsigned long long)r.qa.timeouts, r.done_ns / 1e9, (unsigned long long)seed, r.ok,
                  sc.p.max_inflight, rct_ack_timeout_ns(sc.p.timeout) / 1e3, adaptive_min_rto_ns / 1e3,
                  sc.p.sq_size, workloads[zi].name, causes, sc.p.probe_slack_ns / 1e3);
          fflush(f);
          printf("bench-sim: %-4s %-3s %-5s %7u B loss %4g%%: %8.3f Gb/s (%5.1f%% of lossless) "
                 "p50 %9.1f us p99 %9.1f us retx %llu to %llu (%s) [%.1fs]%s%s\n",
                 links[li].name, sr ? "sr" : "gbn", workloads[zi].name, sc.size, losses[k], gbps, frac * 100, p50, p99,
                 (unsigned long long)r.qa.tx_retransmits, (unsigned long long)r.qa.timeouts, causes, r.wall_s,
                 r.ok ? "" : " FAILED: ", r.ok ? "" : r.why);
          fflush(stdout);
          bad += !r.ok;
          free(lat);
        }
      }
  fclose(f);
  return bad;
}

/* ns per byte of memcpy for frame-sized copies into a 4 MiB destination
 * (the payload placement the core does), thread CPU time, best of 7. */
static double memcpy_ns_per_byte(void)
{
  enum { SZ = 4096, SLOTS = 1024, N = 16384 };
  static uint8_t src[SZ * 16], dst[SZ * SLOTS];
  double best = 1e9;
  memset(src, 1, sizeof src);
  memset(dst, 2, sizeof dst);
  for (int k = 0; k < 7; k++) {
    uint64_t t0 = sim_clock_ns(SIM_CLOCK_THREAD);
    for (int i = 0; i < N; i++) {
      memcpy(dst + (size_t)((i * 7) % SLOTS) * SZ, src + (i % 16) * SZ, SZ);
      __asm__ volatile("" ::"r"(dst) : "memory");
    }
    double per = (double)(sim_clock_ns(SIM_CLOCK_THREAD) - t0) / ((double)N * SZ);
    if (per < best)
      best = per;
  }
  return best;
}

/* ns one clock read adds to a timed call (half the cost of a read pair,
 * measured on the same clock, best of a few tries). */
static double clock_read_ns(int clock)
{
  enum { N = 100000 };
  double best = 1e9;
  for (int k = 0; k < 5; k++) {
    uint64_t t0 = sim_clock_ns(clock), t1 = t0;
    for (int i = 0; i < N; i++) {
      t1 = sim_clock_ns(clock);
      t1 = sim_clock_ns(clock);
    }
    double per = (double)(t1 - t0) / N / 2;
    if (per < best)
      best = per;
  }
  return best;
}

#define CPU_REPEATS 7

/* Time the core on the lossless 100 Gb/s SR run, per clock, ICRC mode and
 * message size; keep the fastest of CPU_REPEATS runs (the machine is shared). */
static int cpu_cost(const char *out, uint64_t seed, uint64_t total)
{
  char path[4096];
  snprintf(path, sizeof path, "%s/sim-cpu.csv", out);
  FILE *f = fopen(path, "w");
  if (!f) {
    perror(path);
    return -1;
  }
  double cpb = memcpy_ns_per_byte();
  fprintf(f, "clock,icrc,size,frames,core_cpu_s,frames_per_s,placed_payload_bytes,copy_ns_per_byte,"
             "frames_per_s_excl_copy,clock_read_ns,timed_calls,seed\n");
  static const struct { const char *name; uint32_t flags; } modes[] = {
    {"software", 0}, {"offload", RCT_DEV_ICRC_OFFLOAD}};
  static const struct { const char *name; int id; } clocks[] = {
    {"thread-cpu", SIM_CLOCK_THREAD}, {"wall", SIM_CLOCK_WALL}};
  int bad = 0;
  for (int c = 0; c < 2; c++) {
    double clk = clock_read_ns(clocks[c].id);
    for (int m = 0; m < 2; m++)
      for (unsigned zi = 0; zi < sizeof workloads / sizeof workloads[0]; zi++) {
        struct scenario sc;
        struct scenario_result r, best;
        if (workloads[zi].op != RCT_WR_RDMA_WRITE)
          continue;                                         /* the WRITE workloads */
        setup(&sc, &links[0], 1, &workloads[zi], 0, seed, total);
        sc.p.dev_flags = modes[m].flags;
        for (int rep = 0; rep < CPU_REPEATS; rep++) {
          scenario_run(&sc, &r, NULL, clocks[c].id);
          if (rep == 0 || r.cpu_ns[0] + r.cpu_ns[1] < best.cpu_ns[0] + best.cpu_ns[1])
            best = r;
        }
        r = best;
        uint64_t frames = r.qa.tx_frames + r.qa.rx_frames + r.qb.tx_frames + r.qb.rx_frames;
        uint64_t calls = r.cpu_calls[0] + r.cpu_calls[1];
        double cpu = ((double)(r.cpu_ns[0] + r.cpu_ns[1]) - clk * (double)calls) / 1e9;
        uint64_t placed = r.qa.rx_payload_bytes + r.qb.rx_payload_bytes;
        double cpu_nocopy = cpu - placed * cpb / 1e9;
        if (cpu_nocopy < cpu * 0.05)
          cpu_nocopy = 0;                 /* the estimate is not meaningful */
        fprintf(f, "%s,%s,%u,%llu,%.6f,%.0f,%llu,%.4f,%.0f,%.1f,%llu,%llu\n", clocks[c].name,
                modes[m].name, sc.size, (unsigned long long)frames, cpu, frames / cpu,
                (unsigned long long)placed, cpb, cpu_nocopy > 0 ? frames / cpu_nocopy : 0, clk,
                (unsigned long long)calls, (unsigned long long)seed);
        printf("bench-sim: cpu (%s clock, best of %d), %s ICRC, %u B WRITEs: %llu frames in %.3f s "
               "of core time = %.0f frames/s (%.0f without the payload copy; clock read %.0f ns, "
               "copy %.3f ns/B)%s\n",
               clocks[c].name, CPU_REPEATS, modes[m].name, sc.size, (unsigned long long)frames, cpu,
               frames / cpu, cpu_nocopy > 0 ? frames / cpu_nocopy : 0, clk, cpb, r.ok ? "" : " FAILED");
        fflush(stdout);
        bad += !r.ok;
      }
  }
  fclose(f);
  return bad;
}

int main(int argc, char **argv)
{
  const char *out = "bench/results";
  uint64_t seed = 1, mib = 64;
  int quick = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--out") && i + 1 < argc) out = argv[++i];
    else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 0);
    else if (!strcmp(argv[i], "--mib") && i + 1 < argc) mib = strtoull(argv[++i], NULL, 0);
    else if (!strcmp(argv[i], "--quick")) quick = 1, mib = 16;
    else if (!strcmp(argv[i], "--op") && i + 1 < argc) only_op = argv[++i];
    else if (!strcmp(argv[i], "--adaptive-rto") && i + 1 < argc)
      adaptive_min_rto_ns = strtoull(argv[++i], NULL, 0);
    else if (!strcmp(argv[i], "--trace-point") && i + 2 < argc) {
      trace_point = argv[++i];
      trace_file = argv[++i];
    } else if (!strcmp(argv[i], "--inflight") && i + 2 < argc) {
      links[0].max_inflight = (uint32_t)atoi(argv[++i]);
      links[1].max_inflight = (uint32_t)atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--probe-slack") && i + 2 < argc) {
      links[0].probe_slack_ns = strtoull(argv[++i], NULL, 0);
      links[1].probe_slack_ns = strtoull(argv[++i], NULL, 0);
    } else if (!strcmp(argv[i], "--timeout") && i + 2 < argc) {
      links[0].timeout = (uint8_t)atoi(argv[++i]);
      links[1].timeout = (uint8_t)atoi(argv[++i]);
    }
    else {
      fprintf(stderr, "usage: sim-bench [--out DIR] [--seed N] [--mib N] [--quick] [--op WRITE|READ] "
                      "[--inflight N100G N1G] [--timeout CODE100G CODE1G] [--adaptive-rto MIN_NS]\n"
                      "       [--probe-slack NS100G NS1G]\n"
                      "       [--trace-point \"100g sr WRITE 1048576 loss 1%%\" FILE]\n");
      return 2;
    }
  }
  double t0 = wall();
  printf("bench-sim: seed %llu, %llu MiB of messages per point, MTU 4096, loss on both directions\n",
         (unsigned long long)seed, (unsigned long long)mib);
  int bad = goodput(out, seed, mib << 20, quick);
  if (!only_op)
    bad += cpu_cost(out, seed, mib << 20);
  printf("bench-sim: done in %.1f s; %s/sim-goodput.csv, %s/sim-cpu.csv%s\n", wall() - t0, out, out,
         bad ? " (SOME RUNS FAILED)" : "");
  return bad != 0;
}
