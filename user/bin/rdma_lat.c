// rdma_lat: latency test in the manner of perftest's ib_write_lat /
// ib_read_lat / ib_send_lat / ib_atomic_lat.
//
//   rdma_lat [-t write|read|send|atomic] [-A CMP_AND_SWAP|FETCH_AND_ADD] [-s size] [-n iters] [-a] [-e] [--sr] (-L | <server ip>)
//   rdma_lat                      server side
//   rdma_lat -R -t write|send [-s size] [-n iters] [<server ip>]
//                                 perftest's rdma_cm exchange (perftest_cm.c): against
//                                 Linux's ib_write_lat -R / ib_send_lat -R, same options
//                                 on both sides
//
// write: ping-pong; each side WRITEs `size` bytes into the other's buffer
//        and polls its own buffer's last byte for the iteration tag.
// send:  ping-pong with SEND / RECV.
// read:  the client READs `size` bytes; the server only waits.
// atomic: the client's FETCH_AND_ADD (-A CMP_AND_SWAP) of the server
//        buffer's first 8 bytes, one at a time; the server only waits.
// write and send report half the round trip, read and atomic the whole operation, as
// perftest does. -e (perftest's --events): sleep instead of polling, on the
// completion channel for completions and in ibvx_wait_write for the WRITE
// that answers. The RTO floor is PERF_LAT_MIN_RTO_US (perftest's default
// QP timeout) unless --min-rto or --fixed-rto says otherwise. Columns
// (usec): t_min t_max t_typical (median) t_avg t_stdev, 99% and 99.9%
// percentiles.
#include "user.h"
#include "rdma_perf.h"
#include "rdma_util.h"

static void fail(const char *m) { printf("rdma_lat: %s\n", m); exit(1); }
static struct perf_conn *conn;
static const char *op_now = "?";      // what the failing completion was for
static void fail_wc(const struct ibv_wc *wc) { perf_fail_wc(conn, op_now, wc); }

// A WRITE of size bytes from src (in c's buffer) to the peer's buffer.
static void post_write(struct perf_conn *c, uint8_t *src, uint32_t size, int signaled) {
  struct ibv_sge sge = { (uint64_t)src, size, c->mr->lkey };
  struct ibv_send_wr wr, *bad;
  memset(&wr, 0, sizeof wr);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = signaled ? IBV_SEND_SIGNALED : 0;
  wr.wr.rdma.remote_addr = c->raddr;
  wr.wr.rdma.rkey = c->rkey;
  if (ibv_post_send(c->qp, &wr, &bad)) fail("post write");
}

static void reap(struct perf_conn *c, int want_opcode) {
  struct ibv_wc wc;
  for (;;) {
    int n = perf_poll(c, &wc, 1, 30000);
    if (n < 0) fail("poll_cq");
    if (n == 0) perf_fail_stall(c, "completion", 30);
    if (wc.status != IBV_WC_SUCCESS) fail_wc(&wc);
    if ((int)wc.opcode == want_opcode) return;
    if (wc.opcode == IBV_WC_RECV) c->early_recvs++;   // the peer's next sync, for perf_sync
  }
}

// The tag of round i in the last byte: never 0, never the previous one.
static uint8_t tag(uint32_t i) { return (uint8_t)(i % 255 + 1); }

// The WRITEs are unsignaled, so the CQ holds only errors: a failed WRITE
// moves the QP to ERR and the answer never comes.
static void check_cq(struct perf_conn *c) {
  struct ibv_wc wc;
  int n = ibv_poll_cq(c->cq, 1, &wc);
  if (n < 0) fail("poll_cq");
  if (n > 0 && wc.status != IBV_WC_SUCCESS) fail_wc(&wc);
  if (n > 0 && wc.opcode == IBV_WC_RECV) c->early_recvs++;
}

// Polls the buffer's last byte, or with -e sleeps until a WRITE changes it.
// The CQ is looked at every 10 ms of waiting, not on every pass: each
// poll is a system call, and the loop used to make one before every sleep.
static void wait_tag(struct perf_conn *c, uint32_t size, uint8_t t, int events) {
  volatile uint8_t *last = c->buf + size - 1;
  uint64 now = clock_ns(), end = now + 30000000000ULL, next_check = now + 10000000;
  uint8_t seen;
  while ((seen = *last) != t) {
    now = clock_ns();
    if (now > end) perf_fail_stall(c, "answering RDMA WRITE", 30);
    if (now >= next_check) { check_cq(c); next_check = now + 10000000; }
    if (events && ibvx_wait_write(last, seen, 10) == EINVAL) fail("wait_write");
  }
}

static void post_send(struct perf_conn *c, uint32_t size) {
  struct ibv_sge sge = { (uint64_t)c->buf, size, c->mr->lkey };
  struct ibv_send_wr wr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
                            .send_flags = IBV_SEND_SIGNALED }, *bad;
  if (ibv_post_send(c->qp, &wr, &bad)) fail("post send");
}

