// rdma.h: the kernel's RDMA verbs subsystem (kernel/rdma/*.c), inside.
//
// Owns the one RDMA device (struct rdma_dev): the transport core's device
// (kernel/transport/rct.h), the tables of verbs objects (PDs, MRs, CQs,
// QPs), the engine that drives the core (a kernel thread and a ktimer),
// and the frame routing (loopback or NIC). Two halves use it: the verbs
// core, whose API for kernel consumers is kverbs.h (objects are pointers
// with an owner, struct kv_owner; it knows no process), and the
// per-process front end uverbs.c (handles, channels, async event queues,
// exit), which kernel/sys/sysrdma.c calls.
//
// Locking: one spin lock, rdma.lock, serializes every core call and every
// table change, the front end's included (rct.h asks the caller to
// serialize per device). Objects are static table slots. The kv_* calls
// take the lock; the functions marked "lock held" below are for code that
// already holds it (the front end, the engine). Completion and async
// handlers run with it held (kverbs.h).
//
// Files: rdma_dev.c (device, query, owner release, random, neighbours),
// rdma_engine.c (progress loop, thread, timer, loopback routing),
// rdma_net.c (RoCEv2/v1 over the E1000 seam), rdma_mr.c (PD, MR,
// translate), rdma_cq.c (CQ, completion handler), rdma_qp.c (QP, post,
// statistics), rdma_srq.c (shared receive queues), uverbs.c (the per-process front end), rdma_idtab.c (random
// MR keys and QPNs -> table slots), rdma_abi.c (the ABI's values and
// layouts are the core's: static assertions; the QP attribute
// translation), rdma_pool.c (the ring pool: QP and CQ rings, allocated at
// create and freed at destroy).
// Lock order: rdma.lock, then the driver's and rdma_tx locks; never the
// other way (the NIC's callbacks take rdma.lock with no driver lock held).
#ifndef RDMA_H
#define RDMA_H
#include "lib/types.h"
#include "lib/riscv.h"
#include "lib/param.h"
#include "core/lock.h"
#include "core/timer.h"
#include "lib/uapi.h"
#include "transport/rct.h"
#include "rdma/kverbs.h"

// Limits (reported by ibv_query_device; RDMA_MAX_QP and RDMA_MAX_CQ are uapi.h's).
#define RDMA_MAX_PD      64
#define RDMA_MAX_MR      256
#define RDMA_MAX_CHAN    32
#define RDMA_MAX_QP_WR   512      // send and receive WRs per queue (rings from the pool, sized at create)
#define RDMA_MAX_CQE     (2 * RDMA_MAX_QP_WR)   // a CQ holds every completion of a QP's two full queues
#define RDMA_MAX_RD      16       // READs held as responder / outstanding
#define RDMA_GID_TBL_LEN 16       // port 1's GID table: index 0 the IPv4-mapped GID, the rest empty
// Async events: one queue per process (uverbs.c). An object reports at most one event
// per error it enters (a CQ once, a QP each time it goes to ERR; a QP on an
// SRQ adds LAST_WQE_REACHED, an SRQ its limit event once per arming), and the
// latest state is what a reader needs: a queue holds one event for each QP
// and CQ its process may own, and a full queue drops its own oldest event.
#define RDMA_ASYNC_PER_PROC (RDMA_MAX_QP + RDMA_MAX_CQ)
#define RDMA_MAX_MR_SIZE (64ULL << 20)   // max_mr_size: the longest region, at any address
// An MR keeps the physical address of each page it covers in page-sized
// lists (a directory of them). A region that does not start on a page
// boundary touches one page more than its length holds.
#define RDMA_MR_PAGES    ((int)(RDMA_MAX_MR_SIZE / PGSIZE) + 1)
#define RDMA_PAS_PER_PAGE ((int)(PGSIZE / sizeof(uint64)))
#define RDMA_MR_DIR      ((RDMA_MR_PAGES + RDMA_PAS_PER_PAGE - 1) / RDMA_PAS_PER_PAGE)
#define RDMA_FRAME_MAX   (4096 + 256)
#define RDMA_BUDGET      64       // frames moved per lock hold
#define RDMA_ACK_DELAY_US 300     // a plain ACK may wait this long for a request to follow (rdma_dev.c)
#define RDMA_SACK_EVERY  32       // SR: a selective NAK per 32 out-of-order packets (rdma_dev.c)
// The ring pool (rdma_pool.c): QP rings (send, receive, READ resources)
// and CQ rings take whole pages of it at create, as many as the sizes
// asked for need, and give them back at destroy. It holds every QP with
// RDMA_POOL_QP_WR WRs each way beside a CQ of its own with room for both
// queues (or fewer, larger ones: one QP at max_qp_wr takes 30 pages); past
// that, create fails (ENOMEM). The pages are the kernel's image (bss): a
// ring is an array the core indexes, so its pages must be contiguous.
#define RDMA_POOL_QP_WR  64
// Shared receive queues (rdma_srq.c): an SRQ serves many QPs, so it holds
// up to RDMA_SRQ_QPS QPs' full receive queues. A QP on an SRQ keeps the
// WQEs it took and has not completed in a ring of RDMA_SRQ_TAKEN instead
// of a receive queue: go-back-N takes one at a time, selective repeat up
// to this many messages ahead of the expected PSN [SRQ-TAKE-4]. SRQ rings
// come from the pool's QP share: the QPs on an SRQ leave the pool
// (RDMA_POOL_QP_WR - RDMA_SRQ_TAKEN) receive WQEs each of it, and the
// pool does not grow (it is the kernel's image, and 48M guests page to a
// memory node).
#define RDMA_SRQ_QPS     8
#define RDMA_MAX_SRQ_WR  (RDMA_SRQ_QPS * RDMA_MAX_QP_WR)
#define RDMA_SRQ_TAKEN   8
#define RDMA_PAGES(bytes) (((bytes) + PGSIZE - 1) / PGSIZE)
#define RDMA_QP_RING_BYTES(s, r) ((s) * sizeof(struct rct_send_wqe) + (r) * sizeof(struct rct_recv_wqe) + \
                                  RDMA_MAX_RD * sizeof(struct rct_rd_res))
