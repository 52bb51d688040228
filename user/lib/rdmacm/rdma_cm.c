// rdma_cm.c: see rdma_cm.h. A thin driver of the connection manager's
// endpoint (kernel/cm/cm_ep.c: the state machine, retransmission and
// checks of proto-spec/cm.md) and of its parameter negotiation
// (rct_cm_qp_attr in cm.c): this file owns the event channels (one UDP
// socket each), the ids (one struct rct_cm_ep each), the clock, the events
// handed to the application and the QP moves the endpoint's events ask for
// ([CM-STATE-3], [CM-STATE-6]). Connection IDs and starting PSNs are the
// kernel's random bits [SEC-RAND-7] [SEC-RAND-3].
#include "user.h"
#include "rdma_cm.h"
#include "rdma_verbs.h"
#include "rdma_sys.h"
#include "rdma_util.h"
#include "kernel/transport/rct.h"

// How often a channel with an id in REP_SENT looks at its QP's received
// frames: the first RC frame establishes the connection when RTU was lost.
#define RC_FRAME_POLL_MS 20
// While a young active connection may still owe RTUs [CM-TMO-6], the verbs
// library's waits run the CM (cm_duty) at least this often: four times per
// retry interval, so a repeated REP is answered well before the next one.
#define DUTY_SLICE_MS ((int)(RCT_CM_RETRY_NS / 4 / 1000000))
// Datagrams one duty run takes from a channel. A peer repeats its REP once
// per CM_RETRY_NS, four slices, so one datagram per run keeps up with it;
// a few more let ids sharing a channel catch up in one run, and a flood of
// datagrams cannot hold a verbs wait inside the CM.
#define DUTY_BURST 4

struct ev_priv {
  struct rdma_cm_event ev;                 // first: rdma_ack_cm_event gets this pointer
  uint8_t priv[RCT_CM_PRIVATE_MAX];
  struct ev_priv *next;
};

struct chan {
  struct rdma_event_channel pub;           // first: the application holds this pointer
  uint16_t port;                           // the port bound for a listener (0: none)
  int used;                                // has sent: bound to an ephemeral port
  uint64_t duty_pass;                      // the cm_duty pass that last saw it
  struct ev_priv *head, *tail;             // events not yet handed out
};

struct id_priv {
  struct rdma_cm_id id;                    // first: the application holds this pointer
  struct chan *chan;
  int sync;                                // NULL channel at creation: chan is its own
  int listening, bound, addr_set;
  struct rct_cm_ep ep;
  uint32_t rx0;                            // passive: QP rx frames when REP went out
  int peer_heard;                          // active: its QP got a frame from the peer [CM-TMO-6]
  struct rdma_conn_param own;              // responder_resources, initiator_depth, retries
  struct rdmax_transport xt;
  struct ibv_pd *own_pd;                   // created by rdma_create_qp / rdma_create_ep
  int own_cqs;
  struct ibv_qp_init_attr ep_attr;         // rdma_create_ep listener: QPs for new ids
  int ep_has_attr;
  struct id_priv *next;                    // every id of the process
};

static struct id_priv *all_ids;
static struct ibv_context *dev_ctx;        // the one device, opened on first need

static struct id_priv *priv_of(struct rdma_cm_id *id) { return (struct id_priv *)id; }

static int fail_errno(int e) { errno = e; return -1; }

uint32_t rdmax_new_conn_id(void) {
  uint32_t v;
  while ((v = random_u32()) == 0)
    ;
  return v;
}

static struct ibv_context *device(void) {
  if (!dev_ctx) dev_ctx = rdmau_open();
  return dev_ctx;
}

// ---- channels ----

static int chan_ready(void *arg, uint64_t *next_ns);

// The channel's socket exists from the start, so channel->fd works with
// poll() and fcntl(O_NONBLOCK) at once; it is bound later (chan_socket).
// poll() asks chan_ready whether an event waits (user/lib/c/poll.c's hook).
struct rdma_event_channel *rdma_create_event_channel(void) {
  struct chan *c = calloc(1, sizeof *c);
  if (!c) { errno = ENOMEM; return NULL; }
  c->pub.fd = socket(SOCK_UDP);
  if (c->pub.fd < 0) { free(c); errno = EMFILE; return NULL; }
  pollx_set_ready(c->pub.fd, chan_ready, c);
  return &c->pub;
}

// Binds the channel's socket at `port` for a listener; port 0 (a sender)
// leaves it to the first datagram, which takes a random ephemeral port
// [SEC-RAND-8]. A socket already at another port is EADDRINUSE.
static int chan_socket(struct chan *c, uint16_t port) {
  if (port == 0) { c->used = 1; return 0; }
  if (port == c->port) return 0;
  if (c->port || c->used || bind(c->pub.fd, port) < 0) return fail_errno(EADDRINUSE);
  c->port = port;
  return 0;
}

void rdma_destroy_event_channel(struct rdma_event_channel *channel) {
  struct chan *c = (struct chan *)channel;
  if (!c) return;
  while (c->head) {
    struct ev_priv *e = c->head;
    c->head = e->next;
    free(e);
  }
  pollx_set_ready(c->pub.fd, NULL, NULL);
  close(c->pub.fd);
  free(c);
}

// ---- ids ----

static struct id_priv *new_id(struct chan *c, int sync, void *context, enum rdma_port_space ps) {
  struct id_priv *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->chan = c;
  p->sync = sync;
  p->id.channel = &c->pub;
  p->id.context = context;
  p->id.ps = ps;
  p->id.qp_type = IBV_QPT_RC;
  p->id.port_num = 1;
  rct_cm_ep_init(&p->ep, rdmax_new_conn_id());
  p->next = all_ids;
  all_ids = p;
  return p;
}

int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
                   enum rdma_port_space ps) {
  if (!id || (ps != RDMA_PS_TCP && ps != RDMA_PS_IB)) return fail_errno(EINVAL);
  struct chan *c = (struct chan *)channel;
  int sync = c == NULL;
  if (sync && !(c = (struct chan *)rdma_create_event_channel())) return -1;
  struct id_priv *p = new_id(c, sync, context, ps);
  if (!p) {
    if (sync) rdma_destroy_event_channel(&c->pub);
    return fail_errno(ENOMEM);
  }
  *id = &p->id;
  return 0;
}

// Drops the events of a channel that name id (as id or listen_id): they
// would point at freed memory once the id is gone.
static void forget_events(struct chan *c, struct rdma_cm_id *id) {
  struct ev_priv **pp = &c->head, *last = NULL;
  while (*pp) {
    struct ev_priv *e = *pp;
    if (e->ev.id == id || e->ev.listen_id == id) { *pp = e->next; free(e); continue; }
    last = e;
    pp = &e->next;
  }
  c->tail = last;
}

