/*
 * wire.c: encode and parse RoCEv2 frames (Ethernet II + IPv4 + UDP 4791 +
 * BTH + extension headers + payload + pad + ICRC), and RoCE v1 (EtherType
 * 0x8915 + GRH) as an optional second encapsulation.
 *
 * The parser validates every length against the buffer before reading, so
 * a truncated or inconsistent frame is rejected here and the roles only see
 * well-formed packets. [WIRE-*]
 */
#include "wire.h"
#include "opcode.h"

uint16_t rct_wire_ipv4_csum(const uint8_t *ip)
{
  uint32_t sum = 0;
  for (int i = 0; i < IPV4_HLEN; i += 2)
    if (i != 10)
      sum += ld16(ip + i);
  while (sum >> 16)
    sum = (sum & 0xffff) + (sum >> 16);
  return (uint16_t)~sum;
}

uint32_t rct_wire_hdr_len(enum rct_encap encap, uint8_t opcode)
{
  uint32_t l3 = encap == RCT_ENCAP_V1 ? GRH_LEN : IPV4_HLEN + UDP_HLEN;
  return ETH_HLEN + l3 + BTH_LEN + rct_opcode_table[opcode].ext_len;
}

static void put_bth(uint8_t *b, const struct rct_bth *t)
{
  b[0] = t->opcode;
  b[1] = (uint8_t)((t->se ? 0x80 : 0) | (t->migreq ? 0x40 : 0) | ((t->padcnt & 3) << 4) | (t->tver & 0xf));
  st16(b + 2, t->pkey);
  b[4] = t->resv8a;
  st24(b + 5, t->dqpn);
  b[8] = (uint8_t)((t->ackreq ? 0x80 : 0) | (t->resv7 & 0x7f));
  st24(b + 9, t->psn);
}

static void get_bth(const uint8_t *b, struct rct_bth *t)
{
  t->opcode = b[0];
  t->se = b[1] >> 7;
  t->migreq = (b[1] >> 6) & 1;
  t->padcnt = (b[1] >> 4) & 3;
  t->tver = b[1] & 0xf;
  t->pkey = ld16(b + 2);
  t->resv8a = b[4];
  t->dqpn = ld24(b + 5);
  t->ackreq = b[8] >> 7;
  t->resv7 = b[8] & 0x7f;
  t->psn = ld24(b + 9);
}

/* Extension headers in the order the opcode table implies: DETH, SRXH,
 * RETH or AtomicETH, AETH, AtomicAckETH, ImmDt, SACKH [OPC-HDR-1]
 * [SR-WIRE-1] [UD-WIRE-1] [HDR-ATOM-1] [HDR-ATOM-2]. */
static uint32_t put_ext(uint8_t *b, const struct rct_hdr *h)
{
  uint32_t f = op_flags(h->bth.opcode), n = 0;
  if (f & OPF_UD) {
    st32(b, h->deth.qkey); b[4] = h->deth.resv; st24(b + 5, h->deth.srcqp);
    n += DETH_LEN;
  }
  if (f & OPF_SRXH) {
    st32(b, h->sreth.offset); st32(b + 4, ((uint32_t)h->sreth.flags << 24) | (h->sreth.rsn & 0xffffff));
    n += SRETH_LEN;
  }
  if (f & OPF_RETH) {
    st64(b + n, h->reth.va); st32(b + n + 8, h->reth.rkey); st32(b + n + 12, h->reth.dmalen);
    n += RETH_LEN;
  }
  if (f & OPF_ATOMETH) {
    st64(b + n, h->atom.va); st32(b + n + 8, h->atom.rkey);
    st64(b + n + 12, h->atom.swap_add); st64(b + n + 20, h->atom.compare);
    n += ATOMETH_LEN;
  }
  if (f & OPF_AETH) {
    b[n] = h->aeth.syndrome; st24(b + n + 1, h->aeth.msn);
    n += AETH_LEN;
  }
  if (f & OPF_ATOMACK) {
    st64(b + n, h->atom_orig);
    n += ATOMACK_LEN;
  }
  if (f & OPF_IMM) {
    st32(b + n, h->imm);
    n += IMMDT_LEN;
  }
  if (f & OPF_SACKH) {
    st64(b + n, h->sack);
    n += 8;
    for (uint32_t i = 0; i < h->sack_ext_n; i++, n += 8)   /* [SR-WIRE-8] */
      st64(b + n, h->sack_ext[i]);
  }
  return n;
}

