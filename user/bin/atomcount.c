// atomcount.c: the exactly-once counter test of remote atomics. Owns one
// 8-byte counter (server) or the fetch-and-adds of one client process.
//
// The server registers the counter with IBV_ACCESS_REMOTE_ATOMIC, accepts
// connections over rdma_cm and gives each its address and rkey in the
// accept's private data; once -c connections (every client's -q summed)
// have come and gone it prints the counter. A client opens -q connections (an RC QP each) and makes -k
// increments of 1 on each, -d of them in flight per QP: FETCH_AND_ADD, or
// with -C a COMPARE_AND_SWAP of the value it last saw to that value + 1,
// tried again on a miss. Every successful increment returns the counter's
// value before it, so across all clients the values returned are exactly
// 0 .. total-1, each once, and the counter ends at total; an atomic that a
// lossy link made the requester send again and the responder executed
// twice would break both (the responder answers a duplicate from its saved
// results, IBTA 9.7.5.2.5). A client prints what the runner needs to check
// this across clients (tests/rdma/run_atomic.py): the count, the sum and
// the sum of squares (mod 2^64), the smallest and the largest value; it
// checks itself that each QP's values strictly increase (one QP's atomics
// execute in order).
//
// One source for xv6 (user/include gives libibverbs' and librdmacm's
// header names) and Linux's rdma-core (tests/rdma/atomic.mk builds it into
// the Linux guest's overlay).
//
//   atomcount -s [-p port] [-c connections]
//   atomcount [-p port] [-q qps] [-k incs] [-d depth] [-C] <server-ip>
// Server: "atomcount: listening on port P", at the end (xv6) "atomcount:
// duplicate requests D (answered from saved results)", "atomcount: counter
// V after N connections" and "atomcount: OK". Client: "atomcount: client qps Q
// incs N tries T sum S sumsq Q2 min A max B" and "atomcount: OK", or a line
// saying what failed and "atomcount: FAILED".
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <stdint.h>
#include <unistd.h>
#include <getopt.h>
#include <endian.h>
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#ifndef __linux__
#include "rdma_sys.h"          // xv6: rdma_qp_stats, for the duplicates line
#endif

#define ATOM_PORT 7472
#define MAX_QPS 64            // -q; xv6: RDMA_MAX_QP is far above
#define MAX_DEPTH 16          // -d; clamped to the device's max_qp_init_rd_atom
#define DEFAULT_INCS 1000
#define CM_TIMEOUT_MS 5000

// The accept's private data: where the counter is (network byte order).
struct atom_pdata {
  uint64_t addr;
  uint32_t rkey;
  uint32_t pad;
};

static struct {
  int server, port, conns, qps, depth, cas;
  uint32_t incs;
  const char *host;
} opt = { 0, ATOM_PORT, 1, 1, 4, 0, DEFAULT_INCS, NULL };

static struct rdma_event_channel *ech;
static struct ibv_pd *pd;
static struct ibv_cq *cq;

static void give_up(void) {
  printf("atomcount: FAILED\n");
  exit(1);
}

static void fail(const char *what, int err) {
  printf("atomcount: %s failed: %s\n", what, strerror(err));
  give_up();
}

// The next CM event on ech, which must be `want`; acked. Returns the event's
// id and copies its private data (if any) to pdata.
static struct rdma_cm_id *cm_expect(enum rdma_cm_event_type want, void *pdata, size_t len) {
  struct rdma_cm_event *ev;
  if (rdma_get_cm_event(ech, &ev)) fail("rdma_get_cm_event", errno);
  if (ev->event != want) {
    printf("atomcount: expected %s, got %s (status %d)\n", rdma_event_str(want),
           rdma_event_str(ev->event), ev->status);
    give_up();
  }
  struct rdma_cm_id *id = ev->id;
  if (pdata) {
    if (ev->param.conn.private_data_len < len) {
      printf("atomcount: the accept's private data has %d bytes, not %d\n",
             (int)ev->param.conn.private_data_len, (int)len);
      give_up();
    }
    memcpy(pdata, ev->param.conn.private_data, len);
  }
  rdma_ack_cm_event(ev);
  return id;
}

// An RC QP on id with room for `depth` atomics in flight.
static void make_qp(struct rdma_cm_id *id, int depth) {
  struct ibv_qp_init_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.send_cq = attr.recv_cq = cq;
  attr.qp_type = IBV_QPT_RC;
  attr.cap.max_send_wr = depth;
  attr.cap.max_recv_wr = 1;
  attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
  if (rdma_create_qp(id, pd, &attr)) fail("rdma_create_qp", errno);
}

