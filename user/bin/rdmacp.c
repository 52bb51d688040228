// rdmacp: copy a file to another guest over RDMA.
//
//   rdmacp recv [-p port] [--sr] [-T code]         on the receiving guest
//   rdmacp send <file> <ip> [dest-name] [-c chunk] [-p port] [--sr] [-T code]
//   rdmacp mkfile <file> <size> [seed]             a file of pseudo-random bytes
//   rdmacp sum <file>                              its size and FNV-1a 64 checksum
//
// The sender connects with rdma_cm, giving the file's size and name in the
// REQ's private data; the receiver creates the file, exposes a ring of
// RING slots of `chunk` bytes in the REP, posts one receive per slot and
// sends READY. Each chunk goes with RDMA WRITE_WITH_IMM into slot
// seq % RING (imm = seq); the receiver writes the slot to the file and
// returns a CREDIT (a SEND naming seq). The sender needs a credit to reuse
// a slot. At the end the sender SENDs DONE with an FNV-1a 64 checksum of
// the file; the receiver compares it with its own and answers OK or BAD.
// Both ends print their QP's counters (the ones rdmastat shows) before the
// QP goes away, so a script sees what the transfer cost on the wire.
// --sr offers selective repeat (used when both ends offer it). -T code sets
// a fixed IBTA local ACK timeout (4.096 us x 2^code per try, no adaptive RTO)
// instead of the adaptive one; the waits for progress then last at least as
// long as the transport's own retries, so a held link ends in the QP's error
// (or a kill), not in rdmacp giving up first.
#include "user.h"
#include "ibverbs.h"
#include "rdma_cm.h"
#include "rdma_util.h"
#include "rdma_cm_util.h"
#include "rdma_sys.h"

#define RING 4
#define MIN_CHUNK 64
#define MAX_CHUNK (1u << 22)     // -c: 4 MiB, so the ring (RING chunks) stays within 16 MiB
#define MAX_TIMEOUT_CODE 31      // -T: the IBTA local ACK timeout is a 5-bit code
#define MAX_MKFILE_SIZE (1ULL << 40)   // mkfile: a size that cannot wrap the counters
#define MSG_READY 1
#define MSG_CREDIT 2
#define MSG_DONE 3
#define MSG_RESULT 4

struct msg { uint32_t type, seq; uint64_t value; };   // value: checksum / result

static uint32_t chunk = 65536;
static int port = RDMA_CM_PORT;
static int use_sr;
static uint8_t ack_timeout;   // -T: IBTA local ACK timeout code, 0 = rdma_cm's adaptive RTO

// How long to wait for progress before giving up: 60 s, or longer than the
// transport's retries ((retry_cnt + 1) tries of the fixed timeout) with -T.
static int stall_ms(void) {
  uint64_t tries_ns = (uint64_t)(RDMAX_DEFAULT_RETRY_COUNT + 1) * (4096ULL << ack_timeout);
  uint64_t ms = ack_timeout ? tries_ns / 1000000 + 1000 : 0;
  return ms > 60000 ? (ms > 0x7fffffff ? 0x7fffffff : (int)ms) : 60000;
}

static void fail(const char *m) { printf("rdmacp: %s\n", m); exit(1); }

// Why a file could not be opened (the file system sets no errno): the
// path's own state, then the likely cause. Exits.
static void fail_file(const char *verb, const char *path) {
  struct stat st;
  int exists = stat(path, &st) == 0;
  const char *why = exists && st.type == T_DIR ? "it is a directory" :
                    exists ? "the file system refused it" :
                    strcmp(verb, "create") == 0 ? "its directory does not exist, or no free inode" :
                    "no such file";
  printf("rdmacp: cannot %s %s: %s\n", verb, path, why);
  exit(1);
}

static uint64_t fnv(uint64_t h, const uint8_t *p, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) { h ^= p[i]; h *= 1099511628211ULL; }
  return h;
}
#define FNV_INIT 14695981039346656037ULL

