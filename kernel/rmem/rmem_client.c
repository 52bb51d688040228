// rmem_client.c: the kernel's own client of a memory node (rmemd,
// proto-spec/rmem.md), registered as the pager's backing store
// (core/pager.h). A kernel consumer of the kernel rdma_cm (cma.h, with an
// owner key of its own) and of the verbs (kverbs.h, with a kv_owner of its
// own): a PD, one CQ whose completion handler wakes the waiters, an RC QP
// (selective repeat when the node offers it too [SR-NEG-1]), one MR over a
// control page (the protocol's SEND / RECV messages), and per io() chunk
// one MR over the kernel pages being moved.
//
// Owns: the connection (the "rmem" kernel thread makes it, watches it and
// makes a new one after a loss, with backoff), the remote space (ALLOC'd
// at connect: nslots pages in one or more regions), the slot -> region
// mapping, which slots hold content of this connection (a bitmap: a node
// frees a client's regions when the connection goes, so after a reconnect
// a read of a slot written before is refused with -1 [the pager then kills
// the process whose page it was]), and the counters rmemctl shows.
//
// io(): a slot is a page of a region; a write is one RDMA WRITE of the
// page, a read one RDMA READ, every page of the call in flight at once up
// to the send queue's depth (the transport holds READs beyond the
// initiator depth itself). The transport's own retransmissions under loss
// are invisible here; a WR that completes with an error (the transport
// gave up: RETRY_EXC, or the QP was flushed) marks the connection lost,
// and io() waits for the thread's new connection within its retry budget
// and does that chunk again (a read only if its slots were written on the
// new connection), else returns -1.
//
// Locking: rc.lock guards the connection's state and counters and is never
// held across a kv_* or cma_* call; the completion handler takes only
// rc.kick_lock (never held across kv_*), as kverbs.h requires.
#include "lib/types.h"
#include "lib/param.h"
#include "lib/riscv.h"
#include "lib/klib.h"
#include "lib/bootarg.h"
#include "core/lock.h"
#include "core/proc.h"
#include "core/pmem.h"
#include "core/printk.h"
#include "core/timer.h"
#include "core/pager.h"
#include "proc/lifecycle.h"
#include "net/net.h"
#include "rdma/kverbs.h"
#include "rdma/cma.h"
#include "rmem/rmem_wire.h"
#include "rmem/rmem_client.h"

// The rdma_cm owner key of the kernel's own ids: the front end's keys are
// pids, which are positive.
#define RMEM_CM_OWNER (-1)
// Pages in flight per connection: the send queue's depth. 128 pages are
// 512 KiB, half the transport's default window of 1 MiB (rdma_cm.h's
// RDMAX_INFLIGHT_BYTES), enough to keep a guest link busy.
#define RMEM_SQ_DEPTH    128
#define RMEM_CTL_RECVS   1                      // one control request outstanding at a time
#define RMEM_CQE         (RMEM_SQ_DEPTH + RMEM_CTL_RECVS)
#define RMEM_POLL_BATCH  16                     // completions taken per kv_poll_cq
#define RMEM_IO_VA       0x200000000ULL         // every data MR's address (MRs differ by key)
#define RMEM_CTL_VA      0x100000000ULL
// READ depths: the REQ offers the device's limit both ways (rdma.h's
// RDMA_MAX_RD: 16; a node sizes its responder resources from our
// initiator depth, as rmemd does); the QP keeps at most half the node's
// resources in flight. A full depth would be safe (a responder with all
// its resources held retires the READ with the lowest PSN for a new one
// [RESP-READ-4]) but measured no faster: bench/rdma/rmem_paging.py, two
// runs each, scan / random ms, 48M guest, WS 8 MiB: depth 8: 617, 611 /
// 1090, 1090 clean, 668, 639 / 1488, 1460 at 1 % loss; depth 16: 670,
// 588 / 1127, 1075 clean, 756, 628 / 1484, 1433 at 1 % (a fault reads
// at most 1 + PAGER_READAHEAD = 9 pages; one caller's READs rarely fill 8).
#define RMEM_RD_RESOURCES 16
#define RMEM_INIT_DEPTH   8
// The transport's window in bytes: the pages in flight, twice (READ
// responses of one caller while another's WRITEs go).
#define RMEM_WINDOW_BYTES (2 * RMEM_SQ_DEPTH * PGSIZE)
#define RMEM_POST_BATCH   16                    // WRs built on the stack per kv_post_send
// Timing. The CM steps end in an event by themselves (cma.c: a silent
// peer is UNREACHABLE after about 2 s); ACK timeout 18 (1.07 s, the
// adaptive RTO's ceiling) with 7 retries: a dead node ends the QP in about
// 3 s, loss alone does not (rdma_cm.c's reasoning).
#define RMEM_RESOLVE_MS      2000
#define RMEM_CM_STEP_NS      10000000000ULL    // far bound on one CM step's event
#define RMEM_CM_POLL_NS      2000000ULL        // a CM step's event is looked for this often
#define RMEM_ACK_TIMEOUT     18
#define RMEM_RETRY_COUNT     7
#define RMEM_MIN_RTO_NS      30000000ULL
#define RMEM_WC_WAIT_NS      30000000000ULL    // a posted WR's completion, far bound (flushed on loss)
#define RMEM_BACKOFF_MIN_NS  100000000ULL      // reconnect backoff: 0.1 s doubling to 2 s
#define RMEM_BACKOFF_MAX_NS  2000000000ULL
#define RMEM_WATCH_NS        100000000ULL      // the thread looks at CM events this often
#define RMEM_LAT_BUCKETS     2000              // read latency histogram: 20 ms in RMEMCTL_LAT_STEP_US steps
#define RMEM_SLOTS_PER_PAGE  8                 // default slots per page of guest memory
#define RMEM_BUDGET_S        15                // io()'s retry budget (boot argument rmem_budget=S)
#define RMEM_TEST_MAX        RMEM_SQ_DEPTH     // self-test pages (its arrays fit one page)
#define RMEM_CTL_ROOM        64                // a control buffer: a request or a reply fits [RMEM-MSG-1]
_Static_assert(RMEM_REQ_LEN <= RMEM_CTL_ROOM && RMEM_REP_LEN <= RMEM_CTL_ROOM, "control buffers");
#define RMEM_REGION_SLOTS    (RMEM_MAX_REGION / PGSIZE)      // a region's most pages [RMEM-OP-1]
#define RMEM_VALID_PAGES     16                // the slot bitmap: 16 pages map 2 GiB of slots
#define RMEM_MAX_SLOTS       ((uint64)RMEM_VALID_PAGES * PGSIZE * 8)

