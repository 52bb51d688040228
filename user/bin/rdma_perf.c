// rdma_perf.c: see rdma_perf.h.
#include "user.h"
#include "rdma_perf.h"
#include "rdma_util.h"
#include "rdma_cm_util.h"
#include "rdma_sys.h"

#define PERF_MAGIC 0x70657266u   // "perf"

// -t's words and the names the tools print (perftest's test titles).
static const struct { const char *word, *name; } ops[] = {
  [PERF_WRITE] = { "write", "RDMA_Write" }, [PERF_READ] = { "read", "RDMA_Read" },
  [PERF_SEND] = { "send", "Send" }, [PERF_FAA] = { "atomic", "Atomic FETCH_AND_ADD" },
  [PERF_CAS] = { NULL, "Atomic CMP_AND_SWAP" },     // -t atomic -A CMP_AND_SWAP
};
#define NOPS (int)(sizeof ops / sizeof ops[0])

const char *perf_op_name(int op) {
  return op >= 0 && op < NOPS ? ops[op].name : "?";
}

void perf_wr_remote(const struct perf_conn *c, const struct perf_opts *o, struct ibv_send_wr *wr) {
  static const enum ibv_wr_opcode code[] = {
    [PERF_WRITE] = IBV_WR_RDMA_WRITE, [PERF_READ] = IBV_WR_RDMA_READ, [PERF_SEND] = IBV_WR_SEND,
    [PERF_FAA] = IBV_WR_ATOMIC_FETCH_AND_ADD, [PERF_CAS] = IBV_WR_ATOMIC_CMP_AND_SWP,
  };
  wr->opcode = code[o->op];
  if (perf_is_atomic(o->op)) {
    wr->wr.atomic.remote_addr = c->raddr;
    wr->wr.atomic.rkey = c->rkey;
    wr->wr.atomic.compare_add = o->op == PERF_FAA ? 1 : 0;
    wr->wr.atomic.swap = 0;
  } else {
    wr->wr.rdma.remote_addr = c->raddr;
    wr->wr.rdma.rkey = c->rkey;
  }
}

static int op_of_word(const char *w) {
  for (int i = 0; i < NOPS; i++)
    if (ops[i].word && strcmp(w, ops[i].word) == 0) return i;
  return -1;
}

static const char *prog = "perf";     // the tool's name (perf_parse), for messages

// The numeric options: name, alias, the field (an int or uint32_t of
// struct perf_opts), the allowed range and what it counts. perf_usage
// prints the same rows, so --help states every limit.
struct num_opt {
  const char *name, *alias;
  size_t off;
  uint64_t min, max;
  const char *units, *help;
};
static const struct num_opt num_opts[] = {
  { "-s", NULL, offsetof(struct perf_opts, size), 1, PERF_MAX_SIZE, "bytes", "message size (with -a: the largest)" },
  { "-n", NULL, offsetof(struct perf_opts, iters), 1, PERF_MAX_ITERS, "", "iterations per size" },
  { "-d", NULL, offsetof(struct perf_opts, tx_depth), 1, PERF_MAX_TX_DEPTH, "WRs", "rdma_bw: WRs outstanding" },
  { "-Q", "--cq-mod", offsetof(struct perf_opts, cq_mod), 1, PERF_MAX_TX_DEPTH, "WRs", "rdma_bw: one signaled WR every N (capped at -d)" },
  { "-p", NULL, offsetof(struct perf_opts, port), 1, 65535, "", "the CM port" },
  { "--inflight", NULL, offsetof(struct perf_opts, inflight), 1, RDMA_QP_MAX_INFLIGHT, "packets", "request packets in flight (default rdma_cm's)" },
  { "--min-rto", NULL, offsetof(struct perf_opts, min_rto_us), 1, PERF_MAX_MIN_RTO_US, "us", "adaptive RTO floor" },
  { "--idle-qps", NULL, offsetof(struct perf_opts, idle_qps), 0, PERF_MAX_IDLE_QPS, "QPs", "rdma_bw: idle connected QPs beside the busy one" },
  { "-q", "--qp", offsetof(struct perf_opts, num_qps), 1, PERF_MAX_QPS, "QPs", "rdma_bw: connections, WRITE and READ over rdma_cm" },
  { "-o", "--outs", offsetof(struct perf_opts, outs), 1, 255, "READs", "READs and atomics outstanding (default the device's maximum, as perftest's)" },
};
#define NUM_OPTS (int)(sizeof num_opts / sizeof num_opts[0])

static void perf_usage(const char *what, const struct perf_opts *dflt) {
  uint32_t all_top = strcmp(what, "rdma_lat") == 0 ? PERF_LAT_MAX_ALL_SIZE : PERF_MAX_SIZE;
  printf("usage: %s [options] [-L | <server ip>]   (no address: the server; -L: both ends in this guest)\n"
         "  -t write|read|send|atomic   the operation (default write)\n"
         "  -A CMP_AND_SWAP|FETCH_AND_ADD   -t atomic's operation (default FETCH_AND_ADD)\n"
         "  -a                   every size 2, 4, ... up to -s (default %u)\n"
         "  -e, --events         sleep for completions instead of polling\n"
         "  --sr                 selective repeat instead of go-back-N\n"
         "  --fixed-rto          the IBTA ACK timeout alone, no adaptive RTO\n"
         "  --stats              the QP's transport counters and the guest's CPU per frame\n"
         "  --srq                this side's receives through a shared receive queue\n"
         "  -R, --rdma_cm        perftest's rdma_cm exchange (ib_write_bw -R ...); both sides need the same options\n",
         what, all_top);
  for (int i = 0; i < NUM_OPTS; i++) {
    const struct num_opt *n = &num_opts[i];
    uint32_t d = *(const uint32_t *)((const char *)dflt + n->off);
    char label[32];
    snprintf(label, sizeof label, "%s%s%s N", n->name, n->alias ? ", " : "", n->alias ? n->alias : "");
    printf("  %-20s %s: %lu..%lu%s%s", label, n->help, n->min, n->max, n->units[0] ? " " : "", n->units);
    if (d) printf(" (default %u)", d);
    printf("\n");
  }
}