// One line with the counters of our QP, in rdmastat's names.
static void print_qp_counters(struct ibv_qp *qp) {
  struct rdma_qp_stats st;
  if (rdma_qp_stats((int)qp->handle, &st) != 0) { printf("rdmacp: no QP counters\n"); return; }
  printf("rdmacp: qp 0x%x sr %s tx_frames %lu rx_frames %lu retx %lu timeouts %lu tx_nak %lu rx_nak %lu "
         "rx_dup %lu rx_out_of_seq %lu rx_out_of_window %lu rx_dropped %lu\n", st.qp_num, st.sr ? "on" : "off",
         st.tx_frames, st.rx_frames, st.tx_retransmits, st.timeouts, st.tx_nak, st.rx_nak, st.rx_dup,
         st.rx_out_of_seq, st.rx_out_of_window, st.rx_dropped);
}

struct side {
  struct ibv_context *ctx;
  struct ibv_pd *pd;
  struct ibv_cq *scq, *rcq;     // sends and writes / receives
  struct ibv_qp *qp;
  struct ibv_mr *mr, *msg_mr;
  uint8_t *ring;
  struct msg msgs[RING + 2];     // receive slots [0, RING], send slot RING + 1
};

// wr_ids: a receive is its slot (0..RING), our message WR_MSG, chunk k WR_CHUNK + k.
#define WR_MSG 1000
#define WR_CHUNK 2000

static uint32_t peer_ip;     // for messages

// A failed completion, said for a person: what the WR was, to whom, and
// the status's name. A flushed WR only follows the failure that moved the
// QP to ERR, so the CQs are searched for that one first.
// recv: wc came from the receive CQ.
static void fail_wc(struct side *s, const struct ibv_wc *wc, int recv) {
  struct ibv_wc cause = *wc, w;
  for (int q = 0; q < 2 && cause.status == IBV_WC_WR_FLUSH_ERR; q++)
    while (cause.status == IBV_WC_WR_FLUSH_ERR && ibv_poll_cq(q ? s->rcq : s->scq, 1, &w) == 1)
      if (w.status != IBV_WC_SUCCESS && w.status != IBV_WC_WR_FLUSH_ERR) { cause = w; recv = q; }
  char what[64];
  if (recv) snprintf(what, sizeof what, "a receive (slot %lu)", cause.wr_id);
  else if (cause.wr_id == WR_MSG) snprintf(what, sizeof what, "SEND of a READY/CREDIT/DONE message");
  else snprintf(what, sizeof what, "RDMA WRITE_WITH_IMM of chunk %lu", cause.wr_id - WR_CHUNK);
  printf("rdmacp: %s (peer %s): %s (vendor_err 0x%x)\n", what, inet_ntoa((struct in_addr){ htonl(peer_ip) }),
         ibv_wc_status_str(cause.status), cause.vendor_err);
  print_qp_counters(s->qp);
  exit(1);
}

// No completion within stall_ms(): what we waited for, from whom, for how
// long, and the QP's state and counters. Exits.
static void fail_stall(struct side *s, const char *what) {
  struct ibv_qp_attr a;
  struct ibv_qp_init_attr ia;
  int st = ibv_query_qp(s->qp, &a, IBV_QP_STATE, &ia) == 0 ? (int)a.qp_state : -1;
  printf("rdmacp: no %s from %s within %d s (QP state %s)\n", what, inet_ntoa((struct in_addr){ htonl(peer_ip) }),
         stall_ms() / 1000, st < 0 ? "?" : ibvx_qp_state_str((enum ibv_qp_state)st));
  print_qp_counters(s->qp);
  exit(1);
}

