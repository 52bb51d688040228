// rdmanet_test: two-host RoCEv2 check over the NIC.
//
//   rdmanet_test host_a [-s size] [-n iters] [-p port] [--sr] [--v1]
//       passive side: listens (rdma_cm port 18515, RDMA_CM_PORT), accepts one connection,
//       exposes a buffer in the REP's private data, and for each round
//       checks the data host_b wrote, then answers with a SEND.
//   rdmanet_test host_b <ip of host_a> [-s size] [-n iters] [-p port] [--sr] [--v1]
//       active side: connects, and per round WRITE_WITH_IMMs a pattern into
//       host_a's buffer and waits for the answer; at the end READs the
//       buffer back and compares.
// --sr offers selective repeat; --v1 sends RoCE v1 frames (EtherType 0x8915).
//   rdmanet_test host_a --last-send  /  host_b <ip> --last-send
//       host_b posts one SEND of LAST_SEND_LEN bytes; host_a busy-polls for
//       its receive and disconnects (QP to ERR) the moment it completes,
//       while it may still hold the ACK ([RESP-ACK-5]); host_b's SEND must
//       complete with success all the same [RESP-ACK-6].
//   rdmanet_test host_a --matrix [--big]  /  host_b <ip> --matrix [--big]
//       every opcode (WRITE, READ, SEND, WRITE_WITH_IMM, SEND_WITH_IMM) at
//       every size class (0, 1, MTU-1, MTU, MTU+1, 64 KiB, 1 MiB; --big adds
//       8 MiB), one line per case; the receiving side checks the bytes and
//       that nothing past the end was written (host_a for WRITE/SEND/IMMs,
//       host_b for READ), and for a receive its opcode, immediate and
//       byte_len (the message's length; a WRITE_WITH_IMM's is the WRITE's);
//       then ATOMIC_CMP_AND_SWP and ATOMIC_FETCH_AND_ADD on 8 bytes (host_b
//       checks the old value returned, host_a the new one and the guard).
//       The Linux peer tests/linux/peer (xrpeer) speaks the same protocol.
//   rdmanet_test ids [n]
//       registers n MRs and creates min(n, 24) QPs, prints every lkey, rkey
//       and QPN ("ids: mr <lkey> <rkey>", "ids: qp <qpn>"), then
//       min(n, IDS_CM) connection IDs and starting PSNs as rdma_cm draws
//       them for new connections ("ids: conn <id>", "ids: psn <psn>") for
//       tests/rdma/run_security.py to judge ([SEC-RAND-1], [SEC-RAND-3],
//       [SEC-RAND-4], [SEC-RAND-7]).
//   rdmanet_test victim  /  rdmanet_test holder <ip of victim>
//       for tests/rdma/run_forge.py: the victim accepts one connection and
//       prints its QPN, expected PSN, a 4 KiB buffer's VA and R_Key; then per
//       console line "check" prints whether the buffer still holds its
//       pattern, the QP state and counters; "quit" ends both (the holder
//       just keeps the connection up until its console says "quit").
//       The victim also prints its peer's rdma_cm source port ("victim: cm
//       peer_port <port>"; the holder prints its own: "holder: connected,
//       qpn <qpn> cm_port <port>"); console "dreq <n>" waits for the peer's
//       DREQ until the kernel's CM dropped n more MADs (at most
//       DREQ_WAIT_MS) and says whether the connection survived; "ping" SENDs 4 bytes to the holder and reports the
//       completion ([SEC-FORGE-7], tests/rdma/run_forge.py); "tail" prints
//       the buffer's last 64 bytes in hex (the MR-boundary forgery case).
// Both print "rdmanet_test: OK" or "rdmanet_test: FAILED (...)", the
// transfer rate and the QP's counters.
#include "user.h"
#include "ibverbs.h"
#include "rdma_cm.h"
#include "rdma_sys.h"
#include "rdma_util.h"
#include "rdma_cm_util.h"
#include "matrix_atomic.h"

#define IDS_CM 16                // connection IDs and PSNs "ids" prints
#define DREQ_WAIT_MS 30000       // "dreq": the longest wait for forged DREQs

static int size = 65536, iters = 20, port = RDMA_CM_PORT, use_sr, use_v1, matrix, big, last_send;
#define LAST_SEND_LEN 64
#define LAST_SEND_WAIT_NS 30000000000ULL   // host_a's deadline for the SEND


static void pattern(uint8_t *b, int n, int round) {
  for (int i = 0; i < n; i++) b[i] = (uint8_t)(round * 31 + i + (i >> 9));
}

static struct ibv_qp *fail_qp;   // the QP whose counters a failure prints

static void print_qp_counters(struct ibv_qp *qp) {
  struct rdma_qp_stats s;
  if (rdma_qp_stats((int)qp->handle, &s) == 0)
    printf("qp 0x%x: tx %lu rx %lu frames, retransmits %lu, timeouts %lu, naks tx %lu rx %lu, dup %lu, oos %lu\n",
           s.qp_num, s.tx_frames, s.rx_frames, s.tx_retransmits, s.timeouts, s.tx_nak, s.rx_nak,
           s.rx_dup, s.rx_out_of_seq);
}

