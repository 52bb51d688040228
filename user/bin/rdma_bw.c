// rdma_bw: bandwidth test in the manner of perftest's ib_write_bw /
// ib_read_bw / ib_send_bw / ib_atomic_bw.
//
//   rdma_bw [-t write|read|send|atomic] [-A CMP_AND_SWAP|FETCH_AND_ADD] [-s size] [-n iters] [-a] [-d depth] [-e] [--sr]
//           [--inflight pkts] [--min-rto us | --fixed-rto] [--idle-qps n] [-q qps]
//           [--stats] (-L | <server ip>)   client side / loopback
//   rdma_bw                           server side (parameters come from the client)
//   rdma_bw -R [opts] [<server ip>]   perftest's rdma_cm exchange (perftest_cm.c): against
//                                     Linux's ib_write_bw -R, ib_read_bw -R, ib_send_bw -R;
//                                     the server needs the client's -t, -s and -n
//
// The client keeps up to `depth` WRs outstanding (every WR signaled);
// -e sleeps on the completion channel between completions. --idle-qps n
// makes n more connected QPs (loopback pairs, the client's) that stay idle:
// what the engine's per-pass cost does with QPs that have no work.
// -q n (perftest's option): n RC connections (rdma_cm, one event channel),
// messages round-robin over them in bursts of -Q, one CQ; -d is the
// window over all of them; WRITE, READ and atomics. -t atomic: 8-byte
// FETCH_AND_ADD (or -A CMP_AND_SWAP) on the server buffer's first word,
// as many in flight as -d and the initiator depth allow (the requester
// holds the rest back, like READs). --stats adds the
// guest's busy CPU time per RDMA frame (tx + rx) over the run ("cpu:")
// and QP 0's transport counters.
// Columns as perftest prints them, MB = 2^20 bytes:
//   BW average = bytes / (last completion - first post)
//   BW peak    = best rate over a run of consecutive WRs, from the post of
//                its first to the poll that reported its last (perftest's
//                definition); runs of max(16, iters/8) WRs and their doublings
//   MsgRate    = iterations / elapsed time, in millions per second
#include "user.h"
#include "rdma_perf.h"
#include "rdma_util.h"

// Microseconds since the run's first post (mb_x100's resolution; 8 bytes
// per iteration, as PERF_MAX_ITERS counts).
static uint32_t *done_at;   // the poll that reported the i-th completion
static uint32_t *posted_at; // the post of the i-th WR
static struct perf_conn *conn;

static void fail(const char *m) { printf("rdma_bw: %s\n", m); exit(1); }

