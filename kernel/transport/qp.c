/*
 * qp.c: the device and QP objects, the QP state machine, posting work, and
 * the sans-IO plumbing: frames in (rct_handle_frame), frames out
 * (rct_poll_transmit), timers (rct_handle_timeout / rct_next_timeout).
 *
 * The kernel RDMA layer and the host harness use it like this:
 *   rct_dev_init once; rct_qp_init + rct_qp_modify (RESET->INIT->RTR->RTS);
 *   on a received frame: rct_handle_frame; on a timer: rct_handle_timeout;
 *   after either, and after posting: drain rct_poll_transmit, re-arm the
 *   timer at rct_next_timeout, poll the CQs.
 * The three roles live in req.c, comp.c and resp.c, frames in are
 * validated in rx.c; this file only dispatches. [QP-*]
 */
#include "rct_int.h"

/* ---------------------------------------------------------------- */
/* Small helpers                                                     */
/* ---------------------------------------------------------------- */

uint32_t rct_mtu_bytes(enum rct_mtu mtu)
{
  return (mtu >= RCT_MTU_256 && mtu <= RCT_MTU_4096) ? 128u << mtu : 0; /* [OPC-LEN-1] */
}

/* [ENC-UDP-2] flow label of the two QPNs, folded into a port >= 0xC000. */
uint16_t rct_udp_sport(uint32_t src_qpn, uint32_t dst_qpn)
{
  uint64_t v = (uint64_t)src_qpn * dst_qpn;
  uint32_t fl;
  v ^= v >> 20;
  v ^= v >> 40;
  fl = (uint32_t)(v & 0xfffff);
  return (uint16_t)(0xc000 | ((fl & 0x3fff) ^ (fl >> 14)));
}

void rct_bm_shift(uint32_t *bm, uint32_t n)
{
  while (n >= 32) {
    for (int i = 0; i < RCT_SR_WORDS - 1; i++)
      bm[i] = bm[i + 1];
    bm[RCT_SR_WORDS - 1] = 0;
    n -= 32;
  }
  if (n) {
    for (int i = 0; i < RCT_SR_WORDS - 1; i++)
      bm[i] = (bm[i] >> n) | (bm[i + 1] << (32 - n));
    bm[RCT_SR_WORDS - 1] >>= n;
  }
}

int rct_bm_any(const uint32_t *bm)
{
  for (int i = 0; i < RCT_SR_WORDS; i++)
    if (bm[i])
      return 1;
  return 0;
}

void rct_timer_set(struct rct_qp *qp, enum rct_timer t, uint64_t deadline)
{
  qp->timer[t] = deadline;
}

void rct_timer_stop(struct rct_qp *qp, enum rct_timer t)
{
  qp->timer[t] = RCT_NEVER;
}

/* ---------------------------------------------------------------- */
/* Device                                                            */
/* ---------------------------------------------------------------- */

void rct_dev_init(struct rct_dev *dev, const struct rct_dev_attr *attr)
{
  RCT_MEMSET(dev, 0, sizeof(*dev));
  dev->attr = *attr;
  rct_crc32_update(0, 0, 0);           /* build the CRC tables now */
}

void rct_qp_mark_ready(struct rct_qp *qp)
{
  struct rct_dev *dev = qp->dev;
  if (qp->on_ready)
    return;
  qp->on_ready = 1;
  qp->ready_next = 0;
  if (dev->ready_tail)
    dev->ready_tail->ready_next = qp;
  else
    dev->ready_head = qp;
  dev->ready_tail = qp;
}

static void ready_remove_head(struct rct_dev *dev)
{
  struct rct_qp *qp = dev->ready_head;
  dev->ready_head = qp->ready_next;
  if (!dev->ready_head)
    dev->ready_tail = 0;
  qp->on_ready = 0;
  qp->ready_next = 0;
}

/* ---------------------------------------------------------------- */
/* QP life cycle and state machine [QP-STATE-*]                      */
/* ---------------------------------------------------------------- */

static bool pow2(uint32_t n) { return n && !(n & (n - 1)); }