int rdma_destroy_id(struct rdma_cm_id *id) {
  if (!id) return fail_errno(EINVAL);
  struct id_priv *p = priv_of(id);
  for (struct id_priv **pp = &all_ids; *pp; pp = &(*pp)->next)
    if (*pp == p) { *pp = p->next; break; }
  if (id->event) rdma_ack_cm_event(id->event);
  if (p->sync) rdma_destroy_event_channel(&p->chan->pub);
  else forget_events(p->chan, id);
  free(p);
  return 0;
}

int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel) {
  if (!id) return fail_errno(EINVAL);
  struct id_priv *p = priv_of(id);
  struct chan *c = (struct chan *)channel;
  int sync = c == NULL;
  if (sync && !(c = (struct chan *)rdma_create_event_channel())) return -1;
  if (p->sync) rdma_destroy_event_channel(&p->chan->pub);
  p->chan = c;
  p->sync = sync;
  id->channel = &c->pub;
  return 0;
}

// ---- addresses ----

void rdmax_sockaddr(struct sockaddr_in *sin, uint32_t ip, uint16_t port) {
  memset(sin, 0, sizeof *sin);
  sin->sin_family = AF_INET;
  sin->sin_port = htons(port);
  sin->sin_addr.s_addr = htonl(ip);
}

static int sin_of(const struct sockaddr *a, uint32_t *ip, uint16_t *port) {
  if (!a || a->sa_family != AF_INET) return -1;
  const struct sockaddr_in *sin = (const struct sockaddr_in *)a;
  *ip = ntohl(sin->sin_addr.s_addr);
  *port = ntohs(sin->sin_port);
  return 0;
}

static int attach_device(struct rdma_cm_id *id) {
  if (!id->verbs) id->verbs = device();
  return id->verbs ? 0 : fail_errno(ENODEV);
}

int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr) {
  uint32_t ip;
  uint16_t port;
  if (!id || sin_of(addr, &ip, &port) < 0) return fail_errno(EINVAL);
  struct id_priv *p = priv_of(id);
  if (attach_device(id) < 0) return -1;
  if (ip == 0) ip = rdmau_local_ipv4(id->verbs);
  rdmax_sockaddr(&id->route.addr.src_sin, ip, port);
  p->bound = 1;
  return 0;
}

// The event queue and synchronous completion come below; resolution
// queues its events like the exchange does. rdma_resolve_addr asks ARP
// for the peer (up to timeout_ms): no answer is ADDR_ERROR with
// -EHOSTUNREACH, as librdmacm reports an address that does not resolve.
static void queue_event(struct id_priv *p, enum rdma_cm_event_type type, int status,
                        struct id_priv *listen, const struct rct_cm_msg *m);
static int sync_complete(struct id_priv *p, enum rdma_cm_event_type want);
static void owe_answers(struct id_priv *p);

int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr, struct sockaddr *dst_addr,
                      int timeout_ms) {
  uint32_t ip, sip = 0;
  uint16_t port, sport = 0;
  uint8_t mac[6];
  if (!id || sin_of(dst_addr, &ip, &port) < 0 || ip == 0) return fail_errno(EINVAL);
  if (src_addr && sin_of(src_addr, &sip, &sport) < 0) return fail_errno(EINVAL);
  struct id_priv *p = priv_of(id);
  if (attach_device(id) < 0) return -1;
  if (arpwait(ip, mac, timeout_ms) == -2) {          // no ARP answer in timeout_ms: no host there
    queue_event(p, RDMA_CM_EVENT_ADDR_ERROR, -EHOSTUNREACH, NULL, NULL);
    return p->sync ? sync_complete(p, RDMA_CM_EVENT_ADDR_RESOLVED) : 0;
  }
  if (!p->bound) rdmax_sockaddr(&id->route.addr.src_sin, sip ? sip : rdmau_local_ipv4(id->verbs), sport);
  rdmax_sockaddr(&id->route.addr.dst_sin, ip, port ? port : RDMA_CM_PORT);
  p->addr_set = 1;
  queue_event(p, RDMA_CM_EVENT_ADDR_RESOLVED, 0, NULL, NULL);
  return p->sync ? sync_complete(p, RDMA_CM_EVENT_ADDR_RESOLVED) : 0;
}

int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms) {
  (void)timeout_ms;
  if (!id || !priv_of(id)->addr_set) return fail_errno(EINVAL);
  struct id_priv *p = priv_of(id);
  id->route.num_paths = 1;
  queue_event(p, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, NULL, NULL);
  return p->sync ? sync_complete(p, RDMA_CM_EVENT_ROUTE_RESOLVED) : 0;
}

struct sockaddr *rdma_get_local_addr(struct rdma_cm_id *id) { return &id->route.addr.src_addr; }
struct sockaddr *rdma_get_peer_addr(struct rdma_cm_id *id) { return &id->route.addr.dst_addr; }
uint16_t rdma_get_src_port(struct rdma_cm_id *id) { return id->route.addr.src_sin.sin_port; }
uint16_t rdma_get_dst_port(struct rdma_cm_id *id) { return id->route.addr.dst_sin.sin_port; }

// ---- QPs ----

static int qp_to_init(struct ibv_qp *qp) {
  struct ibv_qp_attr a;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  return ibv_modify_qp(qp, &a, RDMAU_MASK_INIT);
}

int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *attr) {
  if (!id || !attr || attr->qp_type != IBV_QPT_RC || attr->srq) return fail_errno(EINVAL);
  struct id_priv *p = priv_of(id);
  if (attach_device(id) < 0) return -1;
  if (!pd) pd = id->pd;
  if (!pd && !(pd = p->own_pd = ibv_alloc_pd(id->verbs))) return fail_errno(ENOMEM);
  struct ibv_qp_init_attr a = *attr;
  if (!a.send_cq || !a.recv_cq) {                  // CQs of its own, each with a channel
    id->send_cq_channel = ibv_create_comp_channel(id->verbs);
    id->recv_cq_channel = ibv_create_comp_channel(id->verbs);
    if (id->send_cq_channel && id->recv_cq_channel) {
      id->send_cq = ibv_create_cq(id->verbs, (int)a.cap.max_send_wr, id, id->send_cq_channel, 0);
      id->recv_cq = ibv_create_cq(id->verbs, (int)a.cap.max_recv_wr, id, id->recv_cq_channel, 0);
    }
    p->own_cqs = 1;
    if (!id->send_cq || !id->recv_cq) { rdma_destroy_qp(id); return fail_errno(ENOMEM); }
    a.send_cq = id->send_cq;
    a.recv_cq = id->recv_cq;
  } else {
    id->send_cq = a.send_cq;
    id->recv_cq = a.recv_cq;
  }
  id->qp = ibv_create_qp(pd, &a);
  if (!id->qp) { int e = errno; rdma_destroy_qp(id); return fail_errno(e ? e : ENOMEM); }
  attr->cap = a.cap;                                // what was granted, as ibv_create_qp says
  id->pd = pd;
  if (qp_to_init(id->qp)) { rdma_destroy_qp(id); return fail_errno(EINVAL); }
  return 0;
}

