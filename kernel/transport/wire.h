/*
 * wire.h: RoCEv2 (and RoCE v1) frame layout, byte-order helpers, the parsed
 * packet, and the header encoder/parser (wire.c) and ICRC (icrc.c).
 *
 * Everything that knows a byte offset lives here and in wire.c. The roles
 * (req.c, resp.c, comp.c) work on struct rct_pkt and struct rct_hdr only.
 * Loads and stores are explicit byte operations, never casts
 * (docs/design.md "Units and conventions").
 */
#ifndef RCT_WIRE_H
#define RCT_WIRE_H

#include "rct.h"

/* Sizes (bytes). [WIRE-*] in proto-spec. */
#define ETH_HLEN      14
#define IPV4_HLEN     20
#define UDP_HLEN      8
#define GRH_LEN       40
#define BTH_LEN       12
#define RETH_LEN      16
#define AETH_LEN      4
#define IMMDT_LEN     4
#define DETH_LEN      8     /* UD: Q_Key, reserved, source QPN [UD-WIRE-1] */
#define SRETH_LEN     8     /* selective-repeat extension (proto-spec SR) */
#define ATOMETH_LEN   28    /* AtomicETH: VA, R_Key, swap/add, compare [HDR-ATOM-1] */
#define ATOMACK_LEN   8     /* AtomicAckETH: the original remote data [HDR-ATOM-2] */
#define ICRC_LEN      4
#define ETHERTYPE_IPV4   0x0800
#define ETHERTYPE_ROCEV1 0x8915
#define IPPROTO_UDP_     17
#define BTH_TVER      0
#define BTH_PKEY_DEFAULT 0xffff

/* Byte-order helpers. */
static inline uint16_t ld16(const uint8_t *p) { return (uint16_t)((p[0] << 8) | p[1]); }
static inline uint32_t ld24(const uint8_t *p) { return ((uint32_t)p[0] << 16) | ((uint32_t)p[1] << 8) | p[2]; }
static inline uint32_t ld32(const uint8_t *p)
{
  return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static inline uint64_t ld64(const uint8_t *p) { return ((uint64_t)ld32(p) << 32) | ld32(p + 4); }
static inline void st16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static inline void st24(uint8_t *p, uint32_t v) { p[0] = (uint8_t)(v >> 16); p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)v; }
static inline void st32(uint8_t *p, uint32_t v)
{
  p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}
static inline void st64(uint8_t *p, uint64_t v) { st32(p, (uint32_t)(v >> 32)); st32(p + 4, (uint32_t)v); }

/* The core's per-byte loops (the ICRC). A build that defines
 * RCT_HOT_SECTION (the kernel's) puts them in .text.hot_loops, which its
 * linker script keeps on one page: under QEMU's TCG a jump between
 * translated blocks on different guest pages is looked up instead of
 * chained, and the ICRC's loop straddling a page boundary cost RDMA WRITE
 * half its throughput (kernel/kernel.ld). */
#ifdef RCT_HOT_SECTION
#define RCT_HOT_LOOP __attribute__((section(".text.hot_loops")))
#else
#define RCT_HOT_LOOP
#endif

/* Core-local memory helpers; the kernel may define RCT_MEMCPY/RCT_MEMSET. */
#ifndef RCT_MEMCPY
#define RCT_MEMCPY(d, s, n) __builtin_memcpy((d), (s), (n))
#endif
#ifndef RCT_MEMSET
#define RCT_MEMSET(d, c, n) __builtin_memset((d), (c), (n))
#endif

/* Base Transport Header fields. */
struct rct_bth {
  uint8_t opcode;
  uint8_t se, migreq, padcnt, tver;
  uint16_t pkey;
  uint8_t resv8a;             /* FECN/BECN in RoCEv2; masked in the ICRC */
  uint32_t dqpn;
  uint8_t ackreq;
  uint8_t resv7;
  uint32_t psn;
};

struct rct_reth { uint64_t va; uint32_t rkey; uint32_t dmalen; };
struct rct_aeth { uint8_t syndrome; uint32_t msn; };
/* AtomicETH [HDR-ATOM-1]: swap_add is CmpSwap's swap or FetchAdd's add. */
struct rct_atometh { uint64_t va; uint32_t rkey; uint64_t swap_add, compare; };
struct rct_deth { uint32_t qkey; uint32_t srcqp; uint8_t resv; };   /* resv: byte 4, sent 0, ignored */
/* SRXH (selective repeat): message offset, flags and receive sequence number [SR-WIRE-1]. */
struct rct_sreth { uint32_t offset; uint32_t rsn; uint8_t flags; };
#define SRXH_AFTER_READS 0x01  /* READ request: only READs may be missing before it [SR-WIRE-9] */

/* Encapsulation. */
enum rct_encap { RCT_ENCAP_V2 = 0, RCT_ENCAP_V1 = 1 };

/* Variable-length SACKH: up to RCT_SR_WINDOW bits, 64 per word [SR-WIRE-8]. */
#define SACK_WORDS_MAX (RCT_SR_WINDOW / 64)
#define SACK_EXT_MAX   (SACK_WORDS_MAX - 1)
_Static_assert(RCT_HDR_MAX >= ETH_HLEN + IPV4_HLEN + UDP_HLEN + BTH_LEN + AETH_LEN + 8 * SACK_WORDS_MAX &&
               RCT_HDR_MAX >= ETH_HLEN + GRH_LEN + BTH_LEN + RETH_LEN + IMMDT_LEN + SRETH_LEN &&
               RCT_HDR_MAX >= ETH_HLEN + GRH_LEN + BTH_LEN + SRETH_LEN + ATOMETH_LEN,
               "RCT_HDR_MAX holds the largest header block");

