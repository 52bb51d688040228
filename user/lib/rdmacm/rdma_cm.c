// rdma_cm.c: see rdma_cm.h. A thin client of the kernel's rdma_cm (the
// SYS_ucma_* calls, user/lib/rdmacm/ucma_sys.h; kernel/rdma/cma.c runs the
// InfiniBand CM over QP1), as librdmacm is of Linux's rdma_ucm: this file
// owns the application's ids and events (struct rdma_cm_id, struct
// rdma_cm_event, each a kernel id or event with the pointers librdmacm
// gives), the synchronous ids, the QPs rdma_create_qp makes, and the QP
// moves librdmacm makes in user space: INIT at rdma_create_qp, RTR and RTS
// from the kernel's init_qp_attr before the passive side's REP
// (rdma_accept) and, on the active side, on the REP (the kernel's
// CONNECT_RESPONSE event, which the application sees as ESTABLISHED once
// the RTU went), and ERR on DISCONNECTED. The kernel keeps the CM's
// timers, retransmissions and answers to duplicates, so nothing here runs
// inside the verbs library's waits.
//
// Project extension, negotiated: an id with rdmax_transport.sr offers
// selective repeat (RDMA_XV6_CAP_SR in the REQ's or REP's xv6 capabilities,
// reserved bits a Linux peer ignores); the QP gets it only when the peer's
// message announced it too [SR-NEG-1].
#include "user.h"
#include "rdma_cm.h"
#include "rdma_verbs.h"
#include "rdma_sys.h"
#include "ucma_sys.h"
#include "rdma_util.h"
#include "kernel/transport/rct.h"
#include "kernel/cm/ibcm.h"

struct ev_priv {
  struct rdma_cm_event ev;                 // first: rdma_ack_cm_event gets this pointer
  uint8_t priv[UCMA_PRIVATE_MAX];
};

struct chan {
  struct rdma_event_channel pub;           // first: the application holds this pointer
};

struct id_priv {
  struct rdma_cm_id id;                    // first: the application holds this pointer
  struct chan *chan;
  int kid;                                 // the kernel's id
  int sync;                                // NULL channel at creation: chan is its own
  int listening;
  int disconnected;                        // its DISCONNECTED event was delivered
  struct rdma_conn_param own;              // what this side asked for (connect / accept)
  uint8_t peer_rres;                       // the peer's responder resources (its REQ / REP)
  uint32_t peer_caps;                      // the peer's xv6 capabilities
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

// A kernel call's result: r >= 0, or -1 with errno from its negated errno.
static int kcall(int r) { return r < 0 ? fail_errno(-r) : r; }

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

// The kernel's channel: a file descriptor poll() and fcntl(O_NONBLOCK) take.
struct rdma_event_channel *rdma_create_event_channel(void) {
  struct chan *c = calloc(1, sizeof *c);
  if (!c) { errno = ENOMEM; return NULL; }
  c->pub.fd = ucma_create_chan();
  if (c->pub.fd < 0) { errno = -c->pub.fd; free(c); return NULL; }
  return &c->pub;
}

// Closing the descriptor destroys the kernel ids still on it.
void rdma_destroy_event_channel(struct rdma_event_channel *channel) {
  struct chan *c = (struct chan *)channel;
  if (!c) return;
  close(c->pub.fd);
  free(c);
}

// ---- ids ----

static struct id_priv *new_id(struct chan *c, int sync, int kid, void *context, enum rdma_port_space ps) {
  struct id_priv *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->chan = c;
  p->sync = sync;
  p->kid = kid;
  p->id.channel = &c->pub;
  p->id.context = context;
  p->id.ps = ps;
  p->id.qp_type = ps == RDMA_PS_UDP ? IBV_QPT_UD : IBV_QPT_RC;
  p->id.port_num = 1;
  p->next = all_ids;
  all_ids = p;
  return p;
}

static struct id_priv *by_kid(int kid) {
  for (struct id_priv *p = all_ids; p; p = p->next)
    if (p->kid == kid) return p;
  return NULL;
}

int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
                   enum rdma_port_space ps) {
  if (!id || (ps != RDMA_PS_TCP && ps != RDMA_PS_IB && ps != RDMA_PS_UDP)) return fail_errno(EINVAL);
  struct chan *c = (struct chan *)channel;
  int sync = c == NULL;
  if (sync && !(c = (struct chan *)rdma_create_event_channel())) return -1;
  int kid = ucma_create_id(c->pub.fd, ps == RDMA_PS_UDP ? RDMA_PS_UDP : RDMA_PS_TCP, 0);  // PS_IB: TCP's
  struct id_priv *p = kid >= 0 ? new_id(c, sync, kid, context, ps) : NULL;
  if (!p) {
    if (kid >= 0) ucma_destroy_id(kid);
    if (sync) rdma_destroy_event_channel(&c->pub);
    return fail_errno(kid < 0 ? -kid : ENOMEM);
  }
  *id = &p->id;
  return 0;
}

