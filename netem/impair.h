/*
 * impair.h: the lossy-link impairment engine, one direction at a time.
 *
 * Owns the decision of what a link does to each frame: drop it (and why),
 * duplicate it, flip one bit of it, and when it leaves the link. It parses
 * tc-netem's option grammar plus three test extensions (seed, drop list,
 * blackhole schedule). It does no I/O and reads no clock: the caller passes
 * the frame index and `now` in nanoseconds, so the same engine serves the
 * real-time relay (netem/linkemu.c, CLOCK_MONOTONIC) and the virtual-time
 * simulator (tests/sim/).
 *
 * Usage:
 *   struct impair im;
 *   if (impair_parse(&im, "delay 1ms 100us loss 1% seed 7", 0, err, sizeof err) < 0) ...
 *   impair_start(&im, now);                // origin of blackhole times
 *   impair_decide(&im, index, now, len, &verdict);
 *   ...
 *   impair_free(&im);
 *
 * Randomness: each direction has its own seed (`seed N`, mixed with the
 * direction number) and each impairment draws from its own stream, so one
 * impairment's draws never shift another's; the same spec, seed and frame
 * sequence give the same decisions frame for frame.
 */
#ifndef IMPAIR_H
#define IMPAIR_H

#include <stddef.h>
#include <stdint.h>

#define IMPAIR_NEVER UINT64_MAX
#define IMPAIR_MAX_RANGES 64      /* drop-list ranges and blackhole windows */

/* Why a frame was dropped; also indexes the per-cause counters. */
enum impair_cause {
  IMPAIR_KEEP = 0,
  IMPAIR_DROP_RANDOM,     /* loss P [corr] */
  IMPAIR_DROP_GEMODEL,    /* loss gemodel ... */
  IMPAIR_DROP_LIST,       /* drop 3,7,100-120 */
  IMPAIR_DROP_BLACKHOLE,  /* blackhole 2s-4s */
  IMPAIR_DROP_LIMIT,      /* limit N: queue full */
  IMPAIR_NCAUSES
};
extern const char *const impair_cause_name[IMPAIR_NCAUSES];

/* Independent random streams, one per impairment. */
enum impair_stream {
  IMPAIR_RNG_LOSS, IMPAIR_RNG_GE, IMPAIR_RNG_DELAY, IMPAIR_RNG_REORDER,
  IMPAIR_RNG_DUP, IMPAIR_RNG_CORRUPT, IMPAIR_NSTREAMS
};

struct impair_rng { uint64_t s[4]; };          /* xoshiro256** state */

/* A correlated Bernoulli / uniform source, tc-netem style:
 * next = (1 - rho) * fresh + rho * last. */
struct impair_corr { double rho; double last; };

struct impair_range { uint64_t lo, hi; };      /* inclusive; ns or frame index */

enum impair_dist { IMPAIR_DIST_UNIFORM, IMPAIR_DIST_NORMAL };

/* Configuration of one direction, as parsed. Probabilities are in [0, 1]. */
struct impair_conf {
  uint64_t seed;
  double loss;             struct impair_corr loss_corr;
  int gemodel;             /* 1 if `loss gemodel` */
  double ge_p, ge_r, ge_bad_loss, ge_good_loss;  /* p, r, 1-h, 1-k */
  uint64_t delay_ns, jitter_ns; struct impair_corr delay_corr;
  enum impair_dist dist;
  double reorder;          struct impair_corr reorder_corr;
  uint32_t gap;
  double dup;              struct impair_corr dup_corr;
  double corrupt;          struct impair_corr corrupt_corr;
  uint64_t rate_bps;       /* 0 = unlimited */
  int32_t rate_overhead;   /* bytes added (or removed) per frame for the rate */
  uint32_t limit;          /* 0 = unlimited (tc's default is 1000; see impair.c) */
  int ndrop;   struct impair_range drop[IMPAIR_MAX_RANGES];
  /* Blackhole windows [lo, hi] in ns from the start: a frame offered, or due
   * to leave, inside one is lost. */
  int nhole;   struct impair_range hole[IMPAIR_MAX_RANGES];
};

