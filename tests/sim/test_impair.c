/*
 * test_impair.c: unit tests of the impairment engine (netem/impair.c).
 *
 * A table of named tests, each a function that returns after recording its
 * checks; the runner prints `N passed, M failed` and exits non-zero on any
 * failure. Statistical tests print the seed they use and check against
 * tolerances wide enough (> 5 sigma) that a correct engine never fails.
 */
#include "../../netem/impair.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int checks_failed;

#define CHECK(cond, ...) do { if (!(cond)) { checks_failed++; \
  printf("  FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); printf(__VA_ARGS__); printf("\n"); } } while (0)

static void mk(struct impair *im, const char *spec, int dir)
{
  char err[256];
  if (impair_parse(im, spec, dir, err, sizeof err) < 0) {
    printf("  FAIL parse '%s': %s\n", spec, err);
    checks_failed++;
    impair_parse(im, "", dir, err, sizeof err);
  }
}

/* Run n frames of len bytes, one every `gap_ns`; fill fates[i] (0 = kept). */
static void run(struct impair *im, int n, uint32_t len, uint64_t gap_ns, int *fates,
                struct impair_verdict *vs)
{
  struct impair_verdict v;
  for (int i = 0; i < n; i++) {
    impair_decide(im, (uint64_t)i, (uint64_t)i * gap_ns, len, &v);
    if (fates)
      fates[i] = v.drop;
    if (vs)
      vs[i] = v;
  }
}

static void test_impair_same_seed_same_decisions(void)
{
  const char *spec = "loss 3% delay 1ms 200us duplicate 2% corrupt 1% reorder 5% gap 3 seed 42";
  enum { N = 20000 };
  static struct impair_verdict a[N], b[N], c[N];
  struct impair x, y, z;
  mk(&x, spec, 0); mk(&y, spec, 0); mk(&z, "loss 3% delay 1ms 200us duplicate 2% corrupt 1% reorder 5% gap 3 seed 43", 0);
  run(&x, N, 1000, 10000, NULL, a);
  run(&y, N, 1000, 10000, NULL, b);
  run(&z, N, 1000, 10000, NULL, c);
  CHECK(memcmp(a, b, sizeof a) == 0, "seed 42 twice differs");
  CHECK(memcmp(a, c, sizeof a) != 0, "seed 42 and 43 identical");
  CHECK(memcmp(&x.n, &y.n, sizeof x.n) == 0, "counters differ");
  /* The other direction with the same seed is a different stream. */
  struct impair w;
  static struct impair_verdict d[N];
  mk(&w, spec, 1);
  run(&w, N, 1000, 10000, NULL, d);
  CHECK(memcmp(a, d, sizeof a) != 0, "directions share a stream");
  impair_free(&x); impair_free(&y); impair_free(&z); impair_free(&w);
}

static void test_impair_droplist_exact(void)
{
  struct impair im;
  int fates[300];
  mk(&im, "drop 3,7,100-120,299", 0);
  run(&im, 300, 100, 1000, fates, NULL);
  for (int i = 0; i < 300; i++) {
    int want = i == 3 || i == 7 || (i >= 100 && i <= 120) || i == 299;
    CHECK((fates[i] == IMPAIR_DROP_LIST) == want, "frame %d fate %d", i, fates[i]);
  }
  CHECK(im.n.dropped[IMPAIR_DROP_LIST] == 24, "%llu", (unsigned long long)im.n.dropped[IMPAIR_DROP_LIST]);
  CHECK(im.n.frames_out == 276, "%llu", (unsigned long long)im.n.frames_out);
  impair_free(&im);
}

static void test_impair_loss_rate(void)
{
  const double rates[] = {0.001, 0.01, 0.05, 0.30};
  enum { N = 100000 };
  for (int k = 0; k < 4; k++) {
    char spec[64];
    uint64_t seed = 1000 + (uint64_t)k;
    snprintf(spec, sizeof spec, "loss %g%% seed %llu", rates[k] * 100, (unsigned long long)seed);
    struct impair im;
    mk(&im, spec, 0);
    run(&im, N, 100, 1000, NULL, NULL);
    double got = (double)im.n.dropped[IMPAIR_DROP_RANDOM] / N;
    double sigma = sqrt(rates[k] * (1 - rates[k]) / N);
    printf("  loss %g%% seed %llu: measured %.4f%% over %d frames\n", rates[k] * 100,
           (unsigned long long)seed, got * 100, N);
    CHECK(fabs(got - rates[k]) < 5 * sigma, "rate %g got %g (seed %llu)", rates[k], got,
          (unsigned long long)seed);
    impair_free(&im);
  }
}

static void test_impair_gemodel_burst(void)
{
  /* Simple Gilbert: p = 1%, r = 25% -> mean burst 1/r = 4 frames,
   * mean loss p / (p + r) = 3.85%. */
  enum { N = 200000 };
  struct impair im;
  static int fates[N];
  mk(&im, "loss gemodel 1% 25% seed 9", 0);
  run(&im, N, 100, 1000, fates, NULL);
  int bursts = 0, lost = 0;
  for (int i = 0; i < N; i++) {
    if (fates[i] == IMPAIR_DROP_GEMODEL) {
      lost++;
      if (i == 0 || fates[i - 1] != IMPAIR_DROP_GEMODEL)
        bursts++;
    }
  }
  double mean = bursts ? (double)lost / bursts : 0, rate = (double)lost / N;
  printf("  gemodel 1%% 25%% seed 9: mean burst %.2f (want 4), loss %.2f%% (want 3.85%%)\n",
         mean, rate * 100);
  CHECK(fabs(mean - 4.0) < 0.4, "mean burst %g", mean);
  CHECK(fabs(rate - 0.0385) < 0.006, "loss %g", rate);
  impair_free(&im);
}

static void test_impair_rate_serialization(void)
{
  /* 100 Mbit/s, 1250-byte frames = 100 us each; 10 frames at t=0 leave
   * back to back, then the 2 ms propagation delay. */
  struct impair im;
  struct impair_verdict v;
  mk(&im, "rate 100mbit delay 2ms", 0);
  for (int i = 0; i < 10; i++) {
    impair_decide(&im, (uint64_t)i, 0, 1250, &v);
    CHECK(v.depart_ns == 2000000 + (uint64_t)(i + 1) * 100000, "frame %d departs %llu", i,
          (unsigned long long)v.depart_ns);
  }
  /* An idle link: a frame at t = 10 ms serializes at once. */
  impair_decide(&im, 10, 10000000, 1250, &v);
  CHECK(v.depart_ns == 10000000 + 100000 + 2000000, "%llu", (unsigned long long)v.depart_ns);
  impair_free(&im);
}

static void test_impair_blackhole_window(void)
{
  struct impair im;
  struct impair_verdict v;
  mk(&im, "blackhole 2s-4s,10s-11s", 0);
  impair_start(&im, 5000);            /* origin: schedule times are relative */
  const struct { uint64_t t; int dropped; } cases[] = {
    {0, 0}, {1999999999, 0}, {2000000000, 1}, {3999999999, 1}, {4000000000, 0},
    {9999999999ull, 0}, {10000000000ull, 1}, {10999999999ull, 1}, {11000000000ull, 0},
  };
  for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    impair_decide(&im, i, cases[i].t + 5000, 64, &v);
    CHECK((v.drop == IMPAIR_DROP_BLACKHOLE) == cases[i].dropped, "t=%llu drop=%d",
          (unsigned long long)cases[i].t, v.drop);
  }
  impair_free(&im);
}

