/*
 * test_sr.c: selective repeat, and end-to-end transfers of two endpoints
 * over the virtual-time link with seeded loss (go-back-N and SR). Every
 * random test prints its seed.
 */
#include "harness.h"

static struct ep ea, eb;
static uint8_t fb[8192];

/* max_inflight: the window [REQ-WIN-1]; 0 = conn_defaults'; rd_atomic:
 * max_rd_atomic = max_dest_rd_atomic; 0 = conn_defaults' */
static void pair_setup_rd(bool sr, bool adaptive, uint32_t max_inflight, uint8_t rd_atomic)
{
  struct conn_opts o;
  conn_defaults(&o);
  o.sr = sr;
  o.adaptive = adaptive;
  if (max_inflight)
    o.max_inflight = max_inflight;
  if (rd_atomic)
    o.rd_atomic = rd_atomic;
  o.timeout = 8;                       /* ~1 ms */
  ep_init(&ea, MAC_A, IP_A, QPN_A, 0);
  ep_init(&eb, MAC_B, IP_B, QPN_B, 0);
  pair_connect(&ea, &eb, &o);
}

static void pair_setup_window(bool sr, bool adaptive, uint32_t max_inflight)
{
  pair_setup_rd(sr, adaptive, max_inflight, 0);
}

static void pair_setup_adaptive(bool sr, bool adaptive)
{
  pair_setup_window(sr, adaptive, 0);
}

static void pair_setup(bool sr)
{
  pair_setup_adaptive(sr, false);
}

static void pair_teardown(void)
{
  ep_free(&ea);
  ep_free(&eb);
}

/* Drop frames by number from A. */
struct drops {
  unsigned a[8], na;
  unsigned b[8], nb;
  uint32_t seed;
  unsigned pct;
};

static bool drop_listed(void *ctx, bool from_a, unsigned n, const struct rct_pkt *p)
{
  struct drops *d = ctx;
  (void)p;
  for (unsigned i = 0; i < (from_a ? d->na : d->nb); i++)
    if ((from_a ? d->a[i] : d->b[i]) == n)
      return true;
  return false;
}

static uint32_t rnd(uint32_t *s)
{
  *s ^= *s << 13;
  *s ^= *s >> 17;
  *s ^= *s << 5;
  return *s;
}

static bool drop_random(void *ctx, bool from_a, unsigned n, const struct rct_pkt *p)
{
  struct drops *d = ctx;
  (void)from_a; (void)n; (void)p;
  return rnd(&d->seed) % 100 < d->pct;
}

/* [SR-WIRE-1] [SR-WIRE-2] [SR-WIRE-3] [SR-WIRE-4] [SR-NEG-2] SR request packets */
START_TEST(test_sr_request_headers)
{
  struct host_mr *m;
  struct rct_pkt p;
  pair_setup(true);
  m = ep_reg_mr(&ea, 0x10000, 8192, RCT_ACCESS_LOCAL_WRITE);
  post_send(&ea, 1, RCT_WR_SEND, m, 0, 100, 0, 0, 0);
  post_send(&ea, 2, RCT_WR_RDMA_WRITE, m, 0, 2500, 0x5000, 0x77, 0);
  post_send(&ea, 3, RCT_WR_SEND_WITH_IMM, m, 0, 10, 0, 0, 9);
  ck_assert(expect_frame(&ea, 0, &p, fb));
  ck_assert_uint_eq(p.h.bth.opcode, 0xc4);
  ck_assert_uint_eq(p.h.sreth.rsn, 0);
  ck_assert_uint_eq(p.hdr_len, 54 + 8);
  for (uint32_t i = 0; i < 3; i++) {
    ck_assert(expect_frame(&ea, 0, &p, fb));
    ck_assert_uint_eq(p.h.bth.opcode, 0xc6 + i);
    ck_assert_uint_eq(p.hdr_len, 78);           /* SRXH at 54, RETH at 62, payload at 78 */
    ck_assert_uint_eq(p.udp_len, 48 + p.paylen + p.h.bth.padcnt);
    ck_assert_uint_eq(p.h.sreth.offset, i * 1024);
    ck_assert_uint_eq(p.h.sreth.rsn, 1);        /* the next receive-consuming message's */
    ck_assert_uint_eq(p.h.reth.va, 0x5000 + i * 1024);
    ck_assert_uint_eq(p.h.reth.dmalen, 2500);
    ck_assert_uint_eq(p.h.reth.rkey, 0x77);
    ck_assert_uint_eq(p.h.bth.padcnt, (4 - p.paylen % 4) % 4);
  }
  ck_assert(expect_frame(&ea, 0, &p, fb));
  ck_assert_uint_eq(p.h.bth.opcode, 0xc5);
  ck_assert_uint_eq(p.h.sreth.rsn, 1);
  ck_assert_uint_eq(p.h.imm, 9);
}
END_TEST

/* [SR-RESP-2] [SR-RESP-4] [SR-RESP-5] [SR-WIRE-6] [SR-REQ-2] [SR-REQ-3] [REQ-CMPL-2]
 * one lost packet: the receiver places the rest, a selective NAK names the hole,
 * only the hole is resent */
START_TEST(test_sr_single_loss_resends_only_the_hole)
{
  struct host_mr *src, *dst;
  struct drops d = { .a = { 3 }, .na = 1 };
  struct link l;
  pair_setup(true);
  src = ep_reg_mr(&ea, 0x10000, 16384, RCT_ACCESS_LOCAL_WRITE);
  dst = ep_reg_mr(&eb, 0x40000, 16384, RCT_ACCESS_REMOTE_WRITE | RCT_ACCESS_LOCAL_WRITE);
  post_send(&ea, 1, RCT_WR_RDMA_WRITE, src, 0, 8 * 1024, 0x40000, dst->rkey, 0);
  link_init(&l);
  l.drop = drop_listed;
  l.ctx = &d;
  link_run(&l, &ea, &eb, 1000000000ull);
  expect_wc(&ea.scq, 1, RCT_WC_SUCCESS);
  ck_assert_int_eq(memcmp(src->buf, dst->buf, 8192), 0);
  ck_assert_uint_eq(ea.qp.base.cnt.tx_retransmits, 1);
  ck_assert_uint_ge(eb.qp.base.cnt.tx_sack, 1);
  ck_assert_uint_ge(ea.qp.base.cnt.rx_sack, 1);
  ck_assert_uint_eq(eb.qp.base.cnt.sr_placed_ooo, 4);
  ck_assert_uint_eq(ea.qp.base.cnt.timeouts, 0);
  ck_assert_uint_eq(ea.qp.comp.retry_left, 7);
}
END_TEST

/* [SR-RESP-4] [RESP-RECV-4] SENDs placed out of order complete in order */
START_TEST(test_sr_sends_complete_in_order)
{
  struct host_mr *src, *dst;
  struct drops d = { .a = { 0, 2 }, .na = 2 };
  struct link l;
  struct rct_wc wc;
  pair_setup(true);
  src = ep_reg_mr(&ea, 0x10000, 16384, RCT_ACCESS_LOCAL_WRITE);
  dst = ep_reg_mr(&eb, 0x40000, 16384, RCT_ACCESS_LOCAL_WRITE);
  for (int i = 0; i < 4; i++)
    post_recv(&eb, (uint64_t)(10 + i), dst, (uint32_t)i * 4096, 4096);
  for (int i = 0; i < 4; i++)
    post_send(&ea, (uint64_t)i, RCT_WR_SEND, src, (uint32_t)i * 1000, 1000 + (uint32_t)i, 0, 0, 0);
  link_init(&l);
  l.drop = drop_listed;
  l.ctx = &d;
  link_run(&l, &ea, &eb, 1000000000ull);
  for (int i = 0; i < 4; i++) {
    expect_wc(&ea.scq, (uint64_t)i, RCT_WC_SUCCESS);
    ck_assert(cq_pop(&eb.rcq, &wc));
    ck_assert_uint_eq(wc.wr_id, (uint64_t)(10 + i));
    ck_assert_uint_eq(wc.byte_len, 1000 + (uint32_t)i);
    ck_assert_int_eq(memcmp(dst->buf + i * 4096, src->buf + i * 1000, 1000), 0);
  }
}
END_TEST

/* [SR-RESP-4] [RESP-RECV-4] an SR WRITE with immediate, its first packet lost:
 * the receive completion's byte_len is the WRITE's length */
