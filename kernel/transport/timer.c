/*
 * timer.c: the timers of a QP (a table of deadlines indexed by enum
 * rct_timer) and the time entry points: every deadline is written through
 * rct_timer_set / rct_timer_stop; rct_handle_timeout runs the expired ones
 * (RNR, retransmission, early probe: the completer's; ACK hold: the
 * responder's); rct_next_timeout reports the earliest. Device-wide forms walk
 * every QP.
 */
#include "rct_int.h"

void rct_timer_set(struct rct_qp *qp, enum rct_timer t, uint64_t deadline)
{
  qp->timer[t] = deadline;
}

void rct_timer_stop(struct rct_qp *qp, enum rct_timer t)
{
  qp->timer[t] = RCT_NEVER;
}

/* Stop every timer of the QP (RESET, ERR). */
void rct_timer_stop_all(struct rct_qp *qp)
{
  for (int t = 0; t < RCT_TIMER_COUNT; t++)
    rct_timer_stop(qp, (enum rct_timer)t);
}

uint64_t rct_next_timeout(const struct rct_qp *qp)
{
  uint64_t t = RCT_NEVER;
  for (int i = 0; i < RCT_TIMER_COUNT; i++)
    if (qp->timer[i] < t)
      t = qp->timer[i];
  return t;
}

/* What an expired timer runs, in this order; each is stopped before. */
static const struct {
  enum rct_timer t;
  void (*fire)(struct rct_qp *qp, uint64_t now);
} expiry[] = {
  { RCT_TIMER_RNR, rct_comp_rnr_timeout },     /* [REQ-RNR-1] */
  { RCT_TIMER_RETRANS, rct_comp_timeout },     /* [REQ-TMO-2] */
  { RCT_TIMER_PROBE, rct_comp_probe },         /* [REQ-TMO-8] */
  { RCT_TIMER_ACK, rct_resp_ack_timeout },     /* the held ACK may go [RESP-ACK-5] */
};

void rct_handle_timeout(struct rct_qp *qp, uint64_t now)
{
  for (size_t i = 0; i < sizeof(expiry) / sizeof(expiry[0]); i++) {
    if (qp->timer[expiry[i].t] > now)
      continue;
    rct_timer_stop(qp, expiry[i].t);
    expiry[i].fire(qp, now);
  }
  if (rct_req_has_work(qp) || rct_resp_has_work(qp))
    rct_qp_mark_ready(qp);
}

void rct_dev_handle_timeout(struct rct_dev *dev, uint64_t now)
{
  for (struct rct_qp *qp = dev->qps; qp; qp = qp->next)
    if (rct_next_timeout(qp) <= now)
      rct_handle_timeout(qp, now);
}

uint64_t rct_dev_next_timeout(const struct rct_dev *dev)
{
  uint64_t t = RCT_NEVER;
  for (const struct rct_qp *qp = dev->qps; qp; qp = qp->next) {
    uint64_t q = rct_next_timeout(qp);
    if (q < t)
      t = q;
  }
  return t;
}
