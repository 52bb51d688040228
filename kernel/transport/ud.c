/*
 * ud.c: the UD type (proto-spec ud.md). A UD QP is the QP base and nothing
 * more: no connection, no acknowledgements, no windows. Sending: each send
 * WR becomes one frame (BTH + DETH [+ ImmDt]) addressed from its
 * struct rct_ud_dest and completes as the frame is handed out; receiving:
 * the Q_Key check, then the GRH area and the payload into the next receive
 * WR. The UD entry points of rct.h (rct_ud_qp_init, rct_ud_post_send); the
 * rest of a UD QP's life goes through the generic rct_qpb_* calls.
 */
#include "core_int.h"

/* ---------------------------------------------------------------- */
/* The state machine [UD-STATE-1]                                    */
/* ---------------------------------------------------------------- */

#define M(x) RCT_QP_##x
static const struct rct_qp_transition ud_transitions[] = {
  { RCT_QPS_RESET, RCT_QPS_INIT, M(STATE) | M(PKEY_INDEX) | M(PORT) | M(QKEY), 0 },
  { RCT_QPS_INIT, RCT_QPS_INIT, M(STATE), M(PKEY_INDEX) | M(PORT) | M(QKEY) },
  { RCT_QPS_INIT, RCT_QPS_RTR, M(STATE), M(PKEY_INDEX) | M(QKEY) },
  { RCT_QPS_RTR, RCT_QPS_RTS, M(STATE) | M(SQ_PSN), M(CUR_STATE) | M(QKEY) },
  { RCT_QPS_RTS, RCT_QPS_RTS, M(STATE), M(CUR_STATE) | M(QKEY) },
  { RCT_QPS_RTS, RCT_QPS_SQD, M(STATE), 0 },
  { RCT_QPS_SQD, RCT_QPS_RTS, M(STATE), M(CUR_STATE) | M(QKEY) },
  { RCT_QPS_SQD, RCT_QPS_SQD, M(STATE), M(CUR_STATE) | M(QKEY) },
  { RCT_QPS_SQE, RCT_QPS_RTS, M(STATE), M(CUR_STATE) | M(QKEY) },
};
#undef M

/* The port's MTU: the largest IBTA MTU whose UD frame fits the interface's
 * IP MTU [UD-MTU-1]. */
static enum rct_mtu port_mtu(const struct rct_dev *dev)
{
  uint32_t lim = dev->attr.ip_mtu;
  uint32_t over = IPV4_HLEN + UDP_HLEN + BTH_LEN + DETH_LEN + IMMDT_LEN + ICRC_LEN;
  enum rct_mtu m = RCT_MTU_4096;
  while (m > RCT_MTU_256 && lim && over + rct_mtu_bytes(m) > lim)
    m--;
  return m;
}

uint32_t rct_ud_mtu(const struct rct_dev *dev)
{
  return rct_mtu_bytes(port_mtu(dev));
}

static void ud_enter(struct rct_qp_base *b, enum rct_qp_state from, enum rct_qp_state to)
{
  if (from == RCT_QPS_INIT && to == RCT_QPS_RTR)
    b->encap = RCT_ENCAP_V2;             /* UD is RoCEv2 only [UD-WIRE-1] */
}

/* A send WR ends: its completion when signaled or failed [UD-SEND-1]. */
static void complete_send(struct rct_qp_base *b, struct rct_send_wqe *w, enum rct_wc_status st)
{
  bool signaled = (w->wr.send_flags & RCT_SEND_SIGNALED) || b->init.sq_sig_all;
  w->state = RCT_WQE_DONE;
  if (st == RCT_WC_WR_FLUSH_ERR)
    b->cnt.flushed++;
  if (signaled || st != RCT_WC_SUCCESS) {
    struct rct_wc wc = { .wr_id = w->wr.wr_id, .status = st, .opcode = RCT_WC_SEND,
                         .qp_num = b->init.qpn, .src_qp = w->ud.dqpn,
                         .byte_len = st == RCT_WC_SUCCESS ? w->length : 0 };
    rct_cq_push(b, b->init.send_cq, &wc);
  }
  b->sq_head++;
}

static void flush_sends(struct rct_qp_base *b)
{
  while (b->sq_head != b->sq_tail)
    complete_send(b, SQ_AT(b, b->sq_head), RCT_WC_WR_FLUSH_ERR);
}

/* Entering ERR: every posted WR completes with WR_FLUSH_ERR [QP-ERR-2]. */
static void ud_flush(struct rct_qp_base *b)
{
  flush_sends(b);
  while (b->rq_head != b->rq_tail) {
    struct rct_wc wc = { .wr_id = RQ_AT(b, b->rq_head)->wr_id, .status = RCT_WC_WR_FLUSH_ERR,
                         .opcode = RCT_WC_RECV, .qp_num = b->init.qpn };
    b->cnt.flushed++;
    rct_cq_push(b, b->init.recv_cq, &wc);
    b->rq_head++;
  }
}

