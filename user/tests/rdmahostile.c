// rdmahostile: the hostile suite of the RDMA system calls.
//
// Owns a table of named cases that call the raw SYS_rdma_* syscalls
// (user/lib/ibverbs/rdma_sys.h) with everything a careless or malicious program may
// pass: bad pointers (null, unmapped, the kernel's RAM, devices and stacks,
// the trampoline, addresses past MAXVA, ranges that wrap past 2^64), bad
// handles (out of range, destroyed, another process's), every limit of
// rdma_query_device at, below and above its value, every invalid QP
// transition and attribute mask, exhaustion then release of every object
// kind, and kills of processes asleep in each blocking call. Libibverbs
// statuses (EINVAL, ENOMEM) are checked through ibverbs.c where the raw
// call has only -1. Expected results: uapi.h ("-1 on any error"),
// proto-spec/errors.md (rule IDs in the comments) and libibverbs' manual.
//
// Each case runs in its own child process (the shared runner, testrun.h);
// the runner compares the free pages (sysinfo) before the fork and after
// the wait, so a case whose objects are not all returned at exit fails too.
// Usage: rdmahostile [-l] [-x NAME]... [NAME]...  (no NAME: every case)
// Prints "test NAME: OK" or "test NAME: FAILED (why)" and "N passed, M failed".
#include "user.h"
#include "ibverbs.h"
#include "rdma_sys.h"
#include "ucma_sys.h"
#include "rdma_util.h"
#include "rdma_hostile.h"
#include "testrun.h"

#define PG HOSTILE_PG
#define ACC_ALL (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)
#define FOREVER (-1)                  // timeout_ms of the blocking calls: no deadline
#define WHY_LEN 160

static char why[WHY_LEN];             // the failing check of the current case
static struct rdma_device_info dev;   // the limits every case tests against
static struct rdma_port_info port;
static unsigned char buf[4 * PG] __attribute__((aligned(4096)));   // registered memory
static unsigned char ringmem[PG] __attribute__((aligned(4096)));    // a send ring of a kit's QP

#define EXPECT(cond) do { if (!(cond)) { \
  snprintf(why, WHY_LEN, "line %d: %s", __LINE__, #cond); return 1; } } while (0)
#define EXPECTF(cond, ...) do { if (!(cond)) { \
  snprintf(why, WHY_LEN, __VA_ARGS__); return 1; } } while (0)

// ---- the bad addresses (rdma_hostile.h) ----
#define NBAD HOSTILE_NBAD
static unsigned long bad[NBAD];

// ---- a kit: one object of every kind, all of this process ----
struct kit { int pd, ch, cq, mr, qp; struct rdma_mr_keys keys; unsigned qpn; };

static struct rdma_qp_create qp_args(int pd, int cq, unsigned wr, unsigned sge) {
  struct rdma_qp_create c;
  memset(&c, 0, sizeof c);
  c.pd = pd;
  c.send_cq = c.recv_cq = cq;
  c.max_send_wr = c.max_recv_wr = wr;
  c.max_send_sge = c.max_recv_sge = sge;
  return c;
}

static int new_qp(int pd, int cq, unsigned *qpn) {
  struct rdma_qp_create c = qp_args(pd, cq, 16, 2);
  int h = sys_rdma_create_qp(&c);
  if (qpn) *qpn = c.qp_num;
  return h;
}

static int kit_open(struct kit *k) {
  k->pd = rdma_alloc_pd();
  k->ch = rdma_create_chan();
  k->cq = rdma_create_cq(16, k->ch, (void *)0x1234);
  k->mr = rdma_reg_mr(k->pd, buf, sizeof buf, ACC_ALL, &k->keys);
  k->qp = new_qp(k->pd, k->cq, &k->qpn);
  return (k->pd >= 0 && k->ch >= 0 && k->cq >= 0 && k->mr >= 0 && k->qp >= 0) ? 0 : -1;
}

static int kit_close(struct kit *k) {
  int r = sys_rdma_destroy_qp(k->qp) | sys_rdma_dereg_mr(k->mr) | rdma_destroy_cq(k->cq);
  return r | rdma_destroy_chan(k->ch) | rdma_dealloc_pd(k->pd);
}

// Live QPs of pid on the device (rdma_qp_stats walks every slot).
static int qps_of(int pid) {
  struct rdma_qp_stats s;
  int n = 0;
  for (int i = 0; i < dev.max_qp; i++)
    if (rdma_qp_stats(i, &s) == 0 && (pid < 0 || s.owner_pid == pid)) n++;
  return n;
}

static unsigned long free_pages(void) {
  struct sysinfo si;
  return sysinfo(&si) == 0 ? si.freepages : 0;
}

// ---- QP states: the attributes and masks of the valid transitions ----
#define M_INIT RDMAU_MASK_INIT
#define M_RTR RDMAU_MASK_RTR
#define M_RTS RDMAU_MASK_RTS

// Valid attributes for every transition: a loopback peer dest_qpn.
static unsigned qp_access = ACC_ALL;  // the QPs' remote access (a case's process may widen it)

static struct rdma_qp_attr attrs_for(unsigned state, unsigned dest_qpn) {
  struct rdma_qp_attr a;
  memset(&a, 0, sizeof a);
  a.qp_state = state;
  a.qp_access_flags = qp_access;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = dest_qpn;
  a.rq_psn = a.sq_psn = 100;          // both ends of a pair start at the same PSN
  a.max_dest_rd_atomic = a.max_rd_atomic = 1;
  a.min_rnr_timer = 12;
  a.timeout = 14;
  a.retry_cnt = a.rnr_retry = 7;
  a.pkey_index = 0;
  a.port_num = 1;                     // the device's one port
  a.dipv4 = port.ipv4;
  memcpy(a.dmac, port.mac, 6);
  a.hop_limit = 64;
  return a;
}

#define NO_STATE 99                   // qp_state(): query_qp refused the handle

static unsigned qp_state(int qp) {
  struct rdma_qp_attr a;
  return rdma_query_qp(qp, &a) == 0 ? a.qp_state : NO_STATE;
}

static int modify(int qp, unsigned state, unsigned mask, unsigned dest) {
  struct rdma_qp_attr a = attrs_for(state, dest);
  return rdma_modify_qp(qp, &a, mask);
}

// The path from RESET to each state: the state and the mask of each step.
static const struct { unsigned state, mask; } path[] = {
  { IBV_QPS_INIT, M_INIT }, { IBV_QPS_RTR, M_RTR }, { IBV_QPS_RTS, M_RTS },
  { IBV_QPS_SQD, IBV_QP_STATE },
};

// Resets qp and walks it to target (RESET, INIT, RTR, RTS, SQD or ERR).
static int drive(int qp, unsigned target, unsigned dest) {
  if (modify(qp, IBV_QPS_RESET, IBV_QP_STATE, dest) < 0) return -1;
  if (target == IBV_QPS_ERR) return modify(qp, IBV_QPS_ERR, IBV_QP_STATE, dest);
  for (unsigned i = 0; i < sizeof path / sizeof path[0] && qp_state(qp) != target; i++)
    if (modify(qp, path[i].state, path[i].mask, dest) < 0) return -1;
  return qp_state(qp) == target ? 0 : -1;
}

// Lets the engine finish pending work: waits (bounded) for a completion.
static int await_cq(int cq) { return rdma_wait_cq(cq, 2000); }

// A flushed receive completion in cq: qp moved to ERR, one receive posted. [QP-STATE-5]
static int flush_one(int qp, int cq) {
  struct rdma_recv_wr rw;
  memset(&rw, 0, sizeof rw);
  rw.wr_id = 7;
  if (qp_state(qp) != IBV_QPS_ERR && modify(qp, IBV_QPS_ERR, IBV_QP_STATE, 0) < 0) return -1;
  if (sys_rdma_post_recv(qp, &rw, 1, 0) != 1) return -1;
  return await_cq(cq);
}

// ======================= bad pointers =======================
// Every pointer argument with every bad address: -1, nothing changes, the
// kernel survives (uapi.h: "-1 on any error (bad pointer)").

static int c_ptr_query_device(void) {
  for (int i = 0; i < NBAD; i++)
    EXPECTF(rdma_query_device((void *)bad[i]) == -1, "query_device(%p) != -1", (void *)bad[i]);
  return 0;
}

static int c_ptr_query_port(void) {
  for (int i = 0; i < NBAD; i++)
    EXPECTF(rdma_query_port(1, (void *)bad[i]) == -1, "query_port(1, %p) != -1", (void *)bad[i]);
  return 0;
}

static int c_ptr_reg_mr_addr(void) {
  struct rdma_mr_keys k;
  int pd = rdma_alloc_pd();
  EXPECT(pd >= 0);
  for (int i = 0; i < NBAD; i++) {
    EXPECTF(rdma_reg_mr(pd, (void *)bad[i], 64, 0, &k) == -1, "reg_mr(%p, 64)", (void *)bad[i]);
    EXPECTF(rdma_reg_mr(pd, (void *)bad[i], 3 * PG, IBV_ACCESS_LOCAL_WRITE, &k) == -1,
            "reg_mr(%p, 3 pages, write)", (void *)bad[i]);
  }
  // Ranges that start in our memory and run into unmapped or kernel memory,
  // and ranges that wrap past 2^64.
  EXPECT(rdma_reg_mr(pd, buf, 1UL << 30, 0, &k) == -1);
  EXPECT(rdma_reg_mr(pd, (void *)0xfffffffffffff000UL, 0x2000, 0, &k) == -1);
  EXPECT(rdma_reg_mr(pd, buf, ~0UL - (unsigned long)buf + 2, 0, &k) == -1);
  // The program text is mapped but not writable: no write access over it.
  EXPECT(rdma_reg_mr(pd, (void *)c_ptr_reg_mr_addr, 64, IBV_ACCESS_LOCAL_WRITE, &k) == -1);
  EXPECT(rdma_dealloc_pd(pd) == 0);       // no MR took a reference
  return 0;
}

// The device's objects alive now, all owners (the kernel's QP1 holds a PD,
// an MR, two CQs and a QP of the device's limits).
static struct rdma_dev_stats live(void) {
  struct rdma_dev_stats d;
  if (rdma_dev_stats(&d) < 0) memset(&d, 0, sizeof d);
  return d;
}

// What a process may still create of a kind: the device's limit less the live ones.
static int room(int max, unsigned long long alive) { return max - (int)alive; }

// A bad keys pointer: the MR is undone (the slot and its pin are returned).
static int c_ptr_reg_mr_keys(void) {
  struct rdma_mr_keys k;
  int pd = rdma_alloc_pd(), max = room(dev.max_mr, live().live_mrs);
  EXPECT(pd >= 0);
  for (int i = 0; i < NBAD; i++)
    EXPECTF(rdma_reg_mr(pd, buf, 64, 0, (void *)bad[i]) == -1, "reg_mr(keys %p)", (void *)bad[i]);
  EXPECT(rdma_reg_mr(pd, buf, 64, 0, (void *)buf) >= 0);   // the keys may land in the MR itself
  int n = 1;
  while (n <= max && rdma_reg_mr(pd, buf, 64, 0, &k) >= 0) n++;
  EXPECTF(n == max, "%d MRs fit after the refusals, max_mr %d less %d alive", n, dev.max_mr,
          dev.max_mr - max);
  return 0;
}

static int c_ptr_create_qp(void) {
  struct kit k;
  EXPECT(kit_open(&k) == 0);
  int before = qps_of(-1);
  for (int i = 0; i < NBAD; i++)
    EXPECTF(sys_rdma_create_qp((void *)bad[i]) == -1, "create_qp(%p)", (void *)bad[i]);
  // Read-only memory: the arguments are read but the results cannot be written.
  EXPECT(sys_rdma_create_qp((void *)c_ptr_create_qp) == -1);
  EXPECT(qps_of(-1) == before);
  EXPECT(kit_close(&k) == 0);
  return 0;
}

static int c_ptr_modify_qp(void) {
  struct kit k;
  EXPECT(kit_open(&k) == 0);
  for (int i = 0; i < NBAD; i++)
    EXPECTF(rdma_modify_qp(k.qp, (void *)bad[i], M_INIT) == -1, "modify_qp(%p)", (void *)bad[i]);
  EXPECT(qp_state(k.qp) == IBV_QPS_RESET);
  return 0;
}

static int c_ptr_query_qp(void) {
  struct kit k;
  EXPECT(kit_open(&k) == 0);
  for (int i = 0; i < NBAD; i++)
    EXPECTF(rdma_query_qp(k.qp, (void *)bad[i]) == -1, "query_qp(%p)", (void *)bad[i]);
  EXPECT(rdma_query_qp(k.qp, (void *)c_ptr_query_qp) == -1);   // text is read-only
  return 0;
}