void rdma_destroy_qp(struct rdma_cm_id *id) {
  if (!id) return;
  struct id_priv *p = priv_of(id);
  if (id->qp) ibv_destroy_qp(id->qp);
  id->qp = NULL;
  if (p->own_cqs) {
    if (id->send_cq) ibv_destroy_cq(id->send_cq);
    if (id->recv_cq) ibv_destroy_cq(id->recv_cq);
    if (id->send_cq_channel) ibv_destroy_comp_channel(id->send_cq_channel);
    if (id->recv_cq_channel) ibv_destroy_comp_channel(id->recv_cq_channel);
    id->send_cq_channel = id->recv_cq_channel = NULL;
    p->own_cqs = 0;
  }
  id->send_cq = id->recv_cq = NULL;
  if (p->own_pd) { ibv_dealloc_pd(p->own_pd); p->own_pd = NULL; id->pd = NULL; }
}

// The window rdma_cm gives a QP whose application set none (rdma_cm.h:
// RDMAX_INFLIGHT_BYTES of packets at this path MTU, at most
// RDMAX_HOP_PACKETS).
uint32_t rdmax_default_inflight(enum ibv_mtu path_mtu) {
  int bytes = ibv_mtu_to_num(path_mtu);
  uint32_t n = bytes > 0 ? RDMAX_INFLIGHT_BYTES / (uint32_t)bytes : RDMAX_HOP_PACKETS;
  return n < RDMAX_HOP_PACKETS ? n : RDMAX_HOP_PACKETS;
}

// The QP to RTR and RTS from the exchanged messages: the core's
// negotiation (rct_cm_qp_attr: [CM-PARAM-1..3] [SR-NEG-1]) plus this
// side's timeouts, retries and transport settings.
static int qp_to_rts(struct id_priv *p, const struct rct_cm_msg *self, const struct rct_cm_msg *peer) {
  struct rct_qp_attr ra;
  uint32_t rtr_mask, rts_mask;
  struct ibv_qp_attr a, cur;
  struct ibv_qp_init_attr ia;
  struct ibvx_qp_ext ext;
  struct ibv_qp *qp = p->id.qp;
  memset(&ra, 0, sizeof ra);
  if (rct_cm_qp_attr(self, peer, &ra, &rtr_mask, &rts_mask) != RCT_OK) return -1;
  if (ibv_query_qp(qp, &cur, IBV_QP_STATE, &ia) == 0 && cur.qp_state == IBV_QPS_RESET && qp_to_init(qp))
    return -1;
  ibvx_set_neighbor(ra.ah.dipv4, ra.ah.dmac);
  memset(&a, 0, sizeof a);
  memset(&ext, 0, sizeof ext);
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = (enum ibv_mtu)ra.path_mtu;
  a.dest_qp_num = ra.dest_qp_num;
  a.rq_psn = ra.rq_psn;
  a.max_dest_rd_atomic = ra.max_dest_rd_atomic;
  a.min_rnr_timer = 1;
  a.ah_attr.is_global = 1;
  a.ah_attr.port_num = 1;
  a.ah_attr.grh.hop_limit = 64;
  ibvx_gid_from_ipv4(&a.ah_attr.grh.dgid, ra.ah.dipv4);
  memcpy(ext.dmac, ra.ah.dmac, 6);
  ext.sr_enable = ra.sr_enable;
  ext.roce_v1 = p->xt.roce_v1;
  ext.max_inflight = p->xt.max_inflight ? p->xt.max_inflight : rdmax_default_inflight(a.path_mtu);
  uint32_t min_rto_us = p->xt.min_rto_us ? p->xt.min_rto_us : RDMAX_DEFAULT_MIN_RTO_US;
  ext.adaptive_rto = min_rto_us != ~0u;
  ext.min_rto_ns = ext.adaptive_rto ? (unsigned long long)min_rto_us * 1000 : 0;
  if (ibvx_modify_qp(qp, &a, RDMAU_MASK_RTR, &ext,
                     (ra.sr_enable ? RDMA_QP_SR : 0) | RDMA_QP_MAX_INFLIGHT | RDMA_QP_ADAPTIVE_RTO))
    return -1;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = ra.sq_psn;
  // Default 18 (1.07 s), the adaptive RTO's ceiling: emulated guests on
  // a loaded host stall for hundreds of ms, and 8 x 67 ms (timeout 14)
  // ended healthy connections. With the 30 ms floor the seven retries
  // span about 3 s (30, 60, ... 960, 1070 ms) before RETRY_EXC.
  a.timeout = p->xt.timeout ? p->xt.timeout : 18;
  a.retry_cnt = p->own.retry_count ? p->own.retry_count : RDMAX_DEFAULT_RETRY_COUNT;
  a.rnr_retry = p->own.rnr_retry_count ? p->own.rnr_retry_count : 7;
  a.max_rd_atomic = ra.max_rd_atomic ? ra.max_rd_atomic : 1;
  return ibv_modify_qp(qp, &a, RDMAU_MASK_RTS) ? -1 : 0;
}

static void qp_to_err(struct id_priv *p) {
  struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
  if (p->id.qp) ibv_modify_qp(p->id.qp, &a, IBV_QP_STATE);   // [CM-STATE-6]
}

static uint32_t qp_rx_frames(struct ibv_qp *qp) {
  struct rdma_qp_stats s;
  if (!qp || rdma_qp_stats((int)qp->handle, &s) != 0) return 0;
  return (uint32_t)s.rx_frames;
}

// This side's REQ or REP: QP, PSN, path MTU, READ resources, GID, MAC,
// capabilities and private data.
static void fill_msg(struct id_priv *p, struct rct_cm_msg *m, const struct rdma_conn_param *cp,
                     uint8_t mtu_cap) {
  struct ibv_port_attr pa;
  union ibv_gid gid;
  struct rdma_port_info pi;
  ibv_query_port(p->id.verbs, 1, &pa);
  ibv_query_gid(p->id.verbs, 1, 0, &gid);
  rdma_query_port(1, &pi);
  memset(m, 0, sizeof *m);
  m->version = RCT_CM_VERSION;
  m->qpn = p->id.qp->qp_num;
  m->start_psn = rdmau_psn();
  m->path_mtu = (uint8_t)pa.active_mtu < mtu_cap ? (uint8_t)pa.active_mtu : mtu_cap;   // [CM-PARAM-1]
  m->caps = p->xt.sr ? RCT_CM_CAP_SR : 0;
  m->responder_resources = cp && cp->responder_resources ? cp->responder_resources
                                                         : RDMAX_DEFAULT_RESPONDER_RESOURCES;
  m->initiator_depth = cp && cp->initiator_depth ? cp->initiator_depth : RDMAX_DEFAULT_INITIATOR_DEPTH;
  memcpy(m->gid, gid.raw, 16);
  memcpy(m->mac, pi.mac, 6);
  if (cp && cp->private_data_len) {
    m->private_len = cp->private_data_len;
    memcpy(m->private_data, cp->private_data, m->private_len);
  }
  if (cp) p->own = *cp;
}

