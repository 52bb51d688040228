// srqtest: shared receive queues through the verbs, in one guest's
// loopback (proto-spec srq.md).
//
// srq_64_connections: a server with 64 RC QPs on one SRQ, holding fewer
// receives than the messages to come and reposting each as it completes,
// serves two client processes of 32 connections each; every message
// arrives once, in order per connection, on the QP its connection names.
// The other cases: the limit event (once, then disarmed), RNR while the
// SRQ is empty and recovery once a receive is posted, a QP moved to ERR
// (LAST_WQE_REACHED, the SRQ's receives stay for the other QPs, posting
// to the QP itself refused), destroy refused while a QP uses the SRQ, the
// device's SRQ capacities and the granted sizes, a process's exit
// releasing its SRQs, a UD QP on an SRQ.
// Usage: srqtest [-q] [-l] [-x name]... [name...]   (user/tests/testrun.h).
#include "user.h"
#include "ibverbs.h"
#include "rdma_sys.h"
#include "rdma_util.h"
#include "testrun.h"

#define NCLIENT 2                     // client processes
#define CONNS 64                      // connections to the server, all on one SRQ
#define PER_CLIENT (CONNS / NCLIENT)
#define MSGS 4                        // messages per connection
#define SRQ_POSTED (CONNS * MSGS / 2) // receives the server keeps posted: half the messages
#define SLOT 64                       // bytes per receive
#define MAGIC 0x53525131u             // "SRQ1"
#define WAIT_MS 60000                 // the longest a case waits for one completion
#define ALL_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

static struct ibv_context *ctx;
static enum ibv_mtu mtu;

// What one message carries: which connection and which of its messages.
struct msg { uint32_t magic, client, conn, seq; };

// One end's objects: a PD, a CQ for both queues, a buffer of nslots
// slots, and (for a server) the SRQ its QPs use.
struct end {
  struct ibv_pd *pd;
  struct ibv_cq *cq;
  struct ibv_mr *mr;
  uint8_t *buf;
  struct ibv_srq *srq;
};

static void end_open(struct end *e, int cqe, int nslots, int srq_wr) {
  memset(e, 0, sizeof *e);
  e->pd = ibv_alloc_pd(ctx);
  e->cq = ibv_create_cq(ctx, cqe, NULL, NULL, 0);
  e->buf = malloc((size_t)nslots * SLOT);
  TR_CHECK(e->pd && e->cq && e->buf, "pd %p cq %p buf %p", e->pd, e->cq, e->buf);
  e->mr = ibv_reg_mr(e->pd, e->buf, (size_t)nslots * SLOT, IBV_ACCESS_LOCAL_WRITE);
  TR_CHECK(e->mr != NULL, "reg_mr: errno %d", errno);
  if (srq_wr) {
    struct ibv_srq_init_attr sa = { .attr = { .max_wr = (uint32_t)srq_wr, .max_sge = 1 } };
    e->srq = ibv_create_srq(e->pd, &sa);
    TR_CHECK(e->srq != NULL, "create_srq(%d): errno %d", srq_wr, errno);
  }
}

// A QP of e's of type t (on e's SRQ if it has one).
static struct ibv_qp *qp_open_type(struct end *e, int wr, enum ibv_qp_type t) {
  struct ibv_qp_init_attr ia;
  memset(&ia, 0, sizeof ia);
  ia.send_cq = ia.recv_cq = e->cq;
  ia.srq = e->srq;
  ia.cap.max_send_wr = ia.cap.max_recv_wr = (uint32_t)wr;
  ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
  ia.qp_type = t;
  ia.sq_sig_all = 1;
  struct ibv_qp *qp = ibv_create_qp(e->pd, &ia);
  TR_CHECK(qp != NULL, "create_qp: errno %d", errno);
  TR_CHECK(!e->srq || (ia.cap.max_recv_wr == 0 && qp->srq == e->srq), "max_recv_wr %u on an SRQ",
           ia.cap.max_recv_wr);
  return qp;
}

static struct ibv_qp *qp_open(struct end *e, int wr) {
  return qp_open_type(e, wr, IBV_QPT_RC);
}

