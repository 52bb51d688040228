/*
 * icrc.c: the RoCE invariant CRC. CRC-32 with the IEEE 802.3 polynomial
 * (0x04C11DB7, reflected 0xEDB88320, initial value and final XOR all ones),
 * computed slice-by-8 over a pseudo packet in which the fields that routers
 * may change are replaced by ones (IBTA RoCEv2 annex A17.4.1, [WIRE-ICRC-*]):
 *   64 bits of ones standing for the (absent) LRH, then
 *   RoCEv2: IPv4 header with TOS, TTL and header checksum set to all ones,
 *           UDP header with the checksum set to all ones;
 *   RoCE v1: GRH with traffic class, flow label and hop limit set to ones;
 *   BTH with the Resv8a byte (FECN/BECN) set to ones; then the rest of
 *   the packet (extension headers, payload, pad) unchanged.
 * The ICRC is carried least significant byte first.
 *
 * The tables are built once (rct_crc32_init, called by rct_dev_init and
 * lazily here); they are pure functions of the polynomial.
 */
#include "wire.h"

static uint32_t crc_tab[8][256];
typedef uint64_t __attribute__((may_alias)) crc_word_t;   /* reads bytes as a word */
static int crc_ready;

static void crc32_init(void)
{
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++)
      c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1)));
    crc_tab[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; i++)
    for (int t = 1; t < 8; t++)
      crc_tab[t][i] = (crc_tab[t - 1][i] >> 8) ^ crc_tab[0][crc_tab[t - 1][i] & 0xff];
  crc_ready = 1;
}

/* Raw update (no initial/final inversion): crc is the running register. */
RCT_HOT_LOOP uint32_t rct_crc32_update(uint32_t crc, const uint8_t *p, size_t n)
{
  if (!crc_ready)
    crc32_init();
  while (n && ((uintptr_t)p & 7)) {
    crc = crc_tab[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    n--;
  }
  while (n >= 8) {
    uint32_t a, b;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* p is 8-aligned here: one load instead of eight (a third of
     * the loop's instructions on RISC-V, where the compiler may not
     * merge byte loads it cannot prove aligned). */
    uint64_t w = *(const crc_word_t *)p;
    a = crc ^ (uint32_t)w;
    b = (uint32_t)(w >> 32);
#else
    a = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
    b = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
#endif
    crc = crc_tab[7][a & 0xff] ^ crc_tab[6][(a >> 8) & 0xff] ^
          crc_tab[5][(a >> 16) & 0xff] ^ crc_tab[4][a >> 24] ^
          crc_tab[3][b & 0xff] ^ crc_tab[2][(b >> 8) & 0xff] ^
          crc_tab[1][(b >> 16) & 0xff] ^ crc_tab[0][b >> 24];
    p += 8;
    n -= 8;
  }
  while (n--)
    crc = crc_tab[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
  return crc;
}

/* The ICRC of a frame: CRC-32 over the masked pseudo packet [ICRC-CALC-1]. */
uint32_t rct_icrc_compute(const uint8_t *hdr, uint32_t hdr_len, uint32_t l3_off,
                          enum rct_encap encap, const struct rct_iov *seg, int nseg,
                          const uint8_t *pad, uint32_t padlen)
{
  /* Masked copy of the invariant-relevant headers: ones + L3/L4 + BTH. */
  uint8_t m[8 + GRH_LEN + BTH_LEN];
  uint32_t l3len = encap == RCT_ENCAP_V1 ? GRH_LEN : IPV4_HLEN + UDP_HLEN;
  uint32_t crc = 0xffffffffu, rest = l3_off + l3len + BTH_LEN;
  RCT_MEMSET(m, 0xff, 8);
  RCT_MEMCPY(m + 8, hdr + l3_off, l3len + BTH_LEN);
  if (encap == RCT_ENCAP_V1) {
    m[8] |= 0x0f;                 /* traffic class low nibble + flow label */
    m[9] = m[10] = m[11] = 0xff;
    m[8 + 7] = 0xff;              /* hop limit */
  } else {
    m[8 + 1] = 0xff;              /* TOS (DSCP + ECN) */
    m[8 + 8] = 0xff;              /* TTL */
    m[8 + 10] = m[8 + 11] = 0xff; /* header checksum */
    m[8 + IPV4_HLEN + 6] = m[8 + IPV4_HLEN + 7] = 0xff; /* UDP checksum */
  }
  m[8 + l3len + 4] = 0xff;              /* BTH Resv8a */
  crc = rct_crc32_update(crc, m, 8 + l3len + BTH_LEN);
  crc = rct_crc32_update(crc, hdr + rest, hdr_len - rest);
  for (int i = 0; i < nseg; i++)
    crc = rct_crc32_update(crc, seg[i].base, seg[i].len);
  if (padlen)
    crc = rct_crc32_update(crc, pad, padlen);
  return ~crc;
}

void rct_wire_icrc_store(uint8_t *p, uint32_t v)
{
  p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}

uint32_t rct_wire_icrc_load(const uint8_t *p)
{
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
