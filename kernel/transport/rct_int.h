/*
 * rct_int.h: private interfaces between the files of the transport core.
 *
 * qp.c owns the QP object and its state machine, dev.c the device and its
 * ready list, tx.c frames out, rx.c frames in, timer.c the deadlines, post.c
 * posting, sge.c SGE walks; req.c (requester), comp.c (completer) and resp.c
 * with sr_resp.c (responder) are the three roles; cq.c owns completion
 * queues; event.c the events the caller drains. Each role keeps its state
 * in its own part of the QP (qp->req, qp->comp, qp->resp) and only its
 * files write it; roles and plumbing act on another role only through the
 * calls declared here, and read it only through the small inline queries
 * here.
 */
#ifndef RCT_INT_H
#define RCT_INT_H

#include "rct.h"
#include "psn.h"
#include "wire.h"
#include "opcode.h"
#include "sr_bitmap.h"

#define SQ_AT(qp, i) (&(qp)->init.sq[(i) & ((qp)->init.sq_size - 1)])
#define RQ_AT(qp, i) (&(qp)->init.rq[(i) & ((qp)->init.rq_size - 1)])
#define RD_AT(qp, i) (&(qp)->init.rd[(i) & ((qp)->init.rd_size - 1)])

/* Count one event in the QP counter at byte offset off (SYN_NO_CNT: none). */
static inline void rct_cnt_bump(struct rct_qp_counters *c, uint16_t off)
{
  if (off != SYN_NO_CNT)
    (*(uint64_t *)(void *)((uint8_t *)c + off))++;
}

/* Packets a message of len bytes takes at the QP's MTU: max(1, ceil(len/m)). */
static inline uint32_t qp_npkts(const struct rct_qp *qp, uint32_t len)
{
  return len == 0 ? 1 : ((len - 1) >> qp->mtu_shift) + 1;
}

/* qp.c: the QP state machine */
void rct_qp_to_err(struct rct_qp *qp);

/* dev.c: the device's QP list and ready list */
void rct_dev_add_qp(struct rct_dev *dev, struct rct_qp *qp);
void rct_dev_remove_qp(struct rct_dev *dev, struct rct_qp *qp);
void rct_qp_mark_ready(struct rct_qp *qp);

/* tx.c: frames out. rct_tx_emit builds a frame: headers from h (opcode etc.
 * set by the role), Ethernet/IP/UDP addressing from the QP, payload segments
 * already in f->seg[0..nseg). rct_tx_ack: an ACK or NAK (syndrome syn) for
 * psn; rct_tx_sack: a selective NAK at epsn with the placed-PSN bitmap. */
void rct_tx_emit(struct rct_qp *qp, struct rct_frame *f, struct rct_hdr *h, uint32_t paylen);
void rct_tx_ack(struct rct_qp *qp, struct rct_frame *f, uint8_t syn, uint32_t psn, uint32_t msn);
void rct_tx_sack(struct rct_qp *qp, struct rct_frame *f, uint32_t epsn, uint32_t msn,
                 const uint32_t *placed);

/* sge.c: walk an SGE list: translate [off, off+len) of the message into
 * segments; copy len bytes of src into segments. */
int rct_sge_translate(struct rct_qp *qp, const struct rct_sge *sge, int nsge, uint32_t off,
                      uint32_t len, uint32_t access, struct rct_iov *out, int max);
void rct_segs_copy(const struct rct_iov *seg, int nseg, const uint8_t *src, uint32_t len);

/* timer.c: every write of a QP deadline goes through these */
void rct_timer_set(struct rct_qp *qp, enum rct_timer t, uint64_t deadline);
void rct_timer_stop(struct rct_qp *qp, enum rct_timer t);
void rct_timer_stop_all(struct rct_qp *qp);
static inline bool rct_timer_armed(const struct rct_qp *qp, enum rct_timer t)
{
  return qp->timer[t] != RCT_NEVER;
}
static inline uint64_t rct_timer_deadline(const struct rct_qp *qp, enum rct_timer t)   /* RCT_NEVER if stopped */
{
  return qp->timer[t];
}

/* cq.c */
void rct_cq_push(struct rct_qp *qp, struct rct_cq *cq, const struct rct_wc *wc);
enum rct_wc_opcode rct_wr_to_wc_opcode(enum rct_wr_opcode op);