struct region { uint64 addr, nslots; uint32 rkey, id; };

// One io() chunk or control message in flight: its WRs' wr_id.
struct call {
  int left;                  // WRs not yet completed
  int err;                   // one completed with an error
  int status;                // the first error's (RCT_WC_*)
  uint32 byte_len;           // a receive's length
};

static struct {
  struct spinlock lock;
  // configuration
  int configured;            // a node is named (boot argument or rmemctl)
  int may_start, started;    // boot allows the thread (rmem_client_start); it runs
  uint32 ip;
  uint16 port;
  uint64 want_slots;
  uint64 budget_ns;
  char name[40];
  // the connection (thread-owned objects; io() uses them while users > 0)
  struct kv_owner owner;
  int chan, id;              // cma channel and id, -1
  struct rdma_pd *pd;
  struct rdma_cq *cq;
  struct rdma_qp *qp;
  struct rdma_mr *ctl_mr;
  struct rdma_mr_keys ctl_keys;
  uint64 ctl_pa;             // the control page: sends from offset 0, receives after
  int up;                    // io() may use the connection
  int lost;                  // it failed: the thread replaces it once users is 0
  int users;                 // io() calls using it now
  uint64 gen;                // connections made
  int sq_used;               // send WRs posted, not completed
  int sr;
  uint32 qpn;
  struct region reg[RMEM_MAX_REGIONS];
  int nreg;
  uint64 nslots, per_region;
  uint8 *valid[RMEM_VALID_PAGES];   // a bit per slot: written on this connection
  uint32 req_id;             // the last control request's
  struct call ctl_send, ctl_recv;   // the control exchange's (the thread's; never on a stack)
  int registered;            // pager_set_store done
  struct rmemctl_status st;     // counters (node, connected, nslots filled at status)
  uint32 lat[RMEM_LAT_BUCKETS];   // io() read calls by duration (the last: that long or longer)
  uint64 lat_calls, lat_pages, lat_max_us, lat_total_us, reg_ns;
  // completions
  struct spinlock kick_lock;
  uint64 comp_seq;           // completion handler calls and reaps
} rc;

static int store_io(int write, const uint32 *slot, const uint64 *pa, int n);
static struct pager_store store = { .name = rc.name, .io = store_io };

// ---- completions ----

// The completion handler (kverbs.h's rules): count and wake.
static void on_comp(struct rdma_cq *cq, void *ctx, uint32 flags) {
  spin_lock(&rc.kick_lock);
  rc.comp_seq++;
  proc_wakeup(&rc.comp_seq);
  spin_unlock(&rc.kick_lock);
}

static uint64 comp_seq(void) {
  spin_lock(&rc.kick_lock);
  uint64 s = rc.comp_seq;
  spin_unlock(&rc.kick_lock);
  return s;
}

// Sleeps until a completion came after `seen` or the deadline passed.
static void comp_wait(uint64 seen, uint64 deadline) {
  spin_lock(&rc.kick_lock);
  while (rc.comp_seq == seen && clock_ns() < deadline)
    proc_sleep_until(&rc.comp_seq, &rc.kick_lock, deadline);
  spin_unlock(&rc.kick_lock);
}

// Takes what cq holds and credits each completion to its call (any
// caller's: they share the CQ). -1 if the CQ failed (overrun).
static int reap(struct rdma_cq *cq) {
  struct rct_wc wc[RMEM_POLL_BATCH];
  int n, total = 0;
  while ((n = kv_poll_cq(&rc.owner, cq, wc, RMEM_POLL_BATCH)) > 0) {
    spin_lock(&rc.lock);
    for (int i = 0; i < n; i++) {
      struct call *c = (struct call *)wc[i].wr_id;
      if (wc[i].opcode != RCT_WC_RECV) rc.sq_used--;
      if (wc[i].status != RCT_WC_SUCCESS && !c->err++) c->status = (int)wc[i].status;
      c->byte_len = wc[i].byte_len;
      c->left--;
    }
    spin_unlock(&rc.lock);
    total += n;
  }
  if (total) on_comp(cq, 0, 0);          // other waiters may have been credited
  return n < 0 ? -1 : 0;
}

static void qp_to_err(struct rdma_qp *qp) {
  struct rdma_qp_attr a = { .qp_state = IBV_QPS_ERR };
  kv_modify_qp(&rc.owner, qp, &a, IBV_QP_STATE);
}

