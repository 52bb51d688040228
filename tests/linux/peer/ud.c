// ud.c: xrpeer's Unreliable Datagram roles (IBV_QPT_UD): an echo server
// and a ping-pong client. No connection manager: the server prints its
// QPN, the client is told it (--qpn) and both use one Q_Key (--qkey); the
// server answers every datagram to the source it names (wc.src_qp and the
// GRH's IPv4 source address), so it needs to know nothing of its clients.
// UD has no retransmission: the client resends a message whose echo has
// not come within its deadline and counts what was lost.
//
// A payload is a message's sequence number (4 bytes, big-endian) then the
// pattern byte k = (seq + k) mod 256 for k >= 4; a SEND_WITH_IMM carries
// seq ^ UD_IMM_SALT. Both sides check both (the server not with --raw,
// for clients with payloads of their own), and the client the echo's
// source QPN.
#include "peer.h"

#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UD_GRH 40                 // a UD receive buffer starts with the GRH's 40 bytes
#define UD_IPV4_HDR 20            // for RoCEv2 over IPv4: the IPv4 header, at the GRH's end
#define UD_MAX_MTU 4096           // the largest path MTU
#define UD_SLOT (UD_GRH + UD_MAX_MTU)
#define UD_RECVS 32               // receives kept posted
#define UD_SENDS UD_RECVS         // the server echoes from a receive's slot
#define UD_POLL_MS 200            // the server's slice between looks at its stop flag
#define UD_SEND_WAIT_MS 5000      // a posted SEND completes within this
#define UD_MAX_AH 8               // the server's address handles, one per source address
#define WR_SEND (1ull << 32)      // a SEND's wr_id: WR_SEND | seq (or slot); a receive's: its slot

struct ud {
  struct peer_dev *d;
  struct pres r;
  uint8_t *rx;                    // UD_RECVS slots of UD_SLOT bytes
  uint8_t *tx;                    // the client's payload
  struct ibv_mr *rx_mr, *tx_mr;
  int mtu;                        // the port's active MTU: the largest UD payload
  int outstanding;                // SENDs posted and not completed
};

struct ud_count {
  uint32_t sent, received, bad, errors;
  uint64_t verified;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig) { (void)sig; stop = 1; }

static void ip_str(uint32_t ip, char out[16]) {
  snprintf(out, 16, "%u.%u.%u.%u", ip >> 24, ip >> 16 & 255, ip >> 8 & 255, ip & 255);
}

// ---------------------------------------------------------------- the QP

// RESET -> INIT (P_Key index 0, the Q_Key) -> RTR -> RTS: a UD QP needs no
// peer to be ready.
static int qp_ready(struct ud *u, uint32_t qkey) {
  struct ibv_qp_attr a;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_INIT;
  a.port_num = u->d->port;
  a.qkey = qkey;
  if (ibv_modify_qp(u->r.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY)) {
    perror("xrpeer: UD QP to INIT");
    return -1;
  }
  a.qp_state = IBV_QPS_RTR;
  if (ibv_modify_qp(u->r.qp, &a, IBV_QP_STATE)) { perror("xrpeer: UD QP to RTR"); return -1; }
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = pcm_random() & 0xffffff;
  if (ibv_modify_qp(u->r.qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN)) { perror("xrpeer: UD QP to RTS"); return -1; }
  return 0;
}

static int post_recv(struct ud *u, int slot) {
  struct ibv_sge sge = { .addr = (uintptr_t)(u->rx + (size_t)slot * UD_SLOT), .length = UD_SLOT,
                         .lkey = u->rx_mr->lkey };
  struct ibv_recv_wr wr = { .wr_id = (uint64_t)slot, .sg_list = &sge, .num_sge = 1 }, *bad;
  if (ibv_post_recv(u->r.qp, &wr, &bad)) { perror("xrpeer: post a UD receive"); return -1; }
  return 0;
}

// A SEND (with immediate if imm) of len bytes at buf to qpn through ah.
static int post_send(struct ud *u, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey, const uint8_t *buf,
                     uint32_t lkey, uint32_t len, const uint32_t *imm, uint64_t wr_id) {
  struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = len, .lkey = lkey };
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
  if (ibv_post_send(u->r.qp, &wr, &bad)) { perror("xrpeer: post a UD SEND"); return -1; }
  u->outstanding++;
  return 0;
}

