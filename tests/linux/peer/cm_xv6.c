// cm_xv6.c: xrpeer's connections over the project's own exchange
// (proto-spec/cm.md over UDP: REQ, REP, REJ, RTU, DREQ, DREP, both roles,
// retries [CM-TMO-1]) and the QP's moves RESET -> INIT -> RTR -> RTS from
// the exchanged facts [CM-PARAM-1..3]: what xv6 spoke before it spoke the
// InfiniBand CM. Selected by `xrpeer --xv6-cm`; cm_rdma.c (Linux's
// librdmacm) is the default. Selective repeat is never offered: caps is
// always 0 (rxe has no SR).
#include "peer.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <unistd.h>

#define CM_MAGIC 0x7872
#define CM_VERSION 1
#define CM_RETRY_MS 250
#define CM_MAX_RETRIES 5
#define LEN_HDR 12
#define LEN_REQ 108
#define LEN_REJ 72
#define MAX_RES 16              // READ resources a REQ/REP may name [CM-MSG-4]
#define PCM_DEFAULT_TIMEOUT 16  // 4.096 us << 16 = 268 ms; 7 retries ride ~1.9 s

enum { T_REQ = 1, T_REP, T_REJ, T_RTU, T_DREQ, T_DREP };
enum { REJ_CONSUMER = 1, REJ_NO_LISTENER, REJ_NO_RES, REJ_INVALID, REJ_VERSION, REJ_TIMEOUT, REJ_STALE };

struct cmsg {
  uint8_t version, type;
  uint32_t src, dst, qpn, psn;
  uint8_t mtu, caps, resp_res, init_depth;
  uint8_t gid[16], mac[6];
  uint8_t plen, pdata[PCM_PRIVATE_MAX];
  uint16_t reason;
};

// ---------------------------------------------------------------- helpers

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void put32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (24 - 8 * i)); }
static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static uint32_t get32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

static uint32_t new_conn_id(void) {
  uint32_t id;
  while ((id = pcm_random()) == 0) {}
  return id;
}

static const char *reject_str(int reason) {
  static const char *const n[] = { "?", "CONSUMER_REJECT", "NO_LISTENER", "NO_RESOURCES", "INVALID_PARAM",
                                   "UNSUPPORTED_VERSION", "TIMEOUT", "STALE_CONN" };
  return reason >= 1 && reason <= 7 ? n[reason] : "?";
}

// ---------------------------------------------------------------- codec

static int encode(const struct cmsg *m, uint8_t *b) {
  int len = m->type == T_REQ || m->type == T_REP ? LEN_REQ : m->type == T_REJ ? LEN_REJ : LEN_HDR;
  memset(b, 0, (size_t)len);
  put16(b, CM_MAGIC);
  b[2] = CM_VERSION;
  b[3] = m->type;
  put32(b + 4, m->src);
  put32(b + 8, m->dst);
  if (m->type == T_REQ || m->type == T_REP) {
    put32(b + 12, m->qpn & 0xffffff);
    put32(b + 16, m->psn & 0xffffff);
    b[20] = m->mtu;
    b[21] = 0;                             // caps: CAP_SR never offered to rxe
    b[22] = m->resp_res;
    b[23] = m->init_depth;
    memcpy(b + 28, m->gid, 16);
    memcpy(b + 44, m->mac, 6);
    b[50] = m->plen;
    memcpy(b + 52, m->pdata, m->plen);
  } else if (m->type == T_REJ) {
    put16(b + 12, m->reason);
    b[14] = m->plen;
    memcpy(b + 16, m->pdata, m->plen);
  }
  return len;
}

static int expected_len(uint8_t type) {
  switch (type) {
  case T_REQ: case T_REP: return LEN_REQ;
  case T_REJ: return LEN_REJ;
  case T_RTU: case T_DREQ: case T_DREP: return LEN_HDR;
  default: return 0;
  }
}

// REQ/REP body; 0 or REJ_INVALID [CM-MSG-4], -1 for reserved bits [CM-MSG-2].
static int parse_conn(struct cmsg *m, const uint8_t *b) {
  if ((b[21] & 0xfe) || get32(b + 24) || b[51]) return -1;
  uint32_t qpn = get32(b + 12), psn = get32(b + 16);
  m->qpn = qpn; m->psn = psn;
  m->mtu = b[20]; m->caps = b[21]; m->resp_res = b[22]; m->init_depth = b[23];
  memcpy(m->gid, b + 28, 16);
  memcpy(m->mac, b + 44, 6);
  m->plen = b[50];
  if (m->plen > PCM_PRIVATE_MAX || qpn >> 24 || psn >> 24 || m->mtu < 1 || m->mtu > 5 ||
      m->resp_res > MAX_RES || m->init_depth > MAX_RES) {
    m->plen = 0;
    return REJ_INVALID;
  }
  memcpy(m->pdata, b + 52, m->plen);
  return 0;
}

