/*
 * core_int.h: the private interfaces every QP type shares (the core's lower
 * layers, docs/kernel.md "Core order"): the QP base's state machine and
 * error entry (qp.c), the device's lists (dev.c), frames out (tx.c), SGE
 * walks (sge.c), timers (timer.c), CQs (cq.c), events (event.c), and the
 * table of a QP type's operations (struct rct_qp_ops), through which these
 * layers reach a type (rc.c, ud.c) without calling it by name.
 */
#ifndef RCT_CORE_INT_H
#define RCT_CORE_INT_H

#include "rct.h"
#include "psn.h"
#include "wire.h"
#include "opcode.h"
#include "sr_bitmap.h"

#define SQ_AT(b, i) (&(b)->init.sq[(i) & ((b)->init.sq_size - 1)])
#define RQ_AT(b, i) (&(b)->init.rq[(i) & ((b)->init.rq_size - 1)])
#define RD_AT(b, i) (&(b)->init.rd[(i) & ((b)->init.rd_size - 1)])

/* Count one event in the QP counter at byte offset off (SYN_NO_CNT: none). */
static inline void rct_cnt_bump(struct rct_qp_counters *c, uint16_t off)
{
  if (off != SYN_NO_CNT)
    (*(uint64_t *)(void *)((uint8_t *)c + off))++;
}

/* Packets a message of len bytes takes at the QP's MTU: max(1, ceil(len/m)). */
static inline uint32_t qp_npkts(const struct rct_qp_base *b, uint32_t len)
{
  return len == 0 ? 1 : ((len - 1) >> b->mtu_shift) + 1;
}

/* An allowed transition of a type's state machine with its required and
 * optional attributes (RCT_QP_* masks) [QP-STATE-2]. */
struct rct_qp_transition {
  uint8_t from, to;
  uint32_t required, optional;
};

/* An atomic WR (CmpSwap, FetchAdd) [REQ-ATOM-1]. */
static inline bool rct_wr_atomic(enum rct_wr_opcode op)
{
  return op == RCT_WR_ATOMIC_CMP_AND_SWP || op == RCT_WR_ATOMIC_FETCH_AND_ADD;
}

/*
 * A QP type's operations: how the generic layers reach the type without
 * calling it by name (each type file fills one table: rct_rc_ops in rc.c,
 * rct_ud_ops in ud.c). NULL = nothing to do.
 */
struct rct_qp_ops {
  const struct rct_qp_transition *transitions;  /* its state machine [QP-STATE-2] */
  uint32_t ntransitions;
  uint32_t wr_opcodes;        /* bit (1 << enum rct_wr_opcode): the send WRs the type takes */
  /* A frame for this QP that passed rx.c's device checks (steps 1..8):
   * the type checks it against the QP, counts, and acts [RX-ORDER-1];
   * false = dropped (and counted). */
  bool (*handle)(struct rct_qp_base *b, uint64_t now, struct rct_pkt *p, int ext);
  /* The next frame to send: 1 and *f filled, or 0. */
  int (*poll)(struct rct_qp_base *b, uint64_t now, struct rct_frame *f);
  /* Time passed: run what expired (timer.c calls it when a deadline is due). */
  void (*timeout)(struct rct_qp_base *b, uint64_t now);
  bool (*has_work)(const struct rct_qp_base *b);
  /* modify: the type's checks beyond the table's masks and attr_values_ok
   * (RCT_OK or an error); what reaching `to` from `from` does to its state */
  int (*check)(const struct rct_qp_base *b, enum rct_qp_state to, const struct rct_qp_attr *a,
               uint32_t mask);
  void (*enter)(struct rct_qp_base *b, enum rct_qp_state from, enum rct_qp_state to);
  void (*leave)(struct rct_qp_base *b);    /* leaving for RESET or ERR, before the state changes */
  void (*reset)(struct rct_qp_base *b);    /* entering RESET: the type's state */
  void (*flush)(struct rct_qp_base *b);    /* entering ERR: flush what is posted */
  void (*query)(const struct rct_qp_base *b, struct rct_qp_attr *a);
  bool (*uses_key)(const struct rct_qp_base *b, uint32_t key);  /* beyond the posted WRs */
};