// Resources, the QP in RTS and every receive posted; tx_len > 0 for a sender.
static int ud_open(struct ud *u, struct peer_dev *d, uint32_t qkey, uint32_t tx_len) {
  memset(u, 0, sizeof *u);
  u->d = d;
  u->mtu = pcm_mtu_bytes(d->active_mtu);
  u->rx = calloc(UD_RECVS, UD_SLOT);
  u->tx = tx_len ? calloc(1, tx_len) : NULL;
  if (!u->rx || (tx_len && !u->tx) || pres_create_qp(&u->r, d, 2 * (UD_RECVS + UD_SENDS), UD_RECVS, IBV_QPT_UD)) {
    perror("xrpeer: UD resources");
    return -1;
  }
  u->rx_mr = pres_reg(&u->r, u->rx, (size_t)UD_RECVS * UD_SLOT);
  u->tx_mr = tx_len ? pres_reg(&u->r, u->tx, tx_len) : NULL;
  if (!u->rx_mr || (tx_len && !u->tx_mr)) { perror("xrpeer: UD memory registration"); return -1; }
  if (qp_ready(u, qkey)) return -1;
  for (int i = 0; i < UD_RECVS; i++)
    if (post_recv(u, i)) return -1;
  return 0;
}

static void ud_close(struct ud *u) {
  if (u->rx_mr) ibv_dereg_mr(u->rx_mr);
  if (u->tx_mr) ibv_dereg_mr(u->tx_mr);
  pres_destroy(&u->r);
  free(u->rx);
  free(u->tx);
}

// The GRH area of a receive: rxe puts a RoCEv2/IPv4 datagram's IPv4 header
// in its last 20 bytes. 1 if it is there, UDP, to our address (its source
// in *src).
static int grh_ipv4(const struct ud *u, const struct ibv_wc *wc, const uint8_t *slot, uint32_t *src) {
  const uint8_t *ip = slot + UD_GRH - UD_IPV4_HDR;
  if (!(wc->wc_flags & IBV_WC_GRH) || ip[0] != 0x45 || ip[9] != 17) return 0;
  *src = ud_get32(ip + 12);
  return ud_get32(ip + 16) == u->d->ipv4;
}

// A received datagram's checks: status, GRH, and unless raw the payload
// and immediate. 1 if valid (its sequence number in *seq, its source
// address in *src).
static int datagram_ok(struct ud *u, const struct ibv_wc *wc, int raw, uint32_t *seq, uint32_t *src,
                       const char *who) {
  const uint8_t *slot = u->rx + (size_t)wc->wr_id * UD_SLOT;
  uint32_t len = wc->byte_len >= UD_GRH ? wc->byte_len - UD_GRH : 0;
  const char *why = NULL;
  if (wc->status != IBV_WC_SUCCESS) why = ibv_wc_status_str(wc->status);
  else if (!grh_ipv4(u, wc, slot, src)) why = "no IPv4 header to our address in the GRH";
  else if (raw) *seq = 0;
  else if (!ud_payload_ok(slot + UD_GRH, len, seq)) why = "payload does not hold the pattern";
  else if ((wc->wc_flags & IBV_WC_WITH_IMM) && ntohl(wc->imm_data) != (*seq ^ UD_IMM_SALT)) why = "wrong immediate";
  if (why) printf("xrpeer: %s: datagram of %u bytes from qpn %u dropped: %s\n", who, len, wc->src_qp, why);
  return !why;
}

// ---------------------------------------------------------------- server

struct ud_ah { uint32_t ip; struct ibv_ah *ah; };

// An address handle back to the datagram's source, one per source address.
static struct ibv_ah *ah_for(struct ud *u, struct ud_ah *tab, int *n, uint32_t src, struct ibv_wc *wc) {
  for (int i = 0; i < *n; i++)
    if (tab[i].ip == src) return tab[i].ah;
  if (*n == UD_MAX_AH) { fprintf(stderr, "xrpeer: ud-server: more than %d sources\n", UD_MAX_AH); return NULL; }
  struct ibv_grh *grh = (struct ibv_grh *)(u->rx + (size_t)wc->wr_id * UD_SLOT);
  struct ibv_ah *ah = ibv_create_ah_from_wc(u->r.pd, wc, grh, u->d->port);
  if (!ah) { perror("xrpeer: ud-server: address handle from a completion"); return NULL; }
  char s[16];
  ip_str(src, s);
  printf("xrpeer: ud-server first datagram from %s qpn %u\n", s, wc->src_qp);
  tab[(*n)++] = (struct ud_ah){ src, ah };
  return ah;
}