static void connect_to(struct ibv_qp *qp, uint32_t peer_qpn) {
  struct rdma_peer p = { .qpn = peer_qpn, .psn = 0, .ipv4 = rdmau_local_ipv4(ctx) };
  int rc = rdmau_connect(qp, &p, 0, mtu, ALL_ACCESS, 7, 14);
  TR_CHECK(rc == 0, "connect QPN %u to %u: %d", qp->qp_num, peer_qpn, rc);
}

// Receive slot n of e's buffer to e's SRQ (wr_id n).
static void srq_post(struct end *e, uint32_t n) {
  struct ibv_sge sge = { (uint64_t)(e->buf + n * SLOT), SLOT, e->mr->lkey };
  struct ibv_recv_wr wr = { .wr_id = n, .sg_list = &sge, .num_sge = 1 }, *bad;
  int rc = ibv_post_srq_recv(e->srq, &wr, &bad);
  TR_CHECK(rc == 0, "post_srq_recv slot %u: %d", n, rc);
}

// A SEND of m from slot n of e's buffer on qp.
static void send_msg(struct end *e, struct ibv_qp *qp, uint32_t n, const struct msg *m) {
  memcpy(e->buf + n * SLOT, m, sizeof *m);
  struct ibv_sge sge = { (uint64_t)(e->buf + n * SLOT), sizeof *m, e->mr->lkey };
  struct ibv_send_wr wr, *bad;
  memset(&wr, 0, sizeof wr);
  wr.wr_id = n;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  int rc = ibv_post_send(qp, &wr, &bad);
  TR_CHECK(rc == 0, "post_send on QPN %u: %d", qp->qp_num, rc);
}

// The next completion of cq, which must be a success of opcode op.
static struct ibv_wc next_ok(struct ibv_cq *cq, enum ibv_wc_opcode op) {
  struct ibv_wc wc;
  int n = rdmau_wait(cq, &wc, WAIT_MS);
  TR_CHECK(n == 1, "no completion within %d ms (%d)", WAIT_MS, n);
  TR_CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == op, "completion wr_id %llu: %s, opcode %d",
           (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status), wc.opcode);
  return wc;
}

static void write_all(int fd, const void *p, int n) {
  TR_CHECK(write(fd, p, n) == n, "pipe write");
}

static void read_all(int fd, void *p, int n) {
  for (int got = 0, k; got < n; got += k) {
    k = read(fd, (char *)p + got, n - got);
    TR_CHECK(k > 0, "pipe read: the other side is gone");
  }
}

// ---- srq_64_connections ----

// Client process c: PER_CLIENT connections to the server's QPs, MSGS
// messages each, every send completed successfully.
static void client(int c, int to_server, int from_server) {
  struct end e;
  struct ibv_qp *qp[PER_CLIENT];
  uint32_t qpn[PER_CLIENT], srv[PER_CLIENT];
  end_open(&e, PER_CLIENT * MSGS + 1, PER_CLIENT * MSGS, 0);
  for (int j = 0; j < PER_CLIENT; j++) {
    qp[j] = qp_open(&e, MSGS);
    qpn[j] = qp[j]->qp_num;
  }
  write_all(to_server, qpn, sizeof qpn);
  read_all(from_server, srv, sizeof srv);
  for (int j = 0; j < PER_CLIENT; j++) connect_to(qp[j], srv[j]);
  for (int k = 0; k < MSGS; k++)
    for (int j = 0; j < PER_CLIENT; j++) {
      struct msg m = { MAGIC, (uint32_t)c, (uint32_t)j, (uint32_t)k };
      send_msg(&e, qp[j], (uint32_t)(k * PER_CLIENT + j), &m);
    }
  for (int i = 0; i < PER_CLIENT * MSGS; i++) next_ok(e.cq, IBV_WC_SEND);
  exit(0);
}

