/*
 * req.c: the requester role. Turns send-queue WQEs into request packets:
 * assigns PSNs, fragments at the path MTU, builds READ requests (and
 * resumed READ requests), sets AckReq, respects the PSN window and the
 * READ credit, and resends from a PSN when the completer asks
 * (rct_req_retransmit_from, go-back-N) or, in SR mode, resends single PSNs
 * of its retransmit scan, which the completer fills (rct_req_sr_*). A READ
 * goes as READ requests of at most one piece each, inside the READ window
 * (in SR mode: the responses requested and not received, [REQ-READ-8]) and
 * the READ credit [REQ-READ-6]. It never decides *that* something is
 * lost: that is the completer's job (comp.c). It pauses on an RNR NAK
 * (rct_req_pause_rnr: the RNR timer is the one record of the wait). [REQ-*]
 *
 * State (qp->req, written only here): sq_next/psn is the cursor (the next
 * packet to send), next_psn the high-water mark (the next never-sent PSN).
 */
#include "rc_int.h"

/* Step functions return whether a frame was produced. */

void rct_req_reset(struct rct_qp *qp)
{
  qp->req.sq_next = qp->base.sq_head;
  qp->req.psn = qp->req.next_psn = qp->base.attr.sq_psn;    /* [REQ-PSN-1] */
  qp->req.rd_first = qp->req.rd_count = 0;
  qp->req.rsn_next = 0;
  qp->req.rto_probe = 0;
  bm_clear_all(qp->req.sr_retxd);
  qp->req.sr_scan = qp->req.sr_scan_end = qp->req.sr_hole_end = qp->base.attr.sq_psn;
}

uint32_t rct_req_window(const struct rct_qp *qp)
{
  uint32_t w = qp->base.attr.max_inflight ? qp->base.attr.max_inflight : RCT_MAX_INFLIGHT_DEFAULT;
  if (qp->sr && w > RCT_SR_WINDOW)
    w = RCT_SR_WINDOW;                         /* [SR-REQ-1] */
  return w;
}

/* [REQ-WIN-1]: may PSNs [psn, psn + k) be outstanding? */
static bool window_allows(const struct rct_qp *qp, uint32_t psn, uint32_t k)
{
  return (uint32_t)psn_diff(psn_add(psn, k - 1), rct_comp_una(qp)) < rct_req_window(qp);
}

/* SR: PSNs sent and neither acknowledged nor sacked (READ responses
 * requested and not received) [REQ-READ-8] [SR-REQ-17]. */
static uint32_t sr_unreceived(const struct rct_qp *qp)
{
  uint32_t n = (uint32_t)psn_diff(qp->req.next_psn, rct_comp_una(qp));
  if (n > RCT_SR_WINDOW)
    n = RCT_SR_WINDOW;
  return n - rct_comp_sacked_count(qp, n);
}

/* SR: may new SEND/WRITE packet psn (= next_psn) go? Within SR_WINDOW of
 * una [SR-REQ-1], and the PSNs not yet received within the window
 * [SR-REQ-17]; those are at most psn - una, so the count is needed only
 * when a hole at una holds that distance at the window or beyond. */
static bool sr_data_window_allows(const struct rct_qp *qp, uint32_t psn)
{
  uint32_t d = (uint32_t)psn_diff(psn, rct_comp_una(qp));
  if (d >= RCT_SR_WINDOW)
    return false;
  return d < rct_req_window(qp) || sr_unreceived(qp) + 1 <= rct_req_window(qp);
}

/* May new SEND/WRITE packet psn go: in go-back-N [REQ-WIN-1] and the loss
 * window [REQ-WIN-5], in SR mode [SR-REQ-17]? */
static bool data_window_allows(const struct rct_qp *qp, uint32_t psn)
{
  uint32_t cwnd = rct_comp_loss_window(qp);
  if (qp->sr)
    return sr_data_window_allows(qp, psn);
  return window_allows(qp, psn, 1) && (!cwnd || (uint32_t)psn_diff(psn, rct_comp_una(qp)) < cwnd);
}

/* Response PSNs of READs outstanding at most: the window, at most
 * READ_WINDOW [REQ-READ-6]. */
static uint32_t read_window(const struct rct_qp *qp)
{
  uint32_t w = rct_req_window(qp);
  return w < RCT_READ_WINDOW ? w : RCT_READ_WINDOW;
}

