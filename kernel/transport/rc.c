/*
 * rc.c: the RC type. Ties the three roles (req.c, comp.c, resp.c with
 * sr_resp.c) to the QP base through the RC operations (rct_rc_ops: frames
 * in and out, timers, the state machine's table and what each state change
 * does to the roles), and keeps the RC entry points of rct.h, which take an
 * RC QP and call the generic ones on its base. [QP-*] [RX-ORDER-1]
 */
#include "rc_int.h"

/* ---------------------------------------------------------------- */
/* The state machine [QP-STATE-*]                                    */
/* ---------------------------------------------------------------- */

/* Allowed transitions with required and optional attributes (errors.md table). */
#define M(x) RCT_QP_##x
#define EXT (M(SR) | M(ADAPTIVE_RTO) | M(MAX_INFLIGHT) | M(PROBE_SLACK))
static const struct rct_qp_transition rc_transitions[] = {
  { RCT_QPS_RESET, RCT_QPS_INIT, M(STATE) | M(ACCESS_FLAGS) | M(PKEY_INDEX) | M(PORT), 0 },
  { RCT_QPS_INIT, RCT_QPS_INIT, M(STATE), M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS) },
  { RCT_QPS_INIT, RCT_QPS_RTR, M(STATE) | M(AV) | M(PATH_MTU) | M(DEST_QPN) | M(RQ_PSN) |
    M(MAX_DEST_RD_ATOMIC) | M(MIN_RNR_TIMER), M(ACCESS_FLAGS) | M(PKEY_INDEX) | EXT },
  { RCT_QPS_RTR, RCT_QPS_RTS, M(STATE) | M(SQ_PSN) | M(TIMEOUT) | M(RETRY_CNT) | M(RNR_RETRY) |
    M(MAX_QP_RD_ATOMIC), M(CUR_STATE) | M(ACCESS_FLAGS) | M(MIN_RNR_TIMER) | M(ADAPTIVE_RTO) |
    M(MAX_INFLIGHT) | M(PROBE_SLACK) },
  { RCT_QPS_RTS, RCT_QPS_RTS, M(STATE), M(CUR_STATE) | M(ACCESS_FLAGS) | M(MIN_RNR_TIMER) |
    M(ADAPTIVE_RTO) | M(MAX_INFLIGHT) | M(PROBE_SLACK) },
  { RCT_QPS_RTS, RCT_QPS_SQD, M(STATE), 0 },
  { RCT_QPS_SQD, RCT_QPS_RTS, M(STATE), M(CUR_STATE) | M(ACCESS_FLAGS) | M(MIN_RNR_TIMER) |
    M(TIMEOUT) | M(RETRY_CNT) | M(RNR_RETRY) },
  { RCT_QPS_SQD, RCT_QPS_SQD, M(STATE), M(CUR_STATE) | M(TIMEOUT) | M(RETRY_CNT) | M(RNR_RETRY) |
    M(MAX_QP_RD_ATOMIC) | M(ACCESS_FLAGS) | M(MIN_RNR_TIMER) },
  { RCT_QPS_SQE, RCT_QPS_RTS, M(STATE), M(CUR_STATE) | M(ACCESS_FLAGS) },
};

/* [ENC-IP-3] the largest frame of the QP must fit the interface MTU:
 * IPv4 20 + UDP 8 + BTH 12 + RETH 16 + ImmDt 4 (+ SRXH 8) + path MTU + ICRC 4. */
static bool frame_fits(const struct rct_qp_base *b, const struct rct_qp_attr *a, uint32_t mask)
{
  uint32_t lim = b->dev->attr.ip_mtu;
  bool sr = (mask & M(SR)) ? a->sr_enable : b->attr.sr_enable;
  if (!lim)
    return true;
  return IPV4_HLEN + UDP_HLEN + BTH_LEN + RETH_LEN + IMMDT_LEN + (sr ? SRETH_LEN : 0) +
         rct_mtu_bytes(a->path_mtu) + ICRC_LEN <= lim;
}

static int rc_check(const struct rct_qp_base *b, enum rct_qp_state to, const struct rct_qp_attr *a,
                    uint32_t mask)
{
  if (to == RCT_QPS_RTR && b->init.rd_size < a->max_dest_rd_atomic)
    return RCT_EINVAL;
  if (to == RCT_QPS_RTR && !frame_fits(b, a, mask))
    return RCT_EINVAL;
  return RCT_OK;
}
#undef M
#undef EXT

static void rc_enter(struct rct_qp_base *b, enum rct_qp_state from, enum rct_qp_state to)
{
  struct rct_qp *qp = rc_of(b);
  if (from == RCT_QPS_INIT && to == RCT_QPS_RTR) {
    qp->sr = b->attr.sr_enable;          /* [SR-NEG-2] fixed at RTR */
    b->encap = (b->dev->attr.flags & RCT_DEV_ROCE_V1) && b->attr.ah.roce_v1
               ? RCT_ENCAP_V1 : RCT_ENCAP_V2;   /* [ENC-V1-3] */
    b->sport = b->attr.ah.udp_sport ? b->attr.ah.udp_sport
               : rct_udp_sport(b->init.qpn, b->attr.dest_qp_num);
    rct_resp_reset(qp, false);
  }
  if (from == RCT_QPS_RTR && to == RCT_QPS_RTS) {
    rct_req_reset(qp);
    rct_comp_reset(qp);
  }
}

