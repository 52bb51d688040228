// rdma_cm.c: see rdma_cm.h. The state machines of proto-spec/cm.md,
// synchronous: each call runs until its exchange is over. Retransmission
// [CM-TMO-1]: REQ, REP and DREQ every CM_RETRY_MS, at most CM_MAX_RETRIES
// times. Connection IDs and starting PSNs are the kernel's random bits
// (getrandom) [SEC-RAND-7] [SEC-RAND-3]. Once a connection knows its peer,
// it hears only that peer: every message it waits for must come from the
// peer's IP address and UDP port and carry both connection IDs; anything
// else is dropped and counted in id->cm_dropped [SEC-FORGE-7].
#include "user.h"
#include "rdma_cm.h"
#include "rdma_sys.h"
#include "rdma_util.h"
#include "kernel/transport/rct.h"
#include "kernel/transport/rct_cm.h"

#define CM_RETRY_MS 250
#define CM_MAX_RETRIES 5
// Fewer READs in flight than the peer holds (16): the core's responder
// refuses a new READ (NAK invalid request) while its oldest resource is
// still replaying responses for a late duplicate; the slack keeps that
// resource out of the way (see the report on resp.c exec_read "busy").
#define DEFAULT_INITIATOR_DEPTH 8

// A connection ID: random and non-zero (cm.md, src_conn_id) [SEC-RAND-7].
uint32_t rdma_cm_new_conn_id(void) {
  uint32_t id;
  while ((id = random_u32()) == 0)
    ;
  return id;
}

// 1 if m, received from `from`, belongs to this established (or
// established-to-be) connection: the peer's address and port, our ID as
// destination and the peer's as source [CM-STATE-5] [SEC-FORGE-7];
// otherwise counts the drop and returns 0.
static int from_peer(struct rdma_cm_id *id, const struct rct_cm_msg *m, const struct net_addr *from) {
  if (from->ip == id->peer_ip && from->port == id->peer_port &&
      m->dst_conn_id == id->local_conn_id && m->src_conn_id == id->remote_conn_id)
    return 1;
  id->cm_dropped++;
  return 0;
}

struct rdma_cm_id *rdma_create_id(struct ibv_context *verbs) {
  struct rdma_cm_id *id = calloc(1, sizeof *id);
  if (!id) return NULL;
  id->verbs = verbs;
  id->sock = -1;
  id->state = RDMA_CM_IDLE;
  return id;
}

int rdma_destroy_id(struct rdma_cm_id *id) {
  if (!id) return RDMA_CM_EINVAL;
  if (id->sock >= 0) sockclose(id->sock);
  free(id);
  return 0;
}

static int send_msg(struct rdma_cm_id *id, const struct rct_cm_msg *m, int remember) {
  uint8_t buf[128];
  int n = rct_cm_encode(m, buf, sizeof buf);
  if (n < 0) return RDMA_CM_EINVAL;
  struct net_addr to = { id->peer_ip, id->peer_port, 0 };
  if (remember) { memcpy(id->last_msg, buf, n); id->last_len = n; }
  return sendto(id->sock, buf, n, &to) == n ? 0 : RDMA_CM_ENOSOCK;
}

static int resend_last(struct rdma_cm_id *id) {
  struct net_addr to = { id->peer_ip, id->peer_port, 0 };
  return sendto(id->sock, id->last_msg, id->last_len, &to) == id->last_len ? 0 : RDMA_CM_ENOSOCK;
}

// Next parsed message within timeout_ms; 1 = got one, 0 = timeout, <0 error.
static int recv_msg(struct rdma_cm_id *id, struct rct_cm_msg *m, struct net_addr *from, int timeout_ms) {
  uint8_t buf[256];
  uint64 end = clock_ns() + (uint64)timeout_ms * 1000000ULL;
  for (;;) {
    int left = timeout_ms < 0 ? -1 : (int)((end - clock_ns()) / 1000000ULL);
    if (timeout_ms >= 0 && (clock_ns() >= end || left <= 0)) return 0;
    int n = recvfrom(id->sock, buf, sizeof buf, from, left);
    if (n == -2) return 0;
    if (n < 0) return RDMA_CM_ENOSOCK;
    int rc = rct_cm_parse(m, buf, (size_t)n);
    if (rc == RCT_OK) return 1;
    if (rc > 0 && m->type == RCT_CM_REQ) {       // [CM-MSG-4]: answer with REJ
      struct rct_cm_msg rej;
      memset(&rej, 0, sizeof rej);
      rej.type = RCT_CM_REJ;
      rej.version = RCT_CM_VERSION;
      rej.dst_conn_id = m->src_conn_id;
      rej.reject_reason = (uint16_t)rc;
      uint8_t out[128];
      int k = rct_cm_encode(&rej, out, sizeof out);
      if (k > 0) sendto(id->sock, out, k, from);
    }
    // malformed: dropped silently [CM-MSG-2]
  }
}

