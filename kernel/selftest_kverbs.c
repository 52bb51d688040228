// selftest_kverbs.c: the kernel as an RDMA consumer, at every boot. A
// kernel thread, with an owner of its own (no process), uses only
// kernel/rdma/kverbs.h: a PD, an MR over kalloc'd pages on each side (not
// adjacent, at an address that is no page boundary), two CQs with
// completion handlers, and a pair of QPs connected in loopback on the
// local device. It moves KV_LEN bytes (several MTU-sized frames) by SEND,
// RDMA WRITE and RDMA READ, checks every byte and the bytes around them,
// and takes every completion only after its CQ's handler said it came (a
// handler that is never called fails the test within KV_WAIT_NS). Then it
// tears everything down and checks that none of its PDs, MRs, CQs, QPs
// and AHs is live, that the ring pool's pages are all free or held by a
// live ring, and that every page lost the MR's reference.
//
// A pair of one QP type is one function in pair_tests[]: rc_pair, and
// ud_pair, two UD QPs in loopback through an address handle: SEND and
// SEND_WITH_IMM (the second to the QP's own, controlled Q_Key), each
// datagram's GRH area (20 zero bytes, then the IPv4 header), payload,
// length, immediate and source QPN checked. A failure prints
// "selftest: kverbs FAIL <pair>: <why>" and panics; the boot argument
// "selftest" prints "selftest: kverbs PASS ..." (tests/harness/
// test_kernel.py checks it).
#include "lib/types.h"
#include "lib/riscv.h"
#include "lib/bootarg.h"
#include "lib/klib.h"
#include "core/lock.h"
#include "core/proc.h"
#include "core/printk.h"
#include "core/pmem.h"
#include "core/timer.h"
#include "proc/lifecycle.h"
#include "rdma/kverbs.h"
#include "selftest.h"

#define KV_PAGES    8                     // each side's buffer
#define KV_REGION   (2 * PGSIZE)          // the buffer's four regions, one per transfer
#define KV_OFF      100                   // each transfer starts this far into its region
#define KV_LEN      6000                  // bytes per transfer: 6 frames at the default MTU of 1024
#define KV_VA       0x100000000ULL        // side i's MR starts at KV_VA + i * KV_SPAN + KV_OFF
#define KV_SPAN     ((uint64)KV_PAGES * PGSIZE)
#define KV_CQE      16
#define KV_WAIT_NS  30000000000ULL        // far bound: a loaded host pauses a vCPU, never for 30 s
#define KV_UD_LEN   200                   // bytes per datagram: below the smallest UD MTU (256)
#define KV_GRH      40                    // a UD receive's GRH area [UD-RECV-2]
#define KV_QKEY     0x11111111u           // the UD pair's Q_Key (the Linux peer's convention)
_Static_assert(4 * KV_REGION <= KV_SPAN && KV_OFF + KV_LEN + 1 <= KV_REGION, "regions fit the buffer");

enum { R_SEND, R_WRITE, R_READ };         // a region per transfer

struct side {
  uint64 pa[KV_PAGES];
  struct rdma_mr *mr;
  struct rdma_mr_keys keys;
  struct rdma_cq *cq;
  struct rdma_qp *qp;
  uint32 qpn, psn;
  int calls;                              // completion handler calls (kt.lock)
  int overruns;
};

static struct {
  struct spinlock lock;                   // the handlers' counts; never held across kv_*
  struct kv_owner owner;
  struct rdma_pd *pd;
  struct side s[2];
  struct rdma_ah *ah;                     // the UD pair's: this device's own address
  int async_events;
} kt;

// The completion handler (kverbs.h: rdma.lock held, no sleeping, no kv_*):
// counts the call and wakes the test thread.
static void on_comp(struct rdma_cq *cq, void *ctx, uint32 flags) {
  struct side *s = ctx;
  spin_lock(&kt.lock);
  s->calls++;
  if (flags & KV_COMP_OVERRUN) s->overruns++;
  proc_wakeup(s);
  spin_unlock(&kt.lock);
}

static void on_async(struct kv_owner *o, const struct kv_async_event *ev) {
  spin_lock(&kt.lock);
  kt.async_events++;
  spin_unlock(&kt.lock);
}

static int calls(struct side *s) {
  spin_lock(&kt.lock);
  int n = s->calls;
  spin_unlock(&kt.lock);
  return n;
}