// One receive's completion: a valid datagram is echoed from its slot, with
// its immediate if it had one (the slot is posted again once the echo
// completes), anything else counted. --raw echoes any payload unchecked.
static void serve_recv(struct ud *u, const struct ud_opts *o, struct ibv_wc *wc, struct ud_count *c,
                       struct ud_ah *tab, int *nah) {
  uint32_t seq, src;
  int slot = (int)wc->wr_id;
  if (wc->status == IBV_WC_SUCCESS) c->received++;
  if (!datagram_ok(u, wc, o->raw, &seq, &src, "ud-server")) {
    wc->status == IBV_WC_SUCCESS ? c->bad++ : c->errors++;
    post_recv(u, slot);
    return;
  }
  uint32_t len = wc->byte_len - UD_GRH, imm = ntohl(wc->imm_data);
  c->verified += o->raw ? 0 : len;
  struct ibv_ah *ah = ah_for(u, tab, nah, src, wc);
  if (!ah || post_send(u, ah, wc->src_qp, o->qkey, u->rx + (size_t)slot * UD_SLOT + UD_GRH, u->rx_mr->lkey, len,
                       (wc->wc_flags & IBV_WC_WITH_IMM) ? &imm : NULL, WR_SEND | (uint64_t)slot)) {
    c->errors++;
    post_recv(u, slot);
  }
}

// One completion: a receive (served) or an echo's SEND (its slot posted again).
static void serve_one(struct ud *u, const struct ud_opts *o, struct ibv_wc *wc, struct ud_count *c,
                      struct ud_ah *tab, int *nah) {
  if (!(wc->wr_id & WR_SEND)) { serve_recv(u, o, wc, c, tab, nah); return; }
  u->outstanding--;
  if (wc->status == IBV_WC_SUCCESS) c->sent++;
  else { printf("xrpeer: ud-server: echo: %s\n", ibv_wc_status_str(wc->status)); c->errors++; }
  post_recv(u, (int)(wc->wr_id & ~WR_SEND));
}

// Until SIGINT/SIGTERM, o->count datagrams or o->idle_s without one; then
// the echoes still outstanding complete before the summary.
int ud_server(struct peer_dev *d, const struct ud_opts *o) {
  struct ud u;
  struct ud_ah tab[UD_MAX_AH];
  int nah = 0;
  struct ud_count c = { 0 };
  if (ud_open(&u, d, o->qkey, 0)) return 1;
  struct sigaction sa = { .sa_handler = on_signal };
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  printf("xrpeer: ud-server qpn %u qkey 0x%08x mtu %d: echoing datagrams\n", u.r.qp->qp_num, o->qkey, u.mtu);
  uint64_t last = now_ns(), idle = (uint64_t)o->idle_s * 1000000000u;
  struct ibv_wc wc[16];
  int n = 0;
  while (!stop && !(o->count && c.received + c.errors >= o->count) && !(idle && now_ns() - last > idle)) {
    if ((n = pres_poll(&u.r, wc, 16, UD_POLL_MS)) < 0) break;
    for (int i = 0; i < n; i++) {
      if (!(wc[i].wr_id & WR_SEND)) last = now_ns();
      serve_one(&u, o, &wc[i], &c, tab, &nah);
    }
  }
  while (n >= 0 && u.outstanding > 0 && (n = pres_poll(&u.r, wc, 1, UD_SEND_WAIT_MS)) > 0)
    serve_one(&u, o, &wc[0], &c, tab, &nah);
  if (n < 0) { perror("xrpeer: ud-server: poll the CQ"); c.errors++; }
  if (u.outstanding > 0) { printf("xrpeer: ud-server: %d echoes never completed\n", u.outstanding); c.errors++; }
  printf("xrpeer: ud-server received %u, echoed %u, bad %u, errors %u, verified bytes %llu\n", c.received, c.sent,
         c.bad, c.errors, (unsigned long long)c.verified);
  for (int i = 0; i < nah; i++) ibv_destroy_ah(tab[i].ah);
  ud_close(&u);
  return c.bad || c.errors ? 1 : 0;
}

// ---------------------------------------------------------------- client

// A SEND completion: 0, or -1 (reported) if it failed.
static int send_done(struct ud *u, const struct ibv_wc *wc, const struct ud_opts *o) {
  u->outstanding--;
  if (wc->status == IBV_WC_SUCCESS) return 0;
  printf("xrpeer: ud-client: SEND of message %u (%u bytes) completed with status %s (%d), vendor_err 0x%x\n",
         (uint32_t)(wc->wr_id & ~WR_SEND), o->size, ibv_wc_status_str(wc->status), wc->status, wc->vendor_err);
  return -1;
}

