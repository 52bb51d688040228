/*
 * ibcm_mad.c: the CM MAD codec (proto-spec ibcm.md [IBCM-MAD-*]): the
 * 24-byte MAD common header and the CM attributes' layouts (IBTA vol 1
 * 12.6) as one table of fields -- attribute, byte offset, bit offset from
 * the byte's most significant bit, width in bits, struct ibcm_msg member --
 * that drives both ibcm_encode and ibcm_parse; and rdma_cm's IP mapping
 * (service IDs, the addressing header, IPv4-mapped GIDs) [IBCM-CMA-*].
 * Pure encode/parse; the state machines are ibcm.c.
 */
#include "ibcm.h"
#include "../transport/wire.h"

#define IBCM_HDR 0               /* "attribute" of the MAD header's fields */

enum fkind { F_INT, F_BYTES, F_PRIV };

struct ibcm_field {
  uint16_t attr;                 /* enum ibcm_attr, or IBCM_HDR */
  const char *name;
  uint16_t byte;                 /* in the attribute (the header: in the MAD) */
  uint8_t bit;                   /* from the byte's most significant bit */
  uint16_t width;                /* bits */
  uint16_t off, size;            /* the member of struct ibcm_msg */
  uint8_t kind;                  /* enum fkind */
};

#define M(member) (uint16_t)offsetof(struct ibcm_msg, member), \
                  (uint16_t)sizeof(((struct ibcm_msg *)0)->member)
#define I(attr, name, byte, bit, width, member) \
  { attr, name, byte, bit, width, M(member), F_INT }
#define B(attr, name, byte, nbytes, member) \
  { attr, name, byte, 0, (nbytes) * 8, M(member), F_BYTES }
#define P(attr, byte, nbytes) \
  { attr, "private_data", byte, 0, (nbytes) * 8, M(private_data), F_PRIV }
/* a REQ path (primary at 52, alternate at 96) [IBCM-MAD-6] */
#define PATH(o, p, n) \
  I(IBCM_ATTR_REQ, n "_local_lid", o, 0, 16, p.local_lid), \
  I(IBCM_ATTR_REQ, n "_remote_lid", o + 2, 0, 16, p.remote_lid), \
  B(IBCM_ATTR_REQ, n "_local_gid", o + 4, 16, p.local_gid), \
  B(IBCM_ATTR_REQ, n "_remote_gid", o + 20, 16, p.remote_gid), \
  I(IBCM_ATTR_REQ, n "_flow_label", o + 36, 0, 20, p.flow_label), \
  I(IBCM_ATTR_REQ, n "_packet_rate", o + 39, 2, 6, p.packet_rate), \
  I(IBCM_ATTR_REQ, n "_traffic_class", o + 40, 0, 8, p.traffic_class), \
  I(IBCM_ATTR_REQ, n "_hop_limit", o + 41, 0, 8, p.hop_limit), \
  I(IBCM_ATTR_REQ, n "_sl", o + 42, 0, 4, p.sl), \
  I(IBCM_ATTR_REQ, n "_subnet_local", o + 42, 4, 1, p.subnet_local), \
  I(IBCM_ATTR_REQ, n "_local_ack_timeout", o + 43, 0, 5, p.local_ack_timeout)

/* The one table of the wire's fields [IBCM-MAD-2] [IBCM-MAD-6]. Reserved
 * bits are not in it: encode writes them zero, parse ignores them. */