/* Extension header bytes of h: the opcode's, plus SACKH extension words. */
static uint32_t hdr_ext_len(struct rct_hdr *h)
{
  uint32_t xl = rct_opcode_table[h->bth.opcode].ext_len;
  if (!(op_flags(h->bth.opcode) & OPF_SACKH) || h->sack_ext_n > SACK_EXT_MAX)
    h->sack_ext_n = 0;
  return xl + 8u * h->sack_ext_n;
}

uint32_t rct_wire_build(uint8_t *buf, struct rct_hdr *h, uint32_t payload_len)
{
  uint32_t pad = (4 - (payload_len & 3)) & 3;
  uint32_t bth_off, n, xl = hdr_ext_len(h);
  h->bth.padcnt = (uint8_t)pad;
  RCT_MEMCPY(buf, h->dmac, 6);
  RCT_MEMCPY(buf + 6, h->smac, 6);
  if (h->encap == RCT_ENCAP_V1) {
    uint32_t plen = BTH_LEN + xl + payload_len + pad + ICRC_LEN;
    uint8_t *g = buf + ETH_HLEN;
    st16(buf + 12, ETHERTYPE_ROCEV1);
    st32(g, 0x60000000u | ((uint32_t)h->tos << 20));
    st16(g + 4, (uint16_t)plen);
    g[6] = 0x1b;                         /* next header: IBA BTH */
    g[7] = h->ttl ? h->ttl : 64;
    /* IPv4-mapped IPv6 addresses ::ffff:a.b.c.d */
    RCT_MEMSET(g + 8, 0, 32);
    st16(g + 18, 0xffff); st32(g + 20, h->sip);
    st16(g + 34, 0xffff); st32(g + 36, h->dip);
    bth_off = ETH_HLEN + GRH_LEN;
  } else {
    uint32_t tot = IPV4_HLEN + UDP_HLEN + BTH_LEN + xl + payload_len + pad + ICRC_LEN;
    uint8_t *ip = buf + ETH_HLEN, *udp = ip + IPV4_HLEN;
    st16(buf + 12, ETHERTYPE_IPV4);
    ip[0] = 0x45; ip[1] = h->tos;
    st16(ip + 2, (uint16_t)tot);
    st16(ip + 4, h->ip_id);
    st16(ip + 6, 0x4000);                /* DF */
    ip[8] = h->ttl ? h->ttl : 64;
    ip[9] = IPPROTO_UDP_;
    st32(ip + 12, h->sip); st32(ip + 16, h->dip);
    st16(ip + 10, rct_wire_ipv4_csum(ip));
    st16(udp, h->sport); st16(udp + 2, RCT_ROCEV2_PORT);
    st16(udp + 4, (uint16_t)(tot - IPV4_HLEN));
    st16(udp + 6, 0);                    /* UDP checksum 0 [WIRE] */
    bth_off = ETH_HLEN + IPV4_HLEN + UDP_HLEN;
  }
  put_bth(buf + bth_off, &h->bth);
  n = put_ext(buf + bth_off + BTH_LEN, h);
  /* headers this core does not fill (IETH) are sent as zeros */
  RCT_MEMSET(buf + bth_off + BTH_LEN + n, 0, xl - n);
  return bth_off + BTH_LEN + xl;
}

/* ip_checked: the caller's IP stack did version, checksum and fragment
 * (RCT_RX_IP_CHECKED); the bounds on our reads are checked either way. */