/* event.c: the marks the roles leave (via qp.c and cq.c), and a node's exit */
void rct_ev_qp_err(struct rct_qp *qp, enum rct_qp_err_cause cause);
void rct_ev_cq(struct rct_qp *qp, struct rct_cq *cq, enum rct_event_type t, bool solicited);
void rct_ev_forget(struct rct_ev_node *n);

/*
 * The roles. Each role's file writes only its own part of the QP
 * (qp->req, qp->comp, qp->resp); what one role makes another do is a call
 * below; what it needs to know of another is an inline query below.
 */

/* req.c: requester */
void rct_req_reset(struct rct_qp *qp);
int rct_req_poll(struct rct_qp *qp, uint64_t now, struct rct_frame *f);
bool rct_req_has_work(const struct rct_qp *qp);
struct rct_send_wqe *rct_req_wqe_of_psn(struct rct_qp *qp, uint32_t psn, uint32_t *idx);
int rct_req_build(struct rct_qp *qp, struct rct_send_wqe *w, uint32_t psn, struct rct_frame *f);
/* ... what the completer asks of it */
void rct_req_retransmit_from(struct rct_qp *qp, uint32_t psn);   /* go-back-N from psn */
void rct_req_pause_rnr(struct rct_qp *qp, uint64_t until);        /* RNR NAK: send nothing until then */
void rct_req_probe(struct rct_qp *qp);                 /* one more copy of the packet at una [REQ-TMO-6] */
void rct_req_early_probe(struct rct_qp *qp);           /* ... that leaves the RTO as it is [REQ-TMO-8] */
void rct_req_una_moved(struct rct_qp *qp, uint32_t n); /* una advanced by n PSNs */
void rct_req_flushed(struct rct_qp *qp);               /* the completer flushed the send queue */
void rct_req_sr_resend(struct rct_qp *qp, uint32_t from, uint32_t hole_end, uint32_t end);
void rct_req_sr_rescan(struct rct_qp *qp, uint32_t from);   /* a new round over [from, next_psn) */
void rct_req_sr_new_round(struct rct_qp *qp);               /* each PSN may be resent once more */
void rct_req_sr_forget_lost(struct rct_qp *qp, uint32_t from, uint32_t high);
void rct_req_sr_unmark(struct rct_qp *qp, uint32_t psn);    /* psn may be resent again */
void rct_req_sr_read_answered(struct rct_qp *qp, uint32_t psn);   /* a re-requested READ response came */
/* ... what the others may read */
static inline uint32_t rct_req_next_psn(const struct rct_qp *qp) { return qp->req.next_psn; }
static inline uint32_t rct_req_cursor(const struct rct_qp *qp) { return qp->req.psn; }
uint32_t rct_req_window(const struct rct_qp *qp);      /* [REQ-WIN-1]'s, in packets */
static inline bool rct_req_waiting_rnr(const struct rct_qp *qp)   /* the one record of it */
{
  return rct_timer_armed(qp, RCT_TIMER_RNR);
}
/* The last response PSN of the READ request of w that asks for psn: the
 * end of psn's piece (requests never cross pieces) [REQ-READ-6]. */
static inline uint32_t rct_read_piece_end(const struct rct_send_wqe *w, uint32_t psn)
{
  uint32_t idx = (uint32_t)psn_diff(psn, w->first_psn);
  uint32_t end = idx - idx % w->read_piece + w->read_piece - 1;
  return end >= w->npkts - 1 ? w->last_psn : psn_add(w->first_psn, end);
}
static inline bool rct_read_piece_start(const struct rct_send_wqe *w, uint32_t psn)
{
  return (uint32_t)psn_diff(psn, w->first_psn) % w->read_piece == 0;
}
static inline bool rct_req_sr_resent(const struct rct_qp *qp, uint32_t psn)
{
  uint32_t k = (uint32_t)psn_diff(psn, qp->comp.una);
  return k < RCT_SR_WINDOW && bm_test(qp->req.sr_retxd, k);
}

