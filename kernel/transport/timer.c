/*
 * timer.c: the timers of a QP (a table of deadlines indexed by enum
 * rct_timer) and the time entry points: every deadline is written through
 * rct_timer_set / rct_timer_stop; rct_qpb_handle_timeout hands a QP whose
 * deadline is due to its type (ops->timeout: RC runs the expired ones in
 * rc.c's order); rct_qpb_next_timeout reports the earliest. Device-wide
 * forms walk every QP.
 */
#include "core_int.h"

void rct_timer_set(struct rct_qp_base *b, enum rct_timer t, uint64_t deadline)
{
  b->timer[t] = deadline;
}

void rct_timer_stop(struct rct_qp_base *b, enum rct_timer t)
{
  b->timer[t] = RCT_NEVER;
}

/* Stop every timer of the QP (RESET, ERR). */
void rct_timer_stop_all(struct rct_qp_base *b)
{
  for (int t = 0; t < RCT_TIMER_COUNT; t++)
    rct_timer_stop(b, (enum rct_timer)t);
}

uint64_t rct_qpb_next_timeout(const struct rct_qp_base *b)
{
  uint64_t t = RCT_NEVER;
  for (int i = 0; i < RCT_TIMER_COUNT; i++)
    if (b->timer[i] < t)
      t = b->timer[i];
  return t;
}

void rct_qpb_handle_timeout(struct rct_qp_base *b, uint64_t now)
{
  if (b->ops->timeout)
    b->ops->timeout(b, now);
  if (b->ops->has_work(b))
    rct_qp_mark_ready(b);
}

void rct_dev_handle_timeout(struct rct_dev *dev, uint64_t now)
{
  for (struct rct_qp_base *b = dev->qps; b; b = b->next)
    if (rct_qpb_next_timeout(b) <= now)
      rct_qpb_handle_timeout(b, now);
}

uint64_t rct_dev_next_timeout(const struct rct_dev *dev)
{
  uint64_t t = RCT_NEVER;
  for (const struct rct_qp_base *b = dev->qps; b; b = b->next) {
    uint64_t q = rct_qpb_next_timeout(b);
    if (q < t)
      t = q;
  }
  return t;
}