int rdma_destroy_id(struct rdma_cm_id *id) {
  if (!id) return fail_errno(EINVAL);
  struct id_priv *p = priv_of(id);
  for (struct id_priv **pp = &all_ids; *pp; pp = &(*pp)->next)
    if (*pp == p) { *pp = p->next; break; }
  if (id->event) rdma_ack_cm_event(id->event);
  ucma_destroy_id(p->kid);                          // DREQ or REJ as the standard says; events dropped
  if (p->sync) rdma_destroy_event_channel(&p->chan->pub);
  free(p);
  return 0;
}

int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel) {
  if (!id) return fail_errno(EINVAL);
  struct id_priv *p = priv_of(id);
  struct chan *c = (struct chan *)channel;
  int sync = c == NULL;
  if (sync && !(c = (struct chan *)rdma_create_event_channel())) return -1;
  int r = ucma_migrate_id(p->kid, c->pub.fd);
  if (r < 0) {
    if (sync) rdma_destroy_event_channel(&c->pub);
    return fail_errno(-r);
  }
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

static int sync_complete(struct id_priv *p, enum rdma_cm_event_type want);

// ip 0 is every address of ours (the one); port 0 an ephemeral one.
int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr) {
  uint32_t ip;
  uint16_t port;
  if (!id || sin_of(addr, &ip, &port) < 0) return fail_errno(EINVAL);
  struct id_priv *p = priv_of(id);
  if (attach_device(id) < 0 || kcall(ucma_bind(p->kid, ip, port)) < 0) return -1;
  rdmax_sockaddr(&id->route.addr.src_sin, ip ? ip : rdmau_local_ipv4(id->verbs), port);
  return 0;
}

// The kernel resolves the peer's MAC (ARP, up to timeout_ms): no answer
// is ADDR_ERROR with -EHOSTUNREACH, as librdmacm reports an address that
// does not resolve. A destination without a port gets RDMA_CM_PORT.
int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr, struct sockaddr *dst_addr,
                      int timeout_ms) {
  uint32_t ip, sip = 0;
  uint16_t port, sport = 0;
  if (!id || sin_of(dst_addr, &ip, &port) < 0 || ip == 0) return fail_errno(EINVAL);
  if (src_addr && sin_of(src_addr, &sip, &sport) < 0) return fail_errno(EINVAL);
  struct id_priv *p = priv_of(id);
  if (attach_device(id) < 0) return -1;
  if (sport && kcall(ucma_bind(p->kid, sip, sport)) < 0) return -1;
  port = port ? port : RDMA_CM_PORT;
  rdmax_sockaddr(&id->route.addr.dst_sin, ip, port);
  if (kcall(ucma_resolve_addr(p->kid, sip, ip, port, timeout_ms > 0 ? timeout_ms : 1)) < 0) return -1;
  return p->sync ? sync_complete(p, RDMA_CM_EVENT_ADDR_RESOLVED) : 0;
}

int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms) {
  if (!id) return fail_errno(EINVAL);
  struct id_priv *p = priv_of(id);
  if (kcall(ucma_resolve_route(p->kid, timeout_ms)) < 0) return -1;
  id->route.num_paths = 1;
  return p->sync ? sync_complete(p, RDMA_CM_EVENT_ROUTE_RESOLVED) : 0;
}

