/*
 * resp.c: the responder role. Executes incoming request packets in PSN
 * order (go-back-N) or places them within a window (selective repeat),
 * checks opcode sequence, lengths, R_Keys and access, consumes receive
 * WQEs, holds READ resources and answers with ACKs, NAKs, RNR NAKs,
 * selective NAKs and READ responses. Output is pulled by resp_poll, in PSN
 * order: a reply for PSN x leaves only after every READ response before x.
 * A plain ACK may be held (the ACK hold, qp->resp.ack). State: qp->resp,
 * written only here and in sr_resp.c. [RESP-*] [SR-RESP-*]
 */
#include "rc_int.h"

/* ---------------------------------------------------------------- */
/* The ACK hold [RESP-ACK-5]: idle, owed, held until a time, send now */
/* ---------------------------------------------------------------- */

static bool ack_owed(const struct rct_qp *qp)
{
  return qp->resp.ack.state >= RCT_ACK_OWED && qp->resp.ack.state <= RCT_ACK_SEND_NOW;
}

/* No ACK is owed or held any more. */
static void ack_done(struct rct_qp *qp)
{
  qp->resp.ack.state = RCT_ACK_IDLE;
  rct_timer_stop(&qp->base, RCT_TIMER_ACK);
}

/* An ACK through psn is owed; a hold in progress stays. */
void rct_resp_want_ack(struct rct_qp *qp, uint32_t psn)
{
  if (qp->resp.ack.state == RCT_ACK_IDLE)
    qp->resp.ack.state = RCT_ACK_OWED;
  qp->resp.ack.psn = psn;
}

/* May the owed ACK wait? Until ack_delay_ns after it first could have gone,
 * or until a request packet of this QP has gone out, so that in a
 * ping-pong the answer travels ahead of the ACK. */
static bool ack_held(struct rct_qp *qp, uint64_t now)
{
  struct rct_ack_hold *a = &qp->resp.ack;
  uint64_t delay = qp->base.dev->attr.ack_delay_ns;
  if (!delay || a->state == RCT_ACK_SEND_NOW)
    return false;
  if (a->state == RCT_ACK_OWED) {
    a->state = RCT_ACK_HELD;
    a->until = now + delay;
    rct_timer_set(&qp->base, RCT_TIMER_ACK, a->until);
  }
  return now < a->until;
}

/* A request went out (or the caller is closing): an owed ACK goes at the
 * next poll. Returns whether one was owed (or a parting ACK waits). */
bool rct_resp_release_ack(struct rct_qp *qp)
{
  if (!ack_owed(qp))
    return qp->resp.ack.state == RCT_ACK_PARTING;
  qp->resp.ack.state = RCT_ACK_SEND_NOW;
  return true;
}

/* Preconditions: the QP is leaving RTR, RTS or SQD for ERR or RESET.
 * An ACK owed or held becomes the parting ACK, sent at the next poll
 * whatever the new state; with none owed the QP still answers duplicates
 * in ERR with one for epsn - 1 [RESP-ACK-6]. Returns whether one is to go. */
bool rct_resp_part(struct rct_qp *qp)
{
  struct rct_ack_hold *a = &qp->resp.ack;
  bool owed = ack_owed(qp);
  if (!owed)
    a->psn = psn_prev(qp->resp.epsn);
  a->msn = qp->resp.msn;
  a->state = owed ? RCT_ACK_PARTING : RCT_ACK_PARTED;
  rct_timer_stop(&qp->base, RCT_TIMER_ACK);
  return owed;
}

/* Preconditions: the QP is in ERR and p is a request for it. A duplicate
 * SEND or WRITE (the responder executed it before ERR) is answered with
 * the parting ACK again, so a lost parting ACK costs the requester a
 * retransmission, not its WR [RESP-ACK-6]. Returns whether one is to go. */
bool rct_resp_answer_in_err(struct rct_qp *qp, const struct rct_pkt *p)
{
  int32_t d = psn_diff(p->h.bth.psn, qp->resp.epsn);
  if (qp->resp.ack.state != RCT_ACK_PARTED || !(p->opflags & OPF_SUPPORTED) ||
      (p->opflags & (OPF_READ | OPF_ATOMIC)) || d >= 0 || d < -(int32_t)RCT_RESP_WINDOW)
    return false;
  qp->resp.ack.state = RCT_ACK_PARTING;
  return true;
}

/* The parting ACK, in any state of the QP [RESP-ACK-6]. Returns 1 if sent. */
int rct_resp_poll_parting(struct rct_qp *qp, struct rct_frame *f)
{
  struct rct_ack_hold *a = &qp->resp.ack;
  if (a->state != RCT_ACK_PARTING)
    return 0;
  a->state = RCT_ACK_PARTED;
  rct_tx_ack(&qp->base, f, AETH_ACK | AETH_CREDIT_INVALID, a->psn, a->msn);   /* [HDR-AETH-2] */
  qp->base.cnt.tx_ack++;
  return 1;
}

/* The hold ran out. */
void rct_resp_ack_timeout(struct rct_qp *qp, uint64_t now)
{
  if (qp->resp.ack.state == RCT_ACK_HELD)
    qp->resp.ack.state = RCT_ACK_SEND_NOW;
}