// A one-line complaint about the command line and exit(2).
static void bad_arg(const char *what, const char *fmt, const char *arg) {
  printf("%s: ", what);
  printf(fmt, arg);
  printf("; %s --help lists the options and their limits\n", what);
  exit(2);
}

static const struct num_opt *num_opt(const char *a) {
  for (int i = 0; i < NUM_OPTS; i++)
    if (strcmp(a, num_opts[i].name) == 0 || (num_opts[i].alias && strcmp(a, num_opts[i].alias) == 0))
      return &num_opts[i];
  return NULL;
}

static void set_num(struct perf_opts *o, const struct num_opt *n, const char *a, const char *v, const char *what) {
  uint64_t x = rdmau_num(what, a, v, n->min, n->max, n->units);
  *(uint32_t *)((char *)o + n->off) = (uint32_t)x;      // every field in the table is 32 bits wide
}

// Each tool's defaults: rdma_lat measures 2-byte messages, and -a goes to 64 KiB.
static void perf_defaults(struct perf_opts *o, const char *what) {
  int lat = strcmp(what, "rdma_lat") == 0;
  memset(o, 0, sizeof *o);
  o->op = PERF_WRITE;
  o->size = lat ? 2 : 65536;
  o->iters = 1000;
  o->tx_depth = 64;
  o->cq_mod = 16;
  o->port = RDMA_CM_PORT;
  o->num_qps = 1;
  o->latency = lat;
}

void perf_parse(struct perf_opts *o, int argc, char **argv, const char *what) {
  _Static_assert(sizeof(int) == sizeof(uint32_t), "num_opts writes 32-bit fields");
  prog = what;
  perf_defaults(o, what);
  int size_set = 0, have_ip = 0, cas = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const struct num_opt *n = num_opt(a);
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) { perf_usage(what, o); exit(0); }
    if ((n || strcmp(a, "-t") == 0 || strcmp(a, "-A") == 0) && i + 1 >= argc)
      bad_arg(what, "%s needs a value", a);
    if (n) {
      set_num(o, n, a, argv[++i], what);
      size_set |= strcmp(a, "-s") == 0;
    } else if (strcmp(a, "-t") == 0) {
      const char *t = argv[++i];
      o->op = op_of_word(t);
      if (o->op < 0) bad_arg(what, "-t %s: not an operation (write, read, send or atomic)", t);
    } else if (strcmp(a, "-A") == 0) {
      const char *t = argv[++i];
      cas = strcmp(t, "CMP_AND_SWAP") == 0;
      if (!cas && strcmp(t, "FETCH_AND_ADD") != 0)
        bad_arg(what, "-A %s: not an atomic (CMP_AND_SWAP or FETCH_AND_ADD)", t);
    }
    else if (strcmp(a, "-a") == 0) o->all = 1;
    else if (strcmp(a, "--sr") == 0) o->sr = 1;
    else if (strcmp(a, "-e") == 0 || strcmp(a, "--events") == 0) o->events = 1;
    else if (strcmp(a, "--fixed-rto") == 0) o->min_rto_us = ~0u;
    else if (strcmp(a, "--stats") == 0) o->stats = 1;
    else if (strcmp(a, "--srq") == 0) o->srq = 1;
    else if (strcmp(a, "-L") == 0) o->loopback = 1;
    else if (strcmp(a, "-R") == 0 || strcmp(a, "--rdma_cm") == 0) o->perftest = 1;
    else if (a[0] == '-') bad_arg(what, "%s: unknown option", a);
    else if (have_ip || rdmau_parse_ipv4(a, &o->server_ip) < 0 || o->server_ip == 0)
      bad_arg(what, have_ip ? "%s: one server address only" : "%s: not an IPv4 address (a.b.c.d)", a);
    else have_ip = 1;
  }
  if (cas && o->op != PERF_FAA) bad_arg(what, "%s needs -t atomic", "-A");
  if (cas) o->op = PERF_CAS;
  if (perf_is_atomic(o->op) && o->all) bad_arg(what, "%s: an atomic has one size (8 bytes)", "-a");
  if (perf_is_atomic(o->op) && size_set && o->size != PERF_ATOMIC_SIZE)
    bad_arg(what, "%s with -t atomic: an atomic moves 8 bytes (-s 8 or no -s)", "-s");
  if (perf_is_atomic(o->op)) o->size = PERF_ATOMIC_SIZE;
  if (o->all && !size_set) o->size = strcmp(what, "rdma_lat") == 0 ? PERF_LAT_MAX_ALL_SIZE : PERF_MAX_SIZE;
  // More QPs: WRITE and READ over the CM (SEND's receives stay on one QP).
  if (o->num_qps > 1 && o->op == PERF_SEND) bad_arg(what, "%s: more than one QP needs -t write, read or atomic", "-q");
  if (o->num_qps > 1 && o->loopback) bad_arg(what, "%s: more than one QP needs two guests (not -L)", "-q");
  if (o->cq_mod > o->tx_depth) o->cq_mod = o->tx_depth;   // as perftest: else the window never signals
  // -R: perftest's exchange as perftest_cm.c knows it: one QP, one size,
  // and rdma_lat's WRITE and SEND (no capture of ib_read_lat -R yet).
  const char *no_r = !o->perftest ? NULL
                   : o->latency && o->op == PERF_READ ? "%s with -t read: not yet (rdma_lat: write and send)"
                   : perf_is_atomic(o->op) ? "%s with -t atomic: not yet (write, read and send)"
                   : o->loopback ? "%s needs two guests (not -L)"
                   : o->num_qps > 1 ? "%s with more than one QP (-q): not yet"
                   : o->srq ? "%s with --srq: not yet"
                   : o->all ? "%s with every size (-a): not yet" : NULL;
  if (no_r) bad_arg(what, no_r, "-R");
}

