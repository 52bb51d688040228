// rdmasoak: the guest side of the soak (tests/soak/run_soak.py, make soak):
// long runs of every RC operation over many connections, every byte checked
// end to end.
//
//   rdmasoak server [-p port] [-i idle_s]
//       Accepts any number of connections (at most SOAK_MAX_CONN at once) on
//       one event channel and serves them all from one loop. Each connection
//       gets its own PD, CQ, QP and a SOAK_REGION-byte region filled from a
//       seed; the accept's private data carries the region (rdmax_pack_mr)
//       and the seed. SENDs and WRITE_WITH_IMMs are checked here byte by byte
//       against the pattern their header names and answered with a SEND of
//       the FNV-1a sum of what arrived. A connection with no completion for
//       idle_s seconds (its client was killed) is closed and freed.
//   rdmasoak client -t seconds [-s seed] [-q conns] [-p port] ip...
//       Keeps `conns` connections open (to the servers round-robin) for
//       `seconds`, running a seeded random mix of WRITE (then a READ of the
//       same bytes), READ, WRITE_WITH_IMM and SEND of 1 byte to 64 KiB; each
//       connection ends after a random number of operations with
//       rdma_disconnect and is opened again. The client keeps a mirror of
//       each server region: every READ is compared with it, every SEND and
//       WRITE_WITH_IMM with the server's sum. A connection that errors out
//       (its server killed, an outage longer than the retries) is counted
//       and opened again; a byte that differs is fatal.
//
//   rdmasoak stat
//       One line of the counters a soak compares before and after: free
//       pages and processes (sysinfo), the RDMA objects alive and the free
//       ring-pool pages (rdma_dev_stats), the free netbufs (netstat).
//
// Lines (the driver reads them) start "rdmasoak[pid]: ": "server listening
// on port N", "progress ops N bytes N conns N errors N" every SOAK_REPORT_S,
// "client done ops N bytes N conns N errors N", "client: OK", and on a
// difference "VERIFY FAILED ..." and exit status 2.
#include "user.h"
#include "ibverbs.h"
#include "rdma_cm.h"
#include "rdma_util.h"
#include "rdma_cm_util.h"
#include "rdma_sys.h"

#define SOAK_REGION    (128 * 1024)   // each connection's server region
#define SOAK_MAX_RDMA  (64 * 1024)    // longest WRITE / READ / WRITE_WITH_IMM
#define SOAK_MAX_MSG   (16 * 1024)    // longest SEND (the server's receive buffers)
#define SOAK_RECVS     4              // receives a server connection keeps posted
#define SOAK_REPLIES   4              // answers a server connection may have in flight (max_send_wr)
#define SOAK_MAX_CONN  32             // server connections at once
#define SOAK_MAX_QCONN 4              // client connections at once (each a synchronous id: an fd)
#define SOAK_OP_MS     30000          // an operation with no completion by then failed
#define SOAK_REPORT_S  10             // progress line period
#define SOAK_IMM_UNIT  64             // WRITE_WITH_IMM offsets: imm * SOAK_IMM_UNIT
#define SOAK_MAGIC     0x50a4c0deu
#define SOAK_PDATA     20             // private data: the region (16 bytes) and its seed
#define SOAK_BIND_TRIES 50            // a server tries to bind and listen every SOAK_BIND_TICKS ticks, this often
#define SOAK_BIND_TICKS 20

struct soak_hdr { uint32_t magic, seq, seed, len; };      // first bytes of a SEND / WRITE_WITH_IMM
struct soak_reply { uint32_t magic, seq, status, sum; };  // the server's answer
enum { REPLY_OK = 1, REPLY_BAD = 2 };

static const char *port_arg = "18600";

// ---- shared: the pattern, sums, failure ----

// One line "rdmasoak[pid]: ..." in one write, so the lines of several
// processes on one console never mix.
static void say(const char *fmt, ...) {
  char line[256];
  va_list ap;
  int n = snprintf(line, sizeof line, "rdmasoak[%d]: ", getpid());
  va_start(ap, fmt);
  n += vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
  va_end(ap);
  write(1, line, n < (int)sizeof line ? n : (int)sizeof line - 1);
}

