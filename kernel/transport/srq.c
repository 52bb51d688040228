/*
 * srq.c: shared receive queues (proto-spec srq.md): an SRQ's ring of
 * posted receive WQEs, its limit, and the one place QPs take from it
 * (rct_rq_at). A QP on an SRQ keeps the WQEs it has taken in its own
 * receive ring, so its receiving role completes and flushes them as it
 * does posted ones [SRQ-ERR-1]; the roles only ask rct_rq_at for the
 * receive WQE they need next.
 */
#include "core_int.h"

#define SRQ_AT(s, i) (&(s)->ring[(i) & ((s)->size - 1)])

int rct_srq_init(struct rct_dev *dev, struct rct_srq *srq, struct rct_recv_wqe *ring, uint32_t size)
{
  if (!dev || !srq || !ring || !size || (size & (size - 1)))
    return RCT_EINVAL;
  RCT_MEMSET(srq, 0, sizeof(*srq));
  srq->dev = dev;
  srq->ring = ring;
  srq->size = size;
  srq->next = dev->srqs;
  dev->srqs = srq;
  return RCT_OK;
}

/* [SRQ-VERB-4] */
int rct_srq_destroy(struct rct_srq *srq)
{
  struct rct_srq **pp;
  if (srq->nqp)
    return RCT_ESTATE;
  for (pp = &srq->dev->srqs; *pp; pp = &(*pp)->next)
    if (*pp == srq) {
      *pp = srq->next;
      break;
    }
  rct_ev_forget(&srq->ev);
  srq->dev = 0;
  return RCT_OK;
}

uint32_t rct_srq_count(const struct rct_srq *srq)
{
  return srq->tail - srq->head;
}

/* [SRQ-VERB-5] */
int rct_srq_post_recv(struct rct_srq *srq, const struct rct_recv_wr *wr)
{
  if (rct_recv_wr_check(wr) != RCT_OK)
    return RCT_EINVAL;
  if (rct_srq_count(srq) >= srq->size)
    return RCT_ENOSPC;
  rct_recv_wqe_set(SRQ_AT(srq, srq->tail), wr);
  srq->tail++;
  return RCT_OK;
}

/* [SRQ-LIMIT-1] */
int rct_srq_set_limit(struct rct_srq *srq, uint32_t limit)
{
  if (limit > srq->size)
    return RCT_EINVAL;
  srq->limit = limit;
  return RCT_OK;
}

/* The SRQ's oldest WQE into *r; false when it is empty. [SRQ-TAKE-1] [SRQ-LIMIT-2] */
static bool take(struct rct_srq *srq, struct rct_recv_wqe *r)
{
  if (srq->head == srq->tail)
    return false;
  *r = *SRQ_AT(srq, srq->head);
  srq->head++;
  if (srq->limit && rct_srq_count(srq) < srq->limit) {
    srq->limit = 0;
    rct_ev_srq_limit(srq);
  }
  return true;
}

/* [SRQ-TAKE-1] [SRQ-TAKE-3] [SRQ-TAKE-4] */
struct rct_recv_wqe *rct_rq_at(struct rct_qp_base *b, uint32_t k)
{
  while (b->rq_tail - b->rq_head <= k) {
    if (!b->init.srq || b->rq_tail - b->rq_head >= b->init.rq_size ||
        !take(b->init.srq, RQ_AT(b, b->rq_tail)))
      return 0;
    b->rq_tail++;
  }
  return RQ_AT(b, b->rq_head + k);
}
