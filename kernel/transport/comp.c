/*
 * comp.c: the completer role. Consumes ACKs, NAKs, selective NAKs and READ
 * responses; advances una; completes send WQEs in posting order; owns the
 * retransmission and early-probe timers, the retry counters and the
 * adaptive RTO; tells the requester what to do through its calls in
 * rct_int.h: resend from a PSN (rct_req_retransmit_from) or, in SR, which
 * PSNs to resend (rct_req_sr_*), pause on an RNR NAK (rct_req_pause_rnr),
 * probe (rct_req_probe). It writes only qp->comp.
 * [REQ-ACK-*] [REQ-TMO-*] [REQ-RETRY-*] [REQ-RNR-*] [REQ-GBN-*] [REQ-READ-*]
 * [REQ-CMPL-*] [SR-REQ-*]
 */
#include "rc_int.h"

void rct_comp_reset(struct rct_qp *qp)
{
  qp->comp.una = qp->base.attr.sq_psn;
  qp->comp.retry_left = qp->base.attr.retry_cnt;                 /* [REQ-RETRY-1] */
  qp->comp.rnr_left = qp->base.attr.rnr_retry;                   /* [REQ-RETRY-1] */
  qp->comp.srtt = qp->comp.rttvar = qp->comp.rto = 0;
  qp->comp.rtt_armed = 0;
  qp->comp.last_msn = 0;
  bm_clear_all(qp->comp.sr_sacked);
  qp->comp.retx_valid = 0;
  qp->comp.cwnd = qp->comp.cwnd_credit = 0;                  /* unlimited [REQ-WIN-5] */
  qp->comp.cwnd_recovering = 0;
  qp->comp.early_probed = qp->comp.probe_deferred = 0;
}

/* A go-back-N loss event [REQ-WIN-5]: halve the loss window, once per
 * window of packets (all of them are replayed by the same recovery). */
static void window_cut(struct rct_qp *qp)
{
  uint32_t w;
  if (qp->sr || qp->comp.cwnd_recovering)
    return;
  w = (qp->comp.cwnd ? qp->comp.cwnd : rct_req_window(qp)) / 2;
  qp->comp.cwnd = w < RCT_GBN_WINDOW_MIN ? RCT_GBN_WINDOW_MIN : w;
  qp->comp.cwnd_credit = 0;
  qp->comp.cwnd_recovering = 1;
  qp->comp.cwnd_recover = rct_req_next_psn(qp);
  qp->base.cnt.window_cuts++;
}

/* una moves from `from` to `to`: reaching recover ends the recovery; the
 * PSNs passed at or after it earn credits; a window's worth grows the
 * window by one step, up to unlimited [REQ-WIN-5]. */
static void window_grow(struct rct_qp *qp, uint32_t from, uint32_t to)
{
  struct rct_comp *c = &qp->comp;
  if (!c->cwnd)
    return;
  if (c->cwnd_recovering) {
    if (psn_lt(to, c->cwnd_recover))
      return;
    c->cwnd_recovering = 0;
    from = c->cwnd_recover;
  }
  c->cwnd_credit += (uint32_t)psn_diff(to, from);
  if (c->cwnd_credit < c->cwnd)
    return;
  c->cwnd_credit -= c->cwnd;
  c->cwnd += RCT_GBN_WINDOW_MIN;
  if (c->cwnd >= rct_req_window(qp))
    c->cwnd = c->cwnd_credit = 0;
}

/* Resend from psn (go-back-N); the timed packet no longer times a round
 * trip (Karn [REQ-TMO-4]). */
static void resend_from(struct rct_qp *qp, uint32_t psn)
{
  qp->comp.rtt_armed = 0;
  rct_req_retransmit_from(qp, psn);
}

/* Forward progress: the peer received something new; retries start over [REQ-RETRY-4]. */
static void progress(struct rct_qp *qp)
{
  qp->comp.retry_left = qp->base.attr.retry_cnt;
}

/* Current RTO [REQ-TMO-1] [REQ-TMO-4]; before the first sample (and any
 * backoff) the adaptive RTO is RCT_INITIAL_RTO_FACTOR x min_rto. */
uint64_t rct_comp_rto(const struct rct_qp *qp)
{
  uint64_t ibta = rct_ack_timeout_ns(qp->base.attr.timeout);
  uint64_t lo = qp->base.attr.min_rto_ns ? qp->base.attr.min_rto_ns : RCT_MIN_RTO_DEFAULT_NS;
  uint64_t r;
  if (!qp->base.attr.adaptive_rto || ibta == RCT_NEVER)
    return ibta;
  if (!qp->comp.rto)
    r = RCT_INITIAL_RTO_FACTOR * lo;
  else
    r = qp->comp.rto < lo ? lo : qp->comp.rto;
  return r > ibta ? ibta : r;
}

