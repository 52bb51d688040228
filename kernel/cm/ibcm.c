/*
 * ibcm.c: the CM agent (proto-spec ibcm.md [IBCM-STATE-*] [IBCM-TMO-*]):
 * the connection table, listeners by service ID, the active and passive
 * state machines of IBTA vol 1 12.9 (REQ/REP/RTU, MRA, REJ, DREQ/DREP,
 * timewait), retransmission of the last message on timeouts and duplicates,
 * stale connections, and the QP attributes an exchange yields. MADs come in
 * through ibcm_recv, time through ibcm_timeout; MADs, events and the next
 * deadline go out through ibcm_poll_mad, ibcm_poll_event, ibcm_next_timeout.
 * Timers are a heap of connections by deadline, lookups are by the index in
 * a comm ID and a hash of the peer's (comm ID, CA GUID): nothing is scanned.
 */
#include "ibcm.h"
#include "../transport/wire.h"

#define IDX_MASK ((1u << IBCM_CONN_BITS) - 1)
/* A comm ID's index bits cover the table; int16_t handles reach every entry. */
typedef char ibcm_conn_bits_cover_table[(1u << IBCM_CONN_BITS) >= IBCM_MAX_CONN ? 1 : -1];
typedef char ibcm_handles_fit_int16[IBCM_MAX_CONN <= 32767 ? 1 : -1];
#define PERMISSIVE_LID 0xffff

static const char *const state_names[] = {
  [IBCM_FREE] = "FREE", [IBCM_IDLE] = "IDLE", [IBCM_REQ_SENT] = "REQ_SENT",
  [IBCM_REQ_RCVD] = "REQ_RCVD", [IBCM_MRA_REQ_RCVD] = "MRA_REQ_RCVD",
  [IBCM_REP_SENT] = "REP_SENT", [IBCM_REP_RCVD] = "REP_RCVD",
  [IBCM_MRA_REP_RCVD] = "MRA_REP_RCVD", [IBCM_ESTABLISHED] = "ESTABLISHED",
  [IBCM_DREQ_SENT] = "DREQ_SENT", [IBCM_DREQ_RCVD] = "DREQ_RCVD", [IBCM_TIMEWAIT] = "TIMEWAIT",
  [IBCM_SIDR_REQ_SENT] = "SIDR_REQ_SENT", [IBCM_SIDR_REQ_RCVD] = "SIDR_REQ_RCVD",
};

const char *ibcm_state_name(enum ibcm_state s)
{
  return (unsigned)s < sizeof(state_names) / sizeof(state_names[0]) ? state_names[s] : "?";
}

/* 4.096 us * 2^code, the unit of every CM timeout [IBCM-TMO-1] */
static uint64_t tmo_ns(uint8_t code)
{
  return 4096ull << (code > 31 ? 31 : code);
}

static uint64_t pkt_life_ns(void) { return tmo_ns(IBCM_PKT_LIFETIME); }

static uint32_t rnd(struct ibcm_agent *a)
{
  uint32_t x = a->rng;
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  return a->rng = x;
}

/* ------------------------------------------------------------------ */
/* Timers: a binary heap of connections by deadline                    */
/* ------------------------------------------------------------------ */

static uint64_t dl(const struct ibcm_agent *a, int i) { return a->conn[a->heap[i]].deadline; }

static void heap_put(struct ibcm_agent *a, int i, int16_t c)
{
  a->heap[i] = c;
  a->conn[c].heap_pos = (int16_t)i;
}

static void sift_up(struct ibcm_agent *a, int i)
{
  int16_t c = a->heap[i];
  while (i > 0 && dl(a, (i - 1) / 2) > a->conn[c].deadline) {
    heap_put(a, i, a->heap[(i - 1) / 2]);
    i = (i - 1) / 2;
  }
  heap_put(a, i, c);
}

static void sift_down(struct ibcm_agent *a, int i)
{
  int16_t c = a->heap[i];
  for (;;) {
    int k = 2 * i + 1;
    if (k >= a->heap_n)
      break;
    if (k + 1 < a->heap_n && dl(a, k + 1) < dl(a, k))
      k++;
    if (dl(a, k) >= a->conn[c].deadline)
      break;
    heap_put(a, i, a->heap[k]);
    i = k;
  }
  heap_put(a, i, c);
}

static void timer_stop(struct ibcm_agent *a, struct ibcm_conn *c)
{
  int i = c->heap_pos;
  c->deadline = RCT_NEVER;
  if (i < 0)
    return;
  c->heap_pos = -1;
  if (--a->heap_n == i)
    return;
  heap_put(a, i, a->heap[a->heap_n]);
  sift_up(a, i);
  sift_down(a, a->conn[a->heap[i]].heap_pos);
}

static void timer_set(struct ibcm_agent *a, struct ibcm_conn *c, uint64_t deadline)
{
  timer_stop(a, c);
  c->deadline = deadline;
  heap_put(a, a->heap_n++, (int16_t)(c - a->conn));
  sift_up(a, a->heap_n - 1);
}

/* ------------------------------------------------------------------ */
/* The table: free list, lookup by comm ID, hash of the peer's IDs     */
/* ------------------------------------------------------------------ */

static unsigned bucket(uint32_t remote_id, uint64_t guid)
{
  uint64_t h = (remote_id ^ guid ^ (guid >> 32)) * 0x9e3779b97f4a7c15ull;
  return (unsigned)(h >> 40) % IBCM_MAX_CONN;
}

static void hash_insert(struct ibcm_agent *a, struct ibcm_conn *c)
{
  unsigned b = bucket(c->remote_id, c->remote_guid);
  c->hashed = 1;
  c->hnext = a->hash[b];
  a->hash[b] = (int16_t)(c - a->conn);
}

static void hash_remove(struct ibcm_agent *a, struct ibcm_conn *c)
{
  int16_t *p = &a->hash[bucket(c->remote_id, c->remote_guid)];
  int16_t me = (int16_t)(c - a->conn);
  while (*p >= 0 && *p != me)
    p = &a->conn[*p].hnext;
  if (*p == me)
    *p = c->hnext;
}

static void unhash(struct ibcm_agent *a, struct ibcm_conn *c)
{
  if (c->hashed)
    hash_remove(a, c);
  c->hashed = 0;
}

/* The peer's QP (its QPN and CA GUID) belongs to c until c ends [IBCM-STATE-15]. */
static void qhash_insert(struct ibcm_agent *a, struct ibcm_conn *c)
{
  unsigned b = bucket(c->remote_qpn, c->remote_guid);
  c->qnext = a->qhash[b];
  a->qhash[b] = (int16_t)(c - a->conn);
  c->qhashed = 1;
}

