/*
 * tx.c: frames out, the mirror of rx.c, for every QP type (which frame a
 * QP sends next is its type's: ops->poll). rct_tx_emit completes a frame a
 * role started (Ethernet/IPv4/UDP or GRH addressing from the QP, BTH P_Key
 * and destination QP, pad and ICRC, counters); rct_tx_finish does the part
 * after the addressing, for a role that addresses each frame itself (UD);
 * rct_tx_ack builds the acknowledgement headers (ACK, NAK, selective NAK);
 * rct_udp_sport is the source-port hash [ENC-UDP-2]; rct_frame_linearize
 * flattens a frame.
 */
#include "core_int.h"

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

/* The next IPv4 Identification: one per IPv4 frame sent, from the
 * interface's counter [ENC-IP-2]. */
static uint16_t take_ip_id(struct rct_dev *dev)
{
  if (dev->attr.next_ip_id)
    return dev->attr.next_ip_id(dev->attr.ip_id_ctx);
  return dev->ip_id++;
}

void rct_tx_emit(struct rct_qp_base *b, struct rct_frame *f, struct rct_hdr *h, uint32_t paylen)
{
  h->encap = (enum rct_encap)b->encap;
  RCT_MEMCPY(h->dmac, b->attr.ah.dmac, 6);
  h->dip = b->attr.ah.dipv4;
  h->tos = (uint8_t)(b->attr.ah.dscp << 2);
  h->ttl = b->attr.ah.ttl;
  h->sport = b->sport;
  h->bth.dqpn = b->attr.dest_qp_num;
  rct_tx_finish(b, f, h, paylen);
}

/* h holds the destination (encap, dmac, dip, tos, ttl, sport, BTH dqpn):
 * the source, P_Key, IPv4 ID, headers, pad, ICRC and the counters. */
void rct_tx_finish(struct rct_qp_base *b, struct rct_frame *f, struct rct_hdr *h, uint32_t paylen)
{
  struct rct_dev *dev = b->dev;
  uint32_t pad, l3_off = ETH_HLEN;
  RCT_MEMCPY(h->smac, dev->attr.mac, 6);
  h->sip = dev->attr.ipv4;
  h->ip_id = h->encap == RCT_ENCAP_V2 ? take_ip_id(dev) : 0;   /* v1 has no IPv4 header [ENC-IP-2] */
  h->bth.pkey = BTH_PKEY_DEFAULT;      /* [HDR-BTH-2] */
  f->hdr_len = (uint16_t)rct_wire_build(f->hdr, h, paylen);
  pad = h->bth.padcnt;
  RCT_MEMSET(f->trailer, 0, sizeof(f->trailer));
  if (!(dev->attr.flags & RCT_DEV_ICRC_OFFLOAD))
    rct_wire_icrc_store(f->trailer + pad,
                    rct_icrc_compute(f->hdr, f->hdr_len, l3_off, h->encap, f->seg, f->nseg,
                                     f->trailer, pad));
  f->trailer_len = (uint8_t)(pad + ICRC_LEN);
  f->len = f->hdr_len + paylen + f->trailer_len;
  f->qpn = b->init.qpn;
  f->psn = h->bth.psn;
  f->opcode = h->bth.opcode;
  f->dipv4 = h->dip;
  b->cnt.tx_frames++;
  b->cnt.tx_bytes += f->len;
  b->cnt.tx_payload_bytes += paylen;
  dev->cnt.tx_frames++;
}

/* An ACK or NAK frame: AETH syndrome syn for psn, the responder's MSN. */
void rct_tx_ack(struct rct_qp_base *b, struct rct_frame *f, uint8_t syn, uint32_t psn, uint32_t msn)
{
  struct rct_hdr h;
  rct_hdr_clear(&h);
  h.bth.opcode = OP_ACK;                                    /* [RESP-ACK-1] */
  h.bth.psn = psn;
  h.aeth.syndrome = syn;
  h.aeth.msn = msn;                                         /* [RESP-MSN-1] */
  f->nseg = 0;
  rct_tx_emit(b, f, &h, 0);
}

/* A selective NAK at epsn; placed = the responder's bitmap (bit i = PSN
 * epsn + i placed) [SR-WIRE-6]. */
void rct_tx_sack(struct rct_qp_base *b, struct rct_frame *f, uint32_t epsn, uint32_t msn,
                 const uint32_t *placed)
{
  struct rct_hdr h;
  uint64_t w[SACK_WORDS_MAX];
  uint32_t nw = 1;
  for (uint32_t i = 0; i < SACK_WORDS_MAX; i++) {
    w[i] = (uint64_t)placed[2 * i] | ((uint64_t)placed[2 * i + 1] << 32);
    if (w[i])
      nw = i + 1;
  }
  rct_hdr_clear(&h);
  h.bth.opcode = OP_SR_SACK;                        /* [SR-WIRE-6] */
  h.bth.psn = epsn;
  h.aeth.syndrome = AETH_NAK_PSN_SEQ;
  h.aeth.msn = msn;
  h.sack = w[0] & ~1ull;
  /* as many words as reach the highest placed PSN [SR-WIRE-8] */
  h.sack_ext_n = (uint8_t)(nw - 1);
  for (uint32_t i = 1; i < nw; i++)
    h.sack_ext[i - 1] = w[i];
  f->nseg = 0;
  rct_tx_emit(b, f, &h, 0);
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