// ---- events ----

static void queue_event(struct id_priv *p, enum rdma_cm_event_type type, int status,
                        struct id_priv *listen, const struct rct_cm_msg *m) {
  struct ev_priv *e = calloc(1, sizeof *e);
  if (!e) return;                                  // out of memory: the event is lost
  e->ev.id = &p->id;
  e->ev.listen_id = listen ? &listen->id : NULL;
  e->ev.event = type;
  e->ev.status = status;
  if (m) {
    memcpy(e->priv, m->private_data, m->private_len);
    e->ev.param.conn.private_data = e->priv;
    e->ev.param.conn.private_data_len = m->private_len;
    e->ev.param.conn.responder_resources = m->responder_resources;
    e->ev.param.conn.initiator_depth = m->initiator_depth;
    e->ev.param.conn.qp_num = m->qpn;
  }
  struct chan *c = p->chan;
  if (c->tail) c->tail->next = e; else c->head = e;
  c->tail = e;
}

static void note_peer(struct id_priv *p) {
  rdmax_sockaddr(&p->id.route.addr.dst_sin, p->ep.peer.ip, p->ep.peer.port);
}

// An endpoint event as the application's event, after the QP moves it
// asks for.
static void on_ep_event(struct id_priv *p, const struct rct_cm_event *ev, struct id_priv *listen) {
  const struct rct_cm_msg *peer = &p->ep.peer_msg;
  note_peer(p);
  if (ev->type == RCT_CM_EV_CONNECT_REQUEST) {
    queue_event(p, RDMA_CM_EVENT_CONNECT_REQUEST, 0, listen, peer);
  } else if (ev->type == RCT_CM_EV_ESTABLISHED && p->ep.active) {
    // QP to RTR and RTS before the RTU the endpoint queued goes out [CM-STATE-3].
    if (qp_to_rts(p, &p->ep.self_msg, peer) < 0) queue_event(p, RDMA_CM_EVENT_CONNECT_ERROR, -EINVAL, 0, 0);
    else queue_event(p, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, peer);
    owe_answers(p);
  } else if (ev->type == RCT_CM_EV_ESTABLISHED) {
    queue_event(p, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, NULL);
  } else if (ev->type == RCT_CM_EV_REJECTED) {
    queue_event(p, RDMA_CM_EVENT_REJECTED, ev->reason, NULL, peer);
  } else if (ev->type == RCT_CM_EV_UNREACHABLE) {
    queue_event(p, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, NULL, NULL);     // [CM-TMO-2]
  } else if (ev->type == RCT_CM_EV_TIMEDOUT) {
    qp_to_err(p);                                                           // [CM-TMO-2]
    queue_event(p, RDMA_CM_EVENT_CONNECT_ERROR, -ETIMEDOUT, NULL, NULL);
  } else if (ev->type == RCT_CM_EV_DISCONNECTED) {
    qp_to_err(p);                                                           // [CM-STATE-6]
    queue_event(p, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, NULL);
  } else if (ev->type == RCT_CM_EV_TIMEWAIT_EXIT) {
    queue_event(p, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0, NULL, NULL);             // [CM-TMO-5]
  }
}

// Events first (an active side's QP reaches RTS before its RTU leaves),
// then datagrams, from the channel's socket.
static void flush(struct id_priv *p, struct id_priv *listen) {
  struct rct_cm_event ev;
  struct rct_cm_addr to;
  uint8_t buf[128];
  int n;
  while (rct_cm_ep_poll_event(&p->ep, &ev)) on_ep_event(p, &ev, listen);
  while ((n = rct_cm_ep_poll_msg(&p->ep, buf, sizeof buf, &to)) > 0) {
    if (chan_socket(p->chan, 0) < 0) continue;
    struct net_addr na = { to.ip, to.port, 0 };
    sendto(p->chan->pub.fd, buf, n, &na);
  }
}