/* Response PSNs per READ request of a READ starting now: READ_PIECE, at
 * most a quarter of the READ window, so that requests keep it nearly full
 * (a new one goes when una passes a piece) [REQ-READ-6]. */
static uint32_t read_piece(const struct rct_qp *qp)
{
  uint32_t p = read_window(qp) / 4;
  if (p > RCT_READ_PIECE)
    p = RCT_READ_PIECE;
  return p ? p : 1;
}

/* READ requests outstanding: those whose last response PSN una has not
 * passed [REQ-WIN-2]. */
static uint32_t reads_outstanding(struct rct_qp *qp)
{
  struct rct_req *r = &qp->req;
  while (r->rd_count && psn_lt(r->rd_end[r->rd_first % RCT_MAX_RD_ATOMIC], rct_comp_una(qp))) {
    r->rd_first++;
    r->rd_count--;
  }
  return r->rd_count;
}

/* May a new READ request for response PSNs [psn, end] go now? Credit
 * [REQ-WIN-2] and READ window: from una [REQ-READ-6], in SR mode the
 * responses not yet received, within SR_WINDOW of una [REQ-READ-8]. */
static bool read_request_allowed(struct rct_qp *qp, uint32_t psn, uint32_t end)
{
  if (reads_outstanding(qp) >= qp->base.attr.max_rd_atomic || qp->req.rd_count >= RCT_MAX_RD_ATOMIC)
    return false;
  if (qp->sr)
    return (uint32_t)psn_diff(end, rct_comp_una(qp)) < RCT_SR_WINDOW &&
           sr_unreceived(qp) + (uint32_t)psn_diff(end, psn) + 1 <= read_window(qp);
  return window_allows(qp, psn, (uint32_t)psn_diff(end, psn) + 1) &&
         (uint32_t)psn_diff(end, rct_comp_una(qp)) < read_window(qp);
}

bool rct_req_has_work(const struct rct_qp *qp)
{
  enum rct_qp_state s = qp->base.attr.qp_state;
  if ((s != RCT_QPS_RTS && s != RCT_QPS_SQD) || rct_req_waiting_rnr(qp))
    return false;
  if (qp->sr && psn_lt(qp->req.sr_scan, qp->req.sr_scan_end))
    return true;
  if (qp->req.rto_probe && psn_lt(rct_comp_una(qp), qp->req.next_psn))
    return true;
  return qp->req.sq_next != qp->base.sq_tail;
}

/* The WQE whose PSNs contain psn, among the started ones. */
struct rct_send_wqe *rct_req_wqe_of_psn(struct rct_qp *qp, uint32_t psn, uint32_t *idx)
{
  for (uint32_t i = qp->base.sq_head; i != qp->base.sq_tail; i++) {
    struct rct_send_wqe *w = SQ_AT(&qp->base, i);
    if (!w->started)
      break;
    if (psn_le(w->first_psn, psn) && psn_le(psn, w->last_psn)) {
      if (idx)
        *idx = i;
      return w;
    }
  }
  return 0;
}

/* ---------------------------------------------------------------- */
/* What the completer asks of the requester                          */
/* ---------------------------------------------------------------- */

/* Go back: the next packet sent is psn [REQ-GBN-1]; a READ resumes at its
 * first missing response [REQ-READ-3]. */
void rct_req_retransmit_from(struct rct_qp *qp, uint32_t psn)
{
  uint32_t i;
  struct rct_send_wqe *w = rct_req_wqe_of_psn(qp, psn, &i);
  if (!w) {
    /* nothing outstanding at psn: continue with new work */
    if (psn_ge(psn, qp->req.next_psn)) {
      qp->req.psn = qp->req.next_psn;
      while (qp->req.sq_next != qp->base.sq_tail && SQ_AT(&qp->base, qp->req.sq_next)->started &&
             psn_lt(SQ_AT(&qp->base, qp->req.sq_next)->last_psn, qp->req.psn))
        qp->req.sq_next++;
    }
    return;
  }
  if (rct_wqe_reads(w) && !qp->sr && psn_lt(psn, psn_add(w->first_psn, w->read_pkts)))
    psn = psn_add(w->first_psn, w->read_pkts);
  qp->req.sq_next = i;
  qp->req.psn = psn;
}