struct sockaddr *rdma_get_local_addr(struct rdma_cm_id *id) { return &id->route.addr.src_addr; }
struct sockaddr *rdma_get_peer_addr(struct rdma_cm_id *id) { return &id->route.addr.dst_addr; }
uint16_t rdma_get_src_port(struct rdma_cm_id *id) { return id->route.addr.src_sin.sin_port; }
uint16_t rdma_get_dst_port(struct rdma_cm_id *id) { return id->route.addr.dst_sin.sin_port; }

// ---- QPs ----

// The QP to state with the kernel's attributes for the id: INIT (port,
// P_Key index, access; a UD id's Q_Key), and a UD id's RTR and RTS.
static int qp_move(struct id_priv *p, enum ibv_qp_state state) {
  struct rdma_qp_attr k;
  int mask = ucma_init_qp_attr(p->kid, state, &k);
  if (mask < 0) return -1;
  struct ibv_qp_attr a;
  memset(&a, 0, sizeof a);
  a.qp_state = state;
  a.port_num = (uint8_t)k.port_num;
  a.pkey_index = (uint16_t)k.pkey_index;
  a.qp_access_flags = k.qp_access_flags;
  a.qkey = k.qkey;
  a.sq_psn = k.sq_psn;
  return ibv_modify_qp(p->id.qp, &a, mask);
}

static int qp_to_init(struct id_priv *p) { return qp_move(p, IBV_QPS_INIT); }

// A UD id's QP goes to RTS at once (INIT with RDMA_UDP_QKEY, RTR, RTS), as
// librdmacm moves it: no exchange gives it anything.
static int ud_to_rts(struct id_priv *p) {
  return qp_move(p, IBV_QPS_INIT) || qp_move(p, IBV_QPS_RTR) || qp_move(p, IBV_QPS_RTS) ? -1 : 0;
}

int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *attr) {
  if (!id || !attr || attr->qp_type != id->qp_type || attr->srq) return fail_errno(EINVAL);
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
  if (id->qp_type == IBV_QPT_UD ? ud_to_rts(p) : qp_to_init(p)) {
    rdma_destroy_qp(id);
    return fail_errno(EINVAL);
  }
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

static uint8_t own_rres(const struct id_priv *p) {
  return p->own.responder_resources ? p->own.responder_resources : RDMAX_DEFAULT_RESPONDER_RESOURCES;
}

static uint8_t own_idepth(const struct id_priv *p) {
  return p->own.initiator_depth ? p->own.initiator_depth : RDMAX_DEFAULT_INITIATOR_DEPTH;
}

// The QP to RTR and RTS: the path, the peer's QPN and both PSNs from the
// kernel's init_qp_attr (what the REQ and REP said); READ depths from
// both sides' offers; this side's timeouts, retries and transport
// settings; selective repeat only if both offered it [SR-NEG-1].
static int qp_to_rts(struct id_priv *p) {
  struct rdma_qp_attr k;
  struct ibv_qp_attr a;
  struct ibvx_qp_ext ext;
  struct ibv_qp *qp = p->id.qp;
  struct ibv_qp_init_attr ia;
  if (!qp || ucma_init_qp_attr(p->kid, IBV_QPS_RTR, &k) < 0) return -1;
  if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia) == 0 && a.qp_state == IBV_QPS_RESET && qp_to_init(p))
    return -1;                                     // a QP of ibv_create_qp's, set as id->qp
  memset(&a, 0, sizeof a);
  memset(&ext, 0, sizeof ext);
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = (enum ibv_mtu)k.path_mtu;
  a.dest_qp_num = k.dest_qp_num;
  a.rq_psn = k.rq_psn;
  a.max_dest_rd_atomic = own_rres(p);
  a.min_rnr_timer = 1;
  a.ah_attr.is_global = 1;
  a.ah_attr.port_num = 1;
  a.ah_attr.grh.hop_limit = 64;
  ibvx_gid_from_ipv4(&a.ah_attr.grh.dgid, k.dipv4);
  ext.sr_enable = p->xt.sr && (p->peer_caps & RDMA_XV6_CAP_SR);
  ext.roce_v1 = p->xt.roce_v1;
  ext.max_inflight = p->xt.max_inflight ? p->xt.max_inflight : rdmax_default_inflight(a.path_mtu);
  uint32_t min_rto_us = p->xt.min_rto_us ? p->xt.min_rto_us : RDMAX_DEFAULT_MIN_RTO_US;
  ext.adaptive_rto = min_rto_us != ~0u;
  ext.min_rto_ns = ext.adaptive_rto ? (unsigned long long)min_rto_us * 1000 : 0;
  if (ibvx_modify_qp(qp, &a, RDMAU_MASK_RTR, &ext,
                     (ext.sr_enable ? RDMA_QP_SR : 0) | RDMA_QP_MAX_INFLIGHT | RDMA_QP_ADAPTIVE_RTO))
    return -1;
  if (ucma_init_qp_attr(p->kid, IBV_QPS_RTS, &k) < 0) return -1;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = k.sq_psn;
  // Default 18 (1.07 s), the adaptive RTO's ceiling: emulated guests on
  // a loaded host stall for hundreds of ms, and 8 x 67 ms (timeout 14)
  // ended healthy connections. With the 30 ms floor the seven retries
  // span about 3 s (30, 60, ... 960, 1070 ms) before RETRY_EXC.
  a.timeout = p->xt.timeout ? p->xt.timeout : 18;
  a.retry_cnt = p->own.retry_count ? p->own.retry_count : RDMAX_DEFAULT_RETRY_COUNT;
  a.rnr_retry = p->own.rnr_retry_count ? p->own.rnr_retry_count : 7;
  uint8_t depth = own_idepth(p) < p->peer_rres ? own_idepth(p) : p->peer_rres;
  a.max_rd_atomic = depth ? depth : 1;
  return ibv_modify_qp(qp, &a, RDMAU_MASK_RTS) ? -1 : 0;
}