// n bytes of the stream seed names (xorshift32), so both ends can make them.
static void fill(uint8_t *b, uint32_t n, uint32_t seed) {
  uint32_t x = seed * 2654435761u | 1;
  for (uint32_t i = 0; i < n; i++) {
    if (i % 4 == 0) { x ^= x << 13; x ^= x >> 17; x ^= x << 5; }
    b[i] = (uint8_t)(x >> (8 * (i % 4)));
  }
}

static uint32_t fnv(const uint8_t *b, uint32_t n) {
  uint32_t h = 2166136261u;
  for (uint32_t i = 0; i < n; i++) h = (h ^ b[i]) * 16777619u;
  return h;
}

// Does b hold a header and the pattern it names, len bytes in all? On a
// difference prints where (what) and returns 0.
static int check_msg(const uint8_t *b, uint32_t len, const char *what) {
  static uint8_t want[SOAK_MAX_RDMA];
  struct soak_hdr h;
  if (len < sizeof h) { say("VERIFY FAILED %s: %d bytes, no header\n", what, (int)len); return 0; }
  memcpy(&h, b, sizeof h);
  if (h.magic != SOAK_MAGIC || h.len != len) {
    say("VERIFY FAILED %s: header magic %x len %d, %d bytes arrived\n", what, h.magic, (int)h.len,
           (int)len);
    return 0;
  }
  fill(want, len - sizeof h, h.seed);
  for (uint32_t i = 0; i < len - sizeof h; i++)
    if (want[i] != b[sizeof h + i]) {
      say("VERIFY FAILED %s seq %d: byte %d of %d is %x, sent %x\n", what, (int)h.seq,
             (int)(sizeof h + i), (int)len, b[sizeof h + i], want[i]);
      return 0;
    }
  return 1;
}

static void die(const char *what) {
  say("%s failed (errno %d)\n", what, errno);
  exit(1);
}

// ---- server ----

struct sconn {
  struct rdma_cm_id *id;           // NULL: free slot
  struct ibv_pd *pd;
  struct ibv_cq *cq;
  struct ibv_mr *region_mr, *msg_mr;
  uint8_t *region;
  uint8_t *msgs;                   // SOAK_RECVS receive buffers, then SOAK_REPLIES answers
  int next_reply;
  uint64_t last_ns;                // last completion (or the accept)
};

static struct sconn sconns[SOAK_MAX_CONN];
static struct ibv_comp_channel *scomp;
static uint64_t s_ops, s_bytes, s_conns, s_closed;

static uint8_t *recv_buf(struct sconn *c, int i) { return c->msgs + (uint32_t)i * SOAK_MAX_MSG; }

static struct soak_reply *reply_buf(struct sconn *c, int i) {
  return (struct soak_reply *)(c->msgs + SOAK_RECVS * SOAK_MAX_MSG) + i;
}

static int post_recv(struct sconn *c, int i) {
  struct ibv_sge sge = { (uint64_t)recv_buf(c, i), SOAK_MAX_MSG, c->msg_mr->lkey };
  struct ibv_recv_wr wr = { .wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1 }, *bad;
  return ibv_post_recv(c->id->qp, &wr, &bad);
}

// Frees everything connection c holds; its slot becomes free.
static void sconn_close(struct sconn *c, const char *why) {
  if (why) say("server closes a connection: %s\n", why);
  rdma_disconnect(c->id);          // a DREQ if still connected; the id goes below
  rdma_destroy_qp(c->id);
  if (c->region_mr) ibv_dereg_mr(c->region_mr);
  if (c->msg_mr) ibv_dereg_mr(c->msg_mr);
  if (c->cq) ibv_destroy_cq(c->cq);
  if (c->pd) ibv_dealloc_pd(c->pd);
  free(c->region);
  free(c->msgs);
  rdma_destroy_id(c->id);
  memset(c, 0, sizeof *c);
  s_closed++;
}