/* keep_parting: a parting ACK not yet sent survives (entering RESET) [RESP-ACK-6]. */
void rct_resp_reset(struct rct_qp *qp, bool keep_parting)
{
  bool parting = keep_parting && qp->resp.ack.state == RCT_ACK_PARTING;
  qp->resp.state = RCT_RESP_IDLE;
  qp->resp.epsn = qp->base.attr.rq_psn;                           /* [RESP-PSN-1] */
  qp->resp.msn = 0;                                          /* [RESP-MSN-1] */
  qp->resp.nak_latch = qp->resp.nak_pending = qp->resp.sack_pending = qp->resp.sack_gap = 0;
  qp->resp.sack_skipped = 0;
  qp->resp.sack_epsn = psn_prev(qp->resp.epsn);          /* no selective NAK sent yet */
  ack_done(qp);
  if (parting)
    qp->resp.ack.state = RCT_ACK_PARTING;
  qp->resp.err_after_nak = 0;
  qp->resp.unacked = 0;
  qp->resp.rd_head = qp->resp.rd_tail = 0;
  for (uint32_t i = 0; i < qp->base.init.rd_size; i++)
    qp->base.init.rd[i].valid = qp->base.init.rd[i].pending = 0;
  bm_clear_all(qp->resp.sr_rcvd);
  bm_clear_all(qp->resp.sr_read);
  qp->resp.rsn_done = 0;
  for (int i = 0; i < RCT_SR_WINDOW; i++)
    qp->resp.sr_slot_kind[i] = SLOT_NONE;
}

static struct rct_rd_res *rd_oldest_pending(const struct rct_qp *qp)
{
  struct rct_rd_res *best = 0;
  for (uint32_t i = qp->resp.rd_head; i != qp->resp.rd_tail; i++) {
    struct rct_rd_res *r = RD_AT(&qp->base, i);
    if (r->pending && (!best || psn_lt(r->next_psn, best->next_psn)))
      best = r;
  }
  return best;
}

bool rct_resp_has_work(const struct rct_qp *qp)
{
  return ack_owed(qp) || qp->resp.ack.state == RCT_ACK_PARTING || qp->resp.nak_pending || qp->resp.sack_pending || rd_oldest_pending(qp);
}

/* ---------------------------------------------------------------- */
/* Replies                                                           */
/* ---------------------------------------------------------------- */

/* A NAK for psn; fatal ones move the QP to ERR once sent [RESP-ERR-1] [RESP-ERR-2]. */
void rct_resp_want_nak(struct rct_qp *qp, uint8_t syn, uint32_t psn, bool fatal)
{
  qp->resp.nak_pending = 1;
  qp->resp.nak_syndrome = syn;
  qp->resp.nak_psn = psn;
  if (fatal) {
    qp->resp.err_after_nak = 1;
    qp->resp.state = RCT_RESP_ERROR;
  }
}

/* Complete the receive WQE at the head. */
void rct_resp_recv_complete(struct rct_qp *qp, enum rct_wc_status st, enum rct_wc_opcode op, bool se,
                          uint32_t len, bool has_imm, uint32_t imm)
{
  struct rct_recv_wqe *r = RQ_AT(&qp->base, qp->base.rq_head);
  struct rct_wc wc = { .wr_id = r->wr_id, .status = st, .opcode = op, .qp_num = qp->base.init.qpn,
                       .src_qp = qp->base.attr.dest_qp_num };
  if (st == RCT_WC_SUCCESS) {
    wc.byte_len = len;
    if (has_imm) {
      wc.wc_flags = RCT_WC_WITH_IMM;
      wc.imm_data = imm;
    }
    if (se)
      wc.solicited = 1;                         /* [HDR-BTH-3], outside wc_flags */
  }
  rct_cq_push(&qp->base, qp->base.init.recv_cq, &wc);
  qp->base.rq_head++;
}

/* A fatal error while executing: NAK, fail the taken receive, go to ERR. */
void rct_resp_fail(struct rct_qp *qp, uint8_t syn, uint32_t psn, bool recv_taken, enum rct_wc_status st)
{
  if (recv_taken && qp->base.rq_head != qp->base.rq_tail)
    rct_resp_recv_complete(qp, st, RCT_WC_RECV, false, 0, false, 0);
  rct_resp_want_nak(qp, syn, psn, true);
}

void rct_resp_flush(struct rct_qp *qp)
{
  while (qp->base.rq_head != qp->base.rq_tail) {
    qp->base.cnt.flushed++;
    rct_resp_recv_complete(qp, RCT_WC_WR_FLUSH_ERR, RCT_WC_RECV, false, 0, false, 0);
  }
  for (uint32_t i = 0; i < qp->base.init.rd_size; i++)
    qp->base.init.rd[i].pending = 0;
  qp->resp.sack_pending = qp->resp.sack_gap = 0;
  if (ack_owed(qp))
    ack_done(qp);                         /* a parting ACK stays [RESP-ACK-6] */
  qp->resp.state = RCT_RESP_ERROR;
}