/* RTO = SRTT + max(G, 4 RTTVAR), G = 1 us: also how backoff ends [REQ-TMO-7]. */
static void rto_from_estimate(struct rct_qp *qp)
{
  qp->comp.rto = qp->comp.srtt + (4 * qp->comp.rttvar > 1000 ? 4 * qp->comp.rttvar : 1000);
}

static void rtt_sample(struct rct_qp *qp, uint64_t r)
{
  if (!qp->comp.srtt) {
    qp->comp.srtt = r ? r : 1;
    qp->comp.rttvar = r / 2;
  } else {
    uint64_t d = qp->comp.srtt > r ? qp->comp.srtt - r : r - qp->comp.srtt;
    qp->comp.rttvar = (3 * qp->comp.rttvar + d) / 4;
    qp->comp.srtt = (7 * qp->comp.srtt + r) / 8;
  }
  rto_from_estimate(qp);
}

/* The timed packet is known received: its round trip ends now [REQ-TMO-4]. */
static void rtt_end(struct rct_qp *qp, uint64_t now)
{
  rtt_sample(qp, now - qp->comp.rtt_start);
  qp->comp.rtt_armed = 0;
}

static bool outstanding(const struct rct_qp *qp)
{
  return psn_lt(qp->comp.una, rct_req_next_psn(qp));
}

/* Round trips are timed for the adaptive RTO [REQ-TMO-4], or, in SR mode,
 * for the early probe alone when the QP has a probe slack of its own
 * [REQ-TMO-10]. */
static bool rtt_timed(const struct rct_qp *qp)
{
  return qp->base.attr.adaptive_rto || (qp->sr && qp->base.attr.probe_slack_ns);
}

static uint64_t probe_slack(const struct rct_qp *qp)
{
  return qp->base.attr.probe_slack_ns ? qp->base.attr.probe_slack_ns : RCT_PROBE_SLACK_DEFAULT_NS;
}

/* The early probe: 2 SRTT + the probe slack (1 ms by default) after the
 * retransmission timer starts, when that comes before the RTO and none
 * went out since una moved [REQ-TMO-8] [REQ-TMO-10]. It needs SRTT. */
static void arm_probe(struct rct_qp *qp, uint64_t now)
{
  uint64_t rto = rct_comp_rto(qp), wait = 2 * qp->comp.srtt + probe_slack(qp);
  if (!rtt_timed(qp) || !qp->comp.srtt || qp->comp.early_probed || rto == RCT_NEVER || wait >= rto) {
    rct_timer_stop(&qp->base, RCT_TIMER_PROBE);
  } else {
    qp->comp.probe_due = now + wait;
    rct_timer_set(&qp->base, RCT_TIMER_PROBE, qp->comp.probe_due);
  }
}

/* The probe timer fired more than the probe slack after its deadline:
 * this requester was not running, and what its pause held back may still
 * be on its way. The probe waits once, 2 SRTT + the slack from now, if
 * that comes before the RTO [REQ-TMO-11]. True if it waits. */
static bool probe_waits(struct rct_qp *qp, uint64_t now)
{
  uint64_t again = now + 2 * qp->comp.srtt + probe_slack(qp);   /* arm_probe's wait, from now */
  if (qp->comp.probe_deferred || now - qp->comp.probe_due <= probe_slack(qp))
    return false;
  qp->comp.probe_deferred = 1;
  qp->base.cnt.late_probes++;
  if (again < rct_timer_deadline(&qp->base, RCT_TIMER_RETRANS))
    rct_timer_set(&qp->base, RCT_TIMER_PROBE, again);
  return true;
}

static void restart_timer(struct rct_qp *qp, uint64_t now)
{
  uint64_t rto = rct_comp_rto(qp);
  if (!outstanding(qp) || rct_timer_armed(&qp->base, RCT_TIMER_RNR)) {
    rct_timer_stop(&qp->base, RCT_TIMER_RETRANS);           /* [REQ-RNR-1] */
    rct_timer_stop(&qp->base, RCT_TIMER_PROBE);
    return;
  }
  rct_timer_set(&qp->base, RCT_TIMER_RETRANS, rto == RCT_NEVER ? RCT_NEVER : now + rto);
  arm_probe(qp, now);
}

/* Called by the requester for every request packet it sends [REQ-TMO-2]. */
void rct_comp_on_send(struct rct_qp *qp, uint64_t now, uint32_t psn, bool retransmit)
{
  if (retransmit || !rct_timer_armed(&qp->base, RCT_TIMER_RETRANS)) {
    uint64_t rto = rct_comp_rto(qp);
    rct_timer_set(&qp->base, RCT_TIMER_RETRANS, rto == RCT_NEVER ? RCT_NEVER : now + rto);
    arm_probe(qp, now);
  }
  if (retransmit && qp->comp.rtt_armed && psn == qp->comp.rtt_psn)
    qp->comp.rtt_armed = 0;          /* Karn: its ACK may answer either copy [REQ-TMO-4] */
  if (!retransmit && rtt_timed(qp) && !qp->comp.rtt_armed) {
    qp->comp.rtt_armed = 1;
    qp->comp.rtt_psn = psn;
    qp->comp.rtt_start = now;
  }
}

