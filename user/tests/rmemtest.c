// rmemtest.c: the guest side of tests/rdma/run_rmem.py: librmem against a
// memory node (rmemd) on another guest or Linux, one case a process
// (user/tests/testrun.h). The runner starts the memory node as
//   rmemd -m 4 -l 3072
// (a pool of 4 MiB, 3 MiB per client) and runs
//   rmemtest -s SERVER [-p PORT] [-l] [testrun options] [case...]
// -l: the link loses frames; an access the memory node refuses may then
// end the connection instead of reporting the refusal [RMEM-DATA-3].
// Each case asserts what came back (bytes, statuses, errno, STAT) and
// cites the rule of proto-spec/rmem.md it checks.
//
//   rmemtest -s SERVER -p PORT hold
// (not a case) connects, allocates a region, writes it, prints
// "rmemtest: holding", then waits until the memory node goes away and
// prints "rmemtest: server gone: errno N (...)" (the runner kills rmemd).
#include "user/lib/c/user.h"
#include "user/tests/testrun.h"
#include "user/lib/rmem/rmem.h"

#define POOL (4u << 20)                 // the runner's rmemd -m 4
#define LIMIT (3u << 20)                // and -l 3072

static const char *server;
static int port;
static int lossy;                       // -l

// A refused access's errno: EACCES, or on a lossy link ECONNRESET when
// the NAK saying why was lost [RMEM-DATA-2] [RMEM-DATA-3]. *resets
// counts the second kind.
static int refused(int rc, int *resets) {
  if (rc != -1) return 0;
  if (errno == ECONNRESET && lossy) return ++*resets;
  return errno == EACCES;
}

static void fill(uint8_t *b, size_t n, uint32_t seed) {
  for (size_t i = 0; i < n; i++) b[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 9));
}

static uint32_t sum(const uint8_t *b, size_t n) {   // FNV-1a
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 16777619u;
  return h;
}

static struct rmem *conn(void) {
  struct rmem *m = rmem_connect(server, port);
  TR_CHECK(m, "connect to %s:%d: %s (errno %d)", server, port, rmem_last_error(0), errno);
  return m;
}

static struct rmem_stat stat_of(struct rmem *m) {
  struct rmem_stat st;
  TR_CHECK(rmem_stat(m, &st) == 0, "STAT: %s", rmem_last_error(m));
  return st;
}

// Waits (20 s at most) until the pool is whole again: the clients of the
// cases before may still be being reaped [RMEM-LIFE-1].
static void wait_pool_whole(struct rmem *m) {
  struct rmem_stat st;
  int deadline = uptime() + 2000;
  while ((st = stat_of(m)).pool_free != POOL && uptime() < deadline) sleep(5);
  TR_CHECK(st.pool_free == POOL, "pool free %llu of %u after 20 s", (unsigned long long)st.pool_free, POOL);
}

// ALLOC rounds up to pages and hands out zeroed memory; WRITE then READ
// gives the bytes back; STAT counts the region; FREE gives it back.
// [RMEM-OP-1] [RMEM-OP-3] [RMEM-OP-4] [RMEM-ISO-3] [RMEM-DATA-1]
static void rmem_alloc_write_read_free(void) {
  struct rmem *m = conn();
  struct rmem_region r;
  static uint8_t out[12288], in[12288];
  wait_pool_whole(m);
  TR_CHECK(rmem_alloc(m, 10000, &r) == 0, "ALLOC: %s", rmem_last_error(m));
  TR_CHECK(r.length == 12288 && r.addr % RMEM_PAGE == 0 && r.id != 0 && r.rkey != 0,
           "region id %u len %llu addr %llx rkey %x", r.id, (unsigned long long)r.length,
           (unsigned long long)r.addr, r.rkey);
  TR_CHECK(rmem_read(m, &r, 0, in, sizeof in) == 0, "READ: %s", rmem_last_error(m));
  for (size_t i = 0; i < sizeof in; i++) TR_CHECK(in[i] == 0, "new region byte %d is %d", (int)i, in[i]);
  fill(out, sizeof out, 1);
  TR_CHECK(rmem_write(m, &r, 0, out, sizeof out) == 0, "WRITE: %s", rmem_last_error(m));
  TR_CHECK(rmem_read(m, &r, 100, in, 5000) == 0, "READ: %s", rmem_last_error(m));
  TR_CHECK(memcmp(in, out + 100, 5000) == 0, "READ at 100 differs from what was written");
  struct rmem_stat st = stat_of(m);
  TR_CHECK(st.nregions == 1 && st.used == 12288 && st.limit == LIMIT && st.pool_free == POOL - 12288,
           "STAT regions %u used %llu limit %llu pool_free %llu", st.nregions,
           (unsigned long long)st.used, (unsigned long long)st.limit, (unsigned long long)st.pool_free);
  TR_CHECK(rmem_free(m, r.id) == 0, "FREE: %s", rmem_last_error(m));
  st = stat_of(m);
  TR_CHECK(st.nregions == 0 && st.used == 0 && st.pool_free == POOL, "after FREE: regions %u used %llu",
           st.nregions, (unsigned long long)st.used);
  printf("rmemtest: region %u of %llu bytes, sum %x\n", r.id, (unsigned long long)r.length, sum(out, sizeof out));
  rmem_close(m);
}