START_TEST(test_sr_write_imm_byte_len)
{
  struct host_mr *src, *dst, *rb;
  struct drops d = { .a = { 0 }, .na = 1 };
  struct link l;
  struct rct_wc wc;
  pair_setup(true);
  src = ep_reg_mr(&ea, 0x10000, 16384, RCT_ACCESS_LOCAL_WRITE);
  dst = ep_reg_mr(&eb, 0x40000, 16384, RCT_ACCESS_REMOTE_WRITE | RCT_ACCESS_LOCAL_WRITE);
  rb = ep_reg_mr(&eb, 0x80000, 64, RCT_ACCESS_LOCAL_WRITE);
  post_recv(&eb, 20, rb, 0, 16);
  post_send(&ea, 1, RCT_WR_RDMA_WRITE_WITH_IMM, src, 0, 3000, 0x40000, dst->rkey, 0x5a5a);
  link_init(&l);
  l.drop = drop_listed;
  l.ctx = &d;
  link_run(&l, &ea, &eb, 1000000000ull);
  expect_wc(&ea.scq, 1, RCT_WC_SUCCESS);
  ck_assert(cq_pop(&eb.rcq, &wc));
  ck_assert_int_eq(wc.opcode, RCT_WC_RECV_RDMA_WITH_IMM);
  ck_assert_uint_eq(wc.imm_data, 0x5a5a);
  ck_assert_uint_eq(wc.byte_len, 3000);
  ck_assert_int_eq(memcmp(src->buf, dst->buf, 3000), 0);
}
END_TEST

/* A selective NAK from B's side, injected into A: e and the SACK bitmap. */
/* A selective NAK naming the hole epsn, its bitmap still empty. */
static void sack_header(struct rct_hdr *h, uint32_t epsn)
{
  memset(h, 0, sizeof(*h));
  h->bth.opcode = OP_SR_SACK;
  h->bth.psn = epsn;
  h->aeth.syndrome = AETH_NAK_PSN_SEQ;
}

static void inject_sack(struct ep *e, uint64_t now, uint32_t epsn, uint64_t bits)
{
  struct peer pr;
  struct rct_hdr h;
  peer_for(&pr, e);
  sack_header(&h, epsn);
  h.sack = bits;
  inject(e, &pr, now, &h, NULL, 0);
}

static uint32_t expect_psn(struct ep *e, uint64_t now)
{
  struct rct_pkt p;
  ck_assert(expect_frame(e, now, &p, fb));
  return p.h.bth.psn;
}

/* [REQ-WIN-5] selective repeat has no loss window: a selective NAK and a
 * timeout cut nothing, and new packets go as far as [REQ-WIN-1] allows */
START_TEST(test_sr_has_no_loss_window)
{
  struct host_mr *m;
  struct rct_pkt p;
  uint64_t t;
  int n = 0;
  pair_setup(true);
  m = ep_reg_mr(&ea, 0x10000, 16384, RCT_ACCESS_LOCAL_WRITE);
  post_send(&ea, 1, RCT_WR_RDMA_WRITE, m, 0, 16384, 0x5000, 0x77, 0);
  while (expect_frame(&ea, 0, &p, fb))
    n++;
  ck_assert_int_eq(n, 16);
  inject_sack(&ea, 1, 0x123456, 1u << 3);            /* 0x123456..58 lost */
  t = rct_next_timeout(&ea.qp);
  rct_handle_timeout(&ea.qp, t);
  while (expect_frame(&ea, t, &p, fb))
    ;
  ck_assert_uint_eq(ea.qp.base.cnt.timeouts, 1);
  ck_assert_uint_eq(ea.qp.base.cnt.window_cuts, 0);
  ck_assert_uint_eq(rct_comp_loss_window(&ea.qp), 0);
}
END_TEST

/* A selective NAK naming the hole e that sacks every PSN from e + 1 up to
 * (excluding) e + n, n <= SR_WINDOW: as many SACKH words as that takes. */
static void inject_sack_run(struct ep *e, uint64_t now, uint32_t epsn, uint32_t n)
{
  struct peer pr;
  struct rct_hdr h;
  peer_for(&pr, e);
  sack_header(&h, epsn);
  for (uint32_t i = 1; i < n; i++) {
    if (i < 64)
      h.sack |= 1ull << i;
    else
      h.sack_ext[i / 64 - 1] |= 1ull << (i % 64);
  }
  h.sack_ext_n = (uint8_t)(n > 64 ? (n + 63) / 64 - 1 : 0);
  inject(e, &pr, now, &h, NULL, 0);
}

/* [SR-REQ-17] [SR-REQ-3] the window counts the PSNs not yet received: with
 * a hole at una and the 7 PSNs after it sacked, a window of 8 sends 7 new
 * packets beside the hole's resend (counted from una, none would go) */
START_TEST(test_sr_window_counts_unreceived_psns)
{
  struct host_mr *m;
  uint32_t psn, resent = 0, fresh = 0;
  pair_setup_window(true, false, 8);
  m = ep_reg_mr(&ea, 0x10000, 32 * 1024, RCT_ACCESS_LOCAL_WRITE);
  post_send(&ea, 1, RCT_WR_RDMA_WRITE, m, 0, 32 * 1024, 0x5000, 0x77, 0);
  for (uint32_t i = 0; i < 8; i++)
    ck_assert_uint_eq(expect_psn(&ea, 0), 0x123456 + i);
  expect_nothing(&ea, 0);                           /* 8 outstanding, none received */
  inject_sack_run(&ea, 1, 0x123456, 8);             /* 0x123456 missing, the 7 after it placed */
  ck_assert_uint_eq(rct_comp_una(&ea.qp), 0x123456);
  for (int i = 0; i < 16; i++) {
    struct rct_pkt p;
    if (!expect_frame(&ea, 1, &p, fb))
      break;
    psn = p.h.bth.psn;
    if (psn == 0x123456)
      resent++;
    else
      ck_assert_uint_eq(psn, 0x123456 + 8 + fresh++);   /* new PSNs, in order */
  }
  ck_assert_uint_eq(resent, 1);
  ck_assert_uint_eq(fresh, 7);                      /* 1 missing + 7 new = the window */
  expect_nothing(&ea, 1);
}
END_TEST

/* [SR-REQ-1] [SR-REQ-17] however few PSNs are missing, new packets stay
 * within SR_WINDOW of una (the bitmaps' reach) */
START_TEST(test_sr_window_stops_at_sr_window_from_una)
{
  struct host_mr *m;
  struct rct_pkt p;
  uint32_t high = 0x123456, sent = 1;
  uint64_t t = 1;
  pair_setup_window(true, false, 8);
  m = ep_reg_mr(&ea, 0x10000, (RCT_SR_WINDOW + 64) * 1024, RCT_ACCESS_LOCAL_WRITE);
  post_send(&ea, 1, RCT_WR_RDMA_WRITE, m, 0, (RCT_SR_WINDOW + 64) * 1024, 0x5000, 0x77, 0);
  for (int round = 0; round < 2 * RCT_SR_WINDOW; round++) {
    uint32_t before = sent;
    while (expect_frame(&ea, t, &p, fb))
      if (p.h.bth.psn != 0x123456) {                /* the hole's resends aside */
        ck_assert_uint_eq(p.h.bth.psn, psn_add(high, 1));
        high = p.h.bth.psn;
        sent++;
      }
    if (sent == before && round > 0)
      break;
    inject_sack_run(&ea, ++t, 0x123456, sent);      /* everything but the hole placed */
  }
  ck_assert_uint_eq(rct_comp_una(&ea.qp), 0x123456);
  ck_assert_uint_eq(sent, RCT_SR_WINDOW);           /* una .. una + SR_WINDOW - 1 */
  ck_assert_uint_eq(high, psn_add(0x123456, RCT_SR_WINDOW - 1));
}
END_TEST

/* [SR-REQ-11] [SR-REQ-2] [SR-REQ-3] [SR-REQ-12] [REQ-TMO-6] [REQ-RETRY-4]
 * A timeout resends every outstanding PSN that is neither acknowledged nor
 * sacked, up to the send point, and then probes the oldest once more; a
 * selective NAK that reports new PSNs gives back the spent retries. */
