/*
 * fuzz_parser.c: libFuzzer target for the frame parser, the ICRC and the IB
 * CM's MAD codec and agent. Invariants: parsing never reads outside the
 * input; a frame that parses has its payload inside the frame; its headers
 * re-encode to the same bytes (for supported opcodes); a CM MAD that parses
 * re-encodes to a MAD that parses to the same message, and the CM agent
 * takes any input without a fault, answering at most what its queues hold.
 * Every input is parsed both as a raw frame and as one
 * an IP stack already checked (RCT_WIRE_IP_CHECKED), which skips the IPv4
 * checksum and fragment checks but none of the bounds.
 */
#include "fuzz_common.h"
#include "ibcm.h"

static struct ibcm_agent agent;

/* The IB CM: codec idempotence, then the agent (a listener, one connection
 * of its own in REQ_SENT to the same peer) fed the input as a MAD. */
static void ibcm_one(const uint8_t *buf, size_t size)
{
  static struct ibcm_msg m, back;
  struct ibcm_peer peer = { .qpn = 1 };
  struct ibcm_req_param p = { .path_mtu = 3, .max_cm_retries = 2 };
  uint8_t enc[IBCM_MAD_LEN];
  struct ibcm_event ev;
  if (ibcm_parse(&m, buf, size) == 0) {
    if (ibcm_encode(&m, enc) != IBCM_MAD_LEN || ibcm_parse(&back, enc, IBCM_MAD_LEN) != 0)
      abort();
    if (memcmp(&m, &back, sizeof(m)) != 0)
      abort();
  }
  ibcm_gid_from_ipv4(peer.gid, 0x0a000003u);
  ibcm_agent_init(&agent, 0x505400fffe000002ull, 1);
  ibcm_listen(&agent, ibcm_service_id(IBCM_PS_TCP, 7174), 0);
  ibcm_listen(&agent, ibcm_service_id(IBCM_PS_UDP, 7174), 0);
  ibcm_connect(&agent, 0, &peer, &p, 0);
  while (ibcm_poll_mad(&agent, enc, &peer))
    ;
  ibcm_recv(&agent, 1, &peer, buf, size);
  while (ibcm_poll_event(&agent, &ev))
    ;
  ibcm_timeout(&agent, RCT_NEVER - 1);
  while (ibcm_poll_mad(&agent, enc, &peer) || ibcm_poll_event(&agent, &ev))
    ;
}

static void parse_one(uint8_t *buf, size_t size, uint32_t flags)
{
  struct rct_pkt p;
  uint8_t out[256];
  if (size <= 0xffff && rct_wire_parse_frame(&p, buf, (uint32_t)size, flags) == RCT_PARSE_OK) {
    (void)rct_wire_icrc_ok(&p);
    if (rct_wire_parse_ext(&p) == RCT_PARSE_OK) {
      if (p.payload < buf || p.payload + p.paylen > buf + size)
        abort();
      if (p.hdr_len + p.paylen + p.h.bth.padcnt + 4 != p.frame_len)
        abort();
      if ((p.opflags & OPF_SUPPORTED) && !(p.opflags & OPF_SR) && p.h.encap == RCT_ENCAP_V2 &&
          p.hdr_len <= sizeof(out)) {
        /* BTH and extension headers re-encode byte for byte */
        struct rct_hdr h = p.h;
        uint8_t pc = p.h.bth.padcnt;
        uint32_t hl = rct_wire_build(out, &h, p.paylen);
        if (hl != p.hdr_len)
          abort();
        if (h.bth.padcnt == pc && memcmp(out + p.bth_off, buf + p.bth_off, hl - p.bth_off) != 0)
          abort();
      }
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  /* copy into an exact-size block so ASan sees any overread */
  uint8_t *buf = malloc(size ? size : 1);
  memcpy(buf, data, size);
  parse_one(buf, size, RCT_WIRE_V1_OK);
  parse_one(buf, size, RCT_WIRE_V1_OK | RCT_WIRE_IP_CHECKED);
  if (size >= 34 && buf[12] == 0x08 && buf[13] == 0x00) {
    /* again with a valid IPv4 header checksum, so the BTH and extension parsing run */
    st16(buf + 24, rct_wire_ipv4_csum(buf + 14));
    parse_one(buf, size, RCT_WIRE_V1_OK);
    memcpy(buf, data, size);
  }
  ibcm_one(buf, size);
  free(buf);
  return 0;
}