// [SRQ-TAKE-1] [SRQ-VERB-1] 64 connections on one SRQ holding half the messages
static void t_srq_64_connections(void) {
  static struct ibv_qp *qp[CONNS];
  static uint8_t next_seq[CONNS];
  int to_srv[NCLIENT][2], to_cli[NCLIENT][2], pid[NCLIENT];
  struct end s;
  end_open(&s, CONNS * MSGS + CONNS, SRQ_POSTED, SRQ_POSTED);
  for (int i = 0; i < CONNS; i++) qp[i] = qp_open(&s, 1);
  for (int n = 0; n < SRQ_POSTED; n++) srq_post(&s, (uint32_t)n);
  for (int c = 0; c < NCLIENT; c++) {
    TR_CHECK(pipe(to_srv[c]) == 0 && pipe(to_cli[c]) == 0, "pipe");
    pid[c] = fork();
    TR_CHECK(pid[c] >= 0, "fork");
    if (pid[c] == 0) client(c, to_srv[c][1], to_cli[c][0]);
  }
  for (int c = 0; c < NCLIENT; c++) {
    uint32_t cli[PER_CLIENT], mine[PER_CLIENT];
    read_all(to_srv[c][0], cli, sizeof cli);
    for (int j = 0; j < PER_CLIENT; j++) {
      connect_to(qp[c * PER_CLIENT + j], cli[j]);
      mine[j] = qp[c * PER_CLIENT + j]->qp_num;
    }
    write_all(to_cli[c][1], mine, sizeof mine);
  }
  for (int got = 0; got < CONNS * MSGS; got++) {
    struct ibv_wc wc = next_ok(s.cq, IBV_WC_RECV);
    struct msg m;
    memcpy(&m, s.buf + wc.wr_id * SLOT, sizeof m);
    TR_CHECK(wc.byte_len == sizeof m && m.magic == MAGIC && m.client < NCLIENT && m.conn < PER_CLIENT,
             "receive %d: %u bytes, magic 0x%x client %u conn %u", got, wc.byte_len, m.magic, m.client,
             m.conn);
    int i = (int)(m.client * PER_CLIENT + m.conn);
    TR_CHECK(wc.qp_num == qp[i]->qp_num, "connection %d's message completed on QPN %u, not %u", i,
             wc.qp_num, qp[i]->qp_num);
    TR_CHECK(m.seq == next_seq[i], "connection %d: message %u, expected %u", i, m.seq, next_seq[i]);
    next_seq[i]++;
    srq_post(&s, (uint32_t)wc.wr_id);
  }
  for (int i = 0; i < CONNS; i++) TR_CHECK(next_seq[i] == MSGS, "connection %d served %u", i, next_seq[i]);
  for (int c = 0; c < NCLIENT; c++) {
    int st = -1;
    TR_CHECK(wait(&st) > 0 && st == 0, "a client exited with %d", st);
  }
}

// ---- the other cases: one server QP (or two) on an SRQ, clients in this process ----

struct rig {
  struct end srv, cli;
  struct ibv_qp *sq[2], *cq[2];   // server QPs on the SRQ, their clients
};

static void rig_open(struct rig *r, int srq_wr, int nqp) {
  end_open(&r->srv, 64, 16, srq_wr);
  end_open(&r->cli, 64, 16, 0);
  for (int i = 0; i < nqp; i++) {
    r->sq[i] = qp_open(&r->srv, 4);
    r->cq[i] = qp_open(&r->cli, 16);
    connect_to(r->sq[i], r->cq[i]->qp_num);
    connect_to(r->cq[i], r->sq[i]->qp_num);
  }
}

static void rig_send(struct rig *r, int i, uint32_t seq) {
  struct msg m = { MAGIC, 0, (uint32_t)i, seq };
  send_msg(&r->cli, r->cq[i], seq % 16, &m);
}

// An async event of this process now: 1 and *e, or 0 (none waits).
static int async_now(struct rdma_async_event *e) {
  return rdma_get_async(e, 0) == 0;
}

static uint32_t srq_limit(struct ibv_srq *srq) {
  struct ibv_srq_attr a;
  TR_CHECK(ibv_query_srq(srq, &a) == 0, "query_srq");
  return a.srq_limit;
}