// The resources of a new connection; 0, or -1 with what is made freed by the caller.
static int sconn_setup(struct sconn *c, uint32_t seed) {
  c->region = malloc(SOAK_REGION);
  c->msgs = malloc(SOAK_RECVS * SOAK_MAX_MSG + SOAK_REPLIES * sizeof(struct soak_reply));
  c->pd = ibv_alloc_pd(c->id->verbs);
  c->cq = ibv_create_cq(c->id->verbs, SOAK_RECVS + SOAK_REPLIES, c, scomp, 0);
  if (!c->region || !c->msgs || !c->pd || !c->cq || ibv_req_notify_cq(c->cq, 0)) return -1;
  fill(c->region, SOAK_REGION, seed);
  struct ibv_qp_init_attr a;
  memset(&a, 0, sizeof a);
  a.send_cq = a.recv_cq = c->cq;
  a.qp_type = IBV_QPT_RC;
  a.cap.max_send_wr = SOAK_REPLIES;
  a.cap.max_recv_wr = SOAK_RECVS;
  a.cap.max_send_sge = a.cap.max_recv_sge = 1;
  if (rdma_create_qp(c->id, c->pd, &a)) return -1;
  c->region_mr = ibv_reg_mr(c->pd, c->region, SOAK_REGION,
                            IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
  c->msg_mr = ibv_reg_mr(c->pd, c->msgs, SOAK_RECVS * SOAK_MAX_MSG + SOAK_REPLIES * sizeof(struct soak_reply),
                         IBV_ACCESS_LOCAL_WRITE);
  if (!c->region_mr || !c->msg_mr) return -1;
  for (int i = 0; i < SOAK_RECVS; i++)
    if (post_recv(c, i)) return -1;
  return 0;
}

static void on_request(struct rdma_cm_id *id) {
  struct sconn *c = 0;
  for (int i = 0; i < SOAK_MAX_CONN && !c; i++)
    if (!sconns[i].id) c = &sconns[i];
  if (!c) {
    say("server full (%d connections), rejecting\n", SOAK_MAX_CONN);
    rdma_reject(id, 0, 0);
    rdma_destroy_id(id);
    return;
  }
  c->id = id;
  id->context = c;
  uint32_t seed = random_u32();
  if (sconn_setup(c, seed)) {
    say("server cannot set a connection up (errno %d)\n", errno);
    rdma_reject(id, 0, 0);
    sconn_close(c, 0);
    return;
  }
  uint8_t pd[SOAK_PDATA];
  rdmax_pack_mr(pd, (uint64_t)c->region, c->region_mr->rkey, SOAK_REGION);
  memcpy(pd + 16, &seed, 4);
  struct rdma_conn_param p;
  memset(&p, 0, sizeof p);
  p.private_data = pd;
  p.private_data_len = SOAK_PDATA;
  c->last_ns = clock_ns();
  if (rdma_accept(id, &p)) { sconn_close(c, "accept failed"); return; }
  s_conns++;
}

// Answers one SEND or WRITE_WITH_IMM that arrived as bytes b (len of them).
static int answer(struct sconn *c, const uint8_t *b, uint32_t len, const char *what) {
  struct soak_hdr h;
  int ok = check_msg(b, len, what);
  if (!ok) exit(2);                // loud and fatal: the driver sees the line and the status
  memcpy(&h, b, sizeof h);
  struct soak_reply *r = reply_buf(c, c->next_reply);
  c->next_reply = (c->next_reply + 1) % SOAK_REPLIES;
  *r = (struct soak_reply){ SOAK_MAGIC, h.seq, REPLY_OK, fnv(b, len) };
  struct ibv_sge sge = { (uint64_t)r, sizeof *r, c->msg_mr->lkey };
  struct ibv_send_wr wr = { .wr_id = 100, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
                            .send_flags = IBV_SEND_SIGNALED }, *bad;
  s_ops++;
  s_bytes += len;
  return ibv_post_send(c->id->qp, &wr, &bad);
}

// One completion of c; -1 closes the connection.
static int on_wc(struct sconn *c, const struct ibv_wc *wc) {
  if (wc->status != IBV_WC_SUCCESS) {
    say("server connection: %s\n", ibv_wc_status_str(wc->status));
    return -1;
  }
  c->last_ns = clock_ns();
  if (wc->opcode == IBV_WC_SEND) return 0;
  int i = (int)wc->wr_id;
  if (wc->opcode == IBV_WC_RECV) {
    static uint8_t copy[SOAK_MAX_MSG];
    memcpy(copy, recv_buf(c, i), wc->byte_len);
    if (post_recv(c, i)) return -1;
    return answer(c, copy, wc->byte_len, "SEND");
  }
  if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
    uint32_t off = ntohl(wc->imm_data) * SOAK_IMM_UNIT;
    if (post_recv(c, i)) return -1;
    if (off > SOAK_REGION || wc->byte_len > SOAK_REGION - off) {
      say("VERIFY FAILED WRITE_WITH_IMM: offset %d + %d bytes outside the region\n", (int)off,
             (int)wc->byte_len);
      exit(2);
    }
    return answer(c, c->region + off, wc->byte_len, "WRITE_WITH_IMM");
  }
  return 0;
}