// Many accesses in flight: 64 WRITEs of 16 KiB, then 64 READs, completions
// matched by tag; 1 MiB comes back intact. [RMEM-DATA-1] [RMEM-MSG-4]
static void rmem_inflight_1mib(void) {
  enum { N = 64, PIECE = 16384 };
  struct rmem *m = conn();
  struct rmem_region r;
  uint8_t *out = malloc(N * PIECE), *in = malloc(N * PIECE);
  TR_ASSERT(out && in);
  fill(out, N * PIECE, 2);
  memset(in, 0, N * PIECE);
  TR_CHECK(rmem_reg(m, out, N * PIECE) == 0 && rmem_reg(m, in, N * PIECE) == 0, "reg: %s", rmem_last_error(m));
  TR_CHECK(rmem_alloc(m, N * PIECE, &r) == 0, "ALLOC: %s", rmem_last_error(m));
  for (int write = 1; write >= 0; write--) {
    int seen[N] = { 0 }, got = 0;
    for (int i = 0; i < N; i++) {
      int rc = write ? rmem_post_write(m, &r, (uint64_t)i * PIECE, out + i * PIECE, PIECE, (uint64_t)i)
                     : rmem_post_read(m, &r, (uint64_t)i * PIECE, in + i * PIECE, PIECE, (uint64_t)i);
      TR_CHECK(rc == 0, "post %d: %s", i, rmem_last_error(m));
    }
    TR_CHECK(rmem_inflight(m) == N, "in flight %d", rmem_inflight(m));
    while (got < N) {
      struct rmem_comp c[8];
      int n = rmem_wait(m, c, 8, 60000);
      TR_CHECK(n > 0, "wait: %s", rmem_last_error(m));
      for (int k = 0; k < n; k++) {
        TR_CHECK(c[k].tag < N && !seen[c[k].tag] && c[k].error == 0, "completion tag %llu error %d",
                 (unsigned long long)c[k].tag, c[k].error);
        seen[c[k].tag] = 1;
      }
      got += n;
    }
  }
  TR_CHECK(memcmp(in, out, N * PIECE) == 0, "1 MiB read back differs");
  printf("rmemtest: 1 MiB in flight written and read, sum %x\n", sum(in, N * PIECE));
  rmem_close(m);
}

