/*
 * cq.c: completion queues over caller arrays. The roles push completions
 * (cq_push); the application pops them (rct_poll_cq). A full CQ drops the
 * completion and counts it, never overwrites. [REQ-CMPL-*] [RESP-RECV-4]
 * Each push leaves an event (event.c); rct_cq_count / rct_cq_overflow are
 * the caller's view of the ring.
 */
#include "core_int.h"

void rct_cq_init(struct rct_cq *cq, struct rct_wc *ring, uint32_t size)
{
  cq->ring = ring;
  cq->size = size;
  cq->head = cq->tail = cq->head_slot = 0;
  cq->overflow = 0;
  RCT_MEMSET(&cq->ev, 0, sizeof(cq->ev));
}

void rct_cq_push(struct rct_qp_base *b, struct rct_cq *cq, const struct rct_wc *wc)
{
  if (wc->status == RCT_WC_SUCCESS)
    b->cnt.completions++;
  else if (wc->status != RCT_WC_WR_FLUSH_ERR)
    b->cnt.error_completions++;
  if (cq->tail - cq->head >= cq->size) {
    cq->overflow++;
    b->cnt.cq_overflow++;
    rct_ev_cq(b, cq, RCT_EV_CQ_OVERFLOW, false);
    return;
  }
  *rct_cq_at(cq, cq->tail) = *wc;
  cq->tail++;
  rct_ev_cq(b, cq, RCT_EV_CQ_COMP, wc->solicited || wc->status != RCT_WC_SUCCESS);
}

uint32_t rct_cq_count(const struct rct_cq *cq)
{
  return cq->tail - cq->head;
}

uint32_t rct_cq_overflow(const struct rct_cq *cq)
{
  return cq->overflow;
}

void rct_cq_destroy(struct rct_cq *cq)
{
  rct_ev_forget(&cq->ev);
}

int rct_poll_cq(struct rct_cq *cq, struct rct_wc *wc, int n)
{
  int got = 0;
  while (got < n && cq->head != cq->tail) {
    wc[got++] = *rct_cq_at(cq, cq->head);
    cq->head++;
    cq->head_slot = cq->head_slot + 1 == cq->size ? 0 : cq->head_slot + 1;
  }
  return got;
}

enum rct_wc_opcode rct_wr_to_wc_opcode(enum rct_wr_opcode op)
{
  static const enum rct_wc_opcode map[RCT_WR_COUNT] = {
    [RCT_WR_RDMA_WRITE] = RCT_WC_RDMA_WRITE,
    [RCT_WR_RDMA_WRITE_WITH_IMM] = RCT_WC_RDMA_WRITE,
    [RCT_WR_SEND] = RCT_WC_SEND,
    [RCT_WR_SEND_WITH_IMM] = RCT_WC_SEND,
    [RCT_WR_RDMA_READ] = RCT_WC_RDMA_READ,
    [RCT_WR_ATOMIC_CMP_AND_SWP] = RCT_WC_COMP_SWAP,     /* [REQ-ATOM-3] */
    [RCT_WR_ATOMIC_FETCH_AND_ADD] = RCT_WC_FETCH_ADD,
  };
  return (unsigned)op < RCT_WR_COUNT ? map[op] : RCT_WC_SEND;
}