#define RDMA_POOL_PAGES  (RDMA_MAX_QP * RDMA_PAGES(RDMA_QP_RING_BYTES(RDMA_POOL_QP_WR, RDMA_POOL_QP_WR)) + \
                          RDMA_MAX_CQ * RDMA_PAGES(2 * RDMA_POOL_QP_WR * sizeof(struct rct_wc)))
#define RDMA_LIVE_WORDS  (RDMA_MAX_QP / 64)   // words of the live bitmaps (rdma.qp_live, cq_live)

_Static_assert(RDMA_MAX_QP % 64 == 0 && RDMA_MAX_CQ == RDMA_MAX_QP, "live bitmaps: whole words, one size");
_Static_assert(RDMA_MAX_MR_SIZE % PGSIZE == 0, "max_mr_size is whole pages");
_Static_assert(RDMA_MR_DIR * RDMA_PAS_PER_PAGE >= RDMA_MR_PAGES,
               "the MR page directory holds a max_mr_size region at an unaligned address");
_Static_assert((RDMA_MR_DIR - 1) * RDMA_PAS_PER_PAGE < RDMA_MR_PAGES, "no unused page list");
// The core indexes its rings with i & (size - 1), and create_qp rounds
// max_send_wr / max_recv_wr up to a power of two: the slot's rings hold
// the rounded max_qp_wr only if it is one.
_Static_assert((RDMA_MAX_QP_WR & (RDMA_MAX_QP_WR - 1)) == 0, "max_qp_wr is a power of two");
_Static_assert((RDMA_MAX_RD & (RDMA_MAX_RD - 1)) == 0, "the READ ring is a power of two");
_Static_assert((RDMA_MAX_SRQ_WR & (RDMA_MAX_SRQ_WR - 1)) == 0, "max_srq_wr is a power of two");
_Static_assert((RDMA_SRQ_TAKEN & (RDMA_SRQ_TAKEN - 1)) == 0, "the taken-WQE ring is a power of two");
_Static_assert(RDMA_SRQ_TAKEN < RDMA_POOL_QP_WR, "a QP on an SRQ takes less of the pool than one without");
_Static_assert(RDMA_MAX_SGE <= RCT_MAX_SGE, "max_sge fits the core's WQEs");
// The event rings count with free-running uint32 indices.
_Static_assert((RDMA_ASYNC_PER_PROC & (RDMA_ASYNC_PER_PROC - 1)) == 0, "async ring wraps cleanly");
// The loopback buffer holds the largest frame: headers, a 4096-byte MTU, pad + ICRC.
_Static_assert(RDMA_FRAME_MAX >= RCT_HDR_MAX + 4096 + 8, "loopback buffer fits a frame");

