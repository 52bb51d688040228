/*
 * event.c: what happened, for the caller to drain. Owns the device's pending
 * list of objects with unreported events (struct rct_ev_node in every QP,
 * CQ and SRQ), the key watches, and the queries that spare the caller reading the
 * core's rings (rct_key_in_use). The roles only call the two marks declared
 * in rct_int.h; the cost is per event, never per idle object.
 */
#include "core_int.h"

enum { NODE_QP = 1, NODE_CQ = 2, NODE_SRQ = 3 };

static struct rct_qp_base *node_qp(struct rct_ev_node *n)
{
  return (struct rct_qp_base *)(void *)((char *)n - offsetof(struct rct_qp_base, ev));
}

static struct rct_cq *node_cq(struct rct_ev_node *n)
{
  return (struct rct_cq *)(void *)((char *)n - offsetof(struct rct_cq, ev));
}

static struct rct_srq *node_srq(struct rct_ev_node *n)
{
  return (struct rct_srq *)(void *)((char *)n - offsetof(struct rct_srq, ev));
}

/* Record event t on n; the first pending event queues n at dev's tail. */
static void ev_mark(struct rct_dev *dev, struct rct_ev_node *n, uint8_t kind, enum rct_event_type t)
{
  n->pending |= (uint8_t)(1u << t);
  if (n->dev)
    return;
  n->dev = dev;
  n->kind = kind;
  n->next = 0;
  if (dev->ev_tail)
    dev->ev_tail->next = n;
  else
    dev->ev_head = n;
  dev->ev_tail = n;
}

/* n leaves its device's list with whatever it had pending. */
void rct_ev_forget(struct rct_ev_node *n)
{
  struct rct_dev *dev = n->dev;
  struct rct_ev_node *prev = 0, *it;
  if (!dev)
    return;
  for (it = dev->ev_head; it && it != n; it = it->next)
    prev = it;
  if (it) {
    if (prev)
      prev->next = n->next;
    else
      dev->ev_head = n->next;
    if (dev->ev_tail == n)
      dev->ev_tail = prev;
  }
  n->next = 0;
  n->dev = 0;
  n->pending = 0;
  n->info = 0;
}

/* Caller: qp.c, as the QP enters ERR. The first cause since the last report stays. */
void rct_ev_qp_err(struct rct_qp_base *b, enum rct_qp_err_cause cause)
{
  if (!(b->ev.pending & (1u << RCT_EV_QP_ERR)))
    b->ev.info = (uint8_t)cause;
  ev_mark(b->dev, &b->ev, NODE_QP, RCT_EV_QP_ERR);
}

/* Caller: qp.c, as a QP on an SRQ enters ERR (its taken WQEs flushed) [SRQ-ERR-2]. */
void rct_ev_qp_last_wqe(struct rct_qp_base *b)
{
  ev_mark(b->dev, &b->ev, NODE_QP, RCT_EV_QP_LAST_WQE);
}

/* Caller: srq.c, as a take leaves an armed SRQ below its limit [SRQ-LIMIT-2]. */
void rct_ev_srq_limit(struct rct_srq *srq)
{
  ev_mark(srq->dev, &srq->ev, NODE_SRQ, RCT_EV_SRQ_LIMIT);
}

/* Caller: cq.c, for a completion qp pushed (or dropped: overflow). */
void rct_ev_cq(struct rct_qp_base *b, struct rct_cq *cq, enum rct_event_type t, bool solicited)
{
  if (solicited)
    cq->ev.info |= RCT_EV_SOLICITED;
  ev_mark(b->dev, &cq->ev, NODE_CQ, t);
}

/* A watched key that is no longer in use: unwatched and reported. */
static bool next_idle_key(struct rct_dev *dev, struct rct_event *ev)
{
  for (struct rct_key_watch **pp = &dev->watches; *pp; pp = &(*pp)->next) {
    struct rct_key_watch *w = *pp;
    if (rct_key_in_use(dev, w->key))
      continue;
    *pp = w->next;
    w->next = 0;
    w->linked = 0;
    ev->type = RCT_EV_KEY_IDLE;
    ev->key = w->key;
    return true;
  }
  return false;
}