// [SRQ-LIMIT-1] [SRQ-LIMIT-2] [SRQ-VERB-2] [SRQ-VERB-3] the limit event once, then disarmed
static void t_srq_limit_event(void) {
  struct rig r;
  struct rdma_async_event raw;
  struct ibv_async_event ev;
  rig_open(&r, 16, 1);
  for (uint32_t n = 0; n < 8; n++) srq_post(&r.srv, n);
  struct ibv_srq_attr a = { .max_wr = 32, .srq_limit = 6 };
  TR_CHECK(ibv_modify_srq(r.srv.srq, &a, IBV_SRQ_MAX_WR) == EINVAL, "resize accepted");
  a.srq_limit = 17;
  TR_CHECK(ibv_modify_srq(r.srv.srq, &a, IBV_SRQ_LIMIT) == EINVAL, "limit above max_wr accepted");
  TR_CHECK(srq_limit(r.srv.srq) == 0, "limit %u at creation", srq_limit(r.srv.srq));
  a.srq_limit = 6;
  TR_CHECK(ibv_modify_srq(r.srv.srq, &a, IBV_SRQ_LIMIT) == 0, "arm");
  TR_CHECK(srq_limit(r.srv.srq) == 6, "armed limit %u", srq_limit(r.srv.srq));
  for (uint32_t k = 0; k < 2; k++) {             // 8 -> 6 posted: not below 6
    rig_send(&r, 0, k);
    next_ok(r.srv.cq, IBV_WC_RECV);
  }
  TR_CHECK(!async_now(&raw), "event %d with 6 receives left", raw.event_type);
  rig_send(&r, 0, 2);                             // 5 left: below
  next_ok(r.srv.cq, IBV_WC_RECV);
  TR_CHECK(ibv_get_async_event(ctx, &ev) == 0, "get_async_event");
  TR_CHECK(ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED && ev.element.srq == r.srv.srq,
           "event %d element %p, expected SRQ_LIMIT_REACHED on %p", ev.event_type, ev.element.srq, r.srv.srq);
  ibv_ack_async_event(&ev);
  TR_CHECK(srq_limit(r.srv.srq) == 0, "limit %u after the event", srq_limit(r.srv.srq));
  for (uint32_t k = 3; k < 6; k++) {
    rig_send(&r, 0, k);
    next_ok(r.srv.cq, IBV_WC_RECV);
  }
  TR_CHECK(!async_now(&raw), "event %d while disarmed", raw.event_type);
}

// Waits (10 s at most) until qp has sent an RNR NAK.
static void wait_tx_rnr(struct ibv_qp *qp) {
  struct rdma_qp_stats st;
  uint64 end = clock_ns() + 10000000000ULL;
  while (rdma_qp_stats((int)qp->handle, &st) == 0 && st.tx_rnr_nak == 0) {
    TR_CHECK(clock_ns() < end, "no RNR NAK from QPN %u within 10 s", qp->qp_num);
    sleep(1);
  }
}

// [SRQ-TAKE-3] an empty SRQ: RNR NAK; the message lands once a receive is posted
static void t_srq_rnr_then_recovery(void) {
  struct rig r;
  rig_open(&r, 4, 1);
  rig_send(&r, 0, 0);
  wait_tx_rnr(r.sq[0]);
  struct ibv_wc wc;
  TR_CHECK(ibv_poll_cq(r.srv.cq, 1, &wc) == 0, "a completion before any receive was posted");
  srq_post(&r.srv, 3);
  wc = next_ok(r.srv.cq, IBV_WC_RECV);
  TR_CHECK(wc.wr_id == 3 && wc.qp_num == r.sq[0]->qp_num, "wr_id %llu on QPN %u",
           (unsigned long long)wc.wr_id, wc.qp_num);
  next_ok(r.cli.cq, IBV_WC_SEND);
}

