// perftest_cm.c: rdma_bw's and rdma_lat's -R, perftest's rdma_cm mode, as
// Linux's perftest 6.06 speaks it (ib_write_bw -R, ib_read_bw -R,
// ib_send_bw -R, observed in tests/vectors/cm/perftest-{write,read,send}.pcap;
// ib_write_lat -R and ib_send_lat -R in tests/vectors/cm-lat/; docs/rdma.md,
// "perftest's -R"). Owns the comm connection (a first rdma_cm connection
// whose QP carries only perftest's messages, one SEND each way at a time,
// the client's first), the order of the exchanges (a script per
// operation) and the layouts of their messages.
#include "user.h"
#include "rdma_perf.h"
#include "rdma_util.h"
#include "rdma_cm_util.h"

#define R_VERSION "6.06"        // the perftest whose exchange this is
#define R_VERSION_BYTES 16      // its version field
#define R_MIN_VERSION 570       // perftest refuses peers older than 5.70 (major x 100 + minor)
#define R_CACHE_LINE 64         // the cache line size we announce
#define R_DEST_BYTES 56         // the per-QP message (perftest's "pingpong_dest")
#define R_MSG_MAX 64            // a message slot: the largest message, rounded up
#define R_RECV_SLOTS 2          // receives kept posted on the comm QP
#define R_SEND_DEPTH 8          // SENDs outstanding on the comm QP at most
#define R_WAIT_MS 60000         // the longest wait for the peer's next message
#define R_RUN_WAIT_MS 600000    // the server's wait for the end of the client's run
#define R_CLOSE_MS 10000        // the longest wait for the peer's disconnect
#define R_PEER_CHECK_MS 500     // how often a message wait looks whether the peer left
#define R_TEST_TRIES 20         // REQs for the test connection a perftest server may refuse ...
#define R_TEST_RETRY_US 100000  // ... each 100 ms after the last: 2 s for its listener

// The comm connection and where the script is.
struct perf_r {
  struct rdma_cm_id *id;        // the comm connection
  struct rdma_cm_id *listen;    // server: the listener both connections come to
  struct ibv_cq *cq;
  struct ibv_mr *mr;
  uint8_t slot[R_RECV_SLOTS + 1][R_MSG_MAX];   // receive slots, then the send slot
  uint32_t sends_posted, sends_done;
  int step;                     // the script's next step
  struct perf_opts *o;          // the tool's options (perf_r_close has none)
};

// ---- big-endian fields ----

static void put_be(uint8_t *p, uint64_t v, int n) {
  for (int i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
}
static uint64_t get_be(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; i++) v = v << 8 | p[i];
  return v;
}

static const char *tool(const struct perf_opts *o) { return o->latency ? "rdma_lat" : "rdma_bw"; }

static void die(const struct perf_conn *c, const char *what, const char *why) {
  printf("%s: -R: %s (peer %s): %s\n", c->r ? tool(c->r->o) : "perf", what,
         inet_ntoa((struct in_addr){ htonl(c->peer_ip) }), why);
  exit(1);
}

// ---- the comm QP: one message each way ----

static void post_recv_slot(struct perf_conn *c, int k) {
  struct perf_r *r = c->r;
  struct ibv_sge sge = { (uint64_t)r->slot[k], R_MSG_MAX, r->mr->lkey };
  struct ibv_recv_wr wr = { .wr_id = (uint64_t)k, .sg_list = &sge, .num_sge = 1 }, *bad;
  if (ibv_post_recv(r->id->qp, &wr, &bad)) die(c, "comm QP", "cannot post a receive");
}

// The next completion of the comm QP within ms: a SEND's is counted, a
// receive's message copied to out (at most max bytes) and its slot posted
// again; returns the message's length.
// Has the peer ended the comm connection? Its DISCONNECTED waits on the
// id's channel (a peer never disconnects while we wait for its message:
// each side leaves only after the other's last one).
static int peer_left(struct rdma_cm_id *id) {
  struct pollfd p = { .fd = id && id->channel ? id->channel->fd : -1, .events = POLLIN };
  if (p.fd < 0 || poll(&p, 1, 0) != 1 || !(p.revents & POLLIN)) return 0;
  struct rdma_cm_event *e;
  if (rdma_get_cm_event(id->channel, &e)) return 0;
  int left = e->event == RDMA_CM_EVENT_DISCONNECTED;
  rdma_ack_cm_event(e);
  return left;
}