/* An RNR NAK: nothing goes out until then [REQ-RNR-1]. The armed RNR timer
 * is the one record of the wait (rct_req_waiting_rnr). */
void rct_req_pause_rnr(struct rct_qp *qp, uint64_t until)
{
  rct_timer_set(&qp->base, RCT_TIMER_RNR, until);
}

/* A timeout or the early probe: one more copy of the packet at una once
 * nothing else can go [REQ-TMO-6] [REQ-TMO-8]. */
void rct_req_probe(struct rct_qp *qp)
{
  qp->req.rto_probe = 1;
}

/* SR: a READ at una whose first missing response was re-requested as lost
 * in this round [SR-REQ-16]. */
static bool sr_read_loss_seen(struct rct_qp *qp)
{
  struct rct_send_wqe *w = rct_req_wqe_of_psn(qp, rct_comp_una(qp), 0);
  if (!w || !rct_wqe_reads(w))
    return true;
  return rct_req_sr_resent(qp, rct_comp_read_first_missing(qp, w));
}

/* The early probe: the same copy, but it leaves the RTO where it is; in
 * SR a READ's with no loss seen asks for its run's last response alone, so
 * that responses that were only late cost one more, not the run
 * [REQ-TMO-8]. Called before an SR round ends: the marks tell what was
 * seen lost. */
void rct_req_early_probe(struct rct_qp *qp)
{
  qp->req.rto_probe = qp->sr && !sr_read_loss_seen(qp) ? RCT_PROBE_EARLY_LAST : RCT_PROBE_EARLY;
}

/* una advanced by n PSNs: the SR resend marks move with it; a probe owed
 * for the old una is void. */
void rct_req_una_moved(struct rct_qp *qp, uint32_t n)
{
  if (qp->sr)
    rct_bm_shift(qp->req.sr_retxd, n < RCT_SR_WINDOW ? n : RCT_SR_WINDOW);
  qp->req.rto_probe = 0;
}

/* The completer flushed the send queue (ERR): nothing left to send. */
void rct_req_flushed(struct rct_qp *qp)
{
  qp->req.sq_next = qp->base.sq_head;
  qp->req.rd_first = qp->req.rd_count = 0;
}

/* SR: add PSNs [from, end) to the retransmit scan, only READ requests from
 * hole_end on; merged with a scan in progress [SR-REQ-3] [SR-REQ-12]. */
void rct_req_sr_resend(struct rct_qp *qp, uint32_t from, uint32_t hole_end, uint32_t end)
{
  struct rct_req *r = &qp->req;
  if (!psn_lt(r->sr_scan, r->sr_scan_end)) {
    r->sr_scan = from;
    r->sr_hole_end = hole_end;
    r->sr_scan_end = end;
    return;
  }
  if (psn_lt(from, r->sr_scan))
    r->sr_scan = from;
  if (psn_gt(hole_end, r->sr_hole_end))
    r->sr_hole_end = hole_end;
  if (psn_gt(end, r->sr_scan_end))
    r->sr_scan_end = end;
}

/* SR: every PSN may be resent once more [SR-REQ-11]. */
void rct_req_sr_new_round(struct rct_qp *qp)
{
  bm_clear_all(qp->req.sr_retxd);
}

/* SR: a new round over every unacknowledged, unsacked PSN from `from` up
 * to the send point (timeout [SR-REQ-11], RNR NAK [SR-REQ-6]). */
void rct_req_sr_rescan(struct rct_qp *qp, uint32_t from)
{
  rct_req_sr_new_round(qp);
  qp->req.sr_scan = from;
  qp->req.sr_scan_end = qp->req.sr_hole_end = qp->req.next_psn;
}

/* SR: the first PSN index in [k, n) from una that was resent and is not
 * sacked (a hole whose resend may be lost); n if none. */
static uint32_t next_resent_hole(const struct rct_qp *qp, uint32_t k, uint32_t n)
{
  return rct_bm_next(qp->req.sr_retxd, qp->comp.sr_sacked, k, n);
}

/* A selective NAK sacked `high` while the PSNs from `from` below it are
 * still holes: each hole resent before `high` was first sent had its
 * resend lost (the link keeps order), and may go again [SR-REQ-15]. A
 * hole resent after that is in flight and stays marked. */