static void die(const char *m) { printf("%s: %s\n", prog, m); exit(1); }

// The READ depth both ends offer in the CM exchange, as perftest's
// --outs: responder resources the device's max_qp_rd_atom, initiator
// depth -o capped at max_qp_init_rd_atom, or that maximum (rdma_cm's own
// default is half a peer's resources). The depth the QP got is the least
// of ours and the peer's resources (rdma_bw prints it: Outstand reads).
void perf_conn_depth(struct perf_conn *c, const struct perf_opts *o, struct rdma_conn_param *p) {
  struct ibv_device_attr a;
  if (ibv_query_device(c->ctx, &a)) die("ibv_query_device failed: no READ depth to offer");
  p->responder_resources = (uint8_t)a.max_qp_rd_atom;
  uint32_t most = (uint32_t)a.max_qp_init_rd_atom;
  p->initiator_depth = (uint8_t)(o->outs && o->outs < most ? o->outs : most);
}

// -R: the buffer also holds the cycle a perftest peer walks its WRITEs and
// READs through, and then rdma_lat's send area (perftest_cm.c).
static void resources(struct perf_conn *c, const struct perf_opts *o) {
  uint32_t len = o->size + (o->perftest ? PERF_R_CYCLE_BUFFER + (o->latency ? o->size : 0) : 0);
  c->ctx = rdmau_open();
  if (!c->ctx) die("no RDMA device");
  c->pd = ibv_alloc_pd(c->ctx);
  c->chan = o->events ? ibv_create_comp_channel(c->ctx) : NULL;
  if (o->events && !c->chan) die("completion channel");
  c->cq = ibv_create_cq(c->ctx, PERF_CQE, NULL, c->chan, 0);
  c->buf_len = len;
  c->buf = malloc(len);
  if (!c->pd || !c->cq || !c->buf) die("resources");
  memset(c->buf, 0, len);
  c->access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
              (perf_is_atomic(o->op) ? IBV_ACCESS_REMOTE_ATOMIC : 0);
  c->mr = ibv_reg_mr(c->pd, c->buf, len, c->access);
  struct ibv_srq_init_attr sa = { .attr = { .max_wr = PERF_QP_RECV_WR, .max_sge = 1 } };   // as the QP's own queue
  if (o->srq && !(c->srq = ibv_create_srq(c->pd, &sa))) die("shared receive queue");
  struct ibv_qp_init_attr ia;
  memset(&ia, 0, sizeof ia);
  ia.send_cq = ia.recv_cq = c->cq;
  ia.srq = c->srq;
  ia.cap.max_send_wr = PERF_QP_SEND_WR;
  ia.cap.max_recv_wr = PERF_QP_RECV_WR;
  ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
  ia.qp_type = IBV_QPT_RC;
  c->qp = ibv_create_qp(c->pd, &ia);
  if (!c->mr || !c->qp) die("MR/QP");
}

// Private data of the REQ: magic, op, size, iters, flags (bit 0 -a, bit 1
// -e, bit 2 --sr: the server offers selective repeat too, so the choice is
// the client's alone; bits 8..15: -q minus 1, 0 for one QP), then the MR
// (16 bytes). The REQs of the further connections carry PERF_MAGIC_MORE
// and their index.
#define PERF_MAGIC_MORE 0x70657271u   // "perq"
static void put_be32(uint8_t *p, uint32_t v) { for (int k = 0; k < 4; k++) p[k] = (uint8_t)(v >> (24 - 8 * k)); }
static uint32_t be32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }
static void pack_params(uint8_t *p, const struct perf_opts *o) {
  uint32_t v[5] = { PERF_MAGIC, (uint32_t)o->op, o->size, o->iters,
                    (uint32_t)(o->all | o->events << 1 | o->sr << 2 | (o->num_qps - 1) << 8) };
  for (int i = 0; i < 5; i++) put_be32(p + i * 4, v[i]);
}

static int unpack_params(const uint8_t *p, struct perf_opts *o) {
  uint32_t v[5];
  for (int i = 0; i < 5; i++) v[i] = be32(p + i * 4);
  if (v[0] != PERF_MAGIC) return -1;
  o->op = (int)v[1]; o->size = v[2]; o->iters = v[3]; o->all = (int)(v[4] & 1); o->events = (int)(v[4] >> 1 & 1);
  o->sr = (int)(v[4] >> 2 & 1);
  o->num_qps = (int)(v[4] >> 8 & 255) + 1;
  return 0;
}

static void write_all(int fd, const void *b, int n) { if (write(fd, b, n) != n) die("pipe write"); }
static void read_all(int fd, void *b, int n) {
  for (int got = 0; got < n;) {
    int k = read(fd, (char *)b + got, n - got);
    if (k <= 0) die("pipe read");
    got += k;
  }
}