// Sleeps until every WR of c completed: 0, or -1 if one failed or the CQ
// failed. A WR not completed by the far deadline: the QP goes to ERR,
// which flushes every posted WR, so c is never credited after the return.
static int call_wait(struct rdma_qp *qp, struct rdma_cq *cq, struct call *c) {
  uint64 deadline = clock_ns() + RMEM_WC_WAIT_NS;
  for (;;) {
    uint64 seen = comp_seq();
    if (reap(cq) < 0) return -1;
    spin_lock(&rc.lock);
    int left = c->left, err = c->err;
    spin_unlock(&rc.lock);
    if (left == 0) return err ? -1 : 0;
    if (clock_ns() >= deadline) {
      qp_to_err(qp);
      deadline = ~0ULL;
    }
    comp_wait(seen, deadline);
  }
}

// ---- the control exchange (SEND / RECV) ----

static uint8 *ctl_buf(int i) { return (uint8 *)(rc.ctl_pa + (uint64)i * RMEM_CTL_ROOM); }
static uint64 ctl_va(int i) { return RMEM_CTL_VA + (uint64)i * RMEM_CTL_ROOM; }

// One request, one reply [RMEM-CONN-2]: the reply's receive is posted
// before the request goes; one outstanding at a time [RMEM-CONN-3]. *rep
// gets the reply matched by req_id [RMEM-MSG-4]: 0, or -1 (with a message).
static int ctl_exchange(struct rmem_msg *req, struct rmem_msg *rep) {
  req->req_id = ++rc.req_id;
  rmem_encode_req(req, ctl_buf(0));
  rc.ctl_recv = (struct call){ .left = 1 };
  rc.ctl_send = (struct call){ .left = 1 };
  struct rct_sge rsge = { ctl_va(1), RMEM_CTL_ROOM, rc.ctl_keys.lkey };
  struct rct_recv_wr rwr = { .wr_id = (uint64)&rc.ctl_recv, .sg_list = &rsge, .num_sge = 1 };
  struct rct_sge sge = { ctl_va(0), RMEM_REQ_LEN, rc.ctl_keys.lkey };
  struct rct_send_wr wr = { .wr_id = (uint64)&rc.ctl_send, .opcode = RCT_WR_SEND,
                            .send_flags = RCT_SEND_SIGNALED, .sg_list = &sge, .num_sge = 1 };
  int err;
  if (kv_post_recv(&rc.owner, rc.qp, &rwr, 1, &err) != 1) return -1;
  spin_lock(&rc.lock);
  rc.sq_used++;
  spin_unlock(&rc.lock);
  if (kv_post_send(&rc.owner, rc.qp, &wr, 1, &err) != 1) return -1;
  if (call_wait(rc.qp, rc.cq, &rc.ctl_send) < 0 || call_wait(rc.qp, rc.cq, &rc.ctl_recv) < 0) return -1;
  if (rmem_decode_rep(ctl_buf(1), rc.ctl_recv.byte_len, rep) < 0 || rep->req_id != req->req_id ||
      rep->op != req->op) {
    kprintf("rmem: %s: a malformed or unmatched %s reply\n", rc.name, rmem_op_name(req->op));
    return -1;
  }
  if (rep->status != RMEM_OK) {
    kprintf("rmem: %s: %s failed: %s\n", rc.name, rmem_op_name(req->op), rmem_strerror(rep->status));
    return -1;
  }
  return 0;
}

// The remote space: STAT for the client's limit and the pool's free bytes,
// then regions of at most RMEM_MAX_REGION for nslots pages (the wish,
// within both and the region count; a reconnect asks for exactly the
// first connection's).
static const char *space_alloc(void) {
  struct rmem_msg req = rmem_request(RMEM_OP_STAT, 0), rep;
  if (ctl_exchange(&req, &rep) < 0) return "STAT failed";
  uint64 slots = rc.nslots ? rc.nslots : rc.want_slots;
  uint64 room = rep.limit > rep.used ? (rep.limit - rep.used) / PGSIZE : 0;
  if (room > rep.pool_free / PGSIZE) room = rep.pool_free / PGSIZE;   // [RMEM-OP-4]
  if (!rc.nslots && slots > room) slots = room;
  if (slots > (uint64)RMEM_MAX_REGIONS * RMEM_REGION_SLOTS) slots = (uint64)RMEM_MAX_REGIONS * RMEM_REGION_SLOTS;
  if (slots > RMEM_MAX_SLOTS) slots = RMEM_MAX_SLOTS;
  if (slots == 0) return "the node's limit leaves no room";
  uint64 per = slots < RMEM_REGION_SLOTS ? slots : RMEM_REGION_SLOTS;
  int nreg = 0;
  for (uint64 s = 0; s < slots; s += per, nreg++) {
    req = rmem_request(RMEM_OP_ALLOC, 0);
    req.size = (slots - s < per ? slots - s : per) * PGSIZE;
    if (ctl_exchange(&req, &rep) < 0 || rep.length < req.size) return "ALLOC failed";
    rc.reg[nreg] = (struct region){ .addr = rep.addr, .nslots = rep.length / PGSIZE, .rkey = rep.rkey,
                                    .id = rep.region };
  }
  spin_lock(&rc.lock);
  rc.nslots = slots;
  rc.per_region = per;
  rc.nreg = nreg;
  spin_unlock(&rc.lock);
  return NULL;
}

// ---- the connection (the thread's; io() only uses it) ----

static void nap(uint64 ns) {
  spin_lock(&rc.lock);
  proc_sleep_until(&rc.chan, &rc.lock, clock_ns() + ns);
  spin_unlock(&rc.lock);
}

// Why a CM step failed, by the event that came instead (librdmacm's).
static const char *const cm_why[] = {
  [RDMA_CM_EVENT_ADDR_ERROR] = "no ARP answer from the node",
  [RDMA_CM_EVENT_ROUTE_ERROR] = "no route to the node",
  [RDMA_CM_EVENT_CONNECT_ERROR] = "the connection failed",
  [RDMA_CM_EVENT_UNREACHABLE] = "the node does not answer",
  [RDMA_CM_EVENT_REJECTED] = "the node refused (nothing listens on the port, or too many clients)",
  [RDMA_CM_EVENT_DISCONNECTED] = "the node disconnected",
};