// post_send / post_recv: a bad array is -1 when the first WR cannot be
// read; a second WR past the end of our memory stops the post at 1.
static int c_ptr_post_send(void) {
  struct kit k;
  EXPECT(kit_open(&k) == 0 && drive(k.qp, IBV_QPS_RTS, k.qpn) == 0);
  for (int i = 0; i < NBAD; i++) {
    EXPECTF(sys_rdma_post_send(k.qp, (void *)bad[i], 1, 0) == -1, "post_send(%p, 1)", (void *)bad[i]);
    EXPECTF(sys_rdma_post_send(k.qp, (void *)bad[i], 0x7fffffff, 0) == -1, "post_send(%p, huge)", (void *)bad[i]);
  }
  unsigned long top = ((unsigned long)sbrk(0) + PG - 1) & ~(PG - 1);   // first unmapped byte
  struct rdma_send_wr *last = (struct rdma_send_wr *)(top - sizeof *last);
  memset(last, 0, sizeof *last);
  last->opcode = IBV_WR_RDMA_WRITE;
  last->remote_addr = (unsigned long)buf;
  last->rkey = k.keys.rkey;
  EXPECT(sys_rdma_post_send(k.qp, last, 3, 0) == 1);
  // The kernel reads a WR's SGEs where sg_list points: a bad list is a bad WR.
  struct rdma_send_wr sgw = { .opcode = IBV_WR_RDMA_WRITE, .num_sge = 1, .remote_addr = (unsigned long)buf,
                              .rkey = k.keys.rkey };
  for (int i = 0; i < NBAD; i++) {
    sgw.sg_list = bad[i];
    EXPECTF(sys_rdma_post_send(k.qp, &sgw, 1, 0) == -1, "post_send(sg_list %p)", (void *)bad[i]);
  }
  // The error pointer (NULL: not wanted) is checked before anything is posted.
  struct rdma_send_wr ok = { .opcode = IBV_WR_RDMA_WRITE, .remote_addr = (unsigned long)buf,
                             .rkey = k.keys.rkey };
  for (int i = 0; i < NBAD; i++)
    EXPECTF(!bad[i] || sys_rdma_post_send(k.qp, &ok, 1, (int *)bad[i]) == -1, "post_send(err %p)", (void *)bad[i]);
  return 0;
}

static int c_ptr_post_recv(void) {
  struct kit k;
  EXPECT(kit_open(&k) == 0 && drive(k.qp, IBV_QPS_INIT, k.qpn) == 0);
  for (int i = 0; i < NBAD; i++)
    EXPECTF(sys_rdma_post_recv(k.qp, (void *)bad[i], 1, 0) == -1, "post_recv(%p, 1)", (void *)bad[i]);
  unsigned long top = ((unsigned long)sbrk(0) + PG - 1) & ~(PG - 1);   // first unmapped byte
  struct rdma_recv_wr *last = (struct rdma_recv_wr *)(top - sizeof *last);
  memset(last, 0, sizeof *last);
  EXPECT(sys_rdma_post_recv(k.qp, last, 2, 0) == 1);
  // A bad error pointer is -1 and posts nothing: the queue still takes
  // exactly max_recv_wr - 1 more (one is already posted above).
  struct rdma_qp_attr qa;
  struct rdma_recv_wr one = { 0 };
  EXPECT(rdma_query_qp(k.qp, &qa) == 0);
  for (int i = 0; i < NBAD; i++)
    EXPECTF(!bad[i] || sys_rdma_post_recv(k.qp, &one, 1, (int *)bad[i]) == -1, "post_recv(err %p)", (void *)bad[i]);
  int posted = 1, err = 0;
  while (sys_rdma_post_recv(k.qp, &one, 1, &err) == 1) posted++;
  EXPECTF(posted == (int)qa.max_recv_wr && err == RDMA_ENOMEM, "%d receives fit, want %d (err %d)",
          posted, (int)qa.max_recv_wr, err);
  return 0;
}

// map_qp: every bad address, read-only text, an unaligned ring and a bad
// queue number are -1 and pin nothing; the good ring maps once; a doorbell
// is -1 before its ring is mapped and posts nothing from an empty one.
static int c_ptr_map_qp(void) {
  struct kit k;
  EXPECT(kit_open(&k) == 0);
  unsigned long before = free_pages();
  for (int i = 0; i < NBAD; i++)
    for (int q = RDMA_WQ_SEND; q <= RDMA_WQ_RECV; q++)
      EXPECTF(rdma_map_qp(k.qp, q, (void *)bad[i]) == -1, "map_qp(%d, %p)", q, (void *)bad[i]);
  void *text = (void *)((unsigned long)c_ptr_map_qp & ~(PG - 1UL));
  EXPECT(rdma_map_qp(k.qp, RDMA_WQ_SEND, text) == -1);
  EXPECT(rdma_map_qp(k.qp, RDMA_WQ_SEND, (void *)(ringmem + 64)) == -1);
  EXPECT(rdma_map_qp(k.qp, 2, (void *)ringmem) == -1 && rdma_map_qp(k.qp, -1, (void *)ringmem) == -1);
  EXPECTF(free_pages() == before, "free pages %lu -> %lu after refused maps", before, free_pages());
  EXPECT(rdma_doorbell(k.qp, RDMA_WQ_SEND) == -1);
  memset(ringmem, 0, sizeof ringmem);
  EXPECT(rdma_map_qp(k.qp, RDMA_WQ_SEND, (void *)ringmem) == 0);
  EXPECT(rdma_map_qp(k.qp, RDMA_WQ_SEND, (void *)ringmem) == -1);   // mapped already
  EXPECT(rdma_doorbell(k.qp, RDMA_WQ_SEND) == 0);
  EXPECT(kit_close(&k) == 0);
  return 0;
}

// poll_cq copies completions out: a bad buffer is -1 (a completion must be
// there to copy: a flushed receive provides one).
static int c_ptr_poll_cq(void) {
  struct kit k;
  struct rdma_wc wc;
  EXPECT(kit_open(&k) == 0);
  for (int i = 0; i < NBAD; i++) {
    EXPECT(flush_one(k.qp, k.cq) == 0);
    EXPECTF(rdma_poll_cq(k.cq, 1, (void *)bad[i]) == -1, "poll_cq(%p)", (void *)bad[i]);
    while (rdma_poll_cq(k.cq, 1, &wc) == 1) {}
  }
  EXPECT(rdma_poll_cq(k.cq, 1, (void *)c_ptr_poll_cq) == 0);   // empty CQ: nothing written
  return 0;
}

// get_cq_event with a bad cookie pointer: the event is there (armed CQ, a
// flushed completion), the copy fails: -1.
static int c_ptr_get_cq_event(void) {
  struct kit k;
  struct rdma_wc wc;
  EXPECT(kit_open(&k) == 0);
  for (int i = 0; i < NBAD; i++) {
    EXPECT(rdma_req_notify(k.cq, 0) == 0);
    EXPECT(flush_one(k.qp, k.cq) == 0);
    EXPECTF(rdma_get_cq_event(k.ch, (void *)bad[i]) == -1, "get_cq_event(cookie %p)", (void *)bad[i]);
    while (rdma_poll_cq(k.cq, 1, &wc) == 1) {}
  }
  return 0;
}

// get_async with a bad pointer, an event waiting (a CQ overrun raises
// IBV_EVENT_CQ_ERR) or not: -1. Never blocking: were the event missing,
// the case would hang instead of failing.
static int c_ptr_get_async(void) {
  int pd = rdma_alloc_pd();
  EXPECT(pd >= 0);
  for (int i = 0; i < NBAD; i++) {
    EXPECTF(rdma_get_async((void *)bad[i], 0) == -1, "get_async(%p), none", (void *)bad[i]);
    int cq = rdma_create_cq(1, -1, 0), qp = new_qp(pd, cq, 0);
    EXPECT(cq >= 0 && qp >= 0);
    EXPECT(flush_one(qp, cq) == 0 && flush_one(qp, cq) == 0);
    EXPECTF(rdma_get_async((void *)bad[i], 0) == -1, "get_async(%p), one waits", (void *)bad[i]);
    EXPECT(sys_rdma_destroy_qp(qp) == 0 && rdma_destroy_cq(cq) == 0);
  }
  return 0;
}

static int c_ptr_qp_stats(void) {
  struct kit k;
  EXPECT(kit_open(&k) == 0);
  for (int i = 0; i < NBAD; i++)
    for (int slot = 0; slot < dev.max_qp; slot++)
      EXPECTF(rdma_qp_stats(slot, (void *)bad[i]) != 0, "qp_stats(%d, %p) == 0", slot, (void *)bad[i]);
  return 0;
}

static int c_ptr_set_neigh(void) {
  for (int i = 0; i < NBAD; i++)
    EXPECTF(rdma_set_neigh(0x0a0000fe, (void *)bad[i]) == -1, "set_neigh(mac %p)", (void *)bad[i]);
  return 0;
}

static int c_ptr_wait_write(void) {
  for (int i = 0; i < NBAD; i++) {
    EXPECTF(rdma_wait_write((void *)bad[i], 0, 10) == -1, "wait_write(%p, 10 ms)", (void *)bad[i]);
    EXPECTF(rdma_wait_write((void *)bad[i], 0, FOREVER) == -1, "wait_write(%p, forever)", (void *)bad[i]);
  }
  return 0;
}

// ======================= bad handles =======================
// Each probe calls every syscall that takes a handle of its kind with h,
// the other arguments valid (from k), and returns a bit per call that did
// not return -1.

static int probe_pd(struct kit *k, int h) {
  struct rdma_mr_keys keys;
  struct rdma_qp_create c = qp_args(h, k->cq, 4, 1);
  return (rdma_dealloc_pd(h) != -1) | (rdma_reg_mr(h, buf, 64, 0, &keys) != -1) << 1 |
         (sys_rdma_create_qp(&c) != -1) << 2;
}

static int probe_mr(struct kit *k, int h) { return sys_rdma_dereg_mr(h) != -1; }

static int probe_chan(struct kit *k, int h) {
  unsigned long long cookie;
  int cq = h == -1 ? -1 : rdma_create_cq(4, h, 0);    // -1 is "no channel"
  return (rdma_destroy_chan(h) != -1) | (cq != -1) << 1 | (rdma_get_cq_event(h, &cookie) != -1) << 2;
}

static int probe_cq(struct kit *k, int h) {
  struct rdma_wc wc;
  struct rdma_qp_create s = qp_args(k->pd, k->cq, 4, 1), r = s;
  s.send_cq = h;
  r.recv_cq = h;
  return (rdma_destroy_cq(h) != -1) | (rdma_poll_cq(h, 1, &wc) != -1) << 1 |
         (rdma_req_notify(h, 0) != -1) << 2 | (rdma_wait_cq(h, 0) != -1) << 3 |
         (sys_rdma_create_qp(&s) != -1) << 4 | (sys_rdma_create_qp(&r) != -1) << 5;
}

static int probe_qp(struct kit *k, int h) {
  struct rdma_qp_attr a = attrs_for(IBV_QPS_ERR, 0), q;
  struct rdma_send_wr sw;
  struct rdma_recv_wr rw;
  memset(&sw, 0, sizeof sw);
  memset(&rw, 0, sizeof rw);
  return (rdma_modify_qp(h, &a, IBV_QP_STATE) != -1) | (rdma_query_qp(h, &q) != -1) << 1 |
         (sys_rdma_post_send(h, &sw, 1, 0) != -1) << 2 | (sys_rdma_post_recv(h, &rw, 1, 0) != -1) << 3 |
         (rdma_map_qp(h, RDMA_WQ_SEND, (struct rdma_wq_ring *)ringmem) != -1) << 4 |
         (rdma_doorbell(h, RDMA_WQ_SEND) != -1) << 5 | (rdma_doorbell(h, RDMA_WQ_RECV) != -1) << 6 |
         (sys_rdma_destroy_qp(h) != -1) << 7;
}

enum { K_PD, K_MR, K_CHAN, K_CQ, K_QP, NKIND };
static const struct { const char *name; int (*probe)(struct kit *, int); } kinds[NKIND] = {
  { "pd", probe_pd }, { "mr", probe_mr }, { "chan", probe_chan }, { "cq", probe_cq }, { "qp", probe_qp },
};

// A set of handles, one per kind, as a kit names them.
static void kit_handles(const struct kit *k, int h[NKIND]) {
  h[K_PD] = k->pd; h[K_MR] = k->mr; h[K_CHAN] = k->ch; h[K_CQ] = k->cq; h[K_QP] = k->qp;
}

// Every probe with every handle of hs: all refused, else why names it.
static int probe_all(struct kit *k, const int hs[NKIND], const char *what) {
  for (int i = 0; i < NKIND; i++) {
    int bits = kinds[i].probe(k, hs[i]);
    EXPECTF(bits == 0, "%s %s handle %d accepted (calls mask 0x%x)", what, kinds[i].name, hs[i], bits);
  }
  return 0;
}

// The kit still works: nothing the refused calls did touched it.
static int kit_intact(struct kit *k) {
  EXPECT(qp_state(k->qp) == IBV_QPS_RESET || qp_state(k->qp) == IBV_QPS_RTS);
  EXPECT(drive(k->qp, IBV_QPS_RTS, k->qpn) == 0);
  EXPECT(kit_close(k) == 0);
  return 0;
}

