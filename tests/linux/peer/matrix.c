// matrix.c: the opcode x size matrix of user/tests/rdmanet_test.c (--matrix),
// both roles, wire-compatible with it:
//   host_a (passive) exposes a buffer of 1 MiB + GUARD (8 MiB + GUARD with
//     --big) in the REP's private data (VA, R_Key, length; big-endian);
//     per case it readies the buffer (guard bytes, or the pattern for a
//     READ), posts a receive for SEND / SEND_WITH_IMM / WRITE_WITH_IMM,
//     answers READY, checks opcode, immediate, byte_len and the bytes
//     (guard included), then answers VERDICT.
//   host_b (active) drives the cases: PREP, the operation, CHECK, and for a
//     READ checks the bytes it read itself.
// Messages are 16-byte SENDs { type, op, len, round }, 32-bit little-endian
// (the xv6 tool sends its struct as is, and RISC-V is little-endian). The
// op is an index into mops[] below, the same order as the xv6 tool's.
// An atomic case (8 bytes at the buffer's start, the xv6 tool's values):
// host_a puts matrix_atomic_old(round) there; host_b's CMP_AND_SWP (compare it,
// swap in atomic_new) or FETCH_AND_ADD (atomic_add) must return it and leave
// atomic_new, the guard after the 8 bytes intact.
// Output lines are the xv6 tool's, so the test scripts parse both.
#include "peer.h"
#include "matrix_atomic.h"   // user/lib/ibverbs: the atomic cases' values, the xv6 tool's

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#define GUARD 64
#define GUARD_BYTE 0xEE
// The longest wait for one completion. rxe as the sender on the 1 % loss
// bed recovers many losses only by its retransmit timer: one 1 MiB WRITE
// took 9.3 s, and a 1 MiB WRITE_WITH_IMM outlived a 30 s wait in one run
// (xrpeer died, xv6 saw its receive flushed). 120 s covers that spread;
// the runner's whole-matrix deadline is above it.
#define WAIT_MS 120000
enum { M_PREP = 1, M_READY, M_CHECK, M_VERDICT, M_END, M_BYE };
enum { ID_MSG_RX = 1, ID_MSG_TX, ID_DATA_RX, ID_OP, ID_MAX };
enum { V_OK, V_DATA, V_GUARD, V_RECV, V_IMM, V_BAD_OP, V_ATOMIC };

static const enum ibv_wr_opcode mops[] = { IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ, IBV_WR_SEND,
                                           IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_SEND_WITH_IMM,
                                           IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD };
#define NOPS (sizeof mops / sizeof mops[0])



struct mx {
  struct pres r;
  struct pconn c;
  uint8_t *buf;
  uint32_t size;
  struct ibv_mr *mr, *msg_mr;
  uint8_t msg[3][16];                    // rx, tx, dummy (WRITE_WITH_IMM's receive)
  struct ibv_wc seen[ID_MAX];
  int seen_ok[ID_MAX];
};
struct mmsg { uint32_t type, op, len, round; };

static void die(const char *why) {
  printf("rdmanet_test: FAILED (%s)\n", why);
  fflush(stdout);
  exit(1);
}

static const char *op_name(enum ibv_wr_opcode op) {
  switch (op) {          // the names the xv6 tool prints (ibvx_wr_opcode_str)
  case IBV_WR_RDMA_WRITE: return "RDMA_WRITE";
  case IBV_WR_RDMA_WRITE_WITH_IMM: return "RDMA_WRITE_WITH_IMM";
  case IBV_WR_SEND: return "SEND";
  case IBV_WR_SEND_WITH_IMM: return "SEND_WITH_IMM";
  case IBV_WR_RDMA_READ: return "RDMA_READ";
  case IBV_WR_ATOMIC_CMP_AND_SWP: return "ATOMIC_CMP_AND_SWP";
  case IBV_WR_ATOMIC_FETCH_AND_ADD: return "ATOMIC_FETCH_AND_ADD";
  default: return "?";
  }
}

static void pattern(uint8_t *b, uint32_t n, uint32_t round) {
  for (uint32_t i = 0; i < n; i++) b[i] = (uint8_t)(round * 31 + i + (i >> 9));
}