static int parse_v2(struct rct_pkt *p, const uint8_t *buf, uint32_t len, uint32_t *end, bool ip_checked)
{
  const uint8_t *ip = buf + ETH_HLEN, *udp;
  uint16_t frag;
  if (len < ETH_HLEN + IPV4_HLEN)
    return RCT_PARSE_TRUNC;
  if (ip[9] != IPPROTO_UDP_)
    return RCT_PARSE_NOT_ROCE;
  if (ip[0] != 0x45)
    return RCT_PARSE_BAD_IP;     /* IPv4 without options only (a stack takes options) */
  p->ip_tot_len = ld16(ip + 2);
  if (p->ip_tot_len < IPV4_HLEN + UDP_HLEN || ETH_HLEN + (uint32_t)p->ip_tot_len > len)
    return RCT_PARSE_TRUNC;
  frag = ld16(ip + 6);
  p->ip_csum = ld16(ip + 10);
  if (!ip_checked && (frag & 0x3fff))
    return RCT_PARSE_BAD_IP;     /* fragments are not RoCE */
  if (!ip_checked && rct_wire_ipv4_csum(ip) != p->ip_csum)
    return RCT_PARSE_BAD_IP;
  p->ip_flags_df = (frag & 0x4000) != 0;
  p->h.tos = ip[1];
  p->h.ip_id = ld16(ip + 4);
  p->h.ttl = ip[8];
  p->h.sip = ld32(ip + 12);
  p->h.dip = ld32(ip + 16);
  udp = ip + IPV4_HLEN;
  if (ld16(udp + 2) != RCT_ROCEV2_PORT)
    return RCT_PARSE_NOT_ROCE;
  p->h.sport = ld16(udp);
  p->udp_len = ld16(udp + 4);
  p->udp_csum = ld16(udp + 6);
  if (p->udp_len != p->ip_tot_len - IPV4_HLEN)
    return RCT_PARSE_TRUNC;
  p->h.encap = RCT_ENCAP_V2;
  p->l3_off = ETH_HLEN;
  p->bth_off = ETH_HLEN + IPV4_HLEN + UDP_HLEN;
  *end = ETH_HLEN + p->ip_tot_len;
  return RCT_PARSE_OK;
}

static int parse_v1(struct rct_pkt *p, const uint8_t *buf, uint32_t len, uint32_t *end)
{
  const uint8_t *g = buf + ETH_HLEN;
  uint32_t plen;
  if (len < ETH_HLEN + GRH_LEN)
    return RCT_PARSE_TRUNC;
  if ((g[0] >> 4) != 6 || g[6] != 0x1b)
    return RCT_PARSE_BAD_IP;
  plen = ld16(g + 4);
  if (ETH_HLEN + GRH_LEN + plen > len)
    return RCT_PARSE_TRUNC;
  p->h.tos = (uint8_t)(ld16(g) >> 4);
  p->h.ttl = g[7];
  p->h.sip = ld32(g + 20);
  p->h.dip = ld32(g + 36);
  p->h.encap = RCT_ENCAP_V1;
  p->l3_off = ETH_HLEN;
  p->bth_off = ETH_HLEN + GRH_LEN;
  *end = ETH_HLEN + GRH_LEN + plen;
  return RCT_PARSE_OK;
}

int rct_wire_parse_base(struct rct_pkt *p, const uint8_t *buf, uint32_t len, bool v1_ok)
{
  return rct_wire_parse_frame(p, buf, len, v1_ok ? RCT_WIRE_V1_OK : 0);
}

int rct_wire_parse_frame(struct rct_pkt *p, const uint8_t *buf, uint32_t len, uint32_t flags)
{
  uint32_t end = 0;
  uint16_t et;
  int r;
  p->frame = buf;
  p->frame_len = len;
  if (len < ETH_HLEN)
    return RCT_PARSE_TRUNC;
  et = ld16(buf + 12);
  if (et == ETHERTYPE_IPV4)
    r = parse_v2(p, buf, len, &end, (flags & RCT_WIRE_IP_CHECKED) != 0);
  else if (et == ETHERTYPE_ROCEV1 && (flags & RCT_WIRE_V1_OK))
    r = parse_v1(p, buf, len, &end);
  else
    return RCT_PARSE_NOT_ROCE;
  if (r != RCT_PARSE_OK)
    return r;
  RCT_MEMCPY(p->h.dmac, buf, 6);
  RCT_MEMCPY(p->h.smac, buf + 6, 6);
  if (end < p->bth_off + BTH_LEN + ICRC_LEN)
    return RCT_PARSE_TRUNC;
  p->frame_len = end;                  /* drop Ethernet padding */
  get_bth(buf + p->bth_off, &p->h.bth);
  p->icrc = rct_wire_icrc_load(buf + end - ICRC_LEN);
  p->opflags = op_flags(p->h.bth.opcode);
  if (!(p->opflags & OPF_VALID))
    return RCT_PARSE_BAD_BTH;
  return RCT_PARSE_OK;
}