static void qp_to_err(struct id_priv *p) {
  struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
  if (p->id.qp) ibv_modify_qp(p->id.qp, &a, IBV_QP_STATE);
}

// The kernel's connection parameters from the application's (cp may be
// NULL: librdmacm's defaults) and the id's transport settings.
// room: the private data the message has room for (a REQ's after rdma_cm's
// header, RDMA_CM_PRIVATE_MAX; a REP's, RDMA_CM_REP_PRIVATE_MAX).
static int conn_param(struct id_priv *p, const struct rdma_conn_param *cp, struct ucma_conn_param *k,
                      int room) {
  if (cp && (cp->srq || cp->private_data_len > room || (cp->private_data_len && !cp->private_data)))
    return fail_errno(EINVAL);
  if (cp) p->own = *cp;
  memset(k, 0, sizeof *k);
  k->qp_num = p->id.qp ? p->id.qp->qp_num : 0;
  k->responder_resources = own_rres(p);
  k->initiator_depth = own_idepth(p);
  k->retry_count = p->own.retry_count ? p->own.retry_count : RDMAX_DEFAULT_RETRY_COUNT;
  k->rnr_retry_count = p->own.rnr_retry_count ? p->own.rnr_retry_count : 7;
  k->ack_timeout = p->xt.timeout ? p->xt.timeout : 18;
  k->xv6_caps = p->xt.sr ? RDMA_XV6_CAP_SR : 0;
  if (cp && cp->private_data_len) {
    k->private_data_len = cp->private_data_len;
    memcpy(k->private_data, cp->private_data, cp->private_data_len);
  }
  return 0;
}

// ---- events ----

