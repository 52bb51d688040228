/*
 * impair.c: the impairment engine (see impair.h for the interface).
 *
 * Semantics follow tc-netem (man tc-netem, net/sched/sch_netem.c behaviour),
 * with these deliberate, documented differences:
 *  - `rate` is a serializer ahead of the propagation delay: a frame starts
 *    serializing when the link is free, and departs delay(+jitter) after its
 *    last bit is on the wire. (netem overlaps the two in its own way.)
 *  - `limit` defaults to unlimited (netem: 1000), so the simulator never drops
 *    for queueing unless a test asks for it.
 *  - A duplicate is a second copy with its own jitter and serialization; like
 *    netem, a frame both duplicated and hit by random loss sends one copy, and
 *    only the original is corrupted.
 *  - Drop-list and blackhole drops remove every copy and draw no randomness
 *    differently: each random stream is drawn the same number of times per
 *    frame whatever the other impairments decide.
 */
#include "impair.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const impair_cause_name[IMPAIR_NCAUSES] = {
  [IMPAIR_KEEP] = "kept",
  [IMPAIR_DROP_RANDOM] = "random",
  [IMPAIR_DROP_GEMODEL] = "gemodel",
  [IMPAIR_DROP_LIST] = "droplist",
  [IMPAIR_DROP_BLACKHOLE] = "blackhole",
  [IMPAIR_DROP_LIMIT] = "limit",
};

/* ---- PRNG: splitmix64 seeds xoshiro256** ---- */