static uint32_t recv_msg(struct perf_conn *c, void *out, uint32_t max, int ms, const char *what) {
  struct perf_r *r = c->r;
  struct ibv_wc wc;
  for (int waited = 0;;) {
    int slice = ms - waited < R_PEER_CHECK_MS ? ms - waited : R_PEER_CHECK_MS;
    if (rdmau_wait(r->cq, &wc, slice) != 1) {
      // a perftest client that fails its own clock check exits without
      // its report: say so instead of waiting out the deadline
      if (peer_left(r->id)) die(c, what, "the peer disconnected before sending it");
      if ((waited += slice) >= ms) die(c, what, "no message within the deadline");
      continue;
    }
    if (wc.status != IBV_WC_SUCCESS) die(c, what, ibv_wc_status_str(wc.status));
    if (wc.opcode != IBV_WC_RECV) { r->sends_done++; continue; }
    int k = (int)wc.wr_id;
    uint32_t n = wc.byte_len < max ? wc.byte_len : max;
    memset(out, 0, max);
    memcpy(out, r->slot[k], n);
    post_recv_slot(c, k);
    return wc.byte_len;
  }
}

// Not waited for: the peer answers it, or leaves (its ACK may come only
// with the peer's next request, [RESP-ACK-5], or its disconnect).
static void send_msg(struct perf_conn *c, const void *msg, uint32_t n, const char *what) {
  struct perf_r *r = c->r;
  struct ibv_wc wc;
  while (r->sends_posted - r->sends_done >= R_SEND_DEPTH) {
    if (rdmau_wait(r->cq, &wc, R_WAIT_MS) != 1 || wc.status != IBV_WC_SUCCESS || wc.opcode == IBV_WC_RECV)
      die(c, what, "the comm QP's SENDs do not complete");
    r->sends_done++;
  }
  uint8_t *s = r->slot[R_RECV_SLOTS];
  memcpy(s, msg, n);
  struct ibv_sge sge = { (uint64_t)s, n, r->mr->lkey };
  struct ibv_send_wr wr = { .wr_id = R_RECV_SLOTS, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
                            .send_flags = IBV_SEND_SIGNALED }, *bad;
  if (ibv_post_send(r->id->qp, &wr, &bad)) die(c, what, "cannot post the SEND");
  r->sends_posted++;
}

// One message each way, the client's first (perftest's exchange): mine
// (n bytes) out, the peer's into theirs (n bytes).
static void xchg(struct perf_conn *c, const void *mine, void *theirs, uint32_t n, int ms, const char *what) {
  if (!c->is_server) send_msg(c, mine, n, what);
  recv_msg(c, theirs, n, ms, what);
  if (c->is_server) send_msg(c, mine, n, what);
}

// ---- the messages ----

// The per-QP message: big-endian integers at fixed offsets, the GID's 16
// bytes as they are (perftest-write.pcap, frame 33; docs/rdma.md). Bytes
// 20-23 are padding; bytes 48-55 are 1 from every Linux peer, their
// meaning unknown, sent as seen (R_LAST).
enum { D_LID, D_OUT_READS, D_QPN, D_PSN, D_RKEY, D_VADDR, D_GID, D_LAST, D_FIELDS };
static const struct { uint8_t off, len; } dest_field[D_FIELDS] = {
  [D_LID] = { 0, 2 }, [D_OUT_READS] = { 4, 4 }, [D_QPN] = { 8, 4 }, [D_PSN] = { 12, 4 },
  [D_RKEY] = { 16, 4 }, [D_VADDR] = { 24, 8 }, [D_GID] = { 32, 16 }, [D_LAST] = { 48, 8 },
};
#define R_LAST 1