static uint32_t ld32(const uint8_t *b) {
  return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static struct id_priv *find(int (*match)(struct id_priv *, uint32_t, struct rct_cm_addr),
                            uint32_t v, struct rct_cm_addr a) {
  for (struct id_priv *p = all_ids; p; p = p->next)
    if (match(p, v, a)) return p;
  return NULL;
}
static int by_local_id(struct id_priv *p, uint32_t v, struct rct_cm_addr a) {
  (void)a;
  return !p->listening && p->ep.local_id == v;
}
static int by_req(struct id_priv *p, uint32_t v, struct rct_cm_addr a) {
  return !p->listening && !p->ep.active && p->ep.remote_id == v && p->ep.peer.ip == a.ip &&
         p->ep.peer.port == a.port;
}

// A REQ for channel c's listener: a new id on c in REQ_RCVD with a
// connect-request event [CM-STATE-2]; a REQ at a socket without a
// listener is answered REJ NO_LISTENER by an endpoint in IDLE.
static void on_new_req(struct chan *c, uint64_t now, struct rct_cm_addr from, const uint8_t *buf, int n) {
  struct id_priv *l = NULL;
  for (struct id_priv *p = all_ids; p; p = p->next)
    if (p->listening && p->chan == c) { l = p; break; }
  struct id_priv *p = l ? new_id(c, 0, l->id.context, l->id.ps) : NULL;
  if (!p) {
    struct id_priv idle;
    memset(&idle, 0, sizeof idle);
    idle.chan = c;
    rct_cm_ep_init(&idle.ep, 0);
    rct_cm_ep_handle_msg(&idle.ep, now, from, buf, (size_t)n);
    flush(&idle, NULL);
    return;
  }
  p->id.verbs = l->id.verbs;
  p->id.route.addr.src_sin = l->id.route.addr.src_sin;
  rct_cm_ep_listen(&p->ep);
  rct_cm_ep_handle_msg(&p->ep, now, from, buf, (size_t)n);
  int got = p->ep.state == RCT_CM_EP_REQ_RCVD;
  flush(p, l);
  if (!got) rdma_destroy_id(&p->id);                // refused (REJ sent) [CM-MSG-4]
}

// One datagram that arrived on channel c: to the connection its
// destination ID names, a duplicate REQ to its connection [CM-TMO-3], a
// new REQ to the listener. The endpoint checks the sender [CM-STATE-5].
static void dispatch(struct chan *c, uint64_t now, struct rct_cm_addr from, const uint8_t *buf, int n) {
  if (n < RCT_CM_LEN_HDR) return;                   // [CM-MSG-2]
  struct id_priv *p;
  if (buf[3] == RCT_CM_REQ) {
    if ((p = find(by_req, ld32(buf + 4), from)) == NULL) { on_new_req(c, now, from, buf, n); return; }
  } else if ((p = find(by_local_id, ld32(buf + 8), from)) == NULL) {
    return;                                         // no such connection [CM-STATE-5]
  }
  rct_cm_ep_handle_msg(&p->ep, now, from, buf, (size_t)n);
  flush(p, NULL);
}

// When channel c next has work without a datagram: the earliest
// deadline of its ids, or the next look at a passive id's QP for its first
// RC frame; RCT_NEVER if none.
static uint64_t chan_deadline(struct chan *c, uint64_t now) {
  uint64_t next = RCT_NEVER;
  for (struct id_priv *p = all_ids; p; p = p->next) {
    if (p->chan != c) continue;
    uint64_t d = rct_cm_ep_next_timeout(&p->ep);
    if (p->ep.state == RCT_CM_EP_REP_SENT && now + RC_FRAME_POLL_MS * 1000000ull < d)
      d = now + RC_FRAME_POLL_MS * 1000000ull;
    if (d < next) next = d;
  }
  return next;
}

// One round of channel c: wait up to wait_ms for a datagram (less when a
// retransmission is due or a passive connection waits for its first RC
// frame), then run the deadlines and the RC-frame checks of its ids.
// Returns whether a datagram came.
static int chan_step(struct chan *c, int wait_ms) {
  uint64_t now = clock_ns(), next = chan_deadline(c, now);
  if (next != RCT_NEVER) {
    uint64_t ms = next > now ? (next - now + 999999) / 1000000 : 0;
    if (wait_ms < 0 || (uint64_t)wait_ms > ms) wait_ms = (int)ms;
  }
  uint8_t buf[256];
  struct net_addr na;
  int n = recvfrom(c->pub.fd, buf, sizeof buf, &na, wait_ms);
  if (n > 0) dispatch(c, clock_ns(), (struct rct_cm_addr){ na.ip, na.port }, buf, n);
  now = clock_ns();
  for (struct id_priv *p = all_ids; p; p = p->next) {
    if (p->chan != c) continue;
    if (p->ep.state == RCT_CM_EP_REP_SENT && qp_rx_frames(p->id.qp) != p->rx0)
      rct_cm_ep_rc_frame(&p->ep);                   // RTU lost: RC traffic proves it [CM-STATE-3]
    rct_cm_ep_handle_timeout(&p->ep, now);          // [CM-TMO-1] [CM-TMO-2]
    flush(p, NULL);
  }
  return n > 0;
}

// poll()'s hook for channel c (user/lib/c/poll.c): events may wait in c's queue
// with nothing left in its socket (the verbs wait duty, or a resolve,
// queued them), and only a step of the channel makes the events its ids'
// deadlines owe. So: its waiting datagrams and due deadlines are taken in
// (at most DUTY_BURST steps: a flood cannot hold poll here), and c reports
// POLLIN exactly while an event waits for rdma_get_cm_event; poll() asks
// again at c's next deadline.
static int chan_ready(void *arg, uint64_t *next_ns) {
  struct chan *c = arg;
  for (int i = 0; !c->head && i < DUTY_BURST; i++) {
    int due = chan_deadline(c, clock_ns()) <= clock_ns();
    if (!chan_step(c, 0) && !due) break;
  }
  *next_ns = chan_deadline(c, clock_ns());
  return c->head != NULL;
}

// ---- the CM inside the verbs library's waits [CM-TMO-6] ----
//
// An active connection's RTU may be lost, and its peer then repeats the REP
// for CM_RETRY_SPAN_NS; an application that waits for the peer to send
// first is in a verbs call all that time, not in ours. So while an
// established active id may owe answers, ibverbs.c holds a duty: its waits
// run the channels of such ids (cm_duty_run) and watch their sockets
// (cm_duty_watch). An id owes answers until the REP's retries are over, or
// until its QP has received a frame from the peer: the peer's QP then has
// received one of ours (the peer answered it) or will (our ACK of the
// peer's frame), and an RC frame establishes the passive side as RTU does
// [CM-STATE-3]. So a conversation's first answer ends the duty, and the
// waits of a latency run pay for it once.

static uint64_t duty_passes;

static int owes(struct id_priv *p, uint64_t now) {
  return !p->peer_heard && rct_cm_ep_answer_until(&p->ep) > now;
}

// Whether p's channel is one a duty pass should take: p owes answers at
// now and the pass has not seen the channel yet.
static int duty_takes(struct id_priv *p, uint64_t now) {
  if (!owes(p, now) || p->chan->duty_pass == duty_passes) return 0;
  p->chan->duty_pass = duty_passes;
  return 1;
}

static int cm_duty_watch(int *fds, int max) {
  uint64_t now = clock_ns();
  int n = 0;
  duty_passes++;
  for (struct id_priv *p = all_ids; p && n < max; p = p->next)
    if (duty_takes(p, now)) fds[n++] = p->chan->pub.fd;
  return n;
}

static void duty_refresh(void);

// Each owing id's QP looked at once, each channel of one stepped once (its
// waiting datagrams, at most DUTY_BURST, and deadlines, without waiting;
// events queue for rdma_get_cm_event); then the duty's new end.
static void cm_duty_run(void) {
  uint64_t now = clock_ns();
  for (struct id_priv *p = all_ids; p; p = p->next)
    if (owes(p, now) && qp_rx_frames(p->id.qp) != 0) p->peer_heard = 1;
  duty_passes++;
  for (struct id_priv *p = all_ids; p; p = p->next)
    if (duty_takes(p, now))
      for (int i = 0; i < DUTY_BURST && chan_step(p->chan, 0); i++)
        ;
  duty_refresh();
}

// Hands ibverbs.c the duty until the last owing id's end (0: none).
static void duty_refresh(void) {
  static const struct ibvx_wait_duty d = { cm_duty_run, cm_duty_watch, DUTY_SLICE_MS };
  uint64_t now = clock_ns(), until = 0;
  for (struct id_priv *p = all_ids; p; p = p->next) {
    uint64_t end = rct_cm_ep_answer_until(&p->ep);
    if (owes(p, now) && end > until) until = end;
  }
  ibvx_set_wait_duty(&d, until);
}

static void owe_answers(struct id_priv *p) {
  p->peer_heard = 0;
  duty_refresh();
}

int rdmax_get_cm_event_timeout(struct rdma_event_channel *channel, struct rdma_cm_event **event,
                               int timeout_ms) {
  struct chan *c = (struct chan *)channel;
  if (!c || !event) return fail_errno(EINVAL);
  uint64_t end = clock_ns() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms) * 1000000ull;
  for (int stepped = 0; !c->head; stepped = 1) {
    uint64_t now = clock_ns();
    if (timeout_ms >= 0 && now >= end && stepped) return fail_errno(ETIMEDOUT);
    chan_step(c, timeout_ms < 0 ? -1 : now >= end ? 0 : (int)((end - now + 999999) / 1000000));
  }
  struct ev_priv *e = c->head;
  c->head = e->next;
  if (!c->head) c->tail = NULL;
  e->next = NULL;
  *event = &e->ev;
  return 0;
}

