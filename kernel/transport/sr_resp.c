/*
 * sr_resp.c: the selective-repeat half of the responder (proto-spec sr.md).
 * Within a window of RCT_SR_WINDOW PSNs past epsn, SEND and WRITE packets
 * are placed on their own (SRXH message offset, RETH in every WRITE packet,
 * receive WQE chosen by RSN); a bitmap remembers what is placed; epsn moves
 * over placed runs and completes messages in PSN order; out-of-order
 * arrivals are answered with a selective NAK. A READ executes in
 * sequence, or ahead of epsn when its requester says only READs may be
 * missing before it (SRXH_AFTER_READS). The go-back-N responder (resp.c)
 * calls rct_sr_resp_handle for in-window requests of an SR QP and shares
 * its checks and replies.
 * [SR-RESP-*]
 */
#include "rc_int.h"

/* epsn moves n PSNs forward: the window's bitmaps shift with it. */
static void sr_shift(struct rct_qp *qp, uint32_t n)
{
  if (n > RCT_SR_WINDOW)
    n = RCT_SR_WINDOW;
  rct_bm_shift(qp->resp.sr_rcvd, n);
  rct_bm_shift(qp->resp.sr_read, n);
}

/* epsn passes placed PSNs and the response PSNs of READs run ahead of it;
 * messages complete in order [SR-RESP-4] [SR-RESP-6]. */
static void sr_advance(struct rct_qp *qp)
{
  uint32_t n = 0;
  while (n < RCT_SR_WINDOW && (bm_test(qp->resp.sr_rcvd, n) || bm_test(qp->resp.sr_read, n))) {
    uint32_t slot = psn_add(qp->resp.epsn, n) & (RCT_SR_WINDOW - 1);
    uint8_t kind = qp->resp.sr_slot_kind[slot] & ~SLOT_SE;
    bool se = (qp->resp.sr_slot_kind[slot] & SLOT_SE) != 0;
    if (kind != SLOT_NONE) {
      if (kind == SLOT_END_RECV || kind == SLOT_END_RECV_IMM)
        rct_resp_recv_complete(qp, RCT_WC_SUCCESS, RCT_WC_RECV, se, qp->resp.sr_slot_len[slot],
                      kind == SLOT_END_RECV_IMM, qp->resp.sr_slot_imm[slot]);
      else if (kind == SLOT_END_WRITE_IMM)
        rct_resp_recv_complete(qp, RCT_WC_SUCCESS, RCT_WC_RECV_RDMA_WITH_IMM, se,
                      qp->resp.sr_slot_len[slot], true, qp->resp.sr_slot_imm[slot]);
      if (kind != SLOT_END_PLAIN)
        qp->resp.rsn_done = psn_add(qp->resp.rsn_done, 1);
      qp->resp.msn = psn_add(qp->resp.msn, 1);
      qp->resp.sr_slot_kind[slot] = SLOT_NONE;
    }
    n++;
  }
  sr_shift(qp, n);
  qp->resp.epsn = psn_add(qp->resp.epsn, n);
}

/* SEND payload into receive WQE number k (RSN - rsn_done) at MSG_OFFSET. */
static bool sr_place_send(struct rct_qp *qp, struct rct_pkt *p, uint32_t k)
{
  struct rct_recv_wqe *r = RQ_AT(&qp->base, qp->base.rq_head + k);
  struct rct_iov seg[RCT_FRAME_MAX_SEGS];
  int n;
  if ((uint64_t)p->h.sreth.offset + p->paylen > r->length) {
    rct_resp_fail(qp, AETH_NAK_INV_REQ, p->h.bth.psn, k == 0, RCT_WC_LOC_LEN_ERR);   /* [RESP-RECV-3] */
    return false;
  }
  n = rct_sge_translate(&qp->base, r->sge, r->num_sge, p->h.sreth.offset, p->paylen,
                        RCT_ACCESS_LOCAL_WRITE, seg, RCT_FRAME_MAX_SEGS);
  if (n < 0) {
    rct_resp_fail(qp, AETH_NAK_REM_OP, p->h.bth.psn, k == 0, RCT_WC_LOC_PROT_ERR);   /* [RESP-ACC-4] */
    return false;
  }
  rct_segs_copy(seg, n, p->payload, p->paylen);
  return true;
}