// [SRQ-ERR-1] [SRQ-ERR-2] [SRQ-TAKE-2] a QP to ERR: LAST_WQE_REACHED; the SRQ's receives serve the other QP
static void t_srq_qp_err_leaves_receives(void) {
  struct rig r;
  struct ibv_async_event ev;
  struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
  rig_open(&r, 8, 2);
  for (uint32_t n = 0; n < 2; n++) srq_post(&r.srv, n);
  TR_CHECK(ibv_modify_qp(r.sq[0], &a, IBV_QP_STATE) == 0, "modify to ERR");
  TR_CHECK(ibv_get_async_event(ctx, &ev) == 0, "get_async_event");
  TR_CHECK(ev.event_type == IBV_EVENT_QP_LAST_WQE_REACHED && ev.element.qp == r.sq[0],
           "event %d element %p, expected LAST_WQE_REACHED on %p", ev.event_type, ev.element.qp, r.sq[0]);
  ibv_ack_async_event(&ev);
  struct ibv_wc wc;
  TR_CHECK(ibv_poll_cq(r.srv.cq, 1, &wc) == 0, "a flush of a receive the QP never took");
  struct ibv_sge sge = { (uint64_t)r.srv.buf, SLOT, r.srv.mr->lkey };
  struct ibv_recv_wr wr = { .wr_id = 9, .sg_list = &sge, .num_sge = 1 }, *bad = NULL;
  TR_CHECK(ibv_post_recv(r.sq[1], &wr, &bad) == EINVAL && bad == &wr, "post_recv on a QP with an SRQ");
  for (uint32_t k = 0; k < 2; k++) {
    rig_send(&r, 1, k);
    wc = next_ok(r.srv.cq, IBV_WC_RECV);
    TR_CHECK(wc.wr_id == k && wc.qp_num == r.sq[1]->qp_num, "wr_id %llu on QPN %u",
             (unsigned long long)wc.wr_id, wc.qp_num);
  }
}

// [SRQ-VERB-4] destroy refused (EBUSY) while a QP uses the SRQ
static void t_srq_destroy_busy(void) {
  struct rig r;
  rig_open(&r, 4, 1);
  srq_post(&r.srv, 0);
  TR_CHECK(ibv_destroy_srq(r.srv.srq) == EBUSY, "destroy with a QP on it");
  srq_post(&r.srv, 1);                           // still alive
  TR_CHECK(ibv_destroy_qp(r.sq[0]) == 0, "destroy_qp");
  TR_CHECK(ibv_destroy_srq(r.srv.srq) == 0, "destroy once unused");
}

// [SRQ-VERB-1] [SRQ-VERB-2] the device's capacities; sizes granted at least as asked
static void t_srq_caps(void) {
  struct ibv_device_attr d;
  struct ibv_srq_attr q;
  TR_CHECK(ibv_query_device(ctx, &d) == 0, "query_device");
  TR_CHECK(d.max_srq == RDMA_MAX_SRQ && d.max_srq_sge == RDMA_MAX_SGE && d.max_srq_wr >= d.max_qp_wr &&
           (d.max_srq_wr & (d.max_srq_wr - 1)) == 0, "max_srq %d max_srq_wr %d max_srq_sge %d",
           d.max_srq, d.max_srq_wr, d.max_srq_sge);
  struct ibv_pd *pd = ibv_alloc_pd(ctx);
  struct ibv_srq_init_attr sa = { .attr = { .max_wr = 100, .max_sge = 0 } };
  struct ibv_srq *srq = ibv_create_srq(pd, &sa);
  TR_CHECK(srq && sa.attr.max_wr == 128 && sa.attr.max_sge == 1, "granted %u x %u", sa.attr.max_wr,
           sa.attr.max_sge);
  TR_CHECK(ibv_query_srq(srq, &q) == 0 && q.max_wr == 128 && q.max_sge == 1 && q.srq_limit == 0,
           "query %u %u %u", q.max_wr, q.max_sge, q.srq_limit);
  sa.attr.max_wr = (uint32_t)d.max_srq_wr + 1;
  TR_CHECK(!ibv_create_srq(pd, &sa) && errno == EINVAL, "max_srq_wr + 1 granted");
  sa.attr = (struct ibv_srq_attr){ .max_wr = 1, .max_sge = (uint32_t)d.max_srq_sge + 1 };
  TR_CHECK(!ibv_create_srq(pd, &sa) && errno == EINVAL, "max_srq_sge + 1 granted");
  TR_CHECK(ibv_destroy_srq(srq) == 0 && ibv_dealloc_pd(pd) == 0, "destroy");
}