// Every error of ALLOC and FREE, each changing nothing. [RMEM-OP-1]
// [RMEM-OP-2] [RMEM-OP-3] [RMEM-ERR-1]
static void rmem_errors(void) {
  struct rmem *m = conn(), *m2;
  struct rmem_region r, big, small[RMEM_MAX_REGIONS];
  wait_pool_whole(m);
  TR_CHECK(rmem_alloc(m, 0, &r) == -1 && errno == ERANGE, "ALLOC 0: errno %d", errno);
  TR_CHECK(rmem_alloc(m, RMEM_MAX_REGION + 1, &r) == -1 && errno == ERANGE, "ALLOC too big: errno %d", errno);
  TR_CHECK(rmem_alloc(m, LIMIT + 1, &r) == -1 && errno == ENOSPC, "ALLOC over the limit: errno %d (%s)",
           errno, rmem_last_error(m));
  TR_CHECK(rmem_free(m, 12345) == -1 && errno == ENOENT, "FREE of a bad id: errno %d", errno);
  // The pool (4 MiB) runs out before a second client's limit (3 MiB).
  TR_CHECK(rmem_alloc(m, LIMIT, &big) == 0, "ALLOC of the limit: %s", rmem_last_error(m));
  TR_CHECK(rmem_alloc(m, 1, &r) == -1 && errno == ENOSPC, "ALLOC past the limit: errno %d", errno);
  m2 = conn();
  TR_CHECK(rmem_alloc(m2, 2u << 20, &r) == -1 && errno == ENOMEM, "ALLOC past the pool: errno %d (%s)",
           errno, rmem_last_error(m2));
  struct rmem_stat st = stat_of(m2);
  TR_CHECK(st.nregions == 0 && st.used == 0 && st.pool_free == POOL - LIMIT, "after ENOMEM: %u %llu %llu",
           st.nregions, (unsigned long long)st.used, (unsigned long long)st.pool_free);
  TR_CHECK(rmem_free(m2, big.id) == -1 && errno == ENOENT, "FREE of another client's region: errno %d", errno);
  TR_CHECK(rmem_free(m, big.id) == 0, "FREE: %s", rmem_last_error(m));
  TR_CHECK(rmem_free(m, big.id) == -1 && errno == ENOENT, "second FREE: errno %d", errno);
  // The region count limit.
  for (int i = 0; i < RMEM_MAX_REGIONS; i++)
    TR_CHECK(rmem_alloc(m2, 1, &small[i]) == 0, "ALLOC %d: %s", i, rmem_last_error(m2));
  TR_CHECK(rmem_alloc(m2, 1, &r) == -1 && errno == ENOSPC, "ALLOC past %d regions: errno %d",
           RMEM_MAX_REGIONS, errno);
  for (int i = 0; i < RMEM_MAX_REGIONS; i++)
    TR_CHECK(rmem_free(m2, small[i].id) == 0, "FREE %d: %s", i, rmem_last_error(m2));
  // A local range check: nothing posted.
  TR_CHECK(rmem_alloc(m, 4096, &r) == 0, "ALLOC: %s", rmem_last_error(m));
  uint8_t b[16];
  TR_CHECK(rmem_read(m, &r, 4090, b, 16) == -1 && errno == ERANGE, "READ past the end: errno %d", errno);
  st = stat_of(m);
  TR_CHECK(st.nregions == 1 && st.pool_free == POOL - 4096, "STAT %u %llu", st.nregions,
           (unsigned long long)st.pool_free);
  rmem_close(m2);
  rmem_close(m);
}

// Malformed requests on the wire: each answered with its status, req_id
// echoed, nothing changed. [RMEM-MSG-5]
static void rmem_bad_requests(void) {
  struct rmem *m = conn();
  uint8_t req[RMEM_REQ_LEN];
  struct rmem_msg good = rmem_request(RMEM_OP_STAT, 0), rep;
  rmem_encode_req(&good, req);
  wait_pool_whole(m);
  static const struct { int at, value, len, status; } cases[] = {
    { 0, 'X', RMEM_REQ_LEN, RMEM_EBADREQ },      // magic
    { 4, 9, RMEM_REQ_LEN, RMEM_EBADVER },        // version
    { 5, 77, RMEM_REQ_LEN, RMEM_EBADREQ },       // op
    { 7, 1, RMEM_REQ_LEN, RMEM_EBADREQ },        // status
    { 0, 'R', RMEM_REQ_LEN - 1, RMEM_EBADREQ },  // short
    { 0, 'R', 6, RMEM_EBADREQ },                 // no req_id
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    uint8_t bad[RMEM_REQ_LEN];
    memcpy(bad, req, sizeof bad);
    bad[cases[i].at] = (uint8_t)cases[i].value;
    TR_CHECK(rmem_call_raw(m, bad, (size_t)cases[i].len, 1, &rep) == 0, "case %d: no reply: %s", (int)i,
             rmem_last_error(m));
    TR_CHECK(rep.status == cases[i].status, "case %d: status %d, want %d", (int)i, rep.status, cases[i].status);
  }
  struct rmem_stat st = stat_of(m);
  TR_CHECK(st.nregions == 0 && st.pool_free == POOL, "STAT after bad requests: %u %llu", st.nregions,
           (unsigned long long)st.pool_free);
  rmem_close(m);
}

