/*
 * rct_cm.h: the connection manager (proto-spec cm.md), a layer of its own
 * above the transport core: it uses the core's types (rct_types.h) and wire
 * helpers, and the core knows nothing of it. Built into the kernel, into the
 * user library (user/lib/rdmacm drives it over UDP) and on the host (tests).
 *
 * Owns: the CM message codec (cm.c: rct_cm_encode / rct_cm_parse, the QP
 * attributes a finished exchange yields) and the CM endpoint (cm_ep.c: the
 * sans-IO state machine of one connection exchange). Neither touches a QP.
 *
 * Portable C99, sans-IO like the core: no kernel header, no clock, no allocator.
 */
#ifndef RCT_CM_H
#define RCT_CM_H

#include "../transport/rct_types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RCT_CM_PORT        18515        /* default UDP port of the CM exchange */

/* ------------------------------------------------------------------ */
/* Connection exchange (CM) codec; proto-spec defines the messages.     */
/* ------------------------------------------------------------------ */

enum rct_cm_type {
  RCT_CM_REQ = 1, RCT_CM_REP = 2, RCT_CM_REJ = 3, RCT_CM_RTU = 4,
  RCT_CM_DREQ = 5, RCT_CM_DREP = 6,
};

/* REJ reasons [CM-MSG-7]. */
enum rct_cm_reject {
  RCT_CM_REJ_CONSUMER = 1, RCT_CM_REJ_NO_LISTENER = 2, RCT_CM_REJ_NO_RESOURCES = 3,
  RCT_CM_REJ_INVALID_PARAM = 4, RCT_CM_REJ_UNSUPPORTED_VERSION = 5, RCT_CM_REJ_TIMEOUT = 6,
  RCT_CM_REJ_STALE_CONN = 7,
};

#define RCT_CM_MAGIC 0x7872
#define RCT_CM_VERSION 1
#define RCT_CM_CAP_SR 1u             /* caps bit 0: selective repeat [SR-NEG-1] */
#define RCT_CM_PRIVATE_MAX 56        /* private data bytes */
#define RCT_CM_LEN_HDR 12            /* RTU, DREQ, DREP */
#define RCT_CM_LEN_REQ 108           /* REQ, REP */
#define RCT_CM_LEN_REJ 72

struct rct_cm_msg {
  enum rct_cm_type type;
  uint8_t version;             /* RCT_CM_VERSION when encoding */
  uint32_t src_conn_id;        /* sender's connection id (non-zero) */
  uint32_t dst_conn_id;        /* receiver's id (0 in REQ) */
  /* REQ / REP */
  uint32_t qpn;                /* sender's QPN */
  uint32_t start_psn;          /* sender's starting PSN */
  uint8_t path_mtu;            /* enum rct_mtu */
  uint8_t caps;                /* RCT_CM_CAP_* */
  uint8_t responder_resources, initiator_depth;
  uint8_t gid[16];             /* IPv4-mapped ::ffff:a.b.c.d */
  uint8_t mac[6];
  /* REJ */
  uint16_t reject_reason;      /* enum rct_cm_reject */
  /* REQ / REP / REJ */
  uint8_t private_len;
  uint8_t private_data[RCT_CM_PRIVATE_MAX];
};

/* Encode into buf; returns the message length or RCT_EINVAL / RCT_ETRUNC. */
int rct_cm_encode(const struct rct_cm_msg *m, uint8_t *buf, size_t cap);
/* Parse a datagram [CM-MSG-1] [CM-MSG-2] [CM-MSG-4]. Returns
 *   RCT_OK                       valid message in *m;
 *   RCT_EINVAL                   malformed: drop silently and count;
 *   RCT_CM_REJ_INVALID_PARAM or
 *   RCT_CM_REJ_UNSUPPORTED_VERSION (positive): *m holds the header; answer
 *                                with a REJ of that reason. */