/* ---------------------------------------------------------------- */
/* Checks                                                            */
/* ---------------------------------------------------------------- */

/* [OPC-SEQ-3] */
static bool sequence_ok(const struct rct_qp *qp, uint32_t f)
{
  if (qp->resp.state == RCT_RESP_IN_SEND)
    return (f & OPF_SEND) && (f & (OPF_MIDDLE | OPF_LAST)) && !(f & OPF_FIRST);
  if (qp->resp.state == RCT_RESP_IN_WRITE)
    return (f & OPF_WRITE) && (f & (OPF_MIDDLE | OPF_LAST)) && !(f & OPF_FIRST);
  return (f & OPF_FIRST) != 0;
}

/* [OPC-LEN-2] */
bool rct_resp_length_ok(const struct rct_qp *qp, uint32_t f, uint32_t len)
{
  if ((f & OPF_ONLY) == OPF_ONLY)
    return len <= qp->base.mtu;
  if (f & OPF_LAST)
    return len >= 1 && len <= qp->base.mtu;
  return len == qp->base.mtu;                               /* FIRST, MIDDLE */
}

/* R_Key check of a whole range [RESP-ACC-1] [RESP-ACC-2]. */
bool rct_resp_rkey_ok(struct rct_qp *qp, uint32_t rkey, uint64_t va, uint32_t len, uint32_t access)
{
  const struct rct_mr_ops *ops = qp->base.dev->attr.mr_ops;
  if (!(qp->base.attr.qp_access_flags & access))
    return false;
  if (len == 0)
    return true;
  return ops->translate(qp->base.dev->attr.mr_ctx, rkey, true, qp->base.init.pd, va, len, access, 0, 0) >= 0;
}

/* Does the packet take a receive WQE (SEND FIRST/ONLY, WRITE LAST/ONLY with imm)? */
bool rct_resp_takes_recv(uint32_t f)
{
  if (!(f & OPF_RECV))
    return false;
  return (f & OPF_SEND) ? (f & OPF_FIRST) != 0 : (f & OPF_LAST) != 0;
}

/* ---------------------------------------------------------------- */
/* Execution (go-back-N, in sequence)                                */
/* ---------------------------------------------------------------- */

/* Place payload of a SEND into receive WQE r at off. Returns false after failing. */
static bool place_send(struct rct_qp *qp, struct rct_recv_wqe *r, uint32_t off, struct rct_pkt *p)
{
  struct rct_iov seg[RCT_FRAME_MAX_SEGS];
  int n;
  if ((uint64_t)off + p->paylen > r->length) {
    rct_resp_fail(qp, AETH_NAK_INV_REQ, p->h.bth.psn, true, RCT_WC_LOC_LEN_ERR);   /* [RESP-RECV-3] */
    return false;
  }
  n = rct_sge_translate(&qp->base, r->sge, r->num_sge, off, p->paylen, RCT_ACCESS_LOCAL_WRITE,
                        seg, RCT_FRAME_MAX_SEGS);
  if (n < 0) {
    rct_resp_fail(qp, AETH_NAK_REM_OP, p->h.bth.psn, true, RCT_WC_LOC_PROT_ERR);   /* [RESP-ACC-4] */
    return false;
  }
  rct_segs_copy(seg, n, p->payload, p->paylen);
  return true;
}

/* Place WRITE payload at va (already range-checked against the message). */
bool rct_resp_place_write(struct rct_qp *qp, uint32_t rkey, uint64_t va, struct rct_pkt *p, bool taken)
{
  const struct rct_mr_ops *ops = qp->base.dev->attr.mr_ops;
  struct rct_iov seg[RCT_FRAME_MAX_SEGS];
  int n;
  if (!p->paylen)
    return true;
  n = ops->translate(qp->base.dev->attr.mr_ctx, rkey, true, qp->base.init.pd, va, p->paylen,
                     RCT_ACCESS_REMOTE_WRITE, seg, RCT_FRAME_MAX_SEGS);
  if (n < 0) {
    rct_resp_fail(qp, AETH_NAK_REM_ACC, p->h.bth.psn, taken, RCT_WC_LOC_ACCESS_ERR);   /* [RESP-ACC-5] */
    return false;
  }
  rct_segs_copy(seg, n, p->payload, p->paylen);
  return true;
}

static bool exec_send(struct rct_qp *qp, struct rct_pkt *p)
{
  uint32_t f = p->opflags;
  if (f & OPF_FIRST)
    qp->resp.msg_offset = 0;
  if (!place_send(qp, RQ_AT(&qp->base, qp->base.rq_head), qp->resp.msg_offset, p))
    return false;
  qp->resp.msg_offset += p->paylen;
  if (f & OPF_LAST) {
    rct_resp_recv_complete(qp, RCT_WC_SUCCESS, RCT_WC_RECV, p->h.bth.se, qp->resp.msg_offset,
                  (f & OPF_IMM) != 0, p->h.imm);              /* [RESP-RECV-4] */
    qp->resp.msn = psn_add(qp->resp.msn, 1);                            /* [RESP-MSN-1] */
    qp->resp.state = RCT_RESP_IDLE;
  } else {
    qp->resp.state = RCT_RESP_IN_SEND;
  }
  return true;
}