static const struct ibcm_field fields[] = {
  /* MAD common header, 24 bytes [IBCM-MAD-2] */
  I(IBCM_HDR, "base_version", 0, 0, 8, base_version),
  I(IBCM_HDR, "mgmt_class", 1, 0, 8, mgmt_class),
  I(IBCM_HDR, "class_version", 2, 0, 8, class_version),
  I(IBCM_HDR, "method", 3, 0, 8, method),
  I(IBCM_HDR, "status", 4, 0, 16, status),
  I(IBCM_HDR, "class_specific", 6, 0, 16, class_specific),
  I(IBCM_HDR, "tid", 8, 0, 64, tid),
  I(IBCM_HDR, "attr_id", 16, 0, 16, attr_id),
  I(IBCM_HDR, "attr_mod", 20, 0, 32, attr_mod),
  /* REQ (12.6.5) */
  I(IBCM_ATTR_REQ, "local_comm_id", 0, 0, 32, local_comm_id),
  I(IBCM_ATTR_REQ, "service_id", 8, 0, 64, service_id),
  I(IBCM_ATTR_REQ, "local_ca_guid", 16, 0, 64, local_ca_guid),
  I(IBCM_ATTR_REQ, "xv6_caps", 24, 0, 32, xv6_caps),          /* reserved [IBCM-XV6-1] */
  I(IBCM_ATTR_REQ, "local_qkey", 28, 0, 32, local_qkey),
  I(IBCM_ATTR_REQ, "local_qpn", 32, 0, 24, local_qpn),
  I(IBCM_ATTR_REQ, "responder_resources", 35, 0, 8, responder_resources),
  I(IBCM_ATTR_REQ, "local_eecn", 36, 0, 24, local_eecn),
  I(IBCM_ATTR_REQ, "initiator_depth", 39, 0, 8, initiator_depth),
  I(IBCM_ATTR_REQ, "remote_eecn", 40, 0, 24, remote_eecn),
  I(IBCM_ATTR_REQ, "remote_cm_response_timeout", 43, 0, 5, remote_cm_response_timeout),
  I(IBCM_ATTR_REQ, "transport_service_type", 43, 5, 2, transport_service_type),
  I(IBCM_ATTR_REQ, "end_to_end_flow_control", 43, 7, 1, end_to_end_flow_control),
  I(IBCM_ATTR_REQ, "starting_psn", 44, 0, 24, starting_psn),
  I(IBCM_ATTR_REQ, "local_cm_response_timeout", 47, 0, 5, local_cm_response_timeout),
  I(IBCM_ATTR_REQ, "retry_count", 47, 5, 3, retry_count),
  I(IBCM_ATTR_REQ, "partition_key", 48, 0, 16, partition_key),
  I(IBCM_ATTR_REQ, "path_mtu", 50, 0, 4, path_mtu),
  I(IBCM_ATTR_REQ, "rdc_exists", 50, 4, 1, rdc_exists),
  I(IBCM_ATTR_REQ, "rnr_retry_count", 50, 5, 3, rnr_retry_count),
  I(IBCM_ATTR_REQ, "max_cm_retries", 51, 0, 4, max_cm_retries),
  I(IBCM_ATTR_REQ, "srq", 51, 4, 1, srq),
  I(IBCM_ATTR_REQ, "extended_transport_type", 51, 5, 3, extended_transport_type),
  PATH(52, primary, "primary"),
  PATH(96, alternate, "alternate"),
  P(IBCM_ATTR_REQ, 140, IBCM_REQ_PRIVATE),
  /* MRA (12.6.6) */
  I(IBCM_ATTR_MRA, "local_comm_id", 0, 0, 32, local_comm_id),
  I(IBCM_ATTR_MRA, "remote_comm_id", 4, 0, 32, remote_comm_id),
  I(IBCM_ATTR_MRA, "message_mraed", 8, 0, 2, message_mraed),
  I(IBCM_ATTR_MRA, "service_timeout", 9, 0, 5, service_timeout),
  P(IBCM_ATTR_MRA, 10, 222),
  /* REJ (12.6.7) */
  I(IBCM_ATTR_REJ, "local_comm_id", 0, 0, 32, local_comm_id),
  I(IBCM_ATTR_REJ, "remote_comm_id", 4, 0, 32, remote_comm_id),
  I(IBCM_ATTR_REJ, "message_rejected", 8, 0, 2, message_rejected),
  I(IBCM_ATTR_REJ, "reject_info_length", 9, 0, 7, ari_len),
  I(IBCM_ATTR_REJ, "reason", 10, 0, 16, reason),
  B(IBCM_ATTR_REJ, "ari", 12, IBCM_ARI_MAX, ari),
  P(IBCM_ATTR_REJ, 84, IBCM_REJ_PRIVATE),
  /* REP (12.6.8) */
  I(IBCM_ATTR_REP, "local_comm_id", 0, 0, 32, local_comm_id),
  I(IBCM_ATTR_REP, "remote_comm_id", 4, 0, 32, remote_comm_id),
  I(IBCM_ATTR_REP, "local_qkey", 8, 0, 32, local_qkey),
  I(IBCM_ATTR_REP, "local_qpn", 12, 0, 24, local_qpn),
  I(IBCM_ATTR_REP, "xv6_caps", 15, 0, 8, xv6_caps),           /* reserved [IBCM-XV6-1] */
  I(IBCM_ATTR_REP, "local_eecn", 16, 0, 24, local_eecn),
  I(IBCM_ATTR_REP, "starting_psn", 20, 0, 24, starting_psn),
  I(IBCM_ATTR_REP, "responder_resources", 24, 0, 8, responder_resources),
  I(IBCM_ATTR_REP, "initiator_depth", 25, 0, 8, initiator_depth),
  I(IBCM_ATTR_REP, "target_ack_delay", 26, 0, 5, target_ack_delay),
  I(IBCM_ATTR_REP, "failover_accepted", 26, 5, 2, failover_accepted),
  I(IBCM_ATTR_REP, "end_to_end_flow_control", 26, 7, 1, end_to_end_flow_control),
  I(IBCM_ATTR_REP, "rnr_retry_count", 27, 0, 3, rnr_retry_count),
  I(IBCM_ATTR_REP, "srq", 27, 3, 1, srq),
  I(IBCM_ATTR_REP, "local_ca_guid", 28, 0, 64, local_ca_guid),
  P(IBCM_ATTR_REP, 36, IBCM_REP_PRIVATE),
  /* RTU (12.6.9) */
  I(IBCM_ATTR_RTU, "local_comm_id", 0, 0, 32, local_comm_id),
  I(IBCM_ATTR_RTU, "remote_comm_id", 4, 0, 32, remote_comm_id),
  P(IBCM_ATTR_RTU, 8, 224),
  /* DREQ (12.6.10) */
  I(IBCM_ATTR_DREQ, "local_comm_id", 0, 0, 32, local_comm_id),
  I(IBCM_ATTR_DREQ, "remote_comm_id", 4, 0, 32, remote_comm_id),
  I(IBCM_ATTR_DREQ, "remote_qpn_eecn", 8, 0, 24, remote_qpn_eecn),
  P(IBCM_ATTR_DREQ, 12, 220),
  /* DREP (12.6.11) */
  I(IBCM_ATTR_DREP, "local_comm_id", 0, 0, 32, local_comm_id),
  I(IBCM_ATTR_DREP, "remote_comm_id", 4, 0, 32, remote_comm_id),
  P(IBCM_ATTR_DREP, 8, 224),
  /* SIDR_REQ (12.11.1) */
  I(IBCM_ATTR_SIDR_REQ, "request_id", 0, 0, 32, request_id),
  I(IBCM_ATTR_SIDR_REQ, "partition_key", 4, 0, 16, partition_key),
  I(IBCM_ATTR_SIDR_REQ, "service_id", 8, 0, 64, service_id),
  P(IBCM_ATTR_SIDR_REQ, 16, 216),
  /* SIDR_REP (12.11.2) */
  I(IBCM_ATTR_SIDR_REP, "request_id", 0, 0, 32, request_id),
  I(IBCM_ATTR_SIDR_REP, "status", 4, 0, 8, sidr_status),
  I(IBCM_ATTR_SIDR_REP, "additional_info_length", 5, 0, 8, ari_len),
  I(IBCM_ATTR_SIDR_REP, "qpn", 8, 0, 24, sidr_qpn),
  I(IBCM_ATTR_SIDR_REP, "service_id", 12, 0, 64, service_id),
  I(IBCM_ATTR_SIDR_REP, "qkey", 20, 0, 32, sidr_qkey),
  B(IBCM_ATTR_SIDR_REP, "class_port_info", 24, IBCM_ARI_MAX, ari),
  P(IBCM_ATTR_SIDR_REP, 96, 136),
};
#define NFIELDS ((int)(sizeof(fields) / sizeof(fields[0])))