// Messages go round-robin over the QPs in bursts of cq_mod: message m to
// QP (m / cq_mod) % nqp, which signals the last WR of each burst and its
// own last WR (RC completes a QP's WRs in order, so a completion vouches
// for that QP's WRs before it). At most -d WRs are in flight over all QPs
// (as many bytes in flight as with one QP, and completions as often);
// cq_mod <= -d, so the window always holds a signaled WR. wr_id: QP << 32
// | the QP's message number. With one QP this is perftest's ib_write_bw.
static void run_client(struct perf_conn *c, const struct perf_opts *o, uint32_t size, uint64 *t_start, uint64 *t_end) {
  static uint32_t qposted[PERF_MAX_QPS], qdone[PERF_MAX_QPS], qtotal[PERF_MAX_QPS];
  struct ibv_sge sge = { (uint64_t)c->buf, size, c->mr->lkey };
  struct ibv_send_wr wr, *bad;
  struct ibv_wc wc[16];
  uint32_t nq = (uint32_t)c->nqp, mod = (uint32_t)o->cq_mod;
  memset(&wr, 0, sizeof wr);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  perf_wr_remote(c, o, &wr);
  memset(qposted, 0, sizeof qposted);
  memset(qdone, 0, sizeof qdone);
  memset(qtotal, 0, sizeof qtotal);
  for (uint32_t m = 0; m < o->iters; m++) qtotal[(m / mod) % nq]++;
  uint32_t posted = 0, completed = 0;
  *t_start = clock_ns();
  while (completed < o->iters) {
    while (posted < o->iters && posted - completed < (uint32_t)o->tx_depth) {
      uint32_t q = (posted / mod) % nq, k = qposted[q];
      wr.wr_id = (uint64_t)q << 32 | k;
      wr.send_flags = (k % mod == mod - 1 || k == qtotal[q] - 1) ? IBV_SEND_SIGNALED : 0;
      posted_at[posted] = (uint32_t)((clock_ns() - *t_start) / 1000);
      if (ibv_post_send(c->qps[q], &wr, &bad)) fail("post_send");
      qposted[q]++;
      posted++;
    }
    int n = perf_poll(c, wc, 16, 30000);       // the window is full or all is posted
    if (n < 0) fail("poll_cq");
    if (n == 0) perf_fail_stall(c, "completion", 30);
    uint32_t now = (uint32_t)((clock_ns() - *t_start) / 1000);
    for (int i = 0; i < n; i++) {
      if (wc[i].status != IBV_WC_SUCCESS) {
        char what[64];
        snprintf(what, sizeof what, "%s of %u bytes", perf_op_name(o->op), size);
        perf_fail_wc(conn, what, &wc[i]);
      }
      uint32_t q = (uint32_t)(wc[i].wr_id >> 32), k = (uint32_t)wc[i].wr_id;
      if (q >= nq) continue;
      for (; qdone[q] <= k; qdone[q]++) done_at[completed++] = now;
    }
  }
  *t_end = clock_ns();
}

// The server's receives: the run's first ones were posted before the sync
// that started it (perf_post_run_recvs); the rest go in lists as
// completions make room.
static void run_send_server(struct perf_conn *c, const struct perf_opts *o) {
  struct ibv_wc wc[16];
  uint32_t posted = (uint32_t)c->preposted, got = 0;
  c->preposted = 0;
  while (got < o->iters) {
    uint32_t room = posted - got < PERF_SEND_RECVS ? PERF_SEND_RECVS - (posted - got) : 0;
    uint32_t n = o->iters - posted < room ? o->iters - posted : room;
    if (n >= PERF_RECV_LIST / 2 || (n > 0 && posted + n == o->iters)) {   // a list's worth, or the last
      perf_post_recvs(c, n, c->buf_len);
      posted += n;
    }
    // No more than the run's receives: the client's perf_sync SEND may
    // already be in the CQ behind them (it lands in the receive left posted
    // ahead, perf_post_ahead).
    int k = perf_poll(c, wc, o->iters - got < 16 ? (int)(o->iters - got) : 16, 30000);
    if (k < 0) fail("poll_cq");
    if (k == 0) perf_fail_stall(c, "Send to receive", 30);
    for (int i = 0; i < k; i++) {
      if (wc[i].status != IBV_WC_SUCCESS) perf_fail_wc(c, "receive of a Send", &wc[i]);
      if (wc[i].opcode == IBV_WC_RECV) got++;
    }
  }
}

static uint64 mb_x100(uint64 bytes, uint64 ns) {   // MB/s * 100, MB = 2^20
  uint64 bytes_per_s = bytes * 1000000ULL / (ns / 1000 + 1);   // microsecond resolution
  return bytes_per_s * 100 / 1048576ULL;
}

// The best rate over runs of win, 2*win, 4*win ... WRs (O(iters log iters)).
// A run of k WRs starting at post j ends at the k-th completion after the
// first j: at least k WRs posted at or after posted_at[j] (with -q, WRs of
// other QPs may complete out of post order) had moved by then. Timing from
// the post, not from the poll before the run, keeps completions that a
// stall delayed and one poll then reported together (their data had moved
// long before) from looking like a burst at memory speed.
static uint64 peak_rate(uint32_t size, uint32_t iters, uint32_t win) {
  uint64 best = 0;
  for (uint32_t k = win; k <= iters; k = k * 2 > iters && k < iters ? iters : k * 2) {
    for (uint32_t j = 0; j + k <= iters; j++) {
      uint64 r = mb_x100((uint64)size * k, (uint64)(done_at[j + k - 1] - posted_at[j]) * 1000);
      if (r > best) best = r;
    }
  }
  return best;
}