START_TEST(test_sr_timeout_resends_every_unacked)
{
  struct host_mr *m;
  struct rct_pkt p;
  uint64_t t;
  pair_setup(true);
  m = ep_reg_mr(&ea, 0x10000, 8192, RCT_ACCESS_LOCAL_WRITE);
  post_send(&ea, 1, RCT_WR_RDMA_WRITE, m, 0, 4096, 0x5000, 0x77, 0);
  for (int i = 0; i < 4; i++)
    ck_assert(expect_frame(&ea, 0, &p, fb));    /* 0x123456..59, all lost */
  t = rct_next_timeout(&ea.qp);
  rct_handle_timeout(&ea.qp, t);
  for (uint32_t i = 0; i < 4; i++)
    ck_assert_uint_eq(expect_psn(&ea, t), 0x123456 + i);
  ck_assert_uint_eq(expect_psn(&ea, t), 0x123456);   /* tail probe */
  expect_nothing(&ea, t);
  ck_assert_uint_eq(ea.qp.comp.retry_left, 6);
  /* 0x123458 arrived: the hole 0x123456..57 was resent by the timeout
   * already, so nothing goes out again before the next timeout [SR-REQ-3] */
  inject_sack(&ea, t + 1, 0x123456, 1u << 2);
  ck_assert_uint_eq(ea.qp.comp.retry_left, 7);             /* new PSN sacked: progress */
  expect_nothing(&ea, t + 1);
  t = rct_next_timeout(&ea.qp);
  rct_handle_timeout(&ea.qp, t);
  ck_assert_uint_eq(expect_psn(&ea, t), 0x123456);
  ck_assert_uint_eq(expect_psn(&ea, t), 0x123457);
  ck_assert_uint_eq(expect_psn(&ea, t), 0x123459);   /* 0x123458 is sacked */
  ck_assert_uint_eq(expect_psn(&ea, t), 0x123456);   /* tail probe */
  expect_nothing(&ea, t);
  ck_assert_uint_eq(ea.qp.comp.retry_left, 6);
}
END_TEST

/* A 4-packet WRITE 0x123456..59 whose first packet was lost; a selective
 * NAK for 57 has brought 56's resend out at t=10. Returns the MR. */
static struct host_mr *first_packet_resent(void)
{
  struct host_mr *m;
  struct rct_pkt p;
  pair_setup(true);
  m = ep_reg_mr(&ea, 0x10000, 8192, RCT_ACCESS_LOCAL_WRITE);
  post_send(&ea, 1, RCT_WR_RDMA_WRITE, m, 0, 4096, 0x5000, 0x77, 0);
  for (int i = 0; i < 4; i++)
    ck_assert(expect_frame(&ea, 0, &p, fb));
  inject_sack(&ea, 10, 0x123456, 1u << 1);           /* 57 arrived */
  ck_assert_uint_eq(expect_psn(&ea, 10), 0x123456);  /* the resend */
  expect_nothing(&ea, 10);
  return m;
}

/* [REQ-TMO-4] Karn in selective repeat: the RTT sample was armed on the
 * first packet, which was lost and resent after a selective NAK; the ACK
 * that finally covers it measures the repair, not a round trip, and must
 * not become the first sample (SRTT would start at the repair's length and
 * every later RTO with it). The next packet sent fresh is timed instead. */
START_TEST(test_sr_karn_no_sample_from_resent)
{
  struct host_mr *m;
  struct rct_pkt p;
  struct peer pr;
  pair_setup_adaptive(true, true);
  m = ep_reg_mr(&ea, 0x10000, 8192, RCT_ACCESS_LOCAL_WRITE);
  post_send(&ea, 1, RCT_WR_RDMA_WRITE, m, 0, 4096, 0x5000, 0x77, 0);
  for (int i = 0; i < 4; i++)
    ck_assert(expect_frame(&ea, 0, &p, fb));        /* 0x123456 is timed */
  inject_sack(&ea, 10, 0x123456, 1u << 1);           /* 57 arrived, 56 did not */
  ck_assert_uint_eq(expect_psn(&ea, 10), 0x123456);  /* the resend */
  peer_for(&pr, &ea);
  inject_ack(&ea, &pr, 5000000, AETH_ACK, 0x123459, 1);
  expect_wc(&ea.scq, 1, RCT_WC_SUCCESS);
  ck_assert_uint_eq(ea.qp.comp.srtt, 0);                   /* no sample from the repair */
  post_send(&ea, 2, RCT_WR_RDMA_WRITE, m, 0, 100, 0x5000, 0x77, 0);
  ck_assert_uint_eq(expect_psn(&ea, 6000000), 0x12345a);
  inject_ack(&ea, &pr, 6300000, AETH_ACK, 0x12345a, 2);
  ck_assert_uint_eq(ea.qp.comp.srtt, 300000);              /* the fresh packet's round trip */
}
END_TEST

/* [REQ-TMO-4] the round trip of a timed packet behind a hole ends with the
 * selective NAK that reports it received, not when the hole is repaired
 * and una passes it. */
START_TEST(test_sr_rtt_sample_from_sack)
{
  struct host_mr *m;
  struct rct_pkt p;
  pair_setup_adaptive(true, true);
  m = ep_reg_mr(&ea, 0x10000, 8192, RCT_ACCESS_LOCAL_WRITE);
  post_send(&ea, 1, RCT_WR_RDMA_WRITE, m, 0, 4096, 0x5000, 0x77, 0);
  for (int i = 0; i < 4; i++)
    ck_assert(expect_frame(&ea, 0, &p, fb));        /* 56..59; 56 timed, lost */
  inject_sack(&ea, 1000000, 0x123456, 1u << 1);      /* 57 arrived */
  ck_assert_uint_eq(expect_psn(&ea, 1000000), 0x123456);  /* resent: not timed any more */
  post_send(&ea, 2, RCT_WR_RDMA_WRITE, m, 0, 2048, 0x5000, 0x77, 0);
  ck_assert_uint_eq(expect_psn(&ea, 2000000), 0x12345a);  /* fresh: timed */
  ck_assert_uint_eq(expect_psn(&ea, 2000000), 0x12345b);
  ck_assert_uint_eq(ea.qp.comp.srtt, 0);
  inject_sack(&ea, 2400000, 0x123456, 0x3eull);       /* 57..5b arrived, 56 still missing */
  ck_assert_uint_eq(ea.qp.comp.srtt, 400000);
  ck_assert_uint_eq(ea.qp.comp.una, 0x123456);
}
END_TEST

/* [SR-REQ-15] [SR-REQ-3] a selective NAK that sacks a packet sent after a
 * resend, while the hole is still reported, means the resend was lost: the
 * hole goes out again at once instead of after a timeout, with no retry used. */
START_TEST(test_sr_lost_resend_detected)
{
  struct host_mr *m = first_packet_resent();         /* ... and the resend is lost too */
  inject_sack(&ea, 11, 0x123456, 1u << 2);           /* 58: sent before the resend */
  expect_nothing(&ea, 11);
  post_send(&ea, 2, RCT_WR_RDMA_WRITE, m, 0, 100, 0x5000, 0x77, 0);
  ck_assert_uint_eq(expect_psn(&ea, 12), 0x12345a);  /* sent after the resend */
  inject_sack(&ea, 20, 0x123456, 1u << 1 | 1u << 2 | 1u << 3 | 1u << 4);
  ck_assert_uint_eq(expect_psn(&ea, 20), 0x123456);  /* resent again, no timeout */
  expect_nothing(&ea, 20);
  ck_assert_uint_eq(ea.qp.base.cnt.timeouts, 0);
  ck_assert_uint_eq(ea.qp.comp.retry_left, 7);
  ck_assert_uint_eq(ea.qp.base.cnt.tx_retransmits, 2);
}
END_TEST

/* A pair in SR or GBN mode with the IBTA RTO (timeout 8, ~1 ms) and a
 * probe slack of 20 us; a first 4-packet WRITE acknowledged after 100 us
 * gives SRTT = 100 us (or, without a probe slack, no sample at all). */