/* comp.c: completer */
void rct_comp_reset(struct rct_qp *qp);
void rct_comp_handle(struct rct_qp *qp, uint64_t now, struct rct_pkt *p);
void rct_comp_timeout(struct rct_qp *qp, uint64_t now);
void rct_comp_probe(struct rct_qp *qp, uint64_t now);
void rct_comp_rnr_timeout(struct rct_qp *qp, uint64_t now);
void rct_comp_on_send(struct rct_qp *qp, uint64_t now, uint32_t psn, bool retransmit);
void rct_comp_on_probe_sent(struct rct_qp *qp, uint32_t psn);
void rct_comp_flush(struct rct_qp *qp);
uint64_t rct_comp_rto(const struct rct_qp *qp);
uint32_t rct_comp_read_first_missing(const struct rct_qp *qp, const struct rct_send_wqe *w);
/* ... what the others may read */
static inline uint32_t rct_comp_una(const struct rct_qp *qp) { return qp->comp.una; }
/* go-back-N loss window [REQ-WIN-5]; 0 = none beyond [REQ-WIN-1] */
static inline uint32_t rct_comp_loss_window(const struct rct_qp *qp) { return qp->comp.cwnd; }
static inline bool rct_comp_sacked(const struct rct_qp *qp, uint32_t psn)   /* SR, psn >= una */
{
  uint32_t k = (uint32_t)psn_diff(psn, qp->comp.una);
  return k < RCT_SR_WINDOW && bm_test(qp->comp.sr_sacked, k);
}
/* SR: PSNs sacked among the n from una on (n <= SR_WINDOW). */
static inline uint32_t rct_comp_sacked_count(const struct rct_qp *qp, uint32_t n)
{
  return rct_bm_count(qp->comp.sr_sacked, n);
}

/* resp.c: responder */
void rct_resp_reset(struct rct_qp *qp, bool keep_parting);
void rct_resp_handle(struct rct_qp *qp, uint64_t now, struct rct_pkt *p);
int rct_resp_poll(struct rct_qp *qp, uint64_t now, struct rct_frame *f);
bool rct_resp_has_work(const struct rct_qp *qp);
void rct_resp_flush(struct rct_qp *qp);
bool rct_resp_release_ack(struct rct_qp *qp);   /* a held ACK goes at the next poll [RESP-ACK-5] */
bool rct_resp_part(struct rct_qp *qp);          /* leaving RTR/RTS/SQD: the parting ACK [RESP-ACK-6] */
bool rct_resp_answer_in_err(struct rct_qp *qp, const struct rct_pkt *p);
int rct_resp_poll_parting(struct rct_qp *qp, struct rct_frame *f);
void rct_resp_ack_timeout(struct rct_qp *qp, uint64_t now);
static inline uint32_t rct_resp_epsn(const struct rct_qp *qp) { return qp->resp.epsn; }
bool rct_resp_uses_rkey(const struct rct_qp *qp, uint32_t rkey);   /* a WRITE or READ response open */
/* checks and replies shared with the SR responder (sr_resp.c) */
void rct_resp_want_ack(struct rct_qp *qp, uint32_t psn);
void rct_resp_want_nak(struct rct_qp *qp, uint8_t syn, uint32_t psn, bool fatal);
void rct_resp_fail(struct rct_qp *qp, uint8_t syn, uint32_t psn, bool recv_taken, enum rct_wc_status st);
void rct_resp_recv_complete(struct rct_qp *qp, enum rct_wc_status st, enum rct_wc_opcode op, bool se,
                            uint32_t len, bool has_imm, uint32_t imm);
bool rct_resp_length_ok(const struct rct_qp *qp, uint32_t f, uint32_t len);
bool rct_resp_rkey_ok(struct rct_qp *qp, uint32_t rkey, uint64_t va, uint32_t len, uint32_t access);
bool rct_resp_place_write(struct rct_qp *qp, uint32_t rkey, uint64_t va, struct rct_pkt *p, bool taken);
bool rct_resp_takes_recv(uint32_t f);
bool rct_resp_exec_read(struct rct_qp *qp, struct rct_pkt *p);
uint8_t rct_resp_read_refusal(struct rct_qp *qp, const struct rct_pkt *p);
void rct_resp_duplicate(struct rct_qp *qp, struct rct_pkt *p);

/* sr_resp.c: selective-repeat placement */
enum { SLOT_NONE = 0, SLOT_END_PLAIN, SLOT_END_RECV, SLOT_END_RECV_IMM, SLOT_END_WRITE_IMM };
#define SLOT_SE 0x80u                /* or-ed into a slot kind: the LAST packet had BTH.SE */
void rct_sr_resp_handle(struct rct_qp *qp, struct rct_pkt *p, int32_t d);

#endif /* RCT_INT_H */