void rct_req_sr_forget_lost(struct rct_qp *qp, uint32_t from, uint32_t high)
{
  uint32_t una = rct_comp_una(qp), k = (uint32_t)psn_diff(from, una), n;
  if (psn_lt(from, una) || !psn_lt(from, high))
    return;
  n = (uint32_t)psn_diff(high, una);
  if (n > RCT_SR_WINDOW)
    n = RCT_SR_WINDOW;
  for (k = next_resent_hole(qp, k, n); k < n; k = next_resent_hole(qp, k + 1, n))
    if (psn_ge(high, qp->req.sr_resend_mark[psn_add(una, k) % RCT_SR_WINDOW]))
      bm_clear(qp->req.sr_retxd, k);
}

/* SR: the response at re-requested PSN psn arrived. The responder answers
 * re-requests in the order they came, so every response re-requested
 * before it and still missing had its re-request or its replay lost: it
 * may be re-requested again [SR-REQ-16]. */
void rct_req_sr_read_answered(struct rct_qp *qp, uint32_t psn)
{
  uint32_t order = qp->req.sr_rereq_order[psn % RCT_SR_WINDOW], una = rct_comp_una(qp);
  uint32_t n = (uint32_t)psn_diff(qp->req.next_psn, una), k;
  if (n > RCT_SR_WINDOW)
    n = RCT_SR_WINDOW;
  for (k = next_resent_hole(qp, 0, n); k < n; k = next_resent_hole(qp, k + 1, n))
    if ((int32_t)(qp->req.sr_rereq_order[psn_add(una, k) % RCT_SR_WINDOW] - order) < 0)
      bm_clear(qp->req.sr_retxd, k);
}

/* SR: psn may be resent again (a READ response gap seen once) [SR-REQ-13]. */
void rct_req_sr_unmark(struct rct_qp *qp, uint32_t psn)
{
  uint32_t k = (uint32_t)psn_diff(psn, rct_comp_una(qp));
  if (k < RCT_SR_WINDOW)
    bm_clear(qp->req.sr_retxd, k);
}

/* Derived for tracing: the requester's state is not recorded. */
enum rct_req_state rct_qp_req_state(const struct rct_qp *qp)
{
  if (qp->base.attr.qp_state == RCT_QPS_ERR)
    return RCT_REQ_ERROR;
  if (rct_req_waiting_rnr(qp))
    return RCT_REQ_WAIT_RNR;
  if (rct_req_has_work(qp) || psn_lt(rct_comp_una(qp), qp->req.next_psn))
    return RCT_REQ_SENDING;
  return RCT_REQ_IDLE;
}

/* ---------------------------------------------------------------- */
/* Sending                                                           */
/* ---------------------------------------------------------------- */

static uint8_t data_opcode(const struct rct_send_wqe *w, uint32_t idx)
{
  static const uint8_t send_ops[POS_COUNT][2] = {   /* [pos][imm] */
    [POS_FIRST] = { OP_SEND_FIRST, OP_SEND_FIRST }, [POS_MIDDLE] = { OP_SEND_MIDDLE, OP_SEND_MIDDLE },
    [POS_LAST] = { OP_SEND_LAST, OP_SEND_LAST_IMM }, [POS_ONLY] = { OP_SEND_ONLY, OP_SEND_ONLY_IMM } };
  static const uint8_t write_ops[POS_COUNT][2] = {
    [POS_FIRST] = { OP_WRITE_FIRST, OP_WRITE_FIRST }, [POS_MIDDLE] = { OP_WRITE_MIDDLE, OP_WRITE_MIDDLE },
    [POS_LAST] = { OP_WRITE_LAST, OP_WRITE_LAST_IMM }, [POS_ONLY] = { OP_WRITE_ONLY, OP_WRITE_ONLY_IMM } };
  enum rct_pos pos = op_pos(idx == 0, idx + 1 == w->npkts);   /* [OPC-SEQ-1] */
  int imm = w->wr.opcode == RCT_WR_SEND_WITH_IMM || w->wr.opcode == RCT_WR_RDMA_WRITE_WITH_IMM;
  bool send = w->wr.opcode == RCT_WR_SEND || w->wr.opcode == RCT_WR_SEND_WITH_IMM;
  return send ? send_ops[pos][imm] : write_ops[pos][imm];
}