static struct host_mr *pair_with_probe_slack(bool sr)
{
  struct conn_opts o;
  struct host_mr *m;
  struct rct_pkt p;
  struct peer pr;
  conn_defaults(&o);
  o.sr = sr;
  o.timeout = 8;
  o.probe_slack_ns = 20000;
  ep_init(&ea, MAC_A, IP_A, QPN_A, 0);
  ep_init(&eb, MAC_B, IP_B, QPN_B, 0);
  pair_connect(&ea, &eb, &o);
  m = ep_reg_mr(&ea, 0x10000, 8192, RCT_ACCESS_LOCAL_WRITE);
  post_send(&ea, 1, RCT_WR_RDMA_WRITE, m, 0, 4096, 0x5000, 0x77, 0);
  for (int i = 0; i < 4; i++)
    ck_assert(expect_frame(&ea, 0, &p, fb));
  peer_for(&pr, &ea);
  inject_ack(&ea, &pr, 100000, AETH_ACK, 0x123459, 1);
  expect_wc(&ea.scq, 1, RCT_WC_SUCCESS);
  return m;
}

/* The second 4-packet WRITE, 0x12345a..5d, sent at 200 us (and lost). */
static void second_write_at_200us(struct host_mr *m)
{
  struct rct_pkt p;
  post_send(&ea, 2, RCT_WR_RDMA_WRITE, m, 0, 4096, 0x5000, 0x77, 0);
  for (int i = 0; i < 4; i++)
    ck_assert(expect_frame(&ea, 200000, &p, fb));
}

/* [REQ-TMO-10] [REQ-TMO-8] in SR mode a probe slack times round trips
 * under the IBTA RTO too, and the early probe goes at 2 SRTT + the slack
 * after the timer starts: the packet at una with AckReq, no retry used,
 * no timeout counted; the RTO is the IBTA value and keeps its deadline
 * (the probe does not restart it), so a lost probe costs no more. */
START_TEST(test_sr_probe_slack_fixed_rto)
{
  struct host_mr *m = pair_with_probe_slack(true);
  struct rct_pkt p;
  ck_assert_uint_eq(ea.qp.comp.srtt, 100000);
  second_write_at_200us(m);
  ck_assert_uint_eq(ea.qp.base.timer[RCT_TIMER_RETRANS], 200000 + rct_ack_timeout_ns(8));
  ck_assert_uint_eq(rct_next_timeout(&ea.qp), 200000 + 2 * 100000 + 20000);
  rct_handle_timeout(&ea.qp, 420000);
  ck_assert(expect_frame(&ea, 420000, &p, fb));
  ck_assert_uint_eq(p.h.bth.psn, 0x12345a);           /* una */
  ck_assert_uint_eq(p.h.bth.ackreq, 1);
  expect_nothing(&ea, 420000);
  ck_assert_uint_eq(ea.qp.base.cnt.early_probes, 1);
  ck_assert_uint_eq(ea.qp.base.cnt.timeouts, 0);
  ck_assert_uint_eq(ea.qp.comp.retry_left, 7);
  ck_assert_uint_eq(ea.qp.base.timer[RCT_TIMER_RETRANS], 200000 + rct_ack_timeout_ns(8));
  rct_handle_timeout(&ea.qp, 200000 + rct_ack_timeout_ns(8));
  ck_assert_uint_eq(ea.qp.base.cnt.timeouts, 1);
}
END_TEST

/* [REQ-TMO-10] in go-back-N mode the probe slack does not bring the early
 * probe under the IBTA RTO: no round trip is timed, no probe is armed. */
START_TEST(test_sr_probe_slack_gbn_no_probe)
{
  struct host_mr *m = pair_with_probe_slack(false);
  ck_assert_uint_eq(ea.qp.comp.srtt, 0);
  second_write_at_200us(m);
  ck_assert_uint_eq(ea.qp.base.timer[RCT_TIMER_PROBE], RCT_NEVER);
  ck_assert_uint_eq(rct_next_timeout(&ea.qp), 200000 + rct_ack_timeout_ns(8));
}
END_TEST

/* [SR-REQ-15] only a resend older than what the NAK sacks was lost: a hole
 * resent after that packet is still in flight and does not go again. */
START_TEST(test_sr_lost_resend_only_older)
{
  struct host_mr *m = first_packet_resent();         /* 58 was lost as well */
  post_send(&ea, 2, RCT_WR_RDMA_WRITE, m, 0, 100, 0x5000, 0x77, 0);
  ck_assert_uint_eq(expect_psn(&ea, 11), 0x12345a);  /* sent after 56's resend */
  inject_sack(&ea, 12, 0x123456, 1u << 1 | 1u << 3); /* 57, 59 */
  ck_assert_uint_eq(expect_psn(&ea, 12), 0x123458);  /* resend 58, after 5a */
  expect_nothing(&ea, 12);
  inject_sack(&ea, 13, 0x123458, 1u << 1 | 1u << 2); /* 56 repaired; 59, 5a */
  expect_nothing(&ea, 13);                           /* 58's resend is in flight */
  ck_assert_uint_eq(ea.qp.base.cnt.tx_retransmits, 2);
}
END_TEST

/* An SR pair; m is a local buffer for WRITEs, r one for READs to land in. */
static void pair_with_buffers(struct host_mr **m, struct host_mr **r)
{
  pair_setup(true);
  *m = ep_reg_mr(&ea, 0x10000, 8192, RCT_ACCESS_LOCAL_WRITE);
  *r = ep_reg_mr(&ea, 0x20000, 8192, RCT_ACCESS_LOCAL_WRITE);
}

/* [SR-REQ-12] [SR-RESP-6] a READ request sent behind a hole was dropped by
 * the responder: the selective NAK for the hole resends the hole and the
 * READ request after it, without waiting for a timeout. */
START_TEST(test_sr_read_behind_hole_resent_with_it)
{
  struct host_mr *m, *r;
  struct rct_pkt p;
  pair_with_buffers(&m, &r);
  post_send(&ea, 1, RCT_WR_RDMA_WRITE, m, 0, 100, 0x5000, 0x77, 0);
  post_send(&ea, 2, RCT_WR_RDMA_READ, r, 0, 2048, 0x6000, 0x77, 0);
  post_send(&ea, 3, RCT_WR_RDMA_WRITE, m, 0, 100, 0x5000, 0x77, 0);
  ck_assert_uint_eq(expect_psn(&ea, 0), 0x123456);   /* WRITE: lost */
  ck_assert_uint_eq(expect_psn(&ea, 0), 0x123457);   /* READ, 2 response PSNs: dropped */
  ck_assert_uint_eq(expect_psn(&ea, 0), 0x123459);   /* WRITE: arrives */
  expect_nothing(&ea, 0);
  inject_sack(&ea, 10, 0x123456, 1u << 3);
  ck_assert(expect_frame(&ea, 10, &p, fb));
  ck_assert_uint_eq(p.h.bth.psn, 0x123456);
  ck_assert_uint_eq(p.h.bth.opcode, OP_SR_BASE | OP_WRITE_ONLY);
  ck_assert(expect_frame(&ea, 10, &p, fb));
  ck_assert_uint_eq(p.h.bth.psn, 0x123457);
  ck_assert_uint_eq(p.h.bth.opcode, OP_SR_BASE | OP_READ_REQ);
  ck_assert_uint_eq(p.h.reth.dmalen, 2048);
  expect_nothing(&ea, 10);
  ck_assert_uint_eq(ea.qp.base.cnt.timeouts, 0);
}
END_TEST

/* A READ request for len bytes at va with PSN psn, to eb. */
static void inject_read(struct peer *pr, uint64_t now, uint32_t psn, uint64_t va, uint32_t len,
                        uint32_t rkey, uint8_t flags)
{
  struct rct_hdr h;
  memset(&h, 0, sizeof(h));
  h.bth.opcode = OP_SR_BASE | OP_READ_REQ;
  h.bth.psn = psn;
  h.bth.ackreq = 1;
  h.sreth.flags = flags;
  h.reth.va = va;
  h.reth.rkey = rkey;
  h.reth.dmalen = len;
  inject(&eb, pr, now, &h, NULL, 0);
}

/* [SR-RESP-6] a READ ahead of epsn is not executed */
START_TEST(test_sr_read_does_not_overtake)
{
  struct host_mr *w;
  struct peer pr;
  struct rct_pkt p;
  pair_setup(true);
  w = ep_reg_mr(&eb, 0x40000, 8192, RCT_ACCESS_REMOTE_READ | RCT_ACCESS_REMOTE_WRITE);
  peer_for(&pr, &eb);
  inject_read(&pr, 0, 0x123456 + 1, 0x40000, 100, w->rkey, 0);
  ck_assert(expect_frame(&eb, 0, &p, fb));
  ck_assert_uint_eq(p.h.bth.opcode, OP_SR_SACK);
  ck_assert_uint_eq(p.h.bth.psn, 0x123456);
  ck_assert_uint_eq(p.h.sack, 0);
  expect_nothing(&eb, 0);
  ck_assert_uint_eq(eb.qp.resp.epsn, 0x123456);
}
END_TEST