static void setup(struct side *s) {
  s->ctx = rdmau_open();
  if (!s->ctx) fail("no RDMA device");
  s->pd = ibv_alloc_pd(s->ctx);
  s->scq = ibv_create_cq(s->ctx, 64, NULL, NULL, 0);
  s->rcq = ibv_create_cq(s->ctx, 64, NULL, NULL, 0);
  s->ring = malloc((size_t)chunk * RING);
  if (!s->pd || !s->scq || !s->rcq || !s->ring) fail("resources");
  s->mr = ibv_reg_mr(s->pd, s->ring, (size_t)chunk * RING, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  s->msg_mr = ibv_reg_mr(s->pd, s->msgs, sizeof s->msgs, IBV_ACCESS_LOCAL_WRITE);
  struct ibv_qp_init_attr ia;
  memset(&ia, 0, sizeof ia);
  ia.send_cq = s->scq;
  ia.recv_cq = s->rcq;
  ia.cap.max_send_wr = ia.cap.max_recv_wr = 16;
  ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
  ia.qp_type = IBV_QPT_RC;
  s->qp = ibv_create_qp(s->pd, &ia);
  if (!s->mr || !s->msg_mr || !s->qp) fail("MR/QP");
}

// -T and --sr as rdma_cm's transport settings (a project extension).
static void set_transport(struct rdma_cm_id *id) {
  struct rdmax_transport xt = { .sr = (uint8_t)use_sr, .timeout = ack_timeout,
                                .min_rto_us = ack_timeout ? ~0u : 0 };
  if (rdma_set_option(id, RDMAX_OPTION_XV6, RDMAX_OPTION_TRANSPORT, &xt, sizeof xt)) fail("set_option");
}

static void post_msg_recv(struct side *s, int slot) {
  struct ibv_sge sge = { (uint64_t)&s->msgs[slot], sizeof(struct msg), s->msg_mr->lkey };
  struct ibv_recv_wr wr = { .wr_id = (uint64_t)slot, .sg_list = &sge, .num_sge = 1 }, *bad;
  if (ibv_post_recv(s->qp, &wr, &bad)) fail("post_recv");
}

// Posts a message without waiting for its completion (the last one: the
// peer may disconnect before our retransmission of a lost ACK'd frame).
static void post_msg(struct side *s, uint32_t type, uint32_t seq, uint64_t value) {
  struct msg *m = &s->msgs[RING + 1];
  m->type = type; m->seq = seq; m->value = value;
  struct ibv_sge sge = { (uint64_t)m, sizeof *m, s->msg_mr->lkey };
  struct ibv_send_wr wr = { .wr_id = WR_MSG, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
                            .send_flags = IBV_SEND_SIGNALED }, *bad;
  if (ibv_post_send(s->qp, &wr, &bad)) fail("post_send");
}

static void send_msg(struct side *s, uint32_t type, uint32_t seq, uint64_t value) {
  post_msg(s, type, seq, value);
  struct ibv_wc wc;            // the message buffer is reused: wait for it
  for (;;) {                   // (WRITE completions may come first: they carry nothing new)
    if (rdmau_wait(s->scq, &wc, stall_ms()) != 1) fail_stall(s, "completion of our SEND");
    if (wc.status != IBV_WC_SUCCESS) fail_wc(s, &wc, 0);
    if (wc.wr_id == WR_MSG) return;
  }
}

static int do_recv(void) {
  struct side s;
  setup(&s);
  struct rdma_cm_id *lid, *id;
  if (rdmau_cm_listen(&lid, port)) rdmau_cm_die("rdmacp", "listen on", 0, port, NULL, errno);
  printf("rdmacp: waiting on port %d\n", port);
  if (rdma_get_request(lid, &id)) fail("no request");
  peer_ip = ntohl(((struct sockaddr_in *)rdma_get_peer_addr(id))->sin_addr.s_addr);
  const uint8_t *req = id->event->param.conn.private_data;
  uint64_t size = 0;
  for (int i = 0; i < 8; i++) size = (size << 8) | req[i];
  char name[RDMA_CM_PRIVATE_MAX];
  int nlen = id->event->param.conn.private_data_len - 8;
  if (nlen <= 0 || nlen >= (int)sizeof name) { rdma_reject(id, NULL, 0); fail("bad request"); }
  memcpy(name, req + 8, nlen);
  name[nlen] = 0;
  int fd = open(name, O_CREATE | O_WRONLY | O_TRUNC);
  if (fd < 0) {                                    // the reason goes to the sender in the REJ
    char why[RDMA_CM_PRIVATE_MAX];
    snprintf(why, sizeof why, "cannot create %s", name);
    rdma_reject(id, why, (uint8_t)(strlen(why) + 1));
    fail_file("create", name);
  }
  uint8_t pd[20];
  rdmax_pack_mr(pd, (uint64_t)s.ring, s.mr->rkey, chunk * RING);
  for (int i = 0; i < 4; i++) pd[16 + i] = (uint8_t)(chunk >> (24 - 8 * i));
  id->qp = s.qp;
  set_transport(id);
  struct rdma_conn_param p = { .private_data = pd, .private_data_len = 20 };
  if (rdma_accept(id, &p)) fail("accept");
  for (int i = 0; i <= RING; i++) post_msg_recv(&s, i);
  send_msg(&s, MSG_READY, RING, 0);
  uint64_t got = 0, sum = FNV_INIT;
  uint32_t next = 0;
  uint64 t0 = clock_ns();
  for (;;) {
    struct ibv_wc wc;
    if (rdmau_wait(s.rcq, &wc, stall_ms()) != 1) fail_stall(&s, "chunk or DONE");
    if (wc.status != IBV_WC_SUCCESS) fail_wc(&s, &wc, 1);
    int slot = (int)wc.wr_id;
    if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
      uint32_t seq = ntohl(wc.imm_data);
      if (seq != next) fail("chunk out of order");
      uint32_t len = size - got < chunk ? (uint32_t)(size - got) : chunk;
      uint8_t *data = s.ring + (size_t)(seq % RING) * chunk;
      if (write(fd, data, (int)len) != (int)len) {
        printf("rdmacp: write to %s at byte %lu failed (file system full?)\n", name, got);
        exit(1);
      }
      sum = fnv(sum, data, len);
      got += len;
      next++;
      post_msg_recv(&s, slot);
      send_msg(&s, MSG_CREDIT, seq, 0);
    } else if (wc.opcode == IBV_WC_RECV && s.msgs[slot].type == MSG_DONE) {
      int ok = got == size && s.msgs[slot].value == sum;
      close(fd);
      post_msg(&s, MSG_RESULT, 0, ok);              // the sender disconnects when it has it
      uint64 us = (clock_ns() - t0) / 1000 + 1;
      printf("rdmacp: received %s: %lu bytes in %lu chunks, checksum %lx: %s (%lu KB/s)\n", name, got,
             (uint64)next, sum, ok ? "OK" : "BAD", got * 1000 / us);
      print_qp_counters(s.qp);
      rdmau_cm_wait_disconnect(id, 10000);
      printf("rdmacp: cm_dropped %d\n", (int)rdmax_cm_dropped(id));   // not from the peer [SEC-FORGE-7]
      exit(ok ? 0 : 1);
    }
  }
}