/* Does the responder answer requests in this state (RTR, RTS, SQD)? [QP-STATE-6] */
static bool resp_active(enum rct_qp_state s)
{
  return s == RCT_QPS_RTR || s == RCT_QPS_RTS || s == RCT_QPS_SQD;
}

/* Leaving a state where the responder answers: an ACK it owes or holds
 * goes out first, as the QP's parting frame [RESP-ACK-6]. */
static void rc_leave(struct rct_qp_base *b)
{
  if (resp_active(b->attr.qp_state) && rct_resp_part(rc_of(b)))
    rct_qp_mark_ready(b);
}

static void rc_reset(struct rct_qp_base *b)
{
  struct rct_qp *qp = rc_of(b);
  rct_req_reset(qp);
  rct_comp_reset(qp);
  rct_resp_reset(qp, true);
}

static void rc_flush(struct rct_qp_base *b)
{
  rct_comp_flush(rc_of(b));
  rct_resp_flush(rc_of(b));
}

static void rc_query(const struct rct_qp_base *b, struct rct_qp_attr *a)
{
  a->sq_psn = rct_req_next_psn(rc_of_const(b));
  a->rq_psn = rct_resp_epsn(rc_of_const(b));
}

static bool rc_uses_key(const struct rct_qp_base *b, uint32_t key)
{
  return rct_resp_uses_rkey(rc_of_const(b), key);
}

/* ---------------------------------------------------------------- */
/* Frames in: the checks against the QP, then the role [RX-ORDER-1]  */
/* ---------------------------------------------------------------- */

/* Opcode allowed for this QP's mode? [OPC-VAL-2] [SR-WIRE-7] */
static bool opcode_ok(const struct rct_qp *qp, uint32_t f)
{
  if ((f & OPF_SR) && !qp->sr)
    return false;
  if (qp->sr && (f & OPF_REQ) && !(f & OPF_SR))
    return false;
  if (f & OPF_UD)
    return false;
  return true;
}

static bool reject_for_qp(uint64_t *ctr)
{
  (*ctr)++;
  return false;
}

/* Steps 9..10 and the checks of the frame against its QP. Returns true to deliver. */
static bool validate_for_qp(struct rct_qp *qp, const struct rct_pkt *p, int ext)
{
  struct rct_qp_base *b = &qp->base;
  enum rct_qp_state s = b->attr.qp_state;
  bool req = (p->opflags & OPF_REQ) != 0;
  if (!opcode_ok(qp, p->opflags))
    return reject_for_qp(&b->cnt.rx_bad_opcode);
  if (p->h.encap != b->encap)
    return reject_for_qp(&b->cnt.rx_wrong_encap);   /* step 9 [ENC-V1-3] */
  if (p->h.sip != b->attr.ah.dipv4)
    return reject_for_qp(&b->cnt.rx_wrong_peer);    /* step 9 */
  if (req ? (s != RCT_QPS_RTR && s != RCT_QPS_RTS && s != RCT_QPS_SQD)
          : (s != RCT_QPS_RTS && s != RCT_QPS_SQD && s != RCT_QPS_SQE)) {
    if (req && s == RCT_QPS_ERR && ext != RCT_PARSE_BAD_LEN && rct_resp_answer_in_err(qp, p))
      rct_qp_mark_ready(b);                          /* a duplicate: the parting ACK again [RESP-ACK-6] */
    return reject_for_qp(&b->cnt.rx_bad_state);     /* step 10 [QP-STATE-6] */
  }
  if (ext == RCT_PARSE_BAD_LEN)
    return reject_for_qp(&b->cnt.rx_bad_length);    /* [OPC-LEN-5] */
  if (!(p->opflags & OPF_SUPPORTED) && !req)
    return reject_for_qp(&b->cnt.rx_unexpected);    /* [OPC-VAL-1] */
  return true;
}

/* Step 11: requests to the responder, ACKs and READ responses to the completer. */
static bool rc_handle(struct rct_qp_base *b, uint64_t now, struct rct_pkt *p, int ext)
{
  struct rct_qp *qp = rc_of(b);
  if (!validate_for_qp(qp, p, ext))
    return false;
  b->cnt.rx_payload_bytes += p->paylen;
  if (p->opflags & OPF_REQ)
    rct_resp_handle(qp, now, p);
  else
    rct_comp_handle(qp, now, p);
  return true;
}

static bool rc_has_work(const struct rct_qp_base *b)
{
  return rct_req_has_work(rc_of_const(b)) || rct_resp_has_work(rc_of_const(b));
}