// Prints why and, once a QP exists, its counters (what the peer did is in
// its own log), then exits.
static int fail(const char *why) {
  if (fail_qp) print_qp_counters(fail_qp);
  printf("rdmanet_test: FAILED (%s)\n", why);
  exit(1);
}

struct res { struct ibv_pd *pd; struct ibv_cq *cq; struct ibv_qp *qp; struct ibv_mr *mr, *ack_mr; uint8_t *buf; uint8_t ack[16]; };
static int matrix_a(struct res *r);
static int matrix_b(struct res *r, uint64_t raddr, uint32_t rkey, int mtu);

static void setup(struct ibv_context *ctx, struct res *r) {
  r->pd = ibv_alloc_pd(ctx);
  r->cq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
  r->buf = malloc(size);
  if (!r->pd || !r->cq || !r->buf) fail("resources");
  r->mr = ibv_reg_mr(r->pd, r->buf, size, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                     IBV_ACCESS_REMOTE_ATOMIC);
  r->ack_mr = ibv_reg_mr(r->pd, r->ack, sizeof r->ack, IBV_ACCESS_LOCAL_WRITE);
  struct ibv_qp_init_attr ia;
  memset(&ia, 0, sizeof ia);
  ia.send_cq = ia.recv_cq = r->cq;
  ia.cap.max_send_wr = ia.cap.max_recv_wr = 64;
  ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
  ia.qp_type = IBV_QPT_RC;
  r->qp = fail_qp = ibv_create_qp(r->pd, &ia);
  if (!r->mr || !r->ack_mr || !r->qp) fail("MR/QP");
}

static void post_recv(struct res *r, struct ibv_mr *mr, void *addr, int len, uint64_t id) {
  struct ibv_sge sge = { (uint64_t)addr, (uint32_t)len, mr->lkey };
  struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad;
  if (ibv_post_recv(r->qp, &wr, &bad)) fail("post_recv");
}

// The longest wait for one completion: a Linux rxe sender on the 1 % loss
// bed recovers many losses only by its retransmit timer, and one 1 MiB
// WRITE_WITH_IMM from it outlived a 30 s wait (xrpeer's matrix.c WAIT_MS).
#define WC_WAIT_MS 120000

static void wait_wc(struct res *r, struct ibv_wc *wc, const char *what) {
  int n = rdmau_wait(r->cq, wc, WC_WAIT_MS);
  if (n != 1) fail(what);
  if (wc->status != IBV_WC_SUCCESS) {
    printf("rdmanet_test: %s: %s (vendor_err 0x%x)\n", what, ibv_wc_status_str(wc->status), wc->vendor_err);
    fail(what);
  }
}

static void print_stats(struct res *r, uint64 ns, uint64 bytes) {
  print_qp_counters(r->qp);
  if (ns > 0) {
    uint64 kbps = bytes * 1000000 / ns;            // KB/s (1 KB = 1000 bytes)
    printf("%lu bytes in %lu us: %lu.%03lu MB/s\n", bytes, ns / 1000, kbps / 1000, kbps % 1000);
  }
}

// CM messages the connection dropped (not from its peer) [SEC-FORGE-7].
static void print_cm(struct rdma_cm_id *id) {
  printf("rdmanet_test: cm_dropped %d\n", (int)rdmax_cm_dropped(id));
}

// --sr and --v1 as rdma_cm's transport settings (a project extension).
static void set_transport(struct rdma_cm_id *id) {
  struct rdmax_transport xt = { .sr = (uint8_t)use_sr, .roce_v1 = (uint8_t)use_v1 };
  if (rdma_set_option(id, RDMAX_OPTION_XV6, RDMAX_OPTION_TRANSPORT, &xt, sizeof xt)) fail("set_option");
}

// A synchronous listener on `port` and the first connection request.
static struct rdma_cm_id *get_request(void) {
  struct rdma_cm_id *lid, *id;
  if (rdmau_cm_listen(&lid, port)) {
    printf("rdmanet_test: listen on port %d: %s\n", port, strerror(errno));
    fail("listen");
  }
  printf("rdmanet_test: listening on port %d\n", port);
  if (rdma_get_request(lid, &id)) fail("no connect request");
  return id;
}

// A synchronous id resolved towards ip:port.
static struct rdma_cm_id *connect_to(uint32_t ip) {
  struct rdma_cm_id *id;
  if (rdmau_cm_resolve(&id, ip, port)) fail("resolve");
  return id;
}

// The connection as the QP sees it: the peer's QPN, the path MTU, SR.
static int print_connected(struct res *r) {
  struct ibv_qp_attr qa;
  struct ibv_qp_init_attr qi;
  struct rdma_qp_stats st;
  if (ibv_query_qp(r->qp, &qa, IBV_QP_DEST_QPN | IBV_QP_PATH_MTU, &qi)) fail("query_qp");
  if (rdma_qp_stats((int)r->qp->handle, &st) != 0) fail("stats");
  printf("rdmanet_test: connected, qpn 0x%x peer qpn 0x%x mtu %d sr %d\n", r->qp->qp_num, qa.dest_qp_num,
         ibv_mtu_to_num(qa.path_mtu), (int)st.sr);
  return ibv_mtu_to_num(qa.path_mtu);
}