// A: a region with a pattern. Another client's READ and WRITE with A's
// rkey and address, a forged rkey, a range past A's region and an rkey
// after FREE all fail with a remote access error (with -l: or end the
// connection); A's bytes stay.
// [RMEM-ISO-1] [RMEM-ISO-2] [RMEM-DATA-2] [RMEM-DATA-3] [RMEM-OP-3]
static void rmem_isolation(void) {
  struct rmem *a = conn(), *b;
  struct rmem_region r, fake;
  int resets = 0;
  static uint8_t pat[8192], buf[8192];
  TR_CHECK(rmem_alloc(a, sizeof pat, &r) == 0, "ALLOC: %s", rmem_last_error(a));
  fill(pat, sizeof pat, 3);
  TR_CHECK(rmem_write(a, &r, 0, pat, sizeof pat) == 0, "WRITE: %s", rmem_last_error(a));
  for (int t = 0; t < 4; t++) {
    b = conn();
    struct rmem_region mine;
    TR_CHECK(rmem_alloc(b, 4096, &mine) == 0, "B's ALLOC: %s", rmem_last_error(b));
    fake = r;
    if (t == 2) fake.rkey = mine.rkey ^ 0x5a5a5a5au;          // a forged key
    if (t == 3) fake = mine, fake.length = 8192;               // past B's own region
    memset(buf, 0xee, sizeof buf);
    uint64_t off = t == 3 ? 4096 : 0;
    int rc = t == 1 ? rmem_write(b, &fake, off, buf, 4096) : rmem_read(b, &fake, off, buf, 4096);
    TR_CHECK(refused(rc, &resets), "try %d: rc %d errno %d (%s)", t, rc, errno, rmem_last_error(b));
    if (t != 1) for (int i = 0; i < 4096; i++) TR_CHECK(buf[i] == 0xee, "try %d: byte %d arrived", t, i);
    TR_CHECK(rmem_alloc(b, 4096, &mine) == -1 && errno == ECONNRESET, "after EACCES: errno %d", errno);
    rmem_close(b);
  }
  TR_CHECK(rmem_read(a, &r, 0, buf, sizeof buf) == 0 && memcmp(buf, pat, sizeof pat) == 0,
           "A's region changed: %s", rmem_last_error(a));
  // A stale rkey: FREE, then A's own access fails.
  TR_CHECK(rmem_free(a, r.id) == 0, "FREE: %s", rmem_last_error(a));
  memset(buf, 0xee, 4096);
  TR_CHECK(refused(rmem_read(a, &r, 0, buf, 4096), &resets), "READ after FREE: errno %d", errno);
  for (int i = 0; i < 4096; i++) TR_CHECK(buf[i] == 0xee, "READ after FREE: byte %d arrived", i);
  rmem_close(a);
  printf("rmemtest: isolation: 4 foreign accesses and a stale key refused (%d by a lost NAK's reset), "
         "region intact\n", resets);
}

// A client process that exits holding regions: the memory node frees them
// [RMEM-LIFE-1]; waits for STAT's pool_free to come back, with a deadline.
static void rmem_exit_frees(void) {
  int pid = fork();
  TR_ASSERT(pid >= 0);
  if (pid == 0) {
    struct rmem *m = rmem_connect(server, port);
    struct rmem_region r;
    if (!m) exit(2);
    for (int i = 0; i < 3; i++)
      if (rmem_alloc(m, 256 << 10, &r)) exit(3);
    exit(0);                                   // no FREE, no close
  }
  int status;
  wait(&status);
  TR_CHECK(status == 0, "child status %d", status);
  struct rmem *m = conn();
  wait_pool_whole(m);
  rmem_close(m);
}