static int do_send(const char *path, uint32_t ip, const char *dest) {
  struct stat st;
  int fd = open(path, O_RDONLY);
  if (fd < 0 || fstat(fd, &st) < 0) fail_file("open", path);
  if (st.type == T_DIR) fail_file("send", path);
  struct side s;
  setup(&s);
  uint8_t pd[RDMA_CM_PRIVATE_MAX];
  int nlen = (int)strlen(dest);
  if (nlen < 1 || nlen > RDMA_CM_PRIVATE_MAX - 9) {
    printf("rdmacp: destination name %s: 1..%d characters\n", dest, RDMA_CM_PRIVATE_MAX - 9);
    exit(2);
  }
  for (int i = 0; i < 8; i++) pd[i] = (uint8_t)(st.size >> (56 - 8 * i));
  memcpy(pd + 8, dest, nlen);
  struct rdma_cm_id *id;
  peer_ip = ip;
  if (rdmau_cm_resolve(&id, ip, port)) rdmau_cm_die("rdmacp", "connect to", ip, port, NULL, errno);
  id->qp = s.qp;
  set_transport(id);
  struct rdma_conn_param p = { .private_data = pd, .private_data_len = (uint8_t)(8 + nlen) };
  if (rdma_connect(id, &p)) rdmau_cm_die("rdmacp", "connect to", ip, port, id, errno);
  const uint8_t *rep = id->event->param.conn.private_data;
  uint64_t raddr;
  uint32_t rkey, rlen;
  rdmax_unpack_mr(rep, &raddr, &rkey, &rlen);
  uint32_t rchunk = 0;
  for (int i = 0; i < 4; i++) rchunk = (rchunk << 8) | rep[16 + i];
  if (rchunk > chunk || rlen != rchunk * RING) fail("the receiver's chunk is larger than ours (-c)");
  chunk = rchunk;                                          // the receiver's ring decides
  for (int i = 0; i <= RING; i++) post_msg_recv(&s, i);
  int credits = 0, ready = 0, inflight = 0;
  uint32_t seq = 0;
  uint64_t sent = 0, sum = FNV_INIT;
  uint64 t0 = clock_ns();
  while (!ready || sent < st.size || inflight > 0) {
    if (ready && sent < st.size && credits > 0) {
      uint8_t *slot = s.ring + (size_t)(seq % RING) * chunk;
      uint32_t len = st.size - sent < chunk ? (uint32_t)(st.size - sent) : chunk;
      if (read(fd, slot, (int)len) != (int)len) fail_file("read", path);
      sum = fnv(sum, slot, len);
      struct ibv_sge sge = { (uint64_t)slot, len, s.mr->lkey };
      struct ibv_send_wr wr = { .wr_id = WR_CHUNK + seq, .sg_list = &sge, .num_sge = 1,
                                .opcode = IBV_WR_RDMA_WRITE_WITH_IMM, .send_flags = IBV_SEND_SIGNALED }, *bad;
      wr.imm_data = htonl(seq);
      wr.wr.rdma.remote_addr = raddr + (uint64_t)(seq % RING) * chunk;
      wr.wr.rdma.rkey = rkey;
      if (ibv_post_send(s.qp, &wr, &bad)) fail("post write");
      seq++; sent += len; credits--; inflight++;
      continue;
    }
    struct ibv_wc wc;
    while (ibv_poll_cq(s.scq, 1, &wc) == 1)                // WRITE completions: errors only matter
      if (wc.status != IBV_WC_SUCCESS) fail_wc(&s, &wc, 0);
    if (rdmau_wait(s.rcq, &wc, stall_ms()) != 1) fail_stall(&s, "credit");
    if (wc.status != IBV_WC_SUCCESS) fail_wc(&s, &wc, 1);
    if (wc.opcode != IBV_WC_RECV) continue;
    struct msg *m = &s.msgs[wc.wr_id];
    if (m->type == MSG_READY) { ready = 1; credits = (int)m->seq; }
    else if (m->type == MSG_CREDIT) { credits++; inflight--; }
    post_msg_recv(&s, (int)wc.wr_id);
  }
  send_msg(&s, MSG_DONE, seq, sum);
  struct ibv_wc wc;
  for (;;) {
    if (rdmau_wait(s.rcq, &wc, stall_ms()) != 1) fail_stall(&s, "result");
    if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV) continue;
    if (s.msgs[wc.wr_id].type == MSG_RESULT) break;
  }
  int ok = s.msgs[wc.wr_id].value == 1;
  uint64 us = (clock_ns() - t0) / 1000 + 1;
  printf("rdmacp: sent %s as %s: %lu bytes in %u chunks, checksum %lx: %s (%lu KB/s)\n", path, dest,
         sent, seq, sum, ok ? "OK" : "BAD", sent * 1000 / us);
  print_qp_counters(s.qp);
  rdma_disconnect(id);
  printf("rdmacp: cm_dropped %d\n", (int)rdmax_cm_dropped(id));     // not from the peer [SEC-FORGE-7]
  exit(ok ? 0 : 1);
}

