/*
 * rc_int.h: the private interfaces of the RC type: its three roles, req.c
 * (requester), comp.c (completer) and resp.c with sr_resp.c (responder),
 * and rc.c, which ties them to the QP base (the ops table). Each role keeps
 * its state in its own part of the RC QP (qp->req, qp->comp, qp->resp) and
 * only its files write it; roles act on another role only through the
 * calls declared here, and read it only through the small inline queries
 * here. The base's fields are qp->base (core_int.h's calls take &qp->base).
 */
#ifndef RCT_RC_INT_H
#define RCT_RC_INT_H

#include "core_int.h"

/* The RC QP that holds base b (b->type == RCT_QPT_RC). */
static inline struct rct_qp *rc_of(struct rct_qp_base *b) { return (struct rct_qp *)(void *)b; }
static inline const struct rct_qp *rc_of_const(const struct rct_qp_base *b)
{
  return (const struct rct_qp *)(const void *)b;
}
_Static_assert(offsetof(struct rct_qp, base) == 0, "an RC QP starts with its base");

extern const struct rct_qp_ops rct_rc_ops;

/*
 * The roles. Each role's file writes only its own part of the QP
 * (qp->req, qp->comp, qp->resp); what one role makes another do is a call
 * below; what it needs to know of another is an inline query below.
 */

/* Is w answered by responses (READ responses, an ATOMIC_ACK) instead of
 * ACKs? Such a WR holds a credit of max_rd_atomic, completes only when its
 * responses came, and is resumed at its first missing one [REQ-ATOM-2]. */
static inline bool rct_wqe_reads(const struct rct_send_wqe *w)
{
  return w->wr.opcode == RCT_WR_RDMA_READ || rct_wr_atomic(w->wr.opcode);
}

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
  return rct_timer_armed(&qp->base, RCT_TIMER_RNR);
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
bool rct_resp_exec_atomic(struct rct_qp *qp, struct rct_pkt *p);
uint8_t rct_resp_read_refusal(struct rct_qp *qp, const struct rct_pkt *p);
void rct_resp_duplicate(struct rct_qp *qp, struct rct_pkt *p);

/* sr_resp.c: selective-repeat placement */
enum { SLOT_NONE = 0, SLOT_END_PLAIN, SLOT_END_RECV, SLOT_END_RECV_IMM, SLOT_END_WRITE_IMM };
#define SLOT_SE 0x80u                /* or-ed into a slot kind: the LAST packet had BTH.SE */
void rct_sr_resp_handle(struct rct_qp *qp, struct rct_pkt *p, int32_t d);

#endif /* RCT_RC_INT_H */