/* The early probe went out: it times no round trip (Karn [REQ-TMO-4]) and
 * leaves the retransmission timer running to its deadline, so a lost probe
 * costs no more than the RTO it tried to forestall [REQ-TMO-8]. */
void rct_comp_on_probe_sent(struct rct_qp *qp, uint32_t psn)
{
  if (qp->comp.rtt_armed && psn == qp->comp.rtt_psn)
    qp->comp.rtt_armed = 0;
}

static void complete_wqe(struct rct_qp *qp, struct rct_send_wqe *w)
{
  bool signaled = (w->wr.send_flags & RCT_SEND_SIGNALED) || qp->base.init.sq_sig_all;
  w->state = RCT_WQE_DONE;
  if (signaled || w->status != RCT_WC_SUCCESS) {          /* [REQ-CMPL-3] */
    struct rct_wc wc = { .wr_id = w->wr.wr_id, .status = w->status,
      .opcode = rct_wr_to_wc_opcode(w->wr.opcode), .qp_num = qp->base.init.qpn,
      .src_qp = qp->base.attr.dest_qp_num, .vendor_err = w->vendor_err };
    wc.byte_len = w->status == RCT_WC_SUCCESS ? w->length : 0;   /* [WC-STATUS-4] */
    rct_cq_push(&qp->base, qp->base.init.send_cq, &wc);
  }
  qp->base.sq_head++;
}

/* On ERR: the failed WR (if any) with its status, then every other one
 * flushed, in posting order [QP-ERR-2]. */
void rct_comp_flush(struct rct_qp *qp)
{
  while (qp->base.sq_head != qp->base.sq_tail) {
    struct rct_send_wqe *w = SQ_AT(&qp->base, qp->base.sq_head);
    if (w->status == RCT_WC_SUCCESS) {
      w->status = RCT_WC_WR_FLUSH_ERR;
      qp->base.cnt.flushed++;
    }
    complete_wqe(qp, w);
  }
  rct_req_flushed(qp);
}

/* Fail the WR containing psn (or the oldest) and move the QP to ERR. */
static void fail_wr(struct rct_qp *qp, uint32_t psn, bool by_psn, enum rct_wc_status st, uint8_t syn)
{
  struct rct_send_wqe *w = by_psn ? rct_req_wqe_of_psn(qp, psn, 0) : 0;
  if (!w && qp->base.sq_head != qp->base.sq_tail)
    w = SQ_AT(&qp->base, qp->base.sq_head);
  if (w) {
    w->status = st;
    w->vendor_err = syn;
  }
  rct_qp_to_err(&qp->base);
}

/* SR: the non-READ PSNs after the READ at the head that p acknowledged stay
 * known as received, so una can pass them once the READ completes. */
static void sr_keep_acked(struct rct_qp *qp, uint32_t p)
{
  for (uint32_t i = qp->base.sq_head + 1; i != qp->base.sq_tail; i++) {
    struct rct_send_wqe *w = SQ_AT(&qp->base, i);
    if (!w->started || psn_gt(w->first_psn, p))
      break;
    if (rct_wqe_reads(w))
      continue;
    for (uint32_t q = w->first_psn; psn_le(q, w->last_psn) && psn_le(q, p); q = psn_add(q, 1)) {
      uint32_t k = (uint32_t)psn_diff(q, qp->comp.una);
      if (k < RCT_SR_WINDOW)
        bm_set(qp->comp.sr_sacked, k);
    }
  }
}

/* una moved forward: reset retries, sample the RTT, re-arm the timer. */
static void una_advanced(struct rct_qp *qp, uint64_t now, uint32_t new_una)
{
  uint32_t n = (uint32_t)psn_diff(new_una, qp->comp.una);
  if (qp->comp.rtt_armed && psn_lt(qp->comp.rtt_psn, new_una)) {
    rtt_end(qp, now);
  } else if (qp->comp.srtt) {
    rto_from_estimate(qp);                           /* backoff ends [REQ-TMO-7] */
  } else {
    qp->comp.rto = 0;                                     /* ... at the initial RTO */
  }
  if (qp->sr) {
    rct_bm_shift(qp->comp.sr_sacked, n < RCT_SR_WINDOW ? n : RCT_SR_WINDOW);
  }
  rct_req_una_moved(qp, n);
  window_grow(qp, qp->comp.una, new_una);
  qp->comp.una = new_una;
  qp->comp.retry_left = qp->base.attr.retry_cnt;                 /* [REQ-RETRY-1] */
  qp->comp.rnr_left = qp->base.attr.rnr_retry;                   /* [REQ-RETRY-1] */
  qp->comp.retx_valid = 0;
  qp->comp.early_probed = 0;
  qp->comp.probe_deferred = 0;
  if (psn_lt(rct_req_cursor(qp), new_una))
    resend_from(qp, new_una);                        /* skip what is already acked */
  restart_timer(qp, now);
}