/* [SR-WIRE-7] [SR-NEG-1] [OPC-VAL-2] SR opcodes on a go-back-N QP, RC opcodes on an SR QP */
START_TEST(test_sr_opcode_mode_mismatch_dropped)
{
  struct peer pr;
  struct host_mr *r;
  pair_setup(false);
  r = ep_reg_mr(&eb, 0x40000, 8192, RCT_ACCESS_LOCAL_WRITE);
  post_recv(&eb, 1, r, 0, 4096);
  peer_for(&pr, &eb);
  ck_assert_int_eq(inject_req(&eb, &pr, 0, 0xc4, 0x123456, true, 10, 1, NULL, 0), RCT_RX_DROPPED);
  ck_assert_uint_eq(eb.qp.base.cnt.rx_bad_opcode, 1);
  expect_nothing(&eb, 0);
  pair_teardown();
  pair_setup(true);
  r = ep_reg_mr(&eb, 0x40000, 8192, RCT_ACCESS_LOCAL_WRITE);
  post_recv(&eb, 1, r, 0, 4096);
  peer_for(&pr, &eb);
  ck_assert_int_eq(inject_req(&eb, &pr, 0, OP_SEND_ONLY, 0x123456, true, 10, 1, NULL, 0), RCT_RX_DROPPED);
  ck_assert_uint_eq(eb.qp.base.cnt.rx_bad_opcode, 1);
  expect_nothing(&eb, 0);
}
END_TEST

/* [SR-RESP-3] [SR-RESP-1] duplicates in the window, packets beyond it */
START_TEST(test_sr_duplicate_and_beyond_window)
{
  struct peer pr;
  struct rct_pkt p;
  struct host_mr *w;
  struct rct_reth r;
  pair_setup(true);
  w = ep_reg_mr(&eb, 0x40000, 65536, RCT_ACCESS_REMOTE_WRITE);
  peer_for(&pr, &eb);
  r.va = 0x40000 + 1024;
  r.rkey = w->rkey;
  r.dmalen = 4096;
  {
    struct rct_hdr h;
    memset(&h, 0, sizeof(h));
    h.bth.opcode = 0xc7;                       /* WRITE MIDDLE at epsn + 1 */
    h.bth.psn = 0x123457;
    h.reth = r;
    h.sreth.offset = 1024;
    inject(&eb, &pr, 0, &h, fb + 4096, 1024);
    ck_assert(expect_frame(&eb, 0, &p, fb));
    ck_assert_uint_eq(p.h.bth.opcode, OP_SR_SACK);
    ck_assert_uint_eq(p.h.sack, 2);             /* bit 1: epsn + 1 held */
    ck_assert_uint_eq(p.udp_len, 36);           /* [SR-WIRE-6] AETH at 54, SACKH at 58 */
    ck_assert_uint_eq(p.hdr_len, 66);
    h.bth.ackreq = 1;
    inject(&eb, &pr, 0, &h, fb + 4096, 1024);   /* again: duplicate */
    ck_assert_uint_eq(eb.qp.base.cnt.rx_dup, 1);
    ck_assert(expect_frame(&eb, 0, &p, fb));
    ck_assert_uint_eq(p.h.bth.opcode, OP_SR_SACK);
    h.bth.psn = 0x123456 + RCT_SR_WINDOW + 3;   /* beyond the window */
    inject(&eb, &pr, 0, &h, fb + 4096, 1024);
    ck_assert(expect_frame(&eb, 0, &p, fb));
    ck_assert_uint_eq(p.h.bth.opcode, OP_SR_SACK);
    ck_assert_uint_eq(eb.qp.base.cnt.rx_out_of_seq, 2);
  }
}
END_TEST

/* [SR-RESP-10] [SR-RESP-5] a selective NAK due for an out-of-order packet
 * but not yet sent when the hole fills (several frames taken between two
 * sends, as a NIC's receive path does) goes out as an ACK for epsn - 1;
 * a gap left by a packet beyond the window still goes out as a NAK. */
START_TEST(test_sr_stale_sack_becomes_ack)
{
  struct peer pr;
  struct rct_pkt p;
  struct host_mr *w;
  struct rct_hdr h;
  pair_setup(true);
  w = ep_reg_mr(&eb, 0x40000, 65536, RCT_ACCESS_REMOTE_WRITE);
  peer_for(&pr, &eb);
  memset(&h, 0, sizeof(h));
  h.reth.va = 0x40000;
  h.reth.rkey = w->rkey;
  h.reth.dmalen = 2048;
  h.bth.opcode = OP_SR_BASE | OP_WRITE_LAST;         /* epsn + 1 first: out of order */
  h.bth.psn = 0x123457;
  h.bth.ackreq = 1;
  h.sreth.offset = 1024;
  inject(&eb, &pr, 0, &h, fb + 4096, 1024);
  h.bth.opcode = OP_SR_BASE | OP_WRITE_FIRST;        /* then the hole, before any send */
  h.bth.psn = 0x123456;
  h.bth.ackreq = 0;
  h.sreth.offset = 0;
  inject(&eb, &pr, 0, &h, fb + 4096, 1024);
  ck_assert_uint_eq(eb.qp.resp.epsn, 0x123458);
  ck_assert(expect_frame(&eb, 0, &p, fb));
  ck_assert_uint_eq(p.h.bth.opcode, OP_ACK);
  ck_assert_uint_eq(p.h.bth.psn, 0x123457);
  expect_nothing(&eb, 0);
  h.bth.psn = 0x123458 + RCT_SR_WINDOW;              /* beyond the window: a real gap */
  h.bth.opcode = OP_SR_BASE | OP_WRITE_MIDDLE;
  inject(&eb, &pr, 0, &h, fb + 4096, 1024);
  ck_assert(expect_frame(&eb, 0, &p, fb));
  ck_assert_uint_eq(p.h.bth.opcode, OP_SR_SACK);
  ck_assert_uint_eq(p.h.bth.psn, 0x123458);
  ck_assert_uint_eq(p.h.sack, 0);
}
END_TEST

/* [SR-RESP-11] [SR-RESP-5] with sack_every 4: the first out-of-order
 * packet behind a new hole is answered at once, then one in four, and
 * any packet with AckReq at once. */
START_TEST(test_sr_sack_thinning)
{
  struct peer pr;
  struct rct_pkt p;
  struct host_mr *w;
  struct rct_hdr h;
  pair_setup(true);
  eb.dev.attr.sack_every = 4;
  w = ep_reg_mr(&eb, 0x40000, 65536, RCT_ACCESS_REMOTE_WRITE);
  peer_for(&pr, &eb);
  memset(&h, 0, sizeof(h));
  h.reth.va = 0x40000;
  h.reth.rkey = w->rkey;
  h.reth.dmalen = 16 * 1024;
  h.bth.opcode = OP_SR_BASE | OP_WRITE_MIDDLE;
  for (uint32_t i = 1; i <= 9; i++) {                  /* epsn (0x123456) is lost */
    h.bth.psn = 0x123456 + i;
    h.sreth.offset = i * 1024;
    inject(&eb, &pr, 0, &h, fb + 4096, 1024);
    if (i == 1 || i == 5 || i == 9) {            /* the new hole, then every 4th */
      ck_assert_msg(expect_frame(&eb, 0, &p, fb), "packet %u: no selective NAK", i);
      ck_assert_uint_eq(p.h.bth.opcode, OP_SR_SACK);
      ck_assert_uint_eq(p.h.bth.psn, 0x123456);
    }
    expect_nothing(&eb, 0);
  }
  h.bth.psn = 0x123456 + 10;
  h.bth.ackreq = 1;                                    /* AckReq: answered at once */
  inject(&eb, &pr, 0, &h, fb + 4096, 1024);
  ck_assert(expect_frame(&eb, 0, &p, fb));
  ck_assert_uint_eq(p.h.bth.opcode, OP_SR_SACK);
  ck_assert_uint_eq(p.h.sack, 0x7feull);               /* bits 1..10 */
  ck_assert_uint_eq(eb.qp.base.cnt.rx_out_of_seq, 10);
}
END_TEST