// The device's limit on atomics in flight, or an end if it has no atomics.
static int atomic_depth(struct ibv_context *ctx, int responder) {
  struct ibv_device_attr da;
  if (ibv_query_device(ctx, &da)) fail("ibv_query_device", errno);
  if (da.atomic_cap == IBV_ATOMIC_NONE) {
    printf("atomcount: the device does not do atomics (atomic_cap NONE)\n");
    give_up();
  }
  int max = responder ? da.max_qp_rd_atom : da.max_qp_init_rd_atom;
  return max < MAX_DEPTH ? max : MAX_DEPTH;
}

// ---- the server ----

static uint64_t counter __attribute__((aligned(8)));
// The duplicate requests the ended QPs received (all atomics: nothing else
// reaches the server's QPs), each answered from the responder's saved
// results: xv6's per-QP counters (rdma_qp_stats, a project extension). On
// Linux the runner reads rxe's duplicate_request counter instead.
#ifndef __linux__
static uint64_t duplicates;

static void count_duplicates(struct ibv_qp *qp) {
  struct rdma_qp_stats st;
  if (qp && rdma_qp_stats((int)qp->handle, &st) == 0) duplicates += st.rx_dup;
}

static void print_duplicates(void) {
  printf("atomcount: duplicate requests %llu (answered from saved results)\n",
         (unsigned long long)duplicates);
}
#else
static void count_duplicates(struct ibv_qp *qp) { (void)qp; }
static void print_duplicates(void) {}
#endif

// The events after which an accepted connection is gone.
static int conn_ended(enum rdma_cm_event_type t) {
  return t == RDMA_CM_EVENT_DISCONNECTED || t == RDMA_CM_EVENT_CONNECT_ERROR ||
         t == RDMA_CM_EVENT_UNREACHABLE || t == RDMA_CM_EVENT_REJECTED;
}

static void serve(void) {
  struct rdma_cm_id *listen_id;
  struct sockaddr_in sin;
  struct ibv_mr *mr = NULL;
  int max_rd = 0, ended = 0;
  memset(&sin, 0, sizeof sin);
  sin.sin_family = AF_INET;
  sin.sin_port = htons(opt.port);
  if (rdma_create_id(ech, &listen_id, NULL, RDMA_PS_TCP)) fail("rdma_create_id", errno);
  if (rdma_bind_addr(listen_id, (struct sockaddr *)&sin)) fail("rdma_bind_addr", errno);
  if (rdma_listen(listen_id, opt.conns)) fail("rdma_listen", errno);
  printf("atomcount: listening on port %d\n", opt.port);
  fflush(stdout);
  while (ended < opt.conns) {
    struct rdma_cm_event *ev;
    if (rdma_get_cm_event(ech, &ev)) fail("rdma_get_cm_event", errno);
    struct rdma_cm_id *id = ev->id;
    enum rdma_cm_event_type type = ev->event;
    int status = ev->status;
    rdma_ack_cm_event(ev);
    if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
      if (!pd) {   // the first connection's device holds the counter
        pd = ibv_alloc_pd(id->verbs);
        cq = pd ? ibv_create_cq(id->verbs, MAX_QPS, NULL, NULL, 0) : NULL;
        if (!cq) fail("ibv_alloc_pd / ibv_create_cq", errno);
        mr = ibv_reg_mr(pd, &counter, sizeof counter, IBV_ACCESS_LOCAL_WRITE |
                        IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
        if (!mr) fail("ibv_reg_mr of the counter", errno);
        max_rd = atomic_depth(id->verbs, 1);
      }
      make_qp(id, 1);
      struct atom_pdata pdata = { htobe64((uint64_t)(uintptr_t)&counter), htonl(mr->rkey), 0 };
      struct rdma_conn_param param;
      memset(&param, 0, sizeof param);
      param.responder_resources = max_rd;
      param.initiator_depth = 1;
      param.rnr_retry_count = 7;
      param.private_data = &pdata;
      param.private_data_len = sizeof pdata;
      if (rdma_accept(id, &param)) fail("rdma_accept", errno);
      id->context = id;   // accepted: counts when it ends
    } else if (type == RDMA_CM_EVENT_ESTABLISHED || type == RDMA_CM_EVENT_TIMEWAIT_EXIT) {
      continue;
    } else if (id->context && conn_ended(type)) {
      if (type != RDMA_CM_EVENT_DISCONNECTED)
        printf("atomcount: a connection ended with %s (status %d)\n", rdma_event_str(type), status);
      count_duplicates(id->qp);
      rdma_destroy_qp(id);
      rdma_destroy_id(id);
      ended++;
    } else {
      printf("atomcount: %s (status %d) ignored\n", rdma_event_str(type), status);
    }
  }
  print_duplicates();
  printf("atomcount: counter %llu after %d connections\natomcount: OK\n",
         (unsigned long long)counter, ended);
  ibv_dereg_mr(mr);
  ibv_destroy_cq(cq);
  ibv_dealloc_pd(pd);
  rdma_destroy_id(listen_id);
}