// Handles no process holds: negative, huge, the table's size and one past
// it, and the free slot after this process's own object.
static int c_handle_out_of_range(void) {
  struct kit k;
  EXPECT(kit_open(&k) == 0);
  int mine[NKIND];
  kit_handles(&k, mine);
  // The channel table's size is not reported: 4096 is past any.
  int limit[NKIND] = { dev.max_pd, dev.max_mr, 4096, dev.max_cq, dev.max_qp };
  int fixed[] = { -1, -2, (int)0x80000000, 0x7fffffff, 1 << 30, 99999 };
  int nfixed = (int)(sizeof fixed / sizeof fixed[0]);
  for (int v = 0; v < nfixed + 3; v++) {
    int hs[NKIND];
    for (int i = 0; i < NKIND; i++)
      hs[i] = v < nfixed ? fixed[v] : v == nfixed ? limit[i] : v == nfixed + 1 ? limit[i] + 1 : mine[i] + 1;
    if (probe_all(&k, hs, "unheld")) return 1;
  }
  return kit_intact(&k);
}

static int c_handle_destroyed(void) {
  struct kit k, gone;
  EXPECT(kit_open(&k) == 0 && kit_open(&gone) == 0);
  EXPECT(kit_close(&gone) == 0);
  int hs[NKIND];
  kit_handles(&gone, hs);
  if (probe_all(&k, hs, "destroyed")) return 1;
  return kit_intact(&k);
}

// The parent's objects, used by a forked child: refused.
static int c_handle_parent_in_child(void) {
  struct kit mine;
  EXPECT(kit_open(&mine) == 0 && drive(mine.qp, IBV_QPS_RTS, mine.qpn) == 0);
  int pid = fork();
  EXPECT(pid >= 0);
  if (pid == 0) {
    struct kit k;
    int hs[NKIND];
    kit_handles(&mine, hs);
    if (kit_open(&k) < 0) exit(2);
    exit(probe_all(&k, hs, "parent's") ? 1 : 0);
  }
  int st = -1;
  EXPECT(wait(&st) == pid);
  EXPECTF(st == 0, "child: status %d (1: a parent's handle worked)", st);
  return kit_intact(&mine);
}

// A child's objects, used by the parent while the child lives: refused.
static int c_handle_child_in_parent(void) {
  int to_parent[2], to_child[2];
  EXPECT(pipe(to_parent) == 0 && pipe(to_child) == 0);
  int pid = fork();
  EXPECT(pid >= 0);
  if (pid == 0) {
    struct kit k;
    int hs[NKIND];
    char c;
    close(to_parent[0]);
    close(to_child[1]);
    if (kit_open(&k) < 0) exit(2);
    kit_handles(&k, hs);
    write(to_parent[1], hs, sizeof hs);
    read(to_child[0], &c, 1);                  // until the parent is done
    exit(kit_close(&k) == 0 && qp_state(k.qp) == NO_STATE ? 0 : 3);
  }
  close(to_parent[1]);
  close(to_child[0]);
  int hs[NKIND];
  struct kit k;
  EXPECT(read(to_parent[0], hs, sizeof hs) == sizeof hs);
  EXPECT(kit_open(&k) == 0);
  EXPECT(qps_of(pid) == 1);
  int r = probe_all(&k, hs, "child's");
  // rdma_qp_stats reports the child's QP, but not as ours. [uapi.h]
  struct rdma_qp_stats s;
  for (int i = 0; i < dev.max_qp && r == 0; i++)
    if (rdma_qp_stats(i, &s) == 0 && s.owner_pid == pid && s.handle != -1) {
      snprintf(why, WHY_LEN, "qp_stats(%d) gives the child's QP handle %d", i, s.handle);
      r = 1;
    }
  close(to_child[1]);
  int st = -1;
  EXPECT(wait(&st) == pid);
  if (r) return r;
  EXPECTF(st == 0, "child could not close its own objects: status %d", st);
  EXPECT(qps_of(pid) == 0);
  return kit_intact(&k);
}

// ======================= limits =======================

// reg_mr at max_mr_size: page-aligned fits, one byte more is refused, an
// unaligned start with one page less fits. Runs in its own process: the
// break grows by max_mr_size.
static int c_limit_mr_size(void) {
  int pd = rdma_alloc_pd();
  struct rdma_mr_keys k;
  EXPECT(pd >= 0);
  char *raw = sbrk((int)dev.max_mr_size + 2 * PG);
  EXPECTF(raw != (char *)-1, "no memory for %lu bytes", (unsigned long)dev.max_mr_size);
  char *base = (char *)(((unsigned long)raw + PG - 1) & ~(PG - 1));
  EXPECT(rdma_reg_mr(pd, base, dev.max_mr_size + 1, 0, &k) == -1);
  EXPECT(rdma_reg_mr(pd, base, ~0UL, 0, &k) == -1);
  int mr = rdma_reg_mr(pd, base, dev.max_mr_size, ACC_ALL, &k);
  EXPECT(mr >= 0);
  EXPECT(sys_rdma_dereg_mr(mr) == 0);
  mr = rdma_reg_mr(pd, base + 1, dev.max_mr_size - PG, ACC_ALL, &k);
  EXPECT(mr >= 0 && sys_rdma_dereg_mr(mr) == 0);
  EXPECT(rdma_reg_mr(pd, base, 0, 0, &k) == -1);      // length 0: EINVAL (libibverbs)
  return 0;
}

// max_mr_size bytes from an unaligned address span one page more than an
// aligned region. Either answer is allowed (registered or -1); the kernel
// must survive it and return every page (runner's check).
static int c_limit_mr_size_unaligned(void) {
  int pd = rdma_alloc_pd();
  struct rdma_mr_keys k;
  EXPECT(pd >= 0);
  char *raw = sbrk((int)dev.max_mr_size + 2 * PG);
  EXPECTF(raw != (char *)-1, "no memory for %lu bytes", (unsigned long)dev.max_mr_size);
  char *base = (char *)(((unsigned long)raw + PG - 1) & ~(PG - 1));
  int mr = rdma_reg_mr(pd, base + 1, dev.max_mr_size, ACC_ALL, &k);
  printf("  unaligned max_mr_size: %s\n", mr >= 0 ? "registered" : "refused");
  EXPECT(mr < 0 || sys_rdma_dereg_mr(mr) == 0);
  return 0;
}

// Unaligned starts and page-crossing small regions; access bits.
static int c_limit_mr_access(void) {
  int pd = rdma_alloc_pd();
  struct rdma_mr_keys k;
  EXPECT(pd >= 0);
  int a = rdma_reg_mr(pd, buf + 1, 1, 0, &k), b = rdma_reg_mr(pd, buf + PG - 1, 2, ACC_ALL, &k);
  EXPECT(a >= 0 && b >= 0);
  EXPECT(rdma_reg_mr(pd, buf, 64, 0xffff, &k) == -1);                       // unknown bits
  EXPECT(rdma_reg_mr(pd, buf, 64, 1 << 31, &k) == -1);
  EXPECT(rdma_reg_mr(pd, buf, 64, IBV_ACCESS_REMOTE_WRITE, &k) == -1);      // needs LOCAL_WRITE (IBTA)
  EXPECT(rdma_reg_mr(pd, buf, 64, IBV_ACCESS_REMOTE_ATOMIC, &k) == -1);
  EXPECT(rdma_dealloc_pd(pd) == -1);                                        // MRs use it
  EXPECT(sys_rdma_dereg_mr(a) == 0 && sys_rdma_dereg_mr(b) == 0 && rdma_dealloc_pd(pd) == 0);
  return 0;
}

// create_qp at max_qp_wr and max_sge (granted exactly), one above refused.
static int c_limit_qp_caps(void) {
  int pd = rdma_alloc_pd(), cq = rdma_create_cq(4, -1, 0);
  EXPECT(pd >= 0 && cq >= 0);
  unsigned w = (unsigned)dev.max_qp_wr, s = (unsigned)dev.max_sge;
  struct rdma_qp_create c = qp_args(pd, cq, w, s);
  int qp = sys_rdma_create_qp(&c);
  EXPECT(qp >= 0);
  EXPECTF(c.max_send_wr == w && c.max_recv_wr == w && c.max_send_sge == s && c.max_recv_sge == s,
          "granted %u/%u wr %u/%u sge", c.max_send_wr, c.max_recv_wr, c.max_send_sge, c.max_recv_sge);
  struct rdma_qp_attr a;
  EXPECT(rdma_query_qp(qp, &a) == 0 && a.max_send_wr == w && a.max_send_sge == s);
  int n = qps_of(-1);
  unsigned over[4][4] = { { w + 1, w, s, s }, { w, w + 1, s, s }, { w, w, s + 1, s }, { w, w, s, s + 1 } };
  for (int i = 0; i < 4; i++) {
    c = qp_args(pd, cq, 0, 0);
    c.max_send_wr = over[i][0]; c.max_recv_wr = over[i][1];
    c.max_send_sge = over[i][2]; c.max_recv_sge = over[i][3];
    EXPECTF(sys_rdma_create_qp(&c) == -1, "create_qp above the limits (%d) accepted", i);
    c.max_send_wr = c.max_recv_wr = 0xffffffffu;
    EXPECT(sys_rdma_create_qp(&c) == -1);
  }
  EXPECT(qps_of(-1) == n);
  EXPECT(rdma_destroy_cq(cq) == -1 && rdma_dealloc_pd(pd) == -1);        // the QP holds them
  EXPECT(sys_rdma_destroy_qp(qp) == 0 && rdma_destroy_cq(cq) == 0 && rdma_dealloc_pd(pd) == 0);
  return 0;
}

// create_cq at max_cqe; 0, -1 and max_cqe + 1 refused (EINVAL).
static int c_limit_cqe(void) {
  int cq = rdma_create_cq(dev.max_cqe, -1, 0);
  EXPECT(cq >= 0);
  EXPECT(rdma_create_cq(dev.max_cqe + 1, -1, 0) == -1 && rdma_create_cq(0, -1, 0) == -1);
  EXPECT(rdma_create_cq(-1, -1, 0) == -1 && rdma_create_cq((int)0x80000000, -1, 0) == -1);
  EXPECT(rdma_destroy_cq(cq) == 0);
  return 0;
}

// A receive queue of max_qp_wr: that many receives fit, the next one is
// refused; ibv_post_recv says ENOMEM (queue full, libibverbs). [QP-STATE-5]
static int c_limit_queue_full(void) {
  struct ibv_context *ctx = rdmau_open();
  EXPECT(ctx);
  struct ibv_pd *pd = ibv_alloc_pd(ctx);
  struct ibv_cq *cq = ibv_create_cq(ctx, 4, 0, 0, 0);
  EXPECT(pd && cq);
  struct ibv_qp_init_attr ia;
  memset(&ia, 0, sizeof ia);
  ia.send_cq = ia.recv_cq = cq;
  ia.cap.max_send_wr = ia.cap.max_recv_wr = (uint32_t)dev.max_qp_wr;
  ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
  ia.qp_type = IBV_QPT_RC;
  struct ibv_qp *qp = ibv_create_qp(pd, &ia);
  EXPECT(qp);
  EXPECT(drive((int)qp->handle, IBV_QPS_INIT, 0) == 0);
  int n = dev.max_qp_wr + 1;
  struct rdma_recv_wr *rw = malloc(n * sizeof *rw);
  EXPECT(rw);
  memset(rw, 0, n * sizeof *rw);
  EXPECTF(sys_rdma_post_recv((int)qp->handle, rw, n, 0) == dev.max_qp_wr, "post_recv of max_qp_wr + 1");
  struct ibv_recv_wr w, *badw = 0;
  memset(&w, 0, sizeof w);
  int r = ibv_post_recv(qp, &w, &badw);
  EXPECTF(r == ENOMEM && badw == &w, "ibv_post_recv on a full queue: %d, not ENOMEM", r);
  EXPECT(ibv_destroy_qp(qp) == 0 && ibv_destroy_cq(cq) == 0 && ibv_dealloc_pd(pd) == 0);
  return 0;
}

// A loopback pair through ibverbs for the ibv_post_send statuses.
struct vpair { struct ibv_context *ctx; struct ibv_pd *pd; struct ibv_cq *cq; struct ibv_qp *a, *b;
               struct ibv_mr *mr; uint32_t inline_granted; };

static struct ibv_qp *vqp(struct vpair *p, uint32_t sge, uint32_t inl) {
  struct ibv_qp_init_attr ia;
  memset(&ia, 0, sizeof ia);
  ia.send_cq = ia.recv_cq = p->cq;
  ia.cap.max_send_wr = ia.cap.max_recv_wr = 8;
  ia.cap.max_send_sge = ia.cap.max_recv_sge = sge;
  ia.cap.max_inline_data = inl;
  ia.qp_type = IBV_QPT_RC;
  ia.sq_sig_all = 1;
  struct ibv_qp *qp = ibv_create_qp(p->pd, &ia);
  if (qp) p->inline_granted = ia.cap.max_inline_data;
  return qp;
}

