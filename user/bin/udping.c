// udping: Unreliable Datagram ping-pong, the xv6 side of xrpeer's UD modes
// (docs/interop.md "UD: ud-server and ud-client"; same payload, Q_Key
// convention and summary lines, so either end may be the Linux peer).
//
//   udping server [--qkey Q] [-n count] [--idle S] [--raw]
//   udping client <ip> --qpn N [--qkey Q] [-s size] [-n count] [--imm] [-w ms] [-r retries]
//
// No connection: the server prints its QPN and echoes every datagram to
// its source (wc.src_qp, and the IPv4 source in the receive's GRH area;
// one address handle per source address). The client sends count
// messages one at a time and resends one whose echo has not come within
// -w ms (default 500), up to -r times (default 3): UD itself never
// retransmits, so a lost datagram is lost and counted (lost = sent -
// received). A payload is its sequence number (4 bytes, big-endian), then
// byte k = (seq + k) mod 256; SEND_WITH_IMM carries seq ^ 0xc0de0000.
// Exit status 0: every message answered (client) / nothing bad (server).
#include "user.h"
#include "ibverbs.h"
#include "rdma_util.h"
#include "ud_payload.h"

#define MAX_MTU   4096
#define SLOT      (RDMAU_GRH + MAX_MTU)   // a receive: the GRH area, then at most an MTU
#define RECVS     32                      // receives kept posted
#define MAX_AH    8                       // the server's sources
#define POLL_MS   200                     // the server's slice between looks at its idle time
#define SEND_WAIT_MS 5000                 // a posted SEND completes within this
#define WR_SEND   (1ull << 32)            // a SEND's wr_id: WR_SEND | seq or slot; a receive's: its slot

struct opts {
  int server, raw, imm;
  uint32_t peer_ip, peer_qpn, qkey, size, count, wait_ms, retries, idle_s;
};

struct ud {
  struct ibv_context *ctx;
  struct ibv_pd *pd;
  struct ibv_cq *cq;
  struct ibv_qp *qp;
  struct ibv_mr *rx_mr, *tx_mr;
  uint8_t *rx, *tx;
  uint32_t me, mtu;
  int outstanding;                        // SENDs posted, not completed
};

struct counts { uint32_t sent, received, bad, errors; uint64_t verified; };

static void die(const char *what, const char *why) {
  printf("udping: %s: %s\n", what, why);
  exit(1);
}

static void ip_str(uint32_t ip, char out[16]) {
  snprintf(out, 16, "%d.%d.%d.%d", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255);
}

// ---- the QP ----

static int post_recv(struct ud *u, int slot) {
  struct ibv_sge sge = { (uint64_t)(u->rx + (uint64_t)slot * SLOT), SLOT, u->rx_mr->lkey };
  struct ibv_recv_wr wr = { .wr_id = (uint64_t)slot, .sg_list = &sge, .num_sge = 1 }, *bad;
  return ibv_post_recv(u->qp, &wr, &bad);
}

// A SEND of len bytes at buf (with immediate if imm) to qpn through ah.
static void post_send(struct ud *u, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey, const uint8_t *buf,
                      uint32_t lkey, uint32_t len, const uint32_t *imm, uint64_t wr_id) {
  struct ibv_sge sge = { (uint64_t)buf, len, lkey };
  struct ibv_send_wr wr, *bad;
  memset(&wr, 0, sizeof wr);
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
  wr.imm_data = imm ? htonl(*imm) : 0;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.ud.ah = ah;
  wr.wr.ud.remote_qpn = qpn;
  wr.wr.ud.remote_qkey = qkey;
  int err = ibv_post_send(u->qp, &wr, &bad);
  if (err) die("post a UD SEND", strerror(err));
  u->outstanding++;
}