// ---- a client ----

struct conn {
  struct rdma_cm_id *id;
  uint64_t raddr;
  uint32_t rkey;
  uint32_t posted, done;        // increments posted / completed
  uint64_t guess;               // -C: the value the next CAS expects
  uint64_t last;                // the last value returned + 1 (0: none yet)
  uint64_t want[MAX_DEPTH];     // -C: each slot's compare value
};

static struct conn conns[MAX_QPS];
static uint64_t results[MAX_QPS][MAX_DEPTH];
static struct ibv_mr *res_mr;

// What the runner checks across clients (mod 2^64 sums).
static struct { uint64_t incs, tries, sum, sumsq, min, max; } tally = { 0, 0, 0, 0, UINT64_MAX, 0 };

// Resolves, connects and takes the counter's address from the accept.
static void connect_one(int q, struct sockaddr *dst) {
  struct conn *c = &conns[q];
  if (rdma_create_id(ech, &c->id, c, RDMA_PS_TCP)) fail("rdma_create_id", errno);
  if (rdma_resolve_addr(c->id, NULL, dst, CM_TIMEOUT_MS)) fail("rdma_resolve_addr", errno);
  cm_expect(RDMA_CM_EVENT_ADDR_RESOLVED, NULL, 0);
  if (rdma_resolve_route(c->id, CM_TIMEOUT_MS)) fail("rdma_resolve_route", errno);
  cm_expect(RDMA_CM_EVENT_ROUTE_RESOLVED, NULL, 0);
  if (!pd) {
    pd = ibv_alloc_pd(c->id->verbs);
    cq = pd ? ibv_create_cq(c->id->verbs, MAX_QPS * MAX_DEPTH, NULL, NULL, 0) : NULL;
    if (!cq) fail("ibv_alloc_pd / ibv_create_cq", errno);
    res_mr = ibv_reg_mr(pd, results, sizeof results, IBV_ACCESS_LOCAL_WRITE);
    if (!res_mr) fail("ibv_reg_mr of the results", errno);
    int max = atomic_depth(c->id->verbs, 0);
    if (opt.depth > max) opt.depth = max;
  }
  make_qp(c->id, opt.depth);
  struct rdma_conn_param param;
  memset(&param, 0, sizeof param);
  param.initiator_depth = opt.depth;
  param.retry_count = 7;
  param.rnr_retry_count = 7;
  if (rdma_connect(c->id, &param)) fail("rdma_connect", errno);
  struct atom_pdata pdata;
  cm_expect(RDMA_CM_EVENT_ESTABLISHED, &pdata, sizeof pdata);
  c->raddr = be64toh(pdata.addr);
  c->rkey = ntohl(pdata.rkey);
}

// Posts one atomic from slot `slot` of QP q: FAA 1, or -C: CAS guess -> guess + 1.
static void post_inc(int q, int slot) {
  struct conn *c = &conns[q];
  struct ibv_sge sge = { (uint64_t)(uintptr_t)&results[q][slot], sizeof(uint64_t), res_mr->lkey };
  struct ibv_send_wr wr, *bad;
  memset(&wr, 0, sizeof wr);
  wr.wr_id = (uint64_t)q * MAX_DEPTH + slot;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.atomic.remote_addr = c->raddr;
  wr.wr.atomic.rkey = c->rkey;
  if (opt.cas) {
    wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
    wr.wr.atomic.compare_add = c->want[slot] = c->guess;
    wr.wr.atomic.swap = c->guess + 1;
  } else {
    wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
    wr.wr.atomic.compare_add = 1;
  }
  int err = ibv_post_send(c->id->qp, &wr, &bad);
  if (err) fail("ibv_post_send of an atomic", err);
  tally.tries++;
}

// One completed atomic: an increment (its value counts) or, -C, a miss
// (the CAS saw another value; the next try expects that one).
static void complete(const struct ibv_wc *wc) {
  int q = (int)(wc->wr_id / MAX_DEPTH), slot = (int)(wc->wr_id % MAX_DEPTH);
  struct conn *c = &conns[q];
  if (wc->status != IBV_WC_SUCCESS) {
    printf("atomcount: %s on qp %d (increment %u) completed with %s\n",
           opt.cas ? "CMP_AND_SWP" : "FETCH_AND_ADD", q, c->done, ibv_wc_status_str(wc->status));
    give_up();
  }
  uint64_t v = results[q][slot];
  if (opt.cas && v != c->want[slot]) {
    if (v > c->guess) c->guess = v;
    post_inc(q, slot);
    return;
  }
  if (v + 1 <= c->last) {
    printf("atomcount: qp %d returned %llu after %llu: one QP's atomics execute in order\n",
           q, (unsigned long long)v, (unsigned long long)(c->last - 1));
    give_up();
  }
  c->last = v + 1;
  if (opt.cas && v + 1 > c->guess) c->guess = v + 1;
  c->done++;
  tally.incs++;
  tally.sum += v;
  tally.sumsq += v * v;
  if (v < tally.min) tally.min = v;
  if (v > tally.max) tally.max = v;
  if (c->posted < opt.incs) {
    c->posted++;
    post_inc(q, slot);
  }
}