static void put_le(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static uint32_t get_le(const uint8_t *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }

// ---- completions and messages

static struct ibv_wc *wait_for(struct mx *m, int id, const char *what) {
  while (!m->seen_ok[id]) {
    struct ibv_wc wc;
    int n = pres_poll(&m->r, &wc, 1, WAIT_MS);
    if (n != 1) die(what);
    if (wc.status != IBV_WC_SUCCESS) {
      printf("rdmanet_test: %s: %s (vendor_err 0x%x)\n", what, ibv_wc_status_str(wc.status), wc.vendor_err);
      die(what);
    }
    if (wc.wr_id >= ID_MAX) die("stray completion");
    m->seen[wc.wr_id] = wc;
    m->seen_ok[wc.wr_id] = 1;
  }
  m->seen_ok[id] = 0;
  return &m->seen[id];
}

static void post_recv(struct mx *m, struct ibv_mr *mr, void *addr, uint32_t len, uint64_t id) {
  struct ibv_sge sge = { (uintptr_t)addr, len, mr->lkey };
  struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad;
  if (ibv_post_recv(m->r.qp, &wr, &bad)) die("post_recv");
}

static void msg_recv_post(struct mx *m) { post_recv(m, m->msg_mr, m->msg[0], 16, ID_MSG_RX); }

static void msg_post(struct mx *m, uint32_t type, uint32_t op, uint32_t len, uint32_t round) {
  put_le(m->msg[1], type); put_le(m->msg[1] + 4, op); put_le(m->msg[1] + 8, len); put_le(m->msg[1] + 12, round);
  struct ibv_sge sge = { (uintptr_t)m->msg[1], 16, m->msg_mr->lkey };
  struct ibv_send_wr w = { .wr_id = ID_MSG_TX, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
                           .send_flags = IBV_SEND_SIGNALED }, *bad;
  if (ibv_post_send(m->r.qp, &w, &bad)) die("post message");
}

static void msg_send(struct mx *m, uint32_t type, uint32_t op, uint32_t len, uint32_t round) {
  msg_post(m, type, op, len, round);
  wait_for(m, ID_MSG_TX, "message send");
}

static struct mmsg msg_get(struct mx *m, const char *what) {
  wait_for(m, ID_MSG_RX, what);
  const uint8_t *p = m->msg[0];
  return (struct mmsg){ get_le(p), get_le(p + 4), get_le(p + 8), get_le(p + 12) };
}

static struct mmsg msg_wait(struct mx *m, uint32_t type) {
  struct mmsg g = msg_get(m, "message");
  if (g.type != type) die("unexpected message");
  return g;
}

// 0 if buf[0, len) holds the round's pattern and the guard after it is intact.
static int check_buf(const uint8_t *buf, uint32_t len, uint32_t round) {
  for (uint32_t i = 0; i < len; i++)
    if (buf[i] != (uint8_t)(round * 31 + i + (i >> 9))) return V_DATA;
  for (int i = 0; i < GUARD; i++)
    if (buf[len + i] != GUARD_BYTE) return V_GUARD;
  return V_OK;
}

// ---- setup

static void mx_setup(struct mx *m, struct peer_dev *d, const struct matrix_opts *o) {
  memset(m, 0, sizeof *m);
  m->size = (o->big ? 8u << 20 : 1u << 20) + GUARD;
  m->buf = calloc(1, m->size);
  if (!m->buf || pres_create(&m->r, d, 256, 64)) die("resources");
  m->mr = pres_reg(&m->r, m->buf, m->size);
  m->msg_mr = pres_reg(&m->r, m->msg, sizeof m->msg);
  if (!m->mr || !m->msg_mr) die("MRs");
  pcm_init(&m->c, d, m->r.qp);
}

static void print_connected(struct mx *m) {
  printf("rdmanet_test: connected, qpn 0x%x peer qpn 0x%x mtu %d sr 0\n", m->r.qp->qp_num, m->c.peer_qpn,
         pcm_mtu_bytes(m->c.path_mtu));
  fflush(stdout);
}

// ---- host_a

// The receive side's check of a receive completion: opcode, immediate and
// byte_len (the message's length; for WRITE_WITH_IMM the WRITE's length).
static int check_recv(const struct ibv_wc *wc, enum ibv_wr_opcode op, const struct mmsg *c) {
  int imm = op == IBV_WR_RDMA_WRITE_WITH_IMM || op == IBV_WR_SEND_WITH_IMM;
  enum ibv_wc_opcode want = op == IBV_WR_RDMA_WRITE_WITH_IMM ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;
  if (wc->opcode != want || wc->byte_len != c->len) {
    printf("matrix: receive: opcode %d byte_len %u, expected %d and %u\n", wc->opcode, wc->byte_len, want, c->len);
    return V_RECV;
  }
  if (imm != !!(wc->wc_flags & IBV_WC_WITH_IMM) || (imm && ntohl(wc->imm_data) != c->round)) return V_IMM;
  return V_OK;
}

// One case from host_a's side; returns the verdict.
static int host_a_case(struct mx *m, const struct mmsg *c) {
  if (c->op >= NOPS || c->len > m->size - GUARD) {      // still in step with host_b
    msg_recv_post(m);
    msg_send(m, M_READY, 0, 0, c->round);
    msg_wait(m, M_CHECK);
    return V_BAD_OP;
  }
  enum ibv_wr_opcode op = mops[c->op];
  if (op == IBV_WR_RDMA_READ) {
    pattern(m->buf, c->len, c->round);
    memset(m->buf + c->len, GUARD_BYTE, GUARD);
  } else if (matrix_is_atomic(op)) {
    uint64_t old = matrix_atomic_old(c->round);
    memcpy(m->buf, &old, 8);
    memset(m->buf + 8, GUARD_BYTE, GUARD);
  } else {
    memset(m->buf, GUARD_BYTE, c->len + GUARD);
  }
  int recv = op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_WRITE_WITH_IMM;
  if (op == IBV_WR_RDMA_WRITE_WITH_IMM) post_recv(m, m->msg_mr, m->msg[2], 16, ID_DATA_RX);
  else if (recv) post_recv(m, m->mr, m->buf, c->len, ID_DATA_RX);
  msg_recv_post(m);
  msg_send(m, M_READY, 0, 0, c->round);
  int verdict = recv ? check_recv(wait_for(m, ID_DATA_RX, "data"), op, c) : V_OK;
  msg_wait(m, M_CHECK);
  if (matrix_is_atomic(op)) verdict = matrix_atomic_check(m->buf, op, c->round, GUARD, GUARD_BYTE) ? V_ATOMIC : V_OK;
  else if (!verdict && op != IBV_WR_RDMA_READ) verdict = check_buf(m->buf, c->len, c->round);
  return verdict;
}

int matrix_host_a(struct peer_dev *d, const struct matrix_opts *o) {
  struct mx *m = malloc(sizeof *m);
  if (!m) die("memory");
  mx_setup(m, d, o);
  memset(m->buf, 0, m->size);
  int ls = pcm_listen(o->port);
  if (ls < 0) die("listen");
  printf("rdmanet_test: listening on port %d\n", o->port);
  fflush(stdout);
  if (pcm_get_request(ls, &m->c, 120000)) die("no connect request");
  uint8_t pd[16];
  pcm_pack_mr(pd, (uintptr_t)m->buf, m->mr->rkey, m->size);
  struct pcm_param p = { .private_data = pd, .private_len = 16, .mtu_limit = o->mtu_limit, .timeout = o->timeout };
  if (pcm_qp_init(&m->c)) die("QP to INIT");
  msg_recv_post(m);                     // before REP: host_b's PREP follows RTU at once
  if (pcm_accept(&m->c, &p)) die("accept");
  print_connected(m);
  for (;;) {
    struct mmsg c = msg_get(m, "prep");
    if (c.type != M_PREP) break;
    int v = host_a_case(m, &c);
    if (v) printf("matrix: %s %u bytes: FAILED at host_a (%d)\n", c.op < NOPS ? op_name(mops[c.op]) : "?", c.len, v);
    msg_recv_post(m);
    msg_send(m, M_VERDICT, (uint32_t)v, 0, c.round);
  }
  msg_post(m, M_BYE, 0, 0, 0);          // not waited for: host_b disconnects once it has it
  if (pcm_wait_disconnect(&m->c, 60000)) die("no DREQ");
  printf("rdmanet_test: cm_dropped 0\n");  // as rdmanet_test prints it; Linux's CM counts its own drops
  printf("rdmanet_test: OK\n");
  return 0;
}

// ---- host_b

// One case from host_b's side; 0 if both sides found every byte in place.
static int host_b_case(struct mx *m, uint64_t raddr, uint32_t rkey, uint32_t op_i, uint32_t len, uint32_t round) {
  enum ibv_wr_opcode op = mops[op_i];
  msg_recv_post(m);
  msg_send(m, M_PREP, op_i, len, round);
  msg_wait(m, M_READY);
  if (op == IBV_WR_RDMA_READ) memset(m->buf, GUARD_BYTE, len + GUARD);
  else pattern(m->buf, len, round);
  uint64_t t0 = now_ns();
  struct ibv_sge sge = { (uintptr_t)m->buf, len, m->mr->lkey };
  struct ibv_send_wr w = { .wr_id = ID_OP, .sg_list = &sge, .num_sge = 1, .opcode = op,
                           .send_flags = IBV_SEND_SIGNALED }, *bad;
  w.imm_data = htonl(round);
  w.wr.rdma.remote_addr = raddr;
  w.wr.rdma.rkey = rkey;
  if (matrix_is_atomic(op)) {
    memset(m->buf, GUARD_BYTE, 8);
    matrix_atomic_wr(&w, op, raddr, rkey, round);
  }
  if (ibv_post_send(m->r.qp, &w, &bad)) die("post operation");
  struct ibv_wc *wc = wait_for(m, ID_OP, op_name(op));
  uint64_t us = (now_ns() - t0) / 1000;
  int mine = op == IBV_WR_RDMA_READ ? check_buf(m->buf, len, round) : 0;
  if (matrix_is_atomic(op)) {
    uint64_t got;
    memcpy(&got, m->buf, 8);
    mine = got != matrix_atomic_old(round) || wc->byte_len != 8 ? V_ATOMIC : V_OK;   // the value it replaced
  }
  msg_recv_post(m);
  msg_send(m, M_CHECK, op_i, len, round);
  int theirs = (int)msg_wait(m, M_VERDICT).op;
  printf("matrix: %s %u bytes: %s (%llu us)\n", op_name(op), len, mine || theirs ? "FAILED" : "OK",
         (unsigned long long)us);
  if (mine) printf("matrix: %s data at host_b wrong (%d)\n", matrix_is_atomic(op) ? "atomic" : "READ", mine);
  fflush(stdout);
  return mine || theirs;
}

int matrix_host_b(struct peer_dev *d, uint32_t ip, const struct matrix_opts *o) {
  struct mx *m = malloc(sizeof *m);
  if (!m) die("memory");
  mx_setup(m, d, o);
  struct pcm_param p = { .mtu_limit = o->mtu_limit, .timeout = o->timeout };
  if (pcm_connect(&m->c, ip, o->port, &p)) die(m->c.state == PCM_REJECTED ? "rejected" : "connect");
  uint64_t raddr;
  uint32_t rkey, rlen;
  pcm_unpack_mr(m->c.private_data, &raddr, &rkey, &rlen);
  if (m->c.private_len < 16 || rlen != m->size) die("private data");
  print_connected(m);
  uint32_t mtu = (uint32_t)pcm_mtu_bytes(m->c.path_mtu);
  uint32_t sizes[] = { 0, 1, mtu - 1, mtu, mtu + 1, 64 << 10, 1 << 20, 8 << 20 };
  int nsizes = o->big ? 8 : 7, bad = 0, n = 0;
  for (uint32_t op = 0; op < NOPS; op++)
    for (int k = 0; k < (matrix_is_atomic(mops[op]) ? 1 : nsizes); k++) {   // an atomic: 8 bytes
      n++;
      bad += host_b_case(m, raddr, rkey, op, matrix_is_atomic(mops[op]) ? 8 : sizes[k], (uint32_t)n);
    }
  msg_recv_post(m);
  msg_send(m, M_END, 0, 0, 0);
  msg_wait(m, M_BYE);                   // host_a has every ACK it waits for
  printf("matrix: %d cases, %d failed\n", n, bad);
  pcm_disconnect(&m->c);
  printf("rdmanet_test: cm_dropped 0\n");  // as rdmanet_test prints it; Linux's CM counts its own drops
  if (bad) die("matrix");
  printf("rdmanet_test: OK\n");
  return 0;
}