// The device, a UD QP at RTS with Q_Key qkey, every receive posted.
static void ud_open(struct ud *u, uint32_t qkey) {
  struct ibv_qp_init_attr ia;
  struct ibv_qp_attr qa;
  memset(u, 0, sizeof *u);
  if (!(u->ctx = rdmau_open())) die("open the RDMA device", "none");
  u->me = rdmau_local_ipv4(u->ctx);
  u->rx = malloc(RECVS * SLOT);
  u->tx = malloc(MAX_MTU);
  u->pd = ibv_alloc_pd(u->ctx);
  u->cq = ibv_create_cq(u->ctx, 2 * 2 * RECVS, NULL, NULL, 0);
  if (!u->rx || !u->tx || !u->pd || !u->cq) die("UD resources", strerror(errno));
  memset(&ia, 0, sizeof ia);
  ia.send_cq = ia.recv_cq = u->cq;
  ia.cap.max_send_wr = 2 * RECVS;
  ia.cap.max_recv_wr = RECVS;
  ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
  ia.qp_type = IBV_QPT_UD;
  if (!(u->qp = ibv_create_qp(u->pd, &ia))) die("create a UD QP", strerror(errno));
  u->rx_mr = ibv_reg_mr(u->pd, u->rx, RECVS * SLOT, IBV_ACCESS_LOCAL_WRITE);
  u->tx_mr = ibv_reg_mr(u->pd, u->tx, MAX_MTU, 0);
  if (!u->rx_mr || !u->tx_mr) die("register UD buffers", strerror(errno));
  int err = rdmau_ud_ready(u->qp, qkey);
  if (err) die("UD QP to RTS", strerror(err));
  if (ibv_query_qp(u->qp, &qa, IBV_QP_PATH_MTU, &ia)) die("query the UD QP", "failed");
  u->mtu = (uint32_t)ibv_mtu_to_num(qa.path_mtu);
  for (int i = 0; i < RECVS; i++)
    if (post_recv(u, i)) die("post a UD receive", "refused");
}

// A received datagram: status, the GRH area's IPv4 header (UDP, to us;
// its source in *src), and unless raw the pattern and immediate. 1 valid.
static int datagram_ok(struct ud *u, const struct ibv_wc *wc, int raw, uint32_t *seq, uint32_t *src,
                       const char *who) {
  const uint8_t *slot = u->rx + wc->wr_id * SLOT, *ip = slot + RDMAU_GRH - 20;
  uint32_t len = wc->byte_len >= RDMAU_GRH ? wc->byte_len - RDMAU_GRH : 0;
  const char *why = NULL;
  *seq = 0;
  if (wc->status != IBV_WC_SUCCESS) why = ibv_wc_status_str(wc->status);
  else if (!(wc->wc_flags & IBV_WC_GRH) || ip[0] != 0x45 || ip[9] != 17 || ud_get32(ip + 16) != u->me)
    why = "no IPv4 header to our address in the GRH";
  else if (!raw && !ud_payload_ok(slot + RDMAU_GRH, len, seq)) why = "payload does not hold the pattern";
  else if (!raw && (wc->wc_flags & IBV_WC_WITH_IMM) && ntohl(wc->imm_data) != (*seq ^ UD_IMM_SALT))
    why = "wrong immediate";
  *src = ud_get32(ip + 12);
  if (why) printf("udping: %s: datagram of %d bytes from qpn %d dropped: %s\n", who, len, wc->src_qp, why);
  return why == NULL;
}

// ---- server ----

struct source { uint32_t ip; struct ibv_ah *ah; };

// The AH to ip, made on its first datagram; NULL past MAX_AH sources.
static struct ibv_ah *source_ah(struct ud *u, struct source *s, int *n, uint32_t ip, uint32_t qpn) {
  char a[16];
  for (int i = 0; i < *n; i++)
    if (s[i].ip == ip) return s[i].ah;
  ip_str(ip, a);
  if (*n == MAX_AH) { printf("udping: server: more than %d sources, %s ignored\n", MAX_AH, a); return NULL; }
  struct ibv_ah *ah = rdmau_ud_ah(u->pd, ip);
  if (!ah) { printf("udping: server: address handle to %s: %s\n", a, strerror(errno)); return NULL; }
  s[(*n)++] = (struct source){ ip, ah };
  printf("udping: server first datagram from %s qpn %d\n", a, qpn);
  return ah;
}

