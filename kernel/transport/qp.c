/*
 * qp.c: the QP object and its state machine: rct_qp_init / rct_qp_destroy,
 * rct_qp_modify (the IBTA transitions and their attributes, what entering
 * RESET, RTR, RTS and ERR does to the roles), rct_qp_query, and
 * rct_qp_to_err. The roles live in req.c, comp.c, resp.c and sr_resp.c;
 * frames in are validated in rx.c, frames out assembled in tx.c; the device
 * and its ready list are in dev.c, posting in post.c, timers in timer.c.
 * [QP-*]
 */
#include "rct_int.h"

uint32_t rct_mtu_bytes(enum rct_mtu mtu)
{
  return (mtu >= RCT_MTU_256 && mtu <= RCT_MTU_4096) ? 128u << mtu : 0; /* [OPC-LEN-1] */
}

/* ---------------------------------------------------------------- */
/* QP life cycle and state machine [QP-STATE-*]                      */
/* ---------------------------------------------------------------- */

static bool pow2(uint32_t n) { return n && !(n & (n - 1)); }

int rct_qp_init(struct rct_dev *dev, struct rct_qp *qp, const struct rct_qp_init_attr *init)
{
  if (!dev || !qp || !init || (init->qpn & ~RCT_QPN_MASK) || init->qpn < 2)
    return RCT_EINVAL;
  if (!pow2(init->sq_size) || !pow2(init->rq_size) || !init->sq || !init->rq ||
      (init->rd_size && (!pow2(init->rd_size) || !init->rd)) || !init->send_cq || !init->recv_cq)
    return RCT_EINVAL;
  RCT_MEMSET(qp, 0, sizeof(*qp));
  qp->dev = dev;
  qp->init = *init;
  qp->attr.qp_state = RCT_QPS_RESET;   /* [QP-STATE-1] */
  qp->attr.path_mtu = RCT_MTU_1024;
  qp->mtu = 1024;
  qp->mtu_shift = 10;
  rct_timer_stop_all(qp);
  rct_dev_add_qp(dev, qp);
  return RCT_OK;
}

bool rct_qp_release_ack(struct rct_qp *qp)
{
  if (!rct_resp_release_ack(qp))                       /* [RESP-ACK-5] */
    return false;
  rct_qp_mark_ready(qp);
  return true;
}

void rct_qp_destroy(struct rct_qp *qp)
{
  rct_ev_forget(&qp->ev);
  rct_dev_remove_qp(qp->dev, qp);
  qp->dev = 0;
}

/* Allowed transitions with required and optional attributes (errors.md table). */
#define M(x) RCT_QP_##x
#define EXT (M(SR) | M(ADAPTIVE_RTO) | M(MAX_INFLIGHT) | M(PROBE_SLACK))
struct qp_transition {
  uint8_t from, to;
  uint32_t required, optional;
};
static const struct qp_transition qp_transitions[] = {
  { RCT_QPS_RESET, RCT_QPS_INIT, M(STATE) | M(ACCESS_FLAGS) | M(PKEY_INDEX) | M(PORT), 0 },
  { RCT_QPS_INIT, RCT_QPS_INIT, M(STATE), M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS) },
  { RCT_QPS_INIT, RCT_QPS_RTR, M(STATE) | M(AV) | M(PATH_MTU) | M(DEST_QPN) | M(RQ_PSN) |
    M(MAX_DEST_RD_ATOMIC) | M(MIN_RNR_TIMER), M(ACCESS_FLAGS) | M(PKEY_INDEX) | EXT },
  { RCT_QPS_RTR, RCT_QPS_RTS, M(STATE) | M(SQ_PSN) | M(TIMEOUT) | M(RETRY_CNT) | M(RNR_RETRY) |
    M(MAX_QP_RD_ATOMIC), M(CUR_STATE) | M(ACCESS_FLAGS) | M(MIN_RNR_TIMER) | M(ADAPTIVE_RTO) |
    M(MAX_INFLIGHT) | M(PROBE_SLACK) },
  { RCT_QPS_RTS, RCT_QPS_RTS, M(STATE), M(CUR_STATE) | M(ACCESS_FLAGS) | M(MIN_RNR_TIMER) |
    M(ADAPTIVE_RTO) | M(MAX_INFLIGHT) | M(PROBE_SLACK) },
  { RCT_QPS_RTS, RCT_QPS_SQD, M(STATE), 0 },
  { RCT_QPS_SQD, RCT_QPS_RTS, M(STATE), M(CUR_STATE) | M(ACCESS_FLAGS) | M(MIN_RNR_TIMER) |
    M(TIMEOUT) | M(RETRY_CNT) | M(RNR_RETRY) },
  { RCT_QPS_SQD, RCT_QPS_SQD, M(STATE), M(CUR_STATE) | M(TIMEOUT) | M(RETRY_CNT) | M(RNR_RETRY) |
    M(MAX_QP_RD_ATOMIC) | M(ACCESS_FLAGS) | M(MIN_RNR_TIMER) },
  { RCT_QPS_SQE, RCT_QPS_RTS, M(STATE), M(CUR_STATE) | M(ACCESS_FLAGS) },
};