/* WRITE payload at its own RETH VA, checked per packet [SR-WIRE-4] [SR-RESP-9]. */
static bool sr_place_write(struct rct_qp *qp, struct rct_pkt *p, uint32_t k)
{
  bool taken = rct_resp_takes_recv(p->opflags) && k == 0;
  if ((uint64_t)p->h.sreth.offset + p->paylen > p->h.reth.dmalen) {
    rct_resp_fail(qp, AETH_NAK_INV_REQ, p->h.bth.psn, false, RCT_WC_SUCCESS);
    return false;
  }
  if (!rct_resp_rkey_ok(qp, p->h.reth.rkey, p->h.reth.va, p->paylen, RCT_ACCESS_REMOTE_WRITE)) {
    rct_resp_fail(qp, AETH_NAK_REM_ACC, p->h.bth.psn, taken, RCT_WC_LOC_ACCESS_ERR);   /* [RESP-ACC-5] */
    return false;
  }
  return rct_resp_place_write(qp, p->h.reth.rkey, p->h.reth.va, p, taken);
}

/* Remember what a placed LAST packet ends, for completion in PSN order [SR-RESP-4]. */
static void sr_note_end(struct rct_qp *qp, const struct rct_pkt *p)
{
  uint32_t f = p->opflags, slot = p->h.bth.psn & (RCT_SR_WINDOW - 1);
  if (!(f & OPF_LAST)) {
    qp->resp.sr_slot_kind[slot] = SLOT_NONE;
    return;
  }
  qp->resp.sr_slot_kind[slot] = (f & OPF_SEND) ? ((f & OPF_IMM) ? SLOT_END_RECV_IMM : SLOT_END_RECV)
                         : rct_resp_takes_recv(f) ? SLOT_END_WRITE_IMM : SLOT_END_PLAIN;
  if (p->h.bth.se)
    qp->resp.sr_slot_kind[slot] |= SLOT_SE;
  qp->resp.sr_slot_len[slot] = p->h.sreth.offset + p->paylen;
  qp->resp.sr_slot_imm[slot] = p->h.imm;
}

/* Place an SR SEND/WRITE packet on its own [SR-RESP-2] [SR-RESP-7] [SR-RESP-9]. */
static bool sr_place(struct rct_qp *qp, struct rct_pkt *p, uint32_t d)
{
  uint32_t f = p->opflags, k = (uint32_t)psn_diff(p->h.sreth.rsn, qp->resp.rsn_done);
  bool recv = (f & OPF_SEND) || rct_resp_takes_recv(f);
  if (!rct_resp_length_ok(qp, f, p->paylen)) {
    rct_resp_fail(qp, AETH_NAK_INV_REQ, p->h.bth.psn, false, RCT_WC_SUCCESS);
    return false;
  }
  if (recv && k >= qp->base.rq_tail - qp->base.rq_head) {
    if (d == 0)
      rct_resp_want_nak(qp, AETH_RNR_NAK | qp->base.attr.min_rnr_timer, p->h.bth.psn, false);
    return false;                                     /* [SR-RESP-7] */
  }
  if (!((f & OPF_SEND) ? sr_place_send(qp, p, k) : sr_place_write(qp, p, k)))
    return false;
  sr_note_end(qp, p);
  bm_set(qp->resp.sr_rcvd, d);
  if (d)
    qp->base.cnt.sr_placed_ooo++;
  return true;
}

/* An SR READ request d PSNs ahead of epsn runs now when its requester
 * vouches that only READs may be missing before it (SRXH_AFTER_READS): a
 * READ changes no memory, so none it overtakes can change what it reads.
 * Its response PSNs go into sr_read, not sr_rcvd (a selective NAK reports
 * placed packets; READ responses are the requester's to count), so that
 * epsn passes them. Anything else, or a READ that could not run now, is
 * dropped as before [SR-RESP-6]. */
static bool sr_read_ahead(struct rct_qp *qp, struct rct_pkt *p, uint32_t d)
{
  uint32_t n = qp_npkts(&qp->base, p->h.reth.dmalen);
  if (!(p->h.sreth.flags & SRXH_AFTER_READS) || n > RCT_SR_WINDOW - d || rct_resp_read_refusal(qp, p))
    return false;
  if (rct_bm_next(qp->resp.sr_rcvd, 0, d, d + n) < d + n || rct_bm_next(qp->resp.sr_read, 0, d, d + n) < d + n)
    return false;                                     /* overlaps what is held */
  rct_resp_exec_read(qp, p);
  for (uint32_t k = d; k < d + n; k++)
    bm_set(qp->resp.sr_read, k);
  qp->base.cnt.sr_placed_ooo++;
  return true;
}