static int server(const struct opts *o) {
  struct ud u;
  struct counts c = { 0 };
  struct source src[MAX_AH];
  int nsrc = 0;
  ud_open(&u, o->qkey);
  printf("udping: server qpn %d qkey 0x%x mtu %d: echoing datagrams\n", u.qp->qp_num, o->qkey, u.mtu);
  uint64_t idle_until = clock_ns() + (uint64_t)o->idle_s * 1000000000ull;
  while ((o->count == 0 || c.received < o->count || u.outstanding > 0) &&
         (o->idle_s == 0 || clock_ns() < idle_until)) {
    struct ibv_wc wc;
    int n = rdmau_wait(u.cq, &wc, POLL_MS);
    if (n < 0) die("server: poll the CQ", "failed");
    if (n == 0) continue;
    idle_until = clock_ns() + (uint64_t)o->idle_s * 1000000000ull;
    if (wc.wr_id & WR_SEND) {            // an echo went: its slot takes a receive again
      u.outstanding--;
      if (wc.status != IBV_WC_SUCCESS) { printf("udping: server: echo: %s\n", ibv_wc_status_str(wc.status)); c.errors++; }
      if (post_recv(&u, (int)(wc.wr_id & 0xffff))) die("post a UD receive", "refused");
      continue;
    }
    uint32_t seq, ip, len = wc.byte_len >= RDMAU_GRH ? wc.byte_len - RDMAU_GRH : 0;
    c.received++;
    struct ibv_ah *ah = NULL;
    if (datagram_ok(&u, &wc, o->raw, &seq, &ip, "server")) ah = source_ah(&u, src, &nsrc, ip, wc.src_qp);
    else if (wc.status == IBV_WC_SUCCESS) c.bad++;
    else c.errors++;
    if (!ah) {
      if (post_recv(&u, (int)wc.wr_id)) die("post a UD receive", "refused");
      continue;
    }
    if (!o->raw) c.verified += len;
    uint32_t imm = ntohl(wc.imm_data);
    post_send(&u, ah, wc.src_qp, o->qkey, u.rx + wc.wr_id * SLOT + RDMAU_GRH, u.rx_mr->lkey, len,
              (wc.wc_flags & IBV_WC_WITH_IMM) ? &imm : NULL, WR_SEND | wc.wr_id);
    c.sent++;
  }
  printf("udping: server received %d, echoed %d, bad %d, errors %d, verified bytes %lu\n", c.received, c.sent,
         c.bad, c.errors, c.verified);
  return c.bad || c.errors ? 1 : 0;
}

// ---- client ----

// Completions until `until` (ns) or the echo of message seq: 1 echo (or,
// with want_echo 0, no SEND outstanding), 0 deadline.
static int client_wait(struct ud *u, const struct opts *o, struct counts *c, uint32_t seq, int want_echo,
                       uint64_t until) {
  int got = 0;
  while (!got && (want_echo || u->outstanding > 0)) {
    uint64_t t = clock_ns();
    if (t >= until) return 0;
    struct ibv_wc wc;
    int n = rdmau_wait(u->cq, &wc, (int)((until - t) / 1000000) + 1);
    if (n < 0) die("client: poll the CQ", "failed");
    if (n == 0) continue;
    if (wc.wr_id & WR_SEND) {
      u->outstanding--;
      if (wc.status != IBV_WC_SUCCESS) {
        printf("udping: client: SEND of message %d (%d bytes) completed with status %s (%d)\n",
               (uint32_t)wc.wr_id, o->size, ibv_wc_status_str(wc.status), wc.status);
        exit(1);
      }
      continue;
    }
    uint32_t rseq, src;
    int ok = datagram_ok(u, &wc, 0, &rseq, &src, "client");
    if (ok && (src != o->peer_ip || wc.src_qp != o->peer_qpn || !(wc.wc_flags & IBV_WC_WITH_IMM) != !o->imm ||
               wc.byte_len - RDMAU_GRH != o->size)) {
      printf("udping: client: datagram from qpn %d (%s immediate, %d bytes) is not the echo\n", wc.src_qp,
             (wc.wc_flags & IBV_WC_WITH_IMM) ? "with" : "no", wc.byte_len - RDMAU_GRH);
      ok = 0;
    }
    if (ok) { c->received++; c->verified += o->size; got = want_echo && rseq == seq; }
    else c->bad++;
    if (post_recv(u, (int)wc.wr_id)) die("post a UD receive", "refused");
  }
  return 1;
}

// Message seq, resent after each deadline up to o->retries times: 1 answered, 0 lost.
static int one_message(struct ud *u, const struct opts *o, struct ibv_ah *ah, struct counts *c, uint32_t seq) {
  uint32_t imm = seq ^ UD_IMM_SALT;
  // The previous message's resends read the buffer until they complete.
  if (client_wait(u, o, c, seq, 0, clock_ns() + SEND_WAIT_MS * 1000000ull) != 1)
    die("client", "a SEND did not complete within 5 s");
  ud_fill_payload(u->tx, o->size, seq);
  for (uint32_t try = 0; try <= o->retries; try++) {
    post_send(u, ah, o->peer_qpn, o->qkey, u->tx, u->tx_mr->lkey, o->size, o->imm ? &imm : NULL, WR_SEND | seq);
    c->sent++;
    if (client_wait(u, o, c, seq, 1, clock_ns() + (uint64_t)o->wait_ms * 1000000ull)) return 1;
  }
  return 0;
}

