/*
 * fuzz_responder.c: libFuzzer target that feeds arbitrary frames into an
 * endpoint in RTS (go-back-N or SR, any MTU) with MRs registered, receives
 * posted and requests outstanding, so the responder and the completer both
 * run. Input: byte 0 = mode (SR, MTU, fix-ups), then records of
 * [2-byte length][frame]. With fix-ups on, addressing, QPN, IPv4 checksum
 * and ICRC are repaired so the fuzzer reaches the transport logic.
 * Invariants: no access outside an MR (ASan: MR buffers are exact-size heap
 * blocks), every frame sent parses with a valid ICRC, QP state is sane.
 */
#include "fuzz_common.h"

static void fixup(uint8_t *f, uint32_t n)
{
  struct rct_pkt p;
  uint32_t end, hl;
  struct rct_iov seg;
  if (n < 14 + 20 + 8 + 12 + 4)
    return;
  memcpy(f, FZ_MAC_A, 6);
  memcpy(f + 6, FZ_MAC_B, 6);
  f[12] = 0x08; f[13] = 0x00;
  f[14] = 0x45;
  st16(f + 16, (uint16_t)(n - 14));
  f[20] = 0x40; f[21] = 0;
  f[23] = 17;
  st32(f + 26, 0x0a000002);
  st32(f + 30, 0x0a000001);
  st16(f + 36, 4791);
  st16(f + 38, (uint16_t)(n - 34));
  f[43] &= 0xf0;                       /* TVer 0 */
  st16(f + 44, 0xffff);
  st24(f + 47, 0x11);
  st16(f + 24, rct_wire_ipv4_csum(f + 14));
  if (rct_wire_parse_base(&p, f, n, false) != RCT_PARSE_OK)
    return;
  end = p.frame_len;
  hl = p.bth_off + 12;
  seg.base = f + hl;
  seg.len = end - hl - 4;
  rct_wire_icrc_store(f + end - 4, rct_icrc_compute(f, hl, 14, RCT_ENCAP_V2, &seg, 1, 0, 0));
}

static void check_out(struct fz_ep *e, uint64_t now)
{
  struct rct_frame f;
  static uint8_t out[8192];
  for (int k = 0; k < 256 && rct_poll_transmit(&e->qp, now, &f); k++) {
    struct rct_pkt p;
    int n = rct_frame_linearize(&f, out, sizeof(out));
    if (n < 0 || rct_wire_parse_base(&p, out, (uint32_t)n, false) != RCT_PARSE_OK || !rct_wire_icrc_ok(&p) ||
        rct_wire_parse_ext(&p) != RCT_PARSE_OK)
      abort();
    if (p.paylen > e->qp.base.mtu)
      abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static struct fz_ep e;
  struct rct_wc wc[64];
  uint8_t mode;
  uint64_t now = 0;
  size_t off = 1;
  if (size < 1)
    return 0;
  mode = data[0];
  fz_ep_init(&e, mode & 1, (enum rct_mtu)(1 + (mode >> 1) % 5), (mode & 0x80) ? 0xfffff0 : 0x123456);
  fz_mr(&e, 0, 0x10000, 5000, RCT_ACCESS_ALL);
  fz_mr(&e, 1, 0x20000, 300, RCT_ACCESS_REMOTE_READ);
  fz_mr(&e, 2, 0x30000, 8192, RCT_ACCESS_LOCAL_WRITE);
  for (int i = 0; i < 4; i++) {
    struct rct_sge sge = { 0x30000 + (uint64_t)i * 2048, 2048, FZ_LKEY(2) };
    struct rct_recv_wr rw = { .wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1 };
    rct_post_recv(&e.qp, &rw);
  }
  {
    /* requests outstanding so ACKs and READ responses have something to match */
    struct rct_sge s1 = { 0x30000, 3000, FZ_LKEY(2) };
    struct rct_send_wr w1 = { .wr_id = 100, .opcode = RCT_WR_RDMA_READ, .send_flags = RCT_SEND_SIGNALED,
                              .sg_list = &s1, .num_sge = 1, .remote_addr = 0x5000, .rkey = 7 };
    struct rct_send_wr w2 = { .wr_id = 101, .opcode = RCT_WR_SEND, .send_flags = RCT_SEND_SIGNALED,
                              .sg_list = &s1, .num_sge = 1 };
    struct rct_sge s8 = { 0x30000 + 4096, 8, FZ_LKEY(2) };
    struct rct_send_wr w3 = { .wr_id = 102, .opcode = RCT_WR_ATOMIC_FETCH_AND_ADD, .send_flags = RCT_SEND_SIGNALED,
                              .sg_list = &s8, .num_sge = 1, .remote_addr = 0x5008, .rkey = 7, .compare_add = 1 };
    rct_post_send(&e.qp, &w1);
    rct_post_send(&e.qp, &w2);
    rct_post_send(&e.qp, &w3);
    check_out(&e, now);
  }
  while (off + 2 <= size) {
    uint32_t n = ld16(data + off);
    uint8_t *f;
    off += 2;
    if (n > size - off)
      n = (uint32_t)(size - off);
    f = malloc(n ? n : 1);
    memcpy(f, data + off, n);
    off += n;
    if (mode & 0x40)
      fixup(f, n);
    rct_handle_frame(&e.dev, now, f, n);
    free(f);
    check_out(&e, now);
    now += 1000;
    if (rct_next_timeout(&e.qp) <= now + 100000) {
      now = rct_next_timeout(&e.qp) > now ? rct_next_timeout(&e.qp) : now;
      rct_handle_timeout(&e.qp, now);
      check_out(&e, now);
    }
    while (rct_poll_cq(&e.scq, wc, 64) > 0 || rct_poll_cq(&e.rcq, wc, 64) > 0)
      ;
    if (e.qp.base.sq_tail - e.qp.base.sq_head > 16 || e.qp.base.rq_tail - e.qp.base.rq_head > 16)
      abort();
  }
  fz_ep_free(&e);
  return 0;
}