/* An SR atomic runs only at epsn; one ahead of it is dropped and must come
 * again (its requester sends nothing past it, [SR-ATOM-2]) [SR-ATOM-1]. */
static void sr_atomic(struct rct_qp *qp, struct rct_pkt *p, int32_t d)
{
  if (d != 0) {
    qp->base.cnt.rx_out_of_seq++;
    qp->resp.sack_pending = qp->resp.sack_gap = 1;
    return;
  }
  if (!rct_resp_exec_atomic(qp, p))
    return;
  sr_shift(qp, 1);
  qp->resp.epsn = psn_add(qp->resp.epsn, 1);
  sr_advance(qp);
  if (rct_bm_any(qp->resp.sr_rcvd))
    qp->resp.sack_pending = 1;
}

/* Answer this out-of-order packet with a selective NAK? Always when the
 * hole moved since the last one or the packet asks for an ACK; otherwise
 * once per sack_every packets [SR-RESP-11]. */
static bool sack_now(struct rct_qp *qp, const struct rct_pkt *p)
{
  uint32_t every = qp->base.dev->attr.sack_every;
  if (every <= 1 || p->h.bth.ackreq || qp->resp.epsn != qp->resp.sack_epsn)
    return true;
  return ++qp->resp.sack_skipped >= every;
}

void rct_sr_resp_handle(struct rct_qp *qp, struct rct_pkt *p, int32_t d)
{
  uint32_t f = p->opflags;
  if (d >= RCT_SR_WINDOW) {                                 /* [SR-RESP-1] */
    qp->base.cnt.rx_out_of_seq++;
    qp->resp.sack_pending = qp->resp.sack_gap = 1;
    return;
  }
  if (d == 0)
    qp->resp.nak_latch = 0;
  if (bm_test(qp->resp.sr_read, (uint32_t)d)) {
    if (f & OPF_READ)
      rct_resp_duplicate(qp, p);                      /* a READ run ahead [SR-RESP-6] */
    else
      qp->base.cnt.rx_dup++;
    return;
  }
  if (bm_test(qp->resp.sr_rcvd, (uint32_t)d)) {                  /* [SR-RESP-3] */
    qp->base.cnt.rx_dup++;
    if (p->h.bth.ackreq)
      qp->resp.sack_pending = 1;
    return;
  }
  if (!(f & OPF_SUPPORTED)) {
    rct_resp_fail(qp, AETH_NAK_INV_REQ, p->h.bth.psn, false, RCT_WC_SUCCESS);
    return;
  }
  if (f & OPF_ATOMIC) {
    sr_atomic(qp, p, d);
    return;
  }
  if (f & OPF_READ) {
    if (d != 0) {                                     /* [SR-RESP-6] */
      qp->base.cnt.rx_out_of_seq++;
      qp->resp.sack_pending = 1;                      /* [SR-RESP-5]: the hole at epsn */
      if (!sr_read_ahead(qp, p, (uint32_t)d))
        qp->resp.sack_gap = 1;                        /* dropped: it must come again */
      return;
    }
    if (rct_resp_exec_read(qp, p)) {
      uint32_t n = RD_AT(&qp->base, qp->resp.rd_tail - 1)->npkts;
      sr_shift(qp, n);
      qp->resp.epsn = psn_add(qp->resp.epsn, n);
      sr_advance(qp);                           /* over what was placed behind it */
      if (rct_bm_any(qp->resp.sr_rcvd))
        qp->resp.sack_pending = 1;
    }
    return;
  }
  if (!sr_place(qp, p, (uint32_t)d))
    return;
  if (d > 0) {
    qp->base.cnt.rx_out_of_seq++;
    if (sack_now(qp, p))
      qp->resp.sack_pending = 1;                     /* [SR-RESP-5] [SR-RESP-11] */
    return;
  }
  {
    uint32_t before = qp->resp.epsn;
    sr_advance(qp);
    qp->resp.unacked++;
    /* AckReq, or epsn passed packets placed earlier [SR-RESP-5] */
    if (psn_diff(qp->resp.epsn, before) > 1)
      qp->resp.unacked = RCT_ACK_COALESCE_MAX;
  }
  if (p->h.bth.ackreq || qp->resp.unacked >= RCT_ACK_COALESCE_MAX) {
    if (rct_bm_any(qp->resp.sr_rcvd))
      qp->resp.sack_pending = 1;
    else
      rct_resp_want_ack(qp, psn_prev(qp->resp.epsn));
  }
}
