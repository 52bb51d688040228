// bw.c: rdma_bw's two roles (user/bin/rdma_bw.c, user/bin/rdma_perf.c), wire-
// compatible with them:
//   the client's REQ carries the test in its private data: five big-endian
//     words { "perf", op, size, iters, flags (bit 0 -a, bit 1 -e, bit 2 SR) }
//     then its MR (VA, R_Key, length) at byte 20; the server's REP carries
//     its MR. SR is never used here, whatever bit 2 says.
//   perf_sync: a 0-byte SEND each way, the client's first; one after the
//     connection and one after every size.
//   the end: the server SENDs BYE, not waited for, and waits for DREQ; the
//     client disconnects once BYE has arrived.
// The client keeps up to tx_depth WRs outstanding, one signaled every
// cq_mod, and prints perftest's columns as rdma_bw does (MB = 2^20 bytes).
#include "peer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PERF_MAGIC 0x70657266u
#define PD_LEN 36
#define SYNC_RX 0x5151
#define SYNC_TX 0x5152
#define BYE_RX 0x5153
#define BYE_TX 0x5154
#define WAIT_MS 60000

struct bw {
  struct pres r;
  struct pconn c;
  uint8_t *buf;
  uint32_t len;
  struct ibv_mr *mr;
  uint64_t raddr;
  uint32_t rkey;
  int server;
};

static const char *const op_names[] = { "RDMA_Write", "RDMA_Read", "Send" };

static void die(const char *m) {
  printf("perf: %s\n", m);
  fflush(stdout);
  exit(1);
}

static void put32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (24 - 8 * i)); }
static uint32_t get32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

static void pack_params(uint8_t *p, const struct bw_opts *o) {
  uint32_t v[5] = { PERF_MAGIC, (uint32_t)o->op, o->size, o->iters, (uint32_t)o->all };
  for (int i = 0; i < 5; i++) put32(p + 4 * i, v[i]);
}

static int unpack_params(const uint8_t *p, struct bw_opts *o) {
  if (get32(p) != PERF_MAGIC || get32(p + 4) > 2) return -1;
  o->op = (int)get32(p + 4);
  o->size = get32(p + 8);
  o->iters = get32(p + 12);
  o->all = (int)(get32(p + 16) & 1);
  return o->size >= 1 && o->size <= (8u << 20) && o->iters >= 1 ? 0 : -1;
}

static void resources(struct bw *b, struct peer_dev *d, uint32_t len, int srq) {
  b->len = len;
  b->buf = calloc(1, len);
  if (!b->buf || (srq ? pres_create_srq(&b->r, d, 512, 256) : pres_create(&b->r, d, 512, 256))) die("resources");
  b->mr = pres_reg(&b->r, b->buf, len);
  if (!b->mr) die("MR");
  b->c.qp = b->r.qp;
}

static void wait_ok(struct bw *b, struct ibv_wc *wc, const char *what) {
  if (pres_poll(&b->r, wc, 1, WAIT_MS) != 1) die(what);
  if (wc->status != IBV_WC_SUCCESS) {
    printf("perf: %s: wr_id 0x%llx %s (vendor_err 0x%x)\n", what, (unsigned long long)wc->wr_id,
           ibv_wc_status_str(wc->status), wc->vendor_err);
    die(what);
  }
}

// To the SRQ (--srq) or the QP.
static void post_recv_wr(struct bw *b, struct ibv_recv_wr *w) {
  struct ibv_recv_wr *bad;
  if (b->r.srq ? ibv_post_srq_recv(b->r.srq, w, &bad) : ibv_post_recv(b->r.qp, w, &bad)) die("post_recv");
}

static void post_recv(struct bw *b, uint64_t id) {
  struct ibv_sge s = { (uintptr_t)b->buf, b->len, b->mr->lkey };
  struct ibv_recv_wr w = { .wr_id = id, .sg_list = &s, .num_sge = 1 };
  post_recv_wr(b, &w);
}

