// cma.c: the kernel's rdma_cm (the role of Linux's rdma_cm above its
// ib_cm): IP addressing over the InfiniBand CM. The CM's state machines
// are the sans-IO agent's (kernel/cm/ibcm.c); this file feeds it MADs
// from QP1 (gsi.c) and kernel time, sends what it answers, and turns its
// events into rdma_cm events on event channels.
//
// Owns: the CM kernel thread ("cm": QP1's receives, the agent's
// retransmission timers, address resolution deadlines; it alone calls
// gsi_*), the agent, the rdma_cm ids (a port space, addresses, a state,
// the agent's connection or listener, the id's event channel and its
// owner's key), the event channels (queues of struct ucma_event from one
// pool) and the CM counters rdmastat shows (rdma_dev_stats' cm_*).
//
// It knows no process or file: an id and a channel carry an owner key
// (the front end, ucma.c, gives a pid), and a call for an id of another
// owner is -EINVAL. rdma_cm's IP mapping: the service ID of a port space
// and port, the addressing header at the front of a REQ's private data
// (ibcm_cma_hdr_*), IPv4-mapped GIDs; the peer's MAC by ARP in both
// directions (gsi.c: the active side resolves before ADDR_RESOLVED, the
// passive side when it answers a REQ).
//
// QPs: the kernel moves none. init_qp_attr gives the attributes the
// exchange yields and the library moves its QP with them (as librdmacm
// does): the passive side to RTR and RTS before cma_accept sends the REP;
// the active side on CONNECT_RESPONSE, then cma_accept sends the RTU and
// the library reports ESTABLISHED.
//
// Locking: cma.lock (a spin lock) guards everything here; the agent's
// calls are short and never sleep. Lock order: cma.lock, then rdma.lock
// (kv_query_port, the port's address); nothing in the RDMA or network
// layers ever takes cma.lock. gsi_* run in the CM thread without cma.lock;
// QP1's completion handler (under rdma.lock) takes only kick_lock.
#include "lib/types.h"
#include "lib/param.h"
#include "lib/klib.h"
#include "core/lock.h"
#include "core/proc.h"
#include "core/poll.h"
#include "core/printk.h"
#include "core/timer.h"
#include "proc/lifecycle.h"
#include "cm/ibcm.h"
#include "rdma/rdma.h"
#include "rdma/gsi.h"
#include "rdma/cma.h"

// Capacities: an id per connection (at most one per QP) and per listener;
// events waiting in all channels together: a few per id that can have
// one pending (an exchange reports at most CONNECT_*, ESTABLISHED,
// DISCONNECTED and TIMEWAIT_EXIT before its owner reads them).
#define CMA_MAX_ID    (RDMA_MAX_QP + IBCM_MAX_LISTEN)
#define CMA_MAX_CHAN  (2 * NPROC)
#define CMA_MAX_EV    256
// The REQ's CM timeouts: 4.096 us x 2^16 = 268 ms per try (the round trip
// between guests under load, with room; Linux's default of 2^20 = 4.3 s
// would make a lost REQ cost seconds), 5 retries: a silent peer is
// UNREACHABLE after about 2 s, like the verbs' ARP wait.
#define CMA_CM_RESPONSE_TIMEOUT 16
#define CMA_MAX_CM_RETRIES      5
#define CMA_ADDR_POLL_NS   10000000ULL  // how often a pending address resolution looks at ARP
#define CMA_EPHEMERAL_LO   49152        // ephemeral ports (IANA's dynamic range)
// A connection's QP takes WRITEs, READs and atomics, as Linux's IB CM grants
// them (read and atomic once responder resources are offered; ours always are).
#define CMA_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
                    IBV_ACCESS_REMOTE_ATOMIC)

enum cma_state {
  CS_FREE, CS_IDLE, CS_ADDR_QUERY, CS_ADDR_RESOLVED, CS_ROUTE_RESOLVED, CS_CONNECT,
  CS_RESPONSE, CS_LISTEN, CS_REQ_RCVD, CS_ACCEPTED, CS_ESTABLISHED, CS_DISCONNECT, CS_CLOSED,
};

struct cma_id {
  uint8 state;                  // enum cma_state
  uint8 disc_reported;          // DISCONNECTED is on its way to the owner
  int owner, chan;              // the owner's key; its channel's slot
  uint64 cookie;
  uint16 ps, sport, dport;
  uint32 sip, dip;
  int conn;                     // the agent's connection, -1
  int listener;                 // LISTEN: the agent's listener, -1
  int listen_id;                // passive: the listening id it came from, -1
  int backlog, reqs;            // LISTEN: REQs reported and not yet accepted or rejected
  uint64 deadline;              // ADDR_QUERY: when ADDR_ERROR is due
  uint32 psn;                   // our starting PSN
  struct {                      // passive: what the REQ asked of our QP (init_qp_attr before the REP)
    uint32 qpn, psn;
    uint8 mtu, ack_timeout, retry, rnr_retry;
  } req;
};

struct cma_ev {
  struct ucma_event ev;
  int next;                     // the channel's next event, -1
};

struct cma_chan {
  int used, owner;
  int head, tail;               // event indices, -1
};

static struct {
  struct spinlock lock;
  struct ibcm_agent agent;
  struct cma_id id[CMA_MAX_ID];
  struct cma_chan chan[CMA_MAX_CHAN];
  struct cma_ev ev[CMA_MAX_EV];
  int ev_free;                  // free list through next
  uint64 ev_dropped;            // events lost to a full pool
  int up;                       // QP1 is up: the CM runs
  struct spinlock kick_lock;
  int kick;                     // the thread has work: a MAD, a call, a completion
} cma;