// The next CM event of the connection's channel into *ev, polled until
// the deadline: NULL if it is `want`, else why not.
static const char *cm_wait(int want, struct ucma_event *ev, uint64 deadline) {
  int r;
  while ((r = cma_get_event(RMEM_CM_OWNER, rc.chan, NULL, ev)) == -EAGAIN && clock_ns() < deadline)
    nap(RMEM_CM_POLL_NS);
  if (r == 0 && ev->event == want) return NULL;
  if (r < 0) return "no rdma_cm event in time";
  int known = ev->event >= 0 && ev->event < (int)ARRAY_LEN(cm_why) && cm_why[ev->event];
  return known ? cm_why[ev->event] : "an unexpected rdma_cm event";
}

// Everything of the connection goes (what exists of it): the id (its
// connection DREQ'd), the channel, the verbs objects, the control page.
static void teardown(void) {
  if (rc.id >= 0) cma_destroy_id(RMEM_CM_OWNER, rc.id);
  if (rc.chan >= 0) cma_chan_close(rc.chan);
  kv_release_owner(&rc.owner);
  if (rc.ctl_pa) page_put(rc.ctl_pa);
  rc.id = rc.chan = -1;
  rc.pd = NULL; rc.cq = NULL; rc.qp = NULL; rc.ctl_mr = NULL;
  rc.ctl_pa = 0;
  rc.sq_used = 0;
}

// The PD, CQ, RC QP (at INIT) and the control page's MR.
static const char *verbs_setup(void) {
  if (!(rc.pd = kv_alloc_pd(&rc.owner))) return "no protection domain";
  if (kv_create_cq(&rc.owner, RMEM_CQE, on_comp, NULL, &rc.cq) != 0) return "no completion queue";
  struct kv_qp_init in = { .qp_type = KV_QPT_RC, .pd = rc.pd, .send_cq = rc.cq, .recv_cq = rc.cq,
                           .max_send_wr = RMEM_SQ_DEPTH, .max_recv_wr = RMEM_CTL_RECVS,
                           .max_send_sge = 1, .max_recv_sge = 1 };
  if (kv_create_qp(&rc.owner, &in, &rc.qp) != 0) return "no queue pair";
  rc.qpn = in.qp_num;
  if (!(rc.ctl_pa = (uint64)page_alloc())) return "no page for control messages";
  rc.ctl_mr = kv_reg_kernel_mr(&rc.owner, rc.pd, RMEM_CTL_VA, PGSIZE, &rc.ctl_pa,
                               IBV_ACCESS_LOCAL_WRITE, &rc.ctl_keys);
  if (!rc.ctl_mr) return "control page registration failed";
  struct rdma_qp_attr a;
  int mask = cma_init_qp_attr(RMEM_CM_OWNER, rc.id, IBV_QPS_INIT, &a);
  if (mask < 0 || kv_modify_qp(&rc.owner, rc.qp, &a, (uint32)mask) != 0) return "QP to INIT failed";
  return NULL;
}

// READs in flight for a node holding rres: half of them, 1..RMEM_INIT_DEPTH
// (RMEM_RD_RESOURCES' comment: the full depth measured no faster).
static uint32 read_depth(uint32 rres) {
  uint32 d = rres / 2;
  return d < 1 ? 1 : d > RMEM_INIT_DEPTH ? RMEM_INIT_DEPTH : d;
}

// The QP to RTR and RTS from the exchange's attributes; selective repeat
// if the node announced it too [SR-NEG-1]; READ depth the smaller offer.
static const char *qp_to_rts(const struct ucma_conn_param *peer) {
  struct rdma_qp_attr a;
  if (cma_init_qp_attr(RMEM_CM_OWNER, rc.id, IBV_QPS_RTR, &a) < 0) return "no RTR attributes";
  a.qp_state = IBV_QPS_RTR;
  a.max_dest_rd_atomic = RMEM_RD_RESOURCES;
  a.min_rnr_timer = 1;
  a.hop_limit = 64;
  rc.sr = (peer->xv6_caps & RDMA_XV6_CAP_SR) != 0;
  a.sr_enable = (uint32)rc.sr;
  uint32 mtu = rct_mtu_bytes((enum rct_mtu)a.path_mtu);
  a.max_inflight = mtu ? RMEM_WINDOW_BYTES / mtu : 0;
  a.adaptive_rto = 1;
  a.min_rto_ns = RMEM_MIN_RTO_NS;
  uint32 rtr = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
               IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER | RDMA_QP_MAX_INFLIGHT |
               RDMA_QP_ADAPTIVE_RTO | (rc.sr ? RDMA_QP_SR : 0);
  if (kv_modify_qp(&rc.owner, rc.qp, &a, rtr) != 0) return "QP to RTR failed";
  uint32 sq_psn;
  if (cma_init_qp_attr(RMEM_CM_OWNER, rc.id, IBV_QPS_RTS, &a) < 0) return "no RTS attributes";
  sq_psn = a.sq_psn;
  a = (struct rdma_qp_attr){ .qp_state = IBV_QPS_RTS, .sq_psn = sq_psn, .timeout = RMEM_ACK_TIMEOUT,
                             .retry_cnt = RMEM_RETRY_COUNT, .rnr_retry = 7,
                             .max_rd_atomic = read_depth(peer->responder_resources) };
  if (kv_modify_qp(&rc.owner, rc.qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
                   IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC) != 0)
    return "QP to RTS failed";
  return NULL;
}