static void qunhash(struct ibcm_agent *a, struct ibcm_conn *c)
{
  int16_t *p, me = (int16_t)(c - a->conn);
  if (!c->qhashed)
    return;
  p = &a->qhash[bucket(c->remote_qpn, c->remote_guid)];
  while (*p >= 0 && *p != me)
    p = &a->conn[*p].qnext;
  if (*p == me)
    *p = c->qnext;
  c->qhashed = 0;
}

static struct ibcm_conn *by_remote_qp(struct ibcm_agent *a, uint32_t qpn, uint64_t guid)
{
  for (int16_t i = a->qhash[bucket(qpn, guid)]; i >= 0; i = a->conn[i].qnext)
    if (a->conn[i].remote_qpn == qpn && a->conn[i].remote_guid == guid)
      return &a->conn[i];
  return 0;
}

/* c ends its exchange: IDLE (rejected, timed out) or time wait; the peer's QP is free. */
static void leave(struct ibcm_agent *a, struct ibcm_conn *c, enum ibcm_state state)
{
  qunhash(a, c);
  c->state = (uint8_t)state;
}

/* The connection the peer knows as (remote_id, guid), or NULL [IBCM-STATE-3]. */
static struct ibcm_conn *by_remote(struct ibcm_agent *a, uint32_t remote_id, uint64_t guid)
{
  for (int16_t i = a->hash[bucket(remote_id, guid)]; i >= 0; i = a->conn[i].hnext)
    if (a->conn[i].remote_id == remote_id && a->conn[i].remote_guid == guid)
      return &a->conn[i];
  return 0;
}

/* Our connection with comm ID local_id, or NULL [IBCM-STATE-2]. */
static struct ibcm_conn *by_local(struct ibcm_agent *a, uint32_t local_id)
{
  struct ibcm_conn *c = &a->conn[local_id & IDX_MASK];
  if ((local_id & IDX_MASK) >= IBCM_MAX_CONN || c->state == IBCM_FREE || c->local_id != local_id)
    return 0;
  return c;
}

static struct ibcm_conn *conn_alloc(struct ibcm_agent *a)
{
  struct ibcm_conn *c;
  uint32_t gen;
  if (a->free_head < 0)
    return 0;
  c = &a->conn[a->free_head];
  a->free_head = c->hnext;
  RCT_MEMSET(c, 0, sizeof(*c));
  do
    gen = rnd(a) >> IBCM_CONN_BITS;
  while (!gen);
  c->local_id = (gen << IBCM_CONN_BITS) | (uint32_t)(c - a->conn);  /* [IBCM-STATE-2] */
  c->state = IBCM_IDLE;
  c->heap_pos = c->hnext = c->qnext = c->listener = -1;
  c->deadline = RCT_NEVER;
  return c;
}

static void conn_free(struct ibcm_agent *a, struct ibcm_conn *c)
{
  timer_stop(a, c);
  unhash(a, c);
  qunhash(a, c);
  c->state = IBCM_FREE;
  c->hnext = a->free_head;
  a->free_head = (int16_t)(c - a->conn);
}

static struct ibcm_conn *handle(struct ibcm_agent *a, int conn)
{
  if (conn < 0 || conn >= IBCM_MAX_CONN || a->conn[conn].state == IBCM_FREE ||
      a->conn[conn].released)
    return 0;
  return &a->conn[conn];
}

void ibcm_agent_init(struct ibcm_agent *a, uint64_t local_ca_guid, uint32_t seed)
{
  RCT_MEMSET(a, 0, sizeof(*a));
  a->local_guid = local_ca_guid;
  a->rng = seed ? seed : 0x2545f491u;
  a->next_tid = ((uint64_t)rnd(a) << 32) | rnd(a);
  for (int i = 0; i < IBCM_MAX_CONN; i++) {
    a->conn[i].hnext = (int16_t)(i + 1 < IBCM_MAX_CONN ? i + 1 : -1);
    a->conn[i].heap_pos = -1;
    a->hash[i] = a->qhash[i] = -1;
  }
  a->free_head = 0;
}

/* ------------------------------------------------------------------ */
/* Output: MADs and events                                             */
/* ------------------------------------------------------------------ */

static bool queue_mad(struct ibcm_agent *a, const uint8_t *mad, const struct ibcm_peer *to)
{
  struct ibcm_out *o;
  if (a->out_n == IBCM_OUT_QUEUE) {
    a->cnt.dropped_queue_full++;
    return false;
  }
  o = &a->out[(a->out_head + a->out_n++) % IBCM_OUT_QUEUE];
  RCT_MEMCPY(o->mad, mad, IBCM_MAD_LEN);
  o->to = *to;
  a->cnt.tx++;
  return true;
}

/* Encode m and queue it to the connection's peer; keep it for retransmission. */
static void send_conn(struct ibcm_agent *a, struct ibcm_conn *c, const struct ibcm_msg *m)
{
  if (ibcm_encode(m, c->last_mad) != IBCM_MAD_LEN) {
    c->last_len = 0;                                    /* params checked by the callers */
    return;
  }
  c->last_len = IBCM_MAD_LEN;
  queue_mad(a, c->last_mad, &c->peer);
}

static void resend(struct ibcm_agent *a, struct ibcm_conn *c)
{
  if (c->last_len && queue_mad(a, c->last_mad, &c->peer))
    a->cnt.retransmits++;
}

static bool ev_room(const struct ibcm_agent *a, int n) { return a->ev_n + n <= IBCM_EV_QUEUE; }

/* An event for the consumer of c (none once it released c). */
static void event(struct ibcm_agent *a, struct ibcm_conn *c, enum ibcm_event_type type,
                  const struct ibcm_msg *m)
{
  struct ibcm_event *e;
  if (c->released || !ev_room(a, 1))
    return;
  e = &a->ev[(a->ev_head + a->ev_n++) % IBCM_EV_QUEUE];
  RCT_MEMSET(e, 0, sizeof(*e));
  e->type = type;
  e->conn = (int)(c - a->conn);
  e->ctx = c->ctx;
  e->peer = c->peer;
  if (m)
    e->msg = *m;
}

int ibcm_poll_mad(struct ibcm_agent *a, uint8_t buf[IBCM_MAD_LEN], struct ibcm_peer *to)
{
  struct ibcm_out *o;
  if (!a->out_n)
    return 0;
  o = &a->out[a->out_head];
  RCT_MEMCPY(buf, o->mad, IBCM_MAD_LEN);
  *to = o->to;
  a->out_head = (uint8_t)((a->out_head + 1) % IBCM_OUT_QUEUE);
  a->out_n--;
  return IBCM_MAD_LEN;
}

int ibcm_poll_event(struct ibcm_agent *a, struct ibcm_event *ev)
{
  if (!a->ev_n)
    return 0;
  *ev = a->ev[a->ev_head];
  a->ev_head = (uint8_t)((a->ev_head + 1) % IBCM_EV_QUEUE);
  a->ev_n--;
  return 1;
}