static void dest_pack(uint8_t m[R_DEST_BYTES], struct perf_conn *c, const struct perf_opts *o) {
  struct ibv_device_attr da;
  uint64_t v[D_FIELDS] = { 0 };
  v[D_OUT_READS] = o->op == PERF_READ && ibv_query_device(c->ctx, &da) == 0 ? (uint64_t)da.max_qp_rd_atom : 1;
  v[D_QPN] = c->qp->qp_num;
  v[D_PSN] = rdmau_psn();
  v[D_RKEY] = c->mr->rkey;
  v[D_VADDR] = (uint64_t)c->buf;
  v[D_LAST] = R_LAST;
  memset(m, 0, R_DEST_BYTES);
  for (int i = 0; i < D_FIELDS; i++)
    if (i != D_GID) put_be(m + dest_field[i].off, v[i], dest_field[i].len);
  uint8_t *gid = m + dest_field[D_GID].off;         // ::ffff:a.b.c.d
  gid[10] = gid[11] = 0xff;
  put_be(gid + 12, rdmau_local_ipv4(c->ctx), 4);
}

// The client's result after the run: five 8-byte big-endian values, the
// rates as IEEE doubles (perftest-write.pcap, frames 59-77); the server
// answers each with a value of its own, which means nothing.
static void put_double(uint8_t *p, double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  put_be(p, u, 8);
}
static double get_double(const uint8_t *p) {
  uint64_t u = get_be(p, 8);
  double d;
  memcpy(&d, &u, 8);
  return d;
}

// ---- the steps ----

// The steps of a script (below): one exchange, or a connection's start or end.
enum step { S_VERSION, S_CYCLE, S_CACHE_LINE, S_MTU, S_ZERO_DEST, S_TEST_CONNECT, S_DEST, S_RECVS,
            S_RUN, S_REPORT, S_CLOSE_SERVER_COMM, S_CLOSE_CLIENT_COMM, S_END };
static const uint8_t *script(const struct perf_opts *o);

static void step_version(struct perf_conn *c, struct perf_opts *o) {
  (void)o;
  char mine[R_VERSION_BYTES] = R_VERSION, theirs[R_VERSION_BYTES];
  xchg(c, mine, theirs, R_VERSION_BYTES, R_WAIT_MS, "version exchange");
  theirs[R_VERSION_BYTES - 1] = 0;
  int major = 0, minor = 0;
  char *dot = strchr(theirs, '.');
  major = atoi(theirs);
  if (dot) minor = atoi(dot + 1);
  if (major * 100 + minor < R_MIN_VERSION) die(c, "version exchange", "the peer's perftest is older than 5.70");
}

static void xchg_u32(struct perf_conn *c, uint32_t mine, uint32_t *theirs, const char *what) {
  uint8_t m[4], t[4];
  put_be(m, mine, 4);
  xchg(c, m, t, 4, R_WAIT_MS, what);
  *theirs = (uint32_t)get_be(t, 4);
}

static void step_cycle(struct perf_conn *c, struct perf_opts *o) {
  (void)o;
  uint32_t peer;
  xchg_u32(c, PERF_R_CYCLE_BUFFER, &peer, "cycle buffer exchange");
  // The peer walks its WRITEs and READs through this much of our buffer.
  if (peer > PERF_R_CYCLE_BUFFER) die(c, "cycle buffer exchange", "the peer's cycle buffer is larger than 4096");
}

static void step_cache_line(struct perf_conn *c, struct perf_opts *o) {
  (void)o;
  uint32_t peer;
  xchg_u32(c, R_CACHE_LINE, &peer, "cache line exchange");
}

// The path MTU as text, ibv_mtu's number and a NUL ("3" for 1024).
#define R_MTU_BYTES 2
static void step_mtu(struct perf_conn *c, struct perf_opts *o) {
  (void)o;
  struct ibv_port_attr pa;
  char mine[R_MTU_BYTES] = { 0 }, theirs[R_MTU_BYTES];
  if (ibv_query_port(c->ctx, 1, &pa) == 0) mine[0] = (char)('0' + pa.active_mtu);
  xchg(c, mine, theirs, R_MTU_BYTES, R_WAIT_MS, "MTU exchange");
}

