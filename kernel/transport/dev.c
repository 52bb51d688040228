/*
 * dev.c: the device: its list of QPs and its ready list, the QPs that may
 * have a frame to send (round robin in rct_dev_poll_transmit). A QP joins
 * the ready list when work arrives (rct_qp_mark_ready) and leaves it when a
 * poll finds nothing to send.
 */
#include "rct_int.h"

void rct_dev_init(struct rct_dev *dev, const struct rct_dev_attr *attr)
{
  RCT_MEMSET(dev, 0, sizeof(*dev));
  dev->attr = *attr;
  rct_crc32_update(0, 0, 0);           /* build the CRC tables now */
}

/* Link a QP into the device's list of QPs (rct_qp_init). */
void rct_dev_add_qp(struct rct_dev *dev, struct rct_qp *qp)
{
  qp->next = dev->qps;
  dev->qps = qp;
}

/* Unlink a QP from the device's QP list and ready list (rct_qp_destroy). */
void rct_dev_remove_qp(struct rct_dev *dev, struct rct_qp *qp)
{
  struct rct_qp **pp;
  for (pp = &dev->qps; *pp; pp = &(*pp)->next)
    if (*pp == qp) {
      *pp = qp->next;
      break;
    }
  if (qp->on_ready) {
    struct rct_qp *prev = 0, *it;
    for (it = dev->ready_head; it && it != qp; it = it->ready_next)
      prev = it;
    if (prev)
      prev->ready_next = qp->ready_next;
    else
      dev->ready_head = qp->ready_next;
    if (dev->ready_tail == qp)
      dev->ready_tail = prev;
  }
}

void rct_qp_mark_ready(struct rct_qp *qp)
{
  struct rct_dev *dev = qp->dev;
  if (qp->on_ready)
    return;
  qp->on_ready = 1;
  qp->ready_next = 0;
  if (dev->ready_tail)
    dev->ready_tail->ready_next = qp;
  else
    dev->ready_head = qp;
  dev->ready_tail = qp;
}

static void ready_remove_head(struct rct_dev *dev)
{
  struct rct_qp *qp = dev->ready_head;
  dev->ready_head = qp->ready_next;
  if (!dev->ready_head)
    dev->ready_tail = 0;
  qp->on_ready = 0;
  qp->ready_next = 0;
}

int rct_dev_poll_transmit(struct rct_dev *dev, uint64_t now, struct rct_frame *out)
{
  while (dev->ready_head) {
    struct rct_qp *qp = dev->ready_head;
    if (rct_poll_transmit(qp, now, out)) {
      /* round robin: move it to the tail */
      if (qp->ready_next) {
        ready_remove_head(dev);
        rct_qp_mark_ready(qp);
      }
      return 1;
    }
    ready_remove_head(dev);
  }
  return 0;
}