static void serve_cqs(void) {
  struct ibv_cq *cq;
  void *ctx;
  while (ibv_get_cq_event(scomp, &cq, &ctx) == 0) {
    struct sconn *c = ctx;
    ibv_ack_cq_events(cq, 1);
    if (!c->id || c->cq != cq) continue;
    if (ibv_req_notify_cq(cq, 0)) { sconn_close(c, "req_notify failed"); continue; }
    struct ibv_wc wc;
    int n;
    while ((n = ibv_poll_cq(cq, 1, &wc)) == 1)
      if (on_wc(c, &wc)) break;
    if (n != 0) sconn_close(c, "completion error");
  }
}

static void serve_cm(struct rdma_event_channel *ch) {
  struct rdma_cm_event *ev;
  while (rdma_get_cm_event(ch, &ev) == 0) {
    struct rdma_cm_id *id = ev->id;
    enum rdma_cm_event_type type = ev->event;
    rdma_ack_cm_event(ev);
    struct sconn *c = id->context;
    if (type == RDMA_CM_EVENT_CONNECT_REQUEST) on_request(id);
    else if (c && c->id == id && type != RDMA_CM_EVENT_ESTABLISHED)
      sconn_close(c, type == RDMA_CM_EVENT_DISCONNECTED ? 0 : rdma_event_str(type));
  }
}

static void close_idle(uint64_t idle_ns) {
  uint64_t now = clock_ns();
  for (int i = 0; i < SOAK_MAX_CONN; i++)
    if (sconns[i].id && now - sconns[i].last_ns > idle_ns) sconn_close(&sconns[i], "idle (its client gone)");
}

static int live_conns(void) {
  int n = 0;
  for (int i = 0; i < SOAK_MAX_CONN; i++) n += sconns[i].id != 0;
  return n;
}

// A bind or listen that failed on try i: while the port is still in use
// (the server this one replaces holds it) wait and let the caller try
// again, up to SOAK_BIND_TRIES; any other error, or the last try, dies.
static void port_busy_wait(const char *what, int i) {
  if (errno != EADDRINUSE || i == SOAK_BIND_TRIES) die(what);
  sleep(SOAK_BIND_TICKS);
}

static void server(int idle_s) __attribute__((noreturn));
static void server(int idle_s) {
  struct rdma_addrinfo hints, *res;
  struct rdma_cm_id *lid;
  memset(&hints, 0, sizeof hints);
  hints.ai_flags = RAI_PASSIVE;
  struct rdma_event_channel *ch = rdma_create_event_channel();
  if (!ch || rdma_getaddrinfo(NULL, port_arg, &hints, &res)) die("server: channel or address");
  if (rdma_create_id(ch, &lid, NULL, RDMA_PS_TCP)) die("server: create_id");
  // The server this one replaces (killed: it exits once it next gets a
  // hart, which under load can come after this one started) may still hold
  // the port: bind and listen both retry while it is in use.
  for (int i = 0; rdma_bind_addr(lid, res->ai_src_addr); i++) port_busy_wait("server: bind", i);
  for (int i = 0; rdma_listen(lid, SOAK_MAX_CONN); i++) port_busy_wait("server: listen", i);
  rdma_freeaddrinfo(res);
  if (!(scomp = ibv_create_comp_channel(lid->verbs))) die("server: comp channel");
  fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
  fcntl(scomp->fd, F_SETFL, fcntl(scomp->fd, F_GETFL) | O_NONBLOCK);
  say("server listening on port %s\n", port_arg);
  uint64_t next_report = clock_ns() + SOAK_REPORT_S * 1000000000ull;
  for (;;) {
    // The CM library's timers run only inside its calls: poll() wakes up often.
    struct pollfd p[2] = { { ch->fd, POLLIN, 0 }, { scomp->fd, POLLIN, 0 } };
    poll(p, 2, 200);
    serve_cm(ch);
    serve_cqs();
    close_idle((uint64_t)idle_s * 1000000000ull);
    if (clock_ns() >= next_report) {
      say("server progress ops %lu bytes %lu conns %lu open %d\n", s_ops, s_bytes, s_conns,
             live_conns());
      next_report += SOAK_REPORT_S * 1000000000ull;
    }
  }
}

