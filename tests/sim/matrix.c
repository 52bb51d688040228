/*
 * matrix.c: the simulator's scenario matrix (make test-sim).
 *
 * Scenarios, each in go-back-N and in selective-repeat mode:
 *  - WRITE / READ / SEND / WRITE_WITH_IMM x sizes {0, 1, MTU-1, MTU, MTU+1,
 *    1 MiB, 8 MiB} x random loss {0, 0.1, 1, 5, 30 %} (both directions);
 *    lossless ones also check that the requester resent, timed out and
 *    dropped nothing (READs inside the READ window, [REQ-READ-6]);
 *  - 5 % duplication, reordering (delay jitter + netem reorder), 2 % corruption,
 *    Gilbert-Elliott burst loss, and a drop list of named frames in both
 *    directions (sizes MTU+1 and 1 MiB);
 *  - a 2 s blackhole in both directions that the retry budget survives;
 *  - a blackhole that outlasts it: RETRY_EXC_ERR, then WR_FLUSH_ERR;
 *  - a PSN wrap: starting PSNs within 100 of 2^24, at 1 % loss;
 *  - SR only: the early probe under the IBTA RTO (probe slack 2 us,
 *    [REQ-TMO-10]) at 5 % loss, 10 % reordering and 5 % duplication, and
 *    in the blackhole that outlasts the retry budget;
 *  - SR only: a goodput floor for 1 MiB READs at 5 % loss on a 100 Gb/s
 *    link ([REQ-READ-8]);
 *  - atomics (CMP_AND_SWP chains, FETCH_AND_ADD, 64 on one counter) at
 *    loss {0, 1, 5, 30 %}, 5 % duplication, 10 % reordering and a drop list
 *    of the first request and early ATOMIC_ACKs: every one executed exactly
 *    once, each returning the value it must ([RESP-ATOM-3] [SR-ATOM-2]);
 *  - determinism: one impaired scenario twice with one seed (same trace
 *    hash) and once with the next seed (a different trace).
 * Each line names the scenario, its seed and its result; the last line is
 * `N passed, M failed`; the exit status is non-zero on any failure.
 *
 * Usage: sim-matrix [--seed N] [--filter SUBSTR]... [--trace FILE] [--list]
 *                   [-j WORKERS] [--known-failures FILE]
 * A scenario's seed depends only on --seed and its name, so a filtered run
 * reproduces a line of the full run. Scenarios named in the known-failures
 * file (one name per line, '#' comments) print KNOWN-FAIL instead of FAIL and
 * do not count as failures; they are listed before the summary.
 */
#include "scenario.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_SC 512
#define MTU 4096u
#define BASE_LINK "rate 10gbit delay 5us"
#define VSEC 1000000000ull

static struct scenario scs[MAX_SC];
static int nsc;

static const enum rct_wr_opcode ops[] = {RCT_WR_RDMA_WRITE, RCT_WR_RDMA_READ, RCT_WR_SEND,
                                         RCT_WR_RDMA_WRITE_WITH_IMM};
static const uint32_t sizes[] = {0, 1, MTU - 1, MTU, MTU + 1, 1u << 20, 8u << 20};
static const char *const losses[] = {"0", "0.1", "1", "5", "30"};

static uint32_t nmsgs_for(uint32_t size)
{
  return size <= MTU + 1 ? 16 : size <= (1u << 20) ? 4 : 1;
}

static struct scenario *add(int sr, enum rct_wr_opcode op, uint32_t size, const char *what,
                            const char *link)
{
  if (nsc == MAX_SC) {
    fprintf(stderr, "sim-matrix: too many scenarios\n");
    exit(2);
  }
  struct scenario *sc = &scs[nsc++];
  memset(sc, 0, sizeof *sc);
  snprintf(sc->name, sizeof sc->name, "%s %s size=%u %s", sr ? "sr" : "gbn", sc_op_name(op), size, what);
  sc->op = op;
  sc->size = size;
  sc->nmsgs = nmsgs_for(size);
  snprintf(sc->link, sizeof sc->link, "%s", link);
  sim_default_params(&sc->p);
  sc->p.sr = sr;
  sc->p.max_inflight = 0;                   /* core default (SR: its window) */
  sc->p.timeout = 12;   /* 16.8 ms: above the deepest queue the window can build (4096 x 4 KiB at 10 Gb/s = 13.7 ms) */
  sc->limit_ns = 3600 * VSEC;
  return sc;
}