/* SR records READ responses received out of order in sr_sacked: every
 * outstanding response PSN lies within READ_WINDOW <= SR_WINDOW of una
 * [SR-REQ-7] [REQ-READ-6]; go-back-N takes them in order and read_pkts
 * counts them [REQ-READ-1]. */
static bool read_received(const struct rct_qp *qp, const struct rct_send_wqe *w, uint32_t psn)
{
  if (!qp->sr)
    return psn_lt(psn, psn_add(w->first_psn, w->read_pkts));
  return psn_lt(psn, qp->comp.una) || rct_comp_sacked(qp, psn);
}

/* First response PSN of READ w not received yet (last_psn + 1 if none). */
uint32_t rct_comp_read_first_missing(const struct rct_qp *qp, const struct rct_send_wqe *w)
{
  uint32_t q = psn_lt(w->first_psn, qp->comp.una) ? qp->comp.una : w->first_psn, k, n;
  if (!qp->sr)
    return psn_add(w->first_psn, w->read_pkts);
  if (psn_gt(q, w->last_psn))
    return psn_add(w->last_psn, 1);
  /* q >= una: received means sacked, and nothing past SR_WINDOW is */
  k = (uint32_t)psn_diff(q, qp->comp.una);
  n = (uint32_t)psn_diff(w->last_psn, qp->comp.una) + 1;
  if (n > RCT_SR_WINDOW)
    n = RCT_SR_WINDOW;
  return psn_add(qp->comp.una, k < n ? rct_bm_next_clear(qp->comp.sr_sacked, k, n) : k);
}

/*
 * Acknowledge every outstanding PSN up to and including p [REQ-ACK-1],
 * completing WQEs in order [REQ-CMPL-1] [REQ-CMPL-2]. A READ with missing
 * responses before p stops the walk and is re-requested [REQ-ACK-5].
 */
static bool ack_walk(struct rct_qp *qp, uint64_t now, uint32_t p)
{
  uint32_t new_una = psn_add(p, 1);
  bool rereq = false;
  if (psn_lt(p, qp->comp.una))
    return false;
  while (qp->base.sq_head != qp->base.sq_tail) {
    struct rct_send_wqe *w = SQ_AT(&qp->base, qp->base.sq_head);
    if (!w->started || psn_gt(w->first_psn, p))
      break;
    if (rct_wqe_reads(w) && w->read_pkts < w->npkts) {
      uint32_t missing = rct_comp_read_first_missing(qp, w);
      if (psn_ge(p, missing)) {
        new_una = missing;
        rereq = true;
      }
      break;
    }
    if (psn_gt(w->last_psn, p))
      break;
    complete_wqe(qp, w);
  }
  if (psn_gt(new_una, qp->comp.una))
    una_advanced(qp, now, new_una);
  if (rereq && qp->sr) {
    sr_keep_acked(qp, p);
    /* each missing run up to p, once until the next round [SR-REQ-13] [SR-REQ-16] */
    rct_req_sr_resend(qp, new_una, psn_add(new_una, 1), psn_add(p, 1));
  } else if (rereq && !(qp->comp.retx_valid && qp->comp.retx_psn == new_una)) {
    resend_from(qp, new_una);                                /* no retry used [REQ-ACK-5] */
    qp->comp.retx_psn = new_una;
    qp->comp.retx_valid = 1;
  }
  return true;
}

/* What una may move over now without new information: a complete READ at
 * its head (SR accepts responses of later READs), or a run of PSNs known as
 * received (SR). Returns the PSN to acknowledge through, or false. */
static bool settle_point(struct rct_qp *qp, uint32_t *p)
{
  struct rct_send_wqe *w;
  uint32_t k = 0;
  if (qp->base.sq_head == qp->base.sq_tail || !psn_lt(qp->comp.una, rct_req_next_psn(qp)))
    return false;
  w = SQ_AT(&qp->base, qp->base.sq_head);
  if (w->started && rct_wqe_reads(w) && w->read_pkts == w->npkts &&
      psn_le(w->first_psn, qp->comp.una)) {
    *p = w->last_psn;
    return true;
  }
  if (!qp->sr)
    return false;
  k = rct_bm_next_clear(qp->comp.sr_sacked, 0, RCT_SR_WINDOW);
  if (!k)
    return false;
  *p = psn_add(qp->comp.una, k - 1);
  return true;
}

static void ack_through(struct rct_qp *qp, uint64_t now, uint32_t p)
{
  for (int guard = 0; guard < 1 << 20; guard++) {
    uint32_t before = qp->comp.una;
    ack_walk(qp, now, p);
    if (guard && qp->comp.una == before)
      break;
    if (qp->base.attr.qp_state == RCT_QPS_ERR || !settle_point(qp, &p))
      break;
  }
}

