/*
 * post.c: posting work, for every QP type. rct_post_send_wqe copies a send
 * WR into the send ring (the type's sending role starts it later; the types'
 * posting calls wrap it), rct_qpb_post_recv a receive WR into the receive
 * ring (the type's receiving role consumes it); in ERR both complete at
 * once with WR_FLUSH_ERR. [QP-STATE-4] [QP-STATE-5]
 */
#include "core_int.h"

static void flush_one(struct rct_qp_base *b, struct rct_cq *cq, uint64_t wr_id, enum rct_wc_opcode op)
{
  struct rct_wc wc = { .wr_id = wr_id, .status = RCT_WC_WR_FLUSH_ERR, .opcode = op,
                       .qp_num = b->init.qpn };
  b->cnt.flushed++;
  rct_cq_push(b, cq, &wc);
}

/* [QP-STATE-4] [REQ-FRAG-2] */
int rct_post_send_wqe(struct rct_qp_base *b, const struct rct_send_wr *wr, struct rct_send_wqe **out)
{
  enum rct_qp_state s = b->attr.qp_state;
  struct rct_send_wqe *w;
  uint64_t total = 0;
  if (out)
    *out = 0;
  if (s == RCT_QPS_RESET || s == RCT_QPS_INIT || s == RCT_QPS_RTR)
    return RCT_EINVAL;
  if ((unsigned)wr->opcode >= RCT_WR_COUNT || !(b->ops->wr_opcodes & (1u << wr->opcode)) ||
      wr->num_sge < 0 || wr->num_sge > RCT_MAX_SGE || (wr->num_sge && !wr->sg_list))
    return RCT_EINVAL;
  if (rct_wr_atomic(wr->opcode) && (wr->num_sge != 1 || wr->sg_list[0].length != RCT_ATOMIC_LEN))
    return RCT_EINVAL;                   /* [REQ-ATOM-1] */
  if (s == RCT_QPS_ERR || s == RCT_QPS_SQE) {
    flush_one(b, b->init.send_cq, wr->wr_id, rct_wr_to_wc_opcode(wr->opcode));
    return RCT_OK;
  }
  if (b->sq_tail - b->sq_head >= b->init.sq_size)
    return RCT_ENOSPC;
  w = SQ_AT(b, b->sq_tail);
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
  b->sq_tail++;
  rct_qp_mark_ready(b);
  if (out)
    *out = w;
  return RCT_OK;
}

/* [QP-STATE-5] */
int rct_qpb_post_recv(struct rct_qp_base *b, const struct rct_recv_wr *wr)
{
  enum rct_qp_state s = b->attr.qp_state;
  struct rct_recv_wqe *r;
  uint64_t total = 0;
  if (s == RCT_QPS_RESET)
    return RCT_EINVAL;
  if (wr->num_sge < 0 || wr->num_sge > RCT_MAX_SGE || (wr->num_sge && !wr->sg_list))
    return RCT_EINVAL;
  if (s == RCT_QPS_ERR) {
    flush_one(b, b->init.recv_cq, wr->wr_id, RCT_WC_RECV);
    return RCT_OK;
  }
  if (b->rq_tail - b->rq_head >= b->init.rq_size)
    return RCT_ENOSPC;
  r = RQ_AT(b, b->rq_tail);
  r->wr_id = wr->wr_id;
  r->num_sge = wr->num_sge;
  for (int i = 0; i < wr->num_sge; i++) {
    r->sge[i] = wr->sg_list[i];
    total += wr->sg_list[i].length;
  }
  r->length = total > 0xffffffffull ? 0xffffffffu : (uint32_t)total;
  b->rq_tail++;
  return RCT_OK;
}