int rct_qp_init(struct rct_dev *dev, struct rct_qp *qp, const struct rct_qp_init_attr *init)
{
  if (!dev || !qp || !init || (init->qpn & ~RCT_QPN_MASK) || init->qpn < 2)
    return RCT_EINVAL;
  if (!pow2(init->sq_size) || !pow2(init->rq_size) || !init->sq || !init->rq ||
      (init->rd_size && (!pow2(init->rd_size) || !init->rd)) || !init->send_cq || !init->recv_cq)
    return RCT_EINVAL;
  RCT_MEMSET(qp, 0, sizeof(*qp));
  qp->dev = dev;
  qp->init = *init;
  qp->attr.qp_state = RCT_QPS_RESET;   /* [QP-STATE-1] */
  qp->attr.path_mtu = RCT_MTU_1024;
  qp->mtu = 1024;
  qp->mtu_shift = 10;
  for (int t = 0; t < RCT_TIMER_COUNT; t++)
    qp->timer[t] = RCT_NEVER;
  qp->next = dev->qps;
  dev->qps = qp;
  return RCT_OK;
}

bool rct_qp_release_ack(struct rct_qp *qp)
{
  if (!qp->ack_pending)
    return false;
  qp->ack_release = 1;                                   /* [RESP-ACK-5] */
  rct_qp_mark_ready(qp);
  return true;
}

void rct_qp_destroy(struct rct_qp *qp)
{
  struct rct_dev *dev = qp->dev;
  struct rct_qp **pp;
  for (pp = &dev->qps; *pp; pp = &(*pp)->next)
    if (*pp == qp) {
      *pp = qp->next;
      break;
    }
  if (qp->on_ready) {
    struct rct_qp *prev = 0, *it;
    for (it = dev->ready_head; it && it != qp; it = it->ready_next)
      prev = it;
    if (prev)
      prev->ready_next = qp->ready_next;
    else
      dev->ready_head = qp->ready_next;
    if (dev->ready_tail == qp)
      dev->ready_tail = prev;
  }
  rct_ev_forget(&qp->ev);
  qp->dev = 0;
}

/* Allowed transitions with required and optional attributes (errors.md table). */
#define M(x) RCT_QP_##x
#define EXT (M(SR) | M(ADAPTIVE_RTO) | M(MAX_INFLIGHT))
struct qp_transition {
  uint8_t from, to;
  uint32_t required, optional;
};
static const struct qp_transition qp_transitions[] = {
  { RCT_QPS_RESET, RCT_QPS_INIT, M(STATE) | M(ACCESS_FLAGS) | M(PKEY_INDEX) | M(PORT), 0 },
  { RCT_QPS_INIT, RCT_QPS_INIT, M(STATE), M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS) },
  { RCT_QPS_INIT, RCT_QPS_RTR, M(STATE) | M(AV) | M(PATH_MTU) | M(DEST_QPN) | M(RQ_PSN) |
    M(MAX_DEST_RD_ATOMIC) | M(MIN_RNR_TIMER), M(ACCESS_FLAGS) | M(PKEY_INDEX) | EXT },
  { RCT_QPS_RTR, RCT_QPS_RTS, M(STATE) | M(SQ_PSN) | M(TIMEOUT) | M(RETRY_CNT) | M(RNR_RETRY) |
    M(MAX_QP_RD_ATOMIC), M(CUR_STATE) | M(ACCESS_FLAGS) | M(MIN_RNR_TIMER) | M(ADAPTIVE_RTO) |
    M(MAX_INFLIGHT) },
  { RCT_QPS_RTS, RCT_QPS_RTS, M(STATE), M(CUR_STATE) | M(ACCESS_FLAGS) | M(MIN_RNR_TIMER) |
    M(ADAPTIVE_RTO) | M(MAX_INFLIGHT) },
  { RCT_QPS_RTS, RCT_QPS_SQD, M(STATE), 0 },
  { RCT_QPS_SQD, RCT_QPS_RTS, M(STATE), M(CUR_STATE) | M(ACCESS_FLAGS) | M(MIN_RNR_TIMER) |
    M(TIMEOUT) | M(RETRY_CNT) | M(RNR_RETRY) },
  { RCT_QPS_SQD, RCT_QPS_SQD, M(STATE), M(CUR_STATE) | M(TIMEOUT) | M(RETRY_CNT) | M(RNR_RETRY) |
    M(MAX_QP_RD_ATOMIC) | M(ACCESS_FLAGS) | M(MIN_RNR_TIMER) },
  { RCT_QPS_SQE, RCT_QPS_RTS, M(STATE), M(CUR_STATE) | M(ACCESS_FLAGS) },
};