/* [PSN-WIN-4]: an ACK may name una - 1 (nothing new), a NAK must name una or later. */
static bool ack_in_window(const struct rct_qp *qp, uint32_t p, bool nak)
{
  uint32_t lo = nak ? qp->comp.una : psn_prev(qp->comp.una);
  return psn_diff(p, lo) >= 0 && psn_diff(p, rct_req_next_psn(qp)) < 0;
}

static void handle_rnr(struct rct_qp *qp, uint64_t now, uint32_t p, uint8_t syn)
{
  ack_through(qp, now, psn_prev(p));
  if (qp->base.attr.qp_state == RCT_QPS_ERR)
    return;
  if (qp->comp.rnr_left == 0) {
    fail_wr(qp, p, true, rct_syndrome_info(syn)->status, syn);   /* [REQ-RNR-1] */
    return;
  }
  if (qp->comp.rnr_left != RCT_RETRY_INFINITE)
    qp->comp.rnr_left--;
  progress(qp);                    /* the responder has the request [REQ-RETRY-5] */
  qp->comp.rnr_psn = p;
  qp->base.cnt.rnr_waits++;
  rct_timer_stop(&qp->base, RCT_TIMER_RETRANS);                       /* [REQ-RNR-1] */
  rct_req_pause_rnr(qp, now + rct_rnr_timer_ns(syn & 0x1f));
  if (qp->sr) {
    rct_req_sr_rescan(qp, p);                                  /* [SR-REQ-6] */
  } else {
    resend_from(qp, p);
  }
}

/* Consume one retry or fail with RETRY_EXC_ERR [REQ-RETRY-2]. */
static bool use_retry(struct rct_qp *qp)
{
  if (qp->comp.retry_left == 0) {
    fail_wr(qp, 0, false, RCT_WC_RETRY_EXC_ERR, 0);
    return false;
  }
  qp->comp.retry_left--;
  return true;
}

static void handle_seq_nak(struct rct_qp *qp, uint64_t now, uint32_t p)
{
  uint32_t old_una = qp->comp.una;
  ack_through(qp, now, psn_prev(p));
  if (qp->base.attr.qp_state == RCT_QPS_ERR)
    return;
  if (psn_lt(qp->comp.una, p))
    return;      /* stopped at a READ missing responses: re-requested from una [REQ-ACK-5] */
  if (rct_timer_armed(&qp->base, RCT_TIMER_RNR) && psn_le(p, qp->comp.rnr_psn))
    return;                                          /* [REQ-RNR-3] */
  if (qp->comp.retx_valid && psn_le(p, qp->comp.retx_psn))
    return;                                          /* [REQ-GBN-2] */
  if (qp->comp.una == old_una && !use_retry(qp))
    return;
  window_cut(qp);                                           /* [REQ-WIN-5] */
  qp->comp.retx_psn = p;
  qp->comp.retx_valid = 1;
  resend_from(qp, p);                                       /* [REQ-GBN-1] */
  rct_timer_stop(&qp->base, RCT_TIMER_RETRANS);                   /* restarted by the resend */
}

static void handle_fatal_nak(struct rct_qp *qp, uint64_t now, uint32_t p, uint8_t syn)
{
  ack_through(qp, now, psn_prev(p));
  if (qp->base.attr.qp_state != RCT_QPS_ERR)
    fail_wr(qp, p, true, rct_syndrome_info(syn)->status, syn);   /* [REQ-ACK-6] [WC-STATUS-2] */
}

/* SR: one past the last READ response PSN requested at or after PSN from
 * that has not arrived (from if none): the responder drops READ requests
 * that arrive behind a gap [SR-RESP-6], so their pieces go with the hole;
 * the scan asks only for the missing runs [SR-REQ-12] [SR-REQ-16]. */
static uint32_t sr_reads_after(struct rct_qp *qp, uint32_t from)
{
  uint32_t end = from;
  for (uint32_t i = qp->base.sq_head; i != qp->base.sq_tail; i++) {
    struct rct_send_wqe *w = SQ_AT(&qp->base, i);
    uint32_t last;
    if (!w->started || psn_ge(w->first_psn, rct_req_next_psn(qp)))
      break;
    /* one sent with SRXH_AFTER_READS ran at the responder [SR-RESP-6] */
    if (!rct_wqe_reads(w) || w->after_reads || psn_lt(w->last_psn, from))
      continue;
    last = psn_lt(w->last_psn, rct_req_next_psn(qp)) ? w->last_psn : psn_prev(rct_req_next_psn(qp));
    if (!rct_comp_sacked(qp, last))
      end = psn_add(last, 1);
  }
  return end;
}