// -R (perftest's ib_write_lat -R, as captured): the server WRITEs first;
// each side answers the other's WRITE with its own, the round's number
// ((i + 1) mod 256) in the last byte, always to the start of the peer's
// buffer, sent from this side's send area (perf_send_area) so that its
// own buffer changes only by the peer's WRITE. The client's last WRITE is
// signaled and reaped, which settles the unsignaled ones before it; the
// server's are all unsignaled (wait_tag's CQ checks would take a
// completion). The client's sample is the time between two of the
// server's WRITEs (a round trip) halved: iters - 1 of them. Returns their
// number.
static int write_rounds_perftest(struct perf_conn *c, const struct perf_opts *o, uint32_t size, uint64 *samples) {
  int client = !c->is_server, n = 0;
  uint8_t *src = perf_send_area(c, size);
  uint64 prev = 0;
  for (uint32_t i = 0; i < o->iters; i++) {
    uint8_t t = (uint8_t)(i + 1);
    if (client) {
      wait_tag(c, size, t, o->events);
      uint64 now = clock_ns();
      if (i > 0) samples[n++] = (now - prev) / 2;
      prev = now;
    }
    src[size - 1] = t;
    post_write(c, src, size, client && i + 1 == o->iters);
    if (!client) wait_tag(c, size, t, o->events);
  }
  if (client) reap(c, IBV_WC_RDMA_WRITE);
  return n;
}

// One size's run: the number of samples (iters, or what -R's WRITE gives).
static int one_size(struct perf_conn *c, const struct perf_opts *o, uint32_t size, uint64 *samples) {
  int client = !c->is_server;
  if (o->perftest && o->op == PERF_WRITE) return write_rounds_perftest(c, o, size, samples);
  // -R: the buffers are clear from the start, and the peer may already be
  // writing (perftest has no sync of ours).
  if (!o->perftest) memset(c->buf, 0, size);
  perf_sync(c);                   // both buffers clear
  for (uint32_t i = 0; i < o->iters; i++) {
    uint64 t0 = clock_ns();
    if (o->op == PERF_READ || perf_is_atomic(o->op)) {
      if (!client) continue;
      struct ibv_sge sge = { (uint64_t)c->buf, size, c->mr->lkey };
      struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .send_flags = IBV_SEND_SIGNALED }, *bad;
      perf_wr_remote(c, o, &wr);
      if (ibv_post_send(c->qp, &wr, &bad)) fail(o->op == PERF_READ ? "post read" : "post atomic");
      reap(c, o->op == PERF_READ ? IBV_WC_RDMA_READ : o->op == PERF_FAA ? IBV_WC_FETCH_ADD : IBV_WC_COMP_SWAP);
      samples[i] = clock_ns() - t0;
    } else if (o->op == PERF_WRITE) {
      // The client sends tag(i), the server answers tag(i) ^ 0x80, so
      // neither side mistakes its own outgoing byte for the answer.
      if (client) {
        c->buf[size - 1] = tag(i);
        post_write(c, c->buf, size, 0);
        wait_tag(c, size, tag(i) ^ 0x80, o->events);
        samples[i] = (clock_ns() - t0) / 2;
      } else {
        wait_tag(c, size, tag(i), o->events);
        c->buf[size - 1] = tag(i) ^ 0x80;
        post_write(c, c->buf, size, 0);
      }
    } else {
      // Each side keeps its receives posted ahead (perf_post_ahead); the
      // one a message consumes is replaced before this side sends again,
      // so no SEND meets an empty receive queue (no RNR NAK, no RNR wait).
      if (client) {
        post_send(c, size);
        reap(c, IBV_WC_RECV);
        samples[i] = (clock_ns() - t0) / 2;
        perf_post_ahead(c);
      } else {
        reap(c, IBV_WC_RECV);
        perf_post_ahead(c);
        post_send(c, size);
      }
    }
  }
  // Unsignaled WRITEs still need their completions drained from the SQ's
  // point of view: one signaled WRITE of 0 bytes settles everything before it.
  if (o->op == PERF_WRITE) {
    struct ibv_send_wr wr = { .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED }, *bad;
    wr.wr.rdma.remote_addr = c->raddr;
    wr.wr.rdma.rkey = c->rkey;
    if (ibv_post_send(c->qp, &wr, &bad)) fail("post final write");
    reap(c, IBV_WC_RDMA_WRITE);
  }
  perf_sync(c);
  return (int)o->iters;
}

static void print_us(uint64 ns, int width) { perf_print_fixed(ns / 10, width); }

int main(int argc, char **argv) {
  struct perf_opts o;
  struct perf_conn c;
  perf_parse(&o, argc, argv, "rdma_lat");
  if (o.min_rto_us == 0) o.min_rto_us = PERF_LAT_MIN_RTO_US;
  perf_connect(&c, &o);
  conn = &c;
  op_now = perf_op_name(o.op);
  uint64 *samples = malloc(sizeof(uint64) * o.iters);
  if (!samples) fail("memory");
  int client = !c.is_server;
  if (client) {
    printf("---------------------------------------------------------------------------------------\n");
    printf("                    %s Latency Test (xv6-rdma, RC, %s)\n", perf_op_name(o.op), o.loopback ? "loopback" : "RoCEv2");
    printf("---------------------------------------------------------------------------------------\n");
    printf(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99%% percentile[usec]   99.9%% percentile[usec]\n");
  }
  for (uint32_t size = o.all ? 2 : o.size; size <= o.size; size = o.all ? size * 2 : o.size + 1) {
    int n = one_size(&c, &o, size, samples);
    if (!client) continue;
    struct perf_stats s;
    perf_stats(samples, n, &s);
    printf(" %-6u %-11u", size, o.iters);
    print_us(s.min, 14); print_us(s.max, 15); print_us(s.median, 17); print_us(s.avg, 15);
    print_us(s.stdev, 17); print_us(s.p99, 23); print_us(s.p999, 25);
    printf("\n");
  }
  if (client) printf("---------------------------------------------------------------------------------------\n");
  if (o.stats) perf_dump_qp(&c);
  perf_close(&c);
  exit(0);
}