// Blocks unless channel->fd was made non-blocking (fcntl O_NONBLOCK): then
// one look at the socket, and EAGAIN when no event is ready.
int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event) {
  if (!channel) return fail_errno(EINVAL);
  int flags = fcntl(channel->fd, F_GETFL);
  int nonblock = flags >= 0 && (flags & O_NONBLOCK);
  if (rdmax_get_cm_event_timeout(channel, event, nonblock ? 0 : -1) == 0) return 0;
  return fail_errno(nonblock && errno == ETIMEDOUT ? EAGAIN : errno);
}

int rdma_ack_cm_event(struct rdma_cm_event *event) {
  if (!event) return fail_errno(EINVAL);
  free(event);                                      // struct ev_priv starts with it
  return 0;
}

// The errno a synchronous call returns for an event that is not the one
// it waited for.
static int event_errno(const struct rdma_cm_event *e) {
  static const int by_event[] = {
    [RDMA_CM_EVENT_REJECTED] = ECONNREFUSED, [RDMA_CM_EVENT_UNREACHABLE] = ETIMEDOUT,
    [RDMA_CM_EVENT_CONNECT_ERROR] = ETIMEDOUT, [RDMA_CM_EVENT_DISCONNECTED] = ECONNRESET,
  };
  if (e->status < 0) return -e->status;
  return (unsigned)e->event < sizeof by_event / sizeof by_event[0] && by_event[e->event]
         ? by_event[e->event] : EINVAL;
}

// Synchronous ids: the next event of the id's own channel becomes
// id->event (the previous one is acknowledged); 0 if it is `want`.
static int sync_complete(struct id_priv *p, enum rdma_cm_event_type want) {
  struct rdma_cm_event *e;
  if (rdma_get_cm_event(&p->chan->pub, &e) < 0) return -1;
  if (p->id.event) rdma_ack_cm_event(p->id.event);
  p->id.event = e;
  return e->event == want ? 0 : fail_errno(event_errno(e));
}

const char *rdma_event_str(enum rdma_cm_event_type event) {
  static const char *const names[] = {
    "RDMA_CM_EVENT_ADDR_RESOLVED", "RDMA_CM_EVENT_ADDR_ERROR", "RDMA_CM_EVENT_ROUTE_RESOLVED",
    "RDMA_CM_EVENT_ROUTE_ERROR", "RDMA_CM_EVENT_CONNECT_REQUEST", "RDMA_CM_EVENT_CONNECT_RESPONSE",
    "RDMA_CM_EVENT_CONNECT_ERROR", "RDMA_CM_EVENT_UNREACHABLE", "RDMA_CM_EVENT_REJECTED",
    "RDMA_CM_EVENT_ESTABLISHED", "RDMA_CM_EVENT_DISCONNECTED", "RDMA_CM_EVENT_DEVICE_REMOVAL",
    "RDMA_CM_EVENT_MULTICAST_JOIN", "RDMA_CM_EVENT_MULTICAST_ERROR", "RDMA_CM_EVENT_ADDR_CHANGE",
    "RDMA_CM_EVENT_TIMEWAIT_EXIT",
  };
  return (unsigned)event < sizeof names / sizeof names[0] ? names[event] : "UNKNOWN EVENT";
}

const char *rdma_reject_msg(struct rdma_cm_id *id, int reason) {
  static const char *const names[] = { "?", "CONSUMER_REJECT", "NO_LISTENER", "NO_RESOURCES",
                                       "INVALID_PARAM", "UNSUPPORTED_VERSION", "TIMEOUT", "STALE_CONN" };
  (void)id;
  return reason >= RCT_CM_REJ_CONSUMER && reason <= RCT_CM_REJ_STALE_CONN ? names[reason] : "?";
}

// ---- the exchange ----

int rdma_listen(struct rdma_cm_id *id, int backlog) {
  (void)backlog;
  if (!id) return fail_errno(EINVAL);
  struct id_priv *p = priv_of(id);
  if (attach_device(id) < 0) return -1;
  if (!p->bound) {
    struct sockaddr_in any;
    rdmax_sockaddr(&any, 0, RDMA_CM_PORT);
    if (rdma_bind_addr(id, (struct sockaddr *)&any) < 0) return -1;
  }
  uint16_t port = ntohs(id->route.addr.src_sin.sin_port);
  if (port == 0) port = RDMA_CM_PORT;               // a listener's port must be known
  for (struct id_priv *q = all_ids; q; q = q->next)
    if (q != p && q->listening && q->chan == p->chan) return fail_errno(EADDRINUSE);
  if (chan_socket(p->chan, port) < 0) return -1;
  id->route.addr.src_sin.sin_port = htons(port);
  if (rct_cm_ep_listen(&p->ep) != RCT_OK) return fail_errno(EINVAL);
  p->listening = 1;
  return 0;
}

int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *cp) {
  if (!id || !id->qp || (cp && (cp->srq || cp->private_data_len > RDMA_CM_PRIVATE_MAX)))
    return fail_errno(EINVAL);
  struct id_priv *p = priv_of(id);
  uint32_t ip;
  uint16_t port;
  if (!p->addr_set || sin_of(&id->route.addr.dst_addr, &ip, &port) < 0) return fail_errno(EINVAL);
  struct rct_cm_msg req;
  fill_msg(p, &req, cp, RCT_MTU_4096);
  if (chan_socket(p->chan, p->bound ? ntohs(id->route.addr.src_sin.sin_port) : 0) < 0) return -1;
  if (rct_cm_ep_connect(&p->ep, clock_ns(), (struct rct_cm_addr){ ip, port }, &req) != RCT_OK)
    return fail_errno(EINVAL);
  flush(p, NULL);
  return p->sync ? sync_complete(p, RDMA_CM_EVENT_ESTABLISHED) : 0;
}