int rct_cm_parse(struct rct_cm_msg *m, const uint8_t *buf, size_t len);
/* Fill a GID from an IPv4 address (host order). */
void rct_cm_gid_from_ipv4(uint8_t gid[16], uint32_t ipv4);

/* Connection parameters from the exchange [CM-PARAM-1] [CM-PARAM-2] [CM-PARAM-3]
 * [SR-NEG-1]: `self` is the message this side sent (REQ or REP), `peer` the one
 * it received. Path MTU = the smaller of the two (the REP already carries it);
 * max_rd_atomic = min(own initiator_depth, peer responder_resources);
 * max_dest_rd_atomic = own responder_resources; dest QPN, rq_psn, AV from the
 * peer; sq_psn = own start_psn; SR only if both set CAP_SR. Fills the INIT->RTR
 * and RTR->RTS attributes and their masks (timeouts and retries are the
 * caller's: set attr->timeout, retry_cnt, rnr_retry, min_rnr_timer). Returns
 * RCT_OK or RCT_EINVAL (peer GID not IPv4-mapped, bad MTU). */
int rct_cm_qp_attr(const struct rct_cm_msg *self, const struct rct_cm_msg *peer,
                   struct rct_qp_attr *attr, uint32_t *rtr_mask, uint32_t *rts_mask);

/* ------------------------------------------------------------------ */
/* CM endpoint (cm_ep.c): the sans-IO state machine of one connection  */
/* exchange, proto-spec cm.md [CM-STATE-*] [CM-TMO-*]. Datagrams and   */
/* time in (handle_msg, handle_timeout); datagrams, deadlines and      */
/* events out (poll_msg, next_timeout, poll_event). The endpoint never */
/* touches a QP: on ESTABLISHED (active) the caller brings its QP to   */
/* RTS before it polls the RTU; the passive side does so before accept.*/
/* ------------------------------------------------------------------ */

#define RCT_CM_RETRY_NS     250000000ull  /* CM_RETRY_NS [CM-TMO-1] */
#define RCT_CM_MAX_RETRIES  5             /* CM_MAX_RETRIES [CM-TMO-1] */
#define RCT_CM_EP_QUEUE     4             /* datagrams / events waiting to be polled */
/* CM_RETRY_SPAN_NS: how long a peer may repeat one message, its first
 * send and CM_MAX_RETRIES retransmissions [CM-TMO-1] */
#define RCT_CM_RETRY_SPAN_NS (RCT_CM_RETRY_NS * (RCT_CM_MAX_RETRIES + 1))
/* CM_TIMEWAIT_NS [CM-TMO-5]: as long as the peer's DREQ retransmissions last */
#define RCT_CM_TIMEWAIT_NS  RCT_CM_RETRY_SPAN_NS

enum rct_cm_ep_state {
  RCT_CM_EP_IDLE = 0, RCT_CM_EP_LISTEN, RCT_CM_EP_REQ_SENT, RCT_CM_EP_REQ_RCVD,
  RCT_CM_EP_REP_SENT, RCT_CM_EP_ESTABLISHED, RCT_CM_EP_DREQ_SENT, RCT_CM_EP_CLOSED,
  RCT_CM_EP_REJECTED, RCT_CM_EP_TIMEDOUT,
};

enum rct_cm_event_type {
  RCT_CM_EV_CONNECT_REQUEST = 1, /* passive: a REQ arrived (peer message in ep->peer_msg) */
  RCT_CM_EV_ESTABLISHED,         /* REP (active) or RTU / first RC frame (passive) */
  RCT_CM_EV_REJECTED,            /* active: REJ (reason in the event) */
  RCT_CM_EV_UNREACHABLE,         /* active: REQ retries exhausted (ETIMEDOUT) */
  RCT_CM_EV_TIMEDOUT,            /* passive: REP retries exhausted; move the QP to ERR */
  RCT_CM_EV_DISCONNECTED,        /* DREQ received, or DREP / DREQ retries; QP to ERR */
  RCT_CM_EV_TIMEWAIT_EXIT,       /* CM_TIMEWAIT_NS after DISCONNECTED: the QP may go [CM-TMO-5] */
};