// The device's objects (the verbs core: rdma_mr.c, rdma_cq.c, rdma_qp.c).
// Each belongs to an owner (kverbs.h); the front end (uverbs.c) names them
// to user space by their slot index.
struct rdma_pd {
  int used;
  struct kv_owner *owner;
  int refs;                 // MRs and QPs in this PD
};

struct rdma_mr {
  int used;
  struct kv_owner *owner;
  int pd;
  uint32 lkey, rkey, access;
  uint64 addr, length;
  uint64 page0;             // PG_ROUND_DOWN(addr)
  int npages;
  uint64 *pas[RDMA_MR_DIR]; // pas[i / 512][i % 512] backs page0 + i * PGSIZE
};

struct rdma_cq {              // in use: its bit in rdma.cq_live
  struct kv_owner *owner;
  kv_comp_fn comp;          // the completion handler (kverbs.h), or NULL
  void *comp_ctx;
  int refs;                 // QPs using it
  struct rct_cq cq;
  struct rct_wc *ring;      // pool pages (rdma_pool.c), cqe entries
  int ring_pages;
  int error;                // overrun: the CQ is in error [IBTA 11.4.2.1 / CQ_ERR]
};

struct rdma_qp {              // in use: its bit in rdma.qp_live
  struct kv_owner *owner;
  int type;                 // KV_QPT_RC or KV_QPT_UD
  int pd, send_cq, recv_cq;
  int srq;                  // the SRQ's slot it takes receives from, or -1
  uint32 max_send_sge, max_recv_sge;
  struct rct_qp_base *base; // the core's QP of any type: &qp.base (RC), or ud's in the rings (UD)
  struct rct_qp qp;         // RC only
  // One run of pool pages (rdma_pool.c). RC: sq_size send WQEs, rq_size
  // receive WQEs, RDMA_MAX_RD READ resources. UD: the struct rct_ud_qp,
  // then its send and receive WQEs (no READ resources).
  void *rings;
  int ring_pages;
  // The engine's timer bookkeeping (rdma_engine.c): 0 not watched,
  // 1 + its index in rdma.heap (deadline known), -1 - its index in
  // rdma.dirty (deadline to be read again).
  int watch;
  uint64 deadline;          // in rdma.heap: no later than the core's next deadline for it
};

// An address handle (rdma_ah.c): a UD destination with its MAC resolved
// at create. Sends copy it into their WQE, so it may go while in use.
struct rdma_ah {
  int used;
  struct kv_owner *owner;
  int pd;
  struct rct_ud_dest dest; // dmac, dscp, ttl, dipv4; dqpn and qkey per WR
};

// A shared receive queue (rdma_srq.c): the core's SRQ over one run of
// pool pages (its ring of max_wr receive WQEs).
struct rdma_srq {
  int used;
  struct kv_owner *owner;
  int pd;
  uint32 max_sge;
  struct rct_srq srq;
  void *ring;
  int ring_pages;
};

struct rdma_neigh { uint32 ipv4; uint8 mac[6]; };
#define RDMA_MAX_NEIGH 16

struct rdma_dev {
  struct spinlock lock;
  struct rct_dev dev;
  uint32 ipv4;
  uint8 mac[6];
  uint32 ip_mtu;            // the interface's IP MTU for the core [ENC-IP-3]; 0 = loopback only
  int kick;                 // the engine thread has work (timer, rx, budget)
  struct ktimer timer;
  uint64 timer_deadline;    // what the ktimer is armed for (may be before the core's next), RCT_NEVER if not
  struct rdma_neigh neigh[RDMA_MAX_NEIGH];
  int frame_waiters;        // sleepers on it wait for any received frame (uverbs.c's wait_write)
  uint64 tx_no_route, tx_too_big;   // frames the engine could not route (rdma_engine.c)
  // bit i: rdma_cqs[i] / rdma_qps[i] is in use (the only record of it).
  // Loops over the tables (process exit, a channel's CQs) visit only
  // these, a word of 64 slots at a time; the engine's passes visit none.
  uint64 cq_live[RDMA_LIVE_WORDS], qp_live[RDMA_LIVE_WORDS];
  // The QPs that may have a timer armed (rdma_engine.c): a min-heap of
  // those whose deadline is known, on rdma_qps[].deadline, and those
  // touched since it was read. The engine reads no other QP's timers.
  int heap[RDMA_MAX_QP], nheap;
  int dirty[RDMA_MAX_QP], ndirty;
  // the NIC seam (rdma_net.c); NULL transmit = loopback only
  int (*nic_send)(const struct rct_frame *f);   // 0 sent, -1 ring full
  // The front end's mapped send rings with doorbells elided (uverbs.c):
  // each engine pass takes them in before it moves frames and settles them
  // after. Returns the entries taken. NULL: none.
  int (*ring_intake)(void);
};