/* Complete the WQE at the head with an error and move the QP to ERR. */
static void fail_head(struct rct_qp *qp, struct rct_send_wqe *w, enum rct_wc_status st)
{
  w->status = st;
  rct_qp_to_err(&qp->base);
}

/* Local checks when a WR starts [REQ-FRAG-2]. */
static enum rct_wc_status check_local(struct rct_qp *qp, struct rct_send_wqe *w)
{
  const struct rct_mr_ops *ops = qp->base.dev->attr.mr_ops;
  uint32_t access = rct_wqe_reads(w) ? RCT_ACCESS_LOCAL_WRITE : 0;
  if (w->status != RCT_WC_SUCCESS)
    return w->status;
  for (int i = 0; i < w->wr.num_sge; i++) {
    if (!w->sge[i].length)
      continue;
    if (ops->translate(qp->base.dev->attr.mr_ctx, w->sge[i].lkey, false, qp->base.init.pd,
                       w->sge[i].addr, w->sge[i].length, access, 0, 0) < 0)
      return RCT_WC_LOC_PROT_ERR;
  }
  return RCT_WC_SUCCESS;
}

/* SR: is every WQE before w still in the send queue a READ? PSNs before
 * the queue's head are acknowledged, so then nothing the responder may
 * still miss before w's requests writes memory [SR-WIRE-9]. */
static bool only_reads_before(const struct rct_qp *qp, const struct rct_send_wqe *w)
{
  for (uint32_t i = qp->base.sq_head; SQ_AT(&qp->base, i) != w; i++)
    if (SQ_AT(&qp->base, i)->wr.opcode != RCT_WR_RDMA_READ)
      return false;
  return true;
}

/* SR: may w start? An atomic starts once every WR before it completed, and
 * no WR after an atomic starts before the atomic completed [SR-ATOM-2]. */
static bool sr_fence_open(const struct rct_qp *qp, const struct rct_send_wqe *w)
{
  uint32_t i = qp->req.sq_next;
  if (i == qp->base.sq_head)
    return true;
  return !rct_wr_atomic(w->wr.opcode) && !rct_wr_atomic(SQ_AT(&qp->base, i - 1)->wr.opcode);
}

/* Start the WR at sq_next: assign its PSNs. Returns false if it must wait. */
static bool start_wqe(struct rct_qp *qp, struct rct_send_wqe *w)
{
  bool read = rct_wqe_reads(w);
  uint32_t n = qp_npkts(&qp->base, w->length), piece = read_piece(qp);
  enum rct_wc_status st;
  if (qp->base.attr.qp_state == RCT_QPS_SQD)
    return false;                              /* [QP-STATE-7] */
  if (qp->sr && !sr_fence_open(qp, w))
    return false;                              /* [SR-ATOM-2] */
  if (!w->checked) {
    st = check_local(qp, w);
    if (st != RCT_WC_SUCCESS) {
      /* fail in posting order: only once it is the oldest [REQ-CMPL-2] */
      if (qp->req.sq_next == qp->base.sq_head)
        fail_head(qp, w, st);
      return false;
    }
    w->checked = 1;
  }
  /* its first READ request: one piece [REQ-READ-6] [REQ-WIN-2] */
  if (read && !read_request_allowed(qp, qp->req.psn, psn_add(qp->req.psn, (n < piece ? n : piece) - 1)))
    return false;
  if (!read && !data_window_allows(qp, qp->req.psn))
    return false;
  w->first_psn = qp->req.psn;
  w->npkts = n;
  w->read_piece = piece;
  w->last_psn = psn_add(qp->req.psn, n - 1);     /* [REQ-PSN-2] */
  w->started = 1;
  w->after_reads = read && qp->sr && only_reads_before(qp, w);   /* [SR-WIRE-9] */
  if (w->wr.opcode == RCT_WR_SEND || w->wr.opcode == RCT_WR_SEND_WITH_IMM ||
      w->wr.opcode == RCT_WR_RDMA_WRITE_WITH_IMM)
    w->rsn = qp->req.rsn_next++ & PSN_MASK;    /* [SR-WIRE-3] */
  else
    w->rsn = qp->req.rsn_next & PSN_MASK;
  return true;
}