int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *cp) {
  if (!id || !id->qp || (cp && (cp->srq || cp->private_data_len > RDMA_CM_PRIVATE_MAX)))
    return fail_errno(EINVAL);
  struct id_priv *p = priv_of(id);
  if (p->ep.state != RCT_CM_EP_REQ_RCVD) return fail_errno(EINVAL);
  struct rct_cm_msg rep;
  fill_msg(p, &rep, cp, p->ep.peer_msg.path_mtu);  // the REP carries the chosen MTU [CM-PARAM-1]
  if (qp_to_rts(p, &rep, &p->ep.peer_msg) < 0) return fail_errno(EINVAL);   // before REP [CM-STATE-3]
  p->rx0 = qp_rx_frames(id->qp);
  if (rct_cm_ep_accept(&p->ep, clock_ns(), &rep) != RCT_OK) return fail_errno(EINVAL);
  flush(p, NULL);
  return p->sync ? sync_complete(p, RDMA_CM_EVENT_ESTABLISHED) : 0;
}

int rdma_reject(struct rdma_cm_id *id, const void *private_data, uint8_t len) {
  if (!id || len > RDMA_CM_PRIVATE_MAX || (len && !private_data)) return fail_errno(EINVAL);
  struct id_priv *p = priv_of(id);
  if (rct_cm_ep_reject(&p->ep, clock_ns(), RCT_CM_REJ_CONSUMER, private_data, len) != RCT_OK)
    return fail_errno(EINVAL);
  flush(p, NULL);
  return 0;
}

// The QP to ERR and DREQ [CM-STATE-6]; a synchronous id waits for the
// DREP (or the end of the DREQ's retries [CM-TMO-2]).
int rdma_disconnect(struct rdma_cm_id *id) {
  if (!id) return fail_errno(EINVAL);
  struct id_priv *p = priv_of(id);
  if (p->ep.state == RCT_CM_EP_CLOSED) return 0;   // the peer's DREQ came first
  if (p->ep.state != RCT_CM_EP_ESTABLISHED) return fail_errno(EINVAL);
  qp_to_err(p);
  rct_cm_ep_disconnect(&p->ep, clock_ns());
  flush(p, NULL);
  return p->sync ? sync_complete(p, RDMA_CM_EVENT_DISCONNECTED) : 0;
}

int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id) {
  if (!listen || !id || !priv_of(listen)->listening) return fail_errno(EINVAL);
  struct id_priv *l = priv_of(listen);
  struct rdma_cm_event *e;
  for (;;) {
    if (rdma_get_cm_event(listen->channel, &e) < 0) return -1;
    if (e->event == RDMA_CM_EVENT_CONNECT_REQUEST) break;
    rdma_ack_cm_event(e);
  }
  struct rdma_cm_id *nid = e->id;
  // A channel of its own: the connection answers from a port of its own.
  if (rdma_migrate_id(nid, NULL) < 0) { rdma_ack_cm_event(e); return -1; }
  nid->event = e;
  if (l->ep_has_attr) {
    struct ibv_qp_init_attr a = l->ep_attr;
    if (rdma_create_qp(nid, listen->pd, &a) < 0) {   // errno: why (EINVAL, ENOMEM, ...)
      int e = errno;
      rdma_reject(nid, NULL, 0);
      rdma_destroy_id(nid);
      return fail_errno(e);
    }
  }
  *id = nid;
  return 0;
}

// librdmacm's options that mean something here: RDMA_OPTION_ID_ACK_TIMEOUT
// (the QP's local ACK timeout code, as rdmax_transport.timeout),
// RDMA_OPTION_ID_REUSEADDR and RDMA_OPTION_ID_AFONLY (accepted: a channel's
// port is its own, and there is only IPv4); and the project's
// RDMAX_OPTION_TRANSPORT. RDMA_OPTION_ID_TOS and RDMA_OPTION_IB_PATH are
// ENOSYS (no IP TOS field is set; no IB path records). A wrong optlen or a
// NULL optval is EINVAL.
int rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval, size_t optlen) {
  if (!id || !optval) return fail_errno(EINVAL);
  struct id_priv *p = priv_of(id);
  if (level == RDMAX_OPTION_XV6 && optname == RDMAX_OPTION_TRANSPORT) {
    if (optlen != sizeof p->xt) return fail_errno(EINVAL);
    memcpy(&p->xt, optval, sizeof p->xt);
    return 0;
  }
  if (level != RDMA_OPTION_ID) return fail_errno(ENOSYS);
  if (optname == RDMA_OPTION_ID_ACK_TIMEOUT) {
    uint8_t t = *(uint8_t *)optval;
    if (optlen != sizeof t || t > RDMAX_MAX_ACK_TIMEOUT) return fail_errno(EINVAL);
    p->xt.timeout = t;
    return 0;
  }
  if (optname == RDMA_OPTION_ID_REUSEADDR || optname == RDMA_OPTION_ID_AFONLY)
    return optlen == sizeof(int) ? 0 : fail_errno(EINVAL);
  return fail_errno(ENOSYS);
}

// IBV_EVENT_COMM_EST on a passive id whose RTU has not come: established
// now, as its first RC frame would make it [CM-STATE-3]. EISCONN when the
// connection was established already; other events are EINVAL.
int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event) {
  if (!id || event != IBV_EVENT_COMM_EST) return fail_errno(EINVAL);
  struct id_priv *p = priv_of(id);
  if (p->ep.state == RCT_CM_EP_ESTABLISHED) return fail_errno(EISCONN);
  if (p->ep.state != RCT_CM_EP_REP_SENT) return fail_errno(EINVAL);
  rct_cm_ep_rc_frame(&p->ep);
  flush(p, NULL);
  return 0;
}

// The one device, opened once and kept open (librdmacm: "Devices remain
// opened while the librdmacm is loaded"); the array is the caller's.
struct ibv_context **rdma_get_devices(int *num_devices) {
  struct ibv_context *ctx = device();
  struct ibv_context **list = calloc(2, sizeof *list);
  if (!list) { errno = ENOMEM; return NULL; }
  list[0] = ctx;
  if (num_devices) *num_devices = ctx ? 1 : 0;
  return list;
}

void rdma_free_devices(struct ibv_context **list) { free(list); }

// ---- address information and endpoints ----

// The QP type and port space of a result: the hints' when they give them,
// else RC over RDMA_PS_TCP, as librdmacm derives one from the other. Only
// RC exists here (docs/rdma.md): anything else is -1 (EINVAL).
static int addr_kind(const struct rdma_addrinfo *hints, int *qp_type, int *ps) {
  *ps = hints && hints->ai_port_space ? hints->ai_port_space : RDMA_PS_TCP;
  *qp_type = hints && hints->ai_qp_type ? hints->ai_qp_type : IBV_QPT_RC;
  return (*ps == RDMA_PS_TCP || *ps == RDMA_PS_IB) && *qp_type == IBV_QPT_RC ? 0 : -1;
}