// Sets up r (its buffer zeroed), listens on the CM port and takes one
// connection request for r's QP (the transport options set).
static struct rdma_cm_id *listen_one(struct ibv_context *ctx, struct res *r) {
  setup(ctx, r);
  memset(r->buf, 0, size);
  struct rdma_cm_id *id = get_request();
  id->qp = r->qp;
  set_transport(id);
  return id;
}

// Sets up r and connects its QP to host_a at ip (a rejection says why);
// the REP's private data is then in id->event.
static struct rdma_cm_id *connect_one(struct ibv_context *ctx, struct res *r, uint32_t ip) {
  setup(ctx, r);
  struct rdma_cm_id *id = connect_to(ip);
  id->qp = r->qp;
  set_transport(id);
  struct rdma_conn_param p = { 0 };
  if (rdma_connect(id, &p)) {
    if (errno == ECONNREFUSED) { printf("rejected: %s\n", rdma_reject_msg(id, id->event->status)); fail("rejected"); }
    fail("connect");
  }
  return id;
}

// The end of a run that passed: counters, rate, CM drops, the verdict.
static int finish_ok(struct res *r, struct rdma_cm_id *id, uint64 ns, uint64 bytes) {
  print_stats(r, ns, bytes);
  print_cm(id);
  printf("rdmanet_test: OK\n");
  return 0;
}

static int host_a(struct ibv_context *ctx) {
  struct res r;
  struct ibv_wc wc;
  struct rdma_cm_id *id = listen_one(ctx, &r);
  uint8_t pd[16];
  rdmax_pack_mr(pd, (uint64_t)r.buf, r.mr->rkey, (uint32_t)size);
  struct rdma_conn_param p = { .private_data = pd, .private_data_len = 16 };
  if (rdma_accept(id, &p)) fail("accept");
  if (matrix) {
    print_connected(&r);
    matrix_a(&r);
    if (rdmau_cm_wait_disconnect(id, 60000)) fail("no DREQ");
    print_stats(&r, 0, 0);
    print_cm(id);
    printf("rdmanet_test: OK\n");
    return 0;
  }
  post_recv(&r, r.ack_mr, r.ack, sizeof r.ack, 1);   // RESET refuses receives; RNR covers the gap
  print_connected(&r);
  uint8_t *want = malloc(size);
  uint64 t0 = clock_ns();
  // Our answer's SEND completes when host_b's ACK arrives, and that ACK
  // may come after host_b's next WRITE_WITH_IMM (it was lost, or host_b
  // coalesced it): a round's completions arrive in either order.
  int answers_in_flight = 0;
  for (int round = 1; round <= iters; round++) {
    do {
      wait_wc(&r, &wc, "write_imm");
    } while (wc.opcode == IBV_WC_SEND && answers_in_flight-- > 0);
    if (wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM || ntohl(wc.imm_data) != (uint32_t)round) fail("imm");
    pattern(want, size, round);
    if (memcmp(want, r.buf, size) != 0) fail("data mismatch");
    post_recv(&r, r.ack_mr, r.ack, sizeof r.ack, 1);
    struct ibv_sge sge = { (uint64_t)r.ack, 4, r.ack_mr->lkey };
    struct ibv_send_wr w = { .wr_id = 2, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
                             .send_flags = IBV_SEND_SIGNALED }, *bad;
    if (ibv_post_send(r.qp, &w, &bad)) fail("post ack");
    answers_in_flight++;
  }
  while (answers_in_flight-- > 0) {
    wait_wc(&r, &wc, "ack");
    if (wc.opcode != IBV_WC_SEND) fail("ack");
  }
  uint64 ns = clock_ns() - t0;
  // Every answer is acknowledged, so host_b may go: BYE tells it. BYE's own
  // completion is not waited for: host_b disconnects once it has BYE, and
  // its ACK may be lost, so our wait for it could outlive host_b's QP
  // ([IBCM-STATE-8]; the disconnect flushes it). host_b READs the buffer back
  // before it leaves.
  struct ibv_sge bsge = { (uint64_t)r.ack, 4, r.ack_mr->lkey };
  struct ibv_send_wr bye = { .wr_id = 6, .sg_list = &bsge, .num_sge = 1, .opcode = IBV_WR_SEND,
                             .send_flags = IBV_SEND_SIGNALED }, *bbad;
  if (ibv_post_send(r.qp, &bye, &bbad)) fail("post bye");
  if (rdmau_cm_wait_disconnect(id, 60000)) fail("no DREQ");
  return finish_ok(&r, id, ns, (uint64)size * iters);
}