// ---- small helpers (cma.lock held unless said) ----

static void *ctx_of(int i) { return (void *)(uint64)(i + 1); }
static int id_of_ctx(void *ctx) { return (int)(uint64)ctx - 1; }

// Any context, no lock held (QP1's completion handler too): wake the thread.
static void cma_kick(void) {
  spin_lock(&cma.kick_lock);
  cma.kick = 1;
  proc_wakeup(&cma.kick);
  spin_unlock(&cma.kick_lock);
}

// Our port's address and GID (rdma.lock inside: cma.lock may be held).
static uint32 local_ip(void) {
  struct rdma_port_info pi;
  kv_query_port(1, &pi);
  return pi.ipv4;
}

static uint32 random24(void) { return rdma_random() & RCT_QPN_MASK; }

// Id i if it is live and owner's, else NULL.
static struct cma_id *id_get(int owner, int i) {
  if (i < 0 || i >= CMA_MAX_ID) return NULL;
  struct cma_id *d = &cma.id[i];
  return d->state != CS_FREE && d->owner == owner ? d : NULL;
}

static int id_index(const struct cma_id *d) { return (int)(d - cma.id); }

static int chan_ok(int owner, int ch) {
  return ch >= 0 && ch < CMA_MAX_CHAN && cma.chan[ch].used && cma.chan[ch].owner == owner;
}

// A free id of owner on channel ch in state IDLE: its index, or -1.
static int id_alloc(int owner, int ch, int ps, uint64 cookie) {
  for (int i = 0; i < CMA_MAX_ID; i++) {
    if (cma.id[i].state != CS_FREE) continue;
    cma.id[i] = (struct cma_id){ .state = CS_IDLE, .owner = owner, .chan = ch, .cookie = cookie,
                                 .ps = (uint16)ps, .conn = -1, .listener = -1, .listen_id = -1,
                                 .psn = random24() };
    return i;
  }
  return -1;
}

// ---- events ----

// Queue an event of id d on its channel: its slot, or -1 (pool full, counted).
static struct ucma_event *ev_queue(struct cma_id *d, int type, int status) {
  int e = cma.ev_free;
  if (e < 0) {
    cma.ev_dropped++;
    return NULL;
  }
  cma.ev_free = cma.ev[e].next;
  struct cma_chan *c = &cma.chan[d->chan];
  cma.ev[e].next = -1;
  if (c->tail >= 0) cma.ev[c->tail].next = e;
  else c->head = e;
  c->tail = e;
  struct ucma_event *v = &cma.ev[e].ev;
  *v = (struct ucma_event){ .event = type, .status = status, .id = id_index(d), .listen_id = -1,
                            .cookie = d->cookie, .src_ip = d->sip, .dst_ip = d->dip,
                            .src_port = d->sport, .dst_port = d->dport };
  proc_wakeup(c);
  poll_notify();
  return v;
}

// Every waiting event of id i (or, i < 0, every event) leaves channel ch.
static void ev_forget(int ch, int i) {
  struct cma_chan *c = &cma.chan[ch];
  int prev = -1;
  for (int e = c->head; e >= 0;) {
    int next = cma.ev[e].next;
    if (i < 0 || cma.ev[e].ev.id == i) {
      if (prev >= 0) cma.ev[prev].next = next;
      else c->head = next;
      if (c->tail == e) c->tail = prev;
      cma.ev[e].next = cma.ev_free;
      cma.ev_free = e;
    } else {
      prev = e;
    }
    e = next;
  }
}

// Id i's waiting events move from channel `from` to the end of `to`, in order.
static void ev_move(int from, int to, int i) {
  struct cma_chan *f = &cma.chan[from], *t = &cma.chan[to];
  int prev = -1;
  for (int e = f->head; e >= 0;) {
    int next = cma.ev[e].next;
    if (cma.ev[e].ev.id != i) {
      prev = e;
      e = next;
      continue;
    }
    if (prev >= 0) cma.ev[prev].next = next;
    else f->head = next;
    if (f->tail == e) f->tail = prev;
    cma.ev[e].next = -1;
    if (t->tail >= 0) cma.ev[t->tail].next = e;
    else t->head = e;
    t->tail = e;
    e = next;
  }
  if (t->head >= 0) {
    proc_wakeup(t);
    poll_notify();
  }
}

// The event's conn param from a REQ or REP the agent decoded; skip: the
// bytes of rdma_cm's header at the front of the private data.
static void param_from(struct ucma_conn_param *p, const struct ibcm_msg *m, int skip) {
  p->qp_num = m->local_qpn;
  p->responder_resources = m->responder_resources;
  p->initiator_depth = m->initiator_depth;
  p->retry_count = m->retry_count;
  p->rnr_retry_count = m->rnr_retry_count;
  p->srq = m->srq;
  p->xv6_caps = m->xv6_caps;
  int n = m->private_len > skip ? m->private_len - skip : 0;
  if (n > UCMA_PRIVATE_MAX) n = UCMA_PRIVATE_MAX;
  memcpy(p->private_data, m->private_data + skip, n);
  p->private_data_len = (uint8)n;
}

// ---- the agent's events ----

// The port's active MTU (enum rct_mtu).
static uint8 port_mtu(void) {
  struct rdma_port_info pi;
  kv_query_port(1, &pi);
  return (uint8)pi.active_mtu;
}