static const struct qp_transition *find_transition(enum rct_qp_state from, enum rct_qp_state to)
{
  for (size_t i = 0; i < sizeof(qp_transitions) / sizeof(qp_transitions[0]); i++)
    if (qp_transitions[i].from == from && qp_transitions[i].to == to)
      return &qp_transitions[i];
  return 0;
}

/* Range checks of [QP-STATE-2]. */
static bool attr_values_ok(const struct rct_qp_attr *a, uint32_t mask)
{
  if ((mask & M(ACCESS_FLAGS)) && (a->qp_access_flags & ~RCT_ACCESS_ALL))
    return false;
  if ((mask & M(PKEY_INDEX)) && a->pkey_index != RCT_PKEY_INDEX)
    return false;
  if ((mask & M(PORT)) && a->port_num != RCT_PORT_NUM)
    return false;
  if ((mask & M(PATH_MTU)) && !rct_mtu_bytes(a->path_mtu))
    return false;
  if ((mask & M(TIMEOUT)) && a->timeout > 31)
    return false;
  if ((mask & M(RETRY_CNT)) && a->retry_cnt > 7)
    return false;
  if ((mask & M(RNR_RETRY)) && a->rnr_retry > 7)
    return false;
  if ((mask & M(MIN_RNR_TIMER)) && a->min_rnr_timer > 31)
    return false;
  if ((mask & M(RQ_PSN)) && (a->rq_psn & ~PSN_MASK))
    return false;
  if ((mask & M(SQ_PSN)) && (a->sq_psn & ~PSN_MASK))
    return false;
  if ((mask & M(DEST_QPN)) && (a->dest_qp_num & ~RCT_QPN_MASK))
    return false;
  if ((mask & M(MAX_QP_RD_ATOMIC)) && a->max_rd_atomic > 16)
    return false;
  if ((mask & M(MAX_INFLIGHT)) && a->max_inflight >= PSN_HALF)
    return false;
  return true;
}

/* [ENC-IP-3] the largest frame of the QP must fit the interface MTU:
 * IPv4 20 + UDP 8 + BTH 12 + RETH 16 + ImmDt 4 (+ SRXH 8) + path MTU + ICRC 4. */
static bool frame_fits(const struct rct_qp *qp, const struct rct_qp_attr *a, uint32_t mask)
{
  uint32_t lim = qp->dev->attr.ip_mtu;
  bool sr = (mask & M(SR)) ? a->sr_enable : qp->attr.sr_enable;
  if (!lim)
    return true;
  return 20 + 8 + 12 + 16 + 4 + (sr ? SRETH_LEN : 0) + rct_mtu_bytes(a->path_mtu) + 4 <= lim;
}

static void apply_attrs(struct rct_qp *qp, const struct rct_qp_attr *a, uint32_t mask)
{
  struct rct_qp_attr *q = &qp->attr;
  if (mask & M(ACCESS_FLAGS)) q->qp_access_flags = a->qp_access_flags;
  if (mask & M(PKEY_INDEX)) q->pkey_index = a->pkey_index;
  if (mask & M(AV)) q->ah = a->ah;
  if (mask & M(PATH_MTU)) {
    q->path_mtu = a->path_mtu;
    qp->mtu = rct_mtu_bytes(a->path_mtu);
    qp->mtu_shift = (uint8_t)(7 + a->path_mtu);
  }
  if (mask & M(TIMEOUT)) q->timeout = a->timeout;
  if (mask & M(RETRY_CNT)) q->retry_cnt = a->retry_cnt;
  if (mask & M(RNR_RETRY)) q->rnr_retry = a->rnr_retry;
  if (mask & M(MIN_RNR_TIMER)) q->min_rnr_timer = a->min_rnr_timer;
  if (mask & M(RQ_PSN)) q->rq_psn = a->rq_psn;
  if (mask & M(SQ_PSN)) q->sq_psn = a->sq_psn;
  if (mask & M(MAX_QP_RD_ATOMIC)) q->max_rd_atomic = a->max_rd_atomic;
  if (mask & M(MAX_DEST_RD_ATOMIC)) q->max_dest_rd_atomic = a->max_dest_rd_atomic;
  if (mask & M(DEST_QPN)) q->dest_qp_num = a->dest_qp_num;
  if (mask & M(SR)) q->sr_enable = a->sr_enable;
  if (mask & M(ADAPTIVE_RTO)) {
    q->adaptive_rto = a->adaptive_rto;
    q->min_rto_ns = a->min_rto_ns;
  }
  if (mask & M(MAX_INFLIGHT)) q->max_inflight = a->max_inflight;
}