/* ---------------------------------------------------------------- */
/* Sending [UD-WIRE-1] [UD-SEND-1]                                   */
/* ---------------------------------------------------------------- */

/* The head send WR failed locally: its error, then SQE [UD-STATE-2]. */
static void send_failed(struct rct_qp_base *b, struct rct_send_wqe *w, enum rct_wc_status st)
{
  complete_send(b, w, st);
  rct_qp_to_sqe(b);
  flush_sends(b);
}

/* The frame of w (payload already in f->seg[0..nseg)). */
static void build_frame(struct rct_qp_base *b, struct rct_send_wqe *w, struct rct_frame *f)
{
  struct rct_hdr h;
  const struct rct_ud_dest *d = &w->ud;
  rct_hdr_clear(&h);
  h.bth.opcode = w->wr.opcode == RCT_WR_SEND_WITH_IMM ? OP_UD_SEND_ONLY_IMM : OP_UD_SEND_ONLY;
  h.bth.se = (w->wr.send_flags & RCT_SEND_SOLICITED) != 0;
  h.bth.dqpn = d->dqpn;
  h.bth.psn = b->attr.sq_psn;                                  /* [UD-PSN-1] */
  b->attr.sq_psn = (b->attr.sq_psn + 1) & PSN_MASK;
  h.deth.qkey = (d->qkey & RCT_QKEY_CONTROLLED) ? b->attr.qkey : d->qkey;   /* [UD-QKEY-2] */
  h.deth.srcqp = b->init.qpn;
  h.imm = w->wr.imm_data;
  h.encap = RCT_ENCAP_V2;                                      /* [UD-WIRE-2] */
  RCT_MEMCPY(h.dmac, d->dmac, 6);
  h.dip = d->dipv4;
  h.tos = (uint8_t)(d->dscp << 2);
  h.ttl = d->ttl;
  h.sport = d->udp_sport ? d->udp_sport : rct_udp_sport(b->init.qpn, d->dqpn);
  rct_tx_finish(b, f, &h, w->length);
}

static int ud_poll(struct rct_qp_base *b, uint64_t now, struct rct_frame *f)
{
  enum rct_qp_state s = b->attr.qp_state;
  struct rct_send_wqe *w;
  int n;
  if (s != RCT_QPS_RTS || b->sq_head == b->sq_tail)          /* SQD: nothing new starts */
    return 0;
  w = SQ_AT(b, b->sq_head);
  if (w->status != RCT_WC_SUCCESS || w->length > b->mtu) {
    send_failed(b, w, RCT_WC_LOC_LEN_ERR);                     /* [UD-MTU-1] */
    return 0;
  }
  n = rct_sge_translate(b, w->sge, w->wr.num_sge, 0, w->length, 0, f->seg, RCT_FRAME_MAX_SEGS);
  if (n < 0) {
    send_failed(b, w, RCT_WC_LOC_PROT_ERR);
    return 0;
  }
  f->nseg = (uint8_t)n;
  build_frame(b, w, f);
  complete_send(b, w, RCT_WC_SUCCESS);                         /* [UD-SEND-1] */
  return 1;
}

static bool ud_has_work(const struct rct_qp_base *b)
{
  enum rct_qp_state s = b->attr.qp_state;
  return s == RCT_QPS_RTS && b->sq_head != b->sq_tail;
}

/* ---------------------------------------------------------------- */
/* Receiving [UD-RX-1] [UD-RECV-*]                                    */
/* ---------------------------------------------------------------- */

static bool drop(uint64_t *ctr)
{
  (*ctr)++;
  return false;
}

/* [UD-RX-1]: the checks of a frame against a UD QP; true to deliver. */
static bool frame_ok(struct rct_qp_base *b, const struct rct_pkt *p, int ext)
{
  enum rct_qp_state s = b->attr.qp_state;
  if (!(p->opflags & OPF_UD))
    return drop(&b->cnt.rx_bad_opcode);
  if (p->h.encap != RCT_ENCAP_V2)
    return drop(&b->cnt.rx_wrong_encap);
  if (s != RCT_QPS_RTR && s != RCT_QPS_RTS && s != RCT_QPS_SQD && s != RCT_QPS_SQE)
    return drop(&b->cnt.rx_bad_state);
  if (ext == RCT_PARSE_BAD_LEN || p->paylen > b->mtu)
    return drop(&b->cnt.rx_bad_length);                        /* [UD-MTU-1] */
  if (p->h.deth.qkey != b->attr.qkey)
    return drop(&b->cnt.rx_bad_qkey);                          /* [UD-QKEY-1] */
  if (!rct_rq_at(b, 0))
    return drop(&b->cnt.rx_no_recv);                           /* [UD-RECV-1] [SRQ-TAKE-3] */
  return true;
}