static bool exec_write(struct rct_qp *qp, struct rct_pkt *p)
{
  uint32_t f = p->opflags;
  bool taken = rct_resp_takes_recv(f);
  if (f & OPF_FIRST) {
    if (!rct_resp_rkey_ok(qp, p->h.reth.rkey, p->h.reth.va, p->h.reth.dmalen, RCT_ACCESS_REMOTE_WRITE)) {
      rct_resp_fail(qp, AETH_NAK_REM_ACC, p->h.bth.psn, taken, RCT_WC_LOC_ACCESS_ERR);  /* [RESP-ACC-1] */
      return false;
    }
    qp->resp.wr_va = p->h.reth.va;
    qp->resp.wr_rkey = p->h.reth.rkey;
    qp->resp.wr_left = p->h.reth.dmalen;
    qp->resp.wr_len = p->h.reth.dmalen;
  }
  if (p->paylen > qp->resp.wr_left) {
    rct_resp_fail(qp, AETH_NAK_INV_REQ, p->h.bth.psn, taken, RCT_WC_LOC_ACCESS_ERR);  /* [RESP-ACC-1] */
    return false;
  }
  if (!rct_resp_place_write(qp, qp->resp.wr_rkey, qp->resp.wr_va, p, taken))
    return false;
  qp->resp.wr_va += p->paylen;
  qp->resp.wr_left -= p->paylen;
  if (!(f & OPF_LAST)) {
    qp->resp.state = RCT_RESP_IN_WRITE;
    return true;
  }
  if (qp->resp.wr_left) {
    rct_resp_fail(qp, AETH_NAK_INV_REQ, p->h.bth.psn, taken, RCT_WC_LOC_ACCESS_ERR);  /* [OPC-LEN-6] */
    return false;
  }
  if (f & OPF_IMM)
    rct_resp_recv_complete(qp, RCT_WC_SUCCESS, RCT_WC_RECV_RDMA_WITH_IMM, p->h.bth.se, qp->resp.wr_len,
                  true, p->h.imm);                            /* [RESP-RECV-4] */
  qp->resp.msn = psn_add(qp->resp.msn, 1);
  qp->resp.state = RCT_RESP_IDLE;
  return true;
}

/* Preconditions: a READ is held. The index of the oldest held READ, the
 * one with the lowest PSN: in SR mode a READ may have run ahead of a lower
 * one [SR-RESP-6], so the order they ran in is not it [RESP-READ-4]. */
static uint32_t rd_oldest(const struct rct_qp *qp)
{
  uint32_t best = qp->resp.rd_head;
  for (uint32_t i = best + 1; i != qp->resp.rd_tail; i++)
    if (psn_lt(RD_AT(&qp->base, i)->first_psn, RD_AT(&qp->base, best)->first_psn))
      best = i;
  return best;
}

/* Has the requester exceeded its credit of READs and atomics? Every
 * resource is held and the oldest is still sending its first response
 * [RESP-ERR-1] [RESP-ATOM-1]. */
static bool rd_credit_exceeded(const struct rct_qp *qp)
{
  const struct rct_rd_res *old;
  if (qp->base.attr.max_dest_rd_atomic == 0)
    return true;
  if (qp->resp.rd_tail - qp->resp.rd_head < qp->base.attr.max_dest_rd_atomic)
    return false;
  old = RD_AT(&qp->base, rd_oldest(qp));   /* the lowest PSN [RESP-READ-4] */
  return old->pending && !old->replay;
}

/* Why the READ request p cannot run now: the NAK syndrome, or 0 when it
 * can. Changes nothing. */
uint8_t rct_resp_read_refusal(struct rct_qp *qp, const struct rct_pkt *p)
{
  uint32_t len = p->h.reth.dmalen;
  if (rd_credit_exceeded(qp) || len > 0x80000000u)
    return AETH_NAK_INV_REQ;                                /* [RESP-ERR-1] */
  if (!rct_resp_rkey_ok(qp, p->h.reth.rkey, p->h.reth.va, len, RCT_ACCESS_REMOTE_READ))
    return AETH_NAK_REM_ACC;                                /* [RESP-ACC-1] */
  return 0;
}

/* Take a resource for the READ or atomic at psn with npkts responses: a
 * new one means the requester is done with the oldest when all are held;
 * a replay for a late duplicate of it stops here [RESP-READ-4]
 * [RESP-ATOM-1]. */
static struct rct_rd_res *rd_take(struct rct_qp *qp, uint32_t psn, uint32_t npkts)
{
  struct rct_rd_res *r;
  if (qp->resp.rd_tail - qp->resp.rd_head >= qp->base.attr.max_dest_rd_atomic) {
    /* the oldest is the lowest PSN (in SR mode a READ may have run
     * ahead of it); the resource at the head takes its place */
    struct rct_rd_res *old = RD_AT(&qp->base, rd_oldest(qp)), *head = RD_AT(&qp->base, qp->resp.rd_head);
    if (old != head)
      RCT_MEMCPY(old, head, sizeof *old);
    head->valid = head->pending = head->replay = 0;
    qp->resp.rd_head++;
  }
  r = RD_AT(&qp->base, qp->resp.rd_tail++);
  r->valid = 1;
  r->pending = 1;
  r->replay = 0;
  r->atomic = 0;
  r->first_psn = r->next_psn = r->start_psn = psn;
  r->npkts = npkts;
  r->stop_psn = psn_add(psn, npkts);
  r->saved = r->nqueued = 0;
  qp->resp.msn = psn_add(qp->resp.msn, 1);                           /* [RESP-MSN-1] */
  return r;
}