static int host_b(struct ibv_context *ctx, uint32_t ip) {
  struct res r;
  struct ibv_wc wc;
  struct rdma_cm_id *id = connect_one(ctx, &r, ip);
  const struct rdma_conn_param *rep = &id->event->param.conn;
  uint64_t raddr;
  uint32_t rkey, rlen;
  rdmax_unpack_mr(rep->private_data, &raddr, &rkey, &rlen);
  if (rep->private_data_len < 16 || rlen != (uint32_t)size) fail("private data");
  int mtu = print_connected(&r);
  if (matrix) {
    int bad = matrix_b(&r, raddr, rkey, mtu);
    rdma_disconnect(id);
    print_stats(&r, 0, 0);
    print_cm(id);
    if (bad) fail("matrix");
    printf("rdmanet_test: OK\n");
    return 0;
  }
  uint64 t0 = clock_ns();
  for (int round = 1; round <= iters; round++) {
    pattern(r.buf, size, round);
    post_recv(&r, r.ack_mr, r.ack, sizeof r.ack, 3);
    struct ibv_sge sge = { (uint64_t)r.buf, (uint32_t)size, r.mr->lkey };
    struct ibv_send_wr w = { .wr_id = 4, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
                             .send_flags = IBV_SEND_SIGNALED }, *bad;
    w.imm_data = htonl((uint32_t)round);
    w.wr.rdma.remote_addr = raddr;
    w.wr.rdma.rkey = rkey;
    if (ibv_post_send(r.qp, &w, &bad)) fail("post write");
    // Two completions in either order: our WRITE and host_a's answer.
    for (int k = 0; k < 2; k++) wait_wc(&r, &wc, "write/ack");
  }
  uint64 ns = clock_ns() - t0;
  memset(r.buf, 0, size);
  struct ibv_sge sge = { (uint64_t)r.buf, (uint32_t)size, r.mr->lkey };
  struct ibv_send_wr w = { .wr_id = 5, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_READ,
                           .send_flags = IBV_SEND_SIGNALED }, *bad;
  w.wr.rdma.remote_addr = raddr;
  w.wr.rdma.rkey = rkey;
  post_recv(&r, r.ack_mr, r.ack, sizeof r.ack, 7);   // host_a's BYE
  if (ibv_post_send(r.qp, &w, &bad)) fail("post read");
  // The READ and host_a's BYE, in either order. We disconnect only with
  // BYE in hand: host_a's answers are all acknowledged by then, so none of
  // them can be flushed by our QP leaving RTS.
  for (int k = 0; k < 2; k++) {
    wait_wc(&r, &wc, "read/bye");
    if (wc.wr_id != 5 && wc.wr_id != 7) fail("read/bye");
  }
  uint8_t *want = malloc(size);
  pattern(want, size, iters);
  if (memcmp(want, r.buf, size) != 0) fail("read-back mismatch");
  rdma_disconnect(id);
  return finish_ok(&r, id, ns, (uint64)size * iters);
}

// ---- the last SEND before a disconnect [RESP-ACK-6] ----

// host_a: accept, wait for one SEND without sleeping (so the QP leaves
// RTS within the ACK hold), check it, disconnect at once.
static int last_send_a(struct ibv_context *ctx) {
  struct res r;
  struct ibv_wc wc;
  struct rdma_cm_id *id = listen_one(ctx, &r);
  struct rdma_conn_param p = { 0 };
  if (rdma_accept(id, &p)) fail("accept");
  post_recv(&r, r.mr, r.buf, LAST_SEND_LEN, 11);
  uint64 end = clock_ns() + LAST_SEND_WAIT_NS;
  int n;
  while ((n = ibv_poll_cq(r.cq, 1, &wc)) == 0 && clock_ns() < end)
    ;
  if (n != 1 || wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV) fail("last send: no receive");
  rdma_disconnect(id);                               // the ACK may still be held here
  uint8_t want[LAST_SEND_LEN];
  pattern(want, LAST_SEND_LEN, 99);
  if (wc.byte_len != LAST_SEND_LEN || memcmp(want, r.buf, LAST_SEND_LEN) != 0) fail("last send: data");
  return finish_ok(&r, id, 0, 0);
}

// host_b: connect, SEND once; the SEND must succeed although host_a
// disconnects as soon as it has it. Then answer host_a's DREQ.
static int last_send_b(struct ibv_context *ctx, uint32_t ip) {
  struct res r;
  struct ibv_wc wc;
  struct rdma_cm_id *id = connect_one(ctx, &r, ip);
  pattern(r.buf, LAST_SEND_LEN, 99);
  struct ibv_sge sge = { (uint64_t)r.buf, LAST_SEND_LEN, r.mr->lkey };
  struct ibv_send_wr w = { .wr_id = 12, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
                           .send_flags = IBV_SEND_SIGNALED }, *bad;
  if (ibv_post_send(r.qp, &w, &bad)) fail("post last send");
  wait_wc(&r, &wc, "last send");                     // fails unless IBV_WC_SUCCESS
  if (wc.wr_id != 12 || wc.opcode != IBV_WC_SEND) fail("last send: completion");
  rdmau_cm_wait_disconnect(id, 10000);               // host_a's DREQ (it gives up on its own)
  return finish_ok(&r, id, 0, 0);
}