// ---- client ----

struct cconn {
  struct rdma_cm_id *id;           // NULL: not connected
  struct ibv_pd *pd;
  struct ibv_cq *cq;
  struct ibv_mr *mr;
  uint8_t *mem;                    // mirror of the server's region, read buffer, send buffer, replies
  uint64_t raddr;
  uint32_t rkey;
  int ops_left;                    // operations before this connection closes
  uint32_t server;                 // its server's address
};

#define C_MIRROR(c) ((c)->mem)
#define C_READ(c)   ((c)->mem + SOAK_REGION)
#define C_SEND(c)   ((c)->mem + SOAK_REGION + SOAK_MAX_RDMA)
#define C_REPLY(c)  ((struct soak_reply *)((c)->mem + SOAK_REGION + SOAK_MAX_RDMA + SOAK_MAX_MSG))
#define C_MEM       (SOAK_REGION + SOAK_MAX_RDMA + SOAK_MAX_MSG + 2 * sizeof(struct soak_reply))

static uint64_t c_ops, c_bytes, c_conns, c_errors;
static uint32_t c_seq;

static void cconn_close(struct cconn *c, int clean) {
  if (clean) rdma_disconnect(c->id);
  rdma_destroy_qp(c->id);
  if (c->mr) ibv_dereg_mr(c->mr);
  if (c->cq) ibv_destroy_cq(c->cq);
  if (c->pd) ibv_dealloc_pd(c->pd);
  rdma_destroy_id(c->id);
  free(c->mem);
  memset(c, 0, sizeof *c);
}

static int post_reply_recv(struct cconn *c, int i) {
  struct ibv_sge sge = { (uint64_t)&C_REPLY(c)[i], sizeof(struct soak_reply), c->mr->lkey };
  struct ibv_recv_wr wr = { .wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1 }, *bad;
  return ibv_post_recv(c->id->qp, &wr, &bad);
}

// Connects c to ip; 0, or -1 (nothing held).
static int cconn_open(struct cconn *c, uint32_t ip, int port) {
  memset(c, 0, sizeof *c);
  c->server = ip;
  if (rdmau_cm_resolve(&c->id, ip, port)) { c->id = 0; return -1; }
  c->mem = malloc(C_MEM);
  c->pd = ibv_alloc_pd(c->id->verbs);
  c->cq = ibv_create_cq(c->id->verbs, 8, 0, 0, 0);
  struct ibv_qp_init_attr a;
  memset(&a, 0, sizeof a);
  a.send_cq = a.recv_cq = c->cq;
  a.qp_type = IBV_QPT_RC;
  a.cap.max_send_wr = a.cap.max_recv_wr = 2;
  a.cap.max_send_sge = a.cap.max_recv_sge = 1;
  if (!c->mem || !c->pd || !c->cq || rdma_create_qp(c->id, c->pd, &a)) goto fail;
  if (!(c->mr = ibv_reg_mr(c->pd, c->mem, C_MEM, IBV_ACCESS_LOCAL_WRITE))) goto fail;
  if (post_reply_recv(c, 0) || post_reply_recv(c, 1)) goto fail;
  struct rdma_conn_param p;
  memset(&p, 0, sizeof p);
  p.retry_count = 7;
  p.rnr_retry_count = 7;
  if (rdma_connect(c->id, &p) || c->id->event->param.conn.private_data_len < SOAK_PDATA) goto fail;
  const uint8_t *pd = c->id->event->param.conn.private_data;
  uint32_t len, seed;
  rdmax_unpack_mr(pd, &c->raddr, &c->rkey, &len);
  memcpy(&seed, pd + 16, 4);
  if (len != SOAK_REGION) goto fail;
  fill(C_MIRROR(c), SOAK_REGION, seed);
  c->ops_left = 20 + rand() % 200;
  c_conns++;
  return 0;
fail:
  cconn_close(c, 0);
  return -1;
}