/* Copy len bytes of src to [off, off+len) of r's buffers; false if its memory does not take them. */
static bool place(struct rct_qp_base *b, const struct rct_recv_wqe *r, uint32_t off, const uint8_t *src,
                  uint32_t len)
{
  struct rct_iov seg[RCT_FRAME_MAX_SEGS];
  int n = rct_sge_translate(b, r->sge, r->num_sge, off, len, RCT_ACCESS_LOCAL_WRITE, seg, RCT_FRAME_MAX_SEGS);
  if (n < 0)
    return false;
  rct_segs_copy(seg, n, src, len);
  return true;
}

/* The GRH area [UD-RECV-2]: for IPv4, 20 zero bytes, then the IPv4 header as received. */
static bool place_grh(struct rct_qp_base *b, const struct rct_recv_wqe *r, const struct rct_pkt *p)
{
  uint8_t grh[GRH_LEN];
  RCT_MEMSET(grh, 0, GRH_LEN - IPV4_HLEN);
  RCT_MEMCPY(grh + GRH_LEN - IPV4_HLEN, p->frame + p->l3_off, IPV4_HLEN);
  return place(b, r, 0, grh, GRH_LEN);
}

static bool ud_handle(struct rct_qp_base *b, uint64_t now, struct rct_pkt *p, int ext)
{
  const struct rct_recv_wqe *r;
  struct rct_wc wc = { .opcode = RCT_WC_RECV, .qp_num = b->init.qpn };
  if (!frame_ok(b, p, ext))
    return false;
  b->cnt.rx_payload_bytes += p->paylen;
  r = RQ_AT(b, b->rq_head);
  wc.wr_id = r->wr_id;
  if (GRH_LEN + p->paylen > r->length)
    wc.status = RCT_WC_LOC_LEN_ERR;                            /* [UD-RECV-3] */
  else if (!place_grh(b, r, p) || !place(b, r, GRH_LEN, p->payload, p->paylen))
    wc.status = RCT_WC_LOC_PROT_ERR;
  else {
    wc.byte_len = GRH_LEN + p->paylen;                         /* [UD-RECV-2] */
    wc.wc_flags = RCT_WC_GRH | ((p->opflags & OPF_IMM) ? RCT_WC_WITH_IMM : 0);
    wc.imm_data = p->h.imm;
    wc.src_qp = p->h.deth.srcqp;
    wc.solicited = p->h.bth.se;
  }
  b->rq_head++;
  rct_cq_push(b, b->init.recv_cq, &wc);
  return true;
}

static const struct rct_qp_ops ud_ops = {
  .transitions = ud_transitions,
  .ntransitions = sizeof(ud_transitions) / sizeof(ud_transitions[0]),
  .wr_opcodes = (1u << RCT_WR_SEND) | (1u << RCT_WR_SEND_WITH_IMM),
  .handle = ud_handle,
  .poll = ud_poll,
  .has_work = ud_has_work,
  .enter = ud_enter,
  .flush = ud_flush,
};

/* ---------------------------------------------------------------- */
/* The UD entry points of rct.h                                      */
/* ---------------------------------------------------------------- */

int rct_ud_qp_init(struct rct_dev *dev, struct rct_ud_qp *qp, const struct rct_qp_init_attr *init)
{
  int r;
  if (!dev || !qp || !init || init->rd_size)
    return RCT_EINVAL;                   /* UD has no READ resources */
  r = rct_qpb_init(dev, &qp->base, init, RCT_QPT_UD, &ud_ops);
  if (r != RCT_OK)
    return r;
  qp->base.attr.path_mtu = port_mtu(dev);
  qp->base.mtu = rct_mtu_bytes(qp->base.attr.path_mtu);
  qp->base.mtu_shift = (uint8_t)(7 + qp->base.attr.path_mtu);   /* [OPC-LEN-1] */
  return RCT_OK;
}

int rct_ud_post_send(struct rct_ud_qp *qp, const struct rct_send_wr *wr, const struct rct_ud_dest *dest)
{
  struct rct_send_wqe *w;
  int r;
  if (!dest || (dest->dqpn & ~RCT_QPN_MASK))
    return RCT_EINVAL;
  r = rct_post_send_wqe(&qp->base, wr, &w);
  if (r == RCT_OK && w)
    w->ud = *dest;
  return r;
}