// ---- identifiers, for the randomness checks ----
static int ids(struct ibv_context *ctx, int n) {
  struct ibv_pd *pd = ibv_alloc_pd(ctx);
  struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
  static uint8_t buf[4096];
  if (!pd || !cq) fail("resources");
  for (int i = 0; i < n; i++) {
    struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    if (!mr) fail("reg_mr");
    printf("ids: mr %x %x\n", mr->lkey, mr->rkey);
  }
  for (int i = 0; i < n && i < 24; i++) {
    struct ibv_qp_init_attr ia;
    memset(&ia, 0, sizeof ia);
    ia.send_cq = ia.recv_cq = cq;
    ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
    ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
    ia.qp_type = IBV_QPT_RC;
    struct ibv_qp *qp = ibv_create_qp(pd, &ia);
    if (!qp) fail("create_qp");
    printf("ids: qp %x\n", qp->qp_num);
  }
  for (int i = 0; i < n && i < IDS_CM; i++)
    printf("ids: conn %x\nids: psn %x\n", rdmax_new_conn_id(), rdmau_psn());
  printf("rdmanet_test: OK\n");
  return 0;                       // exit releases everything
}

// ---- a connected QP for forged frames to hit ----
static int console_word(char *buf, int n) {
  int i = 0;
  while (i < n - 1) {
    char c;
    if (read(0, &c, 1) != 1) break;
    if (c == '\n' || c == '\r') { if (i) break; else continue; }
    buf[i++] = c;
  }
  buf[i] = 0;
  return i;
}

// Waits for the peer's DREQ until the kernel's CM has dropped `drops`
// more MADs (or DREQ_WAIT_MS): forged DREQs must be among them, not end the QP.
static void victim_dreq(struct rdma_cm_id *id, int drops) {
  uint64 end = clock_ns() + DREQ_WAIT_MS * 1000000ULL;
  int rc = -1, base = (int)rdmax_cm_dropped(id);
  printf("victim: waiting for DREQ\n");
  while ((int)rdmax_cm_dropped(id) - base < drops && clock_ns() < end && rc != 0)
    rc = rdmau_cm_wait_disconnect(id, 100);
  printf("victim: dreq %s cm_dropped %d\n", rc == 0 ? "disconnected" : "connected",
         (int)rdmax_cm_dropped(id) - base);
}

// One signaled SEND to the holder (which posted receives): the QP works.
static void victim_ping(struct res *r) {
  struct ibv_wc wc;
  struct ibv_sge sge = { (uint64_t)r->ack, 4, r->ack_mr->lkey };
  struct ibv_send_wr w = { .wr_id = 9, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
                           .send_flags = IBV_SEND_SIGNALED }, *bad;
  if (ibv_post_send(r->qp, &w, &bad)) { printf("victim: ping failed (post)\n"); return; }
  int n = rdmau_wait(r->cq, &wc, 30000);
  printf("victim: ping %s\n", n != 1 ? "failed (no completion)" :
         wc.status == IBV_WC_SUCCESS ? "ok" : ibv_wc_status_str(wc.status));
}

// "tail": the last VICTIM_TAIL bytes of the registered buffer, in hex, so a
// test can see exactly what a WRITE at the MR's end did and did not touch.
#define VICTIM_TAIL 64
static void victim_tail(struct res *r) {
  printf("victim: tail ");
  for (int i = size - VICTIM_TAIL; i < size; i++) printf("%02x", r->buf[i]);
  printf("\n");
}

static int victim(struct ibv_context *ctx) {
  struct res r;
  size = 4096;
  setup(ctx, &r);
  pattern(r.buf, size, 7);
  struct rdma_cm_id *id = get_request();
  id->qp = r.qp;
  struct rdma_conn_param p = { 0 };
  if (rdma_accept(id, &p)) fail("accept");
  struct ibv_qp_attr qa;
  struct ibv_qp_init_attr qi;
  if (ibv_query_qp(r.qp, &qa, IBV_QP_RQ_PSN, &qi)) fail("query_qp");
  printf("victim: qpn %x epsn %x va %lx rkey %x len %d\n", r.qp->qp_num, qa.rq_psn, (uint64)r.buf,
         r.mr->rkey, size);
  printf("victim: cm peer_port %d\n", ntohs(rdma_get_dst_port(id)));
  char line[32];
  while (console_word(line, sizeof line) > 0 && strcmp(line, "quit") != 0) {
    if (strncmp(line, "dreq ", 5) == 0) { victim_dreq(id, atoi(line + 5)); continue; }
    if (strcmp(line, "ping") == 0) { victim_ping(&r); continue; }
    if (strcmp(line, "tail") == 0) { victim_tail(&r); continue; }
    uint8_t *want = malloc(size);
    pattern(want, size, 7);
    struct rdma_qp_stats st;
    if (rdma_qp_stats((int)r.qp->handle, &st) != 0) fail("stats");
    printf("victim: buffer %s state %s rx_frames %lu tx_frames %lu tx_nak %lu rx_out_of_window %lu "
           "rx_out_of_seq %lu rx_dup %lu rx_dropped %lu\n", memcmp(want, r.buf, size) ? "CHANGED" : "intact",
           ibvx_qp_state_str((enum ibv_qp_state)st.state), st.rx_frames, st.tx_frames, st.tx_nak,
           st.rx_out_of_window, st.rx_out_of_seq, st.rx_dup, st.rx_dropped);
    printf("victim: device ");
    if (rdmau_print_dev_stats(" ") < 0) fail("device stats");
    printf("end\n");
    free(want);
  }
  rdma_disconnect(id);
  print_cm(id);
  printf("rdmanet_test: OK\n");
  return 0;
}