// Numeric IPv4 addresses and decimal ports only (there is no resolver).
// RAI_PASSIVE: node NULL or "0.0.0.0" is the wildcard address (the port's
// own address when bound), as in librdmacm.
int rdma_getaddrinfo(const char *node, const char *service, const struct rdma_addrinfo *hints,
                     struct rdma_addrinfo **res) {
  int flags = hints ? hints->ai_flags : 0, qp_type, ps;
  uint32_t ip = 0;
  char *end = NULL;
  long port = service ? strtol(service, &end, 10) : 0;
  if (!res || (!node && !(flags & RAI_PASSIVE)) || (service && (!*service || *end)) || port < 0 ||
      port > 65535 || (hints && hints->ai_family && hints->ai_family != AF_INET) ||
      addr_kind(hints, &qp_type, &ps) < 0)
    return fail_errno(EINVAL);
  if (node && inet_pton(AF_INET, node, &ip) != 1) return fail_errno(EINVAL);
  struct rdma_addrinfo *ai = calloc(1, sizeof *ai);
  struct sockaddr_in *sin = calloc(1, sizeof *sin);
  if (!ai || !sin) { free(ai); free(sin); return fail_errno(ENOMEM); }
  rdmax_sockaddr(sin, ntohl(ip), (uint16_t)port);
  ai->ai_flags = flags;
  ai->ai_family = AF_INET;
  ai->ai_qp_type = qp_type;
  ai->ai_port_space = ps;
  if (flags & RAI_PASSIVE) { ai->ai_src_addr = (struct sockaddr *)sin; ai->ai_src_len = sizeof *sin; }
  else { ai->ai_dst_addr = (struct sockaddr *)sin; ai->ai_dst_len = sizeof *sin; }
  *res = ai;
  return 0;
}

void rdma_freeaddrinfo(struct rdma_addrinfo *res) {
  while (res) {
    struct rdma_addrinfo *next = res->ai_next;
    free(res->ai_src_addr);
    free(res->ai_dst_addr);
    free(res);
    res = next;
  }
}

// A synchronous id from rdma_getaddrinfo's result: bound (RAI_PASSIVE, and
// qp_init_attr kept for rdma_get_request's QPs) or resolved with its QP.
// The QP's type is the result's ai_qp_type, written into qp_init_attr, and
// the id's port space its ai_port_space, as in librdmacm.
int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res, struct ibv_pd *pd,
                   struct ibv_qp_init_attr *qp_init_attr) {
  struct rdma_cm_id *cid;
  if (!id || !res) return fail_errno(EINVAL);
  if (qp_init_attr) qp_init_attr->qp_type = (enum ibv_qp_type)res->ai_qp_type;   // as librdmacm
  if (rdma_create_id(NULL, &cid, NULL, (enum rdma_port_space)res->ai_port_space) < 0) return -1;
  struct id_priv *p = priv_of(cid);
  int rc;
  if (res->ai_flags & RAI_PASSIVE) {
    rc = rdma_bind_addr(cid, res->ai_src_addr);
    if (rc == 0 && qp_init_attr) {                  // rdma_get_request makes the QPs
      p->ep_attr = *qp_init_attr;
      p->ep_has_attr = 1;
      cid->pd = pd;
    }
  } else {
    rc = rdma_resolve_addr(cid, res->ai_src_addr, res->ai_dst_addr, 2000);
    if (rc == 0) rc = rdma_resolve_route(cid, 2000);
    if (rc == 0 && qp_init_attr) rc = rdma_create_qp(cid, pd, qp_init_attr);
  }
  if (rc < 0) { int e = errno; rdma_destroy_id(cid); return fail_errno(e); }
  *id = cid;
  return 0;
}

void rdma_destroy_ep(struct rdma_cm_id *id) {
  if (!id) return;
  rdma_destroy_qp(id);
  rdma_destroy_id(id);
}

// ---- extensions ----

void rdmax_conn_ids(struct rdma_cm_id *id, uint32_t *local, uint32_t *remote) {
  *local = priv_of(id)->ep.local_id;
  *remote = priv_of(id)->ep.remote_id;
}

uint32_t rdmax_cm_dropped(struct rdma_cm_id *id) { return (uint32_t)priv_of(id)->ep.cnt.dropped; }

void rdmax_pack_mr(uint8_t out[16], uint64_t addr, uint32_t rkey, uint32_t len) {
  for (int i = 0; i < 8; i++) out[i] = (uint8_t)(addr >> (56 - 8 * i));
  for (int i = 0; i < 4; i++) out[8 + i] = (uint8_t)(rkey >> (24 - 8 * i));
  for (int i = 0; i < 4; i++) out[12 + i] = (uint8_t)(len >> (24 - 8 * i));
}

void rdmax_unpack_mr(const uint8_t in[16], uint64_t *addr, uint32_t *rkey, uint32_t *len) {
  uint64_t a = 0;
  uint32_t k = 0, l = 0;
  for (int i = 0; i < 8; i++) a = (a << 8) | in[i];
  for (int i = 0; i < 4; i++) k = (k << 8) | in[8 + i];
  for (int i = 0; i < 4; i++) l = (l << 8) | in[12 + i];
  *addr = a; *rkey = k; *len = l;
}

// ---- rdma_verbs.h: completions ----

// The next completion of cq: polls, then sleeps on its channel (armed,
// polled once more to close the race) or on the CQ itself.
static int get_comp(struct ibv_cq *cq, struct ibv_comp_channel *ch, struct ibv_wc *wc) {
  if (!cq) return fail_errno(EINVAL);
  for (;;) {
    int n = ibv_poll_cq(cq, 1, wc);
    if (n != 0) return n < 0 ? fail_errno(EIO) : n;
    if (!ch) { if (ibvx_wait_cq(cq, -1)) return fail_errno(EIO); continue; }
    if (ibv_req_notify_cq(cq, 0)) return fail_errno(EIO);
    if ((n = ibv_poll_cq(cq, 1, wc)) != 0) return n < 0 ? fail_errno(EIO) : n;
    struct ibv_cq *ecq;
    void *ectx;
    if (ibv_get_cq_event(ch, &ecq, &ectx)) return fail_errno(EIO);
    ibv_ack_cq_events(ecq, 1);
  }
}

int rdma_get_send_comp(struct rdma_cm_id *id, struct ibv_wc *wc) {
  return get_comp(id->send_cq, id->send_cq_channel, wc);
}

int rdma_get_recv_comp(struct rdma_cm_id *id, struct ibv_wc *wc) {
  return get_comp(id->recv_cq, id->recv_cq_channel, wc);
}
