/*
 * rx.c: frames in. rct_handle_frame validates a received frame in the fixed
 * order of proto-spec rx.md (Ethernet, IPv4, UDP, length, ICRC, BTH, headers,
 * QP, peer, state), counts exactly one drop counter for a frame it rejects,
 * and hands a valid frame to its role: requests to the responder (resp.c),
 * ACKs and READ responses to the completer (comp.c). The caller's buffer is
 * only read, and only during the call. [RX-ORDER-1] [RX-ORDER-2] [RX-ORDER-3] [CNT-QP-2]
 */
#include "rct_int.h"

/* Opcode allowed for this QP's mode? [OPC-VAL-2] [SR-WIRE-7] */
static bool opcode_ok(const struct rct_qp *qp, uint32_t f)
{
  if ((f & OPF_SR) && !qp->sr)
    return false;
  if (qp->sr && (f & OPF_REQ) && !(f & OPF_SR))
    return false;
  return true;
}

/* Count a rejected frame: exactly one counter per dropped frame [CNT-QP-2]. */
static int reject_frame(uint64_t *ctr)
{
  (*ctr)++;
  return -1;
}

static bool reject_for_qp(uint64_t *ctr)
{
  (*ctr)++;
  return false;
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

/* Steps 9..10 and the checks of the frame against its QP. Returns true to deliver. */
static bool validate_for_qp(struct rct_qp *qp, const struct rct_pkt *p, int ext)
{
  enum rct_qp_state s = qp->attr.qp_state;
  bool req = (p->opflags & OPF_REQ) != 0;
  if (!opcode_ok(qp, p->opflags))
    return reject_for_qp(&qp->cnt.rx_bad_opcode);
  if (p->h.encap != qp->encap)
    return reject_for_qp(&qp->cnt.rx_wrong_encap);  /* step 9 [ENC-V1-3] */
  if (p->h.sip != qp->attr.ah.dipv4)
    return reject_for_qp(&qp->cnt.rx_wrong_peer);   /* step 9 */
  if (req ? (s != RCT_QPS_RTR && s != RCT_QPS_RTS && s != RCT_QPS_SQD)
          : (s != RCT_QPS_RTS && s != RCT_QPS_SQD && s != RCT_QPS_SQE)) {
    if (req && s == RCT_QPS_ERR && ext != RCT_PARSE_BAD_LEN && rct_resp_answer_in_err(qp, p))
      rct_qp_mark_ready(qp);                         /* a duplicate: the parting ACK again [RESP-ACK-6] */
    return reject_for_qp(&qp->cnt.rx_bad_state);    /* step 10 [QP-STATE-6] */
  }
  if (ext == RCT_PARSE_BAD_LEN)
    return reject_for_qp(&qp->cnt.rx_bad_length);   /* [OPC-LEN-5] */
  if (!(p->opflags & OPF_SUPPORTED) && !req)
    return reject_for_qp(&qp->cnt.rx_unexpected);   /* [OPC-VAL-1] */
  return true;
}

/* [RX-ORDER-1]: steps 1..10 here, step 11 in the roles. */
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
  struct rct_qp *qp;
  enum rct_rx_result res;
  int ext = 0;
  dev->cnt.rx_frames++;
  if (validate_frame(dev, &p, buf, len, flags, &res, &ext))
    return res;
  qp = dev->attr.qp_lookup(dev->attr.lookup_ctx, p.h.bth.dqpn);
  if (!qp || qp->dev != dev) {
    dev->cnt.rx_unknown_qp++;                          /* step 8 */
    return RCT_RX_DROPPED;
  }
  qp->cnt.rx_frames++;
  qp->cnt.rx_bytes += p.frame_len;
  if (!validate_for_qp(qp, &p, ext))
    return RCT_RX_DROPPED;
  qp->cnt.rx_payload_bytes += p.paylen;
  if (p.opflags & OPF_REQ)
    rct_resp_handle(qp, now, &p);                      /* step 11 */
  else
    rct_comp_handle(qp, now, &p);
  if (rct_req_has_work(qp) || rct_resp_has_work(qp))
    rct_qp_mark_ready(qp);
  return RCT_RX_OK;
}
