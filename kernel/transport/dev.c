/*
 * dev.c: the device: its list of QPs (of every type) and its ready list,
 * the QPs that may have a frame to send (round robin in
 * rct_dev_poll_transmit). A QP joins the ready list when work arrives
 * (rct_qp_mark_ready) and leaves it when a poll finds nothing to send.
 * A QP's frames come from its type (ops->poll).
 */
#include "core_int.h"

void rct_dev_init(struct rct_dev *dev, const struct rct_dev_attr *attr)
{
  RCT_MEMSET(dev, 0, sizeof(*dev));
  dev->attr = *attr;
  rct_crc32_update(0, 0, 0);           /* build the CRC tables now */
}

/* Link a QP into the device's list of QPs (rct_qpb_init). */
void rct_dev_add_qp(struct rct_dev *dev, struct rct_qp_base *b)
{
  b->next = dev->qps;
  dev->qps = b;
}

/* Unlink a QP from the device's QP list and ready list (rct_qpb_destroy). */
void rct_dev_remove_qp(struct rct_dev *dev, struct rct_qp_base *b)
{
  struct rct_qp_base **pp;
  for (pp = &dev->qps; *pp; pp = &(*pp)->next)
    if (*pp == b) {
      *pp = b->next;
      break;
    }
  if (b->on_ready) {
    struct rct_qp_base *prev = 0, *it;
    for (it = dev->ready_head; it && it != b; it = it->ready_next)
      prev = it;
    if (prev)
      prev->ready_next = b->ready_next;
    else
      dev->ready_head = b->ready_next;
    if (dev->ready_tail == b)
      dev->ready_tail = prev;
  }
}

void rct_qp_mark_ready(struct rct_qp_base *b)
{
  struct rct_dev *dev = b->dev;
  if (b->on_ready)
    return;
  b->on_ready = 1;
  b->ready_next = 0;
  if (dev->ready_tail)
    dev->ready_tail->ready_next = b;
  else
    dev->ready_head = b;
  dev->ready_tail = b;
}

static void ready_remove_head(struct rct_dev *dev)
{
  struct rct_qp_base *b = dev->ready_head;
  dev->ready_head = b->ready_next;
  if (!dev->ready_head)
    dev->ready_tail = 0;
  b->on_ready = 0;
  b->ready_next = 0;
}

int rct_qpb_poll_transmit(struct rct_qp_base *b, uint64_t now, struct rct_frame *out)
{
  out->nseg = 0;
  return b->ops->poll(b, now, out);
}

int rct_dev_poll_transmit(struct rct_dev *dev, uint64_t now, struct rct_frame *out)
{
  while (dev->ready_head) {
    struct rct_qp_base *b = dev->ready_head;
    if (rct_qpb_poll_transmit(b, now, out)) {
      /* round robin: move it to the tail */
      if (b->ready_next) {
        ready_remove_head(dev);
        rct_qp_mark_ready(b);
      }
      return 1;
    }
    ready_remove_head(dev);
  }
  return 0;
}