// Sleeps until s's handler has been called more than `than` times: 0, or
// -1 at the far deadline.
static int wait_calls(struct side *s, int than) {
  uint64 deadline = clock_ns() + KV_WAIT_NS;
  spin_lock(&kt.lock);
  while (s->calls <= than && clock_ns() < deadline)
    proc_sleep_until(s, &kt.lock, deadline);
  int ok = s->calls > than;
  spin_unlock(&kt.lock);
  return ok ? 0 : -1;
}

// s's next completion into *wc, once s's handler has been called since
// `before` (read before the work was posted). NULL, or why not.
static const char *next_wc(struct side *s, int before, struct rct_wc *wc) {
  for (;;) {
    int seen = calls(s);
    int n = kv_poll_cq(&kt.owner, s->cq, wc, 1);
    if (n < 0) return "kv_poll_cq failed";
    if (n == 1) return wait_calls(s, before) < 0 ? "a completion, but no handler call for it" : NULL;
    if (wait_calls(s, seen) < 0) return "no completion handler call within 30 s";
  }
}

// Byte off of s's buffer (from the MR's first page), through its page.
static uint8 *byte_at(struct side *s, uint64 off) {
  return (uint8 *)(s->pa[off / PGSIZE] + off % PGSIZE);
}

static uint64 region_va(int i, int r) { return KV_VA + (uint64)i * KV_SPAN + (uint64)r * KV_REGION + KV_OFF; }

// Region r of side i: every byte from its pattern, or 0 with zero.
static void fill(int i, int r, int zero) {
  for (uint64 k = 0; k < KV_REGION; k++)
    *byte_at(&kt.s[i], (uint64)r * KV_REGION + k) = zero ? 0 : (uint8)(k * 31 + r * 7 + i + 1);
}

// Did region r of side `to` receive side from's bytes, and stay 0 around them?
static const char *check(int from, int r, int to) {
  for (uint64 k = 0; k < KV_REGION; k++) {
    uint8 got = *byte_at(&kt.s[to], (uint64)r * KV_REGION + k);
    int inside = k >= KV_OFF && k < KV_OFF + KV_LEN;
    uint8 want = inside ? *byte_at(&kt.s[from], (uint64)r * KV_REGION + k) : 0;
    if (got != want) {
      kprintf("selftest: kverbs region %d byte %d: 0x%x, expected 0x%x\n", r, (int)k, got, want);
      return inside ? "a byte moved wrong" : "a byte outside the transfer changed";
    }
  }
  return NULL;
}

// One completion of side i: the right WR, opcode and length, successful.
static const char *expect_wc(int i, int before, uint64 wr_id, int opcode) {
  struct rct_wc wc;
  const char *why = next_wc(&kt.s[i], before, &wc);
  if (why) return why;
  if (wc.status != RCT_WC_SUCCESS) return "a completion with an error status";
  if (wc.wr_id != wr_id || (int)wc.opcode != opcode) return "a completion of another WR";
  if ((opcode == RCT_WC_RECV || opcode == RCT_WC_RDMA_READ) && wc.byte_len != KV_LEN)
    return "a completion with the wrong length";
  return NULL;
}

// Posts one send WR of opcode on side 0 from its region r, signaled.
static const char *post_one(int opcode, int r, uint64 remote, uint64 wr_id) {
  struct rct_sge sge = { region_va(0, r), KV_LEN, kt.s[0].keys.lkey };
  struct rct_send_wr wr = { .wr_id = wr_id, .opcode = opcode, .send_flags = RCT_SEND_SIGNALED,
                            .sg_list = &sge, .num_sge = 1, .remote_addr = remote,
                            .rkey = kt.s[1].keys.rkey };
  int err;
  return kv_post_send(&kt.owner, kt.s[0].qp, &wr, 1, &err) == 1 ? NULL : "kv_post_send refused the WR";
}

