/*
 * rct.h: the public API of the reliable-connected (RC) RoCEv2 transport core.
 *
 * Owns: the types and entry points that the kernel's RDMA subsystem, the host
 * simulator (tests/sim) and the unit tests use to drive the core. The core is
 * sans-IO (quinn-proto / smoltcp style):
 *
 *   events in :  rct_handle_frame(dev, now, buf, len)   a frame arrived
 *                rct_handle_timeout(qp, now)             time passed
 *                rct_post_send / rct_post_recv           work was posted
 *   work out  :  rct_poll_transmit(qp, now, &frame)      next frame to send
 *                rct_next_timeout(qp)                    next deadline (ns)
 *                rct_poll_cq(cq, wc, n)                  completions
 *                rct_dev_next_event(dev, &ev)            what happened (QP to ERR, CQ work)
 *
 * The core never allocates, never reads a clock, never sends and never
 * sleeps. All storage (device, QPs, their send/receive rings, CQs, responder
 * resources) is provided by the caller. Time is uint64_t nanoseconds,
 * RCT_NEVER = UINT64_MAX (docs/design.md "Units").
 *
 * Memory is reached only through the caller's MR interface (struct
 * rct_mr_ops): the core asks it to translate (key, va, len, access) into
 * host-addressable segments and never touches anything else. Transmit is
 * zero-copy: a frame from rct_poll_transmit is a header buffer + payload
 * segments pointing into MR memory + a trailer (pad + ICRC), so a
 * scatter-gather NIC can send it as is; rct_frame_linearize() flattens it.
 *
 * Concurrency: the core has no locks. The caller serializes every call that
 * touches one device (the kernel holds one RDMA lock around them).
 *
 * Types: rct_types.h. The connection manager above the core: kernel/cm/ibcm.h.
 *
 * Portable C99: includes only <stdint.h>, <stddef.h>, <stdbool.h>.
 */
#ifndef RCT_H
#define RCT_H

#include "rct_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Device                                                               */
/* ------------------------------------------------------------------ */

void rct_dev_init(struct rct_dev *dev, const struct rct_dev_attr *attr);

/* ------------------------------------------------------------------ */
/* QP                                                                   */
/* ------------------------------------------------------------------ */

/* Initialize a QP in RESET. Returns RCT_OK or RCT_EINVAL (bad sizes). */
int rct_qp_init(struct rct_dev *dev, struct rct_qp *qp, const struct rct_qp_init_attr *init);
/* Remove a QP from the device's lists (after this the QP's storage may be freed). */
void rct_qp_destroy(struct rct_qp *qp);
/* A held ACK ([RESP-ACK-5]) goes out with the next poll of the QP: call it
 * and drain the device before destroying a QP, or the peer's last message
 * may never be acknowledged. */
bool rct_qp_release_ack(struct rct_qp *qp);     /* true if an ACK was held */

/* Modify: IBTA state machine with required attributes per transition
 * (RESET->INIT: access flags; INIT->RTR: AV, path MTU, dest QPN, rq_psn,
 * max_dest_rd_atomic, min_rnr_timer; RTR->RTS: sq_psn, timeout, retry_cnt,
 * rnr_retry, max_rd_atomic; any->ERR; any->RESET). Returns RCT_OK,
 * RCT_EINVAL (missing/invalid attribute) or RCT_ESTATE (bad transition). */
int rct_qp_modify(struct rct_qp *qp, const struct rct_qp_attr *attr, uint32_t mask);
int rct_qp_query(const struct rct_qp *qp, struct rct_qp_attr *attr);

/* Post work. Returns RCT_OK, RCT_ENOSPC, RCT_ESTATE, RCT_EINVAL. In ERR the
 * request is accepted and completed at once with WR_FLUSH_ERR. */
int rct_post_send(struct rct_qp *qp, const struct rct_send_wr *wr);
int rct_post_recv(struct rct_qp *qp, const struct rct_recv_wr *wr);