/* [SR-WIRE-8] [SR-WIRE-6] the SACKH grows by 8-byte words to reach the
 * highest placed PSN; a receiver reads the extra words; a SACKH tail that is
 * not whole words, or longer than SR_WINDOW bits, is malformed. */
START_TEST(test_sr_sack_long_bitmap)
{
  struct peer pr;
  struct rct_pkt p;
  struct host_mr *w, *m;
  struct rct_hdr h;
  uint8_t buf[256];
  uint32_t n;
  pair_setup(true);
  /* responder: a WRITE MIDDLE at epsn + 200 is reported in word 3 */
  w = ep_reg_mr(&eb, 0x40000, 256 * 1024, RCT_ACCESS_REMOTE_WRITE);
  peer_for(&pr, &eb);
  memset(&h, 0, sizeof(h));
  h.bth.opcode = 0xc7;
  h.bth.psn = 0x123456 + 200;
  h.reth.va = 0x40000 + 200 * 1024;
  h.reth.rkey = w->rkey;
  h.reth.dmalen = 256 * 1024;
  h.sreth.offset = 200 * 1024;
  inject(&eb, &pr, 0, &h, fb + 4096, 1024);
  ck_assert(expect_frame(&eb, 0, &p, fb));
  ck_assert_uint_eq(p.h.bth.opcode, OP_SR_SACK);
  ck_assert_uint_eq(p.h.bth.psn, 0x123456);
  ck_assert_uint_eq(p.h.sack, 0);
  ck_assert_uint_eq(p.h.sack_ext_n, 3);
  ck_assert(p.h.sack_ext[0] == 0 && p.h.sack_ext[1] == 0);
  ck_assert(p.h.sack_ext[2] == 1ull << (200 - 192));
  ck_assert_uint_eq(p.udp_len, 36 + 24);
  ck_assert_uint_eq(p.paylen, 0);
  /* requester: bit 70 in the first extension word marks PSN una + 70 */
  m = ep_reg_mr(&ea, 0x10000, 80 * 1024, RCT_ACCESS_LOCAL_WRITE);
  post_send(&ea, 1, RCT_WR_RDMA_WRITE, m, 0, 80 * 1024, 0x5000, 0x77, 0);
  for (uint32_t i = 0; i < 80; i++)
    ck_assert_uint_eq(expect_psn(&ea, 0), 0x123456 + i);
  expect_nothing(&ea, 0);
  peer_for(&pr, &ea);
  memset(&h, 0, sizeof(h));
  h.bth.opcode = OP_SR_SACK;
  h.bth.psn = 0x123456;
  h.aeth.syndrome = AETH_NAK_PSN_SEQ;
  h.sack_ext_n = 1;
  h.sack_ext[0] = 1ull << (70 - 64);
  inject(&ea, &pr, 10, &h, NULL, 0);
  ck_assert(bm_test(ea.qp.comp.sr_sacked, 70));
  for (uint32_t i = 0; i < 70; i++)                 /* the hole before it [SR-REQ-3] */
    ck_assert_uint_eq(expect_psn(&ea, 10), 0x123456 + i);
  expect_nothing(&ea, 10);
  /* codec: 4 stray bytes, or SR_WINDOW / 64 extension words (one more
   * than the window holds), are malformed [SR-WIRE-8] */
  memset(&h, 0, sizeof(h));
  h.encap = RCT_ENCAP_V2;
  h.bth.opcode = OP_SR_SACK;
  h.sack_ext_n = 2;
  h.sack_ext[1] = 0x8000000000000001ull;
  n = rct_wire_build(buf, &h, 0) + 4;
  ck_assert_int_eq(rct_wire_parse_base(&p, buf, n, false), RCT_PARSE_OK);
  ck_assert_int_eq(rct_wire_parse_ext(&p), RCT_PARSE_OK);
  ck_assert_uint_eq(p.h.sack_ext_n, 2);
  ck_assert(p.h.sack_ext[1] == 0x8000000000000001ull);
  for (uint32_t bad = 0; bad < 2; bad++) {
    memset(&h, 0, sizeof(h));
    h.encap = RCT_ENCAP_V2;
    h.bth.opcode = OP_SR_SACK;
    uint32_t tail = bad ? 4 : 8 * (RCT_SR_WINDOW / 64);
    n = rct_wire_build(buf, &h, tail) + tail + 4;
    ck_assert_int_eq(rct_wire_parse_base(&p, buf, n, false), RCT_PARSE_OK);
    ck_assert_int_eq(rct_wire_parse_ext(&p), RCT_PARSE_BAD_LEN);
  }
}
END_TEST

/* [SR-RESP-9] an SR WRITE packet failing the R_Key check: NAK with its own PSN, QP to ERR */
START_TEST(test_sr_write_access_error_per_packet)
{
  struct peer pr;
  struct rct_pkt p;
  struct host_mr *w;
  struct rct_hdr h;
  pair_setup(true);
  w = ep_reg_mr(&eb, 0x40000, 4096, RCT_ACCESS_REMOTE_WRITE);
  peer_for(&pr, &eb);
  memset(&h, 0, sizeof(h));
  h.bth.opcode = 0xc7;                               /* MIDDLE placed ahead, bad rkey */
  h.bth.psn = 0x123458;
  h.reth.va = 0x40000 + 2048;
  h.reth.rkey = w->rkey + 1;
  h.reth.dmalen = 4096;
  h.sreth.offset = 2048;
  inject(&eb, &pr, 0, &h, fb + 4096, 1024);
  ck_assert(expect_frame(&eb, 0, &p, fb));
  ck_assert_uint_eq(p.h.bth.opcode, OP_ACK);
  ck_assert_uint_eq(p.h.aeth.syndrome, AETH_NAK_REM_ACC);
  ck_assert_uint_eq(p.h.bth.psn, 0x123458);
  ck_assert_int_eq(eb.qp.base.attr.qp_state, RCT_QPS_ERR);
}
END_TEST

/* Random loss, both modes: every WR completes once, in order, data intact.
 * [REQ-CMPL-6] [REQ-CMPL-2] [REQ-GBN-1] [SR-NEG-1] [RESP-DUP-2] [SR-REQ-7] [SR-REQ-13] */
static void random_loss(bool sr, uint32_t seed, unsigned pct)
{
  struct host_mr *src, *dst, *rd, *rb;
  struct drops d = { .seed = seed, .pct = pct };
  struct link l;
  struct rct_wc wc;
  int n = 0;
  printf("random_loss sr=%d seed=%u loss=%u%%\n", sr, seed, pct);
  fflush(stdout);
  pair_setup(sr);
  src = ep_reg_mr(&ea, 0x10000, 65536, RCT_ACCESS_LOCAL_WRITE);
  rd = ep_reg_mr(&ea, 0x100000, 65536, RCT_ACCESS_LOCAL_WRITE);
  dst = ep_reg_mr(&eb, 0x40000, 65536, RCT_ACCESS_REMOTE_WRITE | RCT_ACCESS_REMOTE_READ | RCT_ACCESS_LOCAL_WRITE);
  rb = ep_reg_mr(&eb, 0x200000, 65536, RCT_ACCESS_LOCAL_WRITE);
  for (int i = 0; i < 16; i++)
    post_recv(&eb, (uint64_t)(100 + i), rb, (uint32_t)i * 4096, 4096);
  for (int i = 0; i < 48; i++) {
    uint32_t len = 1 + (uint32_t)(i * 977) % 4000, off = (uint32_t)i * 1024 % 60000;
    int k = i % 3;
    if (k == 0)
      post_send(&ea, (uint64_t)i, RCT_WR_RDMA_WRITE, src, off, len, 0x40000 + off, dst->rkey, 0);
    else if (k == 1 && i < 48)
      post_send(&ea, (uint64_t)i, RCT_WR_SEND, src, off, len, 0, 0, 0);
    else
      post_send(&ea, (uint64_t)i, RCT_WR_RDMA_READ, rd, off, len, 0x40000 + off, dst->rkey, 0);
  }
  link_init(&l);
  l.drop = drop_random;
  l.ctx = &d;
  link_run(&l, &ea, &eb, 60ull * 1000000000ull);
  while (cq_pop(&ea.scq, &wc)) {
    ck_assert_msg(wc.wr_id == (uint64_t)n && wc.status == RCT_WC_SUCCESS,
                  "seed %u: completion %d is wr %llu %s", seed, n, (unsigned long long)wc.wr_id,
                  rct_wc_status_name(wc.status));
    n++;
  }
  ck_assert_msg(n == 48, "seed %u: %d of 48 completed", seed, n);
  for (int i = 0; i < 16; i++) {
    ck_assert(cq_pop(&eb.rcq, &wc));
    ck_assert_uint_eq(wc.wr_id, (uint64_t)(100 + i));
    ck_assert_int_eq(wc.status, RCT_WC_SUCCESS);
  }
  ck_assert_int_eq(ea.qp.base.attr.qp_state, RCT_QPS_RTS);
  ck_assert_int_eq(eb.qp.base.attr.qp_state, RCT_QPS_RTS);
}