/* READ request headers for response PSNs idx..end_idx of w (idx > 0:
 * resumed or a later piece) [REQ-READ-3] [REQ-READ-6]. */
static void read_req_headers(const struct rct_qp *qp, struct rct_send_wqe *w, uint32_t idx,
                             uint32_t end_idx, struct rct_hdr *h)
{
  uint32_t off = idx << qp->base.mtu_shift;
  h->bth.opcode = OP_READ_REQ;
  h->bth.ackreq = 1;                                  /* [REQ-ACKREQ-1] */
  h->reth.va = w->wr.remote_addr + off;
  h->reth.rkey = w->wr.rkey;
  h->reth.dmalen = end_idx + 1 >= w->npkts ? w->length - off : (end_idx + 1 - idx) << qp->base.mtu_shift;
  h->sreth.offset = off;                              /* [SR-WIRE-2] */
  h->sreth.flags = w->after_reads ? SRXH_AFTER_READS : 0;   /* [SR-WIRE-9] */
}

/* The one request of atomic w, the same each time it is sent [REQ-ATOM-2]. */
static void atomic_req_headers(const struct rct_send_wqe *w, struct rct_hdr *h)
{
  h->bth.opcode = w->wr.opcode == RCT_WR_ATOMIC_CMP_AND_SWP ? OP_CMP_SWAP : OP_FETCH_ADD;
  h->bth.ackreq = 1;                                  /* [REQ-ACKREQ-1] */
  h->atom.va = w->wr.remote_addr;                     /* [HDR-ATOM-1] */
  h->atom.rkey = w->wr.rkey;
  h->atom.swap_add = w->wr.opcode == RCT_WR_ATOMIC_CMP_AND_SWP ? w->wr.swap : w->wr.compare_add;
  h->atom.compare = w->wr.opcode == RCT_WR_ATOMIC_CMP_AND_SWP ? w->wr.compare_add : 0;
}

/* SEND/WRITE packet idx of w: headers, and payload segments into f. */
static bool data_packet(struct rct_qp *qp, struct rct_send_wqe *w, uint32_t idx, uint32_t off,
                        uint32_t paylen, struct rct_hdr *h, struct rct_frame *f)
{
  int r = rct_sge_translate(&qp->base, w->sge, w->wr.num_sge, off, paylen, 0, f->seg, RCT_FRAME_MAX_SEGS);
  if (r < 0) {
    if (SQ_AT(&qp->base, qp->base.sq_head) == w)
      fail_head(qp, w, RCT_WC_LOC_PROT_ERR);
    return false;
  }
  f->nseg = (uint8_t)r;
  h->bth.opcode = data_opcode(w, idx);
  if (idx + 1 == w->npkts) {
    h->bth.ackreq = 1;                          /* [REQ-ACKREQ-1] */
    h->bth.se = (w->wr.send_flags & RCT_SEND_SOLICITED) &&
                (op_flags(h->bth.opcode) & (OPF_SEND | OPF_IMM)) ? 1 : 0;   /* [HDR-BTH-3] */
  } else if ((idx + 1) % RCT_ACK_REQ_INTERVAL == 0) {
    h->bth.ackreq = 1;                          /* [REQ-ACKREQ-2] */
  }
  h->imm = w->wr.imm_data;                            /* [HDR-IMM-1] */
  h->reth.va = w->wr.remote_addr + (qp->sr ? off : 0);    /* [SR-WIRE-4] */
  h->reth.rkey = w->wr.rkey;
  h->reth.dmalen = w->length;                         /* [HDR-RETH-1] */
  h->sreth.offset = off;
  return true;
}

static int build(struct rct_qp *qp, struct rct_send_wqe *w, uint32_t psn, uint32_t read_end, bool ackreq,
                 struct rct_frame *f);

/* Build the request packet of WQE w at PSN psn (new or again) [REQ-PSN-3];
 * a READ request asks for the rest of psn's piece [REQ-READ-6]. */
int rct_req_build(struct rct_qp *qp, struct rct_send_wqe *w, uint32_t psn, struct rct_frame *f)
{
  uint32_t end = rct_wqe_reads(w) ? rct_read_piece_end(w, psn) : psn;
  return build(qp, w, psn, end, false, f);
}