// A per-QP message of zeros: perftest exchanges one before and one right
// after the test connection, before its QP facts exist.
static void step_zero_dest(struct perf_conn *c, struct perf_opts *o) {
  (void)o;
  uint8_t mine[R_DEST_BYTES] = { 0 }, theirs[R_DEST_BYTES];
  xchg(c, mine, theirs, R_DEST_BYTES, R_WAIT_MS, "exchange before the test connection");
}

// The test connection: the QP perf_connect made (in INIT), no private data.
static void step_test_connect(struct perf_conn *c, struct perf_opts *o) {
  if (c->is_server) {
    if (rdma_get_request(c->r->listen, &c->id)) die(c, "test connection", strerror(errno));
    c->id->qp = c->qp;
    perf_set_transport(c->id, o);
    struct rdma_conn_param p = { 0 };
    perf_conn_depth(c, o, &p);
    if (rdma_accept(c->id, &p)) die(c, "accept of the test connection", strerror(errno));
    return;
  }
  // perftest's server listens for the test connection only after it has
  // answered the message before it, so a REQ that comes at once can be
  // refused (REJ 8, no listener): it is tried again, R_TEST_TRIES times.
  for (int tries = 1;; tries++) {
    if (rdmau_cm_resolve(&c->id, o->server_ip, o->port))
      rdmau_cm_die(tool(o), "-R: test connection to", o->server_ip, o->port, NULL, errno);
    c->id->qp = c->qp;
    perf_set_transport(c->id, o);
    struct rdma_conn_param p = { 0 };
    perf_conn_depth(c, o, &p);
    if (rdma_connect(c->id, &p) == 0) return;
    if (errno != ECONNREFUSED || tries == R_TEST_TRIES)
      rdmau_cm_die(tool(o), "-R: test connection to", o->server_ip, o->port, c->id, errno);
    c->id->qp = NULL;                  // the QP is ours: the next id takes it, from INIT
    rdma_destroy_id(c->id);
    struct ibv_qp_attr reset = { .qp_state = IBV_QPS_RESET };
    if (ibv_modify_qp(c->qp, &reset, IBV_QP_STATE)) die(c, "test connection", "cannot reset the QP");
    perf_qp_init(c);
    usleep(R_TEST_RETRY_US);
  }
}

// The per-QP message: ours out, the peer's buffer in (c->raddr, c->rkey).
static void step_dest(struct perf_conn *c, struct perf_opts *o) {
  uint8_t mine[R_DEST_BYTES], theirs[R_DEST_BYTES];
  dest_pack(mine, c, o);
  // The first message after the run waits for the whole run.
  int ms = c->r->step > 0 && script(o)[c->r->step - 1] == S_RUN ? R_RUN_WAIT_MS : R_WAIT_MS;
  xchg(c, mine, theirs, R_DEST_BYTES, ms, "QP exchange");
  c->raddr = get_be(theirs + dest_field[D_VADDR].off, 8);
  c->rkey = (uint32_t)get_be(theirs + dest_field[D_RKEY].off, 4);
}

// The receives for the run, before the peer may send: the bw send
// server's first ones; both sides' PERF_RECV_AHEAD of a SEND ping-pong
// (rdma_lat), each replaced as it is taken.
static void step_recvs(struct perf_conn *c, struct perf_opts *o) {
  if (o->op != PERF_SEND) return;
  if (o->latency) {
    for (int i = 0; i < PERF_RECV_AHEAD; i++) perf_post_ahead(c);
    return;
  }
  perf_post_run_recvs(c, o, o->size);
}

static void step_run(struct perf_conn *c, struct perf_opts *o) { (void)c; (void)o; }