static int open_sock(struct rdma_cm_id *id, int port) {
  if (id->sock >= 0) return 0;
  id->sock = socket(SOCK_UDP);
  if (id->sock < 0) return RDMA_CM_ENOSOCK;
  if (bind(id->sock, port) < 0) { sockclose(id->sock); id->sock = -1; return RDMA_CM_ENOSOCK; }
  return 0;
}

int rdma_listen(struct rdma_cm_id *id, int port) {
  if (!id) return RDMA_CM_EINVAL;
  int rc = open_sock(id, port ? port : RDMA_CM_PORT);
  if (rc == 0) id->state = RDMA_CM_LISTEN;
  return rc;
}

static void fill_local(struct rdma_cm_id *id, struct rct_cm_msg *m, const struct rdma_conn_param *p) {
  struct ibv_port_attr pa;
  union ibv_gid gid;
  struct rdma_port_info pi;
  ibv_query_port(id->verbs, 1, &pa);
  ibv_query_gid(id->verbs, 1, 0, &gid);
  rdma_query_port(1, &pi);
  m->version = RCT_CM_VERSION;
  m->src_conn_id = id->local_conn_id;
  m->dst_conn_id = id->remote_conn_id;
  m->qpn = id->qp->qp_num;
  m->start_psn = id->my_psn;
  m->path_mtu = id->path_mtu ? (uint8_t)id->path_mtu : (uint8_t)pa.active_mtu;
  m->caps = p && p->sr ? RCT_CM_CAP_SR : 0;
  m->responder_resources = p && p->responder_resources ? p->responder_resources : 16;
  m->initiator_depth = p && p->initiator_depth ? p->initiator_depth : DEFAULT_INITIATOR_DEPTH;
  memcpy(m->gid, gid.raw, 16);
  memcpy(m->mac, pi.mac, 6);
  if (p && p->private_data_len) {
    m->private_len = p->private_data_len > RDMA_CM_PRIVATE_MAX ? RDMA_CM_PRIVATE_MAX : p->private_data_len;
    memcpy(m->private_data, p->private_data, m->private_len);
  }
}

static void take_peer(struct rdma_cm_id *id, const struct rct_cm_msg *m) {
  id->remote_conn_id = m->src_conn_id;
  id->peer_qpn = m->qpn;
  id->peer_psn = m->start_psn;
  id->peer_mtu = m->path_mtu;
  id->peer_caps = m->caps;
  id->peer_resp_res = m->responder_resources;
  id->peer_init_depth = m->initiator_depth;
  memcpy(id->peer_mac, m->mac, 6);
  id->private_data_len = m->private_len;
  memcpy(id->private_data, m->private_data, m->private_len);
}