/* Selective NAK: ack before e, mark sacked PSNs, resend holes [SR-REQ-2] [SR-REQ-3]. */
static void handle_sack(struct rct_qp *qp, uint64_t now, uint32_t e, const struct rct_hdr *h)
{
  uint32_t nbits = 64u * (1u + h->sack_ext_n);       /* [SR-WIRE-8] */
  uint32_t high = e, hole_end, end;
  bool fresh = false;
  qp->base.cnt.rx_sack++;
  ack_through(qp, now, psn_prev(e));
  if (qp->base.attr.qp_state == RCT_QPS_ERR)
    return;
  for (uint32_t i = 1; i < nbits; i++) {
    uint32_t psn = psn_add(e, i), d;
    uint64_t word = i < 64 ? h->sack : h->sack_ext[(i >> 6) - 1];
    if (!((word >> (i & 63)) & 1))
      continue;
    d = (uint32_t)psn_diff(psn, qp->comp.una);
    if (psn_lt(psn, rct_req_next_psn(qp)) && d < RCT_SR_WINDOW && !bm_test(qp->comp.sr_sacked, d)) {
      bm_set(qp->comp.sr_sacked, d);
      fresh = true;
      /* not when the holes before it are repaired [REQ-TMO-4] */
      if (qp->comp.rtt_armed && psn == qp->comp.rtt_psn)
        rtt_end(qp, now);
    }
    high = psn;
  }
  if (fresh)
    progress(qp);                                    /* [REQ-RETRY-4] */
  if (psn_gt(high, e))
    rct_req_sr_forget_lost(qp, e, high);             /* [SR-REQ-15] */
  if (rct_timer_armed(&qp->base, RCT_TIMER_RNR) || !psn_lt(e, rct_req_next_psn(qp)))
    return;
  /* the hole: e up to the highest sacked PSN, at least e itself [SR-REQ-12] */
  hole_end = psn_gt(high, e) ? high : psn_add(e, 1);
  end = sr_reads_after(qp, hole_end);
  rct_req_sr_resend(qp, e, hole_end, psn_gt(end, hole_end) ? end : hole_end);
}

static void handle_ack_packet(struct rct_qp *qp, uint64_t now, struct rct_pkt *p)
{
  uint32_t psn = p->h.bth.psn;
  uint8_t syn = p->h.aeth.syndrome;
  const struct rct_syndrome_info *si = rct_syndrome_info(syn);
  if (!ack_in_window(qp, psn, (syn & AETH_KIND_MASK) != AETH_ACK || (p->opflags & OPF_SACKH))) {
    /* [REQ-ACK-2] */
    if (psn_lt(psn, qp->comp.una))
      qp->base.cnt.rx_stale_ack++;
    else
      qp->base.cnt.rx_out_of_window++;
    return;
  }
  qp->comp.last_msn = p->h.aeth.msn;                            /* [REQ-ACK-4] */
  if (p->opflags & OPF_SACKH) {
    if (syn != AETH_NAK_PSN_SEQ)
      goto bad;
    handle_sack(qp, now, psn, &p->h);
    return;
  }
  rct_cnt_bump(&qp->base.cnt, si->rx_cnt);
  switch (si->kind) {
  case SYN_ACK:
    ack_through(qp, now, psn);
    return;
  case SYN_RNR_NAK:
    handle_rnr(qp, now, psn, syn);
    return;
  case SYN_NAK_SEQ:
    handle_seq_nak(qp, now, psn);
    return;
  case SYN_NAK_FATAL:
    handle_fatal_nak(qp, now, psn, syn);
    return;
  default:
    goto bad;
  }
bad:
  qp->base.cnt.rx_bad_aeth++;                                   /* [REQ-ACK-7] */
  fail_wr(qp, 0, false, RCT_WC_BAD_RESP_ERR, syn);         /* [REQ-ACK-7] */
}

/* The oldest started READ that still misses responses, if psn is one of its
 * response PSNs or of a later READ's. */
static struct rct_send_wqe *read_of_resp(struct rct_qp *qp, uint32_t psn, bool *later)
{
  struct rct_send_wqe *oldest = 0;
  /* start at the remembered oldest incomplete READ: no per-frame walk over
   * the SENDs and WRITEs in front of it */
  uint32_t i = qp->comp.rd_hint - qp->base.sq_head < qp->base.sq_tail - qp->base.sq_head ? qp->comp.rd_hint : qp->base.sq_head;
  *later = false;
  for (; i != qp->base.sq_tail; i++) {
    struct rct_send_wqe *w = SQ_AT(&qp->base, i);
    if (!w->started)
      break;
    if (!rct_wqe_reads(w) || w->read_pkts == w->npkts)
      continue;
    if (!oldest) {
      oldest = w;
      qp->comp.rd_hint = i;
    }
    if (psn_le(w->first_psn, psn) && psn_le(psn, w->last_psn)) {
      if (qp->sr)
        return w;                 /* any outstanding READ [SR-REQ-7] */
      *later = w != oldest;
      return oldest;
    }
  }
  return 0;
}