int ibcm_field_count(void) { return NFIELDS; }

int ibcm_field_info(int i, uint16_t *attr_id, const char **name, uint16_t *byte,
                    uint8_t *bit, uint16_t *width)
{
  if (i < 0 || i >= NFIELDS)
    return -1;
  *attr_id = fields[i].attr;
  *name = fields[i].name;
  *byte = fields[i].byte;
  *bit = fields[i].bit;
  *width = fields[i].width;
  return 0;
}

/* The attributes a CM MAD may carry [IBCM-MAD-4]. */
static const uint16_t attrs[] = {
  IBCM_ATTR_REQ, IBCM_ATTR_MRA, IBCM_ATTR_REJ, IBCM_ATTR_REP, IBCM_ATTR_RTU,
  IBCM_ATTR_DREQ, IBCM_ATTR_DREP, IBCM_ATTR_SIDR_REQ, IBCM_ATTR_SIDR_REP,
};

static bool attr_known(uint16_t id)
{
  for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++)
    if (attrs[i] == id)
      return true;
  return false;
}

uint8_t ibcm_private_room(uint16_t attr_id)
{
  for (int i = 0; i < NFIELDS; i++)
    if (fields[i].attr == attr_id && fields[i].kind == F_PRIV)
      return (uint8_t)(fields[i].width / 8);
  return 0;
}