/* Entering RESET discards everything but the counters [QP-STATE-3]. */
static void qp_reset(struct rct_qp *qp)
{
  rct_req_reset(qp);
  rct_comp_reset(qp);
  rct_resp_reset(qp);
  qp->sq_head = qp->sq_next = qp->sq_tail = 0;
  qp->rq_head = qp->rq_tail = 0;
  for (int t = 0; t < RCT_TIMER_COUNT; t++)
    qp->timer[t] = RCT_NEVER;
}

static void qp_enter_err(struct rct_qp *qp, enum rct_qp_err_cause cause);

int rct_qp_modify(struct rct_qp *qp, const struct rct_qp_attr *attr, uint32_t mask)
{
  enum rct_qp_state cur = qp->attr.qp_state, to = cur;
  const struct qp_transition *tr;
  if (mask & M(STATE))
    to = attr->qp_state;
  if (!(mask & M(STATE)) || to >= RCT_QPS_COUNT)
    return RCT_EINVAL;
  /* [QP-STATE-2]: to RESET and to ERR take STATE alone */
  if ((to == RCT_QPS_RESET || to == RCT_QPS_ERR) && mask != M(STATE))
    return RCT_EINVAL;
  /* CUR_STATE, where the table lists it, must name the state the QP is in */
  if ((mask & M(CUR_STATE)) && attr->cur_qp_state != cur)
    return RCT_EINVAL;
  if (to == RCT_QPS_RESET) {
    qp_reset(qp);
    qp->attr.qp_state = RCT_QPS_RESET;
    return RCT_OK;
  }
  if (to == RCT_QPS_ERR) {
    qp_enter_err(qp, RCT_QP_ERR_MODIFY);
    return RCT_OK;
  }
  tr = find_transition(cur, to);
  if (!tr)
    return RCT_EINVAL;
  if ((mask & tr->required) != tr->required || (mask & ~(tr->required | tr->optional)))
    return RCT_EINVAL;
  if (!attr_values_ok(attr, mask))
    return RCT_EINVAL;
  if (to == RCT_QPS_RTR && qp->init.rd_size < attr->max_dest_rd_atomic)
    return RCT_EINVAL;
  if (to == RCT_QPS_RTR && !frame_fits(qp, attr, mask))
    return RCT_EINVAL;
  apply_attrs(qp, attr, mask);
  if (cur == RCT_QPS_INIT && to == RCT_QPS_RTR) {
    qp->sr = qp->attr.sr_enable;         /* [SR-NEG-2] fixed at RTR */
    qp->encap = (qp->dev->attr.flags & RCT_DEV_ROCE_V1) && qp->attr.ah.roce_v1
                ? RCT_ENCAP_V1 : RCT_ENCAP_V2;   /* [ENC-V1-3] */
    qp->sport = qp->attr.ah.udp_sport ? qp->attr.ah.udp_sport
                : rct_udp_sport(qp->init.qpn, qp->attr.dest_qp_num);
    rct_resp_reset(qp);
    qp->epsn = qp->attr.rq_psn;          /* [RESP-PSN-1] */
  }
  if (cur == RCT_QPS_RTR && to == RCT_QPS_RTS) {
    rct_req_reset(qp);
    rct_comp_reset(qp);
  }
  qp->attr.qp_state = to;
  if (to == RCT_QPS_RTS)
    rct_qp_mark_ready(qp);
  return RCT_OK;
}
#undef M