static void step_report(struct perf_conn *c, struct perf_opts *o) {
  (void)o;
  struct perf_report *p = &c->report;
  uint8_t mine[5][8] = { { 0 } }, theirs[5][8];
  if (!c->is_server) {
    put_be(mine[0], p->size, 8);
    put_be(mine[1], p->iters, 8);
    put_double(mine[2], (double)p->peak_x100 / 100);
    put_double(mine[3], (double)p->avg_x100 / 100);
    put_double(mine[4], (double)p->mpps_x100000 / 100000);
  }
  for (int i = 0; i < 5; i++) xchg(c, mine[i], theirs[i], 8, R_WAIT_MS, "report exchange");
  if (!c->is_server) return;
  p->size = get_be(theirs[0], 8);
  p->iters = get_be(theirs[1], 8);
  p->peak_x100 = (uint64)(get_double(theirs[2]) * 100 + 0.5);
  p->avg_x100 = (uint64)(get_double(theirs[3]) * 100 + 0.5);
  p->mpps_x100000 = (uint64)(get_double(theirs[4]) * 100000 + 0.5);
  printf("rdma_bw: -R: the client's result: %lu bytes x %lu iterations, BW peak %lu.%02lu MB/sec, "
         "BW average %lu.%02lu MB/sec, MsgRate %lu.%05lu Mpps\n", p->size, p->iters,
         p->peak_x100 / 100, p->peak_x100 % 100, p->avg_x100 / 100, p->avg_x100 % 100,
         p->mpps_x100000 / 100000, p->mpps_x100000 % 100000);
}

// Waits up to R_CLOSE_MS for the peer's DREQ on id, then disconnects it:
// the DREP the peer waits for (Linux's perftest waits for it before it ends
// the other connection), or our DREQ if none came.
static void await_or_disconnect(struct rdma_cm_id *id) {
  rdmau_cm_wait_disconnect(id, R_CLOSE_MS);
  rdma_disconnect(id);
}

// The end: the client ends the test connection; the comm connection is
// ended by the server (S_CLOSE_SERVER_COMM) or the client
// (S_CLOSE_CLIENT_COMM), as the captures' DREQs show for each tool.
static void close_both(struct perf_conn *c, int client_ends_comm) {
  if (!c->is_server) {
    rdma_disconnect(c->id);
    if (client_ends_comm) rdma_disconnect(c->r->id);
    else await_or_disconnect(c->r->id);
  } else {
    await_or_disconnect(c->id);
    if (client_ends_comm) await_or_disconnect(c->r->id);
    else rdma_disconnect(c->r->id);
  }
}
static void step_close_server_comm(struct perf_conn *c, struct perf_opts *o) { (void)o; close_both(c, 0); }
static void step_close_client_comm(struct perf_conn *c, struct perf_opts *o) { (void)o; close_both(c, 1); }

static void (*const step_fn[])(struct perf_conn *, struct perf_opts *) = {
  [S_VERSION] = step_version, [S_CYCLE] = step_cycle, [S_CACHE_LINE] = step_cache_line,
  [S_MTU] = step_mtu, [S_ZERO_DEST] = step_zero_dest, [S_TEST_CONNECT] = step_test_connect,
  [S_DEST] = step_dest, [S_RECVS] = step_recvs, [S_RUN] = step_run, [S_REPORT] = step_report,
  [S_CLOSE_SERVER_COMM] = step_close_server_comm, [S_CLOSE_CLIENT_COMM] = step_close_client_comm,
};

// The order of the exchanges over the comm connection, per tool and
// operation, as Linux's perftest sends them (tests/vectors/cm/perftest-*.pcap
// for the bandwidth tools, tests/vectors/cm-lat/ for ib_send_lat -R and
// ib_write_lat -R): the same start; a send run's receives posted
// before the last per-QP message; after the run, per tool, per-QP
// messages, the client's report, and who ends the comm connection.
#define R_START S_VERSION, S_CYCLE, S_CACHE_LINE, S_MTU, S_ZERO_DEST, S_TEST_CONNECT, S_ZERO_DEST, \
                S_DEST, S_DEST, S_DEST