static void barrier(struct perf_conn *c) {
  char b = 0;
  write_all(c->to_peer, &b, 1);
  read_all(c->from_peer, &b, 1);
}

static void connect_loopback(struct perf_conn *c, struct perf_opts *o) {
  int p2c[2], c2p[2];
  if (pipe(p2c) < 0 || pipe(c2p) < 0) die("pipe");
  int pid = fork();
  if (pid < 0) die("fork");
  c->is_server = pid == 0;
  c->to_peer = c->is_server ? c2p[1] : p2c[1];
  c->from_peer = c->is_server ? p2c[0] : c2p[0];
  close(c->is_server ? c2p[0] : p2c[0]);
  close(c->is_server ? p2c[1] : c2p[1]);
  resources(c, o);
  struct ibv_port_attr pa;
  ibv_query_port(c->ctx, 1, &pa);
  struct rdma_peer me = { .qpn = c->qp->qp_num, .psn = rdmau_psn(),
                          .ipv4 = rdmau_local_ipv4(c->ctx), .addr = (uint64_t)c->buf,
                          .rkey = c->mr->rkey, .len = c->buf_len }, peer;
  write_all(c->to_peer, &me, sizeof me);
  read_all(c->from_peer, &peer, sizeof peer);
  c->raddr = peer.addr;
  c->rkey = peer.rkey;
  if (rdmau_connect(c->qp, &peer, me.psn, pa.active_mtu, c->access, 7, 14)) die("connect (loopback)");
  for (int i = 0; i < PERF_RECV_AHEAD; i++) perf_post_ahead(c);
  perf_post_run_recvs(c, o, c->buf_len);
  barrier(c);                      // both sides' receives posted before the first SEND
}

// The transport settings of the options (rdma_cm.h's project extension).
void perf_set_transport(struct rdma_cm_id *id, struct perf_opts *o) {
  struct rdmax_transport xt = { .sr = (uint8_t)o->sr, .max_inflight = o->inflight,
                                .min_rto_us = o->min_rto_us };
  if (rdma_set_option(id, RDMAX_OPTION_XV6, RDMAX_OPTION_TRANSPORT, &xt, sizeof xt)) die("set_option");
}

// The QP to INIT (the CM takes it on from there) and its receives posted
// ahead, before the connection exists: the peer's first SEND can
// then never meet an empty receive queue.
void perf_qp_init(struct perf_conn *c) {
  struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qp_access_flags = c->access };
  if (ibv_modify_qp(c->qp, &a, RDMAU_MASK_INIT)) die("QP to INIT");
}

static void init_and_post_ahead(struct perf_conn *c) {
  perf_qp_init(c);
  for (int i = 0; i < PERF_RECV_AHEAD; i++) perf_post_ahead(c);
}

// -R: perftest's exchange over a comm connection of its own
// (perftest_cm.c); the test QP carries nothing else, so no receives ahead.
static void connect_perftest(struct perf_conn *c, struct perf_opts *o) {
  c->is_server = o->server_ip == 0;
  resources(c, o);
  perf_qp_init(c);
  perf_r_connect(c, o);
}

static void connect_cm(struct perf_conn *c, struct perf_opts *o) {
  uint8_t pd[RDMA_CM_PRIVATE_MAX];
  c->is_server = o->server_ip == 0;
  if (c->is_server) {
    struct rdma_cm_id *lid;
    if (rdmau_cm_listen(&lid, o->port)) rdmau_cm_die(prog, "listen on", 0, o->port, NULL, errno);
    printf("waiting for a client on port %d\n", o->port);
    if (rdma_get_request(lid, &c->id)) die("no request");
    const struct rdma_conn_param *req = &c->id->event->param.conn;
    const uint8_t *in = req->private_data;
    if (req->private_data_len < 36 || unpack_params(in, o) < 0) {
      rdma_reject(c->id, NULL, 0);
      die("bad parameters");
    }
    rdmax_unpack_mr(in + 20, &c->raddr, &c->rkey, &c->buf_len);
    c->peer_ip = ntohl(((struct sockaddr_in *)rdma_get_peer_addr(c->id))->sin_addr.s_addr);
    resources(c, o);
    init_and_post_ahead(c);
    perf_post_run_recvs(c, o, c->buf_len);
    c->id->qp = c->qp;
    rdmax_pack_mr(pd, (uint64_t)c->buf, c->mr->rkey, c->buf_len);
    perf_set_transport(c->id, o);
    struct rdma_conn_param p = { .private_data = pd, .private_data_len = 16 };
    perf_conn_depth(c, o, &p);
    if (rdma_accept(c->id, &p)) die("accept");
    if (o->num_qps > 1) c->lid = lid;     // its channel carries the further connections
    else rdma_destroy_id(lid);
  } else {
    c->peer_ip = o->server_ip;
    resources(c, o);
    init_and_post_ahead(c);
    if (rdmau_cm_resolve(&c->id, o->server_ip, o->port)) rdmau_cm_die(prog, "connect to", o->server_ip, o->port, NULL, errno);
    c->id->qp = c->qp;
    pack_params(pd, o);
    rdmax_pack_mr(pd + 20, (uint64_t)c->buf, c->mr->rkey, c->buf_len);
    perf_set_transport(c->id, o);
    struct rdma_conn_param p = { .private_data = pd, .private_data_len = 36 };
    perf_conn_depth(c, o, &p);
    if (rdma_connect(c->id, &p)) rdmau_cm_die(prog, "connect to", o->server_ip, o->port, c->id, errno);
    uint32_t len;
    rdmax_unpack_mr(c->id->event->param.conn.private_data, &c->raddr, &c->rkey, &len);
  }
}