uint64_t ibcm_next_timeout(const struct ibcm_agent *a)
{
  return a->heap_n ? a->conn[a->heap[0]].deadline : RCT_NEVER;
}

const struct ibcm_counters *ibcm_counters(const struct ibcm_agent *a) { return &a->cnt; }

enum ibcm_state ibcm_conn_state(const struct ibcm_agent *a, int conn)
{
  return conn < 0 || conn >= IBCM_MAX_CONN ? IBCM_FREE : (enum ibcm_state)a->conn[conn].state;
}

/* ------------------------------------------------------------------ */
/* Messages                                                             */
/* ------------------------------------------------------------------ */

static void msg_init(struct ibcm_msg *m, uint16_t attr, uint64_t tid, const struct ibcm_conn *c)
{
  RCT_MEMSET(m, 0, sizeof(*m));
  m->attr_id = attr;
  m->tid = tid;
  if (c) {
    m->local_comm_id = c->local_id;
    m->remote_comm_id = c->remote_id;
  }
}

static void set_private(struct ibcm_msg *m, const void *priv, uint8_t len)
{
  m->private_len = len;
  if (len)
    RCT_MEMCPY(m->private_data, priv, len);
}

/* A REJ to a REQ nobody holds a connection for (local comm ID 0) [IBCM-REJ-2]. */
static void reject_req(struct ibcm_agent *a, const struct ibcm_msg *req,
                       const struct ibcm_peer *to, uint16_t reason)
{
  struct ibcm_msg *m = &a->tx;
  uint8_t buf[IBCM_MAD_LEN];
  msg_init(m, IBCM_ATTR_REJ, req->tid, 0);
  m->remote_comm_id = req->local_comm_id;
  m->message_rejected = IBCM_MSG_REQ;
  m->reason = reason;
  if (ibcm_encode(m, buf) == IBCM_MAD_LEN && queue_mad(a, buf, to))
    a->cnt.rej_sent++;
}

/* A REJ on connection c, of the message `which` [IBCM-REJ-1]. */
static void reject_conn(struct ibcm_agent *a, struct ibcm_conn *c, uint8_t which,
                        uint16_t reason, const void *priv, uint8_t len)
{
  struct ibcm_msg *m = &a->tx;
  msg_init(m, IBCM_ATTR_REJ, c->tid, c);
  m->message_rejected = which;
  m->reason = reason;
  set_private(m, priv, len);
  send_conn(a, c, m);
  a->cnt.rej_sent++;
}

static void send_drep(struct ibcm_agent *a, struct ibcm_conn *c, uint64_t tid)
{
  msg_init(&a->tx, IBCM_ATTR_DREP, tid, c);
  send_conn(a, c, &a->tx);
}

/* Start waiting for the peer's answer to what was just sent [IBCM-TMO-2]. */
static void arm(struct ibcm_agent *a, struct ibcm_conn *c, uint64_t now)
{
  c->retries = 0;
  c->rto = tmo_ns(c->remote_cm_tmo) + 2 * pkt_life_ns();
  timer_set(a, c, now + c->rto);
}

/* Time wait [IBCM-TMO-5]: the IDs stay taken while packets of the
 * connection may still be in flight. */
static void enter_timewait(struct ibcm_agent *a, struct ibcm_conn *c, uint64_t now)
{
  leave(a, c, IBCM_TIMEWAIT);
  timer_set(a, c, now + 2 * pkt_life_ns() + tmo_ns(c->local_ack_timeout));
}

/* ------------------------------------------------------------------ */
/* The consumer's calls                                                 */
/* ------------------------------------------------------------------ */

int ibcm_listen(struct ibcm_agent *a, uint64_t service_id, void *ctx)
{
  int free_slot = -1;
  for (int i = 0; i < IBCM_MAX_LISTEN; i++) {
    if (a->listen[i].used && a->listen[i].service_id == service_id)
      return IBCM_ERR_INUSE;
    if (!a->listen[i].used && free_slot < 0)
      free_slot = i;
  }
  if (free_slot < 0)
    return IBCM_ERR_FULL;
  a->listen[free_slot].used = 1;
  a->listen[free_slot].service_id = service_id;
  a->listen[free_slot].ctx = ctx;
  return free_slot;
}

void ibcm_unlisten(struct ibcm_agent *a, int listener)
{
  if (listener >= 0 && listener < IBCM_MAX_LISTEN)
    a->listen[listener].used = 0;
}

static bool req_param_ok(const struct ibcm_req_param *p)
{
  return p->path_mtu >= RCT_MTU_256 && p->path_mtu <= RCT_MTU_4096 && p->qp_type == IBCM_QPT_RC &&
         p->private_len <= IBCM_REQ_PRIVATE && p->retry_count <= 7 && p->rnr_retry_count <= 7 &&
         p->max_cm_retries <= 15 && p->local_cm_response_timeout <= 31 &&
         p->remote_cm_response_timeout <= 31 && p->local_ack_timeout <= 31 &&
         p->qpn <= RCT_QPN_MASK && p->starting_psn <= RCT_PSN_MASK;
}

/* The REQ of connection c from the consumer's parameters [IBCM-REQ-1]. */
static void build_req(struct ibcm_agent *a, struct ibcm_conn *c, const struct ibcm_req_param *p,
                      struct ibcm_msg *m)
{
  msg_init(m, IBCM_ATTR_REQ, c->tid, c);
  m->service_id = p->service_id;
  m->local_ca_guid = a->local_guid;
  m->xv6_caps = p->xv6_caps & IBCM_XV6_CAPS_MASK;       /* [IBCM-XV6-1] */
  m->local_qpn = p->qpn;
  m->responder_resources = p->responder_resources;
  m->initiator_depth = p->initiator_depth;
  m->remote_cm_response_timeout = p->remote_cm_response_timeout;
  m->transport_service_type = p->qp_type;
  m->end_to_end_flow_control = 0;                       /* no end-to-end credits [IBCM-REQ-1] */
  m->starting_psn = p->starting_psn;
  m->local_cm_response_timeout = p->local_cm_response_timeout;
  m->retry_count = p->retry_count;
  m->partition_key = IBCM_DEFAULT_PKEY;
  m->path_mtu = p->path_mtu;
  m->rnr_retry_count = p->rnr_retry_count;
  m->max_cm_retries = p->max_cm_retries;
  m->srq = p->srq;
  m->primary.local_lid = m->primary.remote_lid = PERMISSIVE_LID;   /* RoCE: no LIDs [IBCM-REQ-2] */
  RCT_MEMCPY(m->primary.local_gid, p->sgid, 16);
  RCT_MEMCPY(m->primary.remote_gid, p->dgid, 16);
  m->primary.hop_limit = IBCM_HOP_LIMIT;
  m->primary.local_ack_timeout = p->local_ack_timeout;
  set_private(m, p->private_data, p->private_len);
}