// n completions of c; 0, or -1 (an error or timeout: the connection is gone).
// A reply that arrives is checked against (seq, sum).
static int wait_comps(struct cconn *c, int n, uint32_t seq, uint32_t sum, const char *what) {
  for (int got = 0; got < n; got++) {
    struct ibv_wc wc;
    if (rdmau_wait(c->cq, &wc, SOAK_OP_MS) != 1) {
      say("client %s: no completion in %d ms\n", what, SOAK_OP_MS);
      return -1;
    }
    if (wc.status != IBV_WC_SUCCESS) {
      say("client %s: %s\n", what, ibv_wc_status_str(wc.status));
      return -1;
    }
    if (wc.opcode != IBV_WC_RECV) continue;
    struct soak_reply r = C_REPLY(c)[wc.wr_id];
    if (post_reply_recv(c, (int)wc.wr_id)) return -1;
    if (r.magic != SOAK_MAGIC || r.seq != seq || r.status != REPLY_OK || r.sum != sum) {
      say("VERIFY FAILED %s seq %d: server saw seq %d status %d sum %x, sent sum %x\n", what,
             (int)seq, (int)r.seq, (int)r.status, r.sum, sum);
      exit(2);
    }
  }
  return 0;
}

static int post(struct cconn *c, enum ibv_wr_opcode op, uint8_t *local, uint32_t len, uint32_t off, uint32_t imm) {
  struct ibv_sge sge = { (uint64_t)local, len, c->mr->lkey };
  struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1, .opcode = op,
                            .send_flags = IBV_SEND_SIGNALED }, *bad;
  wr.imm_data = htonl(imm);
  wr.wr.rdma.remote_addr = c->raddr + off;
  wr.wr.rdma.rkey = c->rkey;
  return ibv_post_send(c->id->qp, &wr, &bad);
}

// A length from 1 byte to max, each power of two as likely (sizes up to
// many fragments at every path MTU).
static uint32_t rand_len(uint32_t min, uint32_t max) {
  uint32_t span = 1u << (rand() % 17);
  uint32_t n = min + (uint32_t)rand() % span;
  return n > max ? max : n;
}

// Bytes [off, off + len) of the region READ back and compared with the mirror.
static int op_read(struct cconn *c, uint32_t off, uint32_t len) {
  if (post(c, IBV_WR_RDMA_READ, C_READ(c), len, off, 0) || wait_comps(c, 1, 0, 0, "READ")) return -1;
  if (memcmp(C_READ(c), C_MIRROR(c) + off, len) != 0) {
    uint32_t i = 0;
    while (C_READ(c)[i] == C_MIRROR(c)[off + i]) i++;
    say("VERIFY FAILED READ of %d bytes at %d: byte %d is %x, the region holds %x\n", (int)len,
           (int)off, (int)i, C_READ(c)[i], C_MIRROR(c)[off + i]);
    exit(2);
  }
  c_ops++;
  c_bytes += len;
  return 0;
}

// A WRITE of fresh bytes, then a READ of them (checked).
static int op_write(struct cconn *c) {
  uint32_t len = rand_len(1, SOAK_MAX_RDMA);
  uint32_t off = (uint32_t)rand() % (SOAK_REGION - len + 1);
  fill(C_MIRROR(c) + off, len, (uint32_t)rand());
  if (post(c, IBV_WR_RDMA_WRITE, C_MIRROR(c) + off, len, off, 0) || wait_comps(c, 1, 0, 0, "WRITE")) return -1;
  c_ops++;
  return op_read(c, off, len);
}

// A header and the pattern it names at b, len bytes.
static void make_msg(uint8_t *b, uint32_t len, uint32_t seq) {
  struct soak_hdr h = { SOAK_MAGIC, seq, (uint32_t)rand(), len };
  memcpy(b, &h, sizeof h);
  fill(b + sizeof h, len - sizeof h, h.seed);
}

// A WRITE_WITH_IMM (imm: its offset) or a SEND; the server's sum must match.
static int op_message(struct cconn *c, int imm) {
  uint32_t seq = ++c_seq, len, off = 0;
  uint8_t *b;
  if (imm) {
    len = rand_len(sizeof(struct soak_hdr), SOAK_MAX_RDMA);
    off = (uint32_t)rand() % ((SOAK_REGION - len) / SOAK_IMM_UNIT + 1) * SOAK_IMM_UNIT;
    b = C_MIRROR(c) + off;
  } else {
    len = rand_len(sizeof(struct soak_hdr), SOAK_MAX_MSG);
    b = C_SEND(c);
  }
  make_msg(b, len, seq);
  if (post(c, imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_SEND, b, len, off, off / SOAK_IMM_UNIT) ||
      wait_comps(c, 2, seq, fnv(b, len), imm ? "WRITE_WITH_IMM" : "SEND"))
    return -1;
  c_ops++;
  c_bytes += len;
  return 0;
}