// Completions until `until` (ns) or the echo of message seq: 1 echo, 0
// deadline, -1 error. want_echo 0: returns once no SEND is outstanding.
static int client_wait(struct ud *u, const struct ud_opts *o, struct ud_count *c, uint32_t seq, int want_echo,
                       uint64_t until) {
  int got = 0;
  while (!got && (want_echo || u->outstanding > 0)) {
    uint64_t t = now_ns();
    if (t >= until) return 0;
    struct ibv_wc wc;
    int n = pres_poll(&u->r, &wc, 1, (int)((until - t) / 1000000u) + 1);
    if (n < 0) { perror("xrpeer: ud-client: poll the CQ"); return -1; }
    if (n == 0) continue;
    if (wc.wr_id & WR_SEND) {
      if (send_done(u, &wc, o)) return -1;
      continue;
    }
    uint32_t rseq, src;
    int ok = datagram_ok(u, &wc, 0, &rseq, &src, "ud-client");
    if (ok && (src != o->peer_ip || wc.src_qp != o->peer_qpn || !(wc.wc_flags & IBV_WC_WITH_IMM) != !o->imm ||
               wc.byte_len - UD_GRH != o->size)) {
      printf("xrpeer: ud-client: datagram from qpn %u (%s immediate, %u bytes) is not the echo\n", wc.src_qp,
             (wc.wc_flags & IBV_WC_WITH_IMM) ? "with" : "no", wc.byte_len - UD_GRH);
      ok = 0;
    }
    if (ok) { c->received++; c->verified += o->size; got = want_echo && rseq == seq; }
    else c->bad++;
    if (post_recv(u, (int)wc.wr_id)) return -1;
  }
  return 1;
}

static struct ibv_ah *client_ah(struct ud *u, uint32_t ip) {
  struct ibv_ah_attr a;
  memset(&a, 0, sizeof a);
  a.is_global = 1;
  a.port_num = u->d->port;
  a.grh.sgid_index = (uint8_t)u->d->gid_index;
  a.grh.hop_limit = 64;
  a.grh.dgid.raw[10] = a.grh.dgid.raw[11] = 0xff;                // ::ffff:a.b.c.d
  ud_put32(a.grh.dgid.raw + 12, ip);
  struct ibv_ah *ah = ibv_create_ah(u->r.pd, &a);
  if (!ah) perror("xrpeer: ud-client: address handle to the server");
  return ah;
}

// Message seq: sent, then resent after each deadline, up to o->retries
// times. 1 answered (or, one way, sent), 0 lost, -1 error.
static int one_message(struct ud *u, const struct ud_opts *o, struct ibv_ah *ah, struct ud_count *c, uint32_t seq) {
  uint32_t imm = seq ^ UD_IMM_SALT;
  // The previous message's resends still read the buffer until they complete.
  if (client_wait(u, o, c, seq, 0, now_ns() + UD_SEND_WAIT_MS * 1000000ull) != 1) return -1;
  ud_fill_payload(u->tx, o->size, seq);
  for (int try = 0; try <= o->retries; try++) {
    if (post_send(u, ah, o->peer_qpn, o->qkey, u->tx, u->tx_mr->lkey, o->size, o->imm ? &imm : NULL,
                  WR_SEND | seq))
      return -1;
    c->sent++;
    int wait = o->oneway ? UD_SEND_WAIT_MS : o->wait_ms;
    int r = client_wait(u, o, c, seq, !o->oneway, now_ns() + (uint64_t)wait * 1000000u);
    if (r != 0) return r;
    if (o->oneway) { printf("xrpeer: ud-client: SEND of message %u did not complete\n", seq); return -1; }
  }
  return 0;
}

int ud_client(struct peer_dev *d, const struct ud_opts *o) {
  struct ud u;
  struct ud_count c = { 0 };
  char s[16];
  if (ud_open(&u, d, o->qkey, o->size)) return 1;
  ip_str(o->peer_ip, s);
  printf("xrpeer: ud-client qpn %u to %s qpn %u qkey 0x%08x: %u x %u bytes%s%s, mtu %d\n", u.r.qp->qp_num, s,
         o->peer_qpn, o->qkey, o->count, o->size, o->imm ? " with immediate" : "", o->oneway ? " one way" : "", u.mtu);
  if (o->size > (uint32_t)u.mtu) printf("xrpeer: ud-client: %u bytes exceed the port's MTU %d\n", o->size, u.mtu);
  struct ibv_ah *ah = client_ah(&u, o->peer_ip);
  int rc = ah ? 0 : -1;
  uint32_t answered = 0;
  for (uint32_t seq = 0; rc == 0 && seq < o->count; seq++) {
    int r = one_message(&u, o, ah, &c, seq);
    if (r < 0) rc = -1;
    answered += r > 0;
  }
  if (rc == 0 && client_wait(&u, o, &c, 0, 0, now_ns() + UD_SEND_WAIT_MS * 1000000ull) != 1) rc = -1;
  if (o->oneway)
    printf("xrpeer: ud-client sent %u one way, every SEND completed: %s\n", c.sent, rc ? "no" : "yes");
  else
    printf("xrpeer: ud-client sent %u, received %u, lost %u, verified bytes %llu (%u of %u messages answered)\n",
           c.sent, c.received, c.sent - c.received, (unsigned long long)c.verified, answered, o->count);
  if (ah) ibv_destroy_ah(ah);
  ud_close(&u);
  return rc || c.bad || (!o->oneway && answered != o->count) ? 1 : 0;
}