// The QP to RTS from the exchanged facts [CM-PARAM-1..3] [SR-NEG-1].
static int qp_to_rts(struct rdma_cm_id *id, const struct rdma_conn_param *p) {
  struct ibv_qp_attr a;
  struct ibvx_qp_ext ext;
  uint8_t own_res = p && p->responder_resources ? p->responder_resources : 16;
  uint8_t own_depth = p && p->initiator_depth ? p->initiator_depth : DEFAULT_INITIATOR_DEPTH;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  if (ibv_modify_qp(id->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
    return RDMA_CM_EQP;
  ibvx_set_neighbor(id->peer_ip, id->peer_mac);
  memset(&a, 0, sizeof a);
  memset(&ext, 0, sizeof ext);
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = id->path_mtu;
  a.dest_qp_num = id->peer_qpn;
  a.rq_psn = id->peer_psn;
  a.max_dest_rd_atomic = own_res;
  a.min_rnr_timer = 1;
  a.ah_attr.is_global = 1;
  a.ah_attr.port_num = 1;
  a.ah_attr.grh.hop_limit = 64;
  ibvx_gid_from_ipv4(&a.ah_attr.grh.dgid, id->peer_ip);
  memcpy(ext.dmac, id->peer_mac, 6);
  ext.sr_enable = id->sr;
  ext.roce_v1 = p && p->roce_v1;
  ext.max_inflight = p && p->max_inflight ? p->max_inflight : RDMA_CM_DEFAULT_INFLIGHT;
  uint32_t min_rto_us = p && p->min_rto_us ? p->min_rto_us : RDMA_CM_DEFAULT_MIN_RTO_US;
  ext.adaptive_rto = min_rto_us != ~0u;
  ext.min_rto_ns = ext.adaptive_rto ? (unsigned long long)min_rto_us * 1000 : 0;
  if (ibvx_modify_qp(id->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
                     &ext, (id->sr ? RDMA_QP_SR : 0) | RDMA_QP_MAX_INFLIGHT | RDMA_QP_ADAPTIVE_RTO))
    return RDMA_CM_EQP;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = id->my_psn;
  // Default 18 (1.07 s), the adaptive RTO's ceiling: emulated guests on
  // a loaded host stall for hundreds of ms, and 8 x 67 ms (timeout 14)
  // ended healthy connections. With the 30 ms floor the seven retries
  // span about 3 s (30, 60, ... 960, 1070 ms) before RETRY_EXC.
  a.timeout = p && p->timeout ? p->timeout : 18;
  a.retry_cnt = p && p->retry_count ? p->retry_count : RDMA_CM_DEFAULT_RETRY_COUNT;
  a.rnr_retry = p && p->rnr_retry_count ? p->rnr_retry_count : 7;
  a.max_rd_atomic = own_depth < id->peer_resp_res ? own_depth : id->peer_resp_res;
  if (a.max_rd_atomic == 0) a.max_rd_atomic = 1;
  if (ibv_modify_qp(id->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                    IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC))
    return RDMA_CM_EQP;
  return 0;
}

static void send_hdr_only(struct rdma_cm_id *id, enum rct_cm_type type) {
  struct rct_cm_msg m;
  memset(&m, 0, sizeof m);
  m.type = type;
  m.version = RCT_CM_VERSION;
  m.src_conn_id = id->local_conn_id;
  m.dst_conn_id = id->remote_conn_id;
  send_msg(id, &m, 0);
}

int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **conn, int timeout_ms) {
  struct rct_cm_msg m;
  struct net_addr from;
  if (!listen || listen->state != RDMA_CM_LISTEN || !conn) return RDMA_CM_EINVAL;
  for (;;) {
    int r = recv_msg(listen, &m, &from, timeout_ms);
    if (r <= 0) return r == 0 ? RDMA_CM_ETIMEDOUT : r;
    if (m.type != RCT_CM_REQ) continue;            // [CM-STATE-1]: ignored here
    if (from.ip == listen->peer_ip && from.port == listen->peer_port &&
        m.src_conn_id == listen->remote_conn_id) continue;   // duplicate of the last REQ
    listen->peer_ip = from.ip;
    listen->peer_port = from.port;
    listen->remote_conn_id = m.src_conn_id;
    struct rdma_cm_id *id = rdma_create_id(listen->verbs);
    if (!id) return RDMA_CM_EINVAL;
    id->sock = socket(SOCK_UDP);                   // replies go from a port of its own
    if (id->sock < 0 || bind(id->sock, 0) < 0) { rdma_destroy_id(id); return RDMA_CM_ENOSOCK; }
    id->peer_ip = from.ip;
    id->peer_port = from.port;
    id->local_conn_id = rdma_cm_new_conn_id();
    take_peer(id, &m);
    id->state = RDMA_CM_REQ_RCVD;
    *conn = id;
    return 0;
  }
}

int rdma_reject(struct rdma_cm_id *id, const void *private_data, uint8_t len) {
  if (!id || id->state != RDMA_CM_REQ_RCVD) return RDMA_CM_EINVAL;
  struct rct_cm_msg m;
  memset(&m, 0, sizeof m);
  m.type = RCT_CM_REJ;
  m.version = RCT_CM_VERSION;
  m.src_conn_id = id->local_conn_id;
  m.dst_conn_id = id->remote_conn_id;
  m.reject_reason = RCT_CM_REJ_CONSUMER;
  m.private_len = len > RDMA_CM_PRIVATE_MAX ? RDMA_CM_PRIVATE_MAX : len;
  if (m.private_len) memcpy(m.private_data, private_data, m.private_len);
  id->state = RDMA_CM_CLOSED;
  return send_msg(id, &m, 0);
}

static uint32_t qp_rx_frames(struct ibv_qp *qp) {
  struct rdma_qp_stats s;
  if (rdma_qp_stats((int)qp->handle, &s) != 0) return 0;
  return (uint32_t)s.rx_frames;
}

int rdma_accept(struct rdma_cm_id *id, const struct rdma_conn_param *p) {
  if (!id || id->state != RDMA_CM_REQ_RCVD || !id->qp) return RDMA_CM_EINVAL;
  struct ibv_port_attr pa;
  ibv_query_port(id->verbs, 1, &pa);
  id->path_mtu = id->peer_mtu < pa.active_mtu ? (enum ibv_mtu)id->peer_mtu : pa.active_mtu;
  id->sr = (p && p->sr && (id->peer_caps & RCT_CM_CAP_SR)) ? 1 : 0;
  id->my_psn = rdmau_psn();
  int rc = qp_to_rts(id, p);                       // before REP [CM-STATE-3]
  if (rc) return rc;
  struct rct_cm_msg m;
  memset(&m, 0, sizeof m);
  m.type = RCT_CM_REP;
  fill_local(id, &m, p);
  m.caps = id->sr ? RCT_CM_CAP_SR : 0;
  if ((rc = send_msg(id, &m, 1)) != 0) return rc;
  id->state = RDMA_CM_REP_SENT;
  uint32_t rx0 = qp_rx_frames(id->qp);
  for (int tries = 0; tries <= CM_MAX_RETRIES; tries++) {
    struct net_addr from;
    uint64 end = clock_ns() + CM_RETRY_MS * 1000000ULL;
    while (clock_ns() < end) {
      int r = recv_msg(id, &m, &from, 20);
      if (r < 0) return r;
      if (r == 1 && from_peer(id, &m, &from) && m.type == RCT_CM_RTU) {
        id->state = RDMA_CM_ESTABLISHED;
        return 0;
      }
      // The first RC frame on the QP also establishes it (a lost RTU).
      if (qp_rx_frames(id->qp) != rx0) { id->state = RDMA_CM_ESTABLISHED; return 0; }
    }
    if (tries < CM_MAX_RETRIES) resend_last(id);
  }
  // [CM-TMO-2]: REJ TIMEOUT, QP to ERR.
  memset(&m, 0, sizeof m);
  m.type = RCT_CM_REJ;
  m.version = RCT_CM_VERSION;
  m.src_conn_id = id->local_conn_id;
  m.dst_conn_id = id->remote_conn_id;
  m.reject_reason = RCT_CM_REJ_TIMEOUT;
  send_msg(id, &m, 0);
  struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
  ibv_modify_qp(id->qp, &a, IBV_QP_STATE);
  id->state = RDMA_CM_CLOSED;
  return RDMA_CM_ETIMEDOUT;
}

int rdma_connect(struct rdma_cm_id *id, uint32_t ip, int port, const struct rdma_conn_param *p) {
  if (!id || !id->qp || id->state != RDMA_CM_IDLE) return RDMA_CM_EINVAL;
  int rc = open_sock(id, 0);
  if (rc) return rc;
  id->peer_ip = ip;
  id->peer_port = (uint16_t)(port ? port : RDMA_CM_PORT);
  id->local_conn_id = rdma_cm_new_conn_id();
  id->remote_conn_id = 0;
  id->my_psn = rdmau_psn();
  struct rct_cm_msg m;
  memset(&m, 0, sizeof m);
  m.type = RCT_CM_REQ;
  fill_local(id, &m, p);
  if ((rc = send_msg(id, &m, 1)) != 0) return rc;
  id->state = RDMA_CM_REQ_SENT;
  for (int tries = 0; tries <= CM_MAX_RETRIES; tries++) {
    struct net_addr from;
    int r;
    while ((r = recv_msg(id, &m, &from, CM_RETRY_MS)) == 1) {
      // The peer's port and ID are not known before its REP (it answers
      // from a port of its own [CM-STATE-7]): its address and our ID.
      if (from.ip != id->peer_ip || m.dst_conn_id != id->local_conn_id) {   // [CM-STATE-5]
        id->cm_dropped++;
        continue;
      }
      if (m.type == RCT_CM_REJ) {
        id->reject_reason = m.reject_reason;
        id->private_data_len = m.private_len;
        memcpy(id->private_data, m.private_data, m.private_len);
        id->state = RDMA_CM_REJECTED;
        return RDMA_CM_EREJECTED;
      }
      if (m.type != RCT_CM_REP) continue;
      id->peer_port = from.port;                   // the passive side answers from its own port
      take_peer(id, &m);
      struct ibv_port_attr pa;
      ibv_query_port(id->verbs, 1, &pa);
      id->path_mtu = (enum ibv_mtu)m.path_mtu;
      if (id->path_mtu > pa.active_mtu) id->path_mtu = pa.active_mtu;
      id->sr = (p && p->sr && (m.caps & RCT_CM_CAP_SR)) ? 1 : 0;
      if ((rc = qp_to_rts(id, p)) != 0) return rc;
      send_hdr_only(id, RCT_CM_RTU);
      send_hdr_only(id, RCT_CM_RTU);               // a lost RTU costs the peer a timeout
      id->state = RDMA_CM_ESTABLISHED;
      return 0;
    }
    if (r < 0) return r;
    if (tries < CM_MAX_RETRIES) resend_last(id);
  }
  id->state = RDMA_CM_CLOSED;
  return RDMA_CM_ETIMEDOUT;
}

int rdma_disconnect(struct rdma_cm_id *id) {
  if (!id || id->state != RDMA_CM_ESTABLISHED) return RDMA_CM_EINVAL;
  struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
  ibv_modify_qp(id->qp, &a, IBV_QP_STATE);         // [CM-STATE-6]
  struct rct_cm_msg m;
  struct net_addr from;
  for (int tries = 0; tries <= CM_MAX_RETRIES; tries++) {
    send_hdr_only(id, RCT_CM_DREQ);
    int r;
    while ((r = recv_msg(id, &m, &from, CM_RETRY_MS)) == 1) {
      if (!from_peer(id, &m, &from)) continue;
      if (m.type == RCT_CM_DREP) { id->state = RDMA_CM_CLOSED; return 0; }
      if (m.type == RCT_CM_DREQ) {                 // both sides closing at once
        send_hdr_only(id, RCT_CM_DREP);
        id->state = RDMA_CM_CLOSED;
        return 0;
      }
    }
    if (r < 0) break;
  }
  id->state = RDMA_CM_CLOSED;                      // [CM-TMO-2]: closed anyway
  return 0;
}

int rdma_wait_disconnect(struct rdma_cm_id *id, int timeout_ms) {
  if (!id || id->state != RDMA_CM_ESTABLISHED) return RDMA_CM_EINVAL;
  struct rct_cm_msg m;
  struct net_addr from;
  int r;
  while ((r = recv_msg(id, &m, &from, timeout_ms)) == 1) {
    if (!from_peer(id, &m, &from)) continue;       // a stranger's DREQ [SEC-FORGE-7]
    if (m.type == RCT_CM_REP) { send_hdr_only(id, RCT_CM_RTU); continue; }   // [CM-TMO-3]
    if (m.type != RCT_CM_DREQ) continue;
    struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
    ibv_modify_qp(id->qp, &a, IBV_QP_STATE);       // [CM-STATE-6]
    send_hdr_only(id, RCT_CM_DREP);
    id->state = RDMA_CM_CLOSED;
    return 0;
  }
  return r == 0 ? RDMA_CM_ETIMEDOUT : r;
}

void rdma_cm_pack_mr(uint8_t out[16], uint64_t addr, uint32_t rkey, uint32_t len) {
  for (int i = 0; i < 8; i++) out[i] = (uint8_t)(addr >> (56 - 8 * i));
  for (int i = 0; i < 4; i++) out[8 + i] = (uint8_t)(rkey >> (24 - 8 * i));
  for (int i = 0; i < 4; i++) out[12 + i] = (uint8_t)(len >> (24 - 8 * i));
}

void rdma_cm_unpack_mr(const uint8_t in[16], uint64_t *addr, uint32_t *rkey, uint32_t *len) {
  uint64_t a = 0;
  uint32_t k = 0, l = 0;
  for (int i = 0; i < 8; i++) a = (a << 8) | in[i];
  for (int i = 0; i < 4; i++) k = (k << 8) | in[8 + i];
  for (int i = 0; i < 4; i++) l = (l << 8) | in[12 + i];
  *addr = a; *rkey = k; *len = l;
}

const char *rdma_cm_reject_str(int reason) {
  static const char *const names[] = { "?", "CONSUMER_REJECT", "NO_LISTENER", "NO_RESOURCES",
                                       "INVALID_PARAM", "UNSUPPORTED_VERSION", "TIMEOUT", "STALE_CONN" };
  return reason >= 1 && reason <= 7 ? names[reason] : "?";
}

// The core's CM codec (kernel/transport/cm.c) checks path MTUs with
// rct_mtu_bytes(), which lives in the core's qp.c; user space links only
// the codec, so the library supplies it (rct.h: 0 if invalid).
uint32_t rct_mtu_bytes(enum rct_mtu mtu) {
  return (mtu >= RCT_MTU_256 && mtu <= RCT_MTU_4096) ? 128u << mtu : 0;
}