/* Second stage: extension headers, payload bounds, pad [OPC-HDR-2] [OPC-LEN-2]. */
int rct_wire_parse_ext(struct rct_pkt *p)
{
  const uint8_t *b = p->frame + p->bth_off + BTH_LEN;
  uint32_t f = p->opflags, xl = rct_opcode_table[p->h.bth.opcode].ext_len;
  uint32_t hdr = p->bth_off + BTH_LEN + xl, n = 0;
  uint32_t avail, pad = p->h.bth.padcnt;
  if (hdr + ICRC_LEN > p->frame_len)
    return RCT_PARSE_TRUNC;
  avail = p->frame_len - hdr - ICRC_LEN;
  if (pad > avail)
    return RCT_PARSE_TRUNC;
  if (f & OPF_UD) {
    p->h.deth.qkey = ld32(b); p->h.deth.resv = b[4]; p->h.deth.srcqp = ld24(b + 5);
    n += DETH_LEN;
  }
  if (f & OPF_SRXH) {
    p->h.sreth.offset = ld32(b); p->h.sreth.flags = b[4]; p->h.sreth.rsn = ld24(b + 5);
    n += SRETH_LEN;
  }
  if (f & OPF_RETH) {
    p->h.reth.va = ld64(b + n); p->h.reth.rkey = ld32(b + n + 8); p->h.reth.dmalen = ld32(b + n + 12);
    n += RETH_LEN;
  }
  if (f & OPF_ATOMETH) {
    p->h.atom.va = ld64(b + n); p->h.atom.rkey = ld32(b + n + 8);
    p->h.atom.swap_add = ld64(b + n + 12); p->h.atom.compare = ld64(b + n + 20);
    n += ATOMETH_LEN;
  }
  if (f & OPF_AETH) {
    p->h.aeth.syndrome = b[n]; p->h.aeth.msn = ld24(b + n + 1);
    n += AETH_LEN;
  }
  if (f & OPF_ATOMACK) {
    p->h.atom_orig = ld64(b + n);
    n += ATOMACK_LEN;
  }
  if (f & OPF_IMM) {
    p->h.imm = ld32(b + n);
    n += IMMDT_LEN;
  }
  p->h.sack_ext_n = 0;
  if (f & OPF_SACKH) {
    p->h.sack = ld64(b + n);
    /* bytes after the first SACKH word: more bitmap words [SR-WIRE-8] */
    if (avail != 0) {
      if (pad != 0 || (avail & 7) != 0 || avail / 8 > SACK_EXT_MAX)
        return RCT_PARSE_BAD_LEN;
      p->h.sack_ext_n = (uint8_t)(avail / 8);
      for (uint32_t i = 0; i < p->h.sack_ext_n; i++)
        p->h.sack_ext[i] = ld64(b + n + 8 + 8 * i);
      hdr += avail;
      avail = 0;
    }
  }
  p->hdr_len = hdr;
  p->payload = p->frame + hdr;
  p->paylen = avail - pad;
  if (!(f & OPF_PAYLOAD) && avail != 0)
    return RCT_PARSE_BAD_LEN;    /* [OPC-LEN-5] */
  return RCT_PARSE_OK;
}

bool rct_wire_icrc_ok(const struct rct_pkt *p)
{
  uint32_t hl = p->bth_off + BTH_LEN;
  struct rct_iov rest = { (uint8_t *)(uintptr_t)(p->frame + hl), p->frame_len - hl - ICRC_LEN };
  return rct_icrc_compute(p->frame, hl, p->l3_off, p->h.encap, &rest, 1, 0, 0) == p->icrc;
}