/* read_end: a READ request's last response PSN, inside psn's piece. */
static int build(struct rct_qp *qp, struct rct_send_wqe *w, uint32_t psn, uint32_t read_end, bool ackreq,
                 struct rct_frame *f)
{
  struct rct_hdr h;
  uint32_t idx = (uint32_t)psn_diff(psn, w->first_psn), off = idx << qp->base.mtu_shift, paylen = 0;
  bool retx = psn_lt(psn, qp->req.next_psn);
  rct_hdr_clear(&h);
  h.bth.psn = psn;
  h.sreth.rsn = w->rsn;
  f->nseg = 0;
  if (rct_wr_atomic(w->wr.opcode)) {
    atomic_req_headers(w, &h);
  } else if (w->wr.opcode == RCT_WR_RDMA_READ) {
    read_req_headers(qp, w, idx, (uint32_t)psn_diff(read_end, w->first_psn), &h);
  } else {
    paylen = w->length - off < qp->base.mtu ? w->length - off : qp->base.mtu;   /* [REQ-FRAG-1] */
    if (!data_packet(qp, w, idx, off, paylen, &h, f))
      return 0;
  }
  if (qp->sr)
    h.bth.opcode |= OP_SR_BASE;                 /* [SR-WIRE-1] */
  if (ackreq || (retx && (qp->sr || psn_add(psn, 1) == qp->req.next_psn)))
    h.bth.ackreq = 1;                           /* [REQ-ACKREQ-1] end of burst */
  rct_tx_emit(&qp->base, f, &h, paylen);
  if (retx)
    qp->base.cnt.tx_retransmits++;
  return 1;
}

/* SR: the end of the run of missing READ response PSNs from psn: neither
 * received (sacked) nor, with mark, already re-requested; inside psn's
 * piece and below next_psn. With mark, the run is marked re-requested
 * [SR-REQ-16]. */
static uint32_t sr_read_run(struct rct_qp *qp, struct rct_send_wqe *w, uint32_t psn, bool mark)
{
  uint32_t end = psn, limit = rct_read_piece_end(w, psn);
  while (psn_lt(end, limit)) {
    uint32_t q = psn_add(end, 1), k = (uint32_t)psn_diff(q, rct_comp_una(qp));
    if (!psn_lt(q, qp->req.next_psn) || k >= RCT_SR_WINDOW || rct_comp_sacked(qp, q) ||
        (mark && bm_test(qp->req.sr_retxd, k)))
      break;
    if (mark) {
      bm_set(qp->req.sr_retxd, k);
      qp->req.sr_resend_mark[q % RCT_SR_WINDOW] = qp->req.next_psn;
      qp->req.sr_rereq_order[q % RCT_SR_WINDOW] = qp->req.sr_rereq_seq;
    }
    end = q;
  }
  return end;
}

/* SR: resend the next PSN of the completer's retransmit scan: every PSN in
 * [sr_scan, sr_scan_end) that is neither sacked nor already resent since the
 * last timeout; past sr_hole_end only READ requests [SR-REQ-11] [SR-REQ-12];
 * a missing READ response starts a READ request for its run [SR-REQ-16]. */
static int req_poll_sr_retx(struct rct_qp *qp, uint64_t now, struct rct_frame *f)
{
  while (psn_lt(qp->req.sr_scan, qp->req.sr_scan_end)) {
    uint32_t psn = qp->req.sr_scan, i = (uint32_t)psn_diff(psn, rct_comp_una(qp)), end = psn;
    struct rct_send_wqe *w;
    qp->req.sr_scan = psn_add(psn, 1);
    if (psn_lt(psn, rct_comp_una(qp)) || i >= RCT_SR_WINDOW || rct_comp_sacked(qp, psn) ||
        bm_test(qp->req.sr_retxd, i))
      continue;
    w = rct_req_wqe_of_psn(qp, psn, 0);
    if (!w || (!rct_wqe_reads(w) && psn_ge(psn, qp->req.sr_hole_end)))
      continue;
    bm_set(qp->req.sr_retxd, i);
    qp->req.sr_resend_mark[psn % RCT_SR_WINDOW] = qp->req.next_psn;   /* [SR-REQ-15] */
    if (rct_wqe_reads(w)) {
      /* one READ request per run of missing responses [SR-REQ-16] */
      qp->req.sr_rereq_order[psn % RCT_SR_WINDOW] = ++qp->req.sr_rereq_seq;
      end = sr_read_run(qp, w, psn, true);
      if (psn_gt(end, psn_prev(qp->req.sr_scan)))
        qp->req.sr_scan = psn_add(end, 1);
    }
    if (!build(qp, w, psn, end, false, f))
      return 0;
    rct_comp_on_send(qp, now, psn, true);
    return 1;
  }
  return 0;
}