static int vpair_open(struct vpair *p, uint32_t sge, uint32_t inl) {
  memset(p, 0, sizeof *p);
  p->ctx = rdmau_open();
  p->pd = p->ctx ? ibv_alloc_pd(p->ctx) : 0;
  p->cq = p->ctx ? ibv_create_cq(p->ctx, 64, 0, 0, 0) : 0;
  p->mr = p->pd ? ibv_reg_mr(p->pd, buf, sizeof buf, ACC_ALL) : 0;
  if (!p->mr || !p->cq) return -1;
  p->a = vqp(p, sge, inl);
  p->b = vqp(p, sge, inl);
  return p->a && p->b ? 0 : -1;
}

static int vpair_connect(struct vpair *p) {
  if (drive((int)p->a->handle, IBV_QPS_RTS, p->b->qp_num) < 0) return -1;
  return drive((int)p->b->handle, IBV_QPS_RTS, p->a->qp_num);
}

static int post_write(struct vpair *p, struct ibv_qp *qp, int nsge, uint32_t len, int flags) {
  struct ibv_sge sg[RDMA_MAX_SGE + 1];
  for (int i = 0; i < nsge; i++) {
    sg[i].addr = (uint64_t)buf + (uint64_t)i * 64;
    sg[i].length = len;
    sg[i].lkey = p->mr->lkey;
  }
  struct ibv_send_wr wr, *badw = 0;
  memset(&wr, 0, sizeof wr);
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.sg_list = sg;
  wr.num_sge = nsge;
  wr.send_flags = flags;
  wr.wr.rdma.remote_addr = (uint64_t)buf + 2 * PG;
  wr.wr.rdma.rkey = p->mr->rkey;
  return ibv_post_send(qp, &wr, &badw);
}

#define SCRIBBLE_ROUNDS 200   // writes each side of cq_ring_scribble posts

// A child writes garbage all over its CQ's mapped ring (consumer index,
// the kernel's fields, entries) while posting WRITEs; meanwhile this
// process's own pair completes every WRITE, in order and successful. The
// kernel stays up; the child's pinned pages come back (the runner's free
// page count).
static int c_cq_ring_scribble(void) {
  struct vpair p;
  EXPECT(vpair_open(&p, 1, 0) == 0 && vpair_connect(&p) == 0 && p.cq->ring);
  int pid = fork();
  if (pid == 0) {
    struct vpair c;
    if (vpair_open(&c, 1, 0) < 0 || vpair_connect(&c) < 0 || !c.cq->ring) exit(1);
    unsigned *words = (unsigned *)c.cq->ring, x = (unsigned)getpid() * 2654435761u;
    unsigned nwords = (unsigned)(RDMA_CQ_RING_BYTES(c.cq->cqe) / sizeof *words);
    struct ibv_wc wc;
    for (int i = 0; i < SCRIBBLE_ROUNDS; i++) {
      post_write(&c, c.a, 1, 8, IBV_SEND_SIGNALED);
      x = x * 1103515245u + 12345u;
      words[x % 4 == 0 ? x % nwords : 16] = x;       // mostly the consumer index (word 16)
      ibv_poll_cq(c.cq, 1, &wc);
    }
    exit(0);
  }
  EXPECT(pid > 0);
  struct ibv_wc wc;
  for (int i = 0; i < SCRIBBLE_ROUNDS; i++) {
    EXPECTF(post_write(&p, p.a, 1, 8, IBV_SEND_SIGNALED) == 0, "post %d", i);
    EXPECTF(rdmau_wait(p.cq, &wc, 10000) == 1 && wc.status == IBV_WC_SUCCESS, "completion %d", i);
  }
  int st = -1;
  EXPECT(wait(&st) == pid && st == 0);
  EXPECT(ibv_destroy_qp(p.a) == 0 && ibv_destroy_qp(p.b) == 0 && ibv_destroy_cq(p.cq) == 0);
  EXPECT(ibv_dereg_mr(p.mr) == 0 && ibv_dealloc_pd(p.pd) == 0);
  return 0;
}

// post_send in RESET, INIT and RTR: EINVAL [QP-STATE-4]; post_recv in
// RESET: EINVAL [QP-STATE-5]. Not ENOMEM: the queue is not full.
static int c_limit_post_state(void) {
  struct vpair p;
  EXPECT(vpair_open(&p, 1, 0) == 0);
  int n = 0;
  struct ibv_recv_wr rw, *badr = 0;
  memset(&rw, 0, sizeof rw);
  int r = ibv_post_recv(p.a, &rw, &badr);
  if (r != EINVAL) n += snprintf(why + n, WHY_LEN - n, "post_recv in RESET: %d; ", r);
  unsigned states[] = { IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR };
  for (int i = 0; i < 3; i++) {
    EXPECT(drive((int)p.a->handle, states[i], p.b->qp_num) == 0);
    r = post_write(&p, p.a, 1, 8, 0);
    if (r != EINVAL && n < WHY_LEN - 40) n += snprintf(why + n, WHY_LEN - n, "post_send in %u: %d; ", states[i], r);
  }
  return n ? 1 : 0;              // why: the calls that did not say EINVAL
}

// num_sge: the granted count is accepted, one above is EINVAL (not ENOMEM).
static int c_limit_post_sge(void) {
  struct vpair p;
  EXPECT(vpair_open(&p, 2, 0) == 0 && vpair_connect(&p) == 0);
  EXPECT(post_write(&p, p.a, 2, 8, 0) == 0);
  int r = post_write(&p, p.a, 3, 8, 0);
  EXPECTF(r == EINVAL, "num_sge 3 over a grant of 2: %d, not EINVAL", r);
  r = post_write(&p, p.a, -1, 8, 0);
  EXPECTF(r == EINVAL, "num_sge -1: %d, not EINVAL", r);
  struct ibv_wc wc;
  r = rdmau_wait(p.cq, &wc, 5000);         // 1: one completion
  EXPECTF(r == 1 && wc.status == IBV_WC_SUCCESS, "completion: %d status %d", r, wc.status);
  return 0;
}

// Inline data: the granted max_inline_data is accepted, one byte more is
// EINVAL, at create and at post time.
static int c_limit_inline(void) {
  struct vpair p;
  EXPECT(vpair_open(&p, 2, 1) == 0);
  uint32_t max = p.inline_granted;         // what ibv_create_qp granted
  EXPECT(max > 0);
  EXPECT(vqp(&p, 1, max + 1) == 0 && errno == EINVAL);
  EXPECT(vpair_connect(&p) == 0);
  EXPECT(post_write(&p, p.a, 2, max / 2, IBV_SEND_INLINE) == 0);
  int r = post_write(&p, p.a, 2, max / 2 + 1, IBV_SEND_INLINE);
  EXPECTF(r == EINVAL, "inline of %u bytes, max %u: %d", max + 2, max, r);
  struct ibv_wc wc;
  r = rdmau_wait(p.cq, &wc, 5000);         // 1: one completion
  EXPECTF(r == 1 && wc.status == IBV_WC_SUCCESS, "completion: %d status %d", r, wc.status);
  return 0;
}

// Counts and indexes: n < 0 refused, n = 0 a no-op; query_port only port 1;
// qp_stats only [0, max_qp).
static int c_limit_counts(void) {
  struct kit k;
  struct rdma_wc wc;
  struct rdma_qp_stats s;
  struct rdma_port_info pi;
  EXPECT(kit_open(&k) == 0 && drive(k.qp, IBV_QPS_RTS, k.qpn) == 0);
  EXPECT(rdma_poll_cq(k.cq, -1, &wc) == -1 && rdma_poll_cq(k.cq, 0, &wc) == 0);
  EXPECT(rdma_poll_cq(k.cq, 0x7fffffff, &wc) == 0);            // empty: nothing copied
  EXPECT(sys_rdma_post_send(k.qp, (void *)&wc, -1, 0) == -1 && sys_rdma_post_send(k.qp, 0, 0, 0) == 0);
  EXPECT(sys_rdma_post_recv(k.qp, (void *)&wc, -1, 0) == -1 && sys_rdma_post_recv(k.qp, 0, 0, 0) == 0);
  EXPECT(rdma_query_port(0, &pi) == -1 && rdma_query_port(2, &pi) == -1);
  EXPECT(rdma_query_port(-1, &pi) == -1 && rdma_query_port(1, &pi) == 0);
  EXPECT(rdma_qp_stats(-1, &s) == -1 && rdma_qp_stats(dev.max_qp, &s) == -1);
  EXPECT(rdma_qp_stats(0x7fffffff, &s) == -1 && rdma_qp_stats(dev.max_qp - 1, &s) >= 0);
  EXPECT(rdma_set_neigh(0, port.mac) == -1);                  // no address
  return 0;
}

// Atomics that must fail, through the raw syscall between two QPs of one
// kit: a target in another PD's MR, a target past MAXVA, a misaligned
// target, a result buffer without local write. Each completes with its
// error [RESP-ATOM-2] [REQ-ATOM-3]; the target and the result keep their values.
static int c_atomic_refused(void) {
  struct kit k;
  struct rdma_mr_keys tk, ok2, rk;
  struct rdma_wc wc;
  unsigned bqpn;
  qp_access = ACC_ALL | IBV_ACCESS_REMOTE_ATOMIC;
  EXPECT(kit_open(&k) == 0);
  int pd2 = rdma_alloc_pd(), b = new_qp(k.pd, k.cq, &bqpn);
  volatile uint64_t *t = (uint64_t *)(buf + 2 * PG), *res = (uint64_t *)(buf + PG);
  int tmr = rdma_reg_mr(k.pd, buf + 2 * PG, PG, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC, &tk);
  int other = rdma_reg_mr(pd2, buf + 2 * PG, PG, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC, &ok2);
  int ro = rdma_reg_mr(k.pd, buf + PG, PG, 0, &rk);
  EXPECT(pd2 >= 0 && b >= 0 && tmr >= 0 && other >= 0 && ro >= 0);
  const struct { uint64_t va; unsigned rkey, lkey, want; } c[] = {
    { (uint64_t)t, ok2.rkey, k.keys.lkey, IBV_WC_REM_ACCESS_ERR },       // another PD's MR
    { ~7ULL, tk.rkey, k.keys.lkey, IBV_WC_REM_ACCESS_ERR },              // past MAXVA, aligned
    { (uint64_t)t + 4, tk.rkey, k.keys.lkey, IBV_WC_REM_INV_REQ_ERR },   // misaligned
    { (uint64_t)t, tk.rkey, rk.lkey, IBV_WC_LOC_PROT_ERR },              // result not writable
  };
  for (int i = 0; i < (int)(sizeof c / sizeof c[0]); i++) {
    EXPECT(drive(k.qp, IBV_QPS_RTS, bqpn) == 0 && drive(b, IBV_QPS_RTS, k.qpn) == 0);
    *t = 5;
    *res = 0xeeee;
    struct ibv_sge sge = { (unsigned long)res, 8, c[i].lkey };
    struct rdma_send_wr w = { .wr_id = (unsigned)i, .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
                              .send_flags = IBV_SEND_SIGNALED, .sg_list = (unsigned long)&sge, .num_sge = 1,
                              .remote_addr = c[i].va, .rkey = c[i].rkey, .compare_add = 1 };
    EXPECT(sys_rdma_post_send(k.qp, &w, 1, 0) == 1);
    EXPECT(await_cq(k.cq) == 0 && rdma_poll_cq(k.cq, 1, &wc) == 1);
    EXPECTF(wc.wr_id == (unsigned)i && wc.status == c[i].want, "case %d: status %d, want %u", i, wc.status, c[i].want);
    EXPECTF(*t == 5 && *res == 0xeeee, "case %d: target %llu result %llx", i, (unsigned long long)*t,
            (unsigned long long)*res);
  }
  EXPECT(sys_rdma_destroy_qp(b) == 0 && sys_rdma_dereg_mr(tmr) == 0 && sys_rdma_dereg_mr(other) == 0);
  EXPECT(sys_rdma_dereg_mr(ro) == 0 && rdma_dealloc_pd(pd2) == 0 && kit_close(&k) == 0);
  return 0;
}

// Responder and initiator depth: max_qp_rd_atom fits, one above is EINVAL.
static int c_limit_rd_atomic(void) {
  struct kit k;
  EXPECT(kit_open(&k) == 0 && drive(k.qp, IBV_QPS_INIT, k.qpn) == 0);
  struct rdma_qp_attr a = attrs_for(IBV_QPS_RTR, k.qpn);
  a.max_dest_rd_atomic = (unsigned)dev.max_qp_rd_atom + 1;
  EXPECT(rdma_modify_qp(k.qp, &a, M_RTR) == -1 && qp_state(k.qp) == IBV_QPS_INIT);
  a.max_dest_rd_atomic = (unsigned)dev.max_qp_rd_atom;
  EXPECT(rdma_modify_qp(k.qp, &a, M_RTR) == 0);
  a = attrs_for(IBV_QPS_RTS, k.qpn);
  a.max_rd_atomic = (unsigned)dev.max_qp_init_rd_atom + 1;
  EXPECT(rdma_modify_qp(k.qp, &a, M_RTS) == -1 && qp_state(k.qp) == IBV_QPS_RTR);
  a.max_rd_atomic = (unsigned)dev.max_qp_init_rd_atom;
  EXPECT(rdma_modify_qp(k.qp, &a, M_RTS) == 0);
  return 0;
}