/* Execute a READ request: take a resource, queue its responses [RESP-READ-*]. */
bool rct_resp_exec_read(struct rct_qp *qp, struct rct_pkt *p)
{
  struct rct_rd_res *r;
  uint32_t len = p->h.reth.dmalen;
  uint8_t nak = rct_resp_read_refusal(qp, p);
  if (nak) {
    rct_resp_fail(qp, nak, p->h.bth.psn, false, RCT_WC_SUCCESS);
    return false;
  }
  r = rd_take(qp, p->h.bth.psn, qp_npkts(&qp->base, len));
  r->va = p->h.reth.va;
  r->rkey = p->h.reth.rkey;
  r->length = len;
  return true;
}

/* Why the atomic request p cannot run: the NAK syndrome, or 0 [RESP-ATOM-2]. */
static uint8_t atomic_refusal(struct rct_qp *qp, const struct rct_pkt *p)
{
  if (rd_credit_exceeded(qp) || (p->h.atom.va & (RCT_ATOMIC_LEN - 1)))
    return AETH_NAK_INV_REQ;
  if (!rct_resp_rkey_ok(qp, p->h.atom.rkey, p->h.atom.va, RCT_ATOMIC_LEN, RCT_ACCESS_REMOTE_ATOMIC))
    return AETH_NAK_REM_ACC;
  return 0;
}

/* The read-modify-write of atomic p on its target, the 8 bytes as an
 * integer in this host's order; returns the value they held. One step under
 * the caller's device lock, so atomic with respect to every other atomic
 * of the device's QPs [RESP-ATOM-4] [HDR-ATOM-3]. */
static bool atomic_rmw(struct rct_qp *qp, const struct rct_pkt *p, uint64_t *orig)
{
  const struct rct_mr_ops *ops = qp->base.dev->attr.mr_ops;
  struct rct_iov seg;
  uint64_t v, nv;
  if (ops->translate(qp->base.dev->attr.mr_ctx, p->h.atom.rkey, true, qp->base.init.pd, p->h.atom.va,
                     RCT_ATOMIC_LEN, RCT_ACCESS_REMOTE_ATOMIC, &seg, 1) != 1 || seg.len != RCT_ATOMIC_LEN)
    return false;
  RCT_MEMCPY(&v, seg.base, RCT_ATOMIC_LEN);
  if ((p->h.bth.opcode & ~OP_SR_BASE) == OP_CMP_SWAP)
    nv = v == p->h.atom.compare ? p->h.atom.swap_add : v;
  else
    nv = v + p->h.atom.swap_add;
  RCT_MEMCPY(seg.base, &nv, RCT_ATOMIC_LEN);
  *orig = v;
  return true;
}

/* Execute an atomic request: check, run it once, save its result in a
 * resource, whose ATOMIC_ACK goes in PSN order [RESP-ATOM-1] [RESP-ATOM-3]. */
bool rct_resp_exec_atomic(struct rct_qp *qp, struct rct_pkt *p)
{
  struct rct_rd_res *r;
  uint64_t orig;
  uint8_t nak = atomic_refusal(qp, p);
  if (!nak && !atomic_rmw(qp, p, &orig))
    nak = AETH_NAK_REM_ACC;                                    /* [RESP-ATOM-2] */
  if (nak) {
    rct_resp_fail(qp, nak, p->h.bth.psn, false, RCT_WC_SUCCESS);
    return false;
  }
  r = rd_take(qp, p->h.bth.psn, 1);
  r->atomic = 1;
  r->orig = orig;
  r->va = p->h.atom.va;
  r->rkey = p->h.atom.rkey;
  r->length = RCT_ATOMIC_LEN;
  return true;
}

/* Acknowledge an executed SEND/WRITE packet [RESP-ACK-1] [RESP-ACK-2]. */
static void ack_policy(struct rct_qp *qp, struct rct_pkt *p, uint32_t ack_psn)
{
  qp->resp.unacked++;
  if (p->h.bth.ackreq || qp->resp.unacked >= RCT_ACK_COALESCE_MAX)
    rct_resp_want_ack(qp, ack_psn);
}