static const struct qp_transition *find_transition(enum rct_qp_state from, enum rct_qp_state to)
{
  for (size_t i = 0; i < sizeof(qp_transitions) / sizeof(qp_transitions[0]); i++)
    if (qp_transitions[i].from == from && qp_transitions[i].to == to)
      return &qp_transitions[i];
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

/* [ENC-IP-3] the largest frame of the QP must fit the interface MTU:
 * IPv4 20 + UDP 8 + BTH 12 + RETH 16 + ImmDt 4 (+ SRXH 8) + path MTU + ICRC 4. */
static bool frame_fits(const struct rct_qp *qp, const struct rct_qp_attr *a, uint32_t mask)
{
  uint32_t lim = qp->dev->attr.ip_mtu;
  bool sr = (mask & M(SR)) ? a->sr_enable : qp->attr.sr_enable;
  if (!lim)
    return true;
  return 20 + 8 + 12 + 16 + 4 + (sr ? SRETH_LEN : 0) + rct_mtu_bytes(a->path_mtu) + 4 <= lim;
}

static void apply_attrs(struct rct_qp *qp, const struct rct_qp_attr *a, uint32_t mask)
{
  struct rct_qp_attr *q = &qp->attr;
  if (mask & M(ACCESS_FLAGS)) q->qp_access_flags = a->qp_access_flags;
  if (mask & M(PKEY_INDEX)) q->pkey_index = a->pkey_index;
  if (mask & M(AV)) q->ah = a->ah;
  if (mask & M(PATH_MTU)) {
    q->path_mtu = a->path_mtu;
    qp->mtu = rct_mtu_bytes(a->path_mtu);
    qp->mtu_shift = (uint8_t)(7 + a->path_mtu);
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
}

/* Does the responder answer requests in this state (RTR, RTS, SQD)? [QP-STATE-6] */
static bool resp_active(enum rct_qp_state s)
{
  return s == RCT_QPS_RTR || s == RCT_QPS_RTS || s == RCT_QPS_SQD;
}

/* Leaving a state where the responder answers: an ACK it owes or holds
 * goes out first, as the QP's parting frame [RESP-ACK-6]. */
static void part(struct rct_qp *qp)
{
  if (resp_active(qp->attr.qp_state) && rct_resp_part(qp))
    rct_qp_mark_ready(qp);
}

/* Entering RESET discards everything but the counters (and a parting ACK
 * not yet sent) [QP-STATE-3]. */
static void qp_reset(struct rct_qp *qp)
{
  part(qp);
  qp->sq_head = qp->sq_tail = 0;
  qp->rq_head = qp->rq_tail = 0;
  rct_req_reset(qp);
  rct_comp_reset(qp);
  rct_resp_reset(qp, true);
  rct_timer_stop_all(qp);
}

static void qp_enter_err(struct rct_qp *qp, enum rct_qp_err_cause cause);

int rct_qp_modify(struct rct_qp *qp, const struct rct_qp_attr *attr, uint32_t mask)
{
  enum rct_qp_state cur = qp->attr.qp_state, to = cur;
  const struct qp_transition *tr;
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
    qp_reset(qp);
    qp->attr.qp_state = RCT_QPS_RESET;
    return RCT_OK;
  }
  if (to == RCT_QPS_ERR) {
    qp_enter_err(qp, RCT_QP_ERR_MODIFY);
    return RCT_OK;
  }
  tr = find_transition(cur, to);
  if (!tr)
    return RCT_EINVAL;
  if ((mask & tr->required) != tr->required || (mask & ~(tr->required | tr->optional)))
    return RCT_EINVAL;
  if (!attr_values_ok(attr, mask))
    return RCT_EINVAL;
  if (to == RCT_QPS_RTR && qp->init.rd_size < attr->max_dest_rd_atomic)
    return RCT_EINVAL;
  if (to == RCT_QPS_RTR && !frame_fits(qp, attr, mask))
    return RCT_EINVAL;
  apply_attrs(qp, attr, mask);
  if (cur == RCT_QPS_INIT && to == RCT_QPS_RTR) {
    qp->sr = qp->attr.sr_enable;         /* [SR-NEG-2] fixed at RTR */
    qp->encap = (qp->dev->attr.flags & RCT_DEV_ROCE_V1) && qp->attr.ah.roce_v1
                ? RCT_ENCAP_V1 : RCT_ENCAP_V2;   /* [ENC-V1-3] */
    qp->sport = qp->attr.ah.udp_sport ? qp->attr.ah.udp_sport
                : rct_udp_sport(qp->init.qpn, qp->attr.dest_qp_num);
    rct_resp_reset(qp, false);
  }
  if (cur == RCT_QPS_RTR && to == RCT_QPS_RTS) {
    rct_req_reset(qp);
    rct_comp_reset(qp);
  }
  qp->attr.qp_state = to;
  if (to == RCT_QPS_RTS)
    rct_qp_mark_ready(qp);
  return RCT_OK;
}
#undef M

int rct_qp_query(const struct rct_qp *qp, struct rct_qp_attr *attr)
{
  *attr = qp->attr;
  attr->cur_qp_state = qp->attr.qp_state;
  attr->sq_psn = rct_req_next_psn(qp);
  attr->rq_psn = rct_resp_epsn(qp);
  return RCT_OK;
}

/* [QP-ERR-1] [QP-ERR-2] [QP-ERR-3] The event says whether the caller asked. */
static void qp_enter_err(struct rct_qp *qp, enum rct_qp_err_cause cause)
{
  if (qp->attr.qp_state == RCT_QPS_ERR)
    return;
  part(qp);
  qp->attr.qp_state = RCT_QPS_ERR;
  rct_timer_stop_all(qp);
  rct_comp_flush(qp);
  rct_resp_flush(qp);
  rct_ev_qp_err(qp, cause);
}

void rct_qp_to_err(struct rct_qp *qp)
{
  qp_enter_err(qp, RCT_QP_ERR_TRANSPORT);
}