// The application's event for the kernel's ev (p: the id it names); NULL
// when the library keeps it (an event of an id already destroyed).
static struct rdma_cm_event *make_event(const struct ucma_event *k) {
  struct id_priv *p = by_kid(k->id);
  struct id_priv *l = k->listen_id >= 0 ? by_kid(k->listen_id) : NULL;
  if (k->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
    if (!l) return NULL;
    p = new_id(l->chan, 0, k->id, l->id.context, l->id.ps);
    if (!p) { ucma_destroy_id(k->id); return NULL; }
    p->id.verbs = l->id.verbs;
  }
  if (!p) return NULL;
  struct ev_priv *e = calloc(1, sizeof *e);
  if (!e) return NULL;                             // out of memory: the event is lost
  rdmax_sockaddr(&p->id.route.addr.src_sin, k->src_ip, k->src_port);
  if (k->dst_ip) rdmax_sockaddr(&p->id.route.addr.dst_sin, k->dst_ip, k->dst_port);
  e->ev.id = &p->id;
  e->ev.listen_id = l ? &l->id : NULL;
  e->ev.event = (enum rdma_cm_event_type)k->event;
  e->ev.status = k->status;
  const struct ucma_conn_param *c = &k->param;
  memcpy(e->priv, c->private_data, c->private_data_len);
  if (p->id.ps == RDMA_PS_UDP) {                   // param.ud: the peer's QP and a path to it
    e->ev.param.ud.private_data = c->private_data_len ? e->priv : NULL;
    e->ev.param.ud.private_data_len = c->private_data_len;
    rdmau_ud_ah_attr(&e->ev.param.ud.ah_attr, k->dst_ip);
    e->ev.param.ud.qp_num = c->qp_num;
    e->ev.param.ud.qkey = c->qkey;
    return &e->ev;
  }
  e->ev.param.conn.private_data = c->private_data_len ? e->priv : NULL;
  e->ev.param.conn.private_data_len = c->private_data_len;
  e->ev.param.conn.responder_resources = c->responder_resources;
  e->ev.param.conn.initiator_depth = c->initiator_depth;
  e->ev.param.conn.retry_count = c->retry_count;
  e->ev.param.conn.rnr_retry_count = c->rnr_retry_count;
  e->ev.param.conn.qp_num = c->qp_num;
  if (k->event == RDMA_CM_EVENT_CONNECT_REQUEST || k->event == RDMA_CM_EVENT_CONNECT_RESPONSE) {
    p->peer_rres = c->responder_resources;
    p->peer_caps = c->xv6_caps;
  }
  return &e->ev;
}

// What the library does with an event before the application sees it:
// the active side's REP (CONNECT_RESPONSE) moves its QP to RTR and RTS,
// sends the RTU and becomes ESTABLISHED, or, if the QP refuses, a REJ and
// CONNECT_ERROR (as librdmacm); DISCONNECTED moves the QP to ERR.
static void act_on(struct rdma_cm_event *e) {
  struct id_priv *p = priv_of(e->id);
  if (e->event == RDMA_CM_EVENT_CONNECT_RESPONSE) {
    if (qp_to_rts(p) == 0 && ucma_accept(p->kid, NULL) == 0) {
      e->event = RDMA_CM_EVENT_ESTABLISHED;
    } else {
      ucma_disconnect(p->kid);
      e->event = RDMA_CM_EVENT_CONNECT_ERROR;
      e->status = -EINVAL;
    }
  } else if (e->event == RDMA_CM_EVENT_DISCONNECTED) {
    qp_to_err(p);
    p->disconnected = 1;
  }
}

// The channel's next event for the application: waits up to timeout_ms
// (< 0: for ever; 0: one look) for the descriptor.
int rdmax_get_cm_event_timeout(struct rdma_event_channel *channel, struct rdma_cm_event **event,
                               int timeout_ms) {
  if (!channel || !event) return fail_errno(EINVAL);
  uint64_t end = clock_ns() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms) * 1000000ull;
  for (;;) {
    uint64_t now = clock_ns();
    int left = timeout_ms < 0 ? -1 : now >= end ? 0 : (int)((end - now + 999999) / 1000000);
    struct pollfd pf = { .fd = channel->fd, .events = POLLIN };
    int r = poll(&pf, 1, left);
    if (r < 0) return fail_errno(EINVAL);
    if (r == 0) return fail_errno(ETIMEDOUT);
    int fl = fcntl(channel->fd, F_GETFL);
    if (fl >= 0 && !(fl & O_NONBLOCK)) fcntl(channel->fd, F_SETFL, fl | O_NONBLOCK);
    struct ucma_event k;
    int g = ucma_get_event(channel->fd, &k);
    if (fl >= 0 && !(fl & O_NONBLOCK)) fcntl(channel->fd, F_SETFL, fl);
    if (g == -EAGAIN) continue;
    if (g < 0) return fail_errno(-g);
    struct rdma_cm_event *e = make_event(&k);
    if (!e) continue;
    act_on(e);
    *event = e;
    return 0;
  }
}