static void execute(struct rct_qp *qp, struct rct_pkt *p)
{
  uint32_t f = p->opflags;
  if (!(f & OPF_SUPPORTED) || !sequence_ok(qp, f) || !rct_resp_length_ok(qp, f, p->paylen)) {
    rct_resp_fail(qp, AETH_NAK_INV_REQ, p->h.bth.psn, qp->resp.state == RCT_RESP_IN_SEND,
         RCT_WC_LOC_LEN_ERR);            /* [RESP-ERR-1] [OPC-SEQ-3] [OPC-LEN-2] [OPC-VAL-1] */
    return;
  }
  if (rct_resp_takes_recv(f) && !rct_rq_at(&qp->base, 0)) {
    rct_resp_want_nak(qp, AETH_RNR_NAK | qp->base.attr.min_rnr_timer, p->h.bth.psn, false); /* [RESP-RECV-2] [SRQ-TAKE-3] */
    return;
  }
  if (f & OPF_READ) {
    if (rct_resp_exec_read(qp, p))
      qp->resp.epsn = psn_add(qp->resp.epsn, RD_AT(&qp->base, qp->resp.rd_tail - 1)->npkts);   /* [RESP-PSN-1] */
    return;                                                  /* [RESP-ACK-1] */
  }
  if (f & OPF_ATOMIC) {
    if (rct_resp_exec_atomic(qp, p))
      qp->resp.epsn = psn_add(qp->resp.epsn, 1);
    return;
  }
  if (!((f & OPF_SEND) ? exec_send(qp, p) : exec_write(qp, p)))
    return;
  qp->resp.epsn = psn_add(qp->resp.epsn, 1);
  ack_policy(qp, p, p->h.bth.psn);
}

/* One past the last response a duplicate READ at index k of r asks for:
 * its DMA length's worth, inside r [RESP-DUP-5]. */
static uint32_t dup_stop(const struct rct_qp *qp, const struct rct_rd_res *r, uint32_t k, uint32_t len)
{
  uint32_t n = qp_npkts(&qp->base, len);
  if (n > r->npkts - k)
    n = r->npkts - k;
  return psn_add(r->first_psn, k + n);
}

/* Is [q, stop) already queued behind the current sequence of r? */
static bool replay_queued(const struct rct_rd_res *r, uint32_t q, uint32_t stop)
{
  for (uint32_t i = 0; i < r->nqueued; i++)
    if (psn_ge(q, r->queued_psn[i]) && psn_le(stop, r->queued_stop[i]))
      return true;
  return false;
}

/* Replay responses [q, stop) of r [RESP-DUP-2] [RESP-DUP-5]. A replay
 * that goes back inside a first sequence still being sent interrupts it,
 * and the sequence resumes where it was after the replay; responses that
 * sequence will still send are not asked twice; a replay asked while
 * another is being sent waits behind it (RCT_RD_REPLAYS of them; beyond
 * that the one being sent grows to cover it). */
static void replay(struct rct_qp *qp, struct rct_rd_res *r, uint32_t q, uint32_t stop)
{
  bool replaying = r->pending && (r->replay || r->saved);
  qp->base.cnt.read_replays++;
  if (!r->pending)
    r->nqueued = 0;
  if (r->pending && psn_ge(q, r->next_psn) && psn_le(stop, r->stop_psn))
    return;                                         /* on their way */
  if ((r->saved && psn_ge(q, r->saved_next) && psn_le(stop, r->saved_stop)) || replay_queued(r, q, stop))
    return;
  if (replaying && psn_ge(q, r->stop_psn) && r->nqueued < RCT_RD_REPLAYS) {
    r->queued_psn[r->nqueued] = q;
    r->queued_stop[r->nqueued++] = r->saved && psn_gt(stop, r->saved_next) ? r->saved_next : stop;
    return;
  }
  if (replaying && psn_gt(r->stop_psn, stop))
    stop = r->stop_psn;
  if (r->pending && !r->replay && !r->saved) {
    r->saved = 1;
    r->saved_next = r->next_psn;
    r->saved_start = r->start_psn;
    r->saved_stop = r->stop_psn;
  } else if (!r->saved) {
    r->replay = 1;                                  /* a stream already sent once */
  }
  if (r->saved && psn_gt(stop, r->saved_next))
    stop = r->saved_next;                           /* the rest comes with the first sequence */
  if (replaying && psn_ge(q, r->next_psn)) {
    r->stop_psn = stop;
    return;
  }
  r->next_psn = r->start_psn = q;
  r->stop_psn = stop;
  r->pending = 1;
}

/* A duplicate atomic is answered from the saved result of the atomic held
 * at its PSN, for the same target, and never executed again; one that
 * matches no held atomic (retired [RESP-READ-4]) is dropped [RESP-ATOM-3]. */
static void duplicate_atomic(struct rct_qp *qp, const struct rct_pkt *p)
{
  for (uint32_t i = qp->resp.rd_head; i != qp->resp.rd_tail; i++) {
    struct rct_rd_res *r = RD_AT(&qp->base, i);
    if (r->valid && r->atomic && r->first_psn == p->h.bth.psn && r->va == p->h.atom.va &&
        r->rkey == p->h.atom.rkey) {
      r->pending = r->replay = 1;
      qp->base.cnt.read_replays++;
      return;
    }
  }
}

/* A duplicate request [RESP-DUP-*]; in SR mode also a READ request for
 * response PSNs of a READ run ahead of epsn [SR-RESP-6]. */
