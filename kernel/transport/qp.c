/*
 * qp.c: the QP base's life cycle and state machine, for every QP type:
 * rct_qpb_init / rct_qpb_destroy, rct_qpb_modify (the common rules of
 * [QP-STATE-2], the type's table of transitions and attributes, what entering
 * RESET and ERR does), rct_qpb_query, and rct_qp_to_err. What a state change
 * does to a type's own state it does through its operations (struct
 * rct_qp_ops: rc.c, ud.c); this file calls no type by name. [QP-*]
 */
#include "core_int.h"

uint32_t rct_mtu_bytes(enum rct_mtu mtu)
{
  return (mtu >= RCT_MTU_256 && mtu <= RCT_MTU_4096) ? 128u << mtu : 0; /* [OPC-LEN-1] */
}

static bool pow2(uint32_t n) { return n && !(n & (n - 1)); }

/* [QP-STATE-1] The storage checks every type shares; b is zeroed first
 * (a type clears its own state after the base). */
int rct_qpb_init(struct rct_dev *dev, struct rct_qp_base *b, const struct rct_qp_init_attr *init,
                 enum rct_qp_type type, const struct rct_qp_ops *ops)
{
  if (!dev || !b || !init || (init->qpn & ~RCT_QPN_MASK) ||
      (init->qpn < 2 && !(type == RCT_QPT_UD && init->qpn == RCT_QPN_GSI)))   /* [SEC-RAND-4] */
    return RCT_EINVAL;
  if (!pow2(init->sq_size) || !pow2(init->rq_size) || !init->sq || !init->rq ||
      (init->rd_size && (!pow2(init->rd_size) || !init->rd)) || !init->send_cq || !init->recv_cq ||
      (init->srq && init->srq->dev != dev))
    return RCT_EINVAL;
  RCT_MEMSET(b, 0, sizeof(*b));
  b->dev = dev;
  b->ops = ops;
  b->type = (uint8_t)type;
  b->init = *init;
  b->attr.qp_state = RCT_QPS_RESET;   /* [QP-STATE-1] */
  b->attr.path_mtu = RCT_MTU_1024;
  b->mtu = 1024;
  b->mtu_shift = 10;
  rct_timer_stop_all(b);
  rct_dev_add_qp(dev, b);
  if (init->srq)
    init->srq->nqp++;
  return RCT_OK;
}

void rct_qpb_destroy(struct rct_qp_base *b)
{
  if (b->init.srq)
    b->init.srq->nqp--;
  rct_ev_forget(&b->ev);
  rct_dev_remove_qp(b->dev, b);
  b->dev = 0;
}

#define M(x) RCT_QP_##x

static const struct rct_qp_transition *find_transition(const struct rct_qp_ops *ops,
                                                       enum rct_qp_state from, enum rct_qp_state to)
{
  for (uint32_t i = 0; i < ops->ntransitions; i++)
    if (ops->transitions[i].from == from && ops->transitions[i].to == to)
      return &ops->transitions[i];
  return 0;
}

/* Range checks of [QP-STATE-2]. */
static bool attr_values_ok(const struct rct_qp_attr *a, uint32_t mask)
{
  if ((mask & M(ACCESS_FLAGS)) && (a->qp_access_flags & ~RCT_ACCESS_ALL))
    return false;
  if ((mask & M(PKEY_INDEX)) && a->pkey_index != RCT_PKEY_INDEX)
    return false;
  if ((mask & M(PORT)) && a->port_num != RCT_PORT_NUM)
    return false;
  if ((mask & M(PATH_MTU)) && !rct_mtu_bytes(a->path_mtu))
    return false;
  if ((mask & M(TIMEOUT)) && a->timeout > 31)
    return false;
  if ((mask & M(RETRY_CNT)) && a->retry_cnt > 7)
    return false;
  if ((mask & M(RNR_RETRY)) && a->rnr_retry > 7)
    return false;
  if ((mask & M(MIN_RNR_TIMER)) && a->min_rnr_timer > 31)
    return false;
  if ((mask & M(RQ_PSN)) && (a->rq_psn & ~PSN_MASK))
    return false;
  if ((mask & M(SQ_PSN)) && (a->sq_psn & ~PSN_MASK))
    return false;
  if ((mask & M(DEST_QPN)) && (a->dest_qp_num & ~RCT_QPN_MASK))
    return false;
  if ((mask & M(MAX_QP_RD_ATOMIC)) && a->max_rd_atomic > RCT_MAX_RD_ATOMIC)
    return false;
  if ((mask & M(MAX_INFLIGHT)) && a->max_inflight >= PSN_HALF)
    return false;
  return true;
}