static int holder(struct ibv_context *ctx, uint32_t ip) {
  struct res r;
  size = 4096;
  setup(ctx, &r);
  struct rdma_cm_id *id = connect_to(ip);
  id->qp = r.qp;
  struct rdma_conn_param p = { 0 };
  if (rdma_connect(id, &p)) fail("connect");
  for (int i = 0; i < 4; i++) post_recv(&r, r.ack_mr, r.ack, sizeof r.ack, 10 + i);   // victim pings
  printf("holder: connected, qpn %x cm_port %d\n", r.qp->qp_num, ntohs(rdma_get_src_port(id)));
  char line[32];
  while (console_word(line, sizeof line) > 0 && strcmp(line, "quit") != 0) {}
  printf("rdmanet_test: OK\n");
  return 0;                      // exit tears the QP down
}

// ---- the opcode x size matrix ----
// One case: host_b sends PREP (op, size, round); host_a readies its buffer
// (guard bytes everywhere, or the pattern for a READ; a receive for SEND
// and WRITE_WITH_IMM) and answers READY; host_b runs the operation, then
// sends CHECK; host_a compares and answers VERDICT. Only one message
// receive is posted at a time on each side, so a SEND's data never lands
// in a message buffer. An atomic case (8 bytes at the buffer's start):
// host_a puts matrix_atomic_old(round) there, host_b's CMP_AND_SWP (compare it,
// swap in atomic_new) or FETCH_AND_ADD (atomic_add) must return it and
// leave atomic_new, the guard after the 8 bytes intact.
#define GUARD 64
#define GUARD_BYTE 0xEE
enum { M_PREP = 1, M_READY, M_CHECK, M_VERDICT, M_END, M_BYE };
enum { ID_MSG_RX = 1, ID_MSG_TX, ID_DATA_RX, ID_OP, ID_MAX };
struct mmsg { uint32_t type, op, len, round; };
static struct mmsg mrx, mtx, mdummy;
static struct ibv_mr *mmr_rx, *mmr_tx, *mmr_dummy;
static struct ibv_wc seen[ID_MAX];
static int seen_ok[ID_MAX];

// PREP's op is an index here: new opcodes go at the end (the Linux peer
// tests/linux/peer/matrix.c has the same table).
static const enum ibv_wr_opcode mops[] = { IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ, IBV_WR_SEND,
                                           IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_SEND_WITH_IMM,
                                           IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD };
#define NOPS ((uint32_t)(sizeof mops / sizeof mops[0]))




// Waits for the completion of work request `id` (others are kept for later).
static struct ibv_wc *wait_for(struct res *r, int id, const char *what) {
  while (!seen_ok[id]) {
    struct ibv_wc wc;
    wait_wc(r, &wc, what);
    if (wc.wr_id >= ID_MAX) fail("stray completion");
    seen[wc.wr_id] = wc;
    seen_ok[wc.wr_id] = 1;
  }
  seen_ok[id] = 0;
  return &seen[id];
}

static void msg_post(struct res *r, uint32_t type, uint32_t op, uint32_t len, uint32_t round) {
  mtx.type = type; mtx.op = op; mtx.len = len; mtx.round = round;
  struct ibv_sge sge = { (uint64_t)&mtx, sizeof mtx, mmr_tx->lkey };
  struct ibv_send_wr w = { .wr_id = ID_MSG_TX, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
                           .send_flags = IBV_SEND_SIGNALED }, *bad;
  if (ibv_post_send(r->qp, &w, &bad)) fail("post message");
}

static void msg_send(struct res *r, uint32_t type, uint32_t op, uint32_t len, uint32_t round) {
  msg_post(r, type, op, len, round);
  wait_for(r, ID_MSG_TX, "message send");
}

static void msg_recv_post(struct res *r) { post_recv(r, mmr_rx, &mrx, sizeof mrx, ID_MSG_RX); }

static struct mmsg *msg_wait(struct res *r, uint32_t type) {
  wait_for(r, ID_MSG_RX, "message");
  if (mrx.type != type) fail("unexpected message");
  return &mrx;
}