// rdma_cm's active side: address, route, QP, REQ, REP, RTU.
static const char *cm_connect(void) {
  struct ucma_event ev;
  uint64 far = clock_ns() + RMEM_CM_STEP_NS;
  if ((rc.chan = cma_chan_create(RMEM_CM_OWNER)) < 0) return "no rdma_cm channel";
  if ((rc.id = cma_create_id(RMEM_CM_OWNER, rc.chan, RDMA_PS_TCP, 0)) < 0) return "no rdma_cm id";
  if (cma_resolve_addr(RMEM_CM_OWNER, rc.id, 0, rc.ip, rc.port, RMEM_RESOLVE_MS) < 0)
    return "address resolution refused";
  const char *why = cm_wait(RDMA_CM_EVENT_ADDR_RESOLVED, &ev, far);
  if (why) return why;
  if (cma_resolve_route(RMEM_CM_OWNER, rc.id, RMEM_RESOLVE_MS) < 0) return "route resolution refused";
  if ((why = cm_wait(RDMA_CM_EVENT_ROUTE_RESOLVED, &ev, far))) return why;
  why = verbs_setup();
  if (why) return why;
  struct ucma_conn_param p = { .qp_num = 0, .responder_resources = RMEM_RD_RESOURCES,
                               .initiator_depth = RMEM_RD_RESOURCES, .retry_count = RMEM_RETRY_COUNT,
                               .rnr_retry_count = 7, .ack_timeout = RMEM_ACK_TIMEOUT,
                               .xv6_caps = RDMA_XV6_CAP_SR };
  p.qp_num = rc.qpn;
  if (cma_connect(RMEM_CM_OWNER, rc.id, &p) < 0) return "connect refused locally";
  if ((why = cm_wait(RDMA_CM_EVENT_CONNECT_RESPONSE, &ev, clock_ns() + RMEM_CM_STEP_NS))) return why;
  if ((why = qp_to_rts(&ev.param))) return why;
  if (cma_accept(RMEM_CM_OWNER, rc.id, NULL) < 0) return "RTU failed";
  return NULL;
}

// ---- io(): the store ----

#define BITS_PER_PAGE ((uint64)PGSIZE * 8)
static uint8 *valid_byte(uint64 s) { return &rc.valid[s / BITS_PER_PAGE][s % BITS_PER_PAGE / 8]; }
static int valid_get(uint64 s) { return (*valid_byte(s) >> (s % 8)) & 1; }
static void valid_set(uint64 s, int v) {
  if (v) *valid_byte(s) |= (uint8)(1u << (s % 8));
  else *valid_byte(s) &= (uint8)~(1u << (s % 8));
}

// rc.lock held. The connection for one io() chunk once it is up: its
// generation, or 0 when it was not up by the deadline.
static uint64 conn_get(uint64 deadline, int *waited) {
  while (!rc.up && clock_ns() < deadline) {
    *waited = 1;
    proc_sleep_until(&rc.up, &rc.lock, deadline);
  }
  if (!rc.up) return 0;
  rc.users++;
  return rc.gen;
}

// rc.lock held. The chunk is done with generation gen; failed: it is lost.
static void conn_put(uint64 gen, int failed) {
  rc.users--;
  if (failed && gen == rc.gen && rc.up) {
    rc.up = 0;
    rc.lost = 1;
    proc_wakeup(&rc.lost);           // the thread replaces the connection
  }
  proc_wakeup(&rc.users);
}

// Posts WRs [from, to) of a chunk (page i of the MR at RMEM_IO_VA + i *
// PGSIZE to or from slot[i]) as the send queue has room, and waits for
// them all: 0, or -1.
static int chunk_post(int write, const uint32 *slot, int n, uint32 lkey, struct call *c) {
  int posted = 0;
  while (posted < n) {
    uint64 seen = comp_seq();
    spin_lock(&rc.lock);
    int room = RMEM_SQ_DEPTH - rc.sq_used;
    int k = room < n - posted ? room : n - posted;
    if (k > 0) rc.sq_used += k;
    spin_unlock(&rc.lock);
    if (k <= 0) {
      if (reap(rc.cq) < 0) return -1;
      comp_wait(seen, clock_ns() + RMEM_WC_WAIT_NS);
      continue;
    }
    struct rct_sge sge[RMEM_POST_BATCH];
    struct rct_send_wr wr[RMEM_POST_BATCH];
    if (k > RMEM_POST_BATCH) {
      spin_lock(&rc.lock);
      rc.sq_used -= k - RMEM_POST_BATCH;
      spin_unlock(&rc.lock);
      k = RMEM_POST_BATCH;
    }
    for (int j = 0; j < k; j++) {
      int i = posted + j;
      const struct region *r = &rc.reg[slot[i] / rc.per_region];
      sge[j] = (struct rct_sge){ RMEM_IO_VA + (uint64)i * PGSIZE, PGSIZE, lkey };
      wr[j] = (struct rct_send_wr){ .wr_id = (uint64)c, .send_flags = RCT_SEND_SIGNALED,
                                    .opcode = write ? RCT_WR_RDMA_WRITE : RCT_WR_RDMA_READ,
                                    .sg_list = &sge[j], .num_sge = 1, .rkey = r->rkey,
                                    .remote_addr = r->addr + (slot[i] % rc.per_region) * PGSIZE };
    }
    spin_lock(&rc.lock);
    c->left += k;
    spin_unlock(&rc.lock);
    int err, ok = kv_post_send(&rc.owner, rc.qp, wr, k, &err);
    if (ok < 0) ok = 0;
    if (ok < k) {                      // refused: the QP is in error; what went is flushed
      spin_lock(&rc.lock);
      rc.sq_used -= k - ok;
      c->left -= k - ok;
      c->err = 1;
      spin_unlock(&rc.lock);
      return -1;
    }
    posted += k;
  }
  return 0;
}