static void test_impair_blackhole_takes_queued_frames(void)
{
  /* 10 Mbit/s, 1250 B = 1 ms each, offered together at t=0 before the
   * outage: those due to leave inside [1.5 ms, 3.5 ms) are lost too. */
  struct impair im;
  struct impair_verdict v;
  mk(&im, "rate 10mbit blackhole 1500us-3500us", 0);
  for (int i = 0; i < 5; i++) {
    impair_decide(&im, (uint64_t)i, 0, 1250, &v);
    int lost = i == 1 || i == 2;            /* depart 2 ms and 3 ms */
    CHECK((v.drop == IMPAIR_DROP_BLACKHOLE) == lost, "frame %d (departs %d ms) fate %d", i, i + 1, v.drop);
  }
  CHECK(im.n.frames_out == 3 && im.n.dropped[IMPAIR_DROP_BLACKHOLE] == 2, "counters");
  impair_free(&im);
}

static void test_impair_limit(void)
{
  /* 10 Mbit/s, 1250 B = 1 ms each; limit 5: frames 5.. at t=0 overflow. */
  struct impair im;
  int fates[8];
  mk(&im, "rate 10mbit limit 5", 0);
  run(&im, 8, 1250, 0, fates, NULL);
  for (int i = 0; i < 8; i++)
    CHECK((fates[i] == IMPAIR_DROP_LIMIT) == (i >= 5), "frame %d fate %d", i, fates[i]);
  struct impair_verdict v;
  impair_decide(&im, 8, 1000000, 1250, &v);   /* one has left by 1 ms */
  CHECK(v.drop == IMPAIR_KEEP, "fate %d", v.drop);
  impair_free(&im);
}