/* Opcode and length a READ response at index idx must have [OPC-SEQ-6] [OPC-LEN-2]:
 * positions count from the request that produced it; requests never cross
 * a piece, so a piece's first response starts a sequence (FIRST or ONLY)
 * and its last one ends it (LAST or ONLY); a re-request may start and end
 * anywhere inside [REQ-READ-3] [REQ-READ-7] [SR-REQ-7]. */
static bool read_resp_ok(const struct rct_qp *qp, const struct rct_send_wqe *w, uint32_t idx,
                         const struct rct_pkt *p)
{
  uint32_t f = p->opflags, pos, len;
  uint32_t psn = psn_add(w->first_psn, idx);
  bool start = rct_read_piece_start(w, psn), end = psn == rct_read_piece_end(w, psn);
  bool last = idx + 1 == w->npkts;
  if (rct_wr_atomic(w->wr.opcode) != ((f & OPF_ATOMACK) != 0))
    return false;                     /* an atomic's answer is an ATOMIC_ACK, a READ's never [REQ-ATOM-3] */
  if (f & OPF_ATOMACK)
    return (p->h.aeth.syndrome & AETH_KIND_MASK) == AETH_ACK;
  pos = f & (OPF_FIRST | OPF_MIDDLE | OPF_LAST);
  if (pos == OPF_FIRST && end)
    return false;
  if (pos == OPF_MIDDLE && (start || end))
    return false;
  if (pos == OPF_LAST && start)
    return false;
  len = last ? w->length - (idx << qp->base.mtu_shift) : qp->base.mtu;
  if (p->paylen != len)
    return false;
  if ((f & OPF_AETH) && (p->h.aeth.syndrome & AETH_KIND_MASK) != AETH_ACK)
    return false;
  return true;
}

/* A response that is not the next one expected (in-order READs) [REQ-READ-1] [REQ-READ-5]. */
static void read_resp_misordered(struct rct_qp *qp, uint64_t now, uint32_t psn, uint32_t expect, bool later)
{
  if (!later && psn_lt(psn, expect)) {
    qp->base.cnt.rx_dup++;
    return;
  }
  qp->base.cnt.rx_out_of_seq++;
  if (!qp->sr) {
    /* responses before it were lost: implied ACK [REQ-ACK-3] -> [REQ-ACK-5] */
    ack_through(qp, now, psn_prev(psn));
  } else if (!(qp->comp.retx_valid && qp->comp.retx_psn == expect)) {
    qp->comp.retx_psn = expect;                               /* [SR-REQ-13] once per gap */
    qp->comp.retx_valid = 1;
    rct_req_sr_unmark(qp, expect);
    rct_req_sr_resend(qp, expect, psn_add(expect, 1), psn_add(expect, 1));
  }
}

/* Copy a response's payload into the READ's scatter list at its offset;
 * an ATOMIC_ACK's original value into the atomic's 8 bytes, as an integer
 * in this host's order [REQ-ATOM-3] [HDR-ATOM-3]. */
static bool place_read_resp(struct rct_qp *qp, struct rct_send_wqe *w, uint32_t idx, struct rct_pkt *p)
{
  struct rct_iov seg[RCT_FRAME_MAX_SEGS];
  uint64_t orig = p->h.atom_orig;
  const uint8_t *src = p->payload;
  uint32_t len = p->paylen;
  int n;
  if (p->opflags & OPF_ATOMACK) {
    src = (const uint8_t *)&orig;
    len = RCT_ATOMIC_LEN;
  }
  n = rct_sge_translate(&qp->base, w->sge, w->wr.num_sge, idx << qp->base.mtu_shift, len,
                        RCT_ACCESS_LOCAL_WRITE, seg, RCT_FRAME_MAX_SEGS);
  if (n < 0) {
    fail_wr(qp, p->h.bth.psn, true, RCT_WC_LOC_PROT_ERR, 0);
    return false;
  }
  rct_segs_copy(seg, n, src, len);                    /* [REQ-READ-1] */
  return true;
}