// 0 valid; > 0 a REJ reason the sender deserves; -1 drop [CM-MSG-2] [CM-MSG-4].
static int parse(struct cmsg *m, const uint8_t *b, int n) {
  memset(m, 0, sizeof *m);
  if (n < LEN_HDR || get16(b) != CM_MAGIC) return -1;
  m->version = b[2];
  m->type = b[3];
  m->src = get32(b + 4);
  m->dst = get32(b + 8);
  if (!expected_len(m->type) || n != expected_len(m->type)) return -1;
  if (m->version != CM_VERSION) return m->type == T_REQ ? REJ_VERSION : -1;
  if (m->type == T_REQ || m->type == T_REP) return parse_conn(m, b);
  if (m->type == T_REJ) {
    if (b[15] || b[14] > PCM_PRIVATE_MAX) return -1;
    m->reason = get16(b + 12);
    m->plen = b[14];
    memcpy(m->pdata, b + 16, m->plen);
  }
  return 0;
}

// ---------------------------------------------------------------- datagrams

static int udp_socket(int port) {
  int s = socket(AF_INET, SOCK_DGRAM, 0);
  if (s < 0) return -1;
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                           .sin_addr.s_addr = htonl(INADDR_ANY) };
  if (bind(s, (struct sockaddr *)&a, sizeof a) < 0) { close(s); return -1; }
  return s;
}

static int send_raw(int sock, const struct sockaddr_in *to, const uint8_t *b, int n) {
  return sendto(sock, b, (size_t)n, 0, (const struct sockaddr *)to, sizeof *to) == n ? 0 : -1;
}

static int send_msg(struct pconn *c, const struct cmsg *m, int remember) {
  uint8_t b[128];
  int n = encode(m, b);
  if (remember) { memcpy(c->last, b, (size_t)n); c->last_len = n; }
  return send_raw(c->sock, &c->peer, b, n);
}

static void reject_to(int sock, const struct sockaddr_in *to, uint32_t src, uint32_t dst, uint16_t reason) {
  struct cmsg r = { .type = T_REJ, .src = src, .dst = dst, .reason = reason };
  uint8_t b[128];
  send_raw(sock, to, b, encode(&r, b));
}

// The next valid message within timeout_ms: 1, 0 on timeout, -1 on error,
// 2 for a REP with invalid parameters (m has its header: the active side
// answers it with REJ [CM-MSG-4]). A malformed REQ is answered with REJ
// here [CM-MSG-4]; other junk is counted.
static int recv_msg(int sock, struct cmsg *m, struct sockaddr_in *from, int timeout_ms, unsigned *dropped) {
  uint64_t end = now_ns() + (uint64_t)timeout_ms * 1000000u;
  for (;;) {
    uint64_t t = now_ns();
    if (t >= end) return 0;
    struct pollfd pf = { .fd = sock, .events = POLLIN };
    int pr = poll(&pf, 1, (int)((end - t + 999999) / 1000000));
    if (pr < 0 && errno != EINTR) return -1;
    if (pr <= 0) continue;
    uint8_t b[256];
    socklen_t fl = sizeof *from;
    ssize_t n = recvfrom(sock, b, sizeof b, 0, (struct sockaddr *)from, &fl);
    if (n < 0) return errno == EINTR ? 0 : -1;
    int rc = parse(m, b, (int)n);
    if (rc == 0) return 1;
    if (rc > 0 && m->type == T_REP) return 2;
    if (rc > 0 && m->type == T_REQ) reject_to(sock, from, 0, m->src, (uint16_t)rc);
    (*dropped)++;
  }
}

// Sent by the peer of this connection, with both connection IDs [CM-STATE-5].
static int from_peer(struct pconn *c, const struct cmsg *m, const struct sockaddr_in *from) {
  if (from->sin_addr.s_addr == c->peer.sin_addr.s_addr && from->sin_port == c->peer.sin_port &&
      m->dst == c->local_id && m->src == c->remote_id)
    return 1;
  c->dropped++;
  return 0;
}