static const uint8_t script_bw_rdma[] = {
  R_START, S_RUN, S_DEST, S_REPORT, S_DEST, S_CLOSE_SERVER_COMM, S_END,
};
static const uint8_t script_bw_send[] = {
  R_START, S_RECVS, S_DEST, S_RUN, S_DEST, S_CLOSE_CLIENT_COMM, S_END,
};
static const uint8_t script_lat_send[] = {
  R_START, S_RECVS, S_DEST, S_RUN, S_DEST, S_CLOSE_SERVER_COMM, S_END,
};
static const uint8_t script_lat_write[] = {
  R_START, S_DEST, S_RUN, S_CLOSE_SERVER_COMM, S_END,
};

static const uint8_t *script(const struct perf_opts *o) {
  if (o->latency) return o->op == PERF_SEND ? script_lat_send : script_lat_write;
  return o->op == PERF_SEND ? script_bw_send : script_bw_rdma;
}

// Runs the script's steps from c->r->step until (not including) `until`.
static void run_steps(struct perf_conn *c, struct perf_opts *o, int until) {
  const uint8_t *s = script(o);
  while (s[c->r->step] != S_END && s[c->r->step] != until) {
    int k = s[c->r->step];
    step_fn[k](c, o);
    c->r->step++;
  }
}

// ---- the comm connection ----

// The comm QP on the id, its CQ, slots and receives, before the connection.
static void comm_qp(struct perf_conn *c) {
  struct perf_r *r = c->r;
  r->cq = ibv_create_cq(c->ctx, 2 * (R_SEND_DEPTH + R_RECV_SLOTS), NULL, NULL, 0);
  struct ibv_qp_init_attr ia = { .send_cq = r->cq, .recv_cq = r->cq, .qp_type = IBV_QPT_RC,
    .cap = { .max_send_wr = R_SEND_DEPTH, .max_recv_wr = R_RECV_SLOTS, .max_send_sge = 1, .max_recv_sge = 1 } };
  if (!r->cq || rdma_create_qp(r->id, c->pd, &ia)) die(c, "comm QP", strerror(errno));
  r->mr = ibv_reg_mr(c->pd, r->slot, sizeof r->slot, IBV_ACCESS_LOCAL_WRITE);
  if (!r->mr) die(c, "comm QP", "cannot register its buffer");
  for (int k = 0; k < R_RECV_SLOTS; k++) post_recv_slot(c, k);
}

static void comm_connect(struct perf_conn *c, struct perf_opts *o) {
  struct perf_r *r = c->r;
  if (c->is_server) {
    if (rdmau_cm_listen(&r->listen, o->port)) rdmau_cm_die(tool(o), "-R: listen on", 0, o->port, NULL, errno);
    printf("waiting for a client on port %d (-R: perftest's exchange)\n", o->port);
    if (rdma_get_request(r->listen, &r->id)) die(c, "comm connection", strerror(errno));
    c->peer_ip = ntohl(((struct sockaddr_in *)rdma_get_peer_addr(r->id))->sin_addr.s_addr);
    comm_qp(c);
    if (rdma_accept(r->id, NULL)) die(c, "accept of the comm connection", strerror(errno));
    return;
  }
  c->peer_ip = o->server_ip;
  if (rdmau_cm_resolve(&r->id, o->server_ip, o->port))
    rdmau_cm_die(tool(o), "-R: connect to", o->server_ip, o->port, NULL, errno);
  comm_qp(c);
  if (rdma_connect(r->id, NULL)) rdmau_cm_die(tool(o), "-R: connect to", o->server_ip, o->port, r->id, errno);
}

void perf_r_connect(struct perf_conn *c, struct perf_opts *o) {
  c->r = calloc(1, sizeof *c->r);
  if (!c->r) die(c, "comm connection", "out of memory");
  c->r->o = o;
  c->is_server = o->server_ip == 0;
  comm_connect(c, o);
  run_steps(c, o, S_RUN);
}

void perf_r_close(struct perf_conn *c) {
  struct perf_r *r = c->r;
  run_steps(c, r->o, S_END);
  rdma_destroy_id(c->id);
  c->id = NULL;
  rdma_destroy_qp(r->id);
  rdma_destroy_id(r->id);
  if (r->listen) rdma_destroy_id(r->listen);
  ibv_dereg_mr(r->mr);
  ibv_destroy_cq(r->cq);
  free(r);
  c->r = NULL;
}