void rct_resp_duplicate(struct rct_qp *qp, struct rct_pkt *p)
{
  uint32_t q = p->h.bth.psn;
  qp->base.cnt.rx_dup++;
  if (p->opflags & OPF_ATOMIC) {
    duplicate_atomic(qp, p);
    return;
  }
  if (!(p->opflags & OPF_READ)) {
    rct_resp_want_ack(qp, psn_prev(qp->resp.epsn));          /* [RESP-DUP-1] */
    return;
  }
  for (uint32_t i = qp->resp.rd_head; i != qp->resp.rd_tail; i++) {
    struct rct_rd_res *r = RD_AT(&qp->base, i);
    uint32_t k = (uint32_t)psn_diff(q, r->first_psn);
    if (!r->valid || k >= r->npkts)
      continue;
    if (p->h.reth.va != r->va + ((uint64_t)k << qp->base.mtu_shift) || p->h.reth.rkey != r->rkey)
      break;                                        /* [RESP-DUP-3] */
    replay(qp, r, q, dup_stop(qp, r, k, p->h.reth.dmalen));
    return;
  }
  /* no held READ matches: dropped silently [RESP-DUP-3] */
}

/* An RNR NAK for epsn is still to be sent: it already asks for epsn again
 * (after the RNR timer), and a sequence NAK in its place would have the
 * requester resend at once into the same empty receive queue [RESP-OOS-5]. */
static bool rnr_nak_owed(const struct rct_qp *qp)
{
  return qp->resp.nak_pending && (qp->resp.nak_syndrome & AETH_KIND_MASK) == AETH_RNR_NAK;
}

/* ---------------------------------------------------------------- */
/* Entry: classify by PSN [PSN-WIN-3]                                */
/* ---------------------------------------------------------------- */

void rct_resp_handle(struct rct_qp *qp, uint64_t now, struct rct_pkt *p)
{
  int32_t d = psn_diff(p->h.bth.psn, qp->resp.epsn);
  (void)now;
  if (qp->resp.state == RCT_RESP_ERROR) {
    qp->base.cnt.rx_bad_state++;                           /* [QP-ERR-3] */
    return;
  }
  if (d >= (int32_t)RCT_RESP_WINDOW || d < -(int32_t)RCT_RESP_WINDOW) {
    qp->base.cnt.rx_out_of_window++;                       /* [RESP-PSN-3] */
    return;
  }
  if (d < 0) {
    rct_resp_duplicate(qp, p);                                 /*  too */
    return;
  }
  if (qp->sr) {
    rct_sr_resp_handle(qp, p, d);
    return;
  }
  if (d > 0) {
    qp->base.cnt.rx_out_of_seq++;                          /* [RESP-OOS-1] */
    if (!qp->resp.nak_latch && !rnr_nak_owed(qp)) {        /* [RESP-OOS-5] */
      rct_resp_want_nak(qp, AETH_NAK_PSN_SEQ, qp->resp.epsn, false);   /* [RESP-OOS-1] */
      qp->resp.nak_latch = 1;
    }
    return;
  }
  qp->resp.nak_latch = 0;                                        /* [RESP-OOS-3] */
  execute(qp, p);
}

/* ---------------------------------------------------------------- */
/* Output                                                            */
/* ---------------------------------------------------------------- */

/* One READ response packet of r [RESP-READ-1]. Returns 0 if it had to fail. */
static int emit_read_resp(struct rct_qp *qp, struct rct_rd_res *r, struct rct_frame *f)
{
  const struct rct_mr_ops *ops = qp->base.dev->attr.mr_ops;
  uint32_t idx = (uint32_t)psn_diff(r->next_psn, r->first_psn), off = idx << qp->base.mtu_shift;
  uint32_t paylen = r->length - off < qp->base.mtu ? r->length - off : qp->base.mtu;
  bool first = r->next_psn == r->start_psn, last = psn_add(r->next_psn, 1) == r->stop_psn;
  struct rct_hdr h;
  int n = 0;
  rct_hdr_clear(&h);
  static const uint8_t resp_ops[POS_COUNT] = { [POS_FIRST] = OP_READ_RESP_FIRST,
    [POS_MIDDLE] = OP_READ_RESP_MIDDLE, [POS_LAST] = OP_READ_RESP_LAST, [POS_ONLY] = OP_READ_RESP_ONLY };
  /* positions count from where this response sequence started [REQ-READ-3] */
  h.bth.opcode = resp_ops[op_pos(first, last)];
  h.bth.psn = r->next_psn;
  h.aeth.syndrome = AETH_ACK | AETH_CREDIT_INVALID;        /* [HDR-AETH-2] */
  h.aeth.msn = qp->resp.msn;
  if (paylen) {
    n = ops->translate(qp->base.dev->attr.mr_ctx, r->rkey, true, qp->base.init.pd, r->va + off, paylen,
                       RCT_ACCESS_REMOTE_READ, f->seg, RCT_FRAME_MAX_SEGS);
    if (n < 0) {                                      /* MR went away meanwhile */
      r->pending = 0;
      rct_resp_fail(qp, AETH_NAK_REM_ACC, r->next_psn, false, RCT_WC_SUCCESS);
      return 0;
    }
  }
  f->nseg = (uint8_t)n;
  rct_tx_emit(&qp->base, f, &h, paylen);
  qp->base.cnt.tx_read_resp++;
  r->next_psn = psn_add(r->next_psn, 1);
  if (r->next_psn == r->stop_psn && r->nqueued) {
    r->next_psn = r->start_psn = r->queued_psn[0];  /* the next replay asked [RESP-DUP-5] */
    r->stop_psn = r->queued_stop[0];
    r->nqueued--;
    for (uint32_t i = 0; i < r->nqueued; i++) {
      r->queued_psn[i] = r->queued_psn[i + 1];
      r->queued_stop[i] = r->queued_stop[i + 1];
    }
  } else if (r->next_psn == r->stop_psn && r->saved) {
    r->saved = 0;                                   /* back to the first sequence [RESP-DUP-5] */
    r->next_psn = r->saved_next;
    r->start_psn = r->saved_start;
    r->stop_psn = r->saved_stop;
  } else if (r->next_psn == r->stop_psn) {
    r->pending = 0;
  }
  return 1;
}