static void send_hdr(struct pconn *c, uint8_t type) {
  struct cmsg m = { .type = type, .src = c->local_id, .dst = c->remote_id };
  send_msg(c, &m, 0);
}

// ---------------------------------------------------------------- QP moves

static int qp_init(struct pconn *c) {
  struct ibv_qp_attr a;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_INIT;
  a.port_num = c->dev->port;
  a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  return ibv_modify_qp(c->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

static int qp_rtr(struct pconn *c) {
  struct ibv_qp_attr a;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = c->path_mtu;
  a.dest_qp_num = c->peer_qpn;
  a.rq_psn = c->peer_psn;
  a.max_dest_rd_atomic = c->dev->resp_res;                      // [CM-PARAM-2]
  a.min_rnr_timer = 1;
  a.ah_attr.is_global = 1;
  a.ah_attr.port_num = c->dev->port;
  a.ah_attr.grh.sgid_index = (uint8_t)c->dev->gid_index;
  a.ah_attr.grh.hop_limit = 64;
  memcpy(a.ah_attr.grh.dgid.raw, c->peer_gid, 16);              // [CM-PARAM-3]
  return ibv_modify_qp(c->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                       IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
}

static int qp_rts(struct pconn *c, const struct pcm_param *p) {
  struct ibv_qp_attr a;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = c->my_psn;
  a.timeout = p && p->timeout ? p->timeout : PCM_DEFAULT_TIMEOUT;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = c->dev->init_depth < c->peer_resp_res ? c->dev->init_depth : c->peer_resp_res;
  return ibv_modify_qp(c->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                       IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

static int xqp_init(struct pconn *c) {
  struct ibv_qp_attr a;
  struct ibv_qp_init_attr ia;
  if (ibv_query_qp(c->qp, &a, IBV_QP_STATE, &ia)) return -1;
  if (a.qp_state == IBV_QPS_RESET && qp_init(c)) { perror("xrpeer: QP to INIT"); return -1; }
  return 0;
}

static int qp_connect(struct pconn *c, const struct pcm_param *p) {
  if (xqp_init(c)) return -1;
  if (qp_rtr(c)) { perror("xrpeer: QP to RTR"); return -1; }
  if (qp_rts(c, p)) { perror("xrpeer: QP to RTS"); return -1; }
  return 0;
}


// The QP's expected PSN moved: an RC request arrived (a lost RTU).
static int qp_heard(struct pconn *c) {
  struct ibv_qp_attr a;
  struct ibv_qp_init_attr ia;
  return ibv_query_qp(c->qp, &a, IBV_QP_RQ_PSN, &ia) == 0 && a.rq_psn != c->peer_psn;
}

// ---------------------------------------------------------------- exchange

static void fill_local(struct pconn *c, struct cmsg *m, uint8_t type, const struct pcm_param *p) {
  memset(m, 0, sizeof *m);
  m->type = type;
  m->src = c->local_id;
  m->dst = c->remote_id;
  m->qpn = c->qp->qp_num;
  m->psn = c->my_psn;
  m->mtu = (uint8_t)c->path_mtu;
  m->resp_res = c->dev->resp_res;
  m->init_depth = c->dev->init_depth;
  memcpy(m->gid, c->dev->gid.raw, 16);
  memcpy(m->mac, c->dev->mac, 6);
  if (p && p->private_len) {
    m->plen = p->private_len > PCM_PRIVATE_MAX ? PCM_PRIVATE_MAX : p->private_len;
    memcpy(m->pdata, p->private_data, m->plen);
  }
}

static void take_peer(struct pconn *c, const struct cmsg *m) {
  c->remote_id = m->src;
  c->peer_qpn = m->qpn;
  c->peer_psn = m->psn;
  c->peer_mtu = m->mtu;
  c->peer_caps = m->caps;
  c->peer_resp_res = m->resp_res;
  c->peer_init_depth = m->init_depth;
  memcpy(c->peer_gid, m->gid, 16);
  memcpy(c->peer_mac, m->mac, 6);
  c->private_len = m->plen;
  memcpy(c->private_data, m->pdata, m->plen);
}

static enum ibv_mtu local_mtu(const struct pconn *c, const struct pcm_param *p) {
  enum ibv_mtu m = c->dev->active_mtu;
  return p && p->mtu_limit && p->mtu_limit < m ? p->mtu_limit : m;
}

static int xlisten(int port) { return udp_socket(port ? port : PCM_PORT); }

static int xget_request(int lsock, struct pconn *c, int timeout_ms) {
  struct cmsg m;
  struct sockaddr_in from;
  unsigned junk = 0;
  uint64_t end = now_ns() + (uint64_t)timeout_ms * 1000000u;
  for (;;) {
    uint64_t t = now_ns();
    if (t >= end) return -1;
    int r = recv_msg(lsock, &m, &from, (int)((end - t) / 1000000u) + 1, &junk);
    if (r < 0) return -1;
    if (r == 0 || m.type != T_REQ) continue;                    // [CM-STATE-1]
    if (!pcm_is_mapped_ipv4(m.gid)) { reject_to(lsock, &from, 0, m.src, REJ_INVALID); continue; }
    c->sock = udp_socket(0);                                    // replies from a port of its own,
    if (c->sock < 0) return -1;                                 // as the xv6 library does
    c->peer = from;
    c->local_id = new_conn_id();
    take_peer(c, &m);
    c->state = PCM_REQ_RCVD;
    return 0;
  }
}

static int xreject(struct pconn *c, uint16_t reason) {
  c->state = PCM_CLOSED;
  reject_to(c->sock, &c->peer, c->local_id, c->remote_id, reason);
  return 0;
}

// Waits for RTU (or the first RC frame on the QP) [CM-STATE-3], resending REP.
// XRPEER_TEST_LOSE_RTU=1 in the environment ignores every RTU: the
// lost-RTU path, which test-interop checks (interop_peer_lost_rtu).
static int await_rtu(struct pconn *c) {
  const char *lose = getenv("XRPEER_TEST_LOSE_RTU");
  int take_rtu = !(lose && *lose == '1');
  for (int tries = 0; tries <= CM_MAX_RETRIES; tries++) {
    uint64_t end = now_ns() + CM_RETRY_MS * 1000000ull;
    while (now_ns() < end) {
      struct cmsg m;
      struct sockaddr_in from;
      int r = recv_msg(c->sock, &m, &from, 20, &c->dropped);
      if (r < 0) return -1;
      if (r == 1 && from_peer(c, &m, &from) && m.type == T_RTU && take_rtu) return 0;
      if (qp_heard(c)) {
        fprintf(stderr, "xrpeer: established by the first RC frame (no RTU)\n");
        return 0;
      }
    }
    if (tries < CM_MAX_RETRIES) send_raw(c->sock, &c->peer, c->last, c->last_len);
  }
  return -1;
}

static int xaccept(struct pconn *c, const struct pcm_param *p) {
  if (c->state != PCM_REQ_RCVD || !c->qp) return -1;
  enum ibv_mtu mine = local_mtu(c, p);
  c->path_mtu = c->peer_mtu < mine ? (enum ibv_mtu)c->peer_mtu : mine;   // [CM-PARAM-1]
  c->my_psn = pcm_random() & 0xffffff;
  if (qp_connect(c, p)) { xreject(c, REJ_NO_RES); return -1; }     // before REP [CM-STATE-3]
  struct cmsg m;
  fill_local(c, &m, T_REP, p);
  if (send_msg(c, &m, 1)) return -1;
  c->state = PCM_REP_SENT;
  if (await_rtu(c) == 0) { c->state = PCM_ESTABLISHED; return 0; }
  reject_to(c->sock, &c->peer, c->local_id, c->remote_id, REJ_TIMEOUT);   // [CM-TMO-2]
  pcm_qp_error(c);
  c->state = PCM_CLOSED;
  fprintf(stderr, "xrpeer: no RTU\n");
  return -1;
}

// A REP or REJ for our REQ: from the peer's address (any port: it answers
// from a port of its own [CM-STATE-7]) and to our connection ID.
static int answer_rep(struct pconn *c, const struct cmsg *m, const struct sockaddr_in *from,
                      const struct pcm_param *p) {
  if (m->type == T_REJ) {
    c->reject_reason = m->reason;
    c->private_len = m->plen;
    memcpy(c->private_data, m->pdata, m->plen);
    c->state = PCM_REJECTED;
    fprintf(stderr, "xrpeer: rejected: %s\n", reject_str(m->reason));
    return -1;
  }
  c->peer.sin_port = from->sin_port;
  take_peer(c, m);
  enum ibv_mtu mine = local_mtu(c, p);
  c->path_mtu = c->peer_mtu < mine ? (enum ibv_mtu)c->peer_mtu : mine;
  if (!pcm_is_mapped_ipv4(c->peer_gid) || qp_connect(c, p)) {
    reject_to(c->sock, &c->peer, c->local_id, c->remote_id, REJ_INVALID);
    c->state = PCM_CLOSED;
    return -1;
  }
  send_hdr(c, T_RTU);
  send_hdr(c, T_RTU);                                           // a lost RTU costs the peer a timeout
  c->state = PCM_ESTABLISHED;
  return 0;
}

static int xconnect(struct pconn *c, uint32_t ip, int port, const struct pcm_param *p) {
  if (!c->qp || (c->sock = udp_socket(0)) < 0) return -1;
  c->peer = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons((uint16_t)(port ? port : PCM_PORT)),
                                  .sin_addr.s_addr = htonl(ip) };
  c->local_id = new_conn_id();
  c->remote_id = 0;
  c->my_psn = pcm_random() & 0xffffff;
  c->path_mtu = local_mtu(c, p);
  struct cmsg m;
  fill_local(c, &m, T_REQ, p);
  if (send_msg(c, &m, 1)) return -1;
  c->state = PCM_REQ_SENT;
  for (int tries = 0; tries <= CM_MAX_RETRIES; tries++) {
    struct sockaddr_in from;
    int r;
    while ((r = recv_msg(c->sock, &m, &from, CM_RETRY_MS, &c->dropped)) >= 1) {
      if (from.sin_addr.s_addr != c->peer.sin_addr.s_addr || m.dst != c->local_id) { c->dropped++; continue; }
      if (r == 2) {                                             // [CM-MSG-4]
        reject_to(c->sock, &from, c->local_id, m.src, REJ_INVALID);
        c->state = PCM_CLOSED;
        fprintf(stderr, "xrpeer: REP with invalid parameters, rejected\n");
        return -1;
      }
      if (m.type == T_REP || m.type == T_REJ) return answer_rep(c, &m, &from, p);
    }
    if (r < 0) return -1;
    if (tries < CM_MAX_RETRIES) send_raw(c->sock, &c->peer, c->last, c->last_len);
  }
  c->state = PCM_CLOSED;
  fprintf(stderr, "xrpeer: connect: no answer (ETIMEDOUT)\n");
  return -1;
}

static int xdisconnect(struct pconn *c) {
  if (c->state != PCM_ESTABLISHED) return -1;
  pcm_qp_error(c);
  for (int tries = 0; tries <= CM_MAX_RETRIES; tries++) {
    send_hdr(c, T_DREQ);
    struct cmsg m;
    struct sockaddr_in from;
    int r;
    while ((r = recv_msg(c->sock, &m, &from, CM_RETRY_MS, &c->dropped)) >= 1) {
      if (r != 1 || !from_peer(c, &m, &from)) continue;
      if (m.type == T_DREQ) send_hdr(c, T_DREP);                // both closing at once
      if (m.type == T_DREP || m.type == T_DREQ) { c->state = PCM_CLOSED; return 0; }
    }
    if (r < 0) break;
  }
  c->state = PCM_CLOSED;                                        // [CM-TMO-2]: closed anyway
  return 0;
}

static int xwait_disconnect(struct pconn *c, int timeout_ms) {
  if (c->state != PCM_ESTABLISHED) return -1;
  uint64_t end = now_ns() + (uint64_t)timeout_ms * 1000000u;
  for (;;) {
    uint64_t t = now_ns();
    if (t >= end) return -1;
    struct cmsg m;
    struct sockaddr_in from;
    int r = recv_msg(c->sock, &m, &from, (int)((end - t) / 1000000u) + 1, &c->dropped);
    if (r < 0) return -1;
    if (r != 1 || !from_peer(c, &m, &from)) continue;
    if (m.type == T_REP) { send_hdr(c, T_RTU); continue; }     // [CM-TMO-3]
    if (m.type != T_DREQ) continue;
    pcm_qp_error(c);
    send_hdr(c, T_DREP);
    c->state = PCM_CLOSED;
    return 0;
  }
}

static void xclose(struct pconn *c) {
  if (c->sock >= 0) close(c->sock);
  c->sock = -1;
}

static void xunlisten(int lsock) { close(lsock); }

const struct pcm_ops pcm_xv6_ops = {
  .listen = xlisten, .unlisten = xunlisten, .get_request = xget_request, .qp_init = xqp_init,
  .accept = xaccept, .reject = xreject, .connect = xconnect, .disconnect = xdisconnect,
  .wait_disconnect = xwait_disconnect, .close = xclose,
};