extern struct rdma_dev rdma;
extern struct rdma_pd rdma_pds[RDMA_MAX_PD];
extern struct rdma_mr rdma_mrs[RDMA_MAX_MR];
extern struct rdma_cq rdma_cqs[RDMA_MAX_CQ];
extern struct rdma_qp rdma_qps[RDMA_MAX_QP];
extern struct rdma_ah rdma_ahs[RDMA_MAX_AH];
extern struct rdma_srq rdma_srqs[RDMA_MAX_SRQ];

// The least power of two >= n (ring sizes).
static inline uint32 rdma_pow2_at_least(uint32 n) {
  uint32 p = 1;
  while (p < n) p <<= 1;
  return p;
}

// Lock held. Slot i's bit in a live bitmap (rdma.cq_live, rdma.qp_live).
static inline int rdma_live(const uint64 *map, int i) { return (map[i / 64] >> (i % 64)) & 1; }
static inline void rdma_live_set(uint64 *map, int i) { map[i / 64] |= 1ULL << (i % 64); }
static inline void rdma_live_clear(uint64 *map, int i) { map[i / 64] &= ~(1ULL << (i % 64)); }
// The first slot at or after i that is live in map, or -1.
static inline int rdma_live_next(const uint64 *map, int i) {
  for (; i < RDMA_LIVE_WORDS * 64; i = (i / 64 + 1) * 64) {
    uint64 w = map[i / 64] >> (i % 64);
    if (w) return i + __builtin_ctzll(w);
  }
  return -1;
}
// The first slot not live in map, or -1 when all are.
static inline int rdma_live_free(const uint64 *map) {
  for (int w = 0; w < RDMA_LIVE_WORDS; w++)
    if (~map[w]) return w * 64 + __builtin_ctzll(~map[w]);
  return -1;
}
// Lock held. Every live slot i of map, in order.
#define rdma_for_each_live(i, map) \
  for (int i = rdma_live_next((map), 0); i >= 0; i = rdma_live_next((map), i + 1))

// rdma_dev.c
void   rdma_init(void);
uint32 rdma_random(void);
int    rdma_neigh_lookup(uint32 ipv4, uint8 mac[6]);   // rdma.lock held
int    rdma_set_neigh(uint32 ip, const uint8 mac[6]);
void   rdma_release_owner_locked(struct kv_owner *o);   // kv_release_owner, lock held

// rdma_engine.c (all with rdma.lock held)
int  rdma_progress(int budget);         // 1 if work was left at the budget
void rdma_engine_start(void);
void rdma_kick(void);                   // let the engine thread run
int  rdma_frame_arrived(void);          // wake rdma.frame_waiters' sleepers; 1 if any
void rdma_events_drain(void);           // act on what the core reports (rct_dev_next_event)
void rdma_watch(int h);                 // QP slot h may arm a timer: work, a frame, a state change
void rdma_unwatch(int h);               // QP slot h is being destroyed

// rdma_net.c
void rdma_net_init(void);               // boot, before the core's device
int  rdma_net_retry(void);              // lock held; -1 while the ring is full
void rdma_net_rx_first(void);           // lock held, dropped around it: the NIC's received frames in now
void rdma_net_burst_begin(void);        // lock held: one NIC doorbell for the frames
void rdma_net_burst_end(void);          //   sent until burst_end
int  rdma_net_resolve(uint32 ipv4, uint8 mac[6]);   // lock NOT held; may sleep
int  rdma_resolve_mac(uint32 ipv4, uint8 mac[6]);   // lock NOT held; may sleep: ours, neighbours, ARP
int  rdma_net_lookup(uint32 ipv4, uint8 mac[6]);    // lock NOT held; no sleep: 0 known, 1 asked, -1 no NIC
int  rdma_lookup_mac(uint32 ipv4, uint8 mac[6]);    // lock NOT held; no sleep: ours, neighbours, ARP cache
extern uint64 rdma_net_tx_frames, rdma_net_tx_full, rdma_net_rx_frames, rdma_net_rx_bad;