static void matrix_regs(struct res *r) {
  mmr_rx = ibv_reg_mr(r->pd, &mrx, sizeof mrx, IBV_ACCESS_LOCAL_WRITE);
  mmr_tx = ibv_reg_mr(r->pd, &mtx, sizeof mtx, IBV_ACCESS_LOCAL_WRITE);
  mmr_dummy = ibv_reg_mr(r->pd, &mdummy, sizeof mdummy, IBV_ACCESS_LOCAL_WRITE);
  if (!mmr_rx || !mmr_tx || !mmr_dummy) fail("message MRs");
}

// 0 if buf[0, len) holds the round's pattern and the guard after it is intact.
static int check_buf(const uint8_t *buf, uint32_t len, uint32_t round) {
  static uint8_t *want;
  if (!want) want = malloc(size);
  pattern(want, (int)len, (int)round);
  if (memcmp(buf, want, len) != 0) return 1;
  for (int i = 0; i < GUARD; i++)
    if (buf[len + i] != GUARD_BYTE) return 2;
  return 0;
}

static int matrix_a(struct res *r) {
  matrix_regs(r);
  msg_recv_post(r);
  for (;;) {
    wait_for(r, ID_MSG_RX, "prep");
    if (mrx.type != M_PREP) {                       // the end: BYE, not waited for, since
      msg_post(r, M_BYE, 0, 0, 0);                  // host_b disconnects once it has it
      return 0;                                     // and our ACK wait would outlive the QP
    }
    struct mmsg c = mrx;
    if (c.op >= NOPS) fail("unknown opcode in PREP");
    enum ibv_wr_opcode op = mops[c.op];
    if (op == IBV_WR_RDMA_READ) {
      pattern(r->buf, (int)c.len, (int)c.round);
      memset(r->buf + c.len, GUARD_BYTE, GUARD);
    } else if (matrix_is_atomic(op)) {
      uint64_t old = matrix_atomic_old(c.round);
      memcpy(r->buf, &old, 8);
      memset(r->buf + 8, GUARD_BYTE, GUARD);
    } else {
      memset(r->buf, GUARD_BYTE, c.len + GUARD);
    }
    int with_imm = op == IBV_WR_RDMA_WRITE_WITH_IMM || op == IBV_WR_SEND_WITH_IMM;
    if (op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM) post_recv(r, r->mr, r->buf, (int)c.len, ID_DATA_RX);
    if (op == IBV_WR_RDMA_WRITE_WITH_IMM) post_recv(r, mmr_dummy, &mdummy, sizeof mdummy, ID_DATA_RX);
    msg_recv_post(r);
    msg_send(r, M_READY, 0, 0, c.round);
    int verdict = 0;
    if (op == IBV_WR_SEND || with_imm) {
      // byte_len: the message's length, a WRITE_WITH_IMM's too [RESP-RECV-4]
      struct ibv_wc *wc = wait_for(r, ID_DATA_RX, "data");
      enum ibv_wc_opcode want = op == IBV_WR_RDMA_WRITE_WITH_IMM ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;
      if (wc->opcode != want || wc->byte_len != c.len) verdict = 3;
      else if (with_imm != !!(wc->wc_flags & IBV_WC_WITH_IMM) || (with_imm && ntohl(wc->imm_data) != c.round))
        verdict = 4;
    }
    msg_wait(r, M_CHECK);
    if (matrix_is_atomic(op)) verdict = matrix_atomic_check(r->buf, op, c.round, GUARD, GUARD_BYTE) ? 5 : 0;
    else if (!verdict && op != IBV_WR_RDMA_READ) verdict = check_buf(r->buf, c.len, c.round);
    if (verdict) printf("matrix: %s %u bytes: FAILED at host_a (%d)\n", ibvx_wr_opcode_str(op), c.len, verdict);
    msg_recv_post(r);
    msg_send(r, M_VERDICT, (uint32_t)verdict, 0, c.round);
  }
}

// One case from host_b's side; 0 if both sides found every byte in place.
static int matrix_case(struct res *r, uint64_t raddr, uint32_t rkey, uint32_t op_i, uint32_t len, uint32_t round) {
  enum ibv_wr_opcode op = mops[op_i];
  msg_recv_post(r);
  msg_send(r, M_PREP, op_i, len, round);
  msg_wait(r, M_READY);
  if (op == IBV_WR_RDMA_READ) memset(r->buf, GUARD_BYTE, len + GUARD);
  else pattern(r->buf, (int)len, (int)round);
  uint64 t0 = clock_ns();
  struct ibv_sge sge = { (uint64_t)r->buf, len, r->mr->lkey };
  struct ibv_send_wr w = { .wr_id = ID_OP, .sg_list = &sge, .num_sge = 1, .opcode = op,
                           .send_flags = IBV_SEND_SIGNALED }, *bad;
  w.imm_data = htonl(round);
  w.wr.rdma.remote_addr = raddr;
  w.wr.rdma.rkey = rkey;
  if (matrix_is_atomic(op)) {
    memset(r->buf, GUARD_BYTE, 8);
    matrix_atomic_wr(&w, op, raddr, rkey, round);
  }
  if (ibv_post_send(r->qp, &w, &bad)) fail("post operation");
  struct ibv_wc *wc = wait_for(r, ID_OP, ibvx_wr_opcode_str(op));
  uint64 us = (clock_ns() - t0) / 1000;
  int mine = op == IBV_WR_RDMA_READ ? check_buf(r->buf, len, round) : 0;
  if (matrix_is_atomic(op)) {
    uint64_t got;
    memcpy(&got, r->buf, 8);
    mine = got != matrix_atomic_old(round) || wc->byte_len != 8 ? 6 : 0;   // the value it replaced
  }
  msg_recv_post(r);
  msg_send(r, M_CHECK, op_i, len, round);
  int theirs = (int)msg_wait(r, M_VERDICT)->op;
  printf("matrix: %s %u bytes: %s (%lu us)\n", ibvx_wr_opcode_str(op), len,
         mine || theirs ? "FAILED" : "OK", us);
  if (mine) printf("matrix: %s data at host_b wrong (%d)\n", matrix_is_atomic(op) ? "atomic" : "READ", mine);
  return mine || theirs;
}