// SEND side 0 -> side 1's posted receive, WRITE side 0 -> side 1, READ
// side 1 -> side 0; every byte checked.
static const char *transfers(void) {
  const char *why;
  fill(0, R_SEND, 0); fill(1, R_SEND, 1);
  struct rct_sge rsge = { region_va(1, R_SEND), KV_LEN + 1, kt.s[1].keys.lkey };
  struct rct_recv_wr rwr = { .wr_id = 10, .sg_list = &rsge, .num_sge = 1 };
  int err, b0 = calls(&kt.s[0]), b1 = calls(&kt.s[1]);
  if (kv_post_recv(&kt.owner, kt.s[1].qp, &rwr, 1, &err) != 1) return "kv_post_recv refused the WR";
  if ((why = post_one(RCT_WR_SEND, R_SEND, 0, 11)) || (why = expect_wc(1, b1, 10, RCT_WC_RECV)) ||
      (why = expect_wc(0, b0, 11, RCT_WC_SEND)) || (why = check(0, R_SEND, 1))) return why;

  fill(0, R_WRITE, 0); fill(1, R_WRITE, 1);
  b0 = calls(&kt.s[0]);
  if ((why = post_one(RCT_WR_RDMA_WRITE, R_WRITE, region_va(1, R_WRITE), 12)) ||
      (why = expect_wc(0, b0, 12, RCT_WC_RDMA_WRITE)) || (why = check(0, R_WRITE, 1))) return why;

  fill(1, R_READ, 0); fill(0, R_READ, 1);
  b0 = calls(&kt.s[0]);
  if ((why = post_one(RCT_WR_RDMA_READ, R_READ, region_va(1, R_READ), 13)) ||
      (why = expect_wc(0, b0, 13, RCT_WC_RDMA_READ)) || (why = check(1, R_READ, 0))) return why;
  return NULL;
}

// Side i's pages, MR and CQ (its handler's context: the side).
static const char *side_setup(int i) {
  struct side *s = &kt.s[i];
  for (int p = 0; p < KV_PAGES; p++)
    if (!(s->pa[p] = (uint64)page_alloc())) return "no pages";
  uint32 access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  s->mr = kv_reg_kernel_mr(&kt.owner, kt.pd, KV_VA + (uint64)i * KV_SPAN, KV_SPAN, s->pa, access, &s->keys);
  if (!s->mr) return "kv_reg_kernel_mr failed";
  if (kv_create_cq(&kt.owner, KV_CQE, on_comp, s, &s->cq) != 0) return "kv_create_cq failed";
  return NULL;
}

// Side i's QP of type: the side's CQ for both queues.
static const char *qp_setup(int i, int type) {
  struct side *s = &kt.s[i];
  struct kv_qp_init in = { .qp_type = type, .pd = kt.pd, .send_cq = s->cq, .recv_cq = s->cq,
                           .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 };
  if (kv_create_qp(&kt.owner, &in, &s->qp) != 0) return "kv_create_qp failed";
  s->qpn = in.qp_num;
  s->psn = 0x1000 * (uint32)(i + 1);
  return NULL;
}

// RC: side i's QP through INIT and RTR to RTS, its peer side 1 - i on this
// device's own address (loopback).
static const char *rc_connect(int i, const struct rdma_port_info *pi) {
  struct side *s = &kt.s[i], *peer = &kt.s[1 - i];
  struct rdma_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
                            .qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                               IBV_ACCESS_REMOTE_READ };
  if (kv_modify_qp(&kt.owner, s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                   IBV_QP_ACCESS_FLAGS) != 0) return "modify to INIT failed";
  a = (struct rdma_qp_attr){ .qp_state = IBV_QPS_RTR, .path_mtu = pi->active_mtu,
                             .dest_qp_num = peer->qpn, .rq_psn = peer->psn, .max_dest_rd_atomic = 16,
                             .min_rnr_timer = 1, .dipv4 = pi->ipv4, .hop_limit = 64 };
  memmove(a.dmac, pi->mac, 6);
  if (kv_modify_qp(&kt.owner, s->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                   IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) != 0)
    return "modify to RTR failed";
  a = (struct rdma_qp_attr){ .qp_state = IBV_QPS_RTS, .sq_psn = s->psn, .timeout = 14,
                             .retry_cnt = 7, .rnr_retry = 7, .max_rd_atomic = 16 };
  if (kv_modify_qp(&kt.owner, s->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
                   IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC) != 0)
    return "modify to RTS failed";
  return NULL;
}

// Everything of both sides goes, each through its own call (what exists
// of it: teardown follows a failed setup too); every page must have lost
// the MR's reference.
static const char *teardown(void) {
  const char *why = NULL;
  for (int i = 0; i < 2; i++) {
    struct side *s = &kt.s[i];
    if (s->qp && kv_destroy_qp(&kt.owner, s->qp) != 0) why = "kv_destroy_qp failed";
    if (s->cq && kv_destroy_cq(&kt.owner, s->cq) != 0) why = "kv_destroy_cq failed";
    if (s->mr && kv_dereg_mr(&kt.owner, s->mr) != 0) why = "kv_dereg_mr failed";
    for (int p = 0; p < KV_PAGES && s->pa[p]; p++) {
      if (page_refs(s->pa[p]) != 1 && !why) why = "a page kept the MR's reference";
      page_put(s->pa[p]);
    }
  }
  if (kt.ah && kv_destroy_ah(&kt.owner, kt.ah) != 0) why = "kv_destroy_ah failed";
  if (kt.pd && kv_dealloc_pd(&kt.owner, kt.pd) != 0) why = "kv_dealloc_pd failed";
  return why;
}