// rdma_idtab.c: live random ids (MR keys, QPNs) -> table slot (lock held)
struct rdma_id_ent { uint32 id; int slot; };     // id 0: empty entry
struct rdma_idtab {
  struct rdma_id_ent *ent;  // 1 << bits entries, >= twice the live ids
  uint32 bits;
};
int    rdma_idtab_find(const struct rdma_idtab *t, uint32 id);   // slot, or -1
uint32 rdma_idtab_add(struct rdma_idtab *t, uint32 min, uint32 id_mask, int slot);
int    rdma_idtab_put(struct rdma_idtab *t, uint32 id, int slot);  // a chosen id: 0, or -1 if live
void   rdma_idtab_del(struct rdma_idtab *t, uint32 id);

// rdma_abi.c (rdma_qp_attr_in: lock held)
uint32 rdma_qp_mask_out(uint32 rct_mask);            // the core's mask -> IBV_QP_* | RDMA_QP_*
int  rdma_qp_attr_in(const struct rdma_qp_attr *a, uint32 ibv_mask,
                     struct rct_qp_attr *r, uint32 *rct_mask);
void rdma_qp_attr_out(const struct rct_qp_attr *r, struct rdma_qp_attr *a);

// The verbs core's lock-held half, for the front end (uverbs.c), which
// must act under the same lock hold as its own checks. The kernel API
// (kverbs.h, lock NOT held) is the rest. Each *_owned returns the object's
// slot if it is live and o's, else -1 (any pointer, NULL included).
// rdma_mr.c:
extern const struct rct_mr_ops rdma_mr_ops;
int  rdma_pd_owned(struct kv_owner *o, const struct rdma_pd *pd);
int  rdma_mr_busy(const struct rdma_mr *mr);
void rdma_mr_release_all(struct kv_owner *o);   // the owner's QPs are already gone
// rdma_mr_selftest.c: translate() against the shared MR contract cases;
// panics on a mismatch. After rdma_init.
void rdma_mr_selftest(void);
// rdma_cq.c:
int  rdma_cq_owned(struct kv_owner *o, const struct rdma_cq *cq);
void rdma_cq_overrun_locked(struct rdma_cq *cq);
int  rdma_cq_take_locked(struct rdma_cq *cq, struct rct_wc *wc, int n);
int  rdma_cq_create_locked(struct kv_owner *o, int cqe, kv_comp_fn fn, void *ctx, struct rdma_cq **out);
int  rdma_cq_destroy_locked(struct kv_owner *o, struct rdma_cq *cq);   // its slot, or -1
void rdma_cq_on_event(const struct rct_event *ev);   // CQ_COMP, CQ_OVERFLOW
void rdma_cq_release_all(struct kv_owner *o);   // the owner's QPs are already gone

// rdma_pool.c (lock held): a run of n zeroed, contiguous pool pages, or
// NULL when no run is that long; rdma_pool_free gives them back.
void *rdma_pool_alloc(int n);
void  rdma_pool_free(void *p, int n);
int   rdma_pool_free_pages(void);

// rdma_ah.c:
int  rdma_ah_owned(struct kv_owner *o, const struct rdma_ah *ah);
void rdma_ah_release_all(struct kv_owner *o);
// rdma_srq.c:
int  rdma_srq_owned(struct kv_owner *o, const struct rdma_srq *srq);
void rdma_srq_on_event(const struct rct_event *ev);   // SRQ_LIMIT
void rdma_srq_release_all(struct kv_owner *o);       // the owner's QPs are already gone
// rdma_qp.c:
int  rdma_post_errno(int rct);                       // the core's refusal of a WR -> RDMA_E*
int  rdma_qp_owned(struct kv_owner *o, const struct rdma_qp *qp);
// Posting kinds: an RC send (struct rct_send_wr), a receive (struct
// rct_recv_wr, any type), a UD send (struct kv_ud_send_wr).
enum { RDMA_POST_RECV, RDMA_POST_SEND, RDMA_POST_UD_SEND };
int  rdma_qp_post_locked(struct kv_owner *o, struct rdma_qp *q, int kind, const void *wr);   // 0 or RDMA_E*
uint32 rdma_qp_send_queued_locked(const struct rdma_qp *q, int *live);   // WRs in its send queue; live: RC in RTS
void rdma_qp_fatal_locked(struct kv_owner *o, struct rdma_qp *q);   // to ERR, IBV_EVENT_QP_FATAL
int  rdma_qp_destroy_locked(struct kv_owner *o, struct rdma_qp *qp);   // its slot, or -1
struct rct_qp_base *rdma_qp_lookup_any(void *ctx, uint32 qpn);
void rdma_qp_on_event(const struct rct_event *ev);   // QP_ERR, QP_LAST_WQE
void rdma_qp_release_all(struct kv_owner *o);
void rdma_qp_stats_locked(int i, struct rdma_qp_stats *s);   // live slot i; handle and owner_pid left 0