int main(int argc, char **argv) {
  struct perf_opts o;
  struct perf_conn c;
  perf_parse(&o, argc, argv, "rdma_bw");
  perf_connect(&c, &o);
  conn = &c;
  done_at = malloc(sizeof(uint32_t) * o.iters);
  posted_at = malloc(sizeof(uint32_t) * o.iters);
  if (!done_at || !posted_at) fail("memory");
  int client = !c.is_server;
  if (client && o.idle_qps) perf_idle_qps(&c, o.idle_qps);
  if (client) {
    printf("---------------------------------------------------------------------------------------\n");
    printf("                    %s BW Test (xv6-rdma, RC, %s)\n", perf_op_name(o.op), o.loopback ? "loopback" : "RoCEv2");
    printf(" TX depth: %d   CQ Moderation: %d   SR: %s   Idle QPs: %d   QPs: %d\n", o.tx_depth, o.cq_mod,
           o.sr ? "on" : "off", o.idle_qps, c.nqp);
    struct ibv_qp_attr qa;
    struct ibv_qp_init_attr qia;
    if ((o.op == PERF_READ || perf_is_atomic(o.op)) && ibv_query_qp(c.qp, &qa, IBV_QP_MAX_QP_RD_ATOMIC, &qia) == 0)
      printf(" Outstand reads: %d   (-o; the device's maximum unless the peer offers fewer)\n", qa.max_rd_atomic);
    printf("---------------------------------------------------------------------------------------\n");
    printf(" #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n");
  }
  struct perf_cpu cpu0, cpu1;
  perf_cpu_sample(&cpu0);
  for (uint32_t size = o.all ? 2 : o.size; size <= o.size; size = o.all ? size * 2 : o.size + 1) {
    if (client) {
      uint64 t0, t1;
      run_client(&c, &o, size, &t0, &t1);
      // Runs of at least an eighth of the run (16 WRs or more): one WR's
      // rate is its latency, not the link's.
      uint32_t win = o.iters / 8 < 16 ? 16 : o.iters / 8;
      uint64 peak = o.iters < win ? 0 : peak_rate(size, o.iters, win);
      uint64 avg = mb_x100((uint64)size * o.iters, t1 - t0);
      if (peak < avg) peak = avg;              // the whole run is a window too
      uint64 mpps_x100000 = (uint64)o.iters * 100000ULL / ((t1 - t0) / 1000 + 1);   // Mpps * 1e5
      c.report = (struct perf_report){ size, o.iters, peak, avg, mpps_x100000 };   // -R sends it
      printf(" %-10u %-14u ", size, o.iters);
      perf_print_fixed(peak, 15);
      printf("    ");
      perf_print_fixed(avg, 18);
      printf("   %lu.%05lu\n", mpps_x100000 / 100000, mpps_x100000 % 100000);
    } else if (o.op == PERF_SEND) {
      run_send_server(&c, &o);
      if (o.all && size * 2 <= o.size && !o.perftest)
        perf_post_run_recvs(&c, &o, c.buf_len);   // the next size's, before its sync
    }
    perf_sync(&c);
  }
  perf_cpu_sample(&cpu1);
  if (client) printf("---------------------------------------------------------------------------------------\n");
  if (o.stats) perf_cpu_print(&cpu0, &cpu1);   // the run's guest CPU per RDMA frame
  if (o.stats) perf_dump_qp(&c);               // the server too: what its QP received
  perf_close(&c);
  exit(0);
}