/* ------------------------------------------------------------------ */
/* Any QP type, through its base (struct rct_qp_base, first in every QP: */
/* an RC QP's is &qp->base). The rct_qp_* / rct_post_* calls above are    */
/* the RC forms of these.                                                */
/* ------------------------------------------------------------------ */

/* UD (ud.c, proto-spec ud.md). Initialize a UD QP in RESET (init->rd_size
 * must be 0); its MTU is the port's (rct_ud_mtu). Modify, query, post
 * receives, poll, time and destroy it with the rct_qpb_* calls below on
 * &qp->base. A send is SEND or SEND_WITH_IMM to dest, one frame of at most
 * the MTU (longer: LOC_LEN_ERR completion, the QP to SQE). */
int rct_ud_qp_init(struct rct_dev *dev, struct rct_ud_qp *qp, const struct rct_qp_init_attr *init);
int rct_ud_post_send(struct rct_ud_qp *qp, const struct rct_send_wr *wr, const struct rct_ud_dest *dest);
uint32_t rct_ud_mtu(const struct rct_dev *dev);

int rct_qpb_modify(struct rct_qp_base *b, const struct rct_qp_attr *attr, uint32_t mask);
int rct_qpb_query(const struct rct_qp_base *b, struct rct_qp_attr *attr);
void rct_qpb_destroy(struct rct_qp_base *b);
int rct_qpb_post_recv(struct rct_qp_base *b, const struct rct_recv_wr *wr);
void rct_qpb_handle_timeout(struct rct_qp_base *b, uint64_t now);
uint64_t rct_qpb_next_timeout(const struct rct_qp_base *b);
int rct_qpb_poll_transmit(struct rct_qp_base *b, uint64_t now, struct rct_frame *out);
bool rct_qpb_key_in_use(const struct rct_qp_base *b, uint32_t key);

/* ------------------------------------------------------------------ */
/* Shared receive queues (srq.c, proto-spec srq.md)                     */
/* ------------------------------------------------------------------ */

/* An SRQ of dev over ring[0..size) (size a power of 2), empty, limit 0.
 * RCT_OK or RCT_EINVAL. */
int rct_srq_init(struct rct_dev *dev, struct rct_srq *srq, struct rct_recv_wqe *ring, uint32_t size);
/* RCT_ESTATE while a QP uses it [SRQ-VERB-4]; else it leaves its device
 * (its WQEs are dropped uncompleted) and RCT_OK. */
int rct_srq_destroy(struct rct_srq *srq);
/* RCT_OK, RCT_ENOSPC (full) or RCT_EINVAL (bad WR) [SRQ-VERB-5]. */
int rct_srq_post_recv(struct rct_srq *srq, const struct rct_recv_wr *wr);
/* Arm (limit > 0) or disarm (0) [SRQ-LIMIT-1]; RCT_EINVAL above its size. */
int rct_srq_set_limit(struct rct_srq *srq, uint32_t limit);
uint32_t rct_srq_count(const struct rct_srq *srq);   /* WQEs it holds */

/* ------------------------------------------------------------------ */
/* Events and output                                                    */
/* ------------------------------------------------------------------ */

/* A frame arrived (Ethernet frame without FCS). The core reads buf only
 * during the call. flags: RCT_RX_* (rct_types.h). */
enum rct_rx_result rct_handle_frame_ex(struct rct_dev *dev, uint64_t now, const uint8_t *buf,
                                       size_t len, uint32_t flags);
enum rct_rx_result rct_handle_frame(struct rct_dev *dev, uint64_t now,
                                    const uint8_t *buf, size_t len);

/* Time passed: run the QP's expired timers (spurious calls are harmless). */
void rct_handle_timeout(struct rct_qp *qp, uint64_t now);
/* Earliest deadline of the QP, or RCT_NEVER. */
uint64_t rct_next_timeout(const struct rct_qp *qp);
/* Produce the QP's next frame: returns 1 and fills *out, or 0 if nothing to send. */
int rct_poll_transmit(struct rct_qp *qp, uint64_t now, struct rct_frame *out);