static void apply_attrs(struct rct_qp_base *b, const struct rct_qp_attr *a, uint32_t mask)
{
  struct rct_qp_attr *q = &b->attr;
  if (mask & M(ACCESS_FLAGS)) q->qp_access_flags = a->qp_access_flags;
  if (mask & M(PKEY_INDEX)) q->pkey_index = a->pkey_index;
  if (mask & M(AV)) q->ah = a->ah;
  if (mask & M(PATH_MTU)) {
    q->path_mtu = a->path_mtu;
    b->mtu = rct_mtu_bytes(a->path_mtu);
    b->mtu_shift = (uint8_t)(7 + a->path_mtu);
  }
  if (mask & M(TIMEOUT)) q->timeout = a->timeout;
  if (mask & M(RETRY_CNT)) q->retry_cnt = a->retry_cnt;
  if (mask & M(RNR_RETRY)) q->rnr_retry = a->rnr_retry;
  if (mask & M(MIN_RNR_TIMER)) q->min_rnr_timer = a->min_rnr_timer;
  if (mask & M(RQ_PSN)) q->rq_psn = a->rq_psn;
  if (mask & M(SQ_PSN)) q->sq_psn = a->sq_psn;
  if (mask & M(MAX_QP_RD_ATOMIC)) q->max_rd_atomic = a->max_rd_atomic;
  if (mask & M(MAX_DEST_RD_ATOMIC)) q->max_dest_rd_atomic = a->max_dest_rd_atomic;
  if (mask & M(DEST_QPN)) q->dest_qp_num = a->dest_qp_num;
  if (mask & M(SR)) q->sr_enable = a->sr_enable;
  if (mask & M(ADAPTIVE_RTO)) {
    q->adaptive_rto = a->adaptive_rto;
    q->min_rto_ns = a->min_rto_ns;
  }
  if (mask & M(MAX_INFLIGHT)) q->max_inflight = a->max_inflight;
  if (mask & M(PROBE_SLACK)) q->probe_slack_ns = a->probe_slack_ns;
  if (mask & M(QKEY)) q->qkey = a->qkey;
}

/* Entering RESET discards everything but the counters (and, RC, a parting
 * ACK not yet sent) [QP-STATE-3]. */
static void qp_reset(struct rct_qp_base *b)
{
  if (b->ops->leave)
    b->ops->leave(b);
  b->sq_head = b->sq_tail = 0;
  b->rq_head = b->rq_tail = 0;
  if (b->ops->reset)
    b->ops->reset(b);
  rct_timer_stop_all(b);
}

/* [QP-ERR-1] [QP-ERR-2] [QP-ERR-3] The event says whether the caller asked. */
static void qp_enter_err(struct rct_qp_base *b, enum rct_qp_err_cause cause)
{
  if (b->attr.qp_state == RCT_QPS_ERR)
    return;
  if (b->ops->leave)
    b->ops->leave(b);
  b->attr.qp_state = RCT_QPS_ERR;
  rct_timer_stop_all(b);
  if (b->ops->flush)
    b->ops->flush(b);
  rct_ev_qp_err(b, cause);
  if (b->init.srq)
    rct_ev_qp_last_wqe(b);                /* the flush took every taken WQE [SRQ-ERR-2] */
}

void rct_qp_to_err(struct rct_qp_base *b)
{
  qp_enter_err(b, RCT_QP_ERR_TRANSPORT);
}

void rct_qp_to_sqe(struct rct_qp_base *b)
{
  if (b->attr.qp_state == RCT_QPS_RTS || b->attr.qp_state == RCT_QPS_SQD)
    b->attr.qp_state = RCT_QPS_SQE;
}

int rct_qpb_modify(struct rct_qp_base *b, const struct rct_qp_attr *attr, uint32_t mask)
{
  enum rct_qp_state cur = b->attr.qp_state, to = cur;
  const struct rct_qp_transition *tr;
  if (mask & M(STATE))
    to = attr->qp_state;
  if (!(mask & M(STATE)) || to >= RCT_QPS_COUNT)
    return RCT_EINVAL;
  /* [QP-STATE-2]: to RESET and to ERR take STATE alone */
  if ((to == RCT_QPS_RESET || to == RCT_QPS_ERR) && mask != M(STATE))
    return RCT_EINVAL;
  /* CUR_STATE, where the table lists it, must name the state the QP is in */
  if ((mask & M(CUR_STATE)) && attr->cur_qp_state != cur)
    return RCT_EINVAL;
  if (to == RCT_QPS_RESET) {
    qp_reset(b);
    b->attr.qp_state = RCT_QPS_RESET;
    return RCT_OK;
  }
  if (to == RCT_QPS_ERR) {
    qp_enter_err(b, RCT_QP_ERR_MODIFY);
    return RCT_OK;
  }
  tr = find_transition(b->ops, cur, to);
  if (!tr)
    return RCT_EINVAL;
  if ((mask & tr->required) != tr->required || (mask & ~(tr->required | tr->optional)))
    return RCT_EINVAL;
  if (!attr_values_ok(attr, mask))
    return RCT_EINVAL;
  if (b->ops->check && b->ops->check(b, to, attr, mask) != RCT_OK)
    return RCT_EINVAL;
  apply_attrs(b, attr, mask);
  if (b->ops->enter)
    b->ops->enter(b, cur, to);
  b->attr.qp_state = to;
  if (to == RCT_QPS_RTS)
    rct_qp_mark_ready(b);
  return RCT_OK;
}
#undef M

int rct_qpb_query(const struct rct_qp_base *b, struct rct_qp_attr *attr)
{
  *attr = b->attr;
  attr->cur_qp_state = b->attr.qp_state;
  if (b->ops->query)
    b->ops->query(b, attr);
  return RCT_OK;
}