int rct_qp_query(const struct rct_qp *qp, struct rct_qp_attr *attr)
{
  *attr = qp->attr;
  attr->cur_qp_state = qp->attr.qp_state;
  attr->sq_psn = qp->next_psn;
  attr->rq_psn = qp->epsn;
  return RCT_OK;
}

/* [QP-ERR-1] [QP-ERR-2] [QP-ERR-3] The event says whether the caller asked. */
static void qp_enter_err(struct rct_qp *qp, enum rct_qp_err_cause cause)
{
  if (qp->attr.qp_state == RCT_QPS_ERR)
    return;
  qp->attr.qp_state = RCT_QPS_ERR;
  qp->req_state = RCT_REQ_ERROR;
  qp->comp_state = RCT_COMP_ERROR;
  qp->resp_state = RCT_RESP_ERROR;
  for (int t = 0; t < RCT_TIMER_COUNT; t++)
    qp->timer[t] = RCT_NEVER;
  rct_comp_flush(qp);
  rct_resp_flush(qp);
  rct_ev_qp_err(qp, cause);
}

void rct_qp_to_err(struct rct_qp *qp)
{
  qp_enter_err(qp, RCT_QP_ERR_TRANSPORT);
}

/* ---------------------------------------------------------------- */
/* Posting work                                                      */
/* ---------------------------------------------------------------- */

static void flush_one(struct rct_qp *qp, struct rct_cq *cq, uint64_t wr_id, enum rct_wc_opcode op)
{
  struct rct_wc wc = { .wr_id = wr_id, .status = RCT_WC_WR_FLUSH_ERR, .opcode = op,
                       .qp_num = qp->init.qpn };
  qp->cnt.flushed++;
  rct_cq_push(qp, cq, &wc);
}

/* [QP-STATE-4] [REQ-FRAG-2] */
int rct_post_send(struct rct_qp *qp, const struct rct_send_wr *wr)
{
  enum rct_qp_state s = qp->attr.qp_state;
  struct rct_send_wqe *w;
  uint64_t total = 0;
  if (s == RCT_QPS_RESET || s == RCT_QPS_INIT || s == RCT_QPS_RTR)
    return RCT_EINVAL;
  if (wr->opcode >= RCT_WR_COUNT || wr->num_sge < 0 || wr->num_sge > RCT_MAX_SGE ||
      (wr->num_sge && !wr->sg_list))
    return RCT_EINVAL;
  if (s == RCT_QPS_ERR || s == RCT_QPS_SQE) {
    flush_one(qp, qp->init.send_cq, wr->wr_id, rct_wr_to_wc_opcode(wr->opcode));
    return RCT_OK;
  }
  if (qp->sq_tail - qp->sq_head >= qp->init.sq_size)
    return RCT_ENOSPC;
  w = SQ_AT(qp, qp->sq_tail);
  RCT_MEMSET(w, 0, sizeof(*w));
  w->wr = *wr;
  w->wr.sg_list = 0;
  for (int i = 0; i < wr->num_sge; i++) {
    w->sge[i] = wr->sg_list[i];
    total += wr->sg_list[i].length;
  }
  w->status = RCT_WC_SUCCESS;
  if (total > 0x80000000ull) {
    w->status = RCT_WC_LOC_LEN_ERR;      /* fails when the requester reaches it */
    total = 0;
  }
  w->length = (uint32_t)total;
  w->state = RCT_WQE_POSTED;
  qp->sq_tail++;
  rct_qp_mark_ready(qp);
  return RCT_OK;
}