// Attribute ranges of [QP-STATE-2]: path MTU 1..5, PSN < 2^24, timeout and
// min_rnr_timer <= 31, retry_cnt and rnr_retry <= 7. At the limit: ok.
struct range { unsigned state, mask; int field; unsigned bad, good; };
enum { F_MTU, F_RQ_PSN, F_RNR_TIMER, F_SQ_PSN, F_TIMEOUT, F_RETRY, F_RNR_RETRY };
static const struct range ranges[] = {
  { IBV_QPS_RTR, M_RTR, F_MTU, 0, 1 }, { IBV_QPS_RTR, M_RTR, F_MTU, 6, 3 },
  { IBV_QPS_RTR, M_RTR, F_RQ_PSN, 1u << 24, (1u << 24) - 1 },
  { IBV_QPS_RTR, M_RTR, F_RNR_TIMER, 32, 31 },
  { IBV_QPS_RTS, M_RTS, F_SQ_PSN, 1u << 24, (1u << 24) - 1 },
  { IBV_QPS_RTS, M_RTS, F_TIMEOUT, 32, 31 }, { IBV_QPS_RTS, M_RTS, F_RETRY, 8, 7 },
  { IBV_QPS_RTS, M_RTS, F_RNR_RETRY, 8, 7 },
};

static void set_field(struct rdma_qp_attr *a, int f, unsigned v) {
  unsigned *fields[] = { &a->path_mtu, &a->rq_psn, &a->min_rnr_timer, &a->sq_psn, &a->timeout,
                         &a->retry_cnt, &a->rnr_retry };
  *fields[f] = v;
}

static int c_limit_attr_ranges(void) {
  struct kit k;
  EXPECT(kit_open(&k) == 0);
  for (unsigned i = 0; i < sizeof ranges / sizeof ranges[0]; i++) {
    const struct range *r = &ranges[i];
    unsigned from = r->state == IBV_QPS_RTR ? IBV_QPS_INIT : IBV_QPS_RTR;
    EXPECT(drive(k.qp, from, k.qpn) == 0);
    struct rdma_qp_attr a = attrs_for(r->state, k.qpn);
    set_field(&a, r->field, r->bad);
    EXPECTF(rdma_modify_qp(k.qp, &a, r->mask) == -1 && qp_state(k.qp) == from,
            "range %u: value %u accepted", i, r->bad);
    set_field(&a, r->field, r->good);
    EXPECTF(rdma_modify_qp(k.qp, &a, r->mask) == 0, "range %u: value %u refused", i, r->good);
  }
  return 0;
}

// Timeouts: 0 ms returns -2 at once, a short one only after it passed; a
// byte that already differs returns 0 at once.
static int c_limit_wait_timeouts(void) {
  struct kit k;
  volatile unsigned char byte = 5;
  EXPECT(kit_open(&k) == 0);
  EXPECT(rdma_wait_cq(k.cq, 0) == -2 && rdma_wait_write(&byte, 5, 0) == -2);
  EXPECT(rdma_wait_write(&byte, 6, FOREVER) == 0);
  unsigned long t0 = clock_ns();
  EXPECT(rdma_wait_cq(k.cq, 30) == -2 && clock_ns() - t0 >= 30000000UL);
  t0 = clock_ns();
  EXPECT(rdma_wait_write(&byte, 5, 30) == -2 && clock_ns() - t0 >= 30000000UL);
  EXPECT(rdma_wait_write((void *)c_limit_wait_timeouts, 0, 10) != -1);    // text is readable
  return 0;
}

// ======================= QP state machine =======================
// [QP-STATE-2]: only the table's transitions; the QP stays where it was.

// Valid (from, to) pairs: the errors.md table (any -> RESET and ERR too).
static int transition_ok(unsigned from, unsigned to) {
  static const unsigned char ok[][2] = {
    { IBV_QPS_RESET, IBV_QPS_INIT }, { IBV_QPS_INIT, IBV_QPS_INIT }, { IBV_QPS_INIT, IBV_QPS_RTR },
    { IBV_QPS_RTR, IBV_QPS_RTS }, { IBV_QPS_RTS, IBV_QPS_RTS }, { IBV_QPS_RTS, IBV_QPS_SQD },
    { IBV_QPS_SQD, IBV_QPS_RTS }, { IBV_QPS_SQD, IBV_QPS_SQD },
  };
  if (to == IBV_QPS_RESET || to == IBV_QPS_ERR) return 1;
  for (unsigned i = 0; i < sizeof ok / sizeof ok[0]; i++)
    if (ok[i][0] == from && ok[i][1] == to) return 1;
  return 0;
}

// The mask a caller would use to reach `to` by its usual transition.
static unsigned mask_into(unsigned to) {
  return to == IBV_QPS_INIT ? M_INIT : to == IBV_QPS_RTR ? M_RTR : to == IBV_QPS_RTS ? M_RTS : IBV_QP_STATE;
}

static const unsigned all_states[] = { IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS,
                                       IBV_QPS_SQD, IBV_QPS_ERR };
#define NSTATES (sizeof all_states / sizeof all_states[0])

static int c_qp_invalid_transitions(void) {
  struct kit k;
  EXPECT(kit_open(&k) == 0);
  unsigned targets[] = { 0, 1, 2, 3, 4, IBV_QPS_SQE, 6, 7, 100, 0xffffffffu };   // [QP-STATE-8] SQE
  for (unsigned f = 0; f < NSTATES; f++) {
    for (unsigned t = 0; t < sizeof targets / sizeof targets[0]; t++) {
      unsigned from = all_states[f], to = targets[t];
      if (to <= IBV_QPS_ERR && transition_ok(from, to)) continue;
      EXPECTF(drive(k.qp, from, k.qpn) == 0, "cannot reach state %u", from);
      EXPECTF(modify(k.qp, to, mask_into(to), k.qpn) == -1, "%u -> %u accepted", from, to);
      EXPECTF(qp_state(k.qp) == from, "%u -> %u refused but the QP moved to %u", from, to, qp_state(k.qp));
    }
  }
  return 0;
}

// Each valid step with one required bit missing: EINVAL, QP unchanged.
static const struct { unsigned from, to, required; } steps[] = {
  { IBV_QPS_RESET, IBV_QPS_INIT, M_INIT }, { IBV_QPS_INIT, IBV_QPS_RTR, M_RTR },
  { IBV_QPS_RTR, IBV_QPS_RTS, M_RTS }, { IBV_QPS_RTS, IBV_QPS_SQD, IBV_QP_STATE },
};

static int c_qp_missing_required(void) {
  struct kit k;
  EXPECT(kit_open(&k) == 0);
  int n = 0;
  for (unsigned s = 0; s < sizeof steps / sizeof steps[0]; s++) {
    unsigned accepted = 0;
    for (int bit = 0; bit < 32; bit++) {
      if (!(steps[s].required & (1u << bit))) continue;
      EXPECT(drive(k.qp, steps[s].from, k.qpn) == 0);
      if (modify(k.qp, steps[s].to, steps[s].required & ~(1u << bit), k.qpn) == 0) accepted |= 1u << bit;
      else EXPECT(qp_state(k.qp) == steps[s].from);
    }
    if (accepted && n < WHY_LEN - 40)
      n += snprintf(why + n, WHY_LEN - n, "%u->%u without 0x%x ok; ", steps[s].from, steps[s].to, accepted);
  }
  return n ? 1 : 0;
}

// Each valid step with one attribute the table does not list for it (an
// IBV_QP_* bit or an unknown bit): EINVAL, QP unchanged.
static const struct { unsigned from, to, required, allowed; } allowed[] = {
  { IBV_QPS_RESET, IBV_QPS_INIT, M_INIT, M_INIT },
  { IBV_QPS_INIT, IBV_QPS_INIT, IBV_QP_STATE,
    IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS },
  { IBV_QPS_INIT, IBV_QPS_RTR, M_RTR, M_RTR | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX |
    RDMA_QP_SR | RDMA_QP_ADAPTIVE_RTO | RDMA_QP_MAX_INFLIGHT | RDMA_QP_ROCE_V1 },
  { IBV_QPS_RTR, IBV_QPS_RTS, M_RTS, M_RTS | IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS |
    IBV_QP_MIN_RNR_TIMER | RDMA_QP_ADAPTIVE_RTO | RDMA_QP_MAX_INFLIGHT },
  { IBV_QPS_RTS, IBV_QPS_RTS, IBV_QP_STATE, IBV_QP_STATE | IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS |
    IBV_QP_MIN_RNR_TIMER | RDMA_QP_ADAPTIVE_RTO | RDMA_QP_MAX_INFLIGHT },
  { IBV_QPS_RTS, IBV_QPS_SQD, IBV_QP_STATE, IBV_QP_STATE },
  { IBV_QPS_RTS, IBV_QPS_RESET, IBV_QP_STATE, IBV_QP_STATE },
  { IBV_QPS_RTS, IBV_QPS_ERR, IBV_QP_STATE, IBV_QP_STATE },
};

// The bits rdma_qp.c used to accept and ignore (CUR_STATE where the table
// does not list it, EN_SQD_ASYNC_NOTIFY, PORT outside RESET/INIT, QKEY)
// and RoCE v1 (meaningful only with IBV_QP_AV): tested apart from the others.
#define IGNORED_BITS (IBV_QP_CUR_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY | IBV_QP_PORT | IBV_QP_QKEY | \
                      RDMA_QP_ROCE_V1)

// Tries each step of `allowed` with one more bit of `bits` than it allows.
static int extra_bits(unsigned bits) {
  struct kit k;
  EXPECT(kit_open(&k) == 0);
  int n = 0;
  for (unsigned s = 0; s < sizeof allowed / sizeof allowed[0]; s++) {
    unsigned accepted = 0;
    for (int bit = 0; bit < 32; bit++) {
      if ((allowed[s].allowed & (1u << bit)) || !(bits & (1u << bit))) continue;
      EXPECT(drive(k.qp, allowed[s].from, k.qpn) == 0);
      if (modify(k.qp, allowed[s].to, allowed[s].required | (1u << bit), k.qpn) == 0) accepted |= 1u << bit;
      else EXPECT(qp_state(k.qp) == allowed[s].from);
    }
    if (accepted && n < WHY_LEN - 40)
      n += snprintf(why + n, WHY_LEN - n, "%u->%u extra 0x%x ok; ", allowed[s].from, allowed[s].to, accepted);
  }
  return n ? 1 : 0;
}

static int c_qp_extra_bits(void) { return extra_bits(~IGNORED_BITS); }
static int c_qp_extra_ignored_bits(void) { return extra_bits(IGNORED_BITS); }

// Access flags outside IBV_ACCESS_*'s defined bits: EINVAL, QP unchanged.
static int c_qp_bad_access(void) {
  struct kit k;
  EXPECT(kit_open(&k) == 0);
  unsigned vals[] = { 0xffff, 1u << 31, 1u << 10 };
  for (unsigned i = 0; i < 3; i++) {
    struct rdma_qp_attr a = attrs_for(IBV_QPS_INIT, 0);
    a.qp_access_flags = vals[i];
    EXPECTF(rdma_modify_qp(k.qp, &a, M_INIT) == -1, "RESET -> INIT with access 0x%x accepted", vals[i]);
    EXPECT(qp_state(k.qp) == IBV_QPS_RESET);
  }
  return 0;
}

// ======================= UD and address handles =======================

// An AH attribute to this port's own address in pd.
static struct rdma_ah_attr ah_args(int pd) {
  struct rdma_ah_attr a;
  memset(&a, 0, sizeof a);
  a.pd = pd;
  a.dipv4 = port.ipv4;
  a.hop_limit = 64;
  a.port_num = 1;
  return a;
}

static unsigned long long live_ahs(void) {
  struct rdma_dev_stats d;
  return rdma_dev_stats(&d) == 0 ? d.live_ahs : ~0ULL;
}

// create_ah with every bad pointer: -1, no AH made.
static int c_ptr_create_ah(void) {
  int pd = rdma_alloc_pd();
  EXPECT(pd >= 0);
  unsigned long long before = live_ahs();
  for (int i = 0; i < NBAD; i++)
    EXPECTF(rdma_create_ah((void *)bad[i]) == -1, "create_ah(%p)", (void *)bad[i]);
  EXPECT(live_ahs() == before);
  EXPECT(rdma_dealloc_pd(pd) == 0);       // no AH took a reference
  return 0;
}