START_TEST(test_sr_random_loss_go_back_n)
{
  random_loss(false, 12345u + (uint32_t)_i, 5);
}
END_TEST

START_TEST(test_sr_random_loss_selective_repeat)
{
  random_loss(true, 777u + (uint32_t)_i, 5);
}
END_TEST

START_TEST(test_sr_heavy_loss_both_modes)
{
  random_loss(_i & 1, 4242u + (uint32_t)_i, 20);
}
END_TEST

/* The window scans go word by word (rct_bm_next, rct_bm_next_clear); they
 * agree with a bit-by-bit reading of the same bitmaps for every start and
 * end, across word edges, with and without the mask. */
START_TEST(test_sr_bitmap_scans_match_bit_by_bit)
{
  uint32_t a[RCT_SR_WORDS], b[RCT_SR_WORDS], seed = 12345;
  for (int round = 0; round < 40; round++) {
    for (int i = 0; i < RCT_SR_WORDS; i++) {
      seed = seed * 1103515245u + 12345u;
      a[i] = round % 4 == 0 ? 0 : round % 4 == 1 ? ~0u : seed;
      seed = seed * 1103515245u + 12345u;
      b[i] = round % 3 == 0 ? 0 : seed ^ (seed << 7);
    }
    for (uint32_t from = 0; from <= RCT_SR_WINDOW; from += 1 + from % 29) {
      for (uint32_t n = from; n <= RCT_SR_WINDOW; n += 1 + n % 37) {
        uint32_t want = n, want_any = n, want_clear = n;
        for (uint32_t k = n; k-- > from;) {
          if (bm_test(a, k) && !bm_test(b, k))
            want = k;
          if (bm_test(a, k))
            want_any = k;
          else
            want_clear = k;
        }
        ck_assert_uint_eq(rct_bm_next(a, b, from, n), want);
        ck_assert_uint_eq(rct_bm_next(a, 0, from, n), want_any);
        ck_assert_uint_eq(rct_bm_next_clear(a, from, n), want_clear);
      }
    }
  }
}
END_TEST

/* [SR-WIRE-9] a READ whose WRs before it are all READs carries
 * AFTER_READS in every request; one posted behind a WRITE does not. */
START_TEST(test_sr_read_after_reads_flag)
{
  struct host_mr *m, *r;
  struct rct_pkt p;
  pair_with_buffers(&m, &r);
  post_send(&ea, 1, RCT_WR_RDMA_READ, r, 0, 1024, 0x6000, 0x77, 0);
  post_send(&ea, 2, RCT_WR_RDMA_READ, r, 1024, 1024, 0x6400, 0x77, 0);
  post_send(&ea, 3, RCT_WR_RDMA_WRITE, m, 0, 100, 0x5000, 0x77, 0);
  post_send(&ea, 4, RCT_WR_RDMA_READ, r, 2048, 1024, 0x6800, 0x77, 0);
  for (int i = 0; i < 4; i++) {
    ck_assert(expect_frame(&ea, 0, &p, fb));
    ck_assert_uint_eq(p.h.bth.psn, 0x123456 + i);
    ck_assert_uint_eq(p.h.sreth.flags, i < 2 ? SRXH_AFTER_READS : 0);
  }
  expect_nothing(&ea, 0);
}
END_TEST

/* [SR-RESP-6] [SR-RESP-5] a READ with AFTER_READS ahead of epsn runs at
 * once: its responses go, a selective NAK reports the hole at epsn without
 * marking the READ's PSNs, and when the missing READ comes epsn passes
 * both; a request for one of its responses before that is a duplicate
 * that replays it ([RESP-DUP-5]). */
START_TEST(test_sr_read_after_reads_runs_ahead)
{
  struct host_mr *w;
  struct peer pr;
  struct rct_pkt p;
  pair_setup(true);
  w = ep_reg_mr(&eb, 0x40000, 8192, RCT_ACCESS_REMOTE_READ);
  peer_for(&pr, &eb);
  inject_read(&pr, 0, 0x123456 + 1, 0x40000, 2048, w->rkey, SRXH_AFTER_READS);   /* 0x123456 lost */
  ck_assert(expect_frame(&eb, 0, &p, fb));
  ck_assert_uint_eq(p.h.bth.opcode, OP_SR_SACK);
  ck_assert_uint_eq(p.h.bth.psn, 0x123456);          /* the hole */
  ck_assert(p.h.sack == 0 && p.h.sack_ext_n == 0);   /* READ PSNs are not reported */
  ck_assert(expect_frame(&eb, 0, &p, fb));
  ck_assert_uint_eq(p.h.bth.opcode, OP_READ_RESP_FIRST);
  ck_assert_uint_eq(p.h.bth.psn, 0x123457);
  ck_assert(expect_frame(&eb, 0, &p, fb));
  ck_assert_uint_eq(p.h.bth.opcode, OP_READ_RESP_LAST);
  ck_assert_uint_eq(p.h.bth.psn, 0x123458);
  expect_nothing(&eb, 0);
  ck_assert_uint_eq(eb.qp.resp.epsn, 0x123456);
  /* its second response asked again: replayed alone */
  inject_read(&pr, 1, 0x123458, 0x40400, 1024, w->rkey, SRXH_AFTER_READS);
  ck_assert(expect_frame(&eb, 1, &p, fb));
  ck_assert_uint_eq(p.h.bth.opcode, OP_READ_RESP_ONLY);
  ck_assert_uint_eq(p.h.bth.psn, 0x123458);
  expect_nothing(&eb, 1);
  /* the missing READ: epsn passes it and the one run ahead */
  inject_read(&pr, 2, 0x123456, 0x40800, 1024, w->rkey, 0);
  ck_assert(expect_frame(&eb, 2, &p, fb));
  ck_assert_uint_eq(p.h.bth.opcode, OP_READ_RESP_ONLY);
  ck_assert_uint_eq(p.h.bth.psn, 0x123456);
  ck_assert_uint_eq(eb.qp.resp.epsn, 0x123459);
  expect_nothing(&eb, 2);
}
END_TEST

/* [SR-RESP-6] a READ with AFTER_READS that could not run in sequence
 * (R_Key) is dropped like one without: nothing goes but the selective NAK,
 * and its error comes when it arrives in sequence. */
START_TEST(test_sr_read_after_reads_refused_waits)
{
  struct host_mr *w;
  struct peer pr;
  struct rct_pkt p;
  pair_setup(true);
  w = ep_reg_mr(&eb, 0x40000, 8192, RCT_ACCESS_REMOTE_READ);
  peer_for(&pr, &eb);
  inject_read(&pr, 0, 0x123457, 0x40000, 1024, w->rkey + 1, SRXH_AFTER_READS);
  ck_assert(expect_frame(&eb, 0, &p, fb));
  ck_assert_uint_eq(p.h.bth.opcode, OP_SR_SACK);
  ck_assert_uint_eq(p.h.bth.psn, 0x123456);
  expect_nothing(&eb, 0);
  ck_assert_uint_eq(eb.qp.resp.epsn, 0x123456);
  ck_assert_int_eq(eb.qp.base.attr.qp_state, RCT_QPS_RTS);
}
END_TEST

/* [SR-REQ-12] a selective NAK for a lost READ resends the hole but not the
 * READ with AFTER_READS behind it: the responder ran that one
 * ([SR-RESP-6]). */
