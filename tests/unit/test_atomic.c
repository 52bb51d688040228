/*
 * test_atomic.c: atomics (CmpSwap, FetchAdd) end to end: the AtomicETH and
 * AtomicAckETH on the wire, the requester's posting checks, credit and SR
 * fence, the responder's checks, execution and saved results (a lost
 * ATOMIC_ACK never runs the atomic twice), and the completions, over the
 * virtual-time link (go-back-N and SR) and against a scripted peer.
 */
#include "harness.h"

static struct ep ea, eb;
static uint8_t fb[8192];
#define TVA 0x40000ull                 /* B's target MR */
#define E0 0x654321u                   /* the scripted peer's first PSN at A (A's rq_psn) */

static void pair_atomic(bool sr, uint8_t rd_atomic)
{
  struct conn_opts o;
  conn_defaults(&o);
  o.sr = sr;
  o.timeout = 8;                       /* ~1 ms */
  o.rd_atomic = rd_atomic;
  o.access |= RCT_ACCESS_REMOTE_ATOMIC;
  ep_init(&ea, MAC_A, IP_A, QPN_A, 0);
  ep_init(&eb, MAC_B, IP_B, QPN_B, 0);
  pair_connect(&ea, &eb, &o);
}

static void pair_teardown(void)
{
  ep_free(&ea);
  ep_free(&eb);
}