/* Big-endian bit field at bit position pos (0 = MSB of byte 0). */
static uint64_t get_bits(const uint8_t *p, unsigned pos, unsigned width)
{
  uint64_t v = 0;
  for (unsigned i = 0; i < width; i++, pos++)
    v = (v << 1) | ((p[pos >> 3] >> (7 - (pos & 7))) & 1u);
  return v;
}

static void put_bits(uint8_t *p, unsigned pos, unsigned width, uint64_t v)
{
  for (unsigned i = width; i-- > 0; pos++) {
    uint8_t mask = (uint8_t)(1u << (7 - (pos & 7)));
    if ((v >> i) & 1u)
      p[pos >> 3] |= mask;
    else
      p[pos >> 3] &= (uint8_t)~mask;
  }
}

static uint64_t load_member(const struct ibcm_msg *m, const struct ibcm_field *f)
{
  const uint8_t *src = (const uint8_t *)m + f->off;
  switch (f->size) {
  case 1: return *src;
  case 2: { uint16_t v; RCT_MEMCPY(&v, src, 2); return v; }
  case 4: { uint32_t v; RCT_MEMCPY(&v, src, 4); return v; }
  default: { uint64_t v; RCT_MEMCPY(&v, src, 8); return v; }
  }
}

static void store_member(struct ibcm_msg *m, const struct ibcm_field *f, uint64_t v)
{
  uint8_t *dst = (uint8_t *)m + f->off;
  switch (f->size) {
  case 1: *dst = (uint8_t)v; break;
  case 2: { uint16_t w = (uint16_t)v; RCT_MEMCPY(dst, &w, 2); break; }
  case 4: { uint32_t w = (uint32_t)v; RCT_MEMCPY(dst, &w, 4); break; }
  default: RCT_MEMCPY(dst, &v, 8); break;
  }
}

/* The field's byte offset in the MAD. */
static size_t at(const struct ibcm_field *f)
{
  return f->byte + (f->attr == IBCM_HDR ? 0 : IBCM_MAD_HDR_LEN);
}

int ibcm_encode(const struct ibcm_msg *m, uint8_t buf[IBCM_MAD_LEN])
{
  struct ibcm_msg h = *m;
  if (!attr_known(m->attr_id))
    return IBCM_E_ATTR;
  h.base_version = IBCM_BASE_VERSION;                     /* [IBCM-MAD-2] */
  h.mgmt_class = IBCM_MGMT_CLASS;
  h.class_version = IBCM_CLASS_VERSION;
  h.method = IBCM_METHOD_SEND;                            /* [IBCM-MAD-3] */
  RCT_MEMSET(buf, 0, IBCM_MAD_LEN);
  for (int i = 0; i < NFIELDS; i++) {
    const struct ibcm_field *f = &fields[i];
    if (f->attr != IBCM_HDR && f->attr != m->attr_id)
      continue;
    if (f->kind == F_PRIV) {
      if (m->private_len > f->width / 8)
        return IBCM_E_INVAL;
      RCT_MEMCPY(buf + at(f), m->private_data, m->private_len);
    } else if (f->kind == F_BYTES) {
      RCT_MEMCPY(buf + at(f), (const uint8_t *)&h + f->off, f->width / 8);
    } else {
      uint64_t v = load_member(&h, f);
      if (f->width < 64 && (v >> f->width))
        return IBCM_E_INVAL;                              /* does not fit its field */
      put_bits(buf + at(f), f->bit, f->width, v);
    }
  }
  return IBCM_MAD_LEN;
}