// The RC pair: set up, connect, move the data, tear down.
static const char *rc_pair(const struct rdma_port_info *pi) {
  const char *why = NULL;
  if (!(kt.pd = kv_alloc_pd(&kt.owner))) why = "kv_alloc_pd failed";
  for (int i = 0; i < 2 && !why; i++)
    if ((why = side_setup(i)) == NULL) why = qp_setup(i, KV_QPT_RC);
  for (int i = 0; i < 2 && !why; i++) why = rc_connect(i, pi);
  if (!why) why = transfers();
  const char *down = teardown();
  return why ? why : down;
}

// UD: side i's QP through INIT (its Q_Key) and RTR to RTS [UD-STATE-1].
static const char *ud_ready(int i) {
  struct side *s = &kt.s[i];
  struct rdma_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = KV_QKEY };
  if (kv_modify_qp(&kt.owner, s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY) != 0)
    return "UD modify to INIT failed";
  a = (struct rdma_qp_attr){ .qp_state = IBV_QPS_RTR };
  if (kv_modify_qp(&kt.owner, s->qp, &a, IBV_QP_STATE) != 0) return "UD modify to RTR failed";
  a = (struct rdma_qp_attr){ .qp_state = IBV_QPS_RTS, .sq_psn = s->psn };
  if (kv_modify_qp(&kt.owner, s->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) != 0) return "UD modify to RTS failed";
  return NULL;
}

// One datagram of opcode from side 0's region r to side 1's, to qkey
// (KV_QKEY or RCT_QKEY_CONTROLLED); the receive checked: status, length,
// GRH flag and area, immediate, source QPN, and every byte around it.
static const char *ud_datagram(int r, int opcode, uint32 qkey, uint64 id) {
  struct rct_wc wc;
  const char *why;
  fill(0, r, 0); fill(1, r, 1);
  for (int k = 0; k < KV_GRH; k++) *byte_at(&kt.s[1], (uint64)r * KV_REGION + KV_OFF + k) = 0xee;   // must be written
  struct rct_sge rsge = { region_va(1, r), KV_GRH + KV_UD_LEN, kt.s[1].keys.lkey };
  struct rct_recv_wr rwr = { .wr_id = id, .sg_list = &rsge, .num_sge = 1 };
  struct rct_sge sge = { region_va(0, r), KV_UD_LEN, kt.s[0].keys.lkey };
  struct kv_ud_send_wr wr = { .wr = { .wr_id = id + 1, .opcode = opcode, .send_flags = RCT_SEND_SIGNALED,
                                      .sg_list = &sge, .num_sge = 1, .imm_data = 0xabc0000u + (uint32)id },
                              .ah = kt.ah, .remote_qpn = kt.s[1].qpn, .remote_qkey = qkey };
  int err, b0 = calls(&kt.s[0]), b1 = calls(&kt.s[1]);
  if (kv_post_recv(&kt.owner, kt.s[1].qp, &rwr, 1, &err) != 1) return "kv_post_recv refused the UD WR";
  if (kv_post_send_ud(&kt.owner, kt.s[0].qp, &wr, 1, &err) != 1) return "kv_post_send_ud refused the WR";
  if ((why = expect_wc(0, b0, id + 1, RCT_WC_SEND))) return why;
  if ((why = next_wc(&kt.s[1], b1, &wc))) return why;
  if (wc.status != RCT_WC_SUCCESS || wc.wr_id != id || wc.opcode != RCT_WC_RECV) return "UD receive failed";
  if (wc.byte_len != KV_GRH + KV_UD_LEN || !(wc.wc_flags & RCT_WC_GRH)) return "UD receive: length or GRH flag";
  if (wc.src_qp != kt.s[0].qpn) return "UD receive: wrong source QPN";
  int imm = opcode == RCT_WR_SEND_WITH_IMM;
  if (!(wc.wc_flags & RCT_WC_WITH_IMM) != !imm || (imm && wc.imm_data != wr.wr.imm_data))
    return "UD receive: immediate data";
  for (uint64 k = 0; k < KV_REGION; k++) {
    uint8 got = *byte_at(&kt.s[1], (uint64)r * KV_REGION + k);
    uint8 want = 0;
    if (k >= KV_OFF + KV_GRH && k < KV_OFF + KV_GRH + KV_UD_LEN)
      want = *byte_at(&kt.s[0], (uint64)r * KV_REGION + k - KV_GRH);
    else if (k == KV_OFF + KV_GRH - 20)
      want = 0x45;                        // the GRH area's IPv4 header: version 4, IHL 5
    int in_ip = k > KV_OFF + KV_GRH - 20 && k < KV_OFF + KV_GRH;
    if (!in_ip && got != want) {
      kprintf("selftest: kverbs UD region %d byte %d: 0x%x, expected 0x%x\n", r, (int)k, got, want);
      return "a UD byte (GRH area, payload or around them) is wrong";
    }
  }
  return NULL;
}