// The next event of channel ch within 30 s, for id (any id if NULL) and
// of type want; exits otherwise. The caller acknowledges it.
static struct rdma_cm_event *cm_expect(struct rdma_event_channel *ch, struct rdma_cm_id *id, int want) {
  struct rdma_cm_event *e;
  if (rdmax_get_cm_event_timeout(ch, &e, 30000) < 0) die("CM: no event in 30 s");
  if ((id && e->id != id) || (int)e->event != want) {
    printf("%s: CM: %s (status %d), waiting for %s\n", prog, rdma_event_str(e->event), e->status,
           rdma_event_str((enum rdma_cm_event_type)want));
    exit(1);
  }
  return e;
}

// One of the further QPs (-q): in INIT on the shared CQ. The client's
// have room for the whole -d window (rdma_bw keeps -d in flight over all
// QPs); the server's only take WRITEs and READs.
static struct ibv_qp *more_qp(struct perf_conn *c, const struct perf_opts *o) {
  struct ibv_qp_init_attr ia = { .send_cq = c->cq, .recv_cq = c->cq, .qp_type = IBV_QPT_RC, .srq = c->srq,
    .cap = { .max_send_wr = c->is_server ? 1 : (uint32_t)o->tx_depth, .max_recv_wr = 1,
             .max_send_sge = 1, .max_recv_sge = 1 } };
  struct ibv_qp *qp = ibv_create_qp(c->pd, &ia);
  struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qp_access_flags = c->access };
  if (!qp || ibv_modify_qp(qp, &a, RDMAU_MASK_INIT)) die("-q: no QP left");
  return qp;
}

// Client: connections 1..num_qps-1 to the server, one at a time, their
// ids on one event channel (one socket for all of them).
static void connect_more(struct perf_conn *c, struct perf_opts *o) {
  struct sockaddr_in sin;
  rdmax_sockaddr(&sin, o->server_ip, (uint16_t)o->port);
  if (!(c->ech = rdma_create_event_channel())) die("event channel");
  for (int i = 1; i < o->num_qps; i++) {
    struct rdma_cm_id *id;
    if (rdma_create_id(c->ech, &id, NULL, RDMA_PS_TCP)) die("-q: create_id");
    c->ids[i] = id;
    if (rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin, RDMAU_RESOLVE_MS))
      rdmau_cm_die(prog, "-q: connect to", o->server_ip, o->port, NULL, errno);
    rdma_ack_cm_event(cm_expect(c->ech, id, RDMA_CM_EVENT_ADDR_RESOLVED));
    if (rdma_resolve_route(id, RDMAU_RESOLVE_MS)) die("-q: resolve_route");
    rdma_ack_cm_event(cm_expect(c->ech, id, RDMA_CM_EVENT_ROUTE_RESOLVED));
    id->qp = c->qps[i] = more_qp(c, o);
    perf_set_transport(id, o);
    uint8_t pd[8];
    put_be32(pd, PERF_MAGIC_MORE);
    put_be32(pd + 4, (uint32_t)i);
    struct rdma_conn_param p = { .private_data = pd, .private_data_len = 8 };
    perf_conn_depth(c, o, &p);
    if (rdma_connect(id, &p)) rdmau_cm_die(prog, "-q: connect to", o->server_ip, o->port, id, errno);
    rdma_ack_cm_event(cm_expect(c->ech, id, RDMA_CM_EVENT_ESTABLISHED));
    c->nqp = i + 1;
  }
}

// Server: the client's connections 1..num_qps-1, on the listener's channel.
static void accept_more(struct perf_conn *c, struct perf_opts *o) {
  for (int i = 1; i < o->num_qps; i++) {
    struct rdma_cm_event *e = cm_expect(c->lid->channel, NULL, RDMA_CM_EVENT_CONNECT_REQUEST);
    const uint8_t *in = e->param.conn.private_data;
    struct rdma_cm_id *id = e->id;
    int ok = e->param.conn.private_data_len >= 8 && be32(in) == PERF_MAGIC_MORE && be32(in + 4) == (uint32_t)i;
    rdma_ack_cm_event(e);
    if (!ok) { rdma_reject(id, NULL, 0); die("-q: a REQ that is not the next connection"); }
    c->ids[i] = id;
    id->qp = c->qps[i] = more_qp(c, o);
    perf_set_transport(id, o);
    struct rdma_conn_param p = { 0 };
    perf_conn_depth(c, o, &p);
    if (rdma_accept(id, &p)) die("-q: accept");
    rdma_ack_cm_event(cm_expect(c->lid->channel, id, RDMA_CM_EVENT_ESTABLISHED));
    c->nqp = i + 1;
  }
}

// The further connections' end, after QP 0's: the client sends every
// DREQ, then both sides take the DISCONNECTED events (the server's DREPs
// answer as its channel is read); neither waits more than 10 s.
static void close_more(struct perf_conn *c) {
  struct rdma_event_channel *ch = c->is_server ? (c->lid ? c->lid->channel : NULL) : c->ech;
  int left = c->nqp - 1;
  if (!c->is_server)
    for (int i = 1; i < c->nqp; i++) rdma_disconnect(c->ids[i]);
  uint64 end = clock_ns() + 10000000000ULL;
  struct rdma_cm_event *e;
  while (ch && left > 0 && clock_ns() < end && rdmax_get_cm_event_timeout(ch, &e, 1000) == 0) {
    left -= e->event == RDMA_CM_EVENT_DISCONNECTED;
    rdma_ack_cm_event(e);
  }
  for (int i = 1; i < c->nqp; i++) {
    rdma_destroy_id(c->ids[i]);
    ibv_destroy_qp(c->qps[i]);
  }
  if (c->lid) rdma_destroy_id(c->lid);
  if (c->ech) rdma_destroy_event_channel(c->ech);
}