/* Read every field of attribute `attr` (IBCM_HDR: the header) from buf. */
static void parse_fields(struct ibcm_msg *m, const uint8_t *buf, uint16_t attr)
{
  for (int i = 0; i < NFIELDS; i++) {
    const struct ibcm_field *f = &fields[i];
    const uint8_t *p = buf + at(f);
    if (f->attr != attr)
      continue;
    if (f->kind == F_PRIV) {
      m->private_len = (uint8_t)(f->width / 8);
      RCT_MEMCPY(m->private_data, p, f->width / 8);
    } else if (f->kind == F_BYTES) {
      RCT_MEMCPY((uint8_t *)m + f->off, p, f->width / 8);
    } else {
      store_member(m, f, get_bits(p, f->bit, f->width));
    }
  }
}

int ibcm_parse(struct ibcm_msg *m, const uint8_t *buf, size_t len)
{
  RCT_MEMSET(m, 0, sizeof(*m));
  if (len < IBCM_MAD_LEN)
    return IBCM_E_SHORT;                                  /* [IBCM-MAD-1] */
  parse_fields(m, buf, IBCM_HDR);
  if (m->base_version != IBCM_BASE_VERSION)
    return IBCM_E_BASE_VERSION;                           /* [IBCM-MAD-2] */
  if (m->mgmt_class != IBCM_MGMT_CLASS)
    return IBCM_E_CLASS;
  if (m->class_version != IBCM_CLASS_VERSION)
    return IBCM_E_CLASS_VERSION;
  if (m->method != IBCM_METHOD_SEND)
    return IBCM_E_METHOD;                                 /* [IBCM-MAD-3] */
  if (!attr_known(m->attr_id))
    return IBCM_E_ATTR;                                   /* [IBCM-MAD-4] */
  parse_fields(m, buf, m->attr_id);
  return 0;
}

/* ------------------------------------------------------------------ */
/* rdma_cm's IP mapping [IBCM-CMA-*]                                   */
/* ------------------------------------------------------------------ */

#define IBCM_SID_IP_PREFIX 0x0000000001000000ull   /* 0x0000000001 PS port [IBCM-CMA-1] */

uint64_t ibcm_service_id(uint16_t port_space, uint16_t port)
{
  return IBCM_SID_IP_PREFIX | ((uint64_t)(port_space & 0xff) << 16) | port;
}

/* The addressing header [IBCM-CMA-2]: version, IP version in the high
 * nibble, source port, then source and destination addresses in 16 bytes
 * each, an IPv4 address in the last 4 (the 12 before it zero). */
enum { CMA_VER = 0, CMA_IPV = 1, CMA_PORT = 2, CMA_SRC = 4, CMA_DST = 20, CMA_ADDR = 16 };
#define CMA_IPV4 0x40

int ibcm_cma_hdr_encode(uint8_t out[IBCM_CMA_HDR_LEN], uint32_t src_ip, uint32_t dst_ip,
                        uint16_t src_port)
{
  RCT_MEMSET(out, 0, IBCM_CMA_HDR_LEN);
  out[CMA_VER] = IBCM_CMA_VERSION;
  out[CMA_IPV] = CMA_IPV4;
  st16(out + CMA_PORT, src_port);
  st32(out + CMA_SRC + CMA_ADDR - 4, src_ip);
  st32(out + CMA_DST + CMA_ADDR - 4, dst_ip);
  return 0;
}

int ibcm_cma_hdr_parse(const uint8_t *priv, size_t len, uint32_t *src_ip, uint32_t *dst_ip,
                       uint16_t *src_port)
{
  if (len < IBCM_CMA_HDR_LEN || priv[CMA_VER] != IBCM_CMA_VERSION ||
      (priv[CMA_IPV] & 0xf0) != CMA_IPV4)
    return -1;                                            /* [IBCM-CMA-3] */
  *src_port = ld16(priv + CMA_PORT);
  *src_ip = ld32(priv + CMA_SRC + CMA_ADDR - 4);
  *dst_ip = ld32(priv + CMA_DST + CMA_ADDR - 4);
  return 0;
}

void ibcm_gid_from_ipv4(uint8_t gid[16], uint32_t ip)
{
  RCT_MEMSET(gid, 0, 16);
  gid[10] = gid[11] = 0xff;                               /* [IBCM-CMA-4] */
  st32(gid + 12, ip);
}

int ibcm_gid_to_ipv4(const uint8_t gid[16], uint32_t *ip)
{
  for (int i = 0; i < 10; i++)
    if (gid[i])
      return -1;
  if (gid[10] != 0xff || gid[11] != 0xff)
    return -1;
  *ip = ld32(gid + 12);
  return 0;
}