/*
 * Tail probe: once a timeout's retransmissions are out and nothing else can
 * be sent, one more copy of the packet at una, so that a lone lost packet or
 * response gets two chances per retry [REQ-TMO-6].
 */
static int req_poll_probe(struct rct_qp *qp, uint64_t now, struct rct_frame *f)
{
  struct rct_send_wqe *w;
  uint32_t psn = rct_comp_una(qp), miss, end = psn;
  bool early = qp->req.rto_probe >= RCT_PROBE_EARLY, last = qp->req.rto_probe == RCT_PROBE_EARLY_LAST;
  if (!qp->req.rto_probe)
    return 0;
  qp->req.rto_probe = 0;
  if (!psn_lt(rct_comp_una(qp), qp->req.next_psn) || !(w = rct_req_wqe_of_psn(qp, psn, 0)))
    return 0;
  if (rct_wqe_reads(w)) {
    miss = rct_comp_read_first_missing(qp, w);
    if (psn_gt(miss, w->last_psn))
      return 0;
    if (psn_lt(psn, miss))
      psn = miss;
    end = qp->sr ? sr_read_run(qp, w, psn, false) : rct_read_piece_end(w, psn);   /* [SR-REQ-16] */
    if (last)
      psn = end;                                           /* [REQ-TMO-8] */
  }
  if (!build(qp, w, psn, end, true, f))
    return 0;
  if (early)
    rct_comp_on_probe_sent(qp, psn);
  else
    rct_comp_on_send(qp, now, psn, true);
  return 1;
}

static int req_poll_send(struct rct_qp *qp, uint64_t now, struct rct_frame *f);

int rct_req_poll(struct rct_qp *qp, uint64_t now, struct rct_frame *f)
{
  if (!rct_req_has_work(qp))
    return 0;
  if (qp->sr && req_poll_sr_retx(qp, now, f))
    return 1;
  if (req_poll_send(qp, now, f))
    return 1;
  return req_poll_probe(qp, now, f);
}

/* The packet at the requester's cursor: new, or go-back-N again. */
static int req_poll_send(struct rct_qp *qp, uint64_t now, struct rct_frame *f)
{
  struct rct_send_wqe *w;
  uint32_t psn, end;
  bool read;
  if (qp->req.sq_next == qp->base.sq_tail)
    return 0;
  w = SQ_AT(&qp->base, qp->req.sq_next);
  read = rct_wqe_reads(w);
  if (!w->started) {
    if (!start_wqe(qp, w))
      return 0;
  } else if (psn_ge(qp->req.psn, qp->req.next_psn) &&
             !(read ? read_request_allowed(qp, qp->req.psn, rct_read_piece_end(w, qp->req.psn))
                    : data_window_allows(qp, qp->req.psn))) {
    return 0;
  }
  psn = qp->req.psn;
  end = read ? rct_read_piece_end(w, psn) : psn;
  if (!build(qp, w, psn, end, false, f))
    return 0;
  if (read && psn_ge(end, qp->req.next_psn)) {
    /* a new READ request holds a credit until una passes it [REQ-WIN-2] */
    qp->req.rd_end[(qp->req.rd_first + qp->req.rd_count) % RCT_MAX_RD_ATOMIC] = end;
    qp->req.rd_count++;
  }
  if (end == w->last_psn) {
    qp->req.psn = psn_add(w->last_psn, 1);
    qp->req.sq_next++;
  } else {
    qp->req.psn = psn_add(end, 1);
  }
  if (psn_gt(qp->req.psn, qp->req.next_psn)) {
    rct_comp_on_send(qp, now, psn, false);
    qp->req.next_psn = qp->req.psn;
  } else {
    rct_comp_on_send(qp, now, psn, true);
  }
  return 1;
}