static void test_impair_duplicate_corrupt_reorder(void)
{
  enum { N = 100000 };
  struct impair im;
  static struct impair_verdict vs[N];
  mk(&im, "duplicate 5% corrupt 2% delay 1ms reorder 10% seed 3", 0);
  run(&im, N, 200, 1000, NULL, vs);
  int ooo = 0;
  for (int i = 1; i < N; i++)
    ooo += vs[i].depart_ns < vs[i - 1].depart_ns;
  printf("  dup %llu corrupt %llu reordered %llu (of %d; seed 3)\n",
         (unsigned long long)im.n.duplicated, (unsigned long long)im.n.corrupted,
         (unsigned long long)im.n.reordered, N);
  CHECK(fabs(im.n.duplicated / (double)N - 0.05) < 0.004, "dup");
  CHECK(fabs(im.n.corrupted / (double)N - 0.02) < 0.003, "corrupt");
  CHECK(fabs(im.n.reordered / (double)N - 0.10) < 0.006, "reorder");
  CHECK(ooo > 0 && (uint64_t)ooo <= im.n.reordered, "ooo %d", ooo);
  uint8_t frame[200] = {0};
  for (int i = 0; i < N; i++)
    if (vs[i].corrupt) {
      impair_apply_corrupt(&vs[i], frame, sizeof frame);
      int bits = 0;
      for (int b = 0; b < 200; b++)
        bits += __builtin_popcount(frame[b]);
      CHECK(bits == 1, "corrupt flips one bit, got %d", bits);
      break;
    }
  impair_free(&im);
}