// WRs copied in for one post (SYS_rdma_post_*, or a doorbell's entries of
// a mapped ring): the WR as the core takes it, and its SGEs, which the
// WR's sg_list is made to point at.
#define RDMA_POST_BATCH 8
struct post_batch {
  union {
    struct rct_send_wr s[RDMA_POST_BATCH];
    struct rct_recv_wr r[RDMA_POST_BATCH];
  };
  struct rct_sge sg[RDMA_POST_BATCH][RDMA_MAX_SGE];
};

// WR i of b, just copied in: its sg_list now points at b->sg[i] (the old
// value in *from); the SGEs to copy there, 0 for a num_sge out of range
// (none is copied: the core refuses the WR).
static inline int post_batch_sges(struct post_batch *b, int is_send, int i, uint64 *from) {
  const struct rct_sge **list = is_send ? &b->s[i].sg_list : &b->r[i].sg_list;
  int nsge = is_send ? b->s[i].num_sge : b->r[i].num_sge;
  *from = (uint64)*list;
  *list = b->sg[i];
  return nsge > 0 && nsge <= RDMA_MAX_SGE ? nsge : 0;
}

// uverbs.c: the per-process front end, for kernel/sys/sysrdma.c. Handles
// as user space names them; -1 for a handle that is not the caller's or
// any bad argument. Lock NOT held.
void uv_init(void);                     // boot: the exit hook
int  uv_alloc_pd(void);
int  uv_dealloc_pd(int h);
int  uv_reg_mr(int pd, uint64 addr, uint64 length, uint32 access, struct rdma_mr_keys *keys);
int  uv_dereg_mr(int h);
int  uv_create_chan(void);                               // -> fd
int  uv_destroy_chan(int fd);
int  uv_create_cq(int cqe, int chan, uint64 cookie);
int  uv_destroy_cq(int h);
int  uv_map_cq(int h, uint64 va);                      // SYS_rdma_map_cq
int  uv_poll_cq(int h, struct rct_wc *out, int n);
int  uv_req_notify(int h, int solicited_only);
int  uv_get_cq_event(int chan, uint64 *cookie);         // sleeps
int  uv_get_async(struct rdma_async_event *ev, int block);
int  uv_create_qp(struct rdma_qp_create *c);
int  uv_destroy_qp(int h);
int  uv_map_qp(int h, int which, uint64 va);           // SYS_rdma_map_qp
int  uv_doorbell(int h, int which);                    // SYS_rdma_doorbell
int  uv_modify_qp(int h, struct rdma_qp_attr *a, uint32 mask);   // may sleep (ARP)
int  uv_query_qp(int h, struct rdma_qp_attr *a);
int  uv_post_send(int h, const struct rct_send_wr *wr, int n, int *err);
int  uv_post_recv(int h, const struct rct_recv_wr *wr, int n, int *err);
int  uv_create_srq(struct rdma_srq_create *c);         // RDMA_NO_RESOURCES
int  uv_modify_srq(int h, const struct rdma_srq_attr *a, uint32 mask);
int  uv_query_srq(int h, struct rdma_srq_attr *a);
int  uv_destroy_srq(int h);                            // RDMA_BUSY while a QP uses it
int  uv_post_srq_recv(int h, const struct rct_recv_wr *wr, int n, int *err);
int  uv_create_ah(const struct rdma_ah_attr *a);       // may sleep (ARP); RDMA_NO_ROUTE
int  uv_destroy_ah(int h);
int  uv_qp_stats(int i, struct rdma_qp_stats *s);
void uv_dev_stats(struct rdma_dev_stats *s);
int  uv_wait_write(const volatile uint8 *addr, uint8 old, int timeout_ms);
int  uv_wait_cq(int h, int timeout_ms);

#endif