// Blocks unless channel->fd was made non-blocking (fcntl O_NONBLOCK): then
// EAGAIN when no event is ready.
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

// The REJ reasons' names (IBTA vol 1 12.6.7.2) a REJECTED event's status carries.
const char *rdma_reject_msg(struct rdma_cm_id *id, int reason) {
  static const struct { int reason; const char *name; } names[] = {
    { IBCM_REJ_NO_QP, "NO_QP" }, { IBCM_REJ_NO_RESOURCES, "NO_RESOURCES" },
    { IBCM_REJ_TIMEOUT, "TIMEOUT" }, { IBCM_REJ_UNSUPPORTED_REQ, "UNSUPPORTED_REQ" },
    { IBCM_REJ_INVALID_COMM_ID, "INVALID_COMM_ID" }, { IBCM_REJ_INVALID_SERVICE_ID, "NO_LISTENER" },
    { IBCM_REJ_STALE_CONN, "STALE_CONN" }, { IBCM_REJ_INVALID_PATH_MTU, "INVALID_PATH_MTU" },
    { IBCM_REJ_INSUFFICIENT_RESP_RES, "INSUFFICIENT_RESP_RES" }, { IBCM_REJ_CONSUMER, "CONSUMER_REJECT" },
    { IBCM_REJ_UNSUPPORTED_CLASS_VERSION, "UNSUPPORTED_VERSION" },
  };
  (void)id;
  for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
    if (names[i].reason == reason) return names[i].name;
  return "?";
}

// ---- the exchange ----

// An id not bound listens at RDMA_CM_PORT on every address.
int rdma_listen(struct rdma_cm_id *id, int backlog) {
  if (!id) return fail_errno(EINVAL);
  struct id_priv *p = priv_of(id);
  if (attach_device(id) < 0) return -1;
  if (!id->route.addr.src_sin.sin_port) {
    struct sockaddr_in any;
    rdmax_sockaddr(&any, 0, RDMA_CM_PORT);
    if (rdma_bind_addr(id, (struct sockaddr *)&any) < 0) return -1;
  }
  if (kcall(ucma_listen(p->kid, backlog)) < 0) return -1;
  p->listening = 1;
  return 0;
}

// A UD id (RDMA_PS_UDP) sends a SIDR_REQ: ESTABLISHED carries param.ud.
int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *cp) {
  struct ucma_conn_param k;
  if (!id || (!id->qp && id->qp_type != IBV_QPT_UD)) return fail_errno(EINVAL);
  struct id_priv *p = priv_of(id);
  if (conn_param(p, cp, &k, RDMA_CM_PRIVATE_MAX) < 0 || kcall(ucma_connect(p->kid, &k)) < 0) return -1;
  return p->sync ? sync_complete(p, RDMA_CM_EVENT_ESTABLISHED) : 0;
}

// The QP to RTR and RTS, then the REP. A UD id: the SIDR_REP with its
// QP's number and RDMA_UDP_QKEY; no event follows.
int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *cp) {
  struct ucma_conn_param k;
  if (!id || !id->qp) return fail_errno(EINVAL);
  struct id_priv *p = priv_of(id);
  if (conn_param(p, cp, &k, RDMA_CM_REP_PRIVATE_MAX) < 0) return -1;
  if (id->qp_type == IBV_QPT_UD) return kcall(ucma_accept(p->kid, &k)) < 0 ? -1 : 0;
  if (qp_to_rts(p) < 0) return fail_errno(EINVAL);
  if (kcall(ucma_accept(p->kid, &k)) < 0) return -1;
  return p->sync ? sync_complete(p, RDMA_CM_EVENT_ESTABLISHED) : 0;
}

