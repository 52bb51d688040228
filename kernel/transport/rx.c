/*
 * rx.c: frames in. rct_handle_frame validates a received frame in the fixed
 * order of proto-spec rx.md (Ethernet, IPv4, UDP, length, ICRC, BTH, headers,
 * QP, peer, state), counts exactly one drop counter for a frame it rejects,
 * and hands a valid frame to its role: requests to the responder (resp.c),
 * ACKs and READ responses to the completer (comp.c). The caller's buffer is
 * only read, and only during the call. [RX-ORDER-1] [RX-ORDER-2] [RX-ORDER-3] [CNT-QP-2]
 */
#include "rct_int.h"

static enum rct_rx_result drop_dev(uint64_t *ctr)
{
	(*ctr)++;
	return RCT_RX_DROPPED;
}

/* Drop at the QP level: exactly one counter per dropped frame [CNT-QP-2]. */
static enum rct_rx_result drop_qp(uint64_t *ctr)
{
	(*ctr)++;
	return RCT_RX_DROPPED;
}

/* Opcode allowed for this QP's mode? [OPC-VAL-2] [SR-WIRE-7] */
static bool opcode_ok(const struct rct_qp *qp, uint32_t f)
{
	if ((f & OPF_SR) && !qp->sr)
		return false;
	if (qp->sr && (f & OPF_REQ) && !(f & OPF_SR))
		return false;
	return true;
}

/* [RX-ORDER-1]: steps 1..10 here, step 11 in the roles. */
enum rct_rx_result rct_handle_frame(struct rct_dev *dev, uint64_t now, const uint8_t *buf, size_t len)
{
	struct rct_pkt p;
	struct rct_qp *qp;
	enum rct_qp_state s;
	int r, rx;
	dev->cnt.rx_frames++;
	if (len > 0xffff)
		return drop_dev(&dev->cnt.rx_truncated);
	r = rct_wire_parse_base(&p, buf, (uint32_t)len, (dev->attr.flags & RCT_DEV_ROCE_V1) != 0);
	if (r == RCT_PARSE_NOT_ROCE) {
		dev->cnt.rx_not_roce++;                  /* steps 1, 3 */
		return RCT_RX_NOT_ROCE;
	}
	if (r == RCT_PARSE_BAD_IP || (r != RCT_PARSE_TRUNC && p.h.dip != dev->attr.ipv4))
		return drop_dev(&dev->cnt.rx_bad_header);          /* step 2 */
	if (r == RCT_PARSE_TRUNC)
		return drop_dev(&dev->cnt.rx_truncated);           /* step 4 */
	if (!(dev->attr.flags & RCT_DEV_ICRC_OFFLOAD) && !rct_wire_icrc_ok(&p))
		return drop_dev(&dev->cnt.rx_icrc_err);            /* step 5 [ICRC-CALC-5] [RX-ORDER-2] */
	if (p.h.bth.tver != BTH_TVER || p.h.bth.pkey != BTH_PKEY_DEFAULT)
		return drop_dev(&dev->cnt.rx_bad_header);          /* step 6 [HDR-BTH-2] */
	if (r == RCT_PARSE_BAD_BTH)
		return drop_dev(&dev->cnt.rx_bad_opcode);          /* step 6 [OPC-VAL-2] */
	rx = rct_wire_parse_ext(&p);
	if (rx == RCT_PARSE_TRUNC)
		return drop_dev(&dev->cnt.rx_truncated);           /* step 7 [OPC-HDR-2] */
	qp = dev->attr.qp_lookup(dev->attr.lookup_ctx, p.h.bth.dqpn);
	if (!qp || qp->dev != dev)
		return drop_dev(&dev->cnt.rx_unknown_qp);          /* step 8 */
	qp->cnt.rx_frames++;
	qp->cnt.rx_bytes += p.frame_len;
	if (!opcode_ok(qp, p.opflags))
		return drop_qp(&qp->cnt.rx_bad_opcode);
	if (p.h.encap != qp->encap)
		return drop_qp(&qp->cnt.rx_wrong_encap);           /* step 9 [ENC-V1-3] */
	if (p.h.sip != qp->attr.ah.dipv4)
		return drop_qp(&qp->cnt.rx_wrong_peer);            /* step 9 */
	s = qp->attr.qp_state;
	if (p.opflags & OPF_REQ) {
		if (s != RCT_QPS_RTR && s != RCT_QPS_RTS && s != RCT_QPS_SQD)
			return drop_qp(&qp->cnt.rx_bad_state);     /* step 10 [QP-STATE-6] */
	} else if (s != RCT_QPS_RTS && s != RCT_QPS_SQD && s != RCT_QPS_SQE) {
		return drop_qp(&qp->cnt.rx_bad_state);
	}
	if (rx == RCT_PARSE_BAD_LEN)
		return drop_qp(&qp->cnt.rx_bad_length);            /* [OPC-LEN-5] */
	if (!(p.opflags & OPF_SUPPORTED) && (p.opflags & OPF_RESP))
		return drop_qp(&qp->cnt.rx_unexpected);            /* [OPC-VAL-1] */
	qp->cnt.rx_payload_bytes += p.paylen;
	if (p.opflags & OPF_REQ)
		rct_resp_handle(qp, now, &p);
	else
		rct_comp_handle(qp, now, &p);
	if (rct_req_has_work(qp) || rct_resp_has_work(qp))
		rct_qp_mark_ready(qp);
	return RCT_RX_OK;
}