// One chunk of at most RMEM_SQ_DEPTH pages on the live connection: one MR
// over its pages, every page in flight, every completion awaited. 0, or -1
// (the connection is then lost).
static int chunk_io(int write, const uint32 *slot, const uint64 *pa, int n) {
  struct rdma_mr_keys keys;
  uint64 t0 = clock_ns();
  struct rdma_mr *mr = kv_reg_kernel_mr(&rc.owner, rc.pd, RMEM_IO_VA, (uint64)n * PGSIZE, pa,
                                        IBV_ACCESS_LOCAL_WRITE, &keys);
  uint64 reg = clock_ns() - t0;
  if (!mr) {
    kprintf("rmem: %s: registering %d pages failed\n", rc.name, n);
    return -1;
  }
  struct call c = { 0 };
  int r = chunk_post(write, slot, n, keys.lkey, &c);
  if (r < 0) qp_to_err(rc.qp);         // flush what went, so c is credited fully
  if (call_wait(rc.qp, rc.cq, &c) < 0) r = -1;
  if (c.status)
    kprintf("rmem: %s: a %s completed with %s; the connection is lost\n", rc.name,
            write ? "WRITE" : "READ", rct_wc_status_name((enum rct_wc_status)c.status));
  uint64 t1 = clock_ns();
  if (kv_dereg_mr(&rc.owner, mr) != 0) kprintf("rmem: %s: deregistration failed\n", rc.name);
  spin_lock(&rc.lock);
  rc.reg_ns += reg + clock_ns() - t1;
  spin_unlock(&rc.lock);
  return r;
}

// Before a chunk (rc.lock held): NULL, or why it is refused: a slot out of
// range, or a read of a slot whose content went with an earlier
// connection. A write's slots lose their content until it completed.
static const char lost_slot[] = "a slot's content was lost with an earlier connection";
static const char *chunk_check(int write, const uint32 *slot, int n) {
  for (int i = 0; i < n; i++)
    if (slot[i] >= rc.nslots) return "a slot beyond the store";
  for (int i = 0; i < n; i++) {
    if (!write && !valid_get(slot[i])) return lost_slot;
    if (write) valid_set(slot[i], 0);
  }
  return NULL;
}

// rc.lock held. A read call of n pages took us microseconds.
static void lat_add(uint64 us, int n) {
  uint64 b = us / RMEMCTL_LAT_STEP_US;
  rc.lat[b < RMEM_LAT_BUCKETS ? b : RMEM_LAT_BUCKETS - 1]++;
  rc.lat_calls++;
  rc.lat_pages += (uint64)n;
  rc.lat_total_us += us;
  if (us > rc.lat_max_us) rc.lat_max_us = us;
}

// rc.lock held. The upper bound of the step holding the q-th per mille call.
static uint32 lat_quantile(int permille) {
  uint64 want = (rc.lat_calls * (uint64)permille + 999) / 1000, seen = 0;
  for (int b = 0; b < RMEM_LAT_BUCKETS; b++)
    if ((seen += rc.lat[b]) >= want && want) return (uint32)((b + 1) * RMEMCTL_LAT_STEP_US);
  return 0;
}

void rmem_client_lat(struct rmemctl_lat *out, int reset) {
  spin_lock(&rc.lock);
  *out = (struct rmemctl_lat){ .calls = rc.lat_calls, .pages = rc.lat_pages, .median_us = lat_quantile(500),
                               .p99_us = lat_quantile(990), .max_us = (uint32)rc.lat_max_us,
                               .total_us = rc.lat_total_us, .reg_us = rc.reg_ns / 1000 };
  if (reset) {
    memset(rc.lat, 0, sizeof rc.lat);
    rc.lat_calls = rc.lat_pages = rc.lat_max_us = rc.lat_total_us = rc.reg_ns = 0;
  }
  spin_unlock(&rc.lock);
}

// The pager's io() (core/pager.h): chunks of at most the send queue's
// depth, each retried on a new connection until the budget runs out.
static int store_io(int write, const uint32 *slot, const uint64 *pa, int n) {
  uint64 t0 = clock_ns(), deadline = t0 + rc.budget_ns;
  for (int done = 0; done < n;) {
    int k = n - done < RMEM_SQ_DEPTH ? n - done : RMEM_SQ_DEPTH;
    int waited = 0;
    spin_lock(&rc.lock);
    uint64 gen = conn_get(deadline, &waited);
    if (waited) rc.st.retries++;
    const char *bad = gen ? chunk_check(write, slot + done, k) : "the node stayed unreachable";
    if (bad) {
      rc.st.lost_reads += bad == lost_slot;
      rc.st.io_calls++;
      rc.st.io_failed++;
      if (gen) conn_put(gen, 0);
    }
    spin_unlock(&rc.lock);
    if (bad) {
      kprintf("rmem: %s: %s of %d pages failed: %s\n", rc.name, write ? "write" : "read", n, bad);
      return -1;
    }
    int r = chunk_io(write, slot + done, pa + done, k);
    spin_lock(&rc.lock);
    if (r == 0 && gen == rc.gen)
      for (int i = 0; i < k && write; i++) valid_set(slot[done + i], 1);
    if (r == 0) {
      if (write) { rc.st.pages_written += k; rc.st.bytes_written += (uint64)k * PGSIZE; }
      else { rc.st.pages_read += k; rc.st.bytes_read += (uint64)k * PGSIZE; }
    }
    conn_put(gen, r < 0);
    spin_unlock(&rc.lock);
    if (r == 0) done += k;
  }
  spin_lock(&rc.lock);
  rc.st.io_calls++;
  if (!write) lat_add((clock_ns() - t0) / 1000, n);
  spin_unlock(&rc.lock);
  return 0;
}