/* SR with a probe slack of 2 us [REQ-TMO-10]: the early probe runs on
 * this 10 us link long before the 16.8 ms RTO. */
static void add_probe_scenarios(enum rct_wr_opcode op)
{
  static const struct { const char *what, *link; } probe[] = {
    {"probe loss=5%", BASE_LINK " loss 5%"},
    {"probe reorder=10%", BASE_LINK " delay 20us 5us reorder 10%"},
    {"probe duplicate=5%", BASE_LINK " duplicate 5%"},
  };
  for (unsigned e = 0; e < sizeof probe / sizeof probe[0]; e++) {
    add(1, op, MTU + 1, probe[e].what, probe[e].link)->p.probe_slack_ns = 2000;
    add(1, op, 1u << 20, probe[e].what, probe[e].link)->p.probe_slack_ns = 2000;
  }
  struct scenario *sc = add(1, op, 1u << 20, "probe blackhole=100s(retry-exceeded)",
                            BASE_LINK " blackhole 1ms-100001ms");
  sc->p.timeout = 14;
  sc->p.probe_slack_ns = 2000;
  sc->expect = SC_EXPECT_RETRY_EXC;
}

/* [REQ-READ-8] SR READ goodput floor: 16 MiB of 1 MiB READs on a 100 Gb/s,
 * 10 us link (window 128, as the sim bench's 100g cell) at 5 % loss in both
 * directions complete within 1 / 0.85 of the lossless time (16 MiB at
 * 97.7 Gb/s, 1.374 ms): with the READ window counted from una they took
 * 1 / 0.75-0.79 of it, one round trip idle after each hole. */
static void add_read_floor(void)
{
  struct scenario *sc = add(1, RCT_WR_RDMA_READ, 1u << 20, "floor 100g loss=5%",
                            "rate 100gbit delay 5us loss 5%");
  sc->nmsgs = 16;
  sc->regions = 4;
  sc->p.max_inflight = 128;
  sc->p.sq_size = 2;
  sc->p.timeout = 4;
  sc->max_done_ns = 1374000ull * 100 / 85;
}

/* [RESP-ATOM-3] [REQ-ATOM-2] [SR-ATOM-2] atomics under loss: 64 on one counter. */
static void add_atomic_scenarios(int sr)
{
  static const enum rct_wr_opcode aops[] = {RCT_WR_ATOMIC_CMP_AND_SWP, RCT_WR_ATOMIC_FETCH_AND_ADD};
  static const struct { const char *what, *link; } cells[] = {
    {"loss=0%", BASE_LINK " loss 0%"},
    {"loss=1%", BASE_LINK " loss 1%"},
    {"loss=5%", BASE_LINK " loss 5%"},
    {"loss=30%", BASE_LINK " loss 30%"},
    {"duplicate=5%", BASE_LINK " duplicate 5%"},
    {"reorder=10%", BASE_LINK " delay 20us 5us reorder 10%"},
    {"droplist", BASE_LINK " drop 0,3,10-12,29"},
  };
  for (unsigned o = 0; o < 2; o++)
    for (unsigned c = 0; c < sizeof cells / sizeof cells[0]; c++) {
      struct scenario *sc = add(sr, aops[o], 8, cells[c].what, cells[c].link);
      sc->nmsgs = 64;
      sc->expect_clean = c == 0;
      if (c == 6)        /* the first ATOMIC_ACKs and a run of them */
        snprintf(sc->link_b2a, sizeof sc->link_b2a, "%s", BASE_LINK " drop 0,1,4,5");
    }
}