struct rct_cm_event {
  enum rct_cm_event_type type;
  uint16_t reason;               /* REJECTED: enum rct_cm_reject */
};

struct rct_cm_addr {
  uint32_t ip;                   /* IPv4, host order */
  uint16_t port;                 /* UDP port */
};

struct rct_cm_ep_counters {
  uint64_t rx, tx, retransmits, dropped, ignored;
};

struct rct_cm_ep {
  enum rct_cm_ep_state state;
  uint8_t active;
  uint32_t local_id, remote_id;       /* connection IDs [CM-MSG-1] */
  struct rct_cm_addr peer;            /* replies go here [CM-STATE-7] */
  struct rct_cm_msg self_msg;         /* the REQ/REP this side sent */
  struct rct_cm_msg peer_msg;         /* the REQ/REP received */
  uint64_t deadline;                  /* retransmission, RCT_NEVER if none */
  uint64_t answer_until;              /* active: the peer may repeat its REP until then */
  uint8_t retries;                    /* retransmissions so far */
  struct { uint8_t type; uint16_t reason; uint32_t dst_id, src_id; struct rct_cm_addr to; }
    out[RCT_CM_EP_QUEUE];
  uint8_t out_n;
  struct rct_cm_event ev[RCT_CM_EP_QUEUE];
  uint8_t ev_n;
  struct rct_cm_ep_counters cnt;
};

/* local_id: this side's random non-zero connection ID. */
void rct_cm_ep_init(struct rct_cm_ep *ep, uint32_t local_id);
int rct_cm_ep_listen(struct rct_cm_ep *ep);
/* Active side: send req (type, qpn, start_psn, ... filled by the caller; IDs set here). */
int rct_cm_ep_connect(struct rct_cm_ep *ep, uint64_t now, struct rct_cm_addr peer,
                      const struct rct_cm_msg *req);
/* Passive side, in REQ_RCVD: send rep (QP already at RTS), or reject with a reason. */
int rct_cm_ep_accept(struct rct_cm_ep *ep, uint64_t now, const struct rct_cm_msg *rep);
int rct_cm_ep_reject(struct rct_cm_ep *ep, uint64_t now, enum rct_cm_reject reason,
                     const void *priv, uint8_t priv_len);
int rct_cm_ep_disconnect(struct rct_cm_ep *ep, uint64_t now);
/* A datagram from `from`. */
void rct_cm_ep_handle_msg(struct rct_cm_ep *ep, uint64_t now, struct rct_cm_addr from,
                          const uint8_t *buf, size_t len);
/* Passive side in REP_SENT: the first valid RC frame arrived on the QP. */
void rct_cm_ep_rc_frame(struct rct_cm_ep *ep);
void rct_cm_ep_handle_timeout(struct rct_cm_ep *ep, uint64_t now);
uint64_t rct_cm_ep_next_timeout(const struct rct_cm_ep *ep);
/* Active side after its RTU: until when the peer may still repeat its REP
 * (CM_RETRY_SPAN_NS after the REP came), so until when the caller must hand
 * this endpoint its datagrams however the application waits [CM-TMO-6];
 * 0 when no answer can be owed. */
uint64_t rct_cm_ep_answer_until(const struct rct_cm_ep *ep);
/* The next datagram to send: its length (0: none) and destination. */
int rct_cm_ep_poll_msg(struct rct_cm_ep *ep, uint8_t *buf, size_t cap, struct rct_cm_addr *to);
int rct_cm_ep_poll_event(struct rct_cm_ep *ep, struct rct_cm_event *ev);
const char *rct_cm_ep_state_name(enum rct_cm_ep_state s);

#ifdef __cplusplus
}
#endif
#endif /* RCT_CM_H */