// The UD pair: an AH to this device's own address (its MAC resolved by
// the kernel), two datagrams, tear down.
static const char *ud_pair(const struct rdma_port_info *pi) {
  const char *why = NULL;
  struct rdma_ah_attr aa = { .dipv4 = pi->ipv4, .hop_limit = 64, .port_num = 1 };
  if (!(kt.pd = kv_alloc_pd(&kt.owner))) why = "kv_alloc_pd failed";
  for (int i = 0; i < 2 && !why; i++)
    if ((why = side_setup(i)) == NULL) why = qp_setup(i, KV_QPT_UD);
  for (int i = 0; i < 2 && !why; i++) why = ud_ready(i);
  if (!why && kv_create_ah(&kt.owner, kt.pd, &aa, &kt.ah) != 0) why = "kv_create_ah failed";
  if (!why) why = ud_datagram(R_SEND, RCT_WR_SEND, KV_QKEY, 20);
  if (!why) why = ud_datagram(R_WRITE, RCT_WR_SEND_WITH_IMM, RCT_QKEY_CONTROLLED, 30);
  const char *down = teardown();
  return why ? why : down;
}

static const struct { const char *name; const char *(*run)(const struct rdma_port_info *); } pair_tests[] = {
  { "rc", rc_pair },
  { "ud", ud_pair },
};

// None of the test's own objects live, and the ring pool balanced: the
// pages live rings hold (any owner's) plus the free ones are the whole
// pool. Only the owner's objects are counted: a process may create and
// destroy its own meanwhile (the shell runs while the test does).
static const char *all_gone(void) {
  struct kv_owner_stats a;
  kv_owner_stats(&kt.owner, &a);
  if (a.pds || a.mrs || a.cqs || a.qps || a.ahs || a.srqs) return "an object is still live";
  return a.pool_lost == 0 ? NULL : "ring pool pages not given back";
}

// arg: what runs once the test is done (selftest_kverbs_start's then).
static void kverbs_thread(void *arg) {
  void (*then)(void) = (void (*)(void))arg;
  struct rdma_port_info pi;
  spin_init(&kt.lock, "kverbs_test");
  kt.owner.async = on_async;
  kv_query_port(1, &pi);
  int handler_calls = 0;
  for (int t = 0; t < (int)ARRAY_LEN(pair_tests); t++) {
    memset(kt.s, 0, sizeof kt.s);
    kt.pd = NULL;
    kt.ah = NULL;
    const char *why = pair_tests[t].run(&pi);
    if (!why) why = all_gone();
    if (!why && (kt.async_events || kt.s[0].overruns || kt.s[1].overruns)) why = "an async event or overrun";
    if (why) {
      kprintf("selftest: kverbs FAIL %s: %s\n", pair_tests[t].name, why);
      panic("kverbs selftest failed");
    }
    handler_calls += kt.s[0].calls + kt.s[1].calls;
  }
  if (bootarg("selftest"))
    kprintf("selftest: kverbs PASS: %d pair(s), RC SEND/WRITE/READ of %d bytes each, UD SEND and "
            "SEND_WITH_IMM of %d, %d handler calls, all objects and ring pages back\n",
            (int)ARRAY_LEN(pair_tests), KV_LEN, KV_UD_LEN, handler_calls);
  if (then) then();
}

void selftest_kverbs_start(void (*then)(void)) {
  if (kthread_start("kverbs_test", kverbs_thread, (void *)then) < 0) panic("selftest: no slot for kverbs_test");
}