int rdma_reject(struct rdma_cm_id *id, const void *private_data, uint8_t len) {
  if (!id || len > RDMA_CM_REJ_PRIVATE_MAX || (len && !private_data)) return fail_errno(EINVAL);
  return kcall(ucma_reject(priv_of(id)->kid, private_data, len)) < 0 ? -1 : 0;
}

// The QP to ERR and DREQ; a synchronous id waits for the DREP (or the
// end of the DREQ's retries).
int rdma_disconnect(struct rdma_cm_id *id) {
  if (!id) return fail_errno(EINVAL);
  struct id_priv *p = priv_of(id);
  qp_to_err(p);
  int r = ucma_disconnect(p->kid);
  if (r < 0) return fail_errno(-r);
  // A synchronous id waits for its DISCONNECTED, unless it already came
  // (the peer's DREQ: this call only sent the DREP, and no event follows).
  return p->sync && !p->disconnected ? sync_complete(p, RDMA_CM_EVENT_DISCONNECTED) : 0;
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
  if (rdma_migrate_id(nid, NULL) < 0) { rdma_ack_cm_event(e); return -1; }   // synchronous
  nid->event = e;
  if (l->ep_has_attr) {
    struct ibv_qp_init_attr a = l->ep_attr;
    if (rdma_create_qp(nid, listen->pd, &a) < 0) {   // errno: why (EINVAL, ENOMEM, ...)
      int err = errno;
      rdma_reject(nid, NULL, 0);
      rdma_destroy_id(nid);
      return fail_errno(err);
    }
  }
  *id = nid;
  return 0;
}

// librdmacm's options that mean something here: RDMA_OPTION_ID_ACK_TIMEOUT
// (the QP's local ACK timeout code, as rdmax_transport.timeout),
// RDMA_OPTION_ID_REUSEADDR and RDMA_OPTION_ID_AFONLY (accepted: there is
// only IPv4); and the project's RDMAX_OPTION_TRANSPORT.
// RDMA_OPTION_ID_TOS and RDMA_OPTION_IB_PATH are ENOSYS (no IP TOS field
// is set; no IB path records). A wrong optlen or a NULL optval is EINVAL.
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

// IBV_EVENT_COMM_EST on a passive id whose RTU has not come: the kernel
// establishes it now, as the RTU would. EISCONN when it was already;
// other events are EINVAL.
int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event) {
  if (!id || event != IBV_EVENT_COMM_EST) return fail_errno(EINVAL);
  return kcall(ucma_established(priv_of(id)->kid)) < 0 ? -1 : 0;
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
// else RC over RDMA_PS_TCP (UD for RDMA_PS_UDP), as librdmacm derives one
// from the other. RC over PS_TCP / PS_IB and UD over PS_UDP exist here
// (docs/rdma.md): anything else is -1 (EINVAL).
static int addr_kind(const struct rdma_addrinfo *hints, int *qp_type, int *ps) {
  *ps = hints && hints->ai_port_space ? hints->ai_port_space : RDMA_PS_TCP;
  *qp_type = hints && hints->ai_qp_type ? hints->ai_qp_type : IBV_QPT_RC;
  if (*ps == RDMA_PS_UDP && !(hints && hints->ai_qp_type)) *qp_type = IBV_QPT_UD;
  return ((*ps == RDMA_PS_TCP || *ps == RDMA_PS_IB) && *qp_type == IBV_QPT_RC) ||
         (*ps == RDMA_PS_UDP && *qp_type == IBV_QPT_UD) ? 0 : -1;
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

// The CM MADs the kernel dropped, all connections together (rdmastat's
// cm_dropped: malformed, unknown connection, stale ...).
uint32_t rdmax_cm_dropped(struct rdma_cm_id *id) {
  struct rdma_dev_stats d;
  (void)id;
  return rdma_dev_stats(&d) == 0 ? (uint32_t)d.cm_dropped : 0;
}

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