START_TEST(test_sr_read_after_reads_not_resent_behind_hole)
{
  struct host_mr *r;
  struct rct_pkt p;
  pair_setup(true);
  r = ep_reg_mr(&ea, 0x20000, 8192, RCT_ACCESS_LOCAL_WRITE);
  post_send(&ea, 1, RCT_WR_RDMA_READ, r, 0, 1024, 0x6000, 0x77, 0);
  post_send(&ea, 2, RCT_WR_RDMA_READ, r, 1024, 2048, 0x6400, 0x77, 0);
  ck_assert_uint_eq(expect_psn(&ea, 0), 0x123456);   /* lost */
  ck_assert_uint_eq(expect_psn(&ea, 0), 0x123457);   /* runs at the responder */
  expect_nothing(&ea, 0);
  inject_sack(&ea, 10, 0x123456, 0);
  ck_assert(expect_frame(&ea, 10, &p, fb));
  ck_assert_uint_eq(p.h.bth.psn, 0x123456);
  ck_assert_uint_eq(p.h.bth.opcode, OP_SR_BASE | OP_READ_REQ);
  expect_nothing(&ea, 10);
}
END_TEST

/* eb's next frame is the READ response opcode with PSN psn. */
static void expect_resp(uint64_t now, uint8_t opcode, uint32_t psn)
{
  struct rct_pkt p;
  ck_assert(expect_frame(&eb, now, &p, fb));
  ck_assert_uint_eq(p.h.bth.opcode, opcode);
  ck_assert_uint_eq(p.h.bth.psn, psn);
}

/* Two READ resources on eb; READ 0x123456 is lost and READ 0x123457 of
 * len bytes (AFTER_READS) runs ahead of it [SR-RESP-6]: the selective NAK
 * goes, then its first response, left in *p. Returns eb's MR it reads. */
static struct host_mr *read_ahead_of_lost(struct peer *pr, uint32_t len, struct rct_pkt *p)
{
  struct host_mr *w;
  pair_setup_rd(true, false, 0, 2);
  w = ep_reg_mr(&eb, 0x40000, 8192, RCT_ACCESS_REMOTE_READ);
  peer_for(pr, &eb);
  inject_read(pr, 0, 0x123457, 0x40400, len, w->rkey, SRXH_AFTER_READS);
  ck_assert(expect_frame(&eb, 0, p, fb));
  ck_assert_uint_eq(p->h.bth.opcode, OP_SR_SACK);
  ck_assert(expect_frame(&eb, 0, p, fb));
  ck_assert_uint_eq(p->h.bth.psn, 0x123457);
  return w;
}

/* [RESP-READ-4] [SR-RESP-6] the oldest held READ is the lowest PSN, not
 * the first executed. Two READ resources: READ E+1 runs ahead of the lost
 * READ E, then E runs; the requester has E's response but not E+1's, so
 * within its credit of 2 it sends READ E+2. That retires E: a re-request
 * of E+1 is still replayed, and E is forgotten. */
START_TEST(test_sr_read_retires_lowest_psn)
{
  struct peer pr;
  struct rct_pkt p;
  struct host_mr *w = read_ahead_of_lost(&pr, 1024, &p);   /* its response is lost */
  ck_assert_uint_eq(p.h.bth.opcode, OP_READ_RESP_ONLY);
  inject_read(&pr, 1, 0x123456, 0x40000, 1024, w->rkey, SRXH_AFTER_READS);
  expect_resp(1, OP_READ_RESP_ONLY, 0x123456);
  expect_nothing(&eb, 1);
  inject_read(&pr, 2, 0x123458, 0x40800, 1024, w->rkey, SRXH_AFTER_READS);
  expect_resp(2, OP_READ_RESP_ONLY, 0x123458);
  expect_nothing(&eb, 2);
  inject_read(&pr, 3, 0x123457, 0x40400, 1024, w->rkey, SRXH_AFTER_READS);
  expect_resp(3, OP_READ_RESP_ONLY, 0x123457);      /* still held: replayed */
  expect_nothing(&eb, 3);
  inject_read(&pr, 4, 0x123456, 0x40000, 1024, w->rkey, SRXH_AFTER_READS);
  expect_nothing(&eb, 4);                            /* E retired [RESP-DUP-3] */
  ck_assert_int_eq(eb.qp.base.attr.qp_state, RCT_QPS_RTS);
}
END_TEST

/* [RESP-READ-4] [RESP-ERR-1] the same with the READ that ran ahead still
 * sending (its first response went, E's answer came before its second):
 * the requester, holding E and E+1's first response, sends READ E+3 within
 * its credit; it is no credit overrun and gets no NAK invalid request. */
START_TEST(test_sr_read_ahead_sending_is_not_oldest)
{
  struct peer pr;
  struct rct_pkt p;
  struct host_mr *w = read_ahead_of_lost(&pr, 2048, &p);
  ck_assert_uint_eq(p.h.bth.opcode, OP_READ_RESP_FIRST);
  inject_read(&pr, 1, 0x123456, 0x40000, 1024, w->rkey, SRXH_AFTER_READS);
  expect_resp(1, OP_READ_RESP_ONLY, 0x123456);      /* the lower PSN first [RESP-READ-2] */
  inject_read(&pr, 2, 0x123459, 0x40c00, 1024, w->rkey, SRXH_AFTER_READS);
  expect_resp(2, OP_READ_RESP_LAST, 0x123458);
  expect_resp(2, OP_READ_RESP_ONLY, 0x123459);
  expect_nothing(&eb, 2);
  ck_assert_uint_eq(eb.qp.base.cnt.tx_nak_inv, 0);
  ck_assert_int_eq(eb.qp.base.attr.qp_state, RCT_QPS_RTS);
}
END_TEST

Suite *suite_sr(void)
{
  Suite *s = suite_create("sr");
  TCase *t = tcase_create("selective-repeat");
  tcase_add_checked_fixture(t, NULL, pair_teardown);
  tcase_set_timeout(t, 60);
  tcase_add_test(t, test_sr_request_headers);
  tcase_add_test(t, test_sr_has_no_loss_window);
  tcase_add_test(t, test_sr_read_after_reads_flag);
  tcase_add_test(t, test_sr_read_after_reads_runs_ahead);
  tcase_add_test(t, test_sr_read_after_reads_refused_waits);
  tcase_add_test(t, test_sr_read_after_reads_not_resent_behind_hole);
  tcase_add_test(t, test_sr_read_retires_lowest_psn);
  tcase_add_test(t, test_sr_read_ahead_sending_is_not_oldest);
  tcase_add_test(t, test_sr_bitmap_scans_match_bit_by_bit);
  tcase_add_test(t, test_sr_single_loss_resends_only_the_hole);
  tcase_add_test(t, test_sr_sends_complete_in_order);
  tcase_add_test(t, test_sr_write_imm_byte_len);
  tcase_add_test(t, test_sr_timeout_resends_every_unacked);
  tcase_add_test(t, test_sr_karn_no_sample_from_resent);
  tcase_add_test(t, test_sr_rtt_sample_from_sack);
  tcase_add_test(t, test_sr_lost_resend_detected);
  tcase_add_test(t, test_sr_probe_slack_fixed_rto);
  tcase_add_test(t, test_sr_probe_slack_gbn_no_probe);
  tcase_add_test(t, test_sr_lost_resend_only_older);
  tcase_add_test(t, test_sr_stale_sack_becomes_ack);
  tcase_add_test(t, test_sr_sack_thinning);
  tcase_add_test(t, test_sr_read_behind_hole_resent_with_it);
  tcase_add_test(t, test_sr_read_does_not_overtake);
  tcase_add_test(t, test_sr_opcode_mode_mismatch_dropped);
  tcase_add_test(t, test_sr_duplicate_and_beyond_window);
  tcase_add_test(t, test_sr_sack_long_bitmap);
  tcase_add_test(t, test_sr_window_counts_unreceived_psns);
  tcase_add_test(t, test_sr_window_stops_at_sr_window_from_una);
  tcase_add_test(t, test_sr_write_access_error_per_packet);
  /* RCT_STRESS=N runs N seeds of each (default 3) */
  tcase_add_loop_test(t, test_sr_random_loss_go_back_n, 0, getenv("RCT_STRESS") ? atoi(getenv("RCT_STRESS")) : 3);
  tcase_add_loop_test(t, test_sr_random_loss_selective_repeat, 0, getenv("RCT_STRESS") ? atoi(getenv("RCT_STRESS")) : 3);
  tcase_add_loop_test(t, test_sr_heavy_loss_both_modes, 0, getenv("RCT_STRESS") ? atoi(getenv("RCT_STRESS")) : 4);
  suite_add_tcase(s, t);
  return s;
}