int ibcm_connect(struct ibcm_agent *a, uint64_t now, const struct ibcm_peer *to,
                 const struct ibcm_req_param *p, void *ctx)
{
  struct ibcm_conn *c;
  if (!req_param_ok(p))
    return IBCM_ERR_PARAM;
  if (!(c = conn_alloc(a)))
    return IBCM_ERR_FULL;
  c->active = 1;
  c->ctx = ctx;
  c->peer = *to;
  c->tid = a->next_tid++;                               /* a new transaction [IBCM-MAD-5] */
  c->service_id = p->service_id;
  c->local_qpn = p->qpn;
  c->local_psn = p->starting_psn;
  c->path_mtu = p->path_mtu;
  c->qp_type = p->qp_type;
  c->local_rres = p->responder_resources;
  c->local_idepth = p->initiator_depth;
  c->retry_count = p->retry_count;
  c->local_ack_timeout = p->local_ack_timeout;
  c->local_cm_tmo = p->local_cm_response_timeout;
  c->remote_cm_tmo = p->remote_cm_response_timeout;     /* we wait this long for a REP [IBCM-TMO-2] */
  c->max_cm_retries = p->max_cm_retries;
  RCT_MEMCPY(c->sgid, p->sgid, 16);
  RCT_MEMCPY(c->dgid, p->dgid, 16);
  c->local_caps = p->xv6_caps & IBCM_XV6_CAPS_MASK;
  build_req(a, c, p, &a->tx);
  send_conn(a, c, &a->tx);
  c->state = IBCM_REQ_SENT;
  arm(a, c, now);
  return (int)(c - a->conn);
}

int ibcm_set_ctx(struct ibcm_agent *a, int conn, void *ctx)
{
  struct ibcm_conn *c = handle(a, conn);
  if (!c)
    return IBCM_ERR_HANDLE;
  c->ctx = ctx;
  return 0;
}

int ibcm_accept(struct ibcm_agent *a, uint64_t now, int conn, const struct ibcm_rep_param *p)
{
  struct ibcm_conn *c = handle(a, conn);
  struct ibcm_msg *m = &a->tx;
  if (!c)
    return IBCM_ERR_HANDLE;
  if (c->state != IBCM_REQ_RCVD)
    return IBCM_ERR_STATE;
  if (p->private_len > IBCM_REP_PRIVATE || p->qpn > RCT_QPN_MASK ||
      p->starting_psn > RCT_PSN_MASK || p->rnr_retry_count > 7 || p->target_ack_delay > 31)
    return IBCM_ERR_PARAM;
  c->local_qpn = p->qpn;
  c->local_psn = p->starting_psn;
  c->local_rres = p->responder_resources;
  c->local_idepth = p->initiator_depth;
  c->local_caps = p->xv6_caps & IBCM_XV6_CAPS_MASK;
  msg_init(m, IBCM_ATTR_REP, c->tid, c);                /* the REQ's TID [IBCM-MAD-5] */
  m->local_qpn = p->qpn;
  m->starting_psn = p->starting_psn;
  m->responder_resources = p->responder_resources;
  m->initiator_depth = p->initiator_depth;
  m->target_ack_delay = p->target_ack_delay;
  m->end_to_end_flow_control = 0;                       /* no end-to-end credits [IBCM-REQ-1] */
  m->rnr_retry_count = p->rnr_retry_count;
  m->srq = p->srq;
  m->local_ca_guid = a->local_guid;
  m->xv6_caps = c->local_caps & c->remote_caps;         /* only what the REQ offered [IBCM-XV6-1] [SR-NEG-1] */
  set_private(m, p->private_data, p->private_len);
  send_conn(a, c, m);
  c->state = IBCM_REP_SENT;
  arm(a, c, now);                                       /* wait for the RTU [IBCM-TMO-2] */
  return 0;
}

int ibcm_reject(struct ibcm_agent *a, uint64_t now, int conn, uint16_t reason,
                const void *priv, uint8_t len)
{
  struct ibcm_conn *c = handle(a, conn);
  (void)now;
  if (!c)
    return IBCM_ERR_HANDLE;
  if (len > IBCM_REJ_PRIVATE)
    return IBCM_ERR_PARAM;
  if (c->state == IBCM_REQ_RCVD)
    reject_conn(a, c, IBCM_MSG_REQ, reason, priv, len);
  else if (c->state == IBCM_REP_RCVD || c->state == IBCM_MRA_REP_RCVD)
    reject_conn(a, c, IBCM_MSG_REP, reason, priv, len);
  else
    return IBCM_ERR_STATE;
  timer_stop(a, c);
  leave(a, c, IBCM_IDLE);                               /* a duplicate gets this REJ again */
  return 0;
}

int ibcm_send_rtu(struct ibcm_agent *a, uint64_t now, int conn, const void *priv, uint8_t len)
{
  struct ibcm_conn *c = handle(a, conn);
  (void)now;
  if (!c)
    return IBCM_ERR_HANDLE;
  if (c->state != IBCM_REP_RCVD)
    return IBCM_ERR_STATE;
  if (len > ibcm_private_room(IBCM_ATTR_RTU))
    return IBCM_ERR_PARAM;
  msg_init(&a->tx, IBCM_ATTR_RTU, c->tid, c);
  set_private(&a->tx, priv, len);
  send_conn(a, c, &a->tx);                                  /* kept: a repeated REP gets it [IBCM-STATE-6] */
  c->state = IBCM_ESTABLISHED;
  return 0;
}

int ibcm_established(struct ibcm_agent *a, int conn)
{
  struct ibcm_conn *c = handle(a, conn);
  if (!c)
    return IBCM_ERR_HANDLE;
  if (c->state != IBCM_REP_SENT && c->state != IBCM_MRA_REP_RCVD)
    return IBCM_ERR_STATE;
  if (!ev_room(a, 1))
    return IBCM_ERR_FULL;                               /* poll the events first */
  timer_stop(a, c);
  c->state = IBCM_ESTABLISHED;                          /* [IBCM-STATE-7] */
  event(a, c, IBCM_EV_ESTABLISHED, 0);
  return 0;
}

static void send_dreq(struct ibcm_agent *a, struct ibcm_conn *c, uint64_t now)
{
  c->dreq_tid = a->next_tid++;                          /* a new transaction [IBCM-MAD-5] */
  msg_init(&a->tx, IBCM_ATTR_DREQ, c->dreq_tid, c);
  a->tx.remote_qpn_eecn = c->remote_qpn;
  send_conn(a, c, &a->tx);
  c->state = IBCM_DREQ_SENT;
  arm(a, c, now);
}