/* [QP-STATE-5] */
int rct_post_recv(struct rct_qp *qp, const struct rct_recv_wr *wr)
{
  enum rct_qp_state s = qp->attr.qp_state;
  struct rct_recv_wqe *r;
  uint64_t total = 0;
  if (s == RCT_QPS_RESET)
    return RCT_EINVAL;
  if (wr->num_sge < 0 || wr->num_sge > RCT_MAX_SGE || (wr->num_sge && !wr->sg_list))
    return RCT_EINVAL;
  if (s == RCT_QPS_ERR) {
    flush_one(qp, qp->init.recv_cq, wr->wr_id, RCT_WC_RECV);
    return RCT_OK;
  }
  if (qp->rq_tail - qp->rq_head >= qp->init.rq_size)
    return RCT_ENOSPC;
  r = RQ_AT(qp, qp->rq_tail);
  r->wr_id = wr->wr_id;
  r->num_sge = wr->num_sge;
  for (int i = 0; i < wr->num_sge; i++) {
    r->sge[i] = wr->sg_list[i];
    total += wr->sg_list[i].length;
  }
  r->length = total > 0xffffffffull ? 0xffffffffu : (uint32_t)total;
  qp->rq_tail++;
  return RCT_OK;
}

/* ---------------------------------------------------------------- */
/* Memory helpers                                                    */
/* ---------------------------------------------------------------- */

/* Translate bytes [off, off+len) of the message described by an SGE list
 * into at most `max` segments. Returns the segment count or a negative
 * rct_mr_err (RCT_MR_EBOUNDS when the list is shorter than off+len). */
int rct_qp_sge_translate(struct rct_qp *qp, const struct rct_sge *sge, int nsge, uint32_t off,
                     uint32_t len, uint32_t access, struct rct_iov *out, int max)
{
  const struct rct_mr_ops *ops = qp->dev->attr.mr_ops;
  int n = 0;
  for (int i = 0; i < nsge && len; i++) {
    uint32_t take;
    int r;
    if (off >= sge[i].length) {
      off -= sge[i].length;
      continue;
    }
    take = sge[i].length - off;
    if (take > len)
      take = len;
    if (n >= max)
      return RCT_MR_ESEGS;
    r = ops->translate(qp->dev->attr.mr_ctx, sge[i].lkey, false, qp->init.pd,
                       sge[i].addr + off, take, access, out + n, max - n);
    if (r < 0)
      return r;
    n += r;
    len -= take;
    off = 0;
  }
  return len ? RCT_MR_EBOUNDS : n;
}

void rct_qp_copy_to_segs(const struct rct_iov *seg, int nseg, const uint8_t *src, uint32_t len)
{
  for (int i = 0; i < nseg && len; i++) {
    uint32_t n = seg[i].len < len ? seg[i].len : len;
    RCT_MEMCPY(seg[i].base, src, n);
    src += n;
    len -= n;
  }
}

/* ---------------------------------------------------------------- */
/* Frames out                                                        */
/* ---------------------------------------------------------------- */

void rct_qp_emit(struct rct_qp *qp, struct rct_frame *f, struct rct_hdr *h, uint32_t paylen)
{
  struct rct_dev *dev = qp->dev;
  uint32_t pad, l3_off = ETH_HLEN;
  h->encap = (enum rct_encap)qp->encap;
  RCT_MEMCPY(h->dmac, qp->attr.ah.dmac, 6);
  RCT_MEMCPY(h->smac, dev->attr.mac, 6);
  h->sip = dev->attr.ipv4;
  h->dip = qp->attr.ah.dipv4;
  h->tos = (uint8_t)(qp->attr.ah.dscp << 2);
  h->ttl = qp->attr.ah.ttl;
  h->ip_id = dev->ip_id++;             /* [ENC-IP-2] */
  h->sport = qp->sport;
  h->bth.pkey = BTH_PKEY_DEFAULT;      /* [HDR-BTH-2] */
  h->bth.dqpn = qp->attr.dest_qp_num;
  f->hdr_len = (uint16_t)rct_wire_build(f->hdr, h, paylen);
  pad = h->bth.padcnt;
  RCT_MEMSET(f->trailer, 0, sizeof(f->trailer));
  if (!(dev->attr.flags & RCT_DEV_ICRC_OFFLOAD))
    rct_wire_icrc_store(f->trailer + pad,
                    rct_icrc_compute(f->hdr, f->hdr_len, l3_off, h->encap, f->seg, f->nseg,
                                     f->trailer, pad));
  f->trailer_len = (uint8_t)(pad + ICRC_LEN);
  f->len = f->hdr_len + paylen + f->trailer_len;
  f->qpn = qp->init.qpn;
  f->psn = h->bth.psn;
  f->opcode = h->bth.opcode;
  qp->cnt.tx_frames++;
  qp->cnt.tx_bytes += f->len;
  qp->cnt.tx_payload_bytes += paylen;
  dev->cnt.tx_frames++;
}