static void build(void)
{
  char link[256], what[64];
  for (int sr = 0; sr < 2; sr++)
    for (unsigned o = 0; o < 4; o++) {
      for (unsigned z = 0; z < sizeof sizes / sizeof sizes[0]; z++)
        for (unsigned l = 0; l < sizeof losses / sizeof losses[0]; l++) {
          snprintf(link, sizeof link, "%s loss %s%%", BASE_LINK, losses[l]);
          snprintf(what, sizeof what, "loss=%s%%", losses[l]);
          add(sr, ops[o], sizes[z], what, link)->expect_clean = !strcmp(losses[l], "0");
        }
      static const struct { const char *what, *link; } extra[] = {
        {"duplicate=5%", BASE_LINK " duplicate 5%"},
        {"reorder=10%", BASE_LINK " delay 20us 5us reorder 10%"},
        {"corrupt=2%", BASE_LINK " corrupt 2%"},
        {"gemodel=1%,25%", BASE_LINK " loss gemodel 1% 25%"},      /* bursts of ~4 */
        {"droplist", BASE_LINK " drop 0,3,10-12,29"},               /* b2a: see below */
      };
      for (unsigned e = 0; e < sizeof extra / sizeof extra[0]; e++) {
        struct scenario *x = add(sr, ops[o], MTU + 1, extra[e].what, extra[e].link);
        struct scenario *y = add(sr, ops[o], 1u << 20, extra[e].what, extra[e].link);
        if (e == 4) {   /* drop named frames: the first request, a run, and early ACKs/responses */
          snprintf(x->link_b2a, sizeof x->link_b2a, "%s", BASE_LINK " drop 1,4,5");
          snprintf(y->link_b2a, sizeof y->link_b2a, "%s", BASE_LINK " drop 1,4,5");
        }
      }
      /* 2 s blackhole; timeout 17 = 537 ms, so 7 retries span ~4.3 s. */
      struct scenario *sc = add(sr, ops[o], 1u << 20, "blackhole=2s(recovers)",
                                BASE_LINK " blackhole 1ms-2001ms");
      sc->p.timeout = 17;
      /* 100 s blackhole; timeout 14 = 67 ms: the budget runs out in ~0.5 s. */
      sc = add(sr, ops[o], 1u << 20, "blackhole=100s(retry-exceeded)",
               BASE_LINK " blackhole 1ms-100001ms");
      sc->p.timeout = 14;
      sc->expect = SC_EXPECT_RETRY_EXC;
      sc = add(sr, ops[o], 1u << 20, "psn-wrap loss=1%", BASE_LINK " loss 1%");
      sc->p.psn_a = (1u << 24) - 60;
      sc->p.psn_b = (1u << 24) - 90;
      if (sr)
        add_probe_scenarios(ops[o]);
    }
  add_atomic_scenarios(0);
  add_atomic_scenarios(1);
  add_read_floor();
}

static uint64_t seed_of(uint64_t base, const char *name)
{
  uint64_t h = sim_hash(name, strlen(name)) ^ (base * 0x9e3779b97f4a7c15ULL);
  return (h % 1000000007ull) + 1;
}

/* ---- known failures ---- */

static char known[MAX_SC][160];
static int nknown;

static void load_known(const char *path)
{
  FILE *f = fopen(path, "r");
  char line[256];
  if (!f)
    return;
  while (nknown < MAX_SC && fgets(line, sizeof line, f)) {
    line[strcspn(line, "\r\n")] = 0;
    if (!line[0] || line[0] == '#')
      continue;
    snprintf(known[nknown++], sizeof known[0], "%s", line);
  }
  fclose(f);
}

static int is_known(const char *name)
{
  for (int i = 0; i < nknown; i++)
    if (!strcmp(known[i], name))
      return 1;
  return 0;
}

/* ---- running ---- */

/* Outcome codes written by workers. */
enum { R_PASS = 'P', R_FAIL = 'F', R_KNOWN = 'K' };

static int verbose;

/* -v: the counters that explain a failure. */
static void print_counters(const struct scenario_result *r)
{
  const struct rct_dev_counters *d[2] = {&r->da, &r->db};
  const struct rct_qp_counters *q[2] = {&r->qa, &r->qb};
  for (int i = 0; i < 2; i++) {
    printf("    %c dev: rx %llu not_roce %llu trunc %llu bad_header %llu icrc_err %llu bad_opcode %llu unknown_qp %llu\n",
           'a' + i, (unsigned long long)d[i]->rx_frames, (unsigned long long)d[i]->rx_not_roce,
           (unsigned long long)d[i]->rx_truncated, (unsigned long long)d[i]->rx_bad_header,
           (unsigned long long)d[i]->rx_icrc_err, (unsigned long long)d[i]->rx_bad_opcode,
           (unsigned long long)d[i]->rx_unknown_qp);
    printf("    %c qp: tx %llu rx %llu retx %llu to %llu acks %llu/%llu nakseq %llu/%llu sack %llu/%llu dup %llu stale %llu oos %llu oow %llu badstate %llu badop %llu badlen %llu unexp %llu\n",
           'a' + i, (unsigned long long)q[i]->tx_frames, (unsigned long long)q[i]->rx_frames,
           (unsigned long long)q[i]->tx_retransmits, (unsigned long long)q[i]->timeouts,
           (unsigned long long)q[i]->tx_ack, (unsigned long long)q[i]->rx_ack,
           (unsigned long long)q[i]->tx_nak_seq, (unsigned long long)q[i]->rx_nak_seq,
           (unsigned long long)q[i]->tx_sack, (unsigned long long)q[i]->rx_sack,
           (unsigned long long)q[i]->rx_dup, (unsigned long long)q[i]->rx_stale_ack,
           (unsigned long long)q[i]->rx_out_of_seq, (unsigned long long)q[i]->rx_out_of_window,
           (unsigned long long)q[i]->rx_bad_state, (unsigned long long)q[i]->rx_bad_opcode,
           (unsigned long long)q[i]->rx_bad_length,
           (unsigned long long)q[i]->rx_unexpected);
  }
}