bool rct_dev_next_event(struct rct_dev *dev, struct rct_event *ev)
{
  struct rct_ev_node *n = dev->ev_head;
  unsigned t = 0;
  RCT_MEMSET(ev, 0, sizeof(*ev));
  if (!n)
    return next_idle_key(dev, ev);
  while (!(n->pending & (1u << t)))
    t++;
  n->pending &= (uint8_t)~(1u << t);
  ev->type = (enum rct_event_type)t;
  if (n->kind == NODE_QP) {
    ev->qp_base = node_qp(n);
    /* an RC QP starts with its base (rc_int.h asserts it) */
    ev->qp = ev->qp_base->type == RCT_QPT_RC ? (struct rct_qp *)(void *)ev->qp_base : 0;
    ev->info = n->info;
  } else if (n->kind == NODE_SRQ) {
    ev->srq = node_srq(n);
  } else {
    ev->cq = node_cq(n);
    if (t == RCT_EV_CQ_COMP) {
      ev->info = n->info;
      n->info = 0;
    }
  }
  if (!n->pending) {
    dev->ev_head = n->next;
    if (!dev->ev_head)
      dev->ev_tail = 0;
    n->next = 0;
    n->dev = 0;
  }
  return true;
}

static bool sges_use(const struct rct_sge *s, int n, uint32_t key)
{
  for (int i = 0; i < n; i++)
    if (s[i].lkey == key && s[i].length > 0)
      return true;
  return false;
}

bool rct_qpb_key_in_use(const struct rct_qp_base *b, uint32_t key)
{
  for (uint32_t i = b->sq_head; i != b->sq_tail; i++) {
    const struct rct_send_wqe *w = SQ_AT(b, i);
    if (w->state == RCT_WQE_POSTED && sges_use(w->sge, w->wr.num_sge, key))
      return true;
  }
  for (uint32_t i = b->rq_head; i != b->rq_tail; i++) {
    const struct rct_recv_wqe *r = RQ_AT(b, i);
    if (sges_use(r->sge, r->num_sge, key))
      return true;
  }
  return b->ops->uses_key && b->ops->uses_key(b, key);
}

static bool srq_key_in_use(const struct rct_srq *s, uint32_t key)
{
  for (uint32_t i = s->head; i != s->tail; i++) {
    const struct rct_recv_wqe *r = &s->ring[i & (s->size - 1)];
    if (sges_use(r->sge, r->num_sge, key))
      return true;
  }
  return false;
}

bool rct_key_in_use(const struct rct_dev *dev, uint32_t key)
{
  for (const struct rct_qp_base *b = dev->qps; b; b = b->next)
    if (rct_qpb_key_in_use(b, key))
      return true;
  for (const struct rct_srq *s = dev->srqs; s; s = s->next)
    if (srq_key_in_use(s, key))
      return true;
  return false;
}

/* Watches are kept in the order they were made (reported in that order). */
bool rct_key_watch(struct rct_dev *dev, struct rct_key_watch *w, uint32_t key)
{
  struct rct_key_watch **pp = &dev->watches;
  if (w->linked)
    rct_key_unwatch(dev, w);
  if (!rct_key_in_use(dev, key))
    return false;
  while (*pp)
    pp = &(*pp)->next;
  w->key = key;
  w->linked = 1;
  w->next = 0;
  *pp = w;
  return true;
}

void rct_key_unwatch(struct rct_dev *dev, struct rct_key_watch *w)
{
  for (struct rct_key_watch **pp = &dev->watches; *pp; pp = &(*pp)->next)
    if (*pp == w) {
      *pp = w->next;
      break;
    }
  w->next = 0;
  w->linked = 0;
}