int rct_frame_linearize(const struct rct_frame *f, uint8_t *buf, size_t cap)
{
  size_t n = f->hdr_len;
  if (f->len > cap)
    return RCT_ETRUNC;
  RCT_MEMCPY(buf, f->hdr, f->hdr_len);
  for (int i = 0; i < f->nseg; i++) {
    RCT_MEMCPY(buf + n, f->seg[i].base, f->seg[i].len);
    n += f->seg[i].len;
  }
  RCT_MEMCPY(buf + n, f->trailer, f->trailer_len);
  return (int)(n + f->trailer_len);
}

/* Responder output first (ACKs, NAKs, READ responses), then requests. */
int rct_poll_transmit(struct rct_qp *qp, uint64_t now, struct rct_frame *out)
{
  enum rct_qp_state s = qp->attr.qp_state;
  out->nseg = 0;
  if (s == RCT_QPS_RESET || s == RCT_QPS_INIT || s == RCT_QPS_ERR)
    return 0;                    /* [QP-ERR-3] */
  if (rct_resp_poll(qp, now, out))
    return 1;
  if ((s == RCT_QPS_RTS || s == RCT_QPS_SQD) && rct_req_poll(qp, now, out)) {
    if (qp->ack_pending)
      qp->ack_release = 1;      /* the held ACK goes next [RESP-ACK-5] */
    return 1;
  }
  return 0;
}

int rct_dev_poll_transmit(struct rct_dev *dev, uint64_t now, struct rct_frame *out)
{
  while (dev->ready_head) {
    struct rct_qp *qp = dev->ready_head;
    if (rct_poll_transmit(qp, now, out)) {
      /* round robin: move it to the tail */
      if (qp->ready_next) {
        ready_remove_head(dev);
        rct_qp_mark_ready(qp);
      }
      return 1;
    }
    ready_remove_head(dev);
  }
  return 0;
}

/* ---------------------------------------------------------------- */
/* Timers                                                            */
/* ---------------------------------------------------------------- */

uint64_t rct_next_timeout(const struct rct_qp *qp)
{
  uint64_t t = RCT_NEVER;
  for (int i = 0; i < RCT_TIMER_COUNT; i++)
    if (qp->timer[i] < t)
      t = qp->timer[i];
  return t;
}

void rct_handle_timeout(struct rct_qp *qp, uint64_t now)
{
  if (qp->timer[RCT_TIMER_RNR] <= now) {
    qp->timer[RCT_TIMER_RNR] = RCT_NEVER;
    rct_comp_rnr_timeout(qp, now);
  }
  if (qp->timer[RCT_TIMER_RETRANS] <= now) {
    qp->timer[RCT_TIMER_RETRANS] = RCT_NEVER;
    rct_comp_timeout(qp, now);
  }
  if (qp->timer[RCT_TIMER_PROBE] <= now) {
    qp->timer[RCT_TIMER_PROBE] = RCT_NEVER;
    rct_comp_probe(qp, now);
  }
  if (qp->timer[RCT_TIMER_ACK] <= now)
    qp->timer[RCT_TIMER_ACK] = RCT_NEVER;    /* the held ACK may go [RESP-ACK-5] */
  if (rct_req_has_work(qp) || rct_resp_has_work(qp))
    rct_qp_mark_ready(qp);
}

void rct_dev_handle_timeout(struct rct_dev *dev, uint64_t now)
{
  for (struct rct_qp *qp = dev->qps; qp; qp = qp->next)
    if (rct_next_timeout(qp) <= now)
      rct_handle_timeout(qp, now);
}

uint64_t rct_dev_next_timeout(const struct rct_dev *dev)
{
  uint64_t t = RCT_NEVER;
  for (const struct rct_qp *qp = dev->qps; qp; qp = qp->next) {
    uint64_t q = rct_next_timeout(qp);
    if (q < t)
      t = q;
  }
  return t;
}