// [SRQ-TAKE-1] [SRQ-TAKE-3] a UD QP on an SRQ: datagrams take its receives in order; none left: dropped
static void t_srq_ud(void) {
  struct end s, c;
  struct rdma_qp_stats st;
  end_open(&s, 16, 4, 4);
  end_open(&c, 16, 4, 0);
  struct ibv_qp *sq = qp_open_type(&s, 4, IBV_QPT_UD), *cq = qp_open_type(&c, 4, IBV_QPT_UD);
  TR_CHECK(rdmau_ud_ready(sq, RDMAU_UD_QKEY) == 0 && rdmau_ud_ready(cq, RDMAU_UD_QKEY) == 0, "UD to RTS");
  struct ibv_ah *ah = rdmau_ud_ah(c.pd, rdmau_local_ipv4(ctx));
  TR_CHECK(ah != NULL, "create_ah: errno %d", errno);
  for (uint32_t n = 0; n < 2; n++) srq_post(&s, n);
  for (uint32_t k = 0; k < 3; k++) {              // the third finds the SRQ empty
    struct msg m = { MAGIC, 0, 0, k };
    memcpy(c.buf, &m, sizeof m);
    struct ibv_sge sge = { (uint64_t)c.buf, sizeof m, c.mr->lkey };
    struct ibv_send_wr wr, *bad;
    memset(&wr, 0, sizeof wr);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.ud.ah = ah;
    wr.wr.ud.remote_qpn = sq->qp_num;
    wr.wr.ud.remote_qkey = RDMAU_UD_QKEY;
    TR_CHECK(ibv_post_send(cq, &wr, &bad) == 0, "UD send %u", k);
    next_ok(c.cq, IBV_WC_SEND);
    if (k == 2) break;
    struct ibv_wc wc = next_ok(s.cq, IBV_WC_RECV);
    memcpy(&m, s.buf + wc.wr_id * SLOT + RDMAU_GRH, sizeof m);
    TR_CHECK(wc.wr_id == k && wc.qp_num == sq->qp_num && m.seq == k && wc.byte_len == RDMAU_GRH + sizeof m,
             "datagram %u: wr_id %llu QPN %u seq %u len %u", k, (unsigned long long)wc.wr_id, wc.qp_num,
             m.seq, wc.byte_len);
  }
  uint64 end = clock_ns() + 10000000000ULL;       // the third: dropped and counted, no completion
  while (rdma_qp_stats((int)sq->handle, &st) == 0 && st.rx_dropped == 0) {
    TR_CHECK(clock_ns() < end, "the datagram without a receive was not counted within 10 s");
    sleep(1);
  }
  struct ibv_wc wc;
  TR_CHECK(ibv_poll_cq(s.cq, 1, &wc) == 0, "a completion with the SRQ empty");
}

static unsigned long long live_srqs(void) {
  struct rdma_dev_stats d;
  return rdma_dev_stats(&d) == 0 ? d.live_srqs : ~0ull;
}

// [SRQ-VERB-6] a process's exit destroys its SRQs (after its QPs on them)
static void t_srq_exit_releases(void) {
  unsigned long long before = live_srqs();
  int pid = fork();
  TR_CHECK(pid >= 0, "fork");
  if (pid == 0) {
    struct rig r;
    rig_open(&r, 8, 1);
    srq_post(&r.srv, 0);
    exit(live_srqs() == before + 1 ? 0 : 1);
  }
  int st = -1;
  TR_CHECK(wait(&st) == pid && st == 0, "child %d", st);
  TR_CHECK(live_srqs() == before, "live SRQs %llu, before %llu", live_srqs(), before);
}

static const struct tr_case cases[] = {
  { "srq_64_connections", t_srq_64_connections, TR_QUICK, 0 },
  { "srq_limit_event", t_srq_limit_event, TR_QUICK, 0 },
  { "srq_rnr_then_recovery", t_srq_rnr_then_recovery, TR_QUICK, 0 },
  { "srq_qp_err_leaves_receives", t_srq_qp_err_leaves_receives, TR_QUICK, 0 },
  { "srq_destroy_busy", t_srq_destroy_busy, TR_QUICK, 0 },
  { "srq_caps", t_srq_caps, TR_QUICK, 0 },
  { "srq_exit_releases", t_srq_exit_releases, TR_QUICK, 0 },
  { "srq_ud", t_srq_ud, TR_QUICK, 0 },
  { NULL },
};
static const struct tr_case *const tables[] = { cases };

static int open_device(void) {
  ctx = rdmau_open_port("srqtest", &mtu);
  return ctx ? 0 : -1;
}

static const struct tr_suite suite = {
  .prog = "srqtest", .tables = tables, .ntables = 1, .timeout_s = 120, .setup = open_device,
};

int main(int argc, char **argv) {
  return tr_main(&suite, argc, argv);
}