static int client(const struct opts *o) {
  struct ud u;
  struct counts c = { 0 };
  char a[16];
  ud_open(&u, o->qkey);
  ip_str(o->peer_ip, a);
  printf("udping: client qpn %d to %s qpn %d qkey 0x%x: %d x %d bytes%s, mtu %d\n", u.qp->qp_num, a,
         o->peer_qpn, o->qkey, o->count, o->size, o->imm ? " with immediate" : "", u.mtu);
  if (o->size > u.mtu) {
    printf("udping: client: %d bytes exceed the port's UD MTU %d\n", o->size, u.mtu);
    exit(2);
  }
  struct ibv_ah *ah = rdmau_ud_ah(u.pd, o->peer_ip);
  if (!ah) {
    printf("udping: client: address handle to %s: %s\n", a, strerror(errno));
    exit(1);
  }
  uint32_t answered = 0;
  for (uint32_t seq = 0; seq < o->count; seq++) answered += (uint32_t)one_message(&u, o, ah, &c, seq);
  client_wait(&u, o, &c, 0, 0, clock_ns() + SEND_WAIT_MS * 1000000ull);
  printf("udping: client sent %d, received %d, lost %d, verified bytes %lu (%d of %d messages answered)\n",
         c.sent, c.received, c.sent - c.received, c.verified, answered, o->count);
  ibv_destroy_ah(ah);
  return c.bad || answered != o->count ? 1 : 0;
}

// ---- arguments ----

static void usage(void) {
  printf("usage: udping server [--qkey Q] [-n count] [--idle S] [--raw]\n"
         "       udping client <ip> --qpn N [--qkey Q] [-s size] [-n count] [--imm] [-w ms] [-r retries]\n");
  exit(2);
}

static uint32_t qkey_arg(const char *s) {
  char *end;
  unsigned long v = strtoul(s, &end, 0);
  if (!*s || *end || v > 0x7fffffffUL) {
    printf("udping: --qkey %s: not a Q_Key (0..0x7fffffff; the high bit is the controlled Q_Key)\n", s);
    exit(2);
  }
  return (uint32_t)v;
}

int main(int argc, char **argv) {
  struct opts o = { .qkey = RDMAU_UD_QKEY, .size = 64, .count = 10, .wait_ms = 500, .retries = 3 };
  int i = 2, have_qpn = 0;
  if (argc < 2) usage();
  o.server = strcmp(argv[1], "server") == 0;
  if (!o.server && strcmp(argv[1], "client") != 0) usage();
  if (o.server) o.count = 0;
  if (!o.server) {
    if (argc < 3 || rdmau_parse_ipv4(argv[2], &o.peer_ip) < 0) {
      printf("udping: client: %s: not an IPv4 address\n", argc < 3 ? "(none)" : argv[2]);
      exit(2);
    }
    i = 3;
  }
  for (; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--raw") == 0 && o.server) { o.raw = 1; continue; }
    if (strcmp(a, "--imm") == 0 && !o.server) { o.imm = 1; continue; }
    if (!v) usage();
    i++;
    if (strcmp(a, "--qkey") == 0) o.qkey = qkey_arg(v);
    else if (strcmp(a, "-n") == 0) o.count = (uint32_t)rdmau_num("udping", a, v, o.server ? 0 : 1, 1000000, "");
    else if (strcmp(a, "--idle") == 0 && o.server) o.idle_s = (uint32_t)rdmau_num("udping", a, v, 1, 3600, "s");
    else if (strcmp(a, "--qpn") == 0 && !o.server) { o.peer_qpn = (uint32_t)rdmau_num("udping", a, v, 1, 0xffffff, ""); have_qpn = 1; }
    else if (strcmp(a, "-s") == 0 && !o.server) o.size = (uint32_t)rdmau_num("udping", a, v, UD_SEQ_LEN, MAX_MTU, "bytes");
    else if (strcmp(a, "-w") == 0 && !o.server) o.wait_ms = (uint32_t)rdmau_num("udping", a, v, 1, 60000, "ms");
    else if (strcmp(a, "-r") == 0 && !o.server) o.retries = (uint32_t)rdmau_num("udping", a, v, 0, 100, "");
    else usage();
  }
  if (!o.server && !have_qpn) { printf("udping: client: --qpn N (the server's QPN) is required\n"); exit(2); }
  return o.server ? server(&o) : client(&o);
}