static void test_impair_parse_errors(void)
{
  const char *bad[] = {
    "loss", "loss 101%", "loss abc", "delay 5parsecs", "rate fast", "drop 7-3",
    "blackhole 2s", "reorder 5%", "frobnicate 3", "limit -1", "loss state 1%",
    "distribution pareto", "corrupt 1%%",
  };
  char err[256];
  struct impair im;
  for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    err[0] = 0;
    int rc = impair_parse(&im, bad[i], 0, err, sizeof err);
    CHECK(rc < 0 && err[0], "'%s' accepted", bad[i]);
    if (rc < 0 && i < 3)
      printf("  '%s' -> %s\n", bad[i], err);
    if (rc == 0)
      impair_free(&im);
  }
  const char *good[] = {
    "", "loss random 1%", "loss 0.01", "loss 1% 25%", "loss gemodel 1%", "loss gemodel 1% 10% 70% 0.1%",
    "delay 2ms", "delay 2ms 1ms 25%", "delay 100 distribution normal", "reorder 10% gap 5 delay 1ms",
    "duplicate 1%", "corrupt 0.5%", "rate 100mbit", "rate 1gbit 20", "limit 100",
    "seed 7 drop 3,7,100-120 blackhole 2s-4s,10s-11s", "delay 1ms reorder 25% 50% gap 5",
  };
  for (unsigned i = 0; i < sizeof good / sizeof good[0]; i++) {
    int rc = impair_parse(&im, good[i], 0, err, sizeof err);
    CHECK(rc == 0, "'%s' rejected: %s", good[i], err);
    if (rc == 0)
      impair_free(&im);
  }
  uint64_t t, r;
  double p;
  CHECK(impair_parse_time("2ms", &t) == 0 && t == 2000000, "2ms");
  CHECK(impair_parse_time("100", &t) == 0 && t == 100000, "bare = us");
  CHECK(impair_parse_rate("100mbit", &r) == 0 && r == 100000000, "100mbit");
  CHECK(impair_parse_rate("1mbps", &r) == 0 && r == 8000000, "mbps is bytes");
  CHECK(impair_parse_percent("0.5%", &p) == 0 && fabs(p - 0.005) < 1e-12, "0.5%%");
  struct impair g;
  mk(&g, "loss gemodel 2%", 0);
  CHECK(fabs(g.c.ge_r - 0.98) < 1e-12 && g.c.ge_bad_loss == 1 && g.c.ge_good_loss == 0,
        "gemodel defaults r=1-p 1-h=1 1-k=0");
  impair_free(&g);
}

static void test_impair_reload(void)
{
  struct impair im;
  struct impair_verdict v;
  char err[128];
  mk(&im, "", 0);
  impair_decide(&im, 0, 1000, 64, &v);
  CHECK(v.drop == IMPAIR_KEEP, "perfect link");
  CHECK(impair_reload(&im, "blackhole 0s-1s", 5000000000ull, err, sizeof err) == 0, "%s", err);
  impair_decide(&im, 1, 5000000000ull, 64, &v);
  CHECK(v.drop == IMPAIR_DROP_BLACKHOLE, "blackhole starts at reload");
  impair_decide(&im, 2, 6000000000ull, 64, &v);
  CHECK(v.drop == IMPAIR_KEEP, "blackhole over");
  CHECK(impair_reload(&im, "loss 200%", 0, err, sizeof err) < 0, "bad reload accepted");
  CHECK(im.n.frames_in == 3, "counters kept");
  impair_free(&im);
}

static const struct { const char *name; void (*fn)(void); } tests[] = {
  {"test_impair_same_seed_same_decisions", test_impair_same_seed_same_decisions},
  {"test_impair_droplist_exact", test_impair_droplist_exact},
  {"test_impair_loss_rate", test_impair_loss_rate},
  {"test_impair_gemodel_burst", test_impair_gemodel_burst},
  {"test_impair_rate_serialization", test_impair_rate_serialization},
  {"test_impair_blackhole_window", test_impair_blackhole_window},
  {"test_impair_blackhole_takes_queued_frames", test_impair_blackhole_takes_queued_frames},
  {"test_impair_limit", test_impair_limit},
  {"test_impair_duplicate_corrupt_reorder", test_impair_duplicate_corrupt_reorder},
  {"test_impair_parse_errors", test_impair_parse_errors},
  {"test_impair_reload", test_impair_reload},
};

int main(void)
{
  int passed = 0, failed = 0;
  for (unsigned i = 0; i < sizeof tests / sizeof tests[0]; i++) {
    int before = checks_failed;
    tests[i].fn();
    int ok = checks_failed == before;
    printf("%s %s\n", ok ? "PASS" : "FAIL", tests[i].name);
    ok ? passed++ : failed++;
  }
  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