static void handle_read_resp(struct rct_qp *qp, uint64_t now, struct rct_pkt *p)
{
  uint32_t psn = p->h.bth.psn, idx, expect;
  bool later;
  struct rct_send_wqe *w = read_of_resp(qp, psn, &later);
  if (!w) {
    if (psn_lt(psn, qp->comp.una))
      qp->base.cnt.rx_dup++;              /* its READ is complete: a replay's late copy [REQ-READ-1] */
    else
      qp->base.cnt.rx_unexpected++;                             /* [REQ-ACK-7] outside */
    return;
  }
  expect = qp->sr ? 0 : rct_comp_read_first_missing(qp, w);   /* go-back-N: in order */
  if (qp->sr) {
    if (read_received(qp, w, psn)) {                 /* any order [SR-REQ-7] */
      qp->base.cnt.rx_dup++;
      return;
    }
    if ((uint32_t)psn_diff(psn, qp->comp.una) >= RCT_SR_WINDOW) {
      qp->base.cnt.rx_unexpected++;                       /* never asked for [REQ-READ-6] */
      return;
    }
  } else if (later || psn != expect) {
    if (later || psn_gt(psn, expect))
      progress(qp);    /* the responder executed a (re-)request [REQ-RETRY-4] */
    read_resp_misordered(qp, now, psn, expect, later);
    return;
  }
  idx = (uint32_t)psn_diff(psn, w->first_psn);
  if (!read_resp_ok(qp, w, idx, p)) {
    qp->base.cnt.rx_unexpected++;
    fail_wr(qp, 0, false, RCT_WC_BAD_RESP_ERR, 0);   /* [REQ-ACK-7] */
    return;
  }
  qp->base.cnt.rx_read_resp++;
  ack_through(qp, now, psn_prev(w->first_psn));   /* implied ACK [REQ-ACK-3] */
  if (qp->base.attr.qp_state == RCT_QPS_ERR || !place_read_resp(qp, w, idx, p))
    return;
  w->read_pkts++;
  progress(qp);                                            /* [REQ-RETRY-4] */
  if (qp->sr && psn_ge(psn, qp->comp.una)) {
    if (rct_req_sr_resent(qp, psn))
      rct_req_sr_read_answered(qp, psn);             /* [SR-REQ-16] */
    bm_set(qp->comp.sr_sacked, (uint32_t)psn_diff(psn, qp->comp.una));
    rct_req_sr_forget_lost(qp, qp->comp.una, psn);   /* a lost re-request [SR-REQ-16] */
  }
  ack_through(qp, now, psn);                               /* [REQ-CMPL-1] */
}

void rct_comp_handle(struct rct_qp *qp, uint64_t now, struct rct_pkt *p)
{
  if (p->opflags & OPF_ACK)
    handle_ack_packet(qp, now, p);
  else if (p->opflags & (OPF_READ | OPF_ATOMACK))
    handle_read_resp(qp, now, p);                     /* [REQ-ATOM-3] */
  else
    qp->base.cnt.rx_unexpected++;                     /* [OPC-VAL-1] */
}

/* Retransmission timer fired [REQ-TMO-2]. */
void rct_comp_timeout(struct rct_qp *qp, uint64_t now)
{
  enum rct_qp_state s = qp->base.attr.qp_state;
  uint64_t rto = rct_comp_rto(qp);
  if ((s != RCT_QPS_RTS && s != RCT_QPS_SQD) || !outstanding(qp))
    return;
  qp->base.cnt.timeouts++;
  if (!use_retry(qp))
    return;
  if (qp->base.attr.adaptive_rto && rto != RCT_NEVER)
    qp->comp.rto = 2 * rto;                  /* backoff doubles the RTO in effect [REQ-TMO-9] */
  qp->comp.retx_valid = 0;
  if (qp->sr) {
    /* every unacknowledged, unsacked PSN up to the send point [SR-REQ-11] */
    rct_req_sr_rescan(qp, qp->comp.una);
  } else {
    window_cut(qp);                                        /* [REQ-WIN-5] */
    resend_from(qp, qp->comp.una);                         /* [REQ-GBN-1] */
  }
  rct_req_probe(qp);                                           /* [REQ-TMO-6] */
  restart_timer(qp, now);
}

/* Early probe timer fired: the packet at una once more, with AckReq, so a
 * lost tail or a lost resend shows up in the answer before the RTO; in SR
 * a new round, so that answer resends every hole it reports. No retry
 * used, no backoff [REQ-TMO-8]. */
void rct_comp_probe(struct rct_qp *qp, uint64_t now)
{
  enum rct_qp_state s = qp->base.attr.qp_state;
  if ((s != RCT_QPS_RTS && s != RCT_QPS_SQD) || !outstanding(qp) ||
      rct_timer_armed(&qp->base, RCT_TIMER_RNR) || probe_waits(qp, now))
    return;
  qp->comp.early_probed = 1;
  qp->base.cnt.early_probes++;
  rct_req_early_probe(qp);                              /* sent as [REQ-TMO-6]'s */
  if (qp->sr)
    rct_req_sr_new_round(qp);
}

/* RNR timer fired: resume sending from the RNR-NAKed PSN [REQ-RNR-1]. */
void rct_comp_rnr_timeout(struct rct_qp *qp, uint64_t now)
{
  qp->base.cnt.rnr_timeouts++;
  restart_timer(qp, now);
}

/* Derived for tracing: the completer's state is not recorded. */
enum rct_comp_state rct_qp_comp_state(const struct rct_qp *qp)
{
  if (qp->base.attr.qp_state == RCT_QPS_ERR)
    return RCT_COMP_ERROR;
  if (rct_req_waiting_rnr(qp))
    return RCT_COMP_WAIT_RNR;
  return outstanding(qp) ? RCT_COMP_WAIT_ACK : RCT_COMP_IDLE;
}