// Ends every connection: the DREQs first, then a DISCONNECTED for each.
// Other events may come between them (Linux: TIMEWAIT_EXIT of an id whose
// connection has ended) and are passed over.
static void disconnect_all(void) {
  for (int q = 0; q < opt.qps; q++)
    if (rdma_disconnect(conns[q].id)) fail("rdma_disconnect", errno);
  for (int left = opt.qps; left > 0;) {
    struct rdma_cm_event *ev;
    if (rdma_get_cm_event(ech, &ev)) fail("rdma_get_cm_event", errno);
    left -= ev->event == RDMA_CM_EVENT_DISCONNECTED;
    rdma_ack_cm_event(ev);
  }
}

static void run_client(void) {
  struct rdma_addrinfo hints, *res;
  char port[8];
  memset(&hints, 0, sizeof hints);
  hints.ai_port_space = RDMA_PS_TCP;
  snprintf(port, sizeof port, "%d", opt.port);
  if (rdma_getaddrinfo(opt.host, port, &hints, &res)) fail("rdma_getaddrinfo", errno);
  for (int q = 0; q < opt.qps; q++)
    connect_one(q, res->ai_dst_addr);
  rdma_freeaddrinfo(res);
  uint64_t total = (uint64_t)opt.qps * opt.incs;
  for (int q = 0; q < opt.qps; q++)
    for (int s = 0; s < opt.depth && conns[q].posted < opt.incs; s++) {
      conns[q].posted++;
      post_inc(q, s);
    }
  struct ibv_wc wc[MAX_DEPTH];
  while (tally.incs < total) {
    int n = ibv_poll_cq(cq, MAX_DEPTH, wc);
    if (n < 0) fail("ibv_poll_cq", errno);
    for (int i = 0; i < n; i++)
      complete(&wc[i]);
  }
  printf("atomcount: client qps %d incs %llu tries %llu sum %llu sumsq %llu min %llu max %llu\n",
         opt.qps, (unsigned long long)tally.incs, (unsigned long long)tally.tries,
         (unsigned long long)tally.sum, (unsigned long long)tally.sumsq,
         (unsigned long long)tally.min, (unsigned long long)tally.max);
  disconnect_all();
  for (int q = 0; q < opt.qps; q++) {
    rdma_destroy_qp(conns[q].id);
    rdma_destroy_id(conns[q].id);
  }
  ibv_dereg_mr(res_mr);
  ibv_destroy_cq(cq);
  ibv_dealloc_pd(pd);
  printf("atomcount: OK\n");
}

static void usage(void) {
  printf("usage: atomcount -s [-p port] [-c connections]\n"
         "       atomcount [-p port] [-q qps (1..%d)] [-k increments per qp] [-d depth (1..%d)]"
         " [-C] <server-ip>\n", MAX_QPS, MAX_DEPTH);
  exit(2);
}

int main(int argc, char **argv) {
  int c;
  while ((c = getopt(argc, argv, "sp:c:q:k:d:C")) != -1) {
    switch (c) {
    case 's': opt.server = 1; break;
    case 'p': opt.port = atoi(optarg); break;
    case 'c': opt.conns = atoi(optarg); break;
    case 'q': opt.qps = atoi(optarg); break;
    case 'k': opt.incs = (uint32_t)atoi(optarg); break;
    case 'd': opt.depth = atoi(optarg); break;
    case 'C': opt.cas = 1; break;
    default: usage();
    }
  }
  if (opt.server == (optind < argc) || opt.conns < 1 || opt.qps < 1 || opt.qps > MAX_QPS ||
      opt.depth < 1 || opt.depth > MAX_DEPTH || opt.incs < 1 || opt.port < 1 || opt.port > 65535)
    usage();
  opt.host = opt.server ? NULL : argv[optind];
  ech = rdma_create_event_channel();
  if (!ech) fail("rdma_create_event_channel", errno);
  if (opt.server)
    serve();
  else
    run_client();
  rdma_destroy_event_channel(ech);
  return 0;
}