// n QPs of this process, connected in pairs over loopback (an odd last one
// to itself) and left idle: they cost the engine whatever idle QPs cost.
void perf_idle_qps(struct perf_conn *c, int n) {
  static struct ibv_qp *qp[PERF_MAX_IDLE_QPS];
  static uint32_t psn[PERF_MAX_IDLE_QPS];
  struct ibv_cq *cq = ibv_create_cq(c->ctx, 4, NULL, NULL, 0);
  struct ibv_port_attr pa;
  if (!cq) die("idle QPs: CQ");
  ibv_query_port(c->ctx, 1, &pa);
  struct ibv_qp_init_attr ia = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
    .cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 } };
  for (int i = 0; i < n; i++) {
    qp[i] = ibv_create_qp(c->pd, &ia);
    if (!qp[i]) die("idle QPs: no QP left");
    psn[i] = rdmau_psn();
  }
  for (int i = 0; i < n; i++) {
    int j = (i ^ 1) < n ? i ^ 1 : i;
    struct rdma_peer peer = { .qpn = qp[j]->qp_num, .psn = psn[j], .ipv4 = rdmau_local_ipv4(c->ctx) };
    if (rdmau_connect(qp[i], &peer, psn[i], pa.active_mtu, IBV_ACCESS_LOCAL_WRITE, 7, 14))
      die("idle QPs: connect");
  }
}

int perf_connect(struct perf_conn *c, struct perf_opts *o) {
  memset(c, 0, sizeof *c);
  c->to_peer = c->from_peer = -1;
  if (o->loopback) connect_loopback(c, o);
  else if (o->perftest) connect_perftest(c, o);
  else connect_cm(c, o);
  c->nqp = 1;
  c->qps[0] = c->qp;
  c->ids[0] = c->id;
  if (o->perftest) return 0;         // perftest's peers have no sync of ours
  if (o->num_qps > 1 && c->is_server) accept_more(c, o);
  else if (o->num_qps > 1) connect_more(c, o);
  perf_sync(c);
  return 0;
}

// A SEND each way. The client speaks first and the server answers once
// the client's SEND has arrived. Each side keeps PERF_RECV_AHEAD receives
// posted ahead of the peer's SENDs, as perftest's ib_send_lat keeps its
// receives posted: the receive a SEND consumes is replaced at once, and
// the second one takes a SEND that comes before the replacement (the
// server's BYE right after the last answer), so no SEND meets an empty
// receive queue. The server does not wait for its answer's completion:
// the client holds that ACK until its own next request ([RESP-ACK-5]), so
// the completion comes only after the client's next message, which the
// server must not take for this sync's. The completion (wr_id
// PERF_WR_SYNC) is left for whatever polls next, which skips it.
// The peer's sync SEND took a receive: replace it; the server answers.
static int sync_recv_taken(struct perf_conn *c, struct ibv_send_wr *sw) {
  struct ibv_send_wr *bad;
  perf_post_ahead(c);
  if (c->is_server && ibv_post_send(c->qp, sw, &bad)) die("sync post_send");
  return 1;
}