int ibcm_disconnect(struct ibcm_agent *a, uint64_t now, int conn)
{
  struct ibcm_conn *c = handle(a, conn);
  if (!c)
    return IBCM_ERR_HANDLE;
  if (c->state == IBCM_ESTABLISHED) {
    send_dreq(a, c, now);                               /* [IBCM-STATE-8] */
  } else if (c->state == IBCM_DREQ_RCVD) {
    send_drep(a, c, c->dreq_tid);                       /* [IBCM-STATE-9] */
    enter_timewait(a, c, now);
  } else {
    return IBCM_ERR_STATE;
  }
  return 0;
}

/* ------------------------------------------------------------------ */
/* Received messages [IBCM-STATE-*]                                     */
/* ------------------------------------------------------------------ */

static bool same_gid(const uint8_t x[16], const uint8_t y[16])
{
  for (int i = 0; i < 16; i++)
    if (x[i] != y[i])
      return false;
  return true;
}

/* The connection a MAD names by (remote comm ID = ours, local = the
 * peer's), from the peer it belongs to; NULL, counted, otherwise
 * [IBCM-STATE-10]. peer_id_known: the peer's comm ID must match too. */
static struct ibcm_conn *addressed(struct ibcm_agent *a, const struct ibcm_msg *m,
                                   const struct ibcm_peer *from, bool peer_id_known)
{
  struct ibcm_conn *c = by_local(a, m->remote_comm_id);
  if (!c || !same_gid(c->peer.gid, from->gid) ||
      (peer_id_known && c->remote_id != m->local_comm_id)) {
    a->cnt.dropped_unknown_conn++;
    return 0;
  }
  return c;
}

static int listener_of(const struct ibcm_agent *a, uint64_t service_id)
{
  for (int i = 0; i < IBCM_MAX_LISTEN; i++)
    if (a->listen[i].used && a->listen[i].service_id == service_id)
      return i;
  return -1;
}

/* A new passive entry c of listener l, found again by the peer's IDs, handed to the consumer. */
static void open_passive(struct ibcm_agent *a, struct ibcm_conn *c, int l, enum ibcm_state state,
                         enum ibcm_event_type type, const struct ibcm_msg *m)
{
  c->listener = (int16_t)l;
  c->ctx = a->listen[l].ctx;
  c->state = (uint8_t)state;
  hash_insert(a, c);
  event(a, c, type, m);
}

/* A REQ the table already holds (same peer comm ID and CA GUID) [IBCM-STATE-4]. */
static void dup_req(struct ibcm_agent *a, struct ibcm_conn *c, const struct ibcm_msg *m,
                    const struct ibcm_peer *from)
{
  a->cnt.duplicates++;
  switch (c->state) {
  case IBCM_REP_SENT: case IBCM_MRA_REP_RCVD: case IBCM_IDLE:
    resend(a, c);                                       /* the REP (or our REJ) was lost */
    return;
  case IBCM_TIMEWAIT:
    a->cnt.stale++;
    reject_req(a, m, from, IBCM_REJ_STALE_CONN);        /* [IBCM-STATE-5] */
    return;
  default:
    return;                                             /* consumer deciding, or established */
  }
}

/* A new REQ from a QP a connection of ours still holds: the peer lost that
 * connection. REJ stale; an established one is disconnected [IBCM-STATE-15]. */
static void stale_qp(struct ibcm_agent *a, uint64_t now, struct ibcm_conn *c,
                     const struct ibcm_msg *m, const struct ibcm_peer *from)
{
  a->cnt.stale++;
  reject_req(a, m, from, IBCM_REJ_STALE_CONN);
  if (c->state == IBCM_ESTABLISHED)
    send_dreq(a, c, now);
}

/* Fill c from a REQ (passive side). */
static void take_req(struct ibcm_conn *c, const struct ibcm_msg *m, const struct ibcm_peer *from)
{
  c->peer = *from;
  c->remote_id = m->local_comm_id;
  c->remote_guid = m->local_ca_guid;
  c->tid = m->tid;
  c->service_id = m->service_id;
  c->remote_qpn = m->local_qpn;
  c->remote_psn = m->starting_psn;
  c->remote_rres = m->responder_resources;
  c->remote_idepth = m->initiator_depth;
  c->path_mtu = m->path_mtu;
  c->qp_type = m->transport_service_type;
  c->retry_count = m->retry_count;
  c->rnr_retry_count = m->rnr_retry_count;              /* ours to use [IBCM-REQ-3] */
  c->local_ack_timeout = m->primary.local_ack_timeout;
  c->local_cm_tmo = m->remote_cm_response_timeout;
  c->remote_cm_tmo = m->local_cm_response_timeout;      /* we wait this long for an RTU [IBCM-TMO-2] */
  c->max_cm_retries = m->max_cm_retries;
  RCT_MEMCPY(c->sgid, m->primary.remote_gid, 16);
  RCT_MEMCPY(c->dgid, m->primary.local_gid, 16);
  c->remote_caps = m->xv6_caps & IBCM_XV6_CAPS_MASK;
}

static void on_req(struct ibcm_agent *a, uint64_t now, const struct ibcm_msg *m,
                   const struct ibcm_peer *from)
{
  struct ibcm_conn *c = by_remote(a, m->local_comm_id, m->local_ca_guid);
  int l;
  if (c && !c->sidr) {
    dup_req(a, c, m, from);
    return;
  }
  if ((l = listener_of(a, m->service_id)) < 0) {
    a->cnt.rej_no_listener++;
    reject_req(a, m, from, IBCM_REJ_INVALID_SERVICE_ID);   /* [IBCM-REJ-2] */
    return;
  }
  if ((c = by_remote_qp(a, m->local_qpn, m->local_ca_guid))) {
    stale_qp(a, now, c, m, from);
    return;
  }
  if (m->transport_service_type != IBCM_QPT_RC) {
    reject_req(a, m, from, IBCM_REJ_INVALID_TRANSPORT_TYPE);
    return;
  }
  if (m->path_mtu < RCT_MTU_256 || m->path_mtu > RCT_MTU_4096) {
    reject_req(a, m, from, IBCM_REJ_INVALID_PATH_MTU);
    return;
  }
  if (!(c = conn_alloc(a))) {
    reject_req(a, m, from, IBCM_REJ_NO_RESOURCES);      /* a flood ends here [IBCM-STATE-11] */
    return;
  }
  take_req(c, m, from);
  qhash_insert(a, c);
  open_passive(a, c, l, IBCM_REQ_RCVD, IBCM_EV_REQ, m);
}