/* ---------------------------------------------------------------- */
/* Frames out and time                                               */
/* ---------------------------------------------------------------- */

/* Responder output first (ACKs, NAKs, READ responses), then requests. */
static int rc_poll(struct rct_qp_base *b, uint64_t now, struct rct_frame *out)
{
  struct rct_qp *qp = rc_of(b);
  enum rct_qp_state s = b->attr.qp_state;
  if (rct_resp_poll_parting(qp, out))
    return 1;                    /* whatever the state [RESP-ACK-6] */
  if (s == RCT_QPS_RESET || s == RCT_QPS_INIT || s == RCT_QPS_ERR)
    return 0;                    /* [QP-ERR-3] */
  if (rct_resp_poll(qp, now, out))
    return 1;
  if ((s == RCT_QPS_RTS || s == RCT_QPS_SQD) && rct_req_poll(qp, now, out)) {
    rct_resp_release_ack(qp);    /* a held ACK goes next [RESP-ACK-5] */
    return 1;
  }
  return 0;
}

/* What an expired timer runs, in this order; each is stopped before. */
static const struct {
  enum rct_timer t;
  void (*fire)(struct rct_qp *qp, uint64_t now);
} expiry[] = {
  { RCT_TIMER_RNR, rct_comp_rnr_timeout },     /* [REQ-RNR-1] */
  { RCT_TIMER_RETRANS, rct_comp_timeout },     /* [REQ-TMO-2] */
  { RCT_TIMER_PROBE, rct_comp_probe },         /* [REQ-TMO-8] */
  { RCT_TIMER_ACK, rct_resp_ack_timeout },     /* the held ACK may go [RESP-ACK-5] */
};

static void rc_timeout(struct rct_qp_base *b, uint64_t now)
{
  for (size_t i = 0; i < sizeof(expiry) / sizeof(expiry[0]); i++) {
    if (b->timer[expiry[i].t] > now)
      continue;
    rct_timer_stop(b, expiry[i].t);
    expiry[i].fire(rc_of(b), now);
  }
}

const struct rct_qp_ops rct_rc_ops = {
  .transitions = rc_transitions,
  .ntransitions = sizeof(rc_transitions) / sizeof(rc_transitions[0]),
  .wr_opcodes = (1u << RCT_WR_COUNT) - 1,
  .handle = rc_handle,
  .poll = rc_poll,
  .timeout = rc_timeout,
  .has_work = rc_has_work,
  .check = rc_check,
  .enter = rc_enter,
  .leave = rc_leave,
  .reset = rc_reset,
  .flush = rc_flush,
  .query = rc_query,
  .uses_key = rc_uses_key,
};

/* ---------------------------------------------------------------- */
/* The RC entry points of rct.h                                      */
/* ---------------------------------------------------------------- */

int rct_qp_init(struct rct_dev *dev, struct rct_qp *qp, const struct rct_qp_init_attr *init)
{
  int r;
  if (!qp)
    return RCT_EINVAL;
  r = rct_qpb_init(dev, &qp->base, init, RCT_QPT_RC, &rct_rc_ops);
  if (r == RCT_OK)
    RCT_MEMSET((uint8_t *)qp + sizeof(qp->base), 0, sizeof(*qp) - sizeof(qp->base));
  return r;
}

void rct_qp_destroy(struct rct_qp *qp) { rct_qpb_destroy(&qp->base); }

bool rct_qp_release_ack(struct rct_qp *qp)
{
  if (!rct_resp_release_ack(qp))                       /* [RESP-ACK-5] */
    return false;
  rct_qp_mark_ready(&qp->base);
  return true;
}

int rct_qp_modify(struct rct_qp *qp, const struct rct_qp_attr *attr, uint32_t mask)
{
  return rct_qpb_modify(&qp->base, attr, mask);
}

int rct_qp_query(const struct rct_qp *qp, struct rct_qp_attr *attr)
{
  return rct_qpb_query(&qp->base, attr);
}

int rct_post_send(struct rct_qp *qp, const struct rct_send_wr *wr)
{
  return rct_post_send_wqe(&qp->base, wr, 0);
}

int rct_post_recv(struct rct_qp *qp, const struct rct_recv_wr *wr)
{
  return rct_qpb_post_recv(&qp->base, wr);
}

void rct_handle_timeout(struct rct_qp *qp, uint64_t now) { rct_qpb_handle_timeout(&qp->base, now); }
uint64_t rct_next_timeout(const struct rct_qp *qp) { return rct_qpb_next_timeout(&qp->base); }

int rct_poll_transmit(struct rct_qp *qp, uint64_t now, struct rct_frame *out)
{
  return rct_qpb_poll_transmit(&qp->base, now, out);
}

bool rct_qp_key_in_use(const struct rct_qp *qp, uint32_t key)
{
  return rct_qpb_key_in_use(&qp->base, key);
}
