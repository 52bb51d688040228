/*
 * cm.c: codec of the connection-exchange messages (REQ, REP, REJ, RTU,
 * DREQ, DREP) of proto-spec cm.md, and the QP attributes an exchange yields.
 * Pure encode/parse; the state machine is cm_ep.c. [CM-MSG-*]
 */
#include "rct_cm.h"
#include "../transport/wire.h"

/* A path MTU code of the IBTA table (256..4096 bytes) [CM-MSG-4]. The CM checks
 * the code only; the bytes it stands for are the core's rct_mtu_bytes(), which
 * the CM does not link against (user space links the CM without the core). */
static bool mtu_valid(uint8_t mtu) { return mtu >= RCT_MTU_256 && mtu <= RCT_MTU_4096; }

void rct_cm_gid_from_ipv4(uint8_t gid[16], uint32_t ipv4)
{
  RCT_MEMSET(gid, 0, 16);
  gid[10] = gid[11] = 0xff;
  st32(gid + 12, ipv4);
}

static uint32_t cm_len(enum rct_cm_type t)
{
  switch (t) {
  case RCT_CM_REQ: case RCT_CM_REP: return RCT_CM_LEN_REQ;
  case RCT_CM_REJ: return RCT_CM_LEN_REJ;
  case RCT_CM_RTU: case RCT_CM_DREQ: case RCT_CM_DREP: return RCT_CM_LEN_HDR;
  default: return 0;
  }
}

int rct_cm_encode(const struct rct_cm_msg *m, uint8_t *buf, size_t cap)
{
  uint32_t len = cm_len(m->type);
  if (!len || m->private_len > RCT_CM_PRIVATE_MAX)
    return RCT_EINVAL;
  if (cap < len)
    return RCT_ETRUNC;
  RCT_MEMSET(buf, 0, len);
  st16(buf, RCT_CM_MAGIC);
  buf[2] = RCT_CM_VERSION;
  buf[3] = (uint8_t)m->type;
  st32(buf + 4, m->src_conn_id);
  st32(buf + 8, m->dst_conn_id);
  if (m->type == RCT_CM_REQ || m->type == RCT_CM_REP) {
    st32(buf + 12, m->qpn & RCT_QPN_MASK);
    st32(buf + 16, m->start_psn & RCT_PSN_MASK);
    buf[20] = m->path_mtu;
    buf[21] = m->caps & RCT_CM_CAP_SR;
    buf[22] = m->responder_resources;
    buf[23] = m->initiator_depth;
    RCT_MEMCPY(buf + 28, m->gid, 16);
    RCT_MEMCPY(buf + 44, m->mac, 6);
    buf[50] = m->private_len;
    RCT_MEMCPY(buf + 52, m->private_data, m->private_len);
  } else if (m->type == RCT_CM_REJ) {
    st16(buf + 12, m->reject_reason);
    buf[14] = m->private_len;
    RCT_MEMCPY(buf + 16, m->private_data, m->private_len);
  }
  return (int)len;
}

int rct_cm_parse(struct rct_cm_msg *m, const uint8_t *buf, size_t len)
{
  RCT_MEMSET(m, 0, sizeof(*m));
  if (len < RCT_CM_LEN_HDR || ld16(buf) != RCT_CM_MAGIC)
    return RCT_EINVAL;
  m->version = buf[2];
  m->type = (enum rct_cm_type)buf[3];
  m->src_conn_id = ld32(buf + 4);
  m->dst_conn_id = ld32(buf + 8);
  if (!cm_len(m->type) || len != cm_len(m->type))
    return RCT_EINVAL;                           /* [CM-MSG-2] */
  if (m->version != RCT_CM_VERSION)
    return m->type == RCT_CM_REQ ? RCT_CM_REJ_UNSUPPORTED_VERSION : RCT_EINVAL;  /* [CM-MSG-4] */
  if (m->type == RCT_CM_REQ || m->type == RCT_CM_REP) {
    uint32_t qpn = ld32(buf + 12), psn = ld32(buf + 16);
    if ((buf[21] & ~RCT_CM_CAP_SR) || ld32(buf + 24) || buf[51])
      return RCT_EINVAL;                   /* reserved bits [CM-MSG-2] */
    m->qpn = qpn & RCT_QPN_MASK;
    m->start_psn = psn & RCT_PSN_MASK;
    m->path_mtu = buf[20];
    m->caps = buf[21];
    m->responder_resources = buf[22];
    m->initiator_depth = buf[23];
    RCT_MEMCPY(m->gid, buf + 28, 16);
    RCT_MEMCPY(m->mac, buf + 44, 6);
    m->private_len = buf[50];
    if (m->private_len > RCT_CM_PRIVATE_MAX || (qpn >> 24) || (psn >> 24) ||
        !mtu_valid(m->path_mtu) || m->responder_resources > 16 ||
        m->initiator_depth > 16) {
      m->private_len = 0;
      return RCT_CM_REJ_INVALID_PARAM;     /* [CM-MSG-4] */
    }
    RCT_MEMCPY(m->private_data, buf + 52, m->private_len);
  } else if (m->type == RCT_CM_REJ) {
    if (buf[15])
      return RCT_EINVAL;
    m->reject_reason = ld16(buf + 12);
    m->private_len = buf[14];
    if (m->private_len > RCT_CM_PRIVATE_MAX)
      return RCT_EINVAL;
    RCT_MEMCPY(m->private_data, buf + 16, m->private_len);
  }
  return RCT_OK;
}

int rct_cm_qp_attr(const struct rct_cm_msg *self, const struct rct_cm_msg *peer,
                   struct rct_qp_attr *attr, uint32_t *rtr_mask, uint32_t *rts_mask)
{
  static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
  uint8_t mtu = self->path_mtu < peer->path_mtu ? self->path_mtu : peer->path_mtu;
  for (int i = 0; i < 12; i++)
    if (peer->gid[i] != mapped[i])
      return RCT_EINVAL;
  if (!mtu_valid(mtu))
    return RCT_EINVAL;
  attr->path_mtu = (enum rct_mtu)mtu;                                   /* [CM-PARAM-1] */
  attr->max_rd_atomic = self->initiator_depth < peer->responder_resources ?
                        self->initiator_depth : peer->responder_resources;  /* [CM-PARAM-2] */
  attr->max_dest_rd_atomic = self->responder_resources;
  attr->dest_qp_num = peer->qpn & RCT_QPN_MASK;                         /* [CM-PARAM-3] */
  attr->rq_psn = peer->start_psn & RCT_PSN_MASK;
  attr->sq_psn = self->start_psn & RCT_PSN_MASK;
  RCT_MEMCPY(attr->ah.dmac, peer->mac, 6);
  attr->ah.dipv4 = ld32(peer->gid + 12);
  attr->sr_enable = (self->caps & peer->caps & RCT_CM_CAP_SR) != 0;    /* [SR-NEG-1] */
  *rtr_mask = RCT_QP_STATE | RCT_QP_AV | RCT_QP_PATH_MTU | RCT_QP_DEST_QPN | RCT_QP_RQ_PSN |
              RCT_QP_MAX_DEST_RD_ATOMIC | RCT_QP_MIN_RNR_TIMER | RCT_QP_SR;
  *rts_mask = RCT_QP_STATE | RCT_QP_SQ_PSN | RCT_QP_TIMEOUT | RCT_QP_RETRY_CNT | RCT_QP_RNR_RETRY |
              RCT_QP_MAX_QP_RD_ATOMIC;
  return RCT_OK;
}