// ---- the thread: connect, watch, replace ----

// The slot bitmap's pages for nslots (kept across reconnects), all clear:
// nothing of an earlier connection is readable.
static const char *valid_setup(void) {
  for (uint64 p = 0; p * BITS_PER_PAGE < rc.nslots; p++) {
    if (!rc.valid[p] && !(rc.valid[p] = page_alloc())) return "no page for the slot bitmap";
    memset(rc.valid[p], 0, PGSIZE);
  }
  return NULL;
}

// One attempt: connection, remote space, bitmap. NULL, or why it failed
// (the caller tears down).
static const char *connect_once(void) {
  const char *why = cm_connect();
  if (!why) why = space_alloc();
  if (!why) why = valid_setup();
  return why;
}

// rc.lock held. Sleeps while the connection is up and nothing reported its
// loss, looking at the CM's events every RMEM_WATCH_NS.
static void watch(void) {
  while (rc.up) {
    proc_sleep_until(&rc.lost, &rc.lock, clock_ns() + RMEM_WATCH_NS);
    if (!rc.up) break;
    spin_unlock(&rc.lock);
    struct ucma_event ev;
    int disc = 0;
    while (cma_get_event(RMEM_CM_OWNER, rc.chan, NULL, &ev) == 0)
      disc |= ev.event == RDMA_CM_EVENT_DISCONNECTED;
    spin_lock(&rc.lock);
    if (disc && rc.up) {
      kprintf("rmem: %s: the node disconnected\n", rc.name);
      rc.up = 0;
      rc.lost = 1;
    }
  }
}

// The lost connection goes once no io() uses it (its QP to ERR first, so
// their WRs complete).
static void drain(void) {
  spin_unlock(&rc.lock);
  if (rc.qp) qp_to_err(rc.qp);
  spin_lock(&rc.lock);
  while (rc.users > 0) proc_sleep_until(&rc.users, &rc.lock, clock_ns() + RMEM_WATCH_NS);
  spin_unlock(&rc.lock);
  teardown();
  spin_lock(&rc.lock);
  rc.lost = 0;
}

static void rmem_thread(void *arg) {
  uint64 backoff = RMEM_BACKOFF_MIN_NS;
  for (;;) {
    const char *why = connect_once();
    spin_lock(&rc.lock);
    if (why) {
      rc.st.connect_failures++;
      spin_unlock(&rc.lock);
      if (backoff == RMEM_BACKOFF_MIN_NS)      // the first failure of an outage
        kprintf("rmem: %s: connecting failed: %s; retrying with backoff\n", rc.name, why);
      teardown();
      nap(backoff);
      backoff = backoff * 2 < RMEM_BACKOFF_MAX_NS ? backoff * 2 : RMEM_BACKOFF_MAX_NS;
      continue;
    }
    backoff = RMEM_BACKOFF_MIN_NS;
    rc.gen++;
    if (rc.st.connects++) rc.st.reconnects++;
    rc.up = 1;
    int first = !rc.registered;
    rc.registered = 1;
    proc_wakeup(&rc.up);
    kprintf("rmem: %s: connected, %d slots in %d region(s)%s\n", rc.name, (int)rc.nslots, rc.nreg,
            rc.sr ? ", selective repeat" : "");
    spin_unlock(&rc.lock);
    if (first) {
      store.nslots = rc.nslots;
      pager_set_store(&store);
    }
    spin_lock(&rc.lock);
    watch();
    drain();
    spin_unlock(&rc.lock);
  }
}

// ---- configuration ----

// "IP[:PORT]" into *ip, *port: 0, or -1.
static int parse_node(const char *s, uint32 *ip, uint16 *port) {
  char buf[24];
  int i = 0;
  for (; s[i] && s[i] != ':' && i < (int)sizeof buf - 1; i++) buf[i] = s[i];
  buf[i] = 0;
  *ip = net_parse_ip(buf);
  uint32 p = RMEM_PORT;
  if (s[i] == ':') {
    p = 0;
    for (const char *d = s + i + 1; *d; d++) {
      if (*d < '0' || *d > '9' || p > 0xffff) return -1;
      p = p * 10 + (uint32)(*d - '0');
    }
  }
  *port = (uint16)p;
  return *ip && p > 0 && p <= 0xffff ? 0 : -1;
}

// Appends v in decimal at *p.
static void put_uint(char **p, uint32 v) {
  char d[10];
  int n = 0;
  do d[n++] = (char)('0' + v % 10); while ((v /= 10) && n < (int)sizeof d);
  while (n) *(*p)++ = d[--n];
}

// rc.name: "memory node A.B.C.D:PORT" (the store's name in messages).
static void name_set(uint32 ip, uint16 port) {
  static const char prefix[] = "memory node ";
  char *p = rc.name;
  memmove(p, prefix, sizeof prefix - 1);
  p += sizeof prefix - 1;
  for (int sh = 24; sh >= 0; sh -= 8) {
    put_uint(&p, ip >> sh & 255);
    *p++ = sh ? '.' : ':';
  }
  put_uint(&p, port);
  *p = 0;
}
_Static_assert(sizeof "memory node 255.255.255.255:65535" <= sizeof rc.name, "the name fits");