/* Device-wide forms: the dev_ versions walk the QPs that have work
 * (ready list; O(QPs with work)) or, for timeouts, all QPs. */
int rct_dev_poll_transmit(struct rct_dev *dev, uint64_t now, struct rct_frame *out);
void rct_dev_handle_timeout(struct rct_dev *dev, uint64_t now);
uint64_t rct_dev_next_timeout(const struct rct_dev *dev);

/* Completions. */
void rct_cq_init(struct rct_cq *cq, struct rct_wc *ring, uint32_t size);
int rct_poll_cq(struct rct_cq *cq, struct rct_wc *wc, int n);

/* ------------------------------------------------------------------ */
/* Events (event.c; the types are in rct_types.h)                       */
/* ------------------------------------------------------------------ */

/* The next event, true; false when none is left. A CQ's events go to the
 * device of the QP whose completion queued it. */
bool rct_dev_next_event(struct rct_dev *dev, struct rct_event *ev);

/* A CQ leaves its device's pending list; call before freeing or re-initializing
 * a CQ (rct_qp_destroy does the same for a QP). */
void rct_cq_destroy(struct rct_cq *cq);

/* Completions waiting in the CQ, and how many it has dropped so far. */
uint32_t rct_cq_count(const struct rct_cq *cq);
uint32_t rct_cq_overflow(const struct rct_cq *cq);

/* Does a posted send or receive WR (its SGEs' lkeys), the responder's
 * current WRITE or a pending READ response (rkeys) still use `key`? */
bool rct_qp_key_in_use(const struct rct_qp *qp, uint32_t key);
bool rct_key_in_use(const struct rct_dev *dev, uint32_t key);

/* Watch key: true if it is in use (RCT_EV_KEY_IDLE follows once it is not,
 * and w is then free again), false if it is already idle (nothing watched). */
bool rct_key_watch(struct rct_dev *dev, struct rct_key_watch *w, uint32_t key);
/* Stop watching (harmless if w is not watched). */
void rct_key_unwatch(struct rct_dev *dev, struct rct_key_watch *w);

/* ------------------------------------------------------------------ */
/* Names for tracing                                                    */
/* ------------------------------------------------------------------ */

const char *rct_qp_state_name(enum rct_qp_state s);
const char *rct_opcode_name(uint8_t bth_opcode);
const char *rct_wc_status_name(enum rct_wc_status s);
const char *rct_wr_opcode_name(enum rct_wr_opcode op);
const char *rct_req_state_name(enum rct_req_state s);
const char *rct_resp_state_name(enum rct_resp_state s);
/* An acknowledgement (ACK, NAK, selective NAK): it places no data. */
bool rct_opcode_is_ack(uint8_t bth_opcode);
const char *rct_comp_state_name(enum rct_comp_state s);
/* The roles' states now: the requester's and completer's are derived from
 * what they hold (WAIT_RNR = the RNR wait is running, SENDING / WAIT_ACK =
 * work or unacknowledged packets), the responder's is the one it runs on. */
enum rct_req_state rct_qp_req_state(const struct rct_qp *qp);
enum rct_comp_state rct_qp_comp_state(const struct rct_qp *qp);
enum rct_resp_state rct_qp_resp_state(const struct rct_qp *qp);
const char *rct_syndrome_name(uint8_t aeth_syndrome);

/* Helpers. */
uint32_t rct_mtu_bytes(enum rct_mtu mtu);        /* 0 if invalid */
uint16_t rct_udp_sport(uint32_t src_qpn, uint32_t dst_qpn);
/* IBTA local ACK timeout in ns for a timeout code (0 = infinite -> RCT_NEVER). */
uint64_t rct_ack_timeout_ns(uint8_t timeout);
/* IBTA RNR timer code (0..31) to ns. */
uint64_t rct_rnr_timer_ns(uint8_t code);

/* Copy a frame into buf (cap bytes). Returns its length or RCT_ETRUNC. */
int rct_frame_linearize(const struct rct_frame *f, uint8_t *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif /* RCT_H */