static void on_rep(struct ibcm_agent *a, uint64_t now, const struct ibcm_msg *m,
                   const struct ibcm_peer *from)
{
  struct ibcm_conn *c = addressed(a, m, from, false);
  (void)now;
  if (!c)
    return;
  if (c->state == IBCM_ESTABLISHED && c->active && c->remote_id == m->local_comm_id) {
    a->cnt.duplicates++;
    resend(a, c);                                       /* the RTU was lost [IBCM-STATE-6] */
    return;
  }
  if (c->state != IBCM_REQ_SENT && c->state != IBCM_MRA_REQ_RCVD) {
    a->cnt.duplicates++;                                /* REP_RCVD: consumer still deciding */
    return;
  }
  c->remote_id = m->local_comm_id;
  c->remote_guid = m->local_ca_guid;
  c->remote_qpn = m->local_qpn;
  c->remote_psn = m->starting_psn;
  c->remote_rres = m->responder_resources;
  c->remote_idepth = m->initiator_depth;
  c->target_ack_delay = m->target_ack_delay;
  c->rnr_retry_count = m->rnr_retry_count;              /* ours to use [IBCM-REQ-3] */
  c->remote_caps = m->xv6_caps & IBCM_XV6_CAPS_MASK;
  hash_insert(a, c);
  qhash_insert(a, c);
  timer_stop(a, c);
  c->state = IBCM_REP_RCVD;
  event(a, c, IBCM_EV_REP, m);
}

static void on_rtu(struct ibcm_agent *a, uint64_t now, const struct ibcm_msg *m,
                   const struct ibcm_peer *from)
{
  struct ibcm_conn *c = addressed(a, m, from, true);
  (void)now;
  if (!c)
    return;
  if (c->state != IBCM_REP_SENT && c->state != IBCM_MRA_REP_RCVD) {
    a->cnt.duplicates++;
    return;
  }
  timer_stop(a, c);
  c->state = IBCM_ESTABLISHED;
  event(a, c, IBCM_EV_ESTABLISHED, m);
}

static void on_rej(struct ibcm_agent *a, uint64_t now, const struct ibcm_msg *m,
                   const struct ibcm_peer *from)
{
  struct ibcm_conn *c = addressed(a, m, from, false);
  if (!c)
    return;
  switch (c->state) {
  case IBCM_REQ_SENT: case IBCM_MRA_REQ_RCVD: case IBCM_REP_RCVD:
    timer_stop(a, c);
    leave(a, c, IBCM_IDLE);                             /* [IBCM-STATE-12] */
    break;
  case IBCM_REP_SENT: case IBCM_MRA_REP_RCVD:
    if (c->remote_id != m->local_comm_id) {
      a->cnt.dropped_unknown_conn++;
      return;
    }
    enter_timewait(a, c, now);                          /* the peer's QP may have sent */
    break;
  default:
    a->cnt.duplicates++;
    return;
  }
  event(a, c, IBCM_EV_REJ, m);
}

/* An MRA: the peer needs service_timeout more for what we sent [IBCM-TMO-4]. */
static void on_mra(struct ibcm_agent *a, uint64_t now, const struct ibcm_msg *m,
                   const struct ibcm_peer *from)
{
  struct ibcm_conn *c = addressed(a, m, from, false);
  if (!c)
    return;
  if (c->state == IBCM_REQ_SENT && m->message_mraed == IBCM_MSG_REQ)
    c->state = IBCM_MRA_REQ_RCVD;
  else if (c->state == IBCM_REP_SENT && m->message_mraed == IBCM_MSG_REP)
    c->state = IBCM_MRA_REP_RCVD;
  else
    return;
  c->retries = c->max_cm_retries;                       /* no more resends: wait, then give up */
  timer_set(a, c, now + tmo_ns(m->service_timeout) + 2 * pkt_life_ns());
}

static void on_dreq(struct ibcm_agent *a, uint64_t now, const struct ibcm_msg *m,
                    const struct ibcm_peer *from)
{
  struct ibcm_conn *c = by_local(a, m->remote_comm_id);
  if (!c) {
    uint8_t buf[IBCM_MAD_LEN];                          /* answer it, touch nothing [IBCM-STATE-10] */
    a->cnt.dropped_unknown_conn++;
    msg_init(&a->tx, IBCM_ATTR_DREP, m->tid, 0);
    a->tx.local_comm_id = m->remote_comm_id;
    a->tx.remote_comm_id = m->local_comm_id;
    if (ibcm_encode(&a->tx, buf) == IBCM_MAD_LEN)
      queue_mad(a, buf, from);
    return;
  }
  if (!(c = addressed(a, m, from, true)))
    return;
  switch (c->state) {
  case IBCM_ESTABLISHED: case IBCM_REP_SENT: case IBCM_MRA_REP_RCVD:
    timer_stop(a, c);
    c->dreq_tid = m->tid;
    c->state = IBCM_DREQ_RCVD;                          /* consumer: QP to ERR, then DREP [IBCM-STATE-9] */
    event(a, c, IBCM_EV_DREQ, m);
    return;
  case IBCM_DREQ_SENT:
    send_drep(a, c, m->tid);                            /* crossing DREQs [IBCM-STATE-13] */
    enter_timewait(a, c, now);
    event(a, c, IBCM_EV_DISCONNECTED, m);
    return;
  case IBCM_TIMEWAIT:
    a->cnt.duplicates++;
    send_drep(a, c, m->tid);                            /* our DREP was lost */
    return;
  default:
    a->cnt.duplicates++;
    return;
  }
}

static void on_drep(struct ibcm_agent *a, uint64_t now, const struct ibcm_msg *m,
                    const struct ibcm_peer *from)
{
  struct ibcm_conn *c = addressed(a, m, from, true);
  if (!c)
    return;
  if (c->state != IBCM_DREQ_SENT) {
    a->cnt.duplicates++;
    return;
  }
  enter_timewait(a, c, now);                            /* [IBCM-STATE-8] */
  event(a, c, IBCM_EV_DISCONNECTED, m);
}


/* ------------------------------------------------------------------ */
/* SIDR [IBCM-SIDR-*]                                                  */
/* ------------------------------------------------------------------ */

/* A SIDR_REQ has no CA GUID: its sender is known by its GID's low half. */
static uint64_t gid_key(const struct ibcm_peer *p) { return ld64(p->gid + 8); }

/* A SIDR_REP refusing req, from no entry of the table. */
static void refuse_sidr(struct ibcm_agent *a, const struct ibcm_msg *req,
                        const struct ibcm_peer *to, uint8_t status)
{
  uint8_t buf[IBCM_MAD_LEN];
  msg_init(&a->tx, IBCM_ATTR_SIDR_REP, req->tid, 0);
  a->tx.request_id = req->request_id;
  a->tx.sidr_status = status;
  a->tx.service_id = req->service_id;
  if (ibcm_encode(&a->tx, buf) == IBCM_MAD_LEN)
    queue_mad(a, buf, to);
}