// Bad AH attributes and handles: -1 and nothing made or destroyed.
static int c_handle_ah(void) {
  int pd = rdma_alloc_pd();
  EXPECT(pd >= 0);
  unsigned long long before = live_ahs();
  int pds[] = { -1, dev.max_pd, 1 << 30, pd + 1 };
  for (int i = 0; i < 4; i++) {
    struct rdma_ah_attr a = ah_args(pds[i]);
    EXPECTF(rdma_create_ah(&a) == -1, "create_ah in pd %d", pds[i]);
  }
  struct rdma_ah_attr a = ah_args(pd + 1);
  a.dipv4 = (port.ipv4 & ~0xffu) | 0xfd;  // nobody: a bad PD is refused before any ARP wait
  EXPECT(rdma_create_ah(&a) == -1);
  a = ah_args(pd);
  a.port_num = 2;
  EXPECT(rdma_create_ah(&a) == -1);
  a = ah_args(pd);
  a.dipv4 = 0;
  EXPECT(rdma_create_ah(&a) == -1);
  EXPECT(live_ahs() == before);
  a = ah_args(pd);
  int ah = rdma_create_ah(&a);
  EXPECT(ah >= 0 && live_ahs() == before + 1);
  EXPECT(rdma_dealloc_pd(pd) == -1);      // the AH holds it
  int pid = fork();
  if (pid == 0) exit(rdma_destroy_ah(ah) != -1);   // another process's AH
  int st = -1;
  wait(&st);
  EXPECT(st == 0 && live_ahs() == before + 1);
  EXPECT(rdma_destroy_ah(ah) == 0 && rdma_destroy_ah(ah) == -1);
  int hs[] = { -1, RDMA_MAX_AH, 1 << 30, (int)0x80000000 };
  for (int i = 0; i < 4; i++) EXPECTF(rdma_destroy_ah(hs[i]) == -1, "destroy_ah(%d)", hs[i]);
  EXPECT(live_ahs() == before && rdma_dealloc_pd(pd) == 0);
  return 0;
}

// ---- shared receive queues (proto-spec srq.md) ----

static unsigned long long live_srqs(void) {
  struct rdma_dev_stats d;
  return rdma_dev_stats(&d) == 0 ? d.live_srqs : ~0ULL;
}

static int new_srq(int pd, unsigned wr) {
  struct rdma_srq_create c = { .pd = pd, .max_wr = wr, .max_sge = 1 };
  return sys_rdma_create_srq(&c);
}

// srq's every verb refused: -1 (destroy included) and nothing changed.
static int srq_refused(int srq, const char *what) {
  struct rdma_srq_attr a = { .srq_limit = 1 };
  struct ibv_sge sge = { (unsigned long long)buf, 64, 0 };
  struct rdma_recv_wr wr = { .wr_id = 1, .sg_list = (unsigned long long)&sge, .num_sge = 1 };
  int err = 0;
  EXPECTF(rdma_modify_srq(srq, &a, IBV_SRQ_LIMIT) == -1, "modify_srq on %s SRQ %d", what, srq);
  EXPECTF(rdma_query_srq(srq, &a) == -1, "query_srq on %s SRQ %d", what, srq);
  EXPECTF(rdma_post_srq_recv(srq, &wr, 1, &err) == -1, "post_srq_recv to %s SRQ %d", what, srq);
  EXPECTF(sys_rdma_destroy_srq(srq) == -1, "destroy_srq of %s SRQ %d", what, srq);
  return 0;
}

// [SRQ-VERB-6] SRQ handles out of range, destroyed, and another process's: refused
static int c_srq_handles(void) {
  int pd = rdma_alloc_pd(), gone, srq;
  EXPECT(pd >= 0);
  int hs[] = { -1, RDMA_MAX_SRQ, RDMA_MAX_SRQ + 1, 1 << 30, (int)0x80000000 };
  for (int i = 0; i < 5; i++)
    if (srq_refused(hs[i], "an unheld")) return 1;
  EXPECT((gone = new_srq(pd, 4)) >= 0 && sys_rdma_destroy_srq(gone) == 0);
  if (srq_refused(gone, "a destroyed")) return 1;
  EXPECT((srq = new_srq(pd, 4)) >= 0);
  unsigned long long before = live_srqs();
  int pid = fork();
  EXPECT(pid >= 0);
  if (pid == 0) exit(srq_refused(srq, "the parent's"));
  int st = -1;
  EXPECT(wait(&st) == pid);
  EXPECTF(st == 0, "child: %d (1: the parent's SRQ took a verb)", st);
  struct rdma_srq_attr a;
  EXPECT(rdma_query_srq(srq, &a) == 0 && a.srq_limit == 0 && live_srqs() == before);
  EXPECT(rdma_dealloc_pd(pd) == -1);      // the SRQ holds it
  EXPECT(sys_rdma_destroy_srq(srq) == 0 && rdma_dealloc_pd(pd) == 0);
  return 0;
}

// [SRQ-VERB-6] create_qp naming a bad SRQ (unheld, destroyed, another PD's) makes no QP
static int c_srq_bad_in_create_qp(void) {
  int pd = rdma_alloc_pd(), pd2 = rdma_alloc_pd(), cq = rdma_create_cq(16, -1, 0);
  EXPECT(pd >= 0 && pd2 >= 0 && cq >= 0);
  int other = new_srq(pd2, 4), gone = new_srq(pd, 4);
  EXPECT(other >= 0 && gone >= 0 && sys_rdma_destroy_srq(gone) == 0);
  int bad_srq[] = { -2, RDMA_MAX_SRQ, 1 << 30, gone, other };   // (-1 + 1 = 0 names none)
  int before = qps_of(getpid());
  for (int i = 0; i < 5; i++) {
    struct rdma_qp_create c = qp_args(pd, cq, 4, 1);
    c.srq = bad_srq[i] + 1;
    EXPECTF(sys_rdma_create_qp(&c) == -1, "create_qp with SRQ %d", bad_srq[i]);
  }
  EXPECT(qps_of(getpid()) == before);
  EXPECT(sys_rdma_destroy_srq(other) == 0);   // no QP took it
  EXPECT(rdma_destroy_cq(cq) == 0 && rdma_dealloc_pd(pd) == 0 && rdma_dealloc_pd(pd2) == 0);
  return 0;
}

// [SRQ-VERB-5] posting: full -> ENOMEM, too many SGEs -> EINVAL, the WRs before it posted;
// every bad pointer refused
static int c_srq_post_and_pointers(void) {
  int pd = rdma_alloc_pd(), srq;
  EXPECT(pd >= 0 && (srq = new_srq(pd, 2)) >= 0);
  struct rdma_mr_keys keys;
  int mr = rdma_reg_mr(pd, buf, sizeof buf, ACC_ALL, &keys);
  EXPECT(mr >= 0);
  struct ibv_sge sge[2] = { { (unsigned long long)buf, 64, keys.lkey }, { (unsigned long long)buf, 64, keys.lkey } };
  struct rdma_recv_wr wr[3];
  for (int i = 0; i < 3; i++)
    wr[i] = (struct rdma_recv_wr){ .wr_id = (unsigned)i, .sg_list = (unsigned long long)sge, .num_sge = 1 };
  int err = 0;
  wr[1].num_sge = 2;                         // max_sge 1
  EXPECT(rdma_post_srq_recv(srq, wr, 3, &err) == 1 && err == RDMA_EINVAL);
  wr[1].num_sge = 1;
  EXPECT(rdma_post_srq_recv(srq, wr, 3, &err) == 1 && err == RDMA_ENOMEM);   // 2 WRs: full
  for (int i = 0; i < NBAD; i++) {
    EXPECTF(sys_rdma_create_srq((void *)bad[i]) == -1, "create_srq(%p)", (void *)bad[i]);
    EXPECTF(rdma_query_srq(srq, (void *)bad[i]) == -1, "query_srq(%p)", (void *)bad[i]);
    EXPECTF(rdma_modify_srq(srq, (void *)bad[i], IBV_SRQ_LIMIT) == -1, "modify_srq(%p)", (void *)bad[i]);
    EXPECTF(rdma_post_srq_recv(srq, (void *)bad[i], 1, &err) == -1, "post_srq_recv(%p)", (void *)bad[i]);
  }
  struct rdma_srq_attr a = { .max_wr = 4, .srq_limit = 1 };
  EXPECT(rdma_modify_srq(srq, &a, IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT) == -1);   // [SRQ-VERB-3]: none applied
  EXPECT(rdma_modify_srq(srq, &a, 1u << 5) == -1);
  EXPECT(rdma_query_srq(srq, &a) == 0 && a.max_wr == 2 && a.srq_limit == 0);
  EXPECT(sys_rdma_destroy_srq(srq) == 0 && sys_rdma_dereg_mr(mr) == 0 && rdma_dealloc_pd(pd) == 0);
  return 0;
}

// qp_type: RC (0 or 2) and UD (4) only.
static int c_ud_qp_type(void) {
  struct kit k;
  EXPECT(kit_open(&k) == 0);
  int before = qps_of(-1);
  int types[] = { 1, 3, 5, -1, 1 << 30 };
  for (int i = 0; i < 5; i++) {
    struct rdma_qp_create c = qp_args(k.pd, k.cq, 4, 1);
    c.qp_type = types[i];
    EXPECTF(sys_rdma_create_qp(&c) == -1, "create_qp type %d", types[i]);
  }
  EXPECT(qps_of(-1) == before);
  struct rdma_qp_create c = qp_args(k.pd, k.cq, 4, 1);
  c.qp_type = RDMA_QPT_UD;
  int ud = sys_rdma_create_qp(&c);
  EXPECT(ud >= 0 && sys_rdma_destroy_qp(ud) == 0);
  EXPECT(kit_close(&k) == 0);
  return 0;
}

// A UD QP at RTS: a WR naming a bad, destroyed or foreign AH, or an opcode
// UD has no use for, is refused with EINVAL and nothing leaves; an RC
// QP's WR never reads the UD fields as an AH.
static int c_ud_post_refused(void) {
  struct kit k;
  struct rdma_qp_stats st0, st1;
  EXPECT(kit_open(&k) == 0);
  struct rdma_qp_create c = qp_args(k.pd, k.cq, 4, 1);
  c.qp_type = RDMA_QPT_UD;
  int ud = sys_rdma_create_qp(&c);
  EXPECT(ud >= 0);
  struct rdma_qp_attr a;
  memset(&a, 0, sizeof a);
  a.port_num = 1;
  a.qkey = 0x11111111;
  unsigned masks[] = { IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY, IBV_QP_STATE,
                       IBV_QP_STATE | IBV_QP_SQ_PSN };
  unsigned states[] = { IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS };
  for (int i = 0; i < 3; i++) {
    a.qp_state = states[i];
    EXPECTF(rdma_modify_qp(ud, &a, masks[i]) == 0, "UD QP to state %d", states[i]);
  }
  struct rdma_ah_attr aa = ah_args(k.pd);
  int ah = rdma_create_ah(&aa), gone = rdma_create_ah(&aa);
  EXPECT(ah >= 0 && gone >= 0 && rdma_destroy_ah(gone) == 0);
  EXPECT(rdma_qp_stats(ud, &st0) == 0);
  struct ibv_sge sge = { (unsigned long)buf, 64, k.keys.lkey };
  struct { int ah; unsigned op; } bad_wrs[] = {
    { -1, IBV_WR_SEND }, { RDMA_MAX_AH, IBV_WR_SEND }, { gone, IBV_WR_SEND }, { 1 << 30, IBV_WR_SEND },
    { ah, IBV_WR_RDMA_WRITE }, { ah, IBV_WR_RDMA_READ }, { ah, IBV_WR_RDMA_WRITE_WITH_IMM }, { ah, 99 },
    { ah, IBV_WR_ATOMIC_CMP_AND_SWP }, { ah, IBV_WR_ATOMIC_FETCH_AND_ADD },   // RC only [REQ-ATOM-1]
  };
  for (int i = 0; i < (int)(sizeof bad_wrs / sizeof bad_wrs[0]); i++) {
    struct rdma_send_wr w = { .wr_id = 1, .opcode = bad_wrs[i].op, .sg_list = (unsigned long)&sge,
                              .num_sge = 1, .ud_ah = bad_wrs[i].ah, .ud_remote_qpn = c.qp_num,
                              .ud_remote_qkey = 0x11111111 };
    int err = 0;
    EXPECTF(sys_rdma_post_send(ud, &w, 1, &err) == 0 && err == RDMA_EINVAL, "WR %d accepted", i);
  }
  int pid = fork();
  if (pid == 0) {                         // the parent's AH on the child's own UD QP
    int pd = rdma_alloc_pd(), cq = rdma_create_cq(4, -1, 0);
    struct rdma_qp_create cc = qp_args(pd, cq, 4, 1);
    cc.qp_type = RDMA_QPT_UD;
    int q = sys_rdma_create_qp(&cc);
    struct rdma_mr_keys kk;
    int mr = rdma_reg_mr(pd, buf, 64, 0, &kk);
    struct ibv_sge s2 = { (unsigned long)buf, 64, kk.lkey };
    struct rdma_send_wr w = { .opcode = IBV_WR_SEND, .sg_list = (unsigned long)&s2, .num_sge = 1,
                              .ud_ah = ah, .ud_remote_qpn = c.qp_num, .ud_remote_qkey = 0x11111111 };
    int err = 0, ok = q >= 0 && mr >= 0;
    for (int i = 0; i < 3 && ok; i++) {
      a.qp_state = states[i];
      ok = rdma_modify_qp(q, &a, masks[i]) == 0;
    }
    exit(!ok || sys_rdma_post_send(q, &w, 1, &err) != 0 || err != RDMA_EINVAL);
  }
  int wst = -1;
  wait(&wst);
  EXPECT(wst == 0);
  EXPECT(rdma_qp_stats(ud, &st1) == 0 && st1.tx_frames == st0.tx_frames);
  EXPECT(rdma_destroy_ah(ah) == 0 && sys_rdma_destroy_qp(ud) == 0 && kit_close(&k) == 0);
  return 0;
}