static uint64_t get64(const uint8_t *p)
{
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

static void put64(uint8_t *p, uint64_t v)
{
  memcpy(p, &v, 8);
}

/* Post an atomic from MR m at off (one 8-byte SGE). */
static int post_atomic(struct ep *e, uint64_t id, enum rct_wr_opcode op, struct host_mr *m, uint32_t off,
                       uint64_t va, uint32_t rkey, uint64_t cmp_add, uint64_t swap)
{
  struct rct_sge sge = { m->va + off, 8, m->lkey };
  struct rct_send_wr wr = { .wr_id = id, .opcode = op, .send_flags = RCT_SEND_SIGNALED, .sg_list = &sge,
                            .num_sge = 1, .remote_addr = va, .rkey = rkey, .compare_add = cmp_add,
                            .swap = swap };
  return rct_post_send(&e->qp, &wr);
}

/* Pop one completion: id, status, and for a success opcode and byte_len. */
static void expect_atomic_wc(struct rct_cq *cq, uint64_t id, enum rct_wc_status st, enum rct_wc_opcode op)
{
  struct rct_wc wc;
  ck_assert(cq_pop(cq, &wc));
  ck_assert_uint_eq(wc.wr_id, id);
  ck_assert_msg(wc.status == st, "status %s, want %s", rct_wc_status_name(wc.status), rct_wc_status_name(st));
  if (st == RCT_WC_SUCCESS) {
    ck_assert_int_eq(wc.opcode, op);
    ck_assert_uint_eq(wc.byte_len, 8);
  }
}

/* [HDR-ATOM-1] [HDR-ATOM-2] [OPC-HDR-1] the AtomicETH and AtomicAckETH: layout, big-endian fields, round trip */
START_TEST(test_atomic_wire_headers)
{
  struct rct_hdr h;
  struct rct_pkt p;
  uint32_t n, bth = ETH_HLEN + IPV4_HLEN + UDP_HLEN;
  rct_hdr_clear(&h);
  h.bth.opcode = OP_CMP_SWAP;
  h.bth.psn = 7;
  h.atom.va = 0x0102030405060708ull;
  h.atom.rkey = 0x11223344;
  h.atom.swap_add = 0xa1a2a3a4a5a6a7a8ull;
  h.atom.compare = 0xc1c2c3c4c5c6c7c8ull;
  n = rct_wire_build(fb, &h, 0);
  ck_assert_uint_eq(n, bth + BTH_LEN + 28);
  ck_assert_uint_eq(fb[bth + BTH_LEN], 0x01);
  ck_assert_uint_eq(fb[bth + BTH_LEN + 7], 0x08);
  ck_assert_uint_eq(fb[bth + BTH_LEN + 8], 0x11);
  ck_assert_uint_eq(fb[bth + BTH_LEN + 12], 0xa1);
  ck_assert_uint_eq(fb[bth + BTH_LEN + 20], 0xc1);
  ck_assert_uint_eq(fb[bth + BTH_LEN + 27], 0xc8);
  memset(fb + n, 0, ICRC_LEN);
  ck_assert_int_eq(rct_wire_parse_base(&p, fb, n + ICRC_LEN, false), RCT_PARSE_OK);
  ck_assert_int_eq(rct_wire_parse_ext(&p), RCT_PARSE_OK);
  ck_assert(p.h.atom.va == h.atom.va && p.h.atom.rkey == h.atom.rkey);
  ck_assert(p.h.atom.swap_add == h.atom.swap_add && p.h.atom.compare == h.atom.compare);
  ck_assert_uint_eq(p.paylen, 0);
  rct_hdr_clear(&h);
  h.bth.opcode = OP_ATOMIC_ACK;
  h.aeth.syndrome = 0x1f;
  h.aeth.msn = 3;
  h.atom_orig = 0x8877665544332211ull;
  n = rct_wire_build(fb, &h, 0);
  ck_assert_uint_eq(n, bth + BTH_LEN + 4 + 8);
  ck_assert_uint_eq(fb[bth + BTH_LEN + 4], 0x88);      /* after the AETH, big-endian */
  memset(fb + n, 0, ICRC_LEN);
  ck_assert_int_eq(rct_wire_parse_base(&p, fb, n + ICRC_LEN, false), RCT_PARSE_OK);
  ck_assert_int_eq(rct_wire_parse_ext(&p), RCT_PARSE_OK);
  ck_assert(p.h.atom_orig == h.atom_orig && p.h.aeth.msn == 3);
  ck_assert(op_flags(OP_CMP_SWAP) & OPF_SUPPORTED);    /* [OPC-VAL-1] */
  ck_assert_uint_eq(op_flags(OP_CMP_SWAP | OP_SR_BASE) & (OPF_SR | OPF_ATOMETH), OPF_SR | OPF_ATOMETH);   /* [SR-ATOM-1] */
}
END_TEST

/* [REQ-ATOM-1] an atomic takes exactly one SGE of 8 bytes; a UD QP takes none */
START_TEST(test_atomic_post_checks)
{
  struct host_mr *m;
  struct rct_sge two[2];
  struct rct_send_wr wr = { .opcode = RCT_WR_ATOMIC_FETCH_AND_ADD, .sg_list = two, .num_sge = 2 };
  pair_atomic(false, 4);
  m = ep_reg_mr(&ea, 0x10000, 4096, RCT_ACCESS_LOCAL_WRITE);
  two[0] = two[1] = (struct rct_sge){ m->va, 4, m->lkey };
  ck_assert_int_eq(rct_post_send(&ea.qp, &wr), RCT_EINVAL);
  wr.num_sge = 1;                                      /* one SGE of 4 bytes */
  ck_assert_int_eq(rct_post_send(&ea.qp, &wr), RCT_EINVAL);
  wr.num_sge = 0;
  ck_assert_int_eq(rct_post_send(&ea.qp, &wr), RCT_EINVAL);
  ck_assert_uint_eq(ea.qp.base.sq_tail, ea.qp.base.sq_head);   /* nothing posted */
  ck_assert_int_eq(post_atomic(&ea, 1, RCT_WR_ATOMIC_CMP_AND_SWP, m, 0, TVA, 0x8000, 0, 0), RCT_OK);
  ck_assert_uint_eq(ea.qp.base.sq_tail - ea.qp.base.sq_head, 1);
  pair_teardown();
}
END_TEST

/* B's counter MR (remote atomic), A's result MR; counter starts at v0. */
static struct host_mr *Mb, *Ma;
static void pair_with_target(bool sr, uint8_t rd_atomic, uint64_t v0)
{
  pair_atomic(sr, rd_atomic);
  Mb = ep_reg_mr(&eb, TVA, 4096, RCT_ACCESS_LOCAL_WRITE | RCT_ACCESS_REMOTE_ATOMIC);
  Ma = ep_reg_mr(&ea, 0x10000, 4096, RCT_ACCESS_LOCAL_WRITE);
  put64(Mb->buf + 8, v0);
  memset(Ma->buf, 0xee, 256);
}

/* [REQ-ATOM-2] [REQ-ATOM-3] [RESP-ATOM-1] [HDR-ATOM-3] [SR-ATOM-2]: CAS that
 * succeeds, CAS that fails, FAA: the returned values and the target */
static void cas_faa(bool sr)
{
  struct link l;
  pair_with_target(sr, 4, 100);
  link_init(&l);
  ck_assert_int_eq(post_atomic(&ea, 1, RCT_WR_ATOMIC_CMP_AND_SWP, Ma, 0, TVA + 8, Mb->rkey, 100, 555), RCT_OK);
  ck_assert_int_eq(post_atomic(&ea, 2, RCT_WR_ATOMIC_CMP_AND_SWP, Ma, 8, TVA + 8, Mb->rkey, 100, 777), RCT_OK);
  ck_assert_int_eq(post_atomic(&ea, 3, RCT_WR_ATOMIC_FETCH_AND_ADD, Ma, 16, TVA + 8, Mb->rkey, 0xffffffffffffffffull, 0), RCT_OK);
  link_run(&l, &ea, &eb, 100000000ull);
  expect_atomic_wc(&ea.scq, 1, RCT_WC_SUCCESS, RCT_WC_COMP_SWAP);
  expect_atomic_wc(&ea.scq, 2, RCT_WC_SUCCESS, RCT_WC_COMP_SWAP);
  expect_atomic_wc(&ea.scq, 3, RCT_WC_SUCCESS, RCT_WC_FETCH_ADD);
  ck_assert_uint_eq(get64(Ma->buf), 100);              /* swapped */
  ck_assert_uint_eq(get64(Ma->buf + 8), 555);          /* compare failed: the value, unchanged */
  ck_assert_uint_eq(get64(Ma->buf + 16), 555);
  ck_assert_uint_eq(get64(Mb->buf + 8), 554);          /* 555 + (2^64 - 1) */
  ck_assert_uint_eq(Ma->buf[24], 0xee);                /* nothing past the 8 bytes */
  ck_assert_uint_eq(eb.qp.resp.msn, 3);
  ck_assert_uint_eq(ea.qp.base.cnt.tx_retransmits, 0);
  pair_teardown();
}

START_TEST(test_atomic_cas_faa_gbn)
{
  cas_faa(false);
}
END_TEST

START_TEST(test_atomic_cas_faa_sr)
{
  cas_faa(true);
}
END_TEST

/* Drop B's first n ATOMIC_ACKs. */
static unsigned acks_to_drop;
static bool drop_atomic_acks(void *ctx, bool from_a, unsigned n, const struct rct_pkt *p)
{
  (void)ctx; (void)n;
  if (from_a || p->h.bth.opcode != OP_ATOMIC_ACK || !acks_to_drop)
    return false;
  acks_to_drop--;
  return true;
}

/* [RESP-ATOM-3] [REQ-ATOM-2] a lost ATOMIC_ACK: the retransmitted request
 * is answered from the saved result and never runs twice */
static void lost_ack(bool sr)
{
  struct link l;
  pair_with_target(sr, 4, 41);
  link_init(&l);
  l.drop = drop_atomic_acks;
  acks_to_drop = 2;
  ck_assert_int_eq(post_atomic(&ea, 1, RCT_WR_ATOMIC_FETCH_AND_ADD, Ma, 0, TVA + 8, Mb->rkey, 1, 0), RCT_OK);
  link_run(&l, &ea, &eb, 1000000000ull);
  expect_atomic_wc(&ea.scq, 1, RCT_WC_SUCCESS, RCT_WC_FETCH_ADD);
  ck_assert_uint_eq(get64(Ma->buf), 41);               /* the first execution's value */
  ck_assert_uint_eq(get64(Mb->buf + 8), 42);           /* once */
  ck_assert_uint_ge(ea.qp.base.cnt.tx_retransmits, 2);
  ck_assert_uint_eq(eb.qp.base.cnt.read_replays, eb.qp.base.cnt.rx_dup);
  ck_assert_uint_ge(eb.qp.base.cnt.read_replays, 2);
  ck_assert_uint_eq(l.dropped, 2);
  pair_teardown();
}

START_TEST(test_atomic_lost_ack_runs_once_gbn)
{
  lost_ack(false);
}
END_TEST

START_TEST(test_atomic_lost_ack_runs_once_sr)
{
  lost_ack(true);
}
END_TEST

/* [REQ-ATOM-2] [RESP-ATOM-4] pipelined FAAs within the credit: every one
 * runs once, each sees the value the one before left */
START_TEST(test_atomic_faa_pipelined)
{
  struct link l;
  uint8_t seen[32] = { 0 };
  pair_with_target(false, 4, 0);
  link_init(&l);
  for (int i = 0; i < 32; i++)
    ck_assert_int_eq(post_atomic(&ea, 10 + (uint64_t)i, RCT_WR_ATOMIC_FETCH_AND_ADD, Ma, 8 * (uint32_t)i,
                                 TVA + 8, Mb->rkey, 1, 0), RCT_OK);
  link_run(&l, &ea, &eb, 100000000ull);
  for (int i = 0; i < 32; i++) {
    uint64_t v = get64(Ma->buf + 8 * i);
    expect_atomic_wc(&ea.scq, 10 + (uint64_t)i, RCT_WC_SUCCESS, RCT_WC_FETCH_ADD);
    ck_assert_uint_lt(v, 32);
    ck_assert_uint_eq(seen[v]++, 0);
  }
  ck_assert_uint_eq(get64(Mb->buf + 8), 32);
  pair_teardown();
}
END_TEST

/* Inject a response of the scripted peer to ea: opcode op at psn, an ACK
 * syndrome, msn, the AtomicAckETH orig, payload pay[0..len). */
static void inject_resp(uint64_t now, uint8_t op, uint32_t psn, uint32_t msn, uint64_t orig, const void *pay,
                        uint32_t len)
{
  struct peer pr;
  struct rct_hdr h;
  peer_for(&pr, &ea);
  rct_hdr_clear(&h);
  h.bth.opcode = op;
  h.bth.psn = psn;
  h.aeth.syndrome = 0x1f;
  h.aeth.msn = msn;
  h.atom_orig = orig;
  inject(&ea, &pr, now, &h, pay, len);
}

/* [REQ-ATOM-2] an atomic holds a credit of max_rd_atomic like a READ: with
 * 1, the second waits for the first's ATOMIC_ACK */
START_TEST(test_atomic_credit)
{
  struct rct_pkt p;
  pair_with_target(false, 1, 0);
  ck_assert_int_eq(post_atomic(&ea, 1, RCT_WR_ATOMIC_FETCH_AND_ADD, Ma, 0, TVA, 0x99, 1, 0), RCT_OK);
  ck_assert_int_eq(post_atomic(&ea, 2, RCT_WR_ATOMIC_FETCH_AND_ADD, Ma, 8, TVA, 0x99, 1, 0), RCT_OK);
  ck_assert(expect_frame(&ea, 0, &p, fb));
  ck_assert_uint_eq(p.h.bth.opcode, OP_FETCH_ADD);
  ck_assert_uint_eq(p.h.bth.ackreq, 1);
  ck_assert(p.h.atom.va == TVA && p.h.atom.rkey == 0x99 && p.h.atom.swap_add == 1 && p.h.atom.compare == 0);
  expect_nothing(&ea, 0);
  inject_resp(10, OP_ATOMIC_ACK, p.h.bth.psn, 1, 0x1234, NULL, 0);
  expect_atomic_wc(&ea.scq, 1, RCT_WC_SUCCESS, RCT_WC_FETCH_ADD);
  ck_assert_uint_eq(get64(Ma->buf), 0x1234);
  ck_assert(expect_frame(&ea, 10, &p, fb));
  ck_assert_uint_eq(p.h.bth.opcode, OP_FETCH_ADD);
  pair_teardown();
}
END_TEST

/* [REQ-ATOM-3] a READ response where the ATOMIC_ACK belongs is a bad response */
START_TEST(test_atomic_wrong_response)
{
  struct rct_pkt p;
  uint8_t pay[8] = { 0 };
  pair_with_target(false, 4, 0);
  ck_assert_int_eq(post_atomic(&ea, 1, RCT_WR_ATOMIC_FETCH_AND_ADD, Ma, 0, TVA, 0x99, 1, 0), RCT_OK);
  ck_assert(expect_frame(&ea, 0, &p, fb));
  inject_resp(10, OP_READ_RESP_ONLY, p.h.bth.psn, 1, 0, pay, 8);
  expect_atomic_wc(&ea.scq, 1, RCT_WC_BAD_RESP_ERR, 0);
  ck_assert_uint_eq(Ma->buf[0], 0xee);
  pair_teardown();
}
END_TEST

/* [SR-ATOM-2] [SR-ATOM-1] SR: an atomic waits for every WR before it to
 * complete, and the WR after it waits for the atomic */
START_TEST(test_atomic_sr_fence)
{
  struct rct_pkt p;
  struct peer pr;
  pair_with_target(true, 4, 0);
  ck_assert_int_eq(post_send(&ea, 1, RCT_WR_RDMA_WRITE, Ma, 0, 16, 0x5000, 0x77, 0), RCT_OK);
  ck_assert_int_eq(post_atomic(&ea, 2, RCT_WR_ATOMIC_CMP_AND_SWP, Ma, 32, TVA, 0x99, 5, 6), RCT_OK);
  ck_assert_int_eq(post_send(&ea, 3, RCT_WR_RDMA_WRITE, Ma, 0, 16, 0x5000, 0x77, 0), RCT_OK);
  ck_assert(expect_frame(&ea, 0, &p, fb));
  ck_assert_uint_eq(p.h.bth.opcode, 0xCA);             /* SR WRITE ONLY */
  expect_nothing(&ea, 0);
  peer_for(&pr, &ea);
  inject_ack(&ea, &pr, 10, AETH_ACK | 0x1f, p.h.bth.psn, 1);
  expect_wc(&ea.scq, 1, RCT_WC_SUCCESS);
  ck_assert(expect_frame(&ea, 10, &p, fb));
  ck_assert_uint_eq(p.h.bth.opcode, 0xD3);             /* SR COMPARE_SWAP */
  ck_assert(p.h.atom.compare == 5 && p.h.atom.swap_add == 6);
  expect_nothing(&ea, 10);
  inject_resp(20, OP_ATOMIC_ACK, p.h.bth.psn, 2, 5, NULL, 0);
  expect_atomic_wc(&ea.scq, 2, RCT_WC_SUCCESS, RCT_WC_COMP_SWAP);
  ck_assert(expect_frame(&ea, 20, &p, fb));
  ck_assert_uint_eq(p.h.bth.opcode, 0xCA);
  pair_teardown();
}
END_TEST

/* ---- the responder against a scripted requester ---- */

#define A (fx_a())
#define P (fx_peer())
static struct host_mr *T;              /* A's target: remote atomic at 0x40000 */

static void resp_setup(void)
{
  struct conn_opts o;
  conn_defaults(&o);
  o.access |= RCT_ACCESS_REMOTE_ATOMIC;
  fx_setup_opts(&o);
  T = ep_reg_mr(A, 0x40000, 4096, RCT_ACCESS_LOCAL_WRITE | RCT_ACCESS_REMOTE_ATOMIC);
  put64(T->buf, 1000);
}

static void inject_atomic(uint64_t now, uint8_t op, uint32_t psn, uint64_t va, uint32_t rkey, uint64_t sa,
                          uint64_t cmp)
{
  struct rct_hdr h;
  rct_hdr_clear(&h);
  h.bth.opcode = op;
  h.bth.psn = psn;
  h.bth.ackreq = 1;
  h.atom.va = va;
  h.atom.rkey = rkey;
  h.atom.swap_add = sa;
  h.atom.compare = cmp;
  inject(A, P, now, &h, NULL, 0);
}

/* Expect an ATOMIC_ACK for psn with msn, carrying orig. */
static void expect_atomic_ack(uint64_t now, uint32_t psn, uint32_t msn, uint64_t orig)
{
  struct rct_pkt p;
  ck_assert(expect_frame(A, now, &p, fb));
  ck_assert_uint_eq(p.h.bth.opcode, OP_ATOMIC_ACK);
  ck_assert_uint_eq(p.h.bth.psn, psn);
  ck_assert_uint_eq(p.h.aeth.syndrome, 0x1f);
  ck_assert_uint_eq(p.h.aeth.msn, msn);
  ck_assert_uint_eq(p.h.atom_orig, orig);
}

static void expect_nak(uint64_t now, uint8_t syn, uint32_t psn)
{
  struct rct_pkt p;
  ck_assert(expect_frame(A, now, &p, fb));
  ck_assert_uint_eq(p.h.bth.opcode, OP_ACK);
  ck_assert_uint_eq(p.h.aeth.syndrome, syn);
  ck_assert_uint_eq(p.h.bth.psn, psn);
}

/* [RESP-ATOM-1] [RESP-ATOM-3] [RESP-READ-4] duplicates answered from the
 * saved results while held; one retired by max_dest_rd_atomic newer
 * atomics matches nothing and is dropped, never run again */
START_TEST(test_atomic_duplicate_beyond_saved)
{
  resp_setup();
  for (uint32_t i = 0; i < 5; i++) {
    inject_atomic(0, OP_FETCH_ADD, E0 + i, 0x40000, T->rkey, 10, 0);
    expect_atomic_ack(0, E0 + i, i + 1, 1000 + 10 * i);
  }
  ck_assert_uint_eq(get64(T->buf), 1050);
  inject_atomic(1, OP_FETCH_ADD, E0 + 4, 0x40000, T->rkey, 10, 0);   /* held: the saved value */
  expect_atomic_ack(1, E0 + 4, 5, 1040);
  inject_atomic(1, OP_FETCH_ADD, E0 + 1, 0x40000, T->rkey, 10, 0);
  expect_atomic_ack(1, E0 + 1, 5, 1010);
  inject_atomic(1, OP_FETCH_ADD, E0, 0x40000, T->rkey, 10, 0);        /* retired (4 resources) */
  expect_nothing(A, 1);
  inject_atomic(1, OP_FETCH_ADD, E0 + 2, 0x40008, T->rkey, 10, 0);    /* another target */
  expect_nothing(A, 1);
  ck_assert_uint_eq(get64(T->buf), 1050);              /* nothing ran twice */
  ck_assert_uint_eq(A->qp.resp.epsn, E0 + 5);
  ck_assert_uint_eq(A->qp.base.cnt.read_replays, 2);
  ck_assert_uint_eq(A->qp.base.cnt.rx_dup, 4);
  fx_teardown();
}
END_TEST

/* [RESP-ATOM-2] a misaligned target: NAK invalid request, nothing changed, QP to ERR */
START_TEST(test_atomic_misaligned)
{
  resp_setup();
  inject_atomic(0, OP_CMP_SWAP, E0, 0x40004, T->rkey, 1, 0);
  expect_nak(0, AETH_NAK_INV_REQ, E0);
  ck_assert_uint_eq(get64(T->buf), 1000);
  ck_assert_int_eq(A->qp.base.attr.qp_state, RCT_QPS_ERR);
  fx_teardown();
}
END_TEST

/* [RESP-ATOM-2] out of the MR, no IBV_ACCESS_REMOTE_ATOMIC on the MR or
 * on the QP, a bad R_Key: NAK remote access error, nothing changed */
START_TEST(test_atomic_access_errors)
{
  struct host_mr *noatom;
  struct conn_opts o;
  resp_setup();
  inject_atomic(0, OP_FETCH_ADD, E0, 0x40000 + 4096, T->rkey, 1, 0);    /* past the end */
  expect_nak(0, AETH_NAK_REM_ACC, E0);
  fx_teardown();
  resp_setup();
  noatom = ep_reg_mr(A, 0x50000, 4096, RCT_ACCESS_LOCAL_WRITE | RCT_ACCESS_REMOTE_WRITE);
  put64(noatom->buf, 7);
  inject_atomic(0, OP_FETCH_ADD, E0, 0x50000, noatom->rkey, 1, 0);      /* MR without the right */
  expect_nak(0, AETH_NAK_REM_ACC, E0);
  ck_assert_uint_eq(get64(noatom->buf), 7);
  fx_teardown();
  resp_setup();
  inject_atomic(0, OP_FETCH_ADD, E0, 0x40000, T->rkey + 1, 1, 0);        /* no such key */
  expect_nak(0, AETH_NAK_REM_ACC, E0);
  fx_teardown();
  conn_defaults(&o);                                   /* the QP does not allow atomics */
  fx_setup_opts(&o);
  T = ep_reg_mr(A, 0x40000, 4096, RCT_ACCESS_LOCAL_WRITE | RCT_ACCESS_REMOTE_ATOMIC);
  put64(T->buf, 3);
  inject_atomic(0, OP_FETCH_ADD, E0, 0x40000, T->rkey, 1, 0);
  expect_nak(0, AETH_NAK_REM_ACC, E0);
  ck_assert_uint_eq(get64(T->buf), 3);
  fx_teardown();
}
END_TEST

/* One atomic from A to B's counter (9) at va, which B refuses with st:
 * nothing changes on either side. */
static void refused_atomic(enum rct_wr_opcode op, uint64_t va, enum rct_wc_status st)
{
  struct link l;
  pair_with_target(false, 4, 9);
  link_init(&l);
  ck_assert_int_eq(post_atomic(&ea, 1, op, Ma, 0, va, Mb->rkey, 9, 1), RCT_OK);
  link_run(&l, &ea, &eb, 100000000ull);
  expect_atomic_wc(&ea.scq, 1, st, 0);
  ck_assert_uint_eq(get64(Mb->buf + 8), 9);
  ck_assert_uint_eq(Ma->buf[0], 0xee);
  pair_teardown();
}

/* [REQ-ATOM-3] [WC-STATUS-2] the requester's completions for the NAKs, over the link */
START_TEST(test_atomic_nak_statuses)
{
  refused_atomic(RCT_WR_ATOMIC_FETCH_AND_ADD, TVA + 4, RCT_WC_REM_INV_REQ_ERR);
  refused_atomic(RCT_WR_ATOMIC_CMP_AND_SWP, TVA + 4096, RCT_WC_REM_ACCESS_ERR);
}
END_TEST

/* [OPC-VAL-1] SEND with invalidate stays unsupported: NAK invalid request */
START_TEST(test_atomic_send_inv_unsupported)
{
  struct rct_hdr h;
  resp_setup();
  rct_hdr_clear(&h);
  h.bth.opcode = OP_SEND_ONLY_INV;
  h.bth.psn = E0;
  h.bth.ackreq = 1;
  inject(A, P, 0, &h, NULL, 0);
  expect_nak(0, AETH_NAK_INV_REQ, E0);
  fx_teardown();
}
END_TEST

Suite *suite_atomic(void)
{
  Suite *s = suite_create("atomic");
  TCase *t = tcase_create("atomic");
  tcase_add_test(t, test_atomic_wire_headers);
  tcase_add_test(t, test_atomic_post_checks);
  tcase_add_test(t, test_atomic_cas_faa_gbn);
  tcase_add_test(t, test_atomic_cas_faa_sr);
  tcase_add_test(t, test_atomic_lost_ack_runs_once_gbn);
  tcase_add_test(t, test_atomic_lost_ack_runs_once_sr);
  tcase_add_test(t, test_atomic_faa_pipelined);
  tcase_add_test(t, test_atomic_credit);
  tcase_add_test(t, test_atomic_wrong_response);
  tcase_add_test(t, test_atomic_sr_fence);
  tcase_add_test(t, test_atomic_duplicate_beyond_saved);
  tcase_add_test(t, test_atomic_misaligned);
  tcase_add_test(t, test_atomic_access_errors);
  tcase_add_test(t, test_atomic_nak_statuses);
  tcase_add_test(t, test_atomic_send_inv_unsupported);
  suite_add_tcase(s, t);
  return s;
}