struct impair_counters {
  uint64_t frames_in, frames_out, bytes_in, bytes_out;
  uint64_t dropped[IMPAIR_NCAUSES];             /* [IMPAIR_KEEP] unused */
  uint64_t duplicated, corrupted, reordered;
  uint64_t delayed_bytes;                       /* bytes that waited > 0 ns */
};

struct impair {
  struct impair_conf c;
  int dir;                                      /* mixed into the seed */
  struct impair_rng rng[IMPAIR_NSTREAMS];
  int ge_bad;                                   /* Gilbert-Elliott state */
  uint32_t reorder_count;                       /* frames since last reorder */
  uint64_t start_ns;                            /* blackhole origin */
  uint64_t link_free_ns;                        /* rate: serializer busy until */
  uint64_t *q; uint32_t qlen;                   /* limit: min-heap of departures */
  struct impair_counters n;
};

/* The engine's answer for one frame. A dropped frame has no departure. */
struct impair_verdict {
  uint64_t index;
  enum impair_cause drop;      /* IMPAIR_KEEP if the frame goes through */
  uint64_t depart_ns;          /* when the frame leaves the link */
  int reordered;               /* sent ahead of its queue (reorder) */
  int corrupt;                 /* flip bit corrupt_bit of byte corrupt_byte */
  uint32_t corrupt_byte;
  uint8_t corrupt_bit;
  int dup;                     /* a second copy departs at dup_depart_ns */
  uint64_t dup_depart_ns;
};

/* Parse `spec` into a fresh engine for direction `dir` (any small integer;
 * it only separates the random streams of the two directions). Returns 0, or
 * -1 with a message in err. An empty spec is a perfect link. */
int impair_parse(struct impair *im, const char *spec, int dir, char *err, size_t errlen);

/* Reset the origin of blackhole times to `now` (frame indices continue). */
void impair_start(struct impair *im, uint64_t now);

/* Decide the fate of frame `index` (0-based, per direction) of `len` bytes
 * offered at `now`. Updates counters. */
void impair_decide(struct impair *im, uint64_t index, uint64_t now, uint32_t len,
                   struct impair_verdict *v);

/* Apply a corrupt verdict to the frame bytes (no-op if the byte is past len). */
void impair_apply_corrupt(const struct impair_verdict *v, uint8_t *frame, uint32_t len);

/* Replace the configuration of a running engine (a mid-run reload): keeps the
 * counters and the frame index, restarts the random streams and the blackhole
 * origin at `now`. Returns 0 or -1 with a message (the old spec stays). */
int impair_reload(struct impair *im, const char *spec, uint64_t now, char *err, size_t errlen);

void impair_free(struct impair *im);

/* Write the spec back in normalized grammar (for logs). Returns bytes needed. */
size_t impair_format(const struct impair_conf *c, char *buf, size_t len);

/* The PRNG, exposed for the simulator and the tests. */
void impair_rng_seed(struct impair_rng *r, uint64_t seed, uint64_t stream);
uint64_t impair_rng_next(struct impair_rng *r);
double impair_rng_unit(struct impair_rng *r);   /* uniform in [0, 1) */

/* Unit parsers, tc style (exposed for linkemu's control socket and tests).
 * Time: bare number = microseconds; ns, us/usec, ms/msec, s/sec.
 * Rate: bare number / bit = bit/s; kbit mbit gbit tbit; kibit..; bps = bytes/s.
 * Percent: "1%" or a fraction "0.01". */
int impair_parse_time(const char *s, uint64_t *ns);
int impair_parse_rate(const char *s, uint64_t *bps);
int impair_parse_percent(const char *s, double *p);

#endif