// ======================= exhaustion and release =======================
// Create until refused (the count must be the reported limit: nothing else
// runs on this guest), destroy all, and the free pages are as before; then
// fill again and exit holding everything (the runner checks the exit).

struct pool { int h[512]; int n; };

static int fill(struct pool *p, int (*create)(void *), void *arg, int limit) {
  p->n = 0;
  while (p->n < (int)(sizeof p->h / sizeof p->h[0])) {
    int h = create(arg);
    if (h < 0) break;
    p->h[p->n++] = h;
  }
  return p->n == limit ? 0 : -1;
}

static int drain(struct pool *p, int (*destroy)(int)) {
  int bad = 0;
  while (p->n > 0) bad |= destroy(p->h[--p->n]);
  return bad;
}

static int mk_pd(void *unused) { return rdma_alloc_pd(); }
static int mk_chan(void *unused) { return rdma_create_chan(); }
// The smallest CQs: max_cq of them fit the kernel's ring pool (CQs of
// max_cqe run out of pool pages first, with ENOMEM: rdmatest's
// verbs_ring_pool_enomem).
static int mk_cq(void *unused) { return rdma_create_cq(1, -1, 0); }
static int mk_mr(void *pd) {
  struct rdma_mr_keys k;
  return rdma_reg_mr(*(int *)pd, buf, sizeof buf, ACC_ALL, &k);
}
static int mk_qp(void *kit) { struct kit *k = kit; return new_qp(k->pd, k->cq, 0); }

// limit < 0: not reported (the channel table); the second fill must still
// reach the first one's count.
static int exhaust(int (*create)(void *), void *arg, int (*destroy)(int), int limit) {
  static struct pool p;
  unsigned long before = free_pages();
  int r = fill(&p, create, arg, limit);
  int n = p.n;
  EXPECTF(r == 0 || limit < 0, "created %d, the limit is %d", n, limit);
  EXPECT(drain(&p, destroy) == 0);
  unsigned long after = free_pages();
  EXPECTF(after == before, "free pages %lu -> %lu after destroying all %d", before, after, n);
  fill(&p, create, arg, limit);
  EXPECTF(p.n == n, "second fill: %d, first %d", p.n, n);
  return 0;                              // exit holding them all
}

static int c_exhaust_pd(void) { return exhaust(mk_pd, 0, rdma_dealloc_pd, room(dev.max_pd, live().live_pds)); }
static int c_exhaust_chan(void) { return exhaust(mk_chan, 0, rdma_destroy_chan, -1); }
static int c_exhaust_cq(void) { return exhaust(mk_cq, 0, rdma_destroy_cq, room(dev.max_cq, live().live_cqs)); }
static int c_exhaust_mr(void) {
  int pd = rdma_alloc_pd();
  EXPECT(pd >= 0);
  return exhaust(mk_mr, &pd, sys_rdma_dereg_mr, room(dev.max_mr, live().live_mrs));
}
static int mk_ah(void *pd) { struct rdma_ah_attr a = ah_args(*(int *)pd); return rdma_create_ah(&a); }
static int c_exhaust_ah(void) {
  int pd = rdma_alloc_pd();
  EXPECT(pd >= 0);
  return exhaust(mk_ah, &pd, rdma_destroy_ah, RDMA_MAX_AH);
}
static int c_exhaust_qp(void) {
  struct kit k;
  EXPECT(kit_open(&k) == 0);
  EXPECT(sys_rdma_destroy_qp(k.qp) == 0);
  return exhaust(mk_qp, &k, sys_rdma_destroy_qp, room(dev.max_qp, live().live_qps));
}

// ======================= kills of blocked waiters =======================
// A child makes a kit, tells the parent it is about to block, and blocks
// in one call; the parent kills it. The child's exit status is -1 (killed),
// its QP is gone and every page comes back.

static volatile unsigned char never_written;

static void block_cq_event(struct kit *k) {
  unsigned long long cookie;
  rdma_req_notify(k->cq, 0);
  rdma_get_cq_event(k->ch, &cookie);
}
static void block_async(struct kit *k) { struct rdma_async_event e; rdma_get_async(&e, 1); }
static void block_wait_write(struct kit *k) { rdma_wait_write(&never_written, 0, FOREVER); }
static void block_wait_cq(struct kit *k) { rdma_wait_cq(k->cq, FOREVER); }

#define BLOCK_RETURNED 3     // the child's status if its blocking call returned
#define KILL_ROUNDS 300      // kills that race the child's way into the call
#define KILL_SWEEP_NS 60000  // their delays after the child's signal sweep 0..60 us

// Frames for the engine: unsignaled WRITEs of a QP connected to itself.
// Every frame taken in wakes rdma_wait_write's sleepers, who look at
// proc_killed and sleep again: each time a window for a kill.
static void noise(struct kit *k) {
  struct rdma_send_wr w[4];
  struct ibv_sge sge = { .addr = (unsigned long)buf, .length = 64, .lkey = k->keys.lkey };
  memset(w, 0, sizeof w);
  for (int i = 0; i < 4; i++) {
    w[i].opcode = IBV_WR_RDMA_WRITE;
    w[i].num_sge = 1;
    w[i].sg_list = (unsigned long)&sge;
    w[i].remote_addr = (unsigned long)buf + PG;
    w[i].rkey = k->keys.rkey;
  }
  sys_rdma_post_send(k->qp, w, 4, 0);
}

// Round 0 gives the child time to fall asleep; the others kill it on its
// way into the call or while frames keep waking it, each a little later
// than the one before: a kill landing between the call's look at
// proc_killed and its sleep must not be lost (the child would sleep
// forever and the wait below never return).
static int kill_blocked(void (*block)(struct kit *)) {
  int fds[2];
  struct kit frames;
  EXPECT(pipe(fds) == 0);
  EXPECT(kit_open(&frames) == 0 && drive(frames.qp, IBV_QPS_RTS, frames.qpn) == 0);
  unsigned long before = free_pages();
  for (int round = 0; round < KILL_ROUNDS; round++) {
    int pid = fork();
    EXPECT(pid >= 0);
    if (pid == 0) {
      struct kit k;
      close(fds[0]);
      if (kit_open(&k) < 0 || drive(k.qp, IBV_QPS_RTS, k.qpn) < 0) exit(2);
      write(fds[1], "b", 1);
      block(&k);
      exit(BLOCK_RETURNED);
    }
    char c;
    EXPECT(read(fds[0], &c, 1) == 1);
    if (round == 0) sleep(2);
    unsigned long t = clock_ns() + (unsigned long)(round % 100) * (KILL_SWEEP_NS / 100);
    do noise(&frames); while (clock_ns() < t);
    EXPECT(kill(pid) == 0);
    int st = 0;
    EXPECT(wait(&st) == pid);
    EXPECTF(st == -1, "round %d: child status %d, not killed (-1)", round, st);
    EXPECT(qps_of(pid) == 0 && qps_of(-1) == 1);
  }
  unsigned long after = free_pages();
  close(fds[0]);
  close(fds[1]);
  EXPECTF(after == before, "free pages %lu -> %lu", before, after);
  return 0;
}

static int c_kill_get_cq_event(void) { return kill_blocked(block_cq_event); }
static int c_kill_get_async(void) { return kill_blocked(block_async); }
static int c_kill_wait_write(void) { return kill_blocked(block_wait_write); }
static int c_kill_wait_cq(void) { return kill_blocked(block_wait_cq); }

// ======================= the kernel rdma_cm (SYS_ucma_*) =======================
// Results are >= 0 or a negated errno (uapi.h): a bad pointer -EFAULT, a
// bad or foreign id -EINVAL, a descriptor that is no CM channel -EBADF.

#define CM_PORT 7000                        // ports the cases listen on (any free one)

static unsigned long long cm_live_ids(void) {
  struct rdma_dev_stats d;
  return rdma_dev_stats(&d) == 0 ? d.cm_live_ids : ~0ull;
}

// Waits up to 10 s for channel fd's next event of type want (poll, then
// get_event): 0, or -1 (another event, none, or an error).
static int cm_expect(int fd, int want, struct ucma_event *ev) {
  struct pollfd pf = { .fd = fd, .events = POLLIN };
  if (poll(&pf, 1, 10000) != 1 || !(pf.revents & POLLIN)) return -1;
  return ucma_get_event(fd, ev) == 0 && ev->event == want ? 0 : -1;
}

// Every pointer argument with every bad address: -EFAULT, and the id is
// still what it was (it binds afterwards).
static int c_ucma_ptr(void) {
  int fd = ucma_create_chan(), id = ucma_create_id(fd, RDMA_PS_TCP, 0);
  EXPECT(fd >= 0 && id >= 0);
  for (int i = 0; i < NBAD; i++) {
    void *b = (void *)bad[i];
    EXPECTF(ucma_connect(id, b) == -EFAULT, "connect(%p)", b);
    EXPECTF(ucma_accept(id, b) == (b ? -EFAULT : -EINVAL), "accept(%p)", b);   // NULL: an RTU
    EXPECTF(ucma_reject(id, b, 8) == -EFAULT, "reject(%p)", b);
  }
  EXPECT(ucma_bind(id, 0, CM_PORT) == 0 && ucma_listen(id, 4) == 0);
  for (int i = 0; i < NBAD; i++)
    EXPECTF(ucma_init_qp_attr(id, IBV_QPS_INIT, (void *)bad[i]) == -EFAULT, "init_qp_attr(%p)", (void *)bad[i]);
  EXPECT(ucma_reject(id, buf, UCMA_PRIVATE_MAX + 1) == -EINVAL && ucma_reject(id, buf, -1) == -EINVAL);
  EXPECT(ucma_destroy_id(id) == 0 && close(fd) == 0);
  return 0;
}

// Ids out of range and destroyed, descriptors that are no CM channel
// (none, the console, a completion channel), port spaces, ports and
// states a call does not take: each its errno, nothing else changes.
static int c_ucma_handle(void) {
  struct rdma_qp_attr a;
  struct ucma_event ev;
  int fd = ucma_create_chan(), cch = rdma_create_chan();
  EXPECT(fd >= 0 && cch >= 0);
  int ids[] = { -1, -1000, 1 << 20, 0x7fffffff };
  for (int i = 0; i < 4; i++) {
    EXPECT(ucma_destroy_id(ids[i]) == -EINVAL && ucma_bind(ids[i], 0, 0) == -EINVAL);
    EXPECT(ucma_listen(ids[i], 1) == -EINVAL && ucma_disconnect(ids[i]) == -EINVAL);
    EXPECT(ucma_init_qp_attr(ids[i], IBV_QPS_INIT, &a) == -EINVAL && ucma_established(ids[i]) == -EINVAL);
  }
  int fds[] = { -1, 0, 99, cch };
  for (int i = 0; i < 4; i++) {
    EXPECTF(ucma_create_id(fds[i], RDMA_PS_TCP, 0) == -EBADF, "create_id on fd %d", fds[i]);
    EXPECTF(ucma_get_event(fds[i], &ev) == -EBADF, "get_event on fd %d", fds[i]);
  }
  EXPECT(ucma_create_id(fd, 0x4242, 0) == -EINVAL);
  int id = ucma_create_id(fd, RDMA_PS_TCP, 7);
  EXPECT(id >= 0);
  EXPECT(ucma_bind(id, 0, 70000) == -EINVAL && ucma_bind(id, 0x01020304, 0) == -EINVAL);
  EXPECT(ucma_listen(id, 1) == -EINVAL);                         // not bound
  EXPECT(ucma_connect(id, &(struct ucma_conn_param){ 0 }) == -EINVAL);   // no address
  EXPECT(ucma_accept(id, NULL) == -EINVAL && ucma_reject(id, NULL, 0) == -EINVAL);
  EXPECT(ucma_resolve_route(id, 100) == -EINVAL && ucma_resolve_addr(id, 0, 0, 1, 100) == -EINVAL);
  EXPECT(ucma_init_qp_attr(id, IBV_QPS_RTR, &a) == -EINVAL);      // no exchange yet
  int m = ucma_init_qp_attr(id, IBV_QPS_INIT, &a);
  EXPECT(m == (IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) && a.port_num == 1);
  EXPECT(ucma_bind(id, 0, CM_PORT) == 0 && ucma_bind(id, 0, CM_PORT + 1) == -EINVAL);
  int id2 = ucma_create_id(fd, RDMA_PS_TCP, 8);
  EXPECT(id2 >= 0 && ucma_bind(id2, 0, CM_PORT) == -EADDRINUSE);
  EXPECT(ucma_listen(id, 4) == 0 && ucma_listen(id, 4) == -EINVAL);
  EXPECT(fcntl(fd, F_SETFL, O_NONBLOCK) == 0 && ucma_get_event(fd, &ev) == -EAGAIN);
  EXPECT(ucma_destroy_id(id) == 0 && ucma_destroy_id(id) == -EINVAL && ucma_bind(id, 0, 1) == -EINVAL);
  EXPECT(ucma_bind(id2, 0, CM_PORT) == 0);                       // the destroyed one freed the port
  EXPECT(close(fd) == 0 && ucma_destroy_id(id2) == -EINVAL);     // the channel took its ids
  EXPECT(rdma_destroy_chan(cch) == 0);
  return 0;
}