static void post_empty_send(struct bw *b, uint64_t id) {
  struct ibv_send_wr w = { .wr_id = id, .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;
  if (ibv_post_send(b->r.qp, &w, &bad)) die("post_send");
}

// A SEND each way; the server answers once the client's has arrived.
// posted: the receive for the peer's SEND is posted already.
static void perf_sync_posted(struct bw *b, int posted) {
  struct ibv_wc wc;
  if (!posted) post_recv(b, SYNC_RX);
  int sent = !b->server;
  if (sent) post_empty_send(b, SYNC_TX);
  for (int got = 0; got < 2;) {
    wait_ok(b, &wc, "sync");
    if (wc.wr_id == SYNC_RX || wc.wr_id == SYNC_TX) got++;
    if (wc.wr_id == SYNC_RX && !sent) { post_empty_send(b, SYNC_TX); sent = 1; }
  }
}

static void perf_sync(struct bw *b) { perf_sync_posted(b, 0); }

static void perf_close(struct bw *b) {
  struct ibv_wc wc;
  if (b->server) {
    post_empty_send(b, BYE_TX);
    pcm_wait_disconnect(&b->c, 10000);
  } else {
    post_recv(b, BYE_RX);
    do wait_ok(b, &wc, "bye"); while (wc.opcode != IBV_WC_RECV);
    pcm_disconnect(&b->c);
  }
  pcm_close(&b->c);
  pres_destroy(&b->r);
}

// ---- server

static void send_server(struct bw *b, const struct bw_opts *o, uint32_t size) {
  struct ibv_sge s = { (uintptr_t)b->buf, size, b->mr->lkey };
  struct ibv_recv_wr w = { .sg_list = &s, .num_sge = 1 };
  struct ibv_wc wc[16];
  uint32_t posted = 0, got = 0;
  while (got < o->iters) {
    for (; posted < o->iters && posted - got < 200; posted++)
      post_recv_wr(b, &w);
    int n = pres_poll(&b->r, wc, 16, 30000);
    if (n <= 0) die(n < 0 ? "poll_cq" : "no receive for 30 s");
    for (int i = 0; i < n; i++) {
      if (wc[i].status != IBV_WC_SUCCESS) die("receive completion");
      if (wc[i].opcode == IBV_WC_RECV) got++;
    }
  }
}

int bw_server(struct peer_dev *d, struct bw_opts *o) {
  struct bw b;
  memset(&b, 0, sizeof b);
  b.server = 1;
  pcm_init(&b.c, d, NULL);
  int ls = pcm_listen(o->port);
  if (ls < 0) die("listen");
  printf("waiting for a client on port %d\n", o->port);
  fflush(stdout);
  if (pcm_get_request(ls, &b.c, 24 * 3600 * 1000)) die("no request");
  uint32_t peer_len;
  if (b.c.private_len < PD_LEN || unpack_params(b.c.private_data, o) < 0) {
    pcm_reject(&b.c, 1);
    die("bad parameters");
  }
  pcm_unpack_mr(b.c.private_data + 20, &b.raddr, &b.rkey, &peer_len);
  resources(&b, d, o->size, o->srq);
  uint8_t pd[16];
  pcm_pack_mr(pd, (uintptr_t)b.buf, b.mr->rkey, b.len);
  struct pcm_param p = { .private_data = pd, .private_len = 16, .mtu_limit = o->mtu_limit, .timeout = o->timeout };
  if (pcm_qp_init(&b.c)) die("QP to INIT");
  post_recv(&b, SYNC_RX);               // the client's first SEND follows RTU at once
  if (pcm_accept(&b.c, &p)) die("accept");
  pcm_unlisten(ls);
  perf_sync_posted(&b, 1);
  for (uint32_t size = o->all ? 2 : o->size; size <= o->size; size = o->all ? size * 2 : o->size + 1) {
    if (o->op == 2) send_server(&b, o, size);
    perf_sync(&b);
  }
  perf_close(&b);
  printf("xrpeer: bw-server done\n");
  return 0;
}

// ---- client

// Posts and reaps o->iters WRs of `size`; done_at[i] = when WR i completed.
static void run_client(struct bw *b, const struct bw_opts *o, uint32_t size, uint64_t *done_at,
                       uint64_t *t0, uint64_t *t1) {
  struct ibv_sge sge = { (uintptr_t)b->buf, size, b->mr->lkey };
  struct ibv_send_wr wr, *bad;
  struct ibv_wc wc[16];
  memset(&wr, 0, sizeof wr);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = o->op == 1 ? IBV_WR_RDMA_READ : o->op == 2 ? IBV_WR_SEND : IBV_WR_RDMA_WRITE;
  wr.wr.rdma.remote_addr = b->raddr;
  wr.wr.rdma.rkey = b->rkey;
  uint32_t posted = 0, completed = 0;
  *t0 = now_ns();
  while (completed < o->iters) {
    for (; posted < o->iters && posted - completed < (uint32_t)o->tx_depth; posted++) {
      wr.wr_id = posted;
      wr.send_flags = (posted % (uint32_t)o->cq_mod == (uint32_t)o->cq_mod - 1 || posted == o->iters - 1)
                      ? IBV_SEND_SIGNALED : 0;
      if (ibv_post_send(b->r.qp, &wr, &bad)) die("post_send");
    }
    int n = pres_poll(&b->r, wc, 16, 30000);
    if (n <= 0) die(n < 0 ? "poll_cq" : "no completion for 30 s");
    uint64_t now = now_ns();
    for (int i = 0; i < n; i++) {
      if (wc[i].status != IBV_WC_SUCCESS) {
        printf("rdma_bw: completion of WR %llu: %s (vendor_err 0x%x)\n", (unsigned long long)wc[i].wr_id,
               ibv_wc_status_str(wc[i].status), wc[i].vendor_err);
        exit(1);
      }
      while (completed <= wc[i].wr_id) done_at[completed++] = now;
    }
  }
  *t1 = now_ns();
}

static uint64_t mb_x100(uint64_t bytes, uint64_t ns) {          // MB/s * 100, MB = 2^20
  uint64_t bps = bytes * 1000000ull / (ns / 1000 + 1);
  return bps * 100 / 1048576ull;
}

static void print_row(const struct bw_opts *o, uint32_t size, const uint64_t *done_at, uint64_t t0, uint64_t t1) {
  uint64_t peak = 0;
  uint32_t win = o->iters / 8 < 16 ? 16 : o->iters / 8;
  for (uint32_t i = 0; i + win < o->iters; i++) {
    uint64_t dt = done_at[i + win] - done_at[i];
    uint64_t r = mb_x100((uint64_t)size * win, dt ? dt : 1);
    if (r > peak) peak = r;
  }
  uint64_t avg = mb_x100((uint64_t)size * o->iters, t1 - t0);
  if (peak < avg) peak = avg;
  uint64_t mpps = (uint64_t)o->iters * 100000ull / ((t1 - t0) / 1000 + 1);   // Mpps * 1e5
  char pk[32], av[32];
  snprintf(pk, sizeof pk, "%llu.%02llu", (unsigned long long)(peak / 100), (unsigned long long)(peak % 100));
  snprintf(av, sizeof av, "%llu.%02llu", (unsigned long long)(avg / 100), (unsigned long long)(avg % 100));
  printf(" %-10u %-14u %15s    %18s   %llu.%05llu\n", size, o->iters, pk, av,
         (unsigned long long)(mpps / 100000), (unsigned long long)(mpps % 100000));
  fflush(stdout);
}

static void print_header(const struct bw_opts *o) {
  const char *rule = "---------------------------------------------------------------------------------------";
  printf("%s\n                    %s BW Test (xrpeer, RC, RoCEv2)\n", rule, op_names[o->op]);
  printf(" TX depth: %d   CQ Moderation: %d   SR: off\n%s\n", o->tx_depth, o->cq_mod, rule);
  printf(" #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n");
}

int bw_client(struct peer_dev *d, struct bw_opts *o) {
  struct bw b;
  memset(&b, 0, sizeof b);
  pcm_init(&b.c, d, NULL);
  resources(&b, d, o->size, o->srq);
  uint8_t pd[PD_LEN];
  pack_params(pd, o);
  pcm_pack_mr(pd + 20, (uintptr_t)b.buf, b.mr->rkey, b.len);
  struct pcm_param p = { .private_data = pd, .private_len = PD_LEN, .mtu_limit = o->mtu_limit, .timeout = o->timeout };
  if (pcm_connect(&b.c, o->server_ip, o->port, &p)) die("connect");
  uint32_t len;
  pcm_unpack_mr(b.c.private_data, &b.raddr, &b.rkey, &len);
  uint64_t *done_at = malloc(sizeof *done_at * o->iters);
  if (!done_at) die("memory");
  perf_sync(&b);
  print_header(o);
  for (uint32_t size = o->all ? 2 : o->size; size <= o->size; size = o->all ? size * 2 : o->size + 1) {
    uint64_t t0, t1;
    run_client(&b, o, size, done_at, &t0, &t1);
    print_row(o, size, done_at, t0, t1);
    perf_sync(&b);
  }
  printf("---------------------------------------------------------------------------------------\n");
  perf_close(&b);
  free(done_at);
  return 0;
}