void perf_sync(struct perf_conn *c) {
  if (c->r) return;                // -R: perftest's peers sync only at the end (perf_r_close)
  struct ibv_wc wc;
  struct ibv_send_wr sw = { .wr_id = PERF_WR_SYNC, .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *sbad;
  int got_recv = 0, got_send = c->is_server;
  if (!c->is_server && ibv_post_send(c->qp, &sw, &sbad)) die("sync post_send");
  if (c->early_recvs > 0) {        // the peer's sync SEND, taken by the tool's own polling
    c->early_recvs--;
    got_recv = sync_recv_taken(c, &sw);
  }
  while (!got_recv || !got_send) {
    int n = rdmau_wait(c->cq, &wc, 60000);
    if (n != 1) perf_fail_stall(c, "completion of the sync exchange", 60);
    if (wc.status != IBV_WC_SUCCESS) perf_fail_wc(c, wc.wr_id == PERF_WR_SYNC ? "sync SEND" : "sync receive", &wc);
    if (wc.opcode == IBV_WC_RECV && got_recv) {
      // The client's own SYNC is still unacknowledged (its ACK was lost)
      // and the server's next SEND, its BYE, came too: it is kept for
      // perf_bye, which would otherwise wait for a SEND already taken.
      perf_post_ahead(c);
      c->early_recvs++;
    } else if (wc.opcode == IBV_WC_RECV) {
      got_recv = sync_recv_taken(c, &sw);
    } else if (wc.wr_id == PERF_WR_SYNC) {
      got_send = 1;
    }
  }
}

uint8_t *perf_send_area(const struct perf_conn *c, uint32_t size) { return c->buf + c->buf_len - size; }

void perf_post_recv(struct perf_conn *c, struct ibv_recv_wr *wr) {
  struct ibv_recv_wr *bad;
  int r = c->srq ? ibv_post_srq_recv(c->srq, wr, &bad) : ibv_post_recv(c->qp, wr, &bad);
  if (r) die(c->srq ? "post_srq_recv" : "post_recv");
}

// n receives of len bytes at the buffer's start, in lists of up to
// PERF_RECV_LIST: one ibv_post_recv and one doorbell each.
void perf_post_recvs(struct perf_conn *c, uint32_t n, uint32_t len) {
  struct ibv_sge sge = { (uint64_t)c->buf, len, c->mr->lkey };
  struct ibv_recv_wr wr[PERF_RECV_LIST];
  while (n > 0) {
    uint32_t k = n < PERF_RECV_LIST ? n : PERF_RECV_LIST;
    for (uint32_t i = 0; i < k; i++)
      wr[i] = (struct ibv_recv_wr){ .sg_list = &sge, .num_sge = 1, .next = i + 1 < k ? &wr[i + 1] : NULL };
    perf_post_recv(c, wr);
    n -= k;
  }
}

// The bandwidth SEND server: a run's first receives (up to
// PERF_SEND_RECVS, counting those already in c->preposted) go in before
// the sync that lets the client start it (the connection's, the one that
// ends the size before, or perftest's with -R: perftest_cm.c), as
// perftest's server posts its receives before its barrier. Else the
// client's first SENDs could meet an empty receive queue: an RNR NAK, the
// sender's RNR wait, and go-back-N resending all it sent behind it. len:
// rdma_bw's own exchange takes the whole buffer, so the two receives a
// size of -a leaves posted fit the next size.
void perf_post_run_recvs(struct perf_conn *c, const struct perf_opts *o, uint32_t len) {
  if (!c->is_server || o->op != PERF_SEND || o->latency) return;
  uint32_t want = o->iters < PERF_SEND_RECVS ? o->iters : PERF_SEND_RECVS;
  if ((uint32_t)c->preposted < want) perf_post_recvs(c, want - (uint32_t)c->preposted, len);
  if ((uint32_t)c->preposted < want) c->preposted = (int)want;
}

void perf_post_ahead(struct perf_conn *c) {
  struct ibv_sge sge = { (uint64_t)c->buf, c->buf_len, c->mr->lkey };
  struct ibv_recv_wr wr = { .wr_id = PERF_WR_AHEAD, .sg_list = &sge, .num_sge = 1 };
  perf_post_recv(c, &wr);
}

// Frames the NIC dropped on receive: its ring was full (rx_missed) or the
// driver had no buffer to refill it with (rx_no_buf).
static void nic_drops(struct perf_cpu *s) {
  const char *text = netstat_text();
  s->nic_missed = netstat_value(text, "dev_rx_missed");
  s->nic_no_buf = netstat_value(text, "dev_rx_no_buf");
  s->nic_doorbells = netstat_value(text, "dev_tx_doorbells");
  s->nic_interrupts = netstat_value(text, "dev_interrupts");
}

void perf_cpu_sample(struct perf_cpu *s) {
  struct sysinfo si;
  struct rdma_dev_stats d;
  memset(s, 0, sizeof *s);
  if (sysinfo(&si) < 0 || rdma_dev_stats(&d) < 0) return;
  s->now_ns = si.now_ns;
  s->idle_ns = si.idle_ns;
  s->lock_parks = si.lock_parks;
  s->ncpu = (int)si.ncpu;
  s->frames = d.tx_frames + d.rx_frames;
  nic_drops(s);
}

void perf_cpu_print(const struct perf_cpu *a, const struct perf_cpu *b) {
  uint64 wall = b->now_ns - a->now_ns, idle = b->idle_ns - a->idle_ns;
  uint64 busy = (uint64)b->ncpu * wall > idle ? (uint64)b->ncpu * wall - idle : 0;
  uint64 frames = b->frames - a->frames;
  uint64 ns_per_frame = frames ? busy / frames : 0;
  printf("cpu: busy %lu us of %d x %lu us, %lu frames (tx+rx), %lu.%03lu us/frame, %lu lock waits parked\n",
         busy / 1000, b->ncpu, wall / 1000, frames, ns_per_frame / 1000, ns_per_frame % 1000,
         b->lock_parks - a->lock_parks);
  printf("nic: rx_missed %lu rx_no_buf %lu (frames this guest's NIC dropped during the run), "
         "%lu transmit doorbells, %lu interrupts\n",
         b->nic_missed - a->nic_missed, b->nic_no_buf - a->nic_no_buf,
         b->nic_doorbells - a->nic_doorbells, b->nic_interrupts - a->nic_interrupts);
}

// "(peer a.b.c.d)" or "(loopback)".
static const char *peer_str(const struct perf_conn *c) {
  static char b[32];
  if (c->to_peer >= 0) return "(loopback)";
  snprintf(b, sizeof b, "(peer %s)", inet_ntoa((struct in_addr){ htonl(c->peer_ip) }));
  return b;
}

void perf_fail_stall(const struct perf_conn *c, const char *what, int secs) {
  printf("%s: no %s within %d s %s\n", prog, what, secs, peer_str(c));
  perf_dump_qp(c);
  exit(1);
}

void perf_fail_wc(const struct perf_conn *c, const char *what, const struct ibv_wc *wc) {
  printf("%s: %s %s", prog, what, peer_str(c));
  printf(": %s (wr_id 0x%lx, vendor_err 0x%x)\n", ibv_wc_status_str(wc->status), wc->wr_id, wc->vendor_err);
  perf_dump_qp(c);
  exit(1);
}

void perf_dump_qp(const struct perf_conn *c) {
  struct rdma_qp_stats s;
  if (!c->qp || rdma_qp_stats((int)c->qp->handle, &s) != 0) return;
  printf("perf: qp 0x%x state %d tx %lu rx %lu retx %lu tmo %lu rnr_tmo %lu naks tx %lu rx %lu rnr tx %lu rx %lu "
         "dup %lu oos %lu oow %lu dropped %lu errs %lu flushed %lu probes %lu window %u cuts %lu late %lu\n",
         s.qp_num, s.state, s.tx_frames, s.rx_frames, s.tx_retransmits, s.timeouts, s.rnr_timeouts,
         s.tx_nak, s.rx_nak, s.tx_rnr_nak, s.rx_rnr_nak, s.rx_dup, s.rx_out_of_seq, s.rx_out_of_window,
         s.rx_dropped, s.error_completions, s.flushed, s.early_probes, s.max_inflight, s.window_cuts,
         s.late_probes);
}

// Up to max completions, at least one unless timeout_ms passes (then 0);
// < 0 on a poll error.
// With a completion channel (-e) the process sleeps between completions
// (arm, poll once more to close the race, then wait for the event) instead
// of spinning on the CQ.
int perf_poll(struct perf_conn *c, struct ibv_wc *wc, int max, int timeout_ms) {
  uint64 end = clock_ns() + (uint64)timeout_ms * 1000000ULL;
  for (;;) {
    int n = ibv_poll_cq(c->cq, max, wc);
    if (n != 0) return n;
    if (clock_ns() > end) return 0;
    if (!c->chan) continue;
    if (ibv_req_notify_cq(c->cq, 0)) return -1;
    if ((n = ibv_poll_cq(c->cq, max, wc)) != 0) return n;
    struct ibv_cq *ev_cq;
    void *ev_ctx;
    if (ibv_get_cq_event(c->chan, &ev_cq, &ev_ctx)) return -1;
    ibv_ack_cq_events(ev_cq, 1);
  }
}

// The end of a connection: the server SENDs BYE and waits for the
// client's DREQ; the client disconnects only with BYE in hand. BYE lands in
// a receive the client keeps posted ahead. The client's ACK of the server's
// last SEND (the last perf_sync's answer) is out by then or goes as its
// QP's parting ACK ([RESP-ACK-6]), so leaving RTS flushes none of the
// server's SENDs ([IBCM-STATE-8]). BYE's own completion is not waited for:
// its ACK may be lost and the disconnect flushes it.
static void perf_bye(struct perf_conn *c) {
  struct ibv_wc wc;
  struct ibv_send_wr sw = { .wr_id = PERF_WR_BYE, .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *sbad;
  if (c->is_server) {
    if (ibv_post_send(c->qp, &sw, &sbad)) die("bye post_send");
    return;
  }
  if (c->early_recvs > 0) {          // BYE came while perf_sync waited for its SYNC's ACK
    c->early_recvs--;
    return;
  }
  do {
    if (rdmau_wait(c->cq, &wc, 60000) != 1) perf_fail_stall(c, "BYE from the server", 60);
    if (wc.status != IBV_WC_SUCCESS) perf_fail_wc(c, "receive of the server's BYE", &wc);
  } while (wc.opcode != IBV_WC_RECV);
}

void perf_close(struct perf_conn *c) {
  if (c->r) perf_r_close(c);
  if (c->id) {
    perf_bye(c);
    if (c->is_server && rdmau_cm_wait_disconnect(c->id, 10000) != 0) {
      printf("perf: bye: no disconnect from the client in 10 s\n");
      perf_dump_qp(c);
    }
    else rdma_disconnect(c->id);
    rdma_destroy_id(c->id);
    close_more(c);
  }
  ibv_destroy_qp(c->qp);
  if (c->srq) ibv_destroy_srq(c->srq);
  ibv_dereg_mr(c->mr);
  ibv_destroy_cq(c->cq);
  if (c->chan) ibv_destroy_comp_channel(c->chan);
  ibv_dealloc_pd(c->pd);
  if (c->to_peer >= 0) { close(c->to_peer); close(c->from_peer); }
  if (c->is_server && c->to_peer >= 0) exit(0);      // the loopback child ends here
  if (!c->is_server && c->to_peer >= 0) wait(NULL);
}

static void sort_u64(uint64 *v, int n) {          // shell sort: no recursion, no libc qsort
  for (int gap = n / 2; gap > 0; gap /= 2)
    for (int i = gap; i < n; i++)
      for (int j = i; j >= gap && v[j - gap] > v[j]; j -= gap) { uint64 t = v[j]; v[j] = v[j - gap]; v[j - gap] = t; }
}

static uint64 isqrt(uint64 x) {
  uint64 r = 0, b = 1ULL << 62;
  while (b > x) b >>= 2;
  while (b) { if (x >= r + b) { x -= r + b; r = (r >> 1) + b; } else r >>= 1; b >>= 2; }
  return r;
}

void perf_stats(uint64 *v, int n, struct perf_stats *s) {
  memset(s, 0, sizeof *s);
  if (n <= 0) return;
  sort_u64(v, n);
  uint64 sum = 0;
  for (int i = 0; i < n; i++) sum += v[i];
  s->min = v[0];
  s->max = v[n - 1];
  s->median = v[n / 2];
  s->avg = sum / n;
  uint64 var = 0;
  for (int i = 0; i < n; i++) { uint64 d = v[i] > s->avg ? v[i] - s->avg : s->avg - v[i]; var += d * d / n; }
  s->stdev = isqrt(var);
  s->p99 = v[(int)((uint64)n * 99 / 100 < (uint64)n ? (uint64)n * 99 / 100 : (uint64)n - 1)];
  s->p999 = v[(int)((uint64)n * 999 / 1000 < (uint64)n ? (uint64)n * 999 / 1000 : (uint64)n - 1)];
}

void perf_print_fixed(uint64 x100, int width) {
  char b[32];
  snprintf(b, sizeof b, "%lu.%02lu", x100 / 100, x100 % 100);
  int pad = width - (int)strlen(b);
  while (pad-- > 0) printf(" ");
  printf("%s", b);
}