// RDMA_PS_UDP ids [IBCM-CMA-5]: the QP attributes are a UD QP's at any time (INIT with
// RDMA_UDP_QKEY, RTR, RTS); accept / reject without a SIDR_REQ, a connect
// without an address, and a SIDR_REQ's private data past its room (after
// rdma_cm's header) are -EINVAL and change nothing: the id still connects
// afterwards as far as its state allows; a port is a port per port space.
static int c_ucma_udp(void) {
  struct ucma_event ev;
  struct rdma_qp_attr a;
  int fd = ucma_create_chan(), id = ucma_create_id(fd, RDMA_PS_UDP, 5);
  EXPECT(fd >= 0 && id >= 0);
  int m = ucma_init_qp_attr(id, IBV_QPS_INIT, &a);
  EXPECT(m == (IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY) && a.qkey == RDMA_UDP_QKEY);
  EXPECT(ucma_init_qp_attr(id, IBV_QPS_RTR, &a) == IBV_QP_STATE);
  EXPECT(ucma_init_qp_attr(id, IBV_QPS_RTS, &a) == (IBV_QP_STATE | IBV_QP_SQ_PSN));
  EXPECT(ucma_init_qp_attr(id, IBV_QPS_ERR, &a) == -EINVAL);
  struct ucma_conn_param p = { .qp_num = 5 };
  EXPECT(ucma_accept(id, &p) == -EINVAL && ucma_accept(id, NULL) == -EINVAL);
  EXPECT(ucma_reject(id, NULL, 0) == -EINVAL && ucma_connect(id, &p) == -EINVAL);
  int tcp = ucma_create_id(fd, RDMA_PS_TCP, 6);
  EXPECT(tcp >= 0 && ucma_bind(tcp, 0, CM_PORT + 2) == 0 && ucma_bind(id, 0, CM_PORT + 2) == 0);
  EXPECT(ucma_resolve_addr(id, 0, port.ipv4, 9000, 2000) == 0);
  EXPECT(cm_expect(fd, RDMA_CM_EVENT_ADDR_RESOLVED, &ev) == 0 && ev.id == id);
  p.private_data_len = UCMA_PRIVATE_MAX;                         // past a SIDR_REQ's room
  EXPECT(ucma_connect(id, &p) == -EINVAL);
  EXPECT(ucma_init_qp_attr(id, IBV_QPS_INIT, &a) == m);          // unchanged
  EXPECT(ucma_destroy_id(id) == 0 && ucma_destroy_id(tcp) == 0 && close(fd) == 0);
  return 0;
}

// Address resolution to our own address: ADDR_RESOLVED (POLLIN on the
// channel first), then ROUTE_RESOLVED, each naming the id and its cookie;
// to an address nobody has (no ARP answer), ADDR_ERROR -EHOSTUNREACH after
// the timeout, not before.
static int c_ucma_resolve(void) {
  struct ucma_event ev;
  int fd = ucma_create_chan(), id = ucma_create_id(fd, RDMA_PS_TCP, 0x1234);
  EXPECT(fd >= 0 && id >= 0);
  EXPECT(ucma_resolve_addr(id, 0, port.ipv4, 9000, 2000) == 0);
  EXPECT(cm_expect(fd, RDMA_CM_EVENT_ADDR_RESOLVED, &ev) == 0);
  EXPECT(ev.id == id && ev.cookie == 0x1234 && ev.status == 0 && ev.dst_ip == port.ipv4);
  EXPECT(ev.dst_port == 9000 && ev.src_ip == port.ipv4 && ev.src_port != 0);
  EXPECT(ucma_resolve_route(id, 100) == 0 && cm_expect(fd, RDMA_CM_EVENT_ROUTE_RESOLVED, &ev) == 0);
  int id2 = ucma_create_id(fd, RDMA_PS_TCP, 0x99);
  uint64 t0 = clock_ns();
  EXPECT(id2 >= 0 && ucma_resolve_addr(id2, 0, (port.ipv4 & ~0xffu) | 0xf3, 9000, 300) == 0);
  EXPECT(cm_expect(fd, RDMA_CM_EVENT_ADDR_ERROR, &ev) == 0);
  uint64 ms = (clock_ns() - t0) / 1000000;
  EXPECT(ev.id == id2 && ev.status == -EHOSTUNREACH);
  EXPECTF(ms >= 290, "ADDR_ERROR after %lu ms (timeout 300)", ms);
  EXPECT(close(fd) == 0);
  return 0;
}

// Another process's ids and channel: the parent's, in a child (the
// channel's descriptor is inherited), and the child's, in the parent. Every
// call is refused and the owner's id still works.
static int c_ucma_foreign(void) {
  int fd = ucma_create_chan(), id = ucma_create_id(fd, RDMA_PS_TCP, 1);
  int up[2], down[2];
  struct ucma_event ev;
  struct rdma_qp_attr a;
  EXPECT(fd >= 0 && id >= 0 && pipe(up) == 0 && pipe(down) == 0);
  int pid = fork();
  EXPECT(pid >= 0);
  if (pid == 0) {
    int bad = ucma_destroy_id(id) != -EINVAL || ucma_bind(id, 0, CM_PORT) != -EINVAL ||
              ucma_listen(id, 1) != -EINVAL || ucma_init_qp_attr(id, IBV_QPS_INIT, &a) != -EINVAL ||
              ucma_resolve_addr(id, 0, port.ipv4, 1, 100) != -EINVAL ||
              ucma_create_id(fd, RDMA_PS_TCP, 2) != -EBADF || ucma_get_event(fd, &ev) != -EBADF;
    int cfd = ucma_create_chan(), cid = ucma_create_id(cfd, RDMA_PS_TCP, 3);
    write(up[1], &cid, sizeof cid);
    char c;
    read(down[0], &c, 1);                        // the parent tried
    exit(bad ? 1 : cid < 0 || ucma_bind(cid, 0, CM_PORT + 2) != 0 ? 3 : 0);
  }
  int cid = -1;
  EXPECT(read(up[0], &cid, sizeof cid) == sizeof cid && cid >= 0);
  int refused = ucma_destroy_id(cid) == -EINVAL && ucma_bind(cid, 0, CM_PORT + 2) == -EINVAL &&
                ucma_listen(cid, 1) == -EINVAL && ucma_disconnect(cid) == -EINVAL &&
                ucma_migrate_id(cid, fd) == -EINVAL;
  write(down[1], "x", 1);
  int st = -1;
  EXPECT(wait(&st) == pid);
  EXPECTF(st == 0, "child: status %d (1: the parent's id or channel worked in the child)", st);
  EXPECT(refused);
  EXPECT(ucma_bind(id, 0, CM_PORT + 3) == 0 && ucma_destroy_id(id) == 0 && close(fd) == 0);
  return 0;
}

// A process that exits holding a channel, a listener and ids leaves
// nothing: the CM's live ids are back, and its port can be listened on again.
static int c_ucma_exit_releases(void) {
  unsigned long long before = cm_live_ids();
  int pid = fork();
  EXPECT(pid >= 0);
  if (pid == 0) {
    int fd = ucma_create_chan(), l = ucma_create_id(fd, RDMA_PS_TCP, 1);
    int r = fd >= 0 && l >= 0 && ucma_bind(l, 0, CM_PORT) == 0 && ucma_listen(l, 8) == 0;
    for (int i = 0; i < 5; i++) r = r && ucma_create_id(fd, RDMA_PS_TCP, 2) >= 0;
    exit(r && cm_live_ids() == before + 6 ? 0 : 1);
  }
  int st = -1;
  EXPECT(wait(&st) == pid && st == 0);
  EXPECTF(cm_live_ids() == before, "live ids %lu, before %lu", cm_live_ids(), before);
  int fd = ucma_create_chan(), l = ucma_create_id(fd, RDMA_PS_TCP, 1);
  EXPECT(ucma_bind(l, 0, CM_PORT) == 0 && ucma_listen(l, 8) == 0 && close(fd) == 0);
  EXPECT(cm_live_ids() == before);
  return 0;
}

// A process killed asleep in get_event ends (not left asleep), and its
// ids go with it.
static void block_cm_event(struct kit *k) {
  struct ucma_event ev;
  int fd = ucma_create_chan();
  (void)k;
  ucma_create_id(fd, RDMA_PS_TCP, 0);
  ucma_get_event(fd, &ev);
}

static int c_kill_cm_get_event(void) {
  unsigned long long before = cm_live_ids();
  if (kill_blocked(block_cm_event)) return 1;
  EXPECTF(cm_live_ids() == before, "live ids %lu, before %lu", cm_live_ids(), before);
  return 0;
}

// ======================= runner =======================

// Every case, in the order they run. Last: limit_mr_size_unaligned panicked
// kernels whose MR page directory had no room for the extra page (skip it
// with -x on such a kernel to run the rest).
#define HOSTILE_CASES(X) \
  X(ptr_query_device) \
  X(ptr_query_port) \
  X(ptr_reg_mr_addr) \
  X(ptr_reg_mr_keys) \
  X(ptr_create_qp) \
  X(ptr_modify_qp) \
  X(ptr_query_qp) \
  X(ptr_post_send) \
  X(ptr_post_recv) \
  X(ptr_map_qp) \
  X(ptr_poll_cq) \
  X(ptr_get_cq_event) \
  X(ptr_get_async) \
  X(ptr_qp_stats) \
  X(ptr_set_neigh) \
  X(ptr_wait_write) \
  X(handle_out_of_range) \
  X(handle_destroyed) \
  X(handle_parent_in_child) \
  X(handle_child_in_parent) \
  X(limit_mr_size) \
  X(limit_mr_access) \
  X(limit_qp_caps) \
  X(limit_cqe) \
  X(limit_queue_full) \
  X(limit_post_state) \
  X(cq_ring_scribble) \
  X(limit_post_sge) \
  X(limit_inline) \
  X(limit_counts) \
  X(limit_rd_atomic) \
  X(atomic_refused) \
  X(limit_attr_ranges) \
  X(limit_wait_timeouts) \
  X(qp_invalid_transitions) \
  X(qp_missing_required) \
  X(qp_extra_bits) \
  X(qp_extra_ignored_bits) \
  X(qp_bad_access) \
  X(exhaust_pd) \
  X(exhaust_chan) \
  X(exhaust_cq) \
  X(exhaust_mr) \
  X(exhaust_qp) \
  X(kill_get_cq_event) \
  X(kill_get_async) \
  X(kill_wait_write) \
  X(kill_wait_cq) \
  X(limit_mr_size_unaligned) \
  X(ptr_create_ah) \
  X(handle_ah) \
  X(ud_qp_type) \
  X(ud_post_refused) \
  X(exhaust_ah) \
  X(ucma_ptr) \
  X(ucma_handle) \
  X(ucma_udp) \
  X(ucma_resolve) \
  X(ucma_foreign) \
  X(ucma_exit_releases) \
  X(kill_cm_get_event) \
  X(srq_handles) \
  X(srq_bad_in_create_qp) \
  X(srq_post_and_pointers)

// A case's function returns 0 if it passed, else 1 with why set; in the
// runner's child, a failure ends the case with that reason.
static void run_hostile(int (*fn)(void)) {
  why[0] = 0;
  if (fn()) tr_failed(why[0] ? why : "failed");
}

#define WRAP(name) static void run_##name(void) { run_hostile(c_##name); }
HOSTILE_CASES(WRAP)
#define ENTRY(name) { #name, run_##name, TR_QUICK, 0 },
static const struct tr_case cases[] = {
  HOSTILE_CASES(ENTRY)
  { NULL },
};
static const struct tr_case *const tables[] = { cases };

// The limits every case tests against, and the addresses no call may take.
static int read_limits(void) {
  if (rdma_query_device(&dev) < 0 || rdma_query_port(1, &port) < 0) {
    printf("rdmahostile: no RDMA device\n");
    return -1;
  }
  hostile_bad_addrs(bad);
  return 0;
}

static const struct tr_suite suite = {
  .prog = "rdmahostile",
  .tables = tables,
  .ntables = 1,
  .timeout_s = 300,
  .check_pages = 1,
  .setup = read_limits,
};

int main(int argc, char **argv) {
  return tr_main(&suite, argc, argv);
}