// xorshift64: reproducible file contents from a seed.
static int do_mkfile(const char *path, uint64_t size, uint64_t seed) {
  int fd = open(path, O_CREATE | O_WRONLY | O_TRUNC);
  if (fd < 0) fail_file("create", path);
  static uint64_t buf[1024];
  uint64_t x = seed * 2654435761ULL + 88172645463325252ULL, sum = FNV_INIT;
  for (uint64_t done = 0; done < size;) {
    for (int i = 0; i < 1024; i++) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; buf[i] = x; }
    uint32_t n = size - done < sizeof buf ? (uint32_t)(size - done) : (uint32_t)sizeof buf;
    if (write(fd, buf, (int)n) != (int)n) {
      printf("rdmacp: write to %s at byte %lu failed (file system full?)\n", path, done);
      exit(1);
    }
    sum = fnv(sum, (uint8_t *)buf, n);
    done += n;
  }
  close(fd);
  printf("rdmacp: made %s: %lu bytes, checksum %lx\n", path, size, sum);
  return 0;
}

static int do_sum(const char *path) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) fail_file("open", path);
  static uint8_t buf[8192];
  uint64_t sum = FNV_INIT, size = 0;
  int n;
  while ((n = read(fd, buf, sizeof buf)) > 0) { sum = fnv(sum, buf, (uint32_t)n); size += (uint64_t)n; }
  close(fd);
  if (n < 0) fail_file("read", path);
  printf("rdmacp: sum %s: %lu bytes, checksum %lx\n", path, size, sum);
  return 0;
}