static void on_sidr_req(struct ibcm_agent *a, uint64_t now, const struct ibcm_msg *m,
                        const struct ibcm_peer *from)
{
  struct ibcm_conn *c = by_remote(a, m->request_id, gid_key(from));
  int l;
  (void)now;
  if (c && c->sidr) {
    a->cnt.duplicates++;
    if (c->state == IBCM_IDLE)
      resend(a, c);                                     /* our SIDR_REP was lost */
    return;
  }
  if ((l = listener_of(a, m->service_id)) < 0) {
    a->cnt.rej_no_listener++;
    refuse_sidr(a, m, from, IBCM_SIDR_UNSUPPORTED);   /* [IBCM-SIDR-2] */
    return;
  }
  if (!(c = conn_alloc(a))) {
    refuse_sidr(a, m, from, IBCM_SIDR_NO_QP);
    return;
  }
  c->sidr = 1;
  c->peer = *from;
  c->remote_id = m->request_id;
  c->remote_guid = gid_key(from);
  c->tid = m->tid;
  c->service_id = m->service_id;
  open_passive(a, c, l, IBCM_SIDR_REQ_RCVD, IBCM_EV_SIDR_REQ, m);
}

static void on_sidr_rep(struct ibcm_agent *a, uint64_t now, const struct ibcm_msg *m,
                        const struct ibcm_peer *from)
{
  struct ibcm_conn *c = by_local(a, m->request_id);
  (void)now;
  if (!c || !c->sidr || !same_gid(c->peer.gid, from->gid)) {
    a->cnt.dropped_unknown_conn++;
    return;
  }
  if (c->state != IBCM_SIDR_REQ_SENT) {
    a->cnt.duplicates++;
    return;
  }
  timer_stop(a, c);
  c->state = IBCM_IDLE;
  event(a, c, IBCM_EV_SIDR_REP, m);
}

int ibcm_sidr_req(struct ibcm_agent *a, uint64_t now, const struct ibcm_peer *to,
                  uint64_t service_id, const void *priv, uint8_t len, void *ctx)
{
  struct ibcm_conn *c;
  if (len > ibcm_private_room(IBCM_ATTR_SIDR_REQ))
    return IBCM_ERR_PARAM;
  if (!(c = conn_alloc(a)))
    return IBCM_ERR_FULL;
  c->sidr = c->active = 1;
  c->ctx = ctx;
  c->peer = *to;
  c->tid = a->next_tid++;                               /* [IBCM-MAD-5] */
  c->service_id = service_id;
  c->remote_cm_tmo = IBCM_SIDR_RESPONSE_TIMEOUT;        /* [IBCM-SIDR-3] */
  c->max_cm_retries = IBCM_SIDR_MAX_RETRIES;
  msg_init(&a->tx, IBCM_ATTR_SIDR_REQ, c->tid, 0);
  a->tx.request_id = c->local_id;                       /* the SIDR_REP names it [IBCM-SIDR-1] */
  a->tx.partition_key = IBCM_DEFAULT_PKEY;
  a->tx.service_id = service_id;
  set_private(&a->tx, priv, len);
  send_conn(a, c, &a->tx);
  c->state = IBCM_SIDR_REQ_SENT;
  arm(a, c, now);
  return (int)(c - a->conn);
}

int ibcm_sidr_rep(struct ibcm_agent *a, uint64_t now, int conn, uint8_t status, uint32_t qpn,
                  uint32_t qkey, const void *priv, uint8_t len)
{
  struct ibcm_conn *c = handle(a, conn);
  (void)now;
  if (!c)
    return IBCM_ERR_HANDLE;
  if (c->state != IBCM_SIDR_REQ_RCVD)
    return IBCM_ERR_STATE;
  if (len > ibcm_private_room(IBCM_ATTR_SIDR_REP) || qpn > RCT_QPN_MASK)
    return IBCM_ERR_PARAM;
  msg_init(&a->tx, IBCM_ATTR_SIDR_REP, c->tid, 0);       /* the SIDR_REQ's TID [IBCM-MAD-5] */
  a->tx.request_id = c->remote_id;
  a->tx.sidr_status = status;
  a->tx.sidr_qpn = status == IBCM_SIDR_SUCCESS ? qpn : 0;
  a->tx.sidr_qkey = status == IBCM_SIDR_SUCCESS ? qkey : 0;
  a->tx.service_id = c->service_id;
  set_private(&a->tx, priv, len);
  send_conn(a, c, &a->tx);                              /* kept: a repeated SIDR_REQ gets it */
  c->state = IBCM_IDLE;
  return 0;
}

static const struct {
  uint16_t attr;
  void (*fn)(struct ibcm_agent *, uint64_t, const struct ibcm_msg *, const struct ibcm_peer *);
} handlers[] = {
  { IBCM_ATTR_REQ, on_req }, { IBCM_ATTR_MRA, on_mra }, { IBCM_ATTR_REJ, on_rej },
  { IBCM_ATTR_REP, on_rep }, { IBCM_ATTR_RTU, on_rtu }, { IBCM_ATTR_DREQ, on_dreq },
  { IBCM_ATTR_DREP, on_drep }, { IBCM_ATTR_SIDR_REQ, on_sidr_req }, { IBCM_ATTR_SIDR_REP, on_sidr_rep },
};

/* Which counter each parse error moves [IBCM-MAD-7]. */
static const struct { int err; size_t counter; } parse_counters[] = {
  { IBCM_E_SHORT, offsetof(struct ibcm_counters, dropped_malformed) },
  { IBCM_E_BASE_VERSION, offsetof(struct ibcm_counters, dropped_version) },
  { IBCM_E_CLASS_VERSION, offsetof(struct ibcm_counters, dropped_version) },
  { IBCM_E_CLASS, offsetof(struct ibcm_counters, dropped_class) },
  { IBCM_E_METHOD, offsetof(struct ibcm_counters, dropped_method) },
  { IBCM_E_ATTR, offsetof(struct ibcm_counters, dropped_unknown_attr) },
};

static uint64_t *parse_counter(struct ibcm_agent *a, int err)
{
  for (size_t i = 0; i < sizeof(parse_counters) / sizeof(parse_counters[0]); i++)
    if (parse_counters[i].err == err)
      return (uint64_t *)((uint8_t *)&a->cnt + parse_counters[i].counter);
  return &a->cnt.dropped_malformed;
}

void ibcm_recv(struct ibcm_agent *a, uint64_t now, const struct ibcm_peer *from,
               const uint8_t *mad, size_t len)
{
  struct ibcm_msg *m = &a->rx;
  int err;
  a->cnt.rx++;
  if (!ev_room(a, 2)) {
    a->cnt.dropped_queue_full++;                        /* the peer retransmits */
    return;
  }
  if ((err = ibcm_parse(m, mad, len)) < 0) {
    (*parse_counter(a, err))++;
    return;
  }
  for (size_t i = 0; i < sizeof(handlers) / sizeof(handlers[0]); i++)
    if (handlers[i].attr == m->attr_id)
      handlers[i].fn(a, now, m, from);
}