static int matrix_b(struct res *r, uint64_t raddr, uint32_t rkey, int mtu) {
  matrix_regs(r);
  uint32_t sizes[] = { 0, 1, (uint32_t)mtu - 1, (uint32_t)mtu, (uint32_t)mtu + 1, 64 << 10, 1 << 20, 8 << 20 };
  int nsizes = big ? 8 : 7, bad = 0, n = 0;
  for (uint32_t op = 0; op < NOPS; op++)
    for (int k = 0; k < (matrix_is_atomic(mops[op]) ? 1 : nsizes); k++) {   // an atomic: 8 bytes
      n++;
      bad += matrix_case(r, raddr, rkey, op, matrix_is_atomic(mops[op]) ? 8 : sizes[k], (uint32_t)n);
    }
  msg_recv_post(r);
  msg_send(r, M_END, 0, 0, 0);
  msg_wait(r, M_BYE);                               // host_a has every ACK it waits for
  printf("matrix: %d cases, %d failed\n", n, bad);
  return bad;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    printf("usage: rdmanet_test host_a | host_b <ip> [-s size] [-n iters] [-p port] [--sr] [--v1] [--matrix [--big]] [--last-send]\n");
    exit(2);
  }
  if (strcmp(argv[1], "ids") == 0) {
    struct ibv_context *c = rdmau_open();
    if (!c) fail("no device");
    return ids(c, argc > 2 ? atoi(argv[2]) : 64);
  }
  if (strcmp(argv[1], "victim") == 0 || strcmp(argv[1], "holder") == 0) {
    struct ibv_context *c = rdmau_open();
    uint32_t vip = 0;
    if (!c) fail("no device");
    if (argv[1][0] == 'v') return victim(c);
    if (argc < 3 || rdmau_parse_ipv4(argv[2], &vip) < 0) fail("bad ip");
    return holder(c, vip);
  }
  int is_b = strcmp(argv[1], "host_b") == 0;
  uint32_t ip = 0;
  int i = 2;
  if (is_b) {
    if (argc < 3 || rdmau_parse_ipv4(argv[2], &ip) < 0) fail("bad ip");
    i = 3;
  } else if (strcmp(argv[1], "host_a") != 0) {
    fail("role must be host_a or host_b");
  }
  for (; i < argc; i++) {
    if (strcmp(argv[i], "-s") == 0 && i + 1 < argc) size = (int)rdmau_num("rdmanet_test", "-s", argv[++i], 1, 0x7fffffff, "bytes");
    else if (strcmp(argv[i], "-n") == 0 && i + 1 < argc) iters = (int)rdmau_num("rdmanet_test", "-n", argv[++i], 1, 0x7fffffff, "");
    else if (strcmp(argv[i], "-p") == 0 && i + 1 < argc) port = (int)rdmau_num("rdmanet_test", "-p", argv[++i], 1, 65535, "");
    else if (strcmp(argv[i], "--sr") == 0) use_sr = 1;
    else if (strcmp(argv[i], "--v1") == 0) use_v1 = 1;
    else if (strcmp(argv[i], "--matrix") == 0) matrix = 1;
    else if (strcmp(argv[i], "--big") == 0) big = 1;
    else if (strcmp(argv[i], "--last-send") == 0) last_send = 1;
    else { printf("rdmanet_test: unknown option %s (see rdmanet_test with no arguments)\n", argv[i]); exit(2); }
  }
  if (matrix) size = (big ? 8 << 20 : 1 << 20) + GUARD;
  if (size < 1 || iters < 1) fail("bad size/iters");
  struct ibv_context *ctx = rdmau_open();
  if (!ctx) fail("no device");
  printf("rdmanet_test: pid %d, %s\n", getpid(), is_b ? "host_b" : "host_a");    // for a harness's kill
  if (last_send) return is_b ? last_send_b(ctx, ip) : last_send_a(ctx);
  return is_b ? host_b(ctx, ip) : host_a(ctx);
}