static void usage(int status) {
  printf("usage: rdmacp recv [-p port] [-c chunk] [--sr] [-T code]      on the receiving guest\n"
         "       rdmacp send <file> <ip> [dest] [-c chunk] [-p port] [--sr] [-T code]\n"
         "       rdmacp mkfile <file> <size> [seed] | rdmacp sum <file>\n"
         "  -c chunk  bytes per RDMA WRITE, %d..%u (default 65536; the receiver's ring decides)\n"
         "  -p port   the CM port, 1..65535 (default %d)\n"
         "  -T code   fixed IBTA local ACK timeout, 4.096 us x 2^code, 0..%d (0: adaptive RTO)\n"
         "  --sr      offer selective repeat\n"
         "  size      0..%lu bytes; seed 0..18446744073709551615 (default 1)\n",
         MIN_CHUNK, MAX_CHUNK, RDMA_CM_PORT, MAX_TIMEOUT_CODE, (uint64)MAX_MKFILE_SIZE);
  exit(status);
}

// One line about a bad command line, then exit(2).
static void bad_usage(const char *fmt, const char *arg) {
  printf("rdmacp: ");
  printf(fmt, arg);
  printf("; rdmacp --help for the usage\n");
  exit(2);
}

int main(int argc, char **argv) {
  if (argc < 2) usage(2);
  if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) usage(0);
  static const char *const cmds[] = { "recv", "send", "mkfile", "sum" };
  static const int max_pos[] = { 0, 3, 3, 1 }, min_pos[] = { 0, 2, 2, 1 };
  int cmd = -1;
  for (int i = 0; i < 4; i++) if (strcmp(argv[1], cmds[i]) == 0) cmd = i;
  if (cmd < 0) bad_usage("%s: not a command (recv, send, mkfile or sum)", argv[1]);
  const char *pos[3] = { 0, 0, 0 };
  int npos = 0;
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    int takes = strcmp(a, "-c") == 0 || strcmp(a, "-p") == 0 || strcmp(a, "-T") == 0;
    if (takes && i + 1 >= argc) bad_usage("%s needs a value", a);
    if (strcmp(a, "-c") == 0) chunk = (uint32_t)rdmau_num("rdmacp", a, argv[++i], MIN_CHUNK, MAX_CHUNK, "bytes");
    else if (strcmp(a, "-p") == 0) port = (int)rdmau_num("rdmacp", a, argv[++i], 1, 65535, "");
    else if (strcmp(a, "-T") == 0) ack_timeout = (uint8_t)rdmau_num("rdmacp", a, argv[++i], 0, MAX_TIMEOUT_CODE, "");
    else if (strcmp(a, "--sr") == 0) use_sr = 1;
    else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) usage(0);
    else if (a[0] == '-' && a[1]) bad_usage("%s: unknown option", a);
    else if (npos < max_pos[cmd]) pos[npos++] = a;
    else bad_usage("%s: one argument too many", a);
  }
  if (npos < min_pos[cmd]) bad_usage("%s: missing arguments", argv[1]);
  if (cmd == 0) return do_recv();
  if (cmd == 2) {
    uint64_t size = rdmau_num("rdmacp", "mkfile size", pos[1], 0, MAX_MKFILE_SIZE, "bytes");
    return do_mkfile(pos[0], size, pos[2] ? rdmau_num("rdmacp", "mkfile seed", pos[2], 0, ~0ULL, "") : 1);
  }
  if (cmd == 3) return do_sum(pos[0]);
  uint32_t ip;
  if (rdmau_parse_ipv4(pos[1], &ip) < 0 || ip == 0) bad_usage("%s: not an IPv4 address (a.b.c.d)", pos[1]);
  const char *dest = pos[2] ? pos[2] : pos[0];
  if (!pos[2]) { const char *b = strchr(dest, '/'); while (b) { dest = b + 1; b = strchr(dest, '/'); } }
  return do_send(pos[0], ip, dest);
}