/* qp.c: the base's state machine and life cycle (the types' entry points call these) */
int rct_qpb_init(struct rct_dev *dev, struct rct_qp_base *b, const struct rct_qp_init_attr *init,
                 enum rct_qp_type type, const struct rct_qp_ops *ops);
void rct_qp_to_err(struct rct_qp_base *b);   /* the transport found a fatal error [QP-ERR-1] */
void rct_qp_to_sqe(struct rct_qp_base *b);   /* UD: a send failed locally, from RTS or SQD [UD-STATE-2] */

/* post.c: a send WR into the send ring (*w = its WQE, NULL when flushed at
 * once in ERR or SQE), for the types' posting calls */
int rct_post_send_wqe(struct rct_qp_base *b, const struct rct_send_wr *wr, struct rct_send_wqe **w);

/* dev.c: the device's QP list and ready list */
void rct_dev_add_qp(struct rct_dev *dev, struct rct_qp_base *b);
void rct_dev_remove_qp(struct rct_dev *dev, struct rct_qp_base *b);
void rct_qp_mark_ready(struct rct_qp_base *b);

/* tx.c: frames out. rct_tx_emit builds a frame: headers from h (opcode etc.
 * set by the role), Ethernet/IP/UDP addressing from the QP, payload segments
 * already in f->seg[0..nseg). rct_tx_ack: an ACK or NAK (syndrome syn) for
 * psn; rct_tx_sack: a selective NAK at epsn with the placed-PSN bitmap.
 * rct_tx_finish: the common tail when h already holds the addressing. */
void rct_tx_emit(struct rct_qp_base *b, struct rct_frame *f, struct rct_hdr *h, uint32_t paylen);
void rct_tx_finish(struct rct_qp_base *b, struct rct_frame *f, struct rct_hdr *h, uint32_t paylen);
void rct_tx_ack(struct rct_qp_base *b, struct rct_frame *f, uint8_t syn, uint32_t psn, uint32_t msn);
void rct_tx_sack(struct rct_qp_base *b, struct rct_frame *f, uint32_t epsn, uint32_t msn,
                 const uint32_t *placed);

/* sge.c: walk an SGE list: translate [off, off+len) of the message into
 * segments; copy len bytes of src into segments. */
int rct_sge_translate(struct rct_qp_base *b, const struct rct_sge *sge, int nsge, uint32_t off,
                      uint32_t len, uint32_t access, struct rct_iov *out, int max);
void rct_segs_copy(const struct rct_iov *seg, int nseg, const uint8_t *src, uint32_t len);

/* timer.c: every write of a QP deadline goes through these */
void rct_timer_set(struct rct_qp_base *b, enum rct_timer t, uint64_t deadline);
void rct_timer_stop(struct rct_qp_base *b, enum rct_timer t);
void rct_timer_stop_all(struct rct_qp_base *b);
static inline bool rct_timer_armed(const struct rct_qp_base *b, enum rct_timer t)
{
  return b->timer[t] != RCT_NEVER;
}
static inline uint64_t rct_timer_deadline(const struct rct_qp_base *b, enum rct_timer t)   /* RCT_NEVER if stopped */
{
  return b->timer[t];
}

/* cq.c */
void rct_cq_push(struct rct_qp_base *b, struct rct_cq *cq, const struct rct_wc *wc);
enum rct_wc_opcode rct_wr_to_wc_opcode(enum rct_wr_opcode op);

/* event.c: the marks the roles leave (via qp.c and cq.c), and a node's exit */
void rct_ev_qp_err(struct rct_qp_base *b, enum rct_qp_err_cause cause);
void rct_ev_cq(struct rct_qp_base *b, struct rct_cq *cq, enum rct_event_type t, bool solicited);
void rct_ev_forget(struct rct_ev_node *n);

#endif /* RCT_CORE_INT_H */