// Starts the thread once both a node is configured and boot allows it: 0,
// or -ENOMEM (no process slot; configured no more).
static int start_thread(void) {
  spin_lock(&rc.lock);
  int go = rc.configured && rc.may_start && !rc.started;
  rc.started |= go;
  spin_unlock(&rc.lock);
  if (!go) return 0;
  if (kthread_start("rmem", rmem_thread, NULL) < 0) {
    kprintf("rmem: no process slot for the client's thread\n");
    spin_lock(&rc.lock);
    rc.configured = rc.started = 0;
    spin_unlock(&rc.lock);
    return -ENOMEM;
  }
  return 0;
}

// Configures the node and starts the thread if boot allows: 0, -EBUSY
// (configured already), -ENOMEM.
static int start(uint32 ip, uint16 port) {
  spin_lock(&rc.lock);
  int busy = rc.configured;
  if (!busy) {
    rc.configured = 1;
    rc.ip = ip;
    rc.port = port;
    name_set(ip, port);
  }
  spin_unlock(&rc.lock);
  return busy ? -EBUSY : start_thread();
}

void rmem_client_start(void) {
  spin_lock(&rc.lock);
  rc.may_start = 1;
  spin_unlock(&rc.lock);
  start_thread();
}

void rmem_client_init(void) {
  spin_init(&rc.lock, "rmem");
  spin_init(&rc.kick_lock, "rmem_kick");
  rc.id = rc.chan = -1;
  rc.budget_ns = bootarg_uint("rmem_budget", RMEM_BUDGET_S) * 1000000000ULL;
  store.budget_ns = rc.budget_ns;
  // Default remote space: RMEM_SLOTS_PER_PAGE x the guest's memory (a
  // working set several times what fits, the pager's whole need: every
  // paged-out page holds a slot), within the node's per-client limit
  // (space_alloc).
  rc.want_slots = bootarg_uint("rmem_slots", RMEM_SLOTS_PER_PAGE * pmem_total_pages());
  const char *arg = bootarg("rmem");
  uint32 ip;
  uint16 port;
  if (!arg) return;
  if (parse_node(arg, &ip, &port) < 0) {
    kprintf("rmem: boot argument rmem=%s: expected IP[:PORT]; no memory node\n", arg);
    return;
  }
  start(ip, port);
}

int rmem_client_connect(uint32 ip, uint16 port) {
  return ip == 0 || port == 0 ? -EINVAL : start(ip, port);
}

void rmem_client_status(struct rmemctl_status *out) {
  spin_lock(&rc.lock);
  *out = rc.st;
  out->configured = (uint8)rc.configured;
  out->node_ip = rc.ip;
  out->node_port = rc.port;
  out->connected = (uint8)rc.up;
  out->sr = (uint8)(rc.up && rc.sr);
  out->regions = (uint32)rc.nreg;
  out->nslots = rc.nslots;
  spin_unlock(&rc.lock);
}

// ---- the self-test ----

// Byte k of test page i in round `round`: distinct per page and round.
static uint8 pattern(int i, int k, int round) { return (uint8)(k * 7 + i * 13 + round * 101 + (k >> 8)); }

// The test's arrays, in one page.
struct test_pages {
  uint64 src[RMEM_TEST_MAX], dst[RMEM_TEST_MAX];
  uint32 slot[RMEM_TEST_MAX];
};
_Static_assert(sizeof(struct test_pages) <= PGSIZE, "the self-test's arrays fit a page");

// Pages of t: the pattern into src for slots first.. (mod nslots), zeros
// into dst. How many pairs it got.
static int test_fill(struct test_pages *t, int npages, uint32 first, uint64 nslots, int round) {
  for (int i = 0; i < npages; i++) {
    if (!(t->src[i] = (uint64)page_alloc())) return i;
    if (!(t->dst[i] = (uint64)page_alloc())) { page_put(t->src[i]); return i; }
    t->slot[i] = (uint32)(((uint64)first + (uint64)i) % nslots);
    for (int k = 0; k < PGSIZE; k++) ((uint8 *)t->src[i])[k] = pattern(i, k, round);
    memset((void *)t->dst[i], 0, PGSIZE);
  }
  return npages;
}

int rmem_client_test(struct rmemctl_test *io) {
  int npages = (int)io->pages;
  uint32 first = io->first_slot, read_only = io->read_only;
  memset(io, 0, sizeof *io);
  io->first_slot = first;
  io->read_only = read_only;
  spin_lock(&rc.lock);
  uint64 nslots = rc.nslots;
  int configured = rc.configured;
  spin_unlock(&rc.lock);
  if (npages < 1 || npages > RMEM_TEST_MAX) return -EINVAL;
  if (!configured || nslots == 0) return -EAGAIN;      // never connected: no slots yet
  if ((uint64)npages > nslots) return -EINVAL;
  struct test_pages *t = page_alloc();
  if (!t) return -ENOMEM;
  int got = test_fill(t, npages, first, nslots, (int)(clock_ns() / 1000));
  int r = got < npages ? -ENOMEM : 0;
  if (r == 0) {
    io->pages = (uint32)npages;
    uint64 t0 = clock_ns();
    io->write_rc = read_only ? 0 : store_io(1, t->slot, t->src, npages);
    uint64 t1 = clock_ns();
    io->read_rc = io->write_rc == 0 ? store_io(0, t->slot, t->dst, npages) : -1;
    io->write_ns = t1 - t0;
    io->read_ns = clock_ns() - t1;
    for (int i = 0; i < npages && io->read_rc == 0 && !read_only; i++)
      for (int k = 0; k < PGSIZE; k++) io->mismatches += ((uint8 *)t->dst[i])[k] != ((uint8 *)t->src[i])[k];
  }
  for (int i = 0; i < got; i++) { page_put(t->src[i]); page_put(t->dst[i]); }
  page_put((uint64)t);
  return r;
}
