/*
 * post.c: posting work. rct_post_send copies a send WR into the send ring
 * (the requester starts it later), rct_post_recv a receive WR into the
 * receive ring (the responder consumes it); in ERR both complete at once
 * with WR_FLUSH_ERR. [QP-STATE-4] [QP-STATE-5]
 */
#include "rct_int.h"

static void flush_one(struct rct_qp *qp, struct rct_cq *cq, uint64_t wr_id, enum rct_wc_opcode op)
{
  struct rct_wc wc = { .wr_id = wr_id, .status = RCT_WC_WR_FLUSH_ERR, .opcode = op,
                       .qp_num = qp->init.qpn };
  qp->cnt.flushed++;
  rct_cq_push(qp, cq, &wc);
}

/* [QP-STATE-4] [REQ-FRAG-2] */
int rct_post_send(struct rct_qp *qp, const struct rct_send_wr *wr)
{
  enum rct_qp_state s = qp->attr.qp_state;
  struct rct_send_wqe *w;
  uint64_t total = 0;
  if (s == RCT_QPS_RESET || s == RCT_QPS_INIT || s == RCT_QPS_RTR)
    return RCT_EINVAL;
  if (wr->opcode >= RCT_WR_COUNT || wr->num_sge < 0 || wr->num_sge > RCT_MAX_SGE ||
      (wr->num_sge && !wr->sg_list))
    return RCT_EINVAL;
  if (s == RCT_QPS_ERR || s == RCT_QPS_SQE) {
    flush_one(qp, qp->init.send_cq, wr->wr_id, rct_wr_to_wc_opcode(wr->opcode));
    return RCT_OK;
  }
  if (qp->sq_tail - qp->sq_head >= qp->init.sq_size)
    return RCT_ENOSPC;
  w = SQ_AT(qp, qp->sq_tail);
  RCT_MEMSET(w, 0, sizeof(*w));
  w->wr = *wr;
  w->wr.sg_list = 0;
  for (int i = 0; i < wr->num_sge; i++) {
    w->sge[i] = wr->sg_list[i];
    total += wr->sg_list[i].length;
  }
  w->status = RCT_WC_SUCCESS;
  if (total > 0x80000000ull) {
    w->status = RCT_WC_LOC_LEN_ERR;      /* fails when the requester reaches it */
    total = 0;
  }
  w->length = (uint32_t)total;
  w->state = RCT_WQE_POSTED;
  qp->sq_tail++;
  rct_qp_mark_ready(qp);
  return RCT_OK;
}

/* [QP-STATE-5] */
int rct_post_recv(struct rct_qp *qp, const struct rct_recv_wr *wr)
{
  enum rct_qp_state s = qp->attr.qp_state;
  struct rct_recv_wqe *r;
  uint64_t total = 0;
  if (s == RCT_QPS_RESET)
    return RCT_EINVAL;
  if (wr->num_sge < 0 || wr->num_sge > RCT_MAX_SGE || (wr->num_sge && !wr->sg_list))
    return RCT_EINVAL;
  if (s == RCT_QPS_ERR) {
    flush_one(qp, qp->init.recv_cq, wr->wr_id, RCT_WC_RECV);
    return RCT_OK;
  }
  if (qp->rq_tail - qp->rq_head >= qp->init.rq_size)
    return RCT_ENOSPC;
  r = RQ_AT(qp, qp->rq_tail);
  r->wr_id = wr->wr_id;
  r->num_sge = wr->num_sge;
  for (int i = 0; i < wr->num_sge; i++) {
    r->sge[i] = wr->sg_list[i];
    total += wr->sg_list[i].length;
  }
  r->length = total > 0xffffffffull ? 0xffffffffu : (uint32_t)total;
  qp->rq_tail++;
  return RCT_OK;
}