static void format_result(const struct scenario *sc, const struct scenario_result *r, char *line,
                          size_t n, char *code)
{
  int known_fail = !r->ok && is_known(sc->name);
  *code = r->ok ? R_PASS : known_fail ? R_KNOWN : R_FAIL;
  int k = snprintf(line, n, "%-10s %-52s seed=%-10llu frames=%llu/%llu retx=%llu to=%llu vt=%.3fs wall=%.2fs",
                   r->ok ? (is_known(sc->name) ? "PASS(known-fail-fixed)" : "PASS")
                         : known_fail ? "KNOWN-FAIL" : "FAIL",
                   sc->name, (unsigned long long)sc->seed, (unsigned long long)r->frames[0],
                   (unsigned long long)r->frames[1], (unsigned long long)r->qa.tx_retransmits, (unsigned long long)r->qa.timeouts,
                   r->vtime_ns / 1e9, r->wall_s);
  if (!r->ok && k > 0 && (size_t)k < n)
    snprintf(line + k, n - (size_t)k, " : %s", r->why);
}

static int determinism(uint64_t base, int *passed, int *failed)
{
  static const char *const name[2] = {"determinism gbn", "determinism sr"};
  for (int sr = 0; sr < 2; sr++) {
    struct scenario sc;
    memset(&sc, 0, sizeof sc);
    snprintf(sc.name, sizeof sc.name, "%s", name[sr]);
    sc.op = RCT_WR_RDMA_WRITE;
    sc.size = 1u << 20;
    sc.nmsgs = 2;
    snprintf(sc.link, sizeof sc.link, "%s", BASE_LINK " delay 20us 5us loss 5% duplicate 5% reorder 5% corrupt 2%");
    sim_default_params(&sc.p);
    sc.p.sr = sr;
    sc.p.max_inflight = 0;
    sc.limit_ns = 3600 * VSEC;
    sc.seed = seed_of(base, sc.name);
    struct scenario_result r1, r2, r3;
    scenario_run(&sc, &r1, NULL, 0);
    scenario_run(&sc, &r2, NULL, 0);
    sc.seed++;
    scenario_run(&sc, &r3, NULL, 0);
    sc.seed--;
    int ok = r1.ok && r2.ok && r3.ok && r1.trace_hash == r2.trace_hash && r1.trace_hash != r3.trace_hash;
    printf("%-10s %-52s seed=%-10llu trace %016llx twice %s, seed+1 %016llx (%s)%s%s\n",
           ok ? "PASS" : "FAIL", sc.name, (unsigned long long)sc.seed,
           (unsigned long long)r1.trace_hash, r1.trace_hash == r2.trace_hash ? "identical" : "DIFFERENT",
           (unsigned long long)r3.trace_hash, r1.trace_hash != r3.trace_hash ? "differs" : "SAME",
           r1.ok && r2.ok && r3.ok ? "" : " : run failed: ",
           !r1.ok ? r1.why : !r2.ok ? r2.why : !r3.ok ? r3.why : "");
    ok ? (*passed)++ : (*failed)++;
  }
  fflush(stdout);
  return 0;
}

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
  uint64_t base = 1;
  const char *filters[32];
  int nfilters = 0, list = 0, jobs = 1;
  const char *trace_path = NULL, *known_path = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--seed") && i + 1 < argc) base = strtoull(argv[++i], NULL, 0);
    else if (!strcmp(argv[i], "--filter") && i + 1 < argc && nfilters < 32) filters[nfilters++] = argv[++i];
    else if (!strcmp(argv[i], "--trace") && i + 1 < argc) trace_path = argv[++i];
    else if (!strcmp(argv[i], "--known-failures") && i + 1 < argc) known_path = argv[++i];
    else if (!strcmp(argv[i], "-j") && i + 1 < argc) jobs = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--list")) list = 1;
    else if (!strcmp(argv[i], "-v")) verbose = 1;
    else {
      fprintf(stderr, "usage: sim-matrix [--seed N] [--filter SUBSTR]... [--trace FILE] [--list] "
                      "[-j N] [--known-failures FILE]\n");
      return 2;
    }
  }
  if (jobs < 1 || trace_path)
    jobs = 1;                              /* one trace file, one writer */
  if (known_path)
    load_known(known_path);
  build();
  int sel[MAX_SC], nsel = 0;
  for (int i = 0; i < nsc; i++) {
    scs[i].seed = seed_of(base, scs[i].name);
    int match = nfilters == 0;
    for (int f = 0; f < nfilters; f++)
      match |= strstr(scs[i].name, filters[f]) != NULL;
    if (match)
      sel[nsel++] = i;
  }
  if (list) {
    for (int k = 0; k < nsel; k++)
      printf("%s seed=%llu\n", scs[sel[k]].name, (unsigned long long)scs[sel[k]].seed);
    return 0;
  }
  FILE *trace = trace_path ? fopen(trace_path, "w") : NULL;
  if (trace_path && !trace) {
    perror(trace_path);
    return 2;
  }
  printf("sim-matrix: %d scenarios, base seed %llu, %d worker(s); link \"%s\" + impairment, MTU %u\n",
         nsel, (unsigned long long)base, jobs, BASE_LINK, MTU);
  fflush(stdout);
  double t0 = now_s();
  int passed = 0, failed = 0, nk = 0;
  char knownlines[MAX_SC][256];

  int fds[2];
  if (pipe(fds) < 0)
    return 2;
  for (int w = 0; w < jobs; w++) {
    pid_t pid = jobs == 1 ? 0 : fork();
    if (pid < 0)
      return 2;
    if (pid > 0)
      continue;
    /* worker w (or the only process): run its share, report over the pipe */
    for (int k = w; k < nsel; k += jobs) {
      struct scenario_result r;
      char line[1024], code;
      if (trace)
        fprintf(trace, "# %s seed=%llu\n", scs[sel[k]].name, (unsigned long long)scs[sel[k]].seed);
      scenario_run(&scs[sel[k]], &r, trace, 0);
      format_result(&scs[sel[k]], &r, line, sizeof line, &code);
      if (jobs == 1) {
        printf("%s\n", line);
        if (verbose && code != R_PASS)
          print_counters(&r);
        fflush(stdout);
        if (code == R_PASS) passed++;
        else if (code == R_FAIL) failed++;
        else snprintf(knownlines[nk++], sizeof knownlines[0], "%s", line);
      } else {
        char msg[1100];
        int n = snprintf(msg, sizeof msg, "%c%s\n", code, line);
        if (write(fds[1], msg, (size_t)n) < 0)
          _exit(2);
      }
    }
    if (jobs > 1)
      _exit(0);
  }
  if (jobs > 1) {
    close(fds[1]);
    FILE *in = fdopen(fds[0], "r");
    char buf[1200];
    while (fgets(buf, sizeof buf, in)) {
      printf("%s", buf + 1);
      fflush(stdout);
      if (buf[0] == R_PASS) passed++;
      else if (buf[0] == R_FAIL) failed++;
      else {
        buf[strcspn(buf, "\n")] = 0;
        snprintf(knownlines[nk++], sizeof knownlines[0], "%s", buf + 1);
      }
    }
    while (wait(NULL) > 0)
      ;
  }
  int det = nfilters == 0;
  for (int f = 0; f < nfilters; f++)
    det |= strstr("determinism gbn determinism sr", filters[f]) != NULL;
  if (det)
    determinism(base, &passed, &failed);
  if (trace)
    fclose(trace);
  printf("sim-matrix: %.1f s wall\n", now_s() - t0);
  if (nk) {
    printf("%d known failure(s), listed in %s (not counted as failed):\n", nk, known_path);
    for (int i = 0; i < nk; i++)
      printf("  %s\n", knownlines[i]);
  }
  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