/* The ATOMIC_ACK of atomic r: its saved original value [RESP-ATOM-3] [HDR-ATOM-2]. */
static int emit_atomic_ack(struct rct_qp *qp, struct rct_rd_res *r, struct rct_frame *f)
{
  struct rct_hdr h;
  rct_hdr_clear(&h);
  h.bth.opcode = OP_ATOMIC_ACK;
  h.bth.psn = r->first_psn;
  h.aeth.syndrome = AETH_ACK | AETH_CREDIT_INVALID;        /* [HDR-AETH-2] */
  h.aeth.msn = qp->resp.msn;
  h.atom_orig = r->orig;
  f->nseg = 0;
  rct_tx_emit(&qp->base, f, &h, 0);
  r->pending = 0;
  return 1;
}

int rct_resp_poll(struct rct_qp *qp, uint64_t now, struct rct_frame *f)
{
  struct rct_rd_res *r = rd_oldest_pending(qp);
  /* [RESP-READ-2]: replies for later PSNs wait for earlier READ responses */
  if (qp->resp.nak_pending && !(r && psn_lt(r->next_psn, qp->resp.nak_psn))) {
    uint8_t syn = qp->resp.nak_syndrome;
    qp->resp.nak_pending = 0;
    if (ack_owed(qp) && psn_lt(qp->resp.ack.psn, qp->resp.nak_psn))
      ack_done(qp);                                  /* the NAK implies it */
    rct_tx_ack(&qp->base, f, syn, qp->resp.nak_psn, qp->resp.msn);
    rct_cnt_bump(&qp->base.cnt, rct_syndrome_info(syn)->tx_cnt);
    if (qp->resp.err_after_nak)
      rct_qp_to_err(&qp->base);                            /* [QP-ERR-1] */
    return 1;
  }
  if (qp->resp.sack_pending && !qp->resp.sack_gap && !rct_bm_any(qp->resp.sr_rcvd) &&
      !rct_bm_any(qp->resp.sr_read)) {
    /* epsn has caught up since the SACK was due: nothing beyond it is
     * held, so the answer is an ACK for epsn - 1 [SR-RESP-10] */
    qp->resp.sack_pending = 0;
    rct_resp_want_ack(qp, psn_prev(qp->resp.epsn));
  }
  if (qp->resp.sack_pending && !(r && psn_lt(r->next_psn, qp->resp.epsn))) {
    rct_tx_sack(&qp->base, f, qp->resp.epsn, qp->resp.msn, qp->resp.sr_rcvd);
    qp->resp.sack_pending = qp->resp.sack_gap = 0;
    qp->resp.sack_skipped = 0;
    qp->resp.sack_epsn = qp->resp.epsn;
    ack_done(qp);
    qp->resp.unacked = 0;
    qp->base.cnt.tx_sack++;
    return 1;
  }
  if (ack_owed(qp) && !(r && psn_lt(r->next_psn, qp->resp.ack.psn))) {
    if (!r && ack_held(qp, now))
      return 0;
    ack_done(qp);
    qp->resp.unacked = 0;
    rct_tx_ack(&qp->base, f, AETH_ACK | AETH_CREDIT_INVALID, qp->resp.ack.psn, qp->resp.msn);   /* [HDR-AETH-2] */
    qp->base.cnt.tx_ack++;
    return 1;
  }
  if (r)
    return r->atomic ? emit_atomic_ack(qp, r, f) : emit_read_resp(qp, r, f);
  return 0;
}

enum rct_resp_state rct_qp_resp_state(const struct rct_qp *qp)
{
  return qp->resp.state;
}

/* Does the responder still reach memory through rkey: a WRITE it is placing,
 * or a READ response it has not finished sending? (rct_qp_key_in_use) */
bool rct_resp_uses_rkey(const struct rct_qp *qp, uint32_t rkey)
{
  if (qp->resp.wr_left > 0 && qp->resp.wr_rkey == rkey)
    return true;
  for (uint32_t i = qp->resp.rd_head; qp->base.init.rd_size && i != qp->resp.rd_tail; i++) {
    const struct rct_rd_res *r = RD_AT(&qp->base, i);
    if (r->valid && r->pending && !r->atomic && r->rkey == rkey)
      return true;
  }
  return false;
}
