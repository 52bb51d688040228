/*
 * rx.c: frames in. rct_handle_frame validates a received frame in the fixed
 * order of proto-spec rx.md (Ethernet, IPv4, UDP, length, ICRC, BTH, headers,
 * QP; then the QP's type checks the rest: peer, state, ...), counts exactly
 * one drop counter for a frame it rejects, and hands a frame to its QP's
 * type (ops->handle: rc.c, ud.c), which checks it against the QP and hands
 * it to its role. The caller's buffer is only read, and only during the
 * call. [RX-ORDER-1] [RX-ORDER-2] [RX-ORDER-3] [CNT-QP-2]
 */
#include "core_int.h"

/* Count a rejected frame: exactly one counter per dropped frame [CNT-QP-2]. */
static int reject_frame(uint64_t *ctr)
{
  (*ctr)++;
  return -1;
}

/* Steps 1..7 of [RX-ORDER-1]: everything checked before a QP is looked up.
 * Returns 0 if the frame may go on (*ext = the extension-parse result). */
static int validate_frame(struct rct_dev *dev, struct rct_pkt *p, const uint8_t *buf, size_t len,
                          uint32_t flags, enum rct_rx_result *res, int *ext)
{
  int r;
  *res = RCT_RX_DROPPED;
  if (len > 0xffff)
    return reject_frame(&dev->cnt.rx_truncated);
  r = rct_wire_parse_frame(p, buf, (uint32_t)len,
                           ((dev->attr.flags & RCT_DEV_ROCE_V1) ? RCT_WIRE_V1_OK : 0) |
                           ((flags & RCT_RX_IP_CHECKED) ? RCT_WIRE_IP_CHECKED : 0));
  if (r == RCT_PARSE_NOT_ROCE) {
    dev->cnt.rx_not_roce++;                          /* steps 1, 3 */
    *res = RCT_RX_NOT_ROCE;
    return -1;
  }
  if (r == RCT_PARSE_BAD_IP || (r != RCT_PARSE_TRUNC && p->h.dip != dev->attr.ipv4))
    return reject_frame(&dev->cnt.rx_bad_header);    /* step 2 */
  if (r == RCT_PARSE_TRUNC)
    return reject_frame(&dev->cnt.rx_truncated);     /* step 4 */
  if (!(dev->attr.flags & RCT_DEV_ICRC_OFFLOAD) && !(flags & RCT_RX_TRUSTED) && !rct_wire_icrc_ok(p))
    return reject_frame(&dev->cnt.rx_icrc_err);      /* step 5 [ICRC-CALC-5] [RX-ORDER-2] */
  if (p->h.bth.tver != BTH_TVER || p->h.bth.pkey != BTH_PKEY_DEFAULT)
    return reject_frame(&dev->cnt.rx_bad_header);    /* step 6 [HDR-BTH-2] */
  if (r == RCT_PARSE_BAD_BTH)
    return reject_frame(&dev->cnt.rx_bad_opcode);    /* step 6 [OPC-VAL-2] */
  *ext = rct_wire_parse_ext(p);
  if (*ext == RCT_PARSE_TRUNC)
    return reject_frame(&dev->cnt.rx_truncated);     /* step 7 [OPC-HDR-2] */
  return 0;
}

/* The QP with this QPN, of any type: the caller's qp_lookup_any, else its
 * (RC) qp_lookup. */
static struct rct_qp_base *lookup(struct rct_dev *dev, uint32_t qpn)
{
  struct rct_qp *qp;
  if (dev->attr.qp_lookup_any)
    return dev->attr.qp_lookup_any(dev->attr.lookup_ctx, qpn);
  qp = dev->attr.qp_lookup(dev->attr.lookup_ctx, qpn);
  return qp ? &qp->base : 0;
}

/* [RX-ORDER-1]: steps 1..8 here, 9..10 in the QP's type, step 11 in the roles. */
enum rct_rx_result rct_handle_frame(struct rct_dev *dev, uint64_t now, const uint8_t *buf, size_t len)
{
  return rct_handle_frame_ex(dev, now, buf, len, 0);
}

/* A frame in; flags RCT_RX_TRUSTED: it never left memory, no ICRC check;
 * RCT_RX_IP_CHECKED: an IP stack took it in (what it checked is skipped). */
enum rct_rx_result rct_handle_frame_ex(struct rct_dev *dev, uint64_t now, const uint8_t *buf,
                                       size_t len, uint32_t flags)
{
  struct rct_pkt p;
  struct rct_qp_base *b;
  enum rct_rx_result res;
  int ext = 0;
  dev->cnt.rx_frames++;
  if (validate_frame(dev, &p, buf, len, flags, &res, &ext))
    return res;
  b = lookup(dev, p.h.bth.dqpn);
  if (!b || b->dev != dev) {
    dev->cnt.rx_unknown_qp++;                          /* step 8 */
    return RCT_RX_DROPPED;
  }
  b->cnt.rx_frames++;
  b->cnt.rx_bytes += p.frame_len;
  if (!b->ops->handle(b, now, &p, ext))               /* steps 9..11 */
    return RCT_RX_DROPPED;
  if (b->ops->has_work(b))
    rct_qp_mark_ready(b);
  return RCT_RX_OK;
}