// RMEM_MAX_OUTSTANDING requests sent at once, before any reply: each is
// answered once, its req_id echoed [RMEM-CONN-3] [RMEM-MSG-4]; then the
// same again, the credits having come back with the replies.
static void rmem_outstanding_requests(void) {
  struct rmem *m = conn();
  struct rmem_msg req = rmem_request(RMEM_OP_ALLOC, 0), rep[RMEM_MAX_OUTSTANDING];
  uint8_t raw[RMEM_REQ_LEN];
  req.size = 4096;
  rmem_encode_req(&req, raw);
  for (int round = 0; round < 2; round++) {
    TR_CHECK(rmem_call_raw(m, raw, sizeof raw, RMEM_MAX_OUTSTANDING, rep) == 0, "round %d: %s", round,
             rmem_last_error(m));
    for (int i = 0; i < RMEM_MAX_OUTSTANDING; i++) {
      TR_CHECK(rep[i].status == RMEM_OK && rep[i].op == RMEM_OP_ALLOC && rep[i].length == 4096,
               "reply %d: status %d op %d length %llu", i, rep[i].status, rep[i].op,
               (unsigned long long)rep[i].length);
      for (int j = 0; j < i; j++)
        TR_CHECK(rep[j].region != rep[i].region && rep[j].rkey != rep[i].rkey, "replies %d and %d share a region", j, i);
    }
  }
  struct rmem_stat st = stat_of(m);
  TR_CHECK(st.nregions == 2 * RMEM_MAX_OUTSTANDING && st.used == 2 * RMEM_MAX_OUTSTANDING * 4096,
           "STAT: %u regions, %llu bytes", st.nregions, (unsigned long long)st.used);
  rmem_close(m);
}

static const struct tr_case cases[] = {
  { "rmem_alloc_write_read_free", rmem_alloc_write_read_free, TR_QUICK, 120 },
  { "rmem_inflight_1mib", rmem_inflight_1mib, TR_QUICK, 300 },
  { "rmem_errors", rmem_errors, TR_QUICK, 300 },
  { "rmem_bad_requests", rmem_bad_requests, TR_QUICK, 120 },
  { "rmem_outstanding_requests", rmem_outstanding_requests, TR_QUICK, 120 },
  { "rmem_isolation", rmem_isolation, TR_QUICK, 300 },
  { "rmem_exit_frees", rmem_exit_frees, TR_QUICK, 120 },
  { 0 },
};

static const struct tr_case *const tables[] = { cases };

// Holds a region until the memory node goes away [RMEM-LIFE-2].
static int hold(void) {
  struct rmem *m = rmem_connect(server, port);
  struct rmem_region r;
  static uint8_t b[4096];
  if (!m || rmem_alloc(m, sizeof b, &r) || rmem_write(m, &r, 0, b, sizeof b)) {
    printf("rmemtest: hold: %s\n", rmem_last_error(m));
    return 1;
  }
  printf("rmemtest: holding region %u\n", r.id);
  struct rmem_stat st;
  while (rmem_stat(m, &st) == 0) sleep(20);
  printf("rmemtest: server gone: errno %d (%s)\n", errno, rmem_last_error(m));
  int again = rmem_read(m, &r, 0, b, sizeof b);
  printf("rmemtest: READ after: %d errno %d\n", again, errno);
  rmem_close(m);
  return 0;
}

int main(int argc, char **argv) {
  static const struct tr_suite suite = { "rmemtest", tables, 1, 120, 0, 0 };
  port = RMEM_PORT;
  for (;;) {                            // -s SERVER, -p PORT, -l; the rest is testrun's
    int two = argc > 2 && (strcmp(argv[1], "-s") == 0 || strcmp(argv[1], "-p") == 0);
    if (!two && !(argc > 1 && strcmp(argv[1], "-l") == 0)) break;
    if (!two) lossy = 1;
    else if (argv[1][1] == 's') server = argv[2];
    else port = atoi(argv[2]);
    argv[two + 1] = argv[0];
    argv += two + 1;
    argc -= two + 1;
  }
  if (!server) {
    printf("usage: rmemtest [-l] -s server [-p port] [testrun options] [case...] | hold\n");
    return 2;
  }
  if (argc == 2 && strcmp(argv[1], "hold") == 0) return hold();
  return tr_main(&suite, argc, argv);
}