static uint64_t splitmix64(uint64_t *x)
{
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void impair_rng_seed(struct impair_rng *r, uint64_t seed, uint64_t stream)
{
  uint64_t x = seed ^ (stream * 0xd1342543de82ef95ULL);
  for (int i = 0; i < 4; i++)
    r->s[i] = splitmix64(&x);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t impair_rng_next(struct impair_rng *r)
{
  uint64_t *s = r->s;
  uint64_t result = rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

double impair_rng_unit(struct impair_rng *r)
{
  return (impair_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* tc-netem's correlated uniform: blend a fresh draw with the last value. */
static double corr_unit(struct impair_rng *r, struct impair_corr *c)
{
  double u = impair_rng_unit(r);
  if (c->rho == 0)
    return u;
  c->last = u * (1 - c->rho) + c->last * c->rho;
  return c->last;
}

/* ---- small portable string helpers (C99 has no strtok_r/strcasecmp/strdup) ---- */

static int ci_equal(const char *a, const char *b)
{
  for (; *a && *b; a++, b++)
    if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
      return 0;
  return *a == *b;
}

/* Split in place: returns the next token of *cur not containing delims. */
static char *next_token(char **cur, const char *delims)
{
  char *s = *cur;
  while (*s && strchr(delims, *s))
    s++;
  if (!*s)
    return NULL;
  char *start = s;
  while (*s && !strchr(delims, *s))
    s++;
  if (*s)
    *s++ = 0;
  *cur = s;
  return start;
}

static char *dup_string(const char *s)
{
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d)
    memcpy(d, s, n);
  return d;
}

/* ---- unit parsers ---- */

struct unit { const char *name; double mult; };

static int parse_with_units(const char *s, const struct unit *u, double bare, double *out)
{
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || errno || v < 0 || !isfinite(v))
    return -1;
  if (*end == 0) {
    *out = v * bare;
    return 0;
  }
  for (; u->name; u++)
    if (ci_equal(end, u->name)) {
      *out = v * u->mult;
      return 0;
    }
  return -1;
}

static const struct unit time_units[] = {
  {"ns", 1}, {"nsec", 1}, {"nsecs", 1},
  {"us", 1e3}, {"usec", 1e3}, {"usecs", 1e3},
  {"ms", 1e6}, {"msec", 1e6}, {"msecs", 1e6},
  {"s", 1e9}, {"sec", 1e9}, {"secs", 1e9}, {0, 0}};

static const struct unit rate_units[] = {
  {"bit", 1}, {"kbit", 1e3}, {"mbit", 1e6}, {"gbit", 1e9}, {"tbit", 1e12},
  {"kibit", 1024.0}, {"mibit", 1048576.0}, {"gibit", 1073741824.0},
  {"tibit", 1099511627776.0},
  {"bps", 8}, {"kbps", 8e3}, {"mbps", 8e6}, {"gbps", 8e9}, {"tbps", 8e12},
  {"kibps", 8 * 1024.0}, {"mibps", 8 * 1048576.0}, {"gibps", 8 * 1073741824.0},
  {0, 0}};

int impair_parse_time(const char *s, uint64_t *ns)
{
  double v;
  if (parse_with_units(s, time_units, 1e3, &v) < 0 || v > 1e18)
    return -1;
  *ns = (uint64_t)llround(v);
  return 0;
}

int impair_parse_rate(const char *s, uint64_t *bps)
{
  double v;
  if (parse_with_units(s, rate_units, 1, &v) < 0 || v < 1 || v > 1e18)
    return -1;
  *bps = (uint64_t)llround(v);
  return 0;
}

int impair_parse_percent(const char *s, double *p)
{
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || errno || !isfinite(v))
    return -1;
  if (strcmp(end, "%") == 0)
    v /= 100;
  else if (*end)
    return -1;
  if (v < 0 || v > 1)
    return -1;
  *p = v;
  return 0;
}

/* ---- the spec parser ---- */

#define MAXTOK 256

struct parser {
  char *tok[MAXTOK];
  int n, i;
  char *err;
  size_t errlen;
};

static int fail(struct parser *p, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  if (p->err && p->errlen)
    vsnprintf(p->err, p->errlen, fmt, ap);
  va_end(ap);
  return -1;
}

static const char *peek(struct parser *p) { return p->i < p->n ? p->tok[p->i] : NULL; }

/* True if the next token is a number (an optional argument is present). */
static int next_is_number(struct parser *p)
{
  const char *t = peek(p);
  return t && (isdigit((unsigned char)t[0]) || (t[0] == '.' && isdigit((unsigned char)t[1])));
}

static int need(struct parser *p, const char *what, const char **out)
{
  if (!peek(p))
    return fail(p, "'%s' needs %s", p->tok[p->i - 1], what);
  *out = p->tok[p->i++];
  return 0;
}

static int percent_arg(struct parser *p, const char *kw, double *v)
{
  const char *t = NULL;
  if (need(p, "a percentage", &t) < 0)
    return -1;
  if (impair_parse_percent(t, v) < 0)
    return fail(p, "%s: bad percentage '%s' (want e.g. 1%% or 0.01, within 0..100%%)", kw, t);
  return 0;
}

/* An optional correlation percentage after a probability. */
static int opt_corr(struct parser *p, const char *kw, struct impair_corr *c)
{
  if (!next_is_number(p))
    return 0;
  return percent_arg(p, kw, &c->rho);
}

static int time_arg(struct parser *p, const char *kw, uint64_t *ns)
{
  const char *t = NULL;
  if (need(p, "a time", &t) < 0)
    return -1;
  if (impair_parse_time(t, ns) < 0)
    return fail(p, "%s: bad time '%s' (want e.g. 2ms, 500us, 1s; a bare number is us)", kw, t);
  return 0;
}

static int u64_arg(struct parser *p, const char *kw, uint64_t *v)
{
  const char *t = NULL;
  char *end;
  if (need(p, "a number", &t) < 0)
    return -1;
  errno = 0;
  unsigned long long x = strtoull(t, &end, 0);
  if (end == t || *end || errno || t[0] == '-')
    return fail(p, "%s: bad number '%s'", kw, t);
  *v = x;
  return 0;
}

static int parse_loss(struct parser *p, struct impair_conf *c)
{
  const char *t = peek(p);
  if (t && strcmp(t, "random") == 0)
    p->i++;
  else if (t && strcmp(t, "gemodel") == 0) {
    p->i++;
    c->gemodel = 1;
    if (percent_arg(p, "loss gemodel p", &c->ge_p) < 0)
      return -1;
    c->ge_r = 1 - c->ge_p;          /* man tc-netem: r = 1-p, 1-h = 1, 1-k = 0 */
    c->ge_bad_loss = 1;
    c->ge_good_loss = 0;
    if (next_is_number(p) && percent_arg(p, "loss gemodel r", &c->ge_r) < 0)
      return -1;
    if (next_is_number(p) && percent_arg(p, "loss gemodel 1-h", &c->ge_bad_loss) < 0)
      return -1;
    if (next_is_number(p) && percent_arg(p, "loss gemodel 1-k", &c->ge_good_loss) < 0)
      return -1;
    return 0;
  } else if (t && strcmp(t, "state") == 0)
    return fail(p, "loss state (4-state Markov) is not supported; use loss gemodel");
  if (percent_arg(p, "loss", &c->loss) < 0)
    return -1;
  return opt_corr(p, "loss correlation", &c->loss_corr);
}

static int parse_delay(struct parser *p, struct impair_conf *c)
{
  if (time_arg(p, "delay", &c->delay_ns) < 0)
    return -1;
  if (!next_is_number(p))
    return 0;
  if (time_arg(p, "delay jitter", &c->jitter_ns) < 0)
    return -1;
  return opt_corr(p, "delay correlation", &c->delay_corr);
}

static int parse_reorder(struct parser *p, struct impair_conf *c)
{
  if (percent_arg(p, "reorder", &c->reorder) < 0)
    return -1;
  if (opt_corr(p, "reorder correlation", &c->reorder_corr) < 0)
    return -1;
  if (c->gap == 0)
    c->gap = 1;
  return 0;
}

static int parse_rate(struct parser *p, struct impair_conf *c)
{
  const char *t = NULL;
  if (need(p, "a rate", &t) < 0)
    return -1;
  if (impair_parse_rate(t, &c->rate_bps) < 0)
    return fail(p, "rate: bad rate '%s' (want e.g. 100mbit, 1gbit, 10mbps)", t);
  t = peek(p);
  if (t && (isdigit((unsigned char)t[0]) || t[0] == '-')) {
    char *end;
    long v = strtol(t, &end, 10);
    if (*end || v < -1000 || v > 1000)
      return fail(p, "rate: bad packet overhead '%s'", t);
    c->rate_overhead = (int32_t)v;
    p->i++;
    if (next_is_number(p))
      return fail(p, "rate: cellsize/celloverhead are not supported");
  }
  return 0;
}

/* "3,7,100-120" (frame indices) or "2s-4s,10s-11s" (times). */
static int parse_ranges(struct parser *p, const char *kw, int times,
                        struct impair_range *r, int *nr)
{
  const char *t = NULL;
  if (need(p, times ? "a schedule like 2s-4s,10s-11s" : "a list like 3,7,100-120", &t) < 0)
    return -1;
  char buf[1024];
  if (strlen(t) >= sizeof buf)
    return fail(p, "%s: list too long", kw);
  strcpy(buf, t);
  char *cur = buf, *item;
  while ((item = next_token(&cur, ","))) {
    if (*nr >= IMPAIR_MAX_RANGES)
      return fail(p, "%s: more than %d ranges", kw, IMPAIR_MAX_RANGES);
    char *dash = strchr(item, '-');
    uint64_t lo, hi;
    if (dash)
      *dash = 0;
    const char *hs = dash ? dash + 1 : item;
    int bad;
    if (times)
      bad = impair_parse_time(item, &lo) < 0 || impair_parse_time(hs, &hi) < 0 || !dash;
    else {
      char *e1, *e2;
      lo = strtoull(item, &e1, 10);
      hi = strtoull(hs, &e2, 10);
      bad = e1 == item || *e1 || e2 == hs || *e2 || item[0] == '-';
    }
    if (bad || hi < lo)
      return fail(p, "%s: bad range '%s%s%s'%s", kw, item, dash ? "-" : "", dash ? hs : "",
                  times ? " (want START-END with units, e.g. 2s-4s)" : " (want N or LO-HI)");
    if (times && hi > lo)
      hi--;                           /* [start, end) */
    r[*nr].lo = lo;
    r[*nr].hi = hi;
    (*nr)++;
  }
  return 0;
}

static int parse_tokens(struct parser *p, struct impair_conf *c)
{
  while (peek(p)) {
    const char *kw = p->tok[p->i++];
    int rc;
    uint64_t v;
    if (!strcmp(kw, "loss"))
      rc = parse_loss(p, c);
    else if (!strcmp(kw, "delay") || !strcmp(kw, "latency"))
      rc = parse_delay(p, c);
    else if (!strcmp(kw, "distribution")) {
      const char *t = NULL;
      if (need(p, "uniform or normal", &t) < 0)
        return -1;
      rc = 0;
      if (!strcmp(t, "uniform"))
        c->dist = IMPAIR_DIST_UNIFORM;
      else if (!strcmp(t, "normal"))
        c->dist = IMPAIR_DIST_NORMAL;
      else
        return fail(p, "distribution: '%s' not supported (uniform, normal)", t);
    } else if (!strcmp(kw, "reorder"))
      rc = parse_reorder(p, c);
    else if (!strcmp(kw, "gap")) {
      if ((rc = u64_arg(p, "gap", &v)) == 0) {
        if (v < 1 || v > UINT32_MAX)
          return fail(p, "gap: must be >= 1");
        c->gap = (uint32_t)v;
      }
    } else if (!strcmp(kw, "duplicate")) {
      if ((rc = percent_arg(p, kw, &c->dup)) == 0)
        rc = opt_corr(p, "duplicate correlation", &c->dup_corr);
    } else if (!strcmp(kw, "corrupt")) {
      if ((rc = percent_arg(p, kw, &c->corrupt)) == 0)
        rc = opt_corr(p, "corrupt correlation", &c->corrupt_corr);
    } else if (!strcmp(kw, "rate"))
      rc = parse_rate(p, c);
    else if (!strcmp(kw, "limit")) {
      if ((rc = u64_arg(p, kw, &v)) == 0) {
        if (v > (1u << 24))
          return fail(p, "limit: at most %u frames", 1u << 24);
        c->limit = (uint32_t)v;
      }
    } else if (!strcmp(kw, "seed"))
      rc = u64_arg(p, kw, &c->seed);
    else if (!strcmp(kw, "drop"))
      rc = parse_ranges(p, kw, 0, c->drop, &c->ndrop);
    else if (!strcmp(kw, "blackhole"))
      rc = parse_ranges(p, kw, 1, c->hole, &c->nhole);
    else
      return fail(p, "unknown keyword '%s' (known: loss delay distribution reorder gap "
                  "duplicate corrupt rate limit seed drop blackhole)", kw);
    if (rc < 0)
      return -1;
  }
  if (c->reorder > 0 && c->delay_ns == 0)
    return fail(p, "reorder needs a delay (reordering sends some frames ahead of delayed ones)");
  return 0;
}

static int parse_conf(const char *spec, struct impair_conf *c, char *err, size_t errlen)
{
  struct parser p = {.err = err, .errlen = errlen};
  char *copy = dup_string(spec ? spec : ""), *cur = copy, *t;
  int rc;
  memset(c, 0, sizeof *c);
  if (!copy)
    return fail(&p, "out of memory");
  while (copy && (t = next_token(&cur, " \t\r\n"))) {
    if (p.n == MAXTOK) {
      free(copy);
      return fail(&p, "spec has more than %d words", MAXTOK);
    }
    p.tok[p.n++] = t;
  }
  rc = parse_tokens(&p, c);
  free(copy);
  return rc;
}

static void seed_streams(struct impair *im, uint64_t now)
{
  for (int s = 0; s < IMPAIR_NSTREAMS; s++)
    impair_rng_seed(&im->rng[s], im->c.seed, (uint64_t)im->dir * 16 + s + 1);
  im->ge_bad = 0;
  im->reorder_count = 0;
  im->start_ns = now;
}

static int alloc_queue(struct impair *im)
{
  free(im->q);
  im->q = NULL;
  im->qlen = 0;
  if (im->c.limit == 0)
    return 0;
  im->q = malloc(sizeof *im->q * im->c.limit);
  return im->q ? 0 : -1;
}

int impair_parse(struct impair *im, const char *spec, int dir, char *err, size_t errlen)
{
  memset(im, 0, sizeof *im);
  im->dir = dir;
  if (parse_conf(spec, &im->c, err, errlen) < 0)
    return -1;
  if (alloc_queue(im) < 0) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  seed_streams(im, 0);
  return 0;
}

int impair_reload(struct impair *im, const char *spec, uint64_t now, char *err, size_t errlen)
{
  struct impair_conf c;
  if (parse_conf(spec, &c, err, errlen) < 0)
    return -1;
  im->c = c;
  if (alloc_queue(im) < 0) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  seed_streams(im, now);
  if (im->link_free_ns < now)
    im->link_free_ns = now;
  return 0;
}

void impair_start(struct impair *im, uint64_t now) { im->start_ns = now; }

void impair_free(struct impair *im)
{
  free(im->q);
  im->q = NULL;
}

/* ---- the decision ---- */

static int in_ranges(const struct impair_range *r, int n, uint64_t x)
{
  for (int i = 0; i < n; i++)
    if (x >= r[i].lo && x <= r[i].hi)
      return 1;
  return 0;
}

/* Is time t inside a blackhole window (relative to the start)? */
static int in_hole(const struct impair *im, uint64_t t)
{
  return im->c.nhole && t >= im->start_ns && in_ranges(im->c.hole, im->c.nhole, t - im->start_ns);
}

/* Gilbert-Elliott, as netem: the loss draw uses the state before the
 * transition draw of this frame. */
static int ge_draw(struct impair *im)
{
  struct impair_rng *r = &im->rng[IMPAIR_RNG_GE];
  double move = impair_rng_unit(r), lose = impair_rng_unit(r);
  int lost = lose < (im->ge_bad ? im->c.ge_bad_loss : im->c.ge_good_loss);
  if (!im->c.gemodel)
    return 0;
  if (im->ge_bad ? move < im->c.ge_r : move < im->c.ge_p)
    im->ge_bad = !im->ge_bad;
  return lost;
}

/* Limit: pop the departed, then report whether `copies` more fit. */
static void q_sift_down(uint64_t *q, uint32_t n, uint32_t i)
{
  for (;;) {
    uint32_t l = 2 * i + 1, m = i;
    if (l < n && q[l] < q[m]) m = l;
    if (l + 1 < n && q[l + 1] < q[m]) m = l + 1;
    if (m == i) return;
    uint64_t t = q[i]; q[i] = q[m]; q[m] = t;
    i = m;
  }
}

static void q_expire(struct impair *im, uint64_t now)
{
  while (im->qlen && im->q[0] <= now) {
    im->q[0] = im->q[--im->qlen];
    q_sift_down(im->q, im->qlen, 0);
  }
}

static void q_push(struct impair *im, uint64_t t)
{
  if (!im->q || im->qlen >= im->c.limit)
    return;
  uint32_t i = im->qlen++;
  im->q[i] = t;
  while (i && im->q[(i - 1) / 2] > im->q[i]) {
    uint64_t x = im->q[i]; im->q[i] = im->q[(i - 1) / 2]; im->q[(i - 1) / 2] = x;
    i = (i - 1) / 2;
  }
}

static uint64_t jittered_delay(struct impair *im)
{
  const struct impair_conf *c = &im->c;
  struct impair_rng *r = &im->rng[IMPAIR_RNG_DELAY];
  double u = corr_unit(r, &im->c.delay_corr), d;
  if (c->jitter_ns == 0)
    return c->delay_ns;
  if (c->dist == IMPAIR_DIST_NORMAL) {
    double u2 = impair_rng_unit(r);
    double z = sqrt(-2 * log(1 - u)) * cos(2 * 3.14159265358979323846 * u2);
    d = (double)c->delay_ns + z * (double)c->jitter_ns;
  } else
    d = (double)c->delay_ns - (double)c->jitter_ns + u * 2.0 * (double)c->jitter_ns;
  return d < 0 ? 0 : (uint64_t)d;
}

static uint64_t tx_time(const struct impair *im, uint32_t len)
{
  int64_t bytes = (int64_t)len + im->c.rate_overhead;
  if (im->c.rate_bps == 0 || bytes <= 0)
    return 0;
  /* 128-bit-free: bytes * 8e9 fits in 64 bits for any frame size. */
  return ((uint64_t)bytes * 8ULL * 1000000000ULL + im->c.rate_bps - 1) / im->c.rate_bps;
}

/* When a copy offered at `now` departs: serialize, then propagate. Also
 * decides netem-style reordering: once `gap - 1` frames have been delayed,
 * the next one goes with probability `reorder` straight to the head of the
 * queue, undelayed (it still serializes). */
static uint64_t departure(struct impair *im, uint64_t now, uint32_t len, int *reordered)
{
  const struct impair_conf *c = &im->c;
  double u = corr_unit(&im->rng[IMPAIR_RNG_REORDER], &im->c.reorder_corr);
  uint64_t tx = tx_time(im, len);
  *reordered = 0;
  if (c->gap && c->reorder > 0 && im->reorder_count + 1 >= c->gap && u < c->reorder) {
    im->reorder_count = 0;
    *reordered = 1;
    return now + tx;
  }
  im->reorder_count++;
  uint64_t start = im->link_free_ns > now ? im->link_free_ns : now;
  im->link_free_ns = start + tx;
  return im->link_free_ns + jittered_delay(im);
}

/* One frame's random draws: each stream draws the same number of values for
 * every frame, whatever the other impairments decide. */
struct draws {
  int dup, rnd_lost, ge_lost, corrupt;
  uint64_t where;                   /* corrupt: byte (>> 3) and bit (& 7) */
};

static void draw_all(struct impair *im, struct draws *d)
{
  const struct impair_conf *c = &im->c;
  struct impair_rng *cr = &im->rng[IMPAIR_RNG_CORRUPT];
  d->dup = corr_unit(&im->rng[IMPAIR_RNG_DUP], &im->c.dup_corr) < c->dup;
  d->rnd_lost = corr_unit(&im->rng[IMPAIR_RNG_LOSS], &im->c.loss_corr) < c->loss;
  d->ge_lost = ge_draw(im);
  d->corrupt = corr_unit(cr, &im->c.corrupt_corr) < c->corrupt;
  d->where = impair_rng_next(cr);
}

/* How many copies (0..2) enter the link at `now`; if none, *cause says why.
 * Clears d->dup when the duplicate does not enter. */
static int admit(struct impair *im, uint64_t index, uint64_t now, struct draws *d,
                 enum impair_cause *cause)
{
  const struct impair_conf *c = &im->c;
  int copies = 1 + d->dup;
  if (in_ranges(c->drop, c->ndrop, index)) {
    *cause = IMPAIR_DROP_LIST;
    return 0;
  }
  if (in_hole(im, now)) {
    *cause = IMPAIR_DROP_BLACKHOLE;
    return 0;
  }
  if (d->rnd_lost || d->ge_lost) {
    copies--;                       /* netem: a lost duplicate still sends one */
    d->dup = 0;
    *cause = d->rnd_lost ? IMPAIR_DROP_RANDOM : IMPAIR_DROP_GEMODEL;
  }
  if (copies && c->limit) {
    q_expire(im, now);
    if (im->qlen + copies > c->limit) {
      copies = (int)(c->limit - im->qlen);   /* the duplicate goes first */
      d->dup = 0;
      *cause = IMPAIR_DROP_LIMIT;
    }
  }
  return copies;
}

/* Departure times of the admitted copies. A blackhole also takes a copy that
 * would leave during it (it was on the wire when the link went dark).
 * Returns the number of copies that survive (0..2). */
static int schedule(struct impair *im, uint64_t now, uint32_t len, struct draws *d,
                    struct impair_verdict *v)
{
  v->depart_ns = departure(im, now, len, &v->reordered);
  int orig_lost = in_hole(im, v->depart_ns);
  if (d->dup) {
    int r2;
    v->dup_depart_ns = departure(im, now, len, &r2);
    v->dup = !in_hole(im, v->dup_depart_ns);
  }
  if (orig_lost && !v->dup)
    return 0;
  if (orig_lost) {                  /* only the (clean) duplicate survives */
    v->depart_ns = v->dup_depart_ns;
    v->dup = 0;
    v->reordered = 0;
    d->corrupt = 0;
  }
  return 1 + v->dup;
}

void impair_decide(struct impair *im, uint64_t index, uint64_t now, uint32_t len,
                   struct impair_verdict *v)
{
  struct impair_counters *n = &im->n;
  struct draws d;
  enum impair_cause cause = IMPAIR_KEEP;
  memset(v, 0, sizeof *v);
  v->index = index;
  n->frames_in++;
  n->bytes_in += len;
  draw_all(im, &d);

  int copies = admit(im, index, now, &d, &cause);
  if (copies > 0 && (copies = schedule(im, now, len, &d, v)) == 0)
    cause = IMPAIR_DROP_BLACKHOLE;
  if (copies == 0) {
    memset(v, 0, sizeof *v);
    v->index = index;
    v->drop = cause;
    n->dropped[cause]++;
    return;
  }
  n->duplicated += (uint64_t)d.dup;
  n->reordered += (uint64_t)v->reordered;
  q_push(im, v->depart_ns);
  if (v->dup)
    q_push(im, v->dup_depart_ns);
  if (d.corrupt && len > 0) {
    v->corrupt = 1;
    v->corrupt_byte = (uint32_t)((d.where >> 3) % len);
    v->corrupt_bit = (uint8_t)(d.where & 7);
    n->corrupted++;
  }
  n->frames_out += (uint64_t)copies;
  n->bytes_out += (uint64_t)copies * len;
  n->delayed_bytes += (v->depart_ns > now ? len : 0) + (v->dup && v->dup_depart_ns > now ? len : 0);
}

void impair_apply_corrupt(const struct impair_verdict *v, uint8_t *frame, uint32_t len)
{
  if (v->corrupt && v->corrupt_byte < len)
    frame[v->corrupt_byte] ^= (uint8_t)(1u << v->corrupt_bit);
}

/* ---- normalized text form ---- */

struct out { char *buf; size_t len, used; };

static void put(struct out *o, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(o->used < o->len ? o->buf + o->used : NULL,
                    o->used < o->len ? o->len - o->used : 0, fmt, ap);
  va_end(ap);
  if (k > 0)
    o->used += (size_t)k;
}

static void put_ranges(struct out *o, const char *kw, const struct impair_range *r, int n, int t)
{
  if (!n)
    return;
  put(o, " %s ", kw);
  for (int i = 0; i < n; i++) {
    const char *sep = i ? "," : "";
    if (t)
      put(o, "%s%lluns-%lluns", sep, (unsigned long long)r[i].lo, (unsigned long long)r[i].hi + 1);
    else if (r[i].lo == r[i].hi)
      put(o, "%s%llu", sep, (unsigned long long)r[i].lo);
    else
      put(o, "%s%llu-%llu", sep, (unsigned long long)r[i].lo, (unsigned long long)r[i].hi);
  }
}

size_t impair_format(const struct impair_conf *c, char *buf, size_t len)
{
  struct out o = {buf, len, 0};
  if (len)
    buf[0] = 0;
  put(&o, "seed %llu", (unsigned long long)c->seed);
  if (c->gemodel)
    put(&o, " loss gemodel %g%% %g%% %g%% %g%%", c->ge_p * 100, c->ge_r * 100,
        c->ge_bad_loss * 100, c->ge_good_loss * 100);
  if (c->loss > 0)
    put(&o, " loss random %g%% %g%%", c->loss * 100, c->loss_corr.rho * 100);
  if (c->delay_ns || c->jitter_ns)
    put(&o, " delay %lluns %lluns %g%% distribution %s", (unsigned long long)c->delay_ns,
        (unsigned long long)c->jitter_ns, c->delay_corr.rho * 100,
        c->dist == IMPAIR_DIST_NORMAL ? "normal" : "uniform");
  if (c->reorder > 0)
    put(&o, " reorder %g%% %g%% gap %u", c->reorder * 100, c->reorder_corr.rho * 100, c->gap);
  if (c->dup > 0)
    put(&o, " duplicate %g%%", c->dup * 100);
  if (c->corrupt > 0)
    put(&o, " corrupt %g%%", c->corrupt * 100);
  if (c->rate_bps)
    put(&o, " rate %llubit %d", (unsigned long long)c->rate_bps, c->rate_overhead);
  if (c->limit)
    put(&o, " limit %u", c->limit);
  put_ranges(&o, "drop", c->drop, c->ndrop, 0);
  put_ranges(&o, "blackhole", c->hole, c->nhole, 1);
  return o.used;
}