// One random operation on c; -1: the connection failed.
static int one_op(struct cconn *c) {
  switch (rand() % 4) {
  case 0: return op_write(c);
  case 1: {
    uint32_t len = rand_len(1, SOAK_MAX_RDMA);
    return op_read(c, (uint32_t)rand() % (SOAK_REGION - len + 1), len);
  }
  case 2: return op_message(c, 1);
  default: return op_message(c, 0);
  }
}

static void client_report(const char *what) {
  say("%s ops %lu bytes %lu conns %lu errors %lu\n", what, c_ops, c_bytes, c_conns, c_errors);
}

static int client(int seconds, int nconn, int port, const uint32_t *ips, int nips) {
  static struct cconn conns[SOAK_MAX_QCONN];
  uint64_t end = clock_ns() + (uint64_t)seconds * 1000000000ull;
  uint64_t next_report = clock_ns() + SOAK_REPORT_S * 1000000000ull;
  int next_server = 0;
  while (clock_ns() < end) {
    struct cconn *c = &conns[rand() % nconn];
    if (!c->id) {
      if (cconn_open(c, ips[next_server++ % nips], port)) {
        c_errors++;
        say("client cannot connect (errno %d); again in 1 s\n", errno);
        sleep_seconds(1);          // its server may be restarting
      }
      continue;
    }
    if (one_op(c)) {
      c_errors++;
      cconn_close(c, 0);
    } else if (--c->ops_left <= 0) {
      cconn_close(c, 1);
    }
    if (clock_ns() >= next_report) {
      client_report("progress");
      next_report += SOAK_REPORT_S * 1000000000ull;
    }
  }
  for (int i = 0; i < nconn; i++)
    if (conns[i].id) cconn_close(&conns[i], 1);
  client_report("client done");
  say("client: OK\n");
  return 0;
}

static void usage(void) {
  printf("usage: rdmasoak server [-p port] [-i idle_s]\n"
         "       rdmasoak client -t seconds [-s seed] [-q conns] [-p port] ip...\n"
         "       rdmasoak stat\n");
  exit(1);
}

static int print_resources(void) {
  struct sysinfo si;
  struct rdma_dev_stats d;
  if (sysinfo(&si) < 0 || rdma_dev_stats(&d) < 0) die("stat: sysinfo or rdma_dev_stats");
  say("resources free_pages %lu procs %u pds %lu mrs %lu cqs %lu qps %lu chans %lu pool_free %lu "
      "netbufs_free %lu\n", si.freepages, si.nproc, d.live_pds, d.live_mrs, d.live_cqs, d.live_qps,
      d.live_chans, d.pool_free_pages, netstat_value(netstat_text(), "netbufs_free"));
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "stat") == 0) exit(print_resources());
  if (argc < 2) usage();
  int is_server = strcmp(argv[1], "server") == 0;
  if (!is_server && strcmp(argv[1], "client") != 0) usage();
  int seconds = 0, nconn = 1, idle_s = 30, nips = 0;
  unsigned seed = 1;
  uint32_t ips[8];
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    int has = i + 1 < argc;
    if (strcmp(a, "-p") == 0 && has) port_arg = argv[++i];
    else if (strcmp(a, "-i") == 0 && has) idle_s = atoi(argv[++i]);
    else if (strcmp(a, "-t") == 0 && has) seconds = atoi(argv[++i]);
    else if (strcmp(a, "-s") == 0 && has) seed = (unsigned)atoi(argv[++i]);
    else if (strcmp(a, "-q") == 0 && has) nconn = atoi(argv[++i]);
    else if (a[0] != '-' && nips < 8 && rdmau_parse_ipv4(a, &ips[nips]) == 0) nips++;
    else usage();
  }
  if (is_server) server(idle_s > 0 ? idle_s : 30);
  if (seconds < 1 || nips < 1 || nconn < 1 || nconn > SOAK_MAX_QCONN) usage();
  srand(seed);
  say("client seed %u for %d s\n", seed, seconds);
  exit(client(seconds, nconn, atoi(port_arg), ips, nips));
}