/* Everything needed to write a frame's headers. */
struct rct_hdr {
  enum rct_encap encap;
  uint8_t dmac[6], smac[6];
  uint32_t sip, dip;          /* host order */
  uint8_t tos, ttl;
  uint16_t ip_id;
  uint16_t sport;
  struct rct_bth bth;
  struct rct_reth reth;
  struct rct_aeth aeth;
  struct rct_deth deth;       /* UD [UD-WIRE-1] */
  struct rct_atometh atom;    /* atomic requests [HDR-ATOM-1] */
  uint64_t atom_orig;         /* ATOMIC_ACKNOWLEDGE's AtomicAckETH [HDR-ATOM-2] */
  uint32_t imm;
  struct rct_sreth sreth;
  uint64_t sack;              /* SACKH bitmap [SR-WIRE-6]: bits 0..63 */
  uint8_t sack_ext_n;         /* extension words present (0 = 8-byte SACKH) */
  uint64_t sack_ext[SACK_EXT_MAX]; /* SACKH words 1..: bits 64.. [SR-WIRE-8]; last (rct_hdr_clear) */
};

/* A header with every field zero but sack_ext, which is read only up to
 * sack_ext_n (0 here): half of the struct, which builders clear per frame. */
static inline void rct_hdr_clear(struct rct_hdr *h)
{
  RCT_MEMSET(h, 0, offsetof(struct rct_hdr, sack_ext));
}

/* A parsed frame; pointers refer into the caller's buffer. */
struct rct_pkt {
  struct rct_hdr h;
  const uint8_t *frame;
  uint32_t frame_len;
  uint32_t l3_off;            /* IPv4 (v2) or GRH (v1) */
  uint32_t bth_off;
  uint32_t hdr_len;           /* bytes up to the payload */
  const uint8_t *payload;
  uint32_t paylen;            /* payload without pad */
  uint32_t icrc;              /* as carried */
  uint32_t opflags;           /* rct_opcode_table[bth.opcode].flags */
  uint16_t udp_len, udp_csum, ip_csum, ip_tot_len;
  uint8_t ip_flags_df;
};

/* Parse results. */
enum rct_parse_err {
  RCT_PARSE_OK = 0,
  RCT_PARSE_NOT_ROCE = 1,
  RCT_PARSE_TRUNC = 2,
  RCT_PARSE_BAD_IP = 3,
  RCT_PARSE_BAD_BTH = 4,
  RCT_PARSE_BAD_ICRC = 5,
  RCT_PARSE_BAD_LEN = 6,
};

/* Parse Ethernet + IPv4/UDP (or GRH) + BTH; checks lengths, the IPv4
 * header and the BTH version/opcode. The ICRC is checked by the caller
 * (wire_icrc_ok) so that offload can skip it. Then wire_parse_ext parses
 * the extension headers the opcode table lists and bounds the payload. */
int rct_wire_parse_base(struct rct_pkt *p, const uint8_t *buf, uint32_t len, bool v1_ok);
/* The same with RCT_WIRE_* flags. */
#define RCT_WIRE_V1_OK     1u   /* accept RoCE v1 */
#define RCT_WIRE_IP_CHECKED 2u  /* skip the IPv4 checks RCT_RX_IP_CHECKED names */
int rct_wire_parse_frame(struct rct_pkt *p, const uint8_t *buf, uint32_t len, uint32_t flags);
int rct_wire_parse_ext(struct rct_pkt *p);
bool rct_wire_icrc_ok(const struct rct_pkt *p);

/* Write headers for h (opcode decides which extension headers) into buf;
 * returns the header length. payload_len (without pad) sets the IP/UDP
 * lengths and PadCnt. */
uint32_t rct_wire_build(uint8_t *buf, struct rct_hdr *h, uint32_t payload_len);

/* Header length for an opcode (Ethernet through the last extension header). */
uint32_t rct_wire_hdr_len(enum rct_encap encap, uint8_t opcode);

uint16_t rct_wire_ipv4_csum(const uint8_t *iphdr);

/* ICRC (icrc.c): CRC-32 (IEEE 802.3 polynomial) over the masked pseudo
 * packet. crc32_update is slice-by-8. */
uint32_t rct_crc32_update(uint32_t crc, const uint8_t *p, size_t n);
/* ICRC of a frame held as hdr + segments + pad; l3_off is the IPv4/GRH
 * offset in hdr. Returns the value to store (wire_icrc_store). */
uint32_t rct_icrc_compute(const uint8_t *hdr, uint32_t hdr_len, uint32_t l3_off,
                          enum rct_encap encap, const struct rct_iov *seg, int nseg,
                          const uint8_t *pad, uint32_t padlen);
void rct_wire_icrc_store(uint8_t *p, uint32_t icrc);
uint32_t rct_wire_icrc_load(const uint8_t *p);

#endif /* RCT_WIRE_H */