// A passive id for the agent's new connection e (a REQ or SIDR_REQ) on
// its listener l: in REQ_RCVD, its CONNECT_REQUEST queued with the private
// data behind rdma_cm's header. NULL if l is not listening in port space
// ps, the header is unreadable (*busy 0), or the backlog, the ids or the
// events are full (*busy 1).
static struct cma_id *passive_id(struct cma_id *l, int ps, const struct ibcm_event *e, int *busy) {
  uint32 src, dst;
  uint16 sport;
  int ok = l->state == CS_LISTEN && l->ps == ps &&
           ibcm_cma_hdr_parse(e->msg.private_data, e->msg.private_len, &src, &dst, &sport) == 0;
  int n = ok && l->reqs < l->backlog ? id_alloc(l->owner, l->chan, l->ps, l->cookie) : -1;
  *busy = ok;
  if (n < 0) return NULL;
  struct cma_id *d = &cma.id[n];
  d->state = CS_REQ_RCVD;
  d->conn = e->conn;
  d->listen_id = id_index(l);
  d->sip = dst;
  d->dip = src;
  d->sport = l->sport;
  d->dport = sport;
  struct ucma_event *v = ev_queue(d, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
  if (!v) {
    d->state = CS_FREE;
    return NULL;
  }
  ibcm_set_ctx(&cma.agent, e->conn, ctx_of(n));
  l->reqs++;
  v->listen_id = id_index(l);
  param_from(&v->param, &e->msg, IBCM_CMA_HDR_LEN);
  return d;
}

// A REQ on a listener: a new id in REQ_RCVD and CONNECT_REQUEST, or a REJ.
// A path MTU above the port's gets REJ 26 [IBCM-REJ-3]: the peer would
// send packets this side refuses, so the connection could never carry them.
static void on_req(const struct ibcm_event *e) {
  struct cma_id *l = &cma.id[id_of_ctx(e->ctx)];
  int busy = 0;
  struct cma_id *d = e->msg.path_mtu > port_mtu() ? NULL : passive_id(l, RDMA_PS_TCP, e, &busy);
  if (!d) {
    uint16 why = e->msg.path_mtu > port_mtu() ? IBCM_REJ_INVALID_PATH_MTU
                 : busy ? IBCM_REJ_NO_RESOURCES : IBCM_REJ_CONSUMER;
    ibcm_reject(&cma.agent, clock_ns(), e->conn, why, 0, 0);
    ibcm_release(&cma.agent, clock_ns(), e->conn);
    return;
  }
  d->req.qpn = e->msg.local_qpn;
  d->req.psn = e->msg.starting_psn;
  d->req.mtu = e->msg.path_mtu;
  d->req.ack_timeout = e->msg.primary.local_ack_timeout;
  d->req.retry = e->msg.retry_count;
  d->req.rnr_retry = e->msg.rnr_retry_count;
}

// A SIDR_REQ on a listener (RDMA_PS_UDP): a new id in REQ_RCVD and
// CONNECT_REQUEST (param: the private data behind the header), or a
// SIDR_REP refusing it: status 3 (no QP) when full, 2 (rejected) for a
// listener of another port space or a bad header [IBCM-SIDR-2].
static void on_sidr_req(const struct ibcm_event *e) {
  struct cma_id *l = &cma.id[id_of_ctx(e->ctx)];
  int busy;
  if (passive_id(l, RDMA_PS_UDP, e, &busy)) return;
  ibcm_sidr_rep(&cma.agent, clock_ns(), e->conn, busy ? IBCM_SIDR_NO_QP : IBCM_SIDR_REJECT, 0, 0, 0, 0);
  ibcm_release(&cma.agent, clock_ns(), e->conn);
}

// An active UD id's SIDR_REP [IBCM-CMA-5]: status 0 is ESTABLISHED with the peer's QPN
// and Q_Key (librdmacm's param.ud), any other UNREACHABLE with the status.
// The exchange is over: the agent forgets it.
static void on_sidr_rep(struct cma_id *d, const struct ibcm_event *e) {
  struct ucma_event *v;
  ibcm_release(&cma.agent, clock_ns(), d->conn);
  d->conn = -1;
  int ok = e->msg.sidr_status == IBCM_SIDR_SUCCESS;
  d->state = ok ? CS_ESTABLISHED : CS_CLOSED;
  v = ev_queue(d, ok ? RDMA_CM_EVENT_ESTABLISHED : RDMA_CM_EVENT_UNREACHABLE, e->msg.sidr_status);
  if (!v) return;
  param_from(&v->param, &e->msg, 0);
  v->param.qp_num = e->msg.sidr_qpn;
  v->param.qkey = e->msg.sidr_qkey;
}

// A passive id leaves REQ_RCVD: its listener may report one more.
static void req_done(struct cma_id *d) {
  if (d->state == CS_REQ_RCVD && d->listen_id >= 0 && cma.id[d->listen_id].state == CS_LISTEN &&
      cma.id[d->listen_id].reqs > 0)
    cma.id[d->listen_id].reqs--;
}

// The agent's event e for id d (live, its connection e->conn).
static void on_conn_event(struct cma_id *d, const struct ibcm_event *e) {
  struct ucma_event *v;
  switch (e->type) {
  case IBCM_EV_REP:
    if (d->state != CS_CONNECT) return;
    d->state = CS_RESPONSE;
    if ((v = ev_queue(d, RDMA_CM_EVENT_CONNECT_RESPONSE, 0))) param_from(&v->param, &e->msg, 0);
    return;
  case IBCM_EV_ESTABLISHED:
    if (d->state != CS_ACCEPTED) return;
    d->state = CS_ESTABLISHED;
    ev_queue(d, RDMA_CM_EVENT_ESTABLISHED, 0);
    return;
  case IBCM_EV_REJ:
    req_done(d);
    d->state = CS_CLOSED;
    if ((v = ev_queue(d, RDMA_CM_EVENT_REJECTED, e->msg.reason))) param_from(&v->param, &e->msg, 0);
    return;
  case IBCM_EV_TIMEOUT:
    req_done(d);
    d->state = CS_CLOSED;
    ev_queue(d, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
    return;
  case IBCM_EV_DREQ:
  case IBCM_EV_DISCONNECTED:
    d->state = e->type == IBCM_EV_DREQ ? CS_DISCONNECT : CS_CLOSED;
    if (!d->disc_reported) ev_queue(d, RDMA_CM_EVENT_DISCONNECTED, 0);
    d->disc_reported = 1;
    return;
  case IBCM_EV_TIMEWAIT_EXIT:
    d->state = CS_CLOSED;
    ev_queue(d, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
    return;
  case IBCM_EV_SIDR_REP:
    if (d->state == CS_CONNECT) on_sidr_rep(d, e);
    return;
  default:
    return;
  }
}

// Every event the agent has: to its id, or (an id destroyed since) gone.
static void drain_events(void) {
  struct ibcm_event e;
  while (ibcm_poll_event(&cma.agent, &e)) {
    if (e.type == IBCM_EV_REQ || e.type == IBCM_EV_SIDR_REQ) {
      (e.type == IBCM_EV_REQ ? on_req : on_sidr_req)(&e);
      continue;
    }
    int i = id_of_ctx(e.ctx);
    if (i < 0 || i >= CMA_MAX_ID || cma.id[i].state == CS_FREE || cma.id[i].conn != e.conn) {
      ibcm_release(&cma.agent, clock_ns(), e.conn);      // no id wants it any more
      continue;
    }
    on_conn_event(&cma.id[i], &e);
  }
}

// ---- the CM thread ----

// Lock held. ADDR_QUERY ids whose peer ARP now knows, or whose deadline
// passed; the next time one wants a look (~0: none).
static uint64 addr_work(uint64 now) {
  uint64 next = ~0ULL;
  for (int i = 0; i < CMA_MAX_ID; i++) {
    struct cma_id *d = &cma.id[i];
    if (d->state != CS_ADDR_QUERY) continue;
    if (gsi_peer_known(d->dip)) {
      d->state = CS_ADDR_RESOLVED;
      ev_queue(d, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
    } else if (now >= d->deadline) {
      d->state = CS_IDLE;
      ev_queue(d, RDMA_CM_EVENT_ADDR_ERROR, -EHOSTUNREACH);
    } else if (now + CMA_ADDR_POLL_NS < next) {
      next = now + CMA_ADDR_POLL_NS;
    }
  }
  return next;
}

static uint64 min64(uint64 a, uint64 b) { return a < b ? a : b; }

// One pass: MADs in, timers, events, MADs out. The next deadline.
static uint64 cm_pass(void) {
  static uint8 mad[RDMA_MAD_LEN];
  uint32 ip, qpn;
  uint64 now = clock_ns();
  while (gsi_recv(mad, &ip, &qpn)) {
    struct ibcm_peer from = { .qpn = qpn };
    ibcm_gid_from_ipv4(from.gid, ip);
    spin_lock(&cma.lock);
    ibcm_recv(&cma.agent, now, &from, mad, RDMA_MAD_LEN);
    drain_events();
    spin_unlock(&cma.lock);
  }
  spin_lock(&cma.lock);
  if (ibcm_next_timeout(&cma.agent) <= now) ibcm_timeout(&cma.agent, now);
  drain_events();
  uint64 next = min64(addr_work(now), ibcm_next_timeout(&cma.agent));
  spin_unlock(&cma.lock);
  for (;;) {
    struct ibcm_peer to;
    spin_lock(&cma.lock);
    int n = ibcm_poll_mad(&cma.agent, mad, &to);
    spin_unlock(&cma.lock);
    if (n <= 0) break;
    if (ibcm_gid_to_ipv4(to.gid, &ip) == 0) gsi_send(ip, to.qpn, mad, now);
  }
  return min64(next, gsi_work(now));
}

static void cm_thread(void *arg) {
  for (;;) {
    uint64 next = cm_pass();
    spin_lock(&cma.kick_lock);
    while (!cma.kick && clock_ns() < next)
      proc_sleep_until(&cma.kick, &cma.kick_lock, next);
    cma.kick = 0;
    spin_unlock(&cma.kick_lock);
  }
}

// Boot, after the RDMA device: the agent, the pools, QP1 and the CM thread.
void cma_init(void) {
  spin_init(&cma.lock, "cma");
  spin_init(&cma.kick_lock, "cma_kick");
  struct rdma_device_info di;
  kv_query_device(&di);
  ibcm_agent_init(&cma.agent, di.node_guid, rdma_random());
  for (int e = 0; e < CMA_MAX_EV; e++) cma.ev[e].next = e + 1 < CMA_MAX_EV ? e + 1 : -1;
  cma.ev_free = 0;
  // QP1 now, at boot, so its objects exist before anything counts the
  // device's live objects (the kverbs self-test compares them).
  if (gsi_start(cma_kick) < 0) return;
  if (kthread_start("cm", cm_thread, NULL) < 0) {
    kprintf("cma: no process slot for the CM thread; no connection manager\n");
    return;
  }
  cma.up = 1;
}

// ---- channels ----

// A channel of owner: its slot, or -ENOMEM.
int cma_chan_create(int owner) {
  int r = -ENOMEM;
  spin_lock(&cma.lock);
  for (int c = 0; c < CMA_MAX_CHAN && r < 0; c++) {
    if (cma.chan[c].used) continue;
    cma.chan[c] = (struct cma_chan){ .used = 1, .owner = owner, .head = -1, .tail = -1 };
    r = c;
  }
  spin_unlock(&cma.lock);
  return r;
}

static void id_destroy(struct cma_id *d);

// The channel's file closed: its ids and events go, then the slot.
void cma_chan_close(int ch) {
  if (ch < 0 || ch >= CMA_MAX_CHAN) return;
  spin_lock(&cma.lock);
  for (int i = 0; i < CMA_MAX_ID; i++)
    if (cma.id[i].state != CS_FREE && cma.id[i].chan == ch) id_destroy(&cma.id[i]);
  ev_forget(ch, -1);
  cma.chan[ch].used = 0;
  spin_unlock(&cma.lock);
  cma_kick();
}

int cma_chan_ready(int ch) {
  spin_lock(&cma.lock);
  int r = ch >= 0 && ch < CMA_MAX_CHAN && cma.chan[ch].used && cma.chan[ch].head >= 0;
  spin_unlock(&cma.lock);
  return r;
}

// The channel's next event into *out: 0, -EAGAIN (none, and no
// give_up: the caller does not wait), -EINTR (give_up() said so: the front
// end's "the caller was killed"), -EBADF (not owner's). Else sleeps until
// one comes.
int cma_get_event(int owner, int ch, int (*give_up)(void), struct ucma_event *out) {
  spin_lock(&cma.lock);
  int r = -EBADF;
  while (chan_ok(owner, ch)) {
    struct cma_chan *c = &cma.chan[ch];
    if (c->head >= 0) {
      int e = c->head;
      *out = cma.ev[e].ev;
      c->head = cma.ev[e].next;
      if (c->head < 0) c->tail = -1;
      cma.ev[e].next = cma.ev_free;
      cma.ev_free = e;
      r = 0;
      break;
    }
    if (!give_up || give_up()) {
      r = give_up ? -EINTR : -EAGAIN;
      break;
    }
    proc_sleep_until(c, &cma.lock, ~0ULL);
  }
  spin_unlock(&cma.lock);
  return r;
}

// ---- ids ----

int cma_create_id(int owner, int ch, int ps, uint64 cookie) {
  if (ps != RDMA_PS_TCP && ps != RDMA_PS_UDP) return -EINVAL;
  spin_lock(&cma.lock);
  int r = !chan_ok(owner, ch) ? -EBADF : !cma.up ? -ENODEV : id_alloc(owner, ch, ps, cookie);
  spin_unlock(&cma.lock);
  return r == -1 ? -ENOMEM : r;
}

// Lock held. The id goes: the agent ends its connection as the standard
// says (REQ_RCVD: REJ; connected: DREQ, finished alone; [IBCM-STATE-14]),
// its listener stops, its events leave the channel.
static void id_destroy(struct cma_id *d) {
  req_done(d);
  if (d->listener >= 0) ibcm_unlisten(&cma.agent, d->listener);
  if (d->conn >= 0) ibcm_release(&cma.agent, clock_ns(), d->conn);
  ev_forget(d->chan, id_index(d));
  d->state = CS_FREE;
}

int cma_destroy_id(int owner, int i) {
  spin_lock(&cma.lock);
  struct cma_id *d = id_get(owner, i);
  if (d) id_destroy(d);
  spin_unlock(&cma.lock);
  cma_kick();
  return d ? 0 : -EINVAL;
}

// Lock held. Is port taken in d's port space by another id?
static int port_taken(const struct cma_id *d, uint16 port) {
  for (int i = 0; i < CMA_MAX_ID; i++) {
    const struct cma_id *o = &cma.id[i];
    if (o != d && o->state != CS_FREE && o->ps == d->ps && o->sport == port && o->listen_id < 0) return 1;
  }
  return 0;
}

// Lock held. d's source address: ip (0: ours) and port (0: an ephemeral one).
static int bind_locked(struct cma_id *d, uint32 ip, uint16 port) {
  uint32 me = local_ip();
  if (ip != 0 && ip != me) return -EINVAL;                        // EADDRNOTAVAIL on Linux
  for (int tries = 0; port == 0 && tries < 64; tries++) {
    uint16 p = (uint16)(CMA_EPHEMERAL_LO + rdma_random() % (65536 - CMA_EPHEMERAL_LO));
    if (!port_taken(d, p)) port = p;
  }
  if (port == 0) return -EADDRINUSE;
  if (port_taken(d, port)) return -EADDRINUSE;
  d->sip = me;
  d->sport = port;
  return 0;
}

int cma_bind(int owner, int i, uint32 ip, uint16 port) {
  spin_lock(&cma.lock);
  struct cma_id *d = id_get(owner, i);
  int r = !d ? -EINVAL : d->state != CS_IDLE || d->sport ? -EINVAL : bind_locked(d, ip, port);
  spin_unlock(&cma.lock);
  return r;
}

int cma_resolve_addr(int owner, int i, uint32 src, uint32 dst, uint16 port, int timeout_ms) {
  if (dst == 0 || timeout_ms <= 0) return -EINVAL;
  spin_lock(&cma.lock);
  struct cma_id *d = id_get(owner, i);
  int r = !d || d->state != CS_IDLE ? -EINVAL : d->sport ? 0 : bind_locked(d, src, 0);
  if (r == 0) {
    d->dip = dst;
    d->dport = port;
    d->deadline = clock_ns() + (uint64)timeout_ms * 1000000ULL;
    d->state = CS_ADDR_QUERY;
  }
  spin_unlock(&cma.lock);
  cma_kick();
  return r;
}

int cma_resolve_route(int owner, int i, int timeout_ms) {
  spin_lock(&cma.lock);
  struct cma_id *d = id_get(owner, i);
  int r = !d || d->state != CS_ADDR_RESOLVED ? -EINVAL : 0;
  if (r == 0) {
    d->state = CS_ROUTE_RESOLVED;                 // RoCE: the route is the resolved address
    if (!ev_queue(d, RDMA_CM_EVENT_ROUTE_RESOLVED, 0)) r = -ENOMEM;
  }
  spin_unlock(&cma.lock);
  return r;
}

int cma_listen(int owner, int i, int backlog) {
  spin_lock(&cma.lock);
  struct cma_id *d = id_get(owner, i);
  int r = !d || (d->state != CS_IDLE) || !d->sport ? -EINVAL : 0;
  if (r == 0) {
    int l = ibcm_listen(&cma.agent, ibcm_service_id(d->ps, d->sport), ctx_of(i));
    r = l == IBCM_ERR_INUSE ? -EADDRINUSE : l < 0 ? -ENOMEM : 0;
    if (r == 0) {
      d->listener = l;
      d->backlog = backlog > 0 && backlog < IBCM_MAX_CONN ? backlog : IBCM_MAX_CONN;
      d->state = CS_LISTEN;
    }
  }
  spin_unlock(&cma.lock);
  return r;
}

// The REQ's fields from d and p. path MTU: the port's.
static int req_param(struct cma_id *d, const struct ucma_conn_param *p, struct ibcm_req_param *q) {
  if (p->private_data_len > IBCM_CMA_REQ_PRIVATE || p->retry_count > 7 || p->rnr_retry_count > 7)
    return -EINVAL;
  memset(q, 0, sizeof *q);
  q->service_id = ibcm_service_id(d->ps, d->dport);
  q->qpn = p->qp_num;
  q->starting_psn = d->psn;
  q->qp_type = IBCM_QPT_RC;
  q->responder_resources = p->responder_resources;
  q->initiator_depth = p->initiator_depth;
  q->path_mtu = port_mtu();
  q->retry_count = p->retry_count;
  q->rnr_retry_count = p->rnr_retry_count;
  q->local_cm_response_timeout = q->remote_cm_response_timeout = CMA_CM_RESPONSE_TIMEOUT;
  q->max_cm_retries = CMA_MAX_CM_RETRIES;
  q->local_ack_timeout = p->ack_timeout;
  ibcm_gid_from_ipv4(q->sgid, d->sip);
  ibcm_gid_from_ipv4(q->dgid, d->dip);
  q->xv6_caps = p->xv6_caps;
  ibcm_cma_hdr_encode(q->private_data, d->sip, d->dip, d->sport);
  memcpy(q->private_data + IBCM_CMA_HDR_LEN, p->private_data, p->private_data_len);
  q->private_len = (uint8)(IBCM_CMA_HDR_LEN + p->private_data_len);
  return 0;
}

// Lock held. A UD id's SIDR_REQ [IBCM-CMA-5] (rdma_cm's header, then p's private data)
// to the resolved peer's service; its SIDR_REP or timeout ends it.
static int sidr_connect(struct cma_id *d, const struct ucma_conn_param *p) {
  uint8 priv[IBCM_CMA_HDR_LEN + UCMA_PRIVATE_MAX];
  int len = IBCM_CMA_HDR_LEN + p->private_data_len;
  if (len > ibcm_private_room(IBCM_ATTR_SIDR_REQ)) return -EINVAL;
  ibcm_cma_hdr_encode(priv, d->sip, d->dip, d->sport);
  memcpy(priv + IBCM_CMA_HDR_LEN, p->private_data, p->private_data_len);
  struct ibcm_peer to = { .qpn = RDMA_GSI_QPN };
  ibcm_gid_from_ipv4(to.gid, d->dip);
  int c = ibcm_sidr_req(&cma.agent, clock_ns(), &to, ibcm_service_id(d->ps, d->dport), priv,
                        (uint8)len, ctx_of(id_index(d)));
  if (c < 0) return c == IBCM_ERR_FULL ? -ENOMEM : -EINVAL;
  d->conn = c;
  d->state = CS_CONNECT;
  return 0;
}

int cma_connect(int owner, int i, const struct ucma_conn_param *p) {
  struct ibcm_req_param q;
  spin_lock(&cma.lock);
  struct cma_id *d = id_get(owner, i);
  int r = !d || (d->state != CS_ROUTE_RESOLVED && d->state != CS_ADDR_RESOLVED) ? -EINVAL
          : d->ps == RDMA_PS_UDP ? sidr_connect(d, p) : req_param(d, p, &q);
  if (r == 0 && d->ps != RDMA_PS_UDP) {
    struct ibcm_peer to = { .qpn = RDMA_GSI_QPN };
    memcpy(to.gid, q.dgid, 16);
    int c = ibcm_connect(&cma.agent, clock_ns(), &to, &q, ctx_of(i));
    r = c == IBCM_ERR_FULL ? -ENOMEM : c < 0 ? -EINVAL : 0;
    if (r == 0) {
      d->conn = c;
      d->state = CS_CONNECT;
    }
  }
  spin_unlock(&cma.lock);
  cma_kick();
  return r;
}

// Lock held. A UD id's SIDR_REP with status (0: our QP qpn and
// RDMA_UDP_QKEY); the agent keeps it to answer a repeated SIDR_REQ.
static int sidr_answer(struct cma_id *d, uint8 status, uint32 qpn, const void *priv, int len) {
  if (ibcm_sidr_rep(&cma.agent, clock_ns(), d->conn, status, qpn, RDMA_UDP_QKEY, priv, (uint8)len) < 0)
    return -EINVAL;
  req_done(d);
  d->state = status == IBCM_SIDR_SUCCESS ? CS_ESTABLISHED : CS_CLOSED;
  return 0;
}

// Passive (REQ_RCVD, its QP at RTS): the REP. Active (RESPONSE, its QP at
// RTS): the RTU, and the connection is established (p may be NULL).
int cma_accept(int owner, int i, const struct ucma_conn_param *p) {
  spin_lock(&cma.lock);
  struct cma_id *d = id_get(owner, i);
  uint64 now = clock_ns();
  int r = -EINVAL;
  if (d && d->ps == RDMA_PS_UDP) {
    r = d->state != CS_REQ_RCVD || !p ? -EINVAL : sidr_answer(d, IBCM_SIDR_SUCCESS, p->qp_num,
                                                              p->private_data, p->private_data_len);
  } else if (d && d->state == CS_RESPONSE) {
    r = ibcm_send_rtu(&cma.agent, now, d->conn, 0, 0) < 0 ? -EINVAL : 0;
    if (r == 0) d->state = CS_ESTABLISHED;
  } else if (d && d->state == CS_REQ_RCVD && p && p->private_data_len <= IBCM_REP_PRIVATE &&
             p->rnr_retry_count <= 7) {
    struct ibcm_rep_param q = { .qpn = p->qp_num, .starting_psn = d->psn,
                                .responder_resources = p->responder_resources,
                                .initiator_depth = p->initiator_depth,
                                .rnr_retry_count = p->rnr_retry_count, .srq = p->srq,
                                .xv6_caps = p->xv6_caps, .private_len = p->private_data_len };
    memcpy(q.private_data, p->private_data, p->private_data_len);
    r = ibcm_accept(&cma.agent, now, d->conn, &q) < 0 ? -EINVAL : 0;
    if (r == 0) {
      req_done(d);
      d->state = CS_ACCEPTED;
    }
  }
  spin_unlock(&cma.lock);
  cma_kick();
  return r;
}

int cma_reject(int owner, int i, const void *priv, int len) {
  if (len < 0 || len > IBCM_REJ_PRIVATE) return -EINVAL;
  spin_lock(&cma.lock);
  struct cma_id *d = id_get(owner, i);
  int r = !d || d->state != CS_REQ_RCVD ? -EINVAL : 0;
  if (r == 0 && d->ps == RDMA_PS_UDP) {
    r = sidr_answer(d, IBCM_SIDR_REJECT, 0, priv, len);
  } else if (r == 0 && ibcm_reject(&cma.agent, clock_ns(), d->conn, IBCM_REJ_CONSUMER, priv, (uint8)len) < 0) {
    r = -EINVAL;
  }
  if (r == 0 && d->ps != RDMA_PS_UDP) {
    req_done(d);
    d->state = CS_CLOSED;
  }
  spin_unlock(&cma.lock);
  cma_kick();
  return r;
}

int cma_disconnect(int owner, int i) {
  spin_lock(&cma.lock);
  struct cma_id *d = id_get(owner, i);
  int r = -EINVAL;
  if (d && (d->state == CS_ESTABLISHED || d->state == CS_ACCEPTED || d->state == CS_RESPONSE ||
            d->state == CS_DISCONNECT)) {
    r = ibcm_disconnect(&cma.agent, clock_ns(), d->conn) < 0 ? -EINVAL : 0;
    if (r == 0) d->state = CS_DISCONNECT;
  } else if (d && d->state == CS_CLOSED) {
    r = 0;                                         // the peer's DREQ ended it already
  }
  spin_unlock(&cma.lock);
  cma_kick();
  return r;
}

int cma_established(int owner, int i) {
  spin_lock(&cma.lock);
  struct cma_id *d = id_get(owner, i);
  int r = !d ? -EINVAL : d->state == CS_ESTABLISHED ? -EISCONN : d->state != CS_ACCEPTED ? -EINVAL : 0;
  if (r == 0 && ibcm_established(&cma.agent, d->conn) < 0) r = -EINVAL;
  spin_unlock(&cma.lock);
  cma_kick();                                      // the agent's ESTABLISHED event
  return r;
}

int cma_migrate_id(int owner, int i, int ch) {
  spin_lock(&cma.lock);
  struct cma_id *d = id_get(owner, i);
  int r = !d ? -EINVAL : !chan_ok(owner, ch) ? -EBADF : 0;
  if (r == 0 && d->chan != ch) {
    ev_move(d->chan, ch, i);
    d->chan = ch;
  }
  spin_unlock(&cma.lock);
  return r;
}

// Lock held. A passive id's QP attributes before its REP, from the REQ
// (its QPN, Starting PSN, path MTU, ACK timeout and retry counts) and the
// Starting PSN our REP will carry, as the agent gives them after it: a
// side's Starting PSN is the PSN its peer sends with, so we receive from
// ours and send from the REQ's [IBCM-REQ-3].
static void req_qp_attr(const struct cma_id *d, struct rct_qp_attr *r, uint32 *rtr, uint32 *rts) {
  r->path_mtu = (enum rct_mtu)d->req.mtu;                  // at most the port's (on_req)
  r->dest_qp_num = d->req.qpn;
  r->rq_psn = d->psn;
  r->sq_psn = d->req.psn;
  r->timeout = d->req.ack_timeout;
  r->retry_cnt = d->req.retry;
  r->rnr_retry = d->req.rnr_retry;
  *rtr = RCT_QP_STATE | RCT_QP_AV | RCT_QP_PATH_MTU | RCT_QP_DEST_QPN | RCT_QP_RQ_PSN;
  *rts = RCT_QP_STATE | RCT_QP_SQ_PSN | RCT_QP_TIMEOUT | RCT_QP_RETRY_CNT | RCT_QP_RNR_RETRY;
}

// A UD id's QP (RDMA_PS_UDP) any time: INIT with RDMA_UDP_QKEY, RTR, RTS
// from the id's PSN, as librdmacm moves it; the IBV_QP_* mask.
static int ud_qp_attr(int qp_state, uint32 psn, struct rdma_qp_attr *a) {
  a->qp_state = (unsigned int)qp_state;
  if (qp_state == IBV_QPS_INIT) {
    a->port_num = 1;
    a->qkey = RDMA_UDP_QKEY;
    return (int)(IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
  }
  a->sq_psn = psn;
  return qp_state == IBV_QPS_RTR ? (int)IBV_QP_STATE
         : qp_state == IBV_QPS_RTS ? (int)(IBV_QP_STATE | IBV_QP_SQ_PSN) : -EINVAL;
}

// The attributes that move id i's QP to qp_state (INIT, RTR or RTS) into
// *a: the IBV_QP_* mask, or -EINVAL (no such id, or its exchange has not
// yet given them). The peer's MAC is left zero: the kernel resolves it at
// the move (ARP answered already, for the exchange's MADs).
int cma_init_qp_attr(int owner, int i, int qp_state, struct rdma_qp_attr *a) {
  memset(a, 0, sizeof *a);
  spin_lock(&cma.lock);
  struct cma_id *u = id_get(owner, i);
  int ud = u && u->ps == RDMA_PS_UDP;
  uint32 psn = u ? u->psn : 0;
  spin_unlock(&cma.lock);
  if (ud) return ud_qp_attr(qp_state, psn, a);
  if (qp_state == IBV_QPS_INIT) {
    a->qp_state = IBV_QPS_INIT;
    a->port_num = 1;
    a->qp_access_flags = CMA_ACCESS;
    return u ? (int)(IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) : -EINVAL;
  }
  if (qp_state != IBV_QPS_RTR && qp_state != IBV_QPS_RTS) return -EINVAL;
  struct rct_qp_attr r;
  uint32 rtr = 0, rts = 0;
  memset(&r, 0, sizeof r);
  spin_lock(&cma.lock);
  struct cma_id *d = id_get(owner, i);
  int ok = d && d->conn >= 0;
  if (ok && d->state == CS_REQ_RCVD) {
    req_qp_attr(d, &r, &rtr, &rts);                // before the REP: from the REQ
  } else {
    ok = ok && (d->state == CS_RESPONSE || d->state == CS_ACCEPTED || d->state == CS_ESTABLISHED) &&
         ibcm_qp_attr(&cma.agent, d->conn, &r, &rtr, &rts) == 0;
  }
  uint32 dip = d ? d->dip : 0;
  spin_unlock(&cma.lock);
  if (!ok) return -EINVAL;
  r.qp_state = (enum rct_qp_state)qp_state;
  rdma_qp_attr_out(&r, a);
  memset(a->dmac, 0, 6);
  a->dipv4 = dip;
  return (int)rdma_qp_mask_out(qp_state == IBV_QPS_RTR ? rtr : rts);
}

// Every id of owner goes (its process ended): connections DREQ'd or
// rejected, listeners released. Its channels go with their files.
void cma_owner_exit(int owner) {
  spin_lock(&cma.lock);
  for (int i = 0; i < CMA_MAX_ID; i++)
    if (cma.id[i].state != CS_FREE && cma.id[i].owner == owner) id_destroy(&cma.id[i]);
  spin_unlock(&cma.lock);
  cma_kick();
}

// The CM's counters and live ids into s's cm_* fields.
void cma_stats(struct rdma_dev_stats *s) {
  spin_lock(&cma.lock);
  const struct ibcm_counters *c = ibcm_counters(&cma.agent);
  s->cm_rx = c->rx;
  s->cm_tx = c->tx;
  s->cm_retransmits = c->retransmits;
  s->cm_dropped = c->dropped_malformed + c->dropped_version + c->dropped_unknown_attr +
                  c->dropped_unknown_conn + c->dropped_queue_full + c->stale + c->dropped_class +
                  c->dropped_method;
  s->cm_duplicates = c->duplicates;
  s->cm_rej_no_listener = c->rej_no_listener;
  s->cm_events_dropped = cma.ev_dropped;
  int n = 0;
  for (int i = 0; i < CMA_MAX_ID; i++) n += cma.id[i].state != CS_FREE;
  s->cm_live_ids = n;
  spin_unlock(&cma.lock);
  gsi_stats(s);
}