/* ------------------------------------------------------------------ */
/* Timers [IBCM-TMO-*]                                                 */
/* ------------------------------------------------------------------ */

/* The last retry of what c sent went unanswered [IBCM-TMO-3]. */
static void give_up(struct ibcm_agent *a, struct ibcm_conn *c, uint64_t now)
{
  switch (c->state) {
  case IBCM_REQ_SENT: case IBCM_MRA_REQ_RCVD: case IBCM_SIDR_REQ_SENT:
    timer_stop(a, c);
    leave(a, c, IBCM_IDLE);
    event(a, c, IBCM_EV_TIMEOUT, 0);
    break;
  case IBCM_REP_SENT: case IBCM_MRA_REP_RCVD:
    reject_conn(a, c, IBCM_MSG_OTHER, IBCM_REJ_TIMEOUT, 0, 0);
    enter_timewait(a, c, now);
    event(a, c, IBCM_EV_TIMEOUT, 0);
    break;
  default:                                              /* DREQ_SENT */
    enter_timewait(a, c, now);
    event(a, c, IBCM_EV_DISCONNECTED, 0);
    break;
  }
}

static void on_timer(struct ibcm_agent *a, struct ibcm_conn *c, uint64_t now)
{
  switch (c->state) {
  case IBCM_REQ_SENT: case IBCM_REP_SENT: case IBCM_DREQ_SENT: case IBCM_SIDR_REQ_SENT:
  case IBCM_MRA_REQ_RCVD: case IBCM_MRA_REP_RCVD:
    if (c->retries < c->max_cm_retries) {
      c->retries++;
      resend(a, c);                                     /* [IBCM-TMO-3] */
      timer_set(a, c, now + c->rto);
    } else {
      give_up(a, c, now);
    }
    return;
  case IBCM_TIMEWAIT:
    timer_stop(a, c);
    unhash(a, c);                                       /* the IDs may be reused [IBCM-TMO-5] */
    c->last_len = 0;
    c->state = IBCM_IDLE;
    if (c->released)
      conn_free(a, c);
    else
      event(a, c, IBCM_EV_TIMEWAIT_EXIT, 0);
    return;
  default:
    timer_stop(a, c);
    return;
  }
}

void ibcm_timeout(struct ibcm_agent *a, uint64_t now)
{
  /* Stop while an answer could not be queued: the caller polls, then calls again. */
  while (a->heap_n && dl(a, 0) <= now && ev_room(a, 1) && a->out_n < IBCM_OUT_QUEUE)
    on_timer(a, &a->conn[a->heap[0]], now);
}

/* The consumer forgets conn: what the peer must hear is sent, the entry
 * lingers (without events) until its time wait ends [IBCM-STATE-14]. */
void ibcm_release(struct ibcm_agent *a, uint64_t now, int conn)
{
  struct ibcm_conn *c = handle(a, conn);
  if (!c)
    return;
  c->released = 1;
  switch (c->state) {
  case IBCM_REQ_RCVD:
    reject_conn(a, c, IBCM_MSG_REQ, IBCM_REJ_CONSUMER, 0, 0);
    conn_free(a, c);
    return;
  case IBCM_REQ_SENT: case IBCM_MRA_REQ_RCVD: case IBCM_REP_RCVD:
    reject_conn(a, c, IBCM_MSG_OTHER, IBCM_REJ_TIMEOUT, 0, 0);
    conn_free(a, c);
    return;
  case IBCM_REP_SENT: case IBCM_MRA_REP_RCVD:
    reject_conn(a, c, IBCM_MSG_OTHER, IBCM_REJ_TIMEOUT, 0, 0);
    enter_timewait(a, c, now);
    return;
  case IBCM_ESTABLISHED:
    send_dreq(a, c, now);
    return;
  case IBCM_DREQ_RCVD:
    send_drep(a, c, c->dreq_tid);
    enter_timewait(a, c, now);
    return;
  case IBCM_DREQ_SENT: case IBCM_TIMEWAIT:
    return;                                             /* freed when the time wait ends */
  default:
    conn_free(a, c);
    return;
  }
}

/* ------------------------------------------------------------------ */
/* The QP attributes of a finished exchange [IBCM-REQ-3]               */
/* ------------------------------------------------------------------ */

int ibcm_qp_attr(const struct ibcm_agent *a, int conn, struct rct_qp_attr *attr,
                 uint32_t *rtr_mask, uint32_t *rts_mask)
{
  const struct ibcm_conn *c;
  uint32_t ip;
  if (conn < 0 || conn >= IBCM_MAX_CONN)
    return IBCM_ERR_HANDLE;
  c = &a->conn[conn];
  if (c->state != IBCM_REP_SENT && c->state != IBCM_MRA_REP_RCVD && c->state != IBCM_REP_RCVD &&
      c->state != IBCM_ESTABLISHED && c->state != IBCM_DREQ_SENT && c->state != IBCM_DREQ_RCVD)
    return IBCM_ERR_STATE;                              /* REQ and REP not both known */
  if (ibcm_gid_to_ipv4(c->dgid, &ip) < 0)
    return IBCM_ERR_PARAM;
  attr->ah.dipv4 = ip;                                  /* dmac: the caller's (ARP) */
  attr->path_mtu = (enum rct_mtu)c->path_mtu;
  attr->dest_qp_num = c->remote_qpn;
  attr->rq_psn = c->local_psn;                          /* each side's Starting PSN is the one */
  attr->sq_psn = c->remote_psn;                         /* its peer sends with [IBCM-REQ-3] */
  attr->max_dest_rd_atomic = c->local_rres;
  attr->max_rd_atomic = c->local_idepth < c->remote_rres ? c->local_idepth : c->remote_rres;
  attr->timeout = c->local_ack_timeout;
  attr->retry_cnt = c->retry_count;
  attr->rnr_retry = c->rnr_retry_count;
  attr->sr_enable = (c->local_caps & c->remote_caps & RDMA_XV6_CAP_SR) != 0;   /* [IBCM-XV6-2] */
  *rtr_mask = RCT_QP_STATE | RCT_QP_AV | RCT_QP_PATH_MTU | RCT_QP_DEST_QPN | RCT_QP_RQ_PSN |
              RCT_QP_MAX_DEST_RD_ATOMIC | RCT_QP_SR;
  *rts_mask = RCT_QP_STATE | RCT_QP_SQ_PSN | RCT_QP_TIMEOUT | RCT_QP_RETRY_CNT | RCT_QP_RNR_RETRY |
              RCT_QP_MAX_QP_RD_ATOMIC;
  return 0;
}
