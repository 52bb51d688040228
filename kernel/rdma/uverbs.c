// uverbs.c: the per-process front end of the verbs (the role of Linux's
// uverbs). The only RDMA code that knows what a process is; the verbs core
// (kverbs.h: rdma_mr.c, rdma_cq.c, rdma_qp.c, rdma_dev.c) knows owners.
//
// Owns: each process's owner (struct kv_owner, in a table with a slot per
// process slot, taken by its first verb and freed by the exit hook), the
// integer handles user space names objects by (a handle is the object's
// slot in the core's table, valid only for its owner: a bad or foreign
// handle is -1), completion channels (file descriptors, built on the
// CQ's completion handler), the per-process async event queues, the
// rings mapped into processes (CQs', QPs' send and receive rings: the
// doorbell, and the send rings armed for posts without one, which every
// engine pass takes in through rdma.ring_intake), the
// sleeping waits (wait_cq, wait_write) and the cleanup at exit. The
// system calls (kernel/sys/sysrdma.c) fetch and copy their arguments and
// call the uv_* functions below with kernel values.
//
// Notification (IBTA 11.4.2.2): req_notify arms the CQ; the next
// completion added after arming raises one event on the CQ's channel, and
// get_cq_event sleeps until there is one. A channel's poll() reports
// POLLIN while one of its CQs has an event, O_NONBLOCK makes get_cq_event
// return -1 instead of sleeping, and its slot is freed once the file is
// closed and no CQ reports to it (destroy_chan refuses while one does, as
// libibverbs' EBUSY). Async events: a full queue drops its own oldest
// event, so no process can crowd out another's.
//
// Locking: this file's tables are under rdma.lock, as the core's; the
// completion and async handlers run under it (kverbs.h).
#include "lib/types.h"
#include "lib/param.h"
#include "core/proc.h"
#include "core/vm.h"
#include "proc/lifecycle.h"
#include "core/poll.h"
#include "fs/file.h"
#include "lib/klib.h"
#include "rdma/rdma.h"
#include "rdma/cma.h"

// A process's owner and async event queue; pid 0: free slot.
struct uv_proc {
  int pid;
  struct kv_owner owner;
  uint32 head, tail;        // ring indices, tail - head <= RDMA_ASYNC_PER_PROC
  struct rdma_async_event ev[RDMA_ASYNC_PER_PROC];
};

struct uv_chan {            // behind a file descriptor
  int used, pid;            // pid: its creator's, as every verbs object's
  int file_open;            // its file is open; the slot is free once not and no CQ uses it
};

// Pages of the largest CQ's mapped ring.
#define RING_MAX_PAGES RDMA_PAGES(RDMA_CQ_RING_BYTES(RDMA_MAX_CQE))

struct uv_cq {              // the front end's half of CQ slot i (its core half: rdma_cqs[i])
  int chan;                 // 1 + the channel's slot; 0: none
  uint64 cookie;            // the cq_context user space gave
  int armed;                // req_notify: event on the next new completion
  int solicited_only;       // ... only if it is solicited or an error
  int events;               // events raised and not yet taken by get_cq_event
  int waiters;              // processes asleep in uv_wait_cq on this CQ
  int ring_pages;           // the mapped ring's pinned pages (uapi.h struct rdma_cq_ring); 0: none
  uint32 prod;              // the ring's producer index: the kernel's copy, never read back
  uint64 ring_pa[RING_MAX_PAGES];
};

// Pages of the largest mapped send or receive ring (uapi.h struct rdma_wq_ring).
#define WQ_RING_MAX_PAGES RDMA_PAGES(RDMA_WQ_RING_BYTES(RDMA_WQ_SEND, RDMA_MAX_QP_WR))
_Static_assert(sizeof(struct rdma_sq_entry) >= sizeof(struct rdma_rq_entry), "the send ring is the larger");

struct uv_wq {              // a QP's send or receive ring mapped into the process
  int pages;                // its pinned pages; 0: none
  int armed;                // a send ring's doorbells elided (wq_settle): its bit in wq_armed
  uint32 size;              // its entries: the queue's granted size
  uint32 cons;              // entries taken: the kernel's copy, never read back
  uint64 pa[WQ_RING_MAX_PAGES];
};

struct uv_qp {              // the front end's half of QP slot i: its rings, by RDMA_WQ_*
  struct uv_wq wq[2];
};

static struct uv_proc uv_procs[NPROC];
static struct uv_chan uv_chans[RDMA_MAX_CHAN];
static struct uv_cq uv_cqs[RDMA_MAX_CQ];
static struct uv_qp uv_qps[RDMA_MAX_QP];
static uint64 wq_armed[RDMA_LIVE_WORDS];   // bit h: QP slot h's send ring is armed
static uint64 async_dropped;  // events dropped from a full queue (its oldest), all processes

#define POST_UD_BATCH 8       // UD send WRs translated per kv_post_send_ud call

// A handle -> the core's slot it names (any owner's, or free), or NULL.
#define AT(table, max, h) ((h) >= 0 && (h) < (max) ? &(table)[h] : NULL)

static void uv_async(struct kv_owner *o, const struct kv_async_event *ev);
static void uv_cq_comp(struct rdma_cq *cq, void *ctx, uint32 flags);
static struct rdma_cq *own_cq(int h);

// Lock held. pid's entry; with create, a free slot becomes it. NULL if
// pid has none (and create is 0; the table has a slot per process slot).
static struct uv_proc *proc_entry(int pid, int create) {
  struct uv_proc *free = NULL;
  for (int i = 0; i < NPROC; i++) {
    if (uv_procs[i].pid == pid) return &uv_procs[i];
    if (!free && uv_procs[i].pid == 0) free = &uv_procs[i];
  }
  if (!create || !free) return NULL;
  free->pid = pid;
  free->head = free->tail = 0;
  free->owner.async = uv_async;
  return free;
}

// Lock NOT held. The calling process's owner (made with create), or NULL.
// It stays valid until the process exits.
static struct kv_owner *self(int create) {
  spin_lock(&rdma.lock);
  struct uv_proc *u = proc_entry(current()->pid, create);
  spin_unlock(&rdma.lock);
  return u ? &u->owner : NULL;
}

// Lock held. The calling process's owner, or NULL.
static struct kv_owner *self_locked(void) {
  struct uv_proc *u = proc_entry(current()->pid, 0);
  return u ? &u->owner : NULL;
}

// o's process entry, or NULL for an owner that is no process's (a
// kernel consumer's).
static struct uv_proc *proc_of(struct kv_owner *o) {
  struct uv_proc *u = (struct uv_proc *)((char *)o - offsetof(struct uv_proc, owner));
  return (u >= uv_procs && u < uv_procs + NPROC) ? u : NULL;
}

// ---- the exit hook ----

static void chan_free_if_unused(int ch);

// Lock held. The front end's half of CQ slot h goes, its ring unpinned.
static void cq_forget(int h) {
  if (uv_cqs[h].ring_pages > 0) uvm_unpin(uv_cqs[h].ring_pa, uv_cqs[h].ring_pages);
  uv_cqs[h] = (struct uv_cq){ 0 };
}

static void ring_put32(const uint64 *pa, uint64 off, uint32 v);

// Lock held. QP slot h's send ring, mapped or not, is no longer armed:
// the process rings its doorbell again.
static void wq_disarm(int h) {
  struct uv_wq *w = &uv_qps[h].wq[RDMA_WQ_SEND];
  rdma_live_clear(wq_armed, h);
  if (w->armed && w->pages > 0) ring_put32(w->pa, offsetof(struct rdma_wq_ring, armed), 0);
  w->armed = 0;
}

// Lock held. The same for QP slot h's two rings.
static void qp_forget(int h) {
  wq_disarm(h);
  for (int q = 0; q < 2; q++)
    if (uv_qps[h].wq[q].pages > 0) uvm_unpin(uv_qps[h].wq[q].pa, uv_qps[h].wq[q].pages);
  uv_qps[h] = (struct uv_qp){ 0 };
}

// The exiting process's objects go, and its queue with its events; its
// channels go with their files (closed after the exit hooks), or here if
// already closed.
static void uv_exit(struct proc *p) {
  spin_lock(&rdma.lock);
  struct uv_proc *u = proc_entry(p->pid, 0);
  if (u) {
    rdma_for_each_live(i, rdma.cq_live)
      if (rdma_cqs[i].owner == &u->owner) cq_forget(i);
    rdma_for_each_live(i, rdma.qp_live)
      if (rdma_qps[i].owner == &u->owner) qp_forget(i);
    rdma_release_owner_locked(&u->owner);
    u->pid = 0;
  }
  for (int i = 0; i < RDMA_MAX_CHAN; i++) chan_free_if_unused(i);
  spin_unlock(&rdma.lock);
}

static int wq_intake_all(void);

void uv_init(void) {
  proc_on_exit(uv_exit);
  rdma.ring_intake = wq_intake_all;
}

// ---- PDs, MRs ----

int uv_alloc_pd(void) {
  struct kv_owner *o = self(1);
  struct rdma_pd *pd = o ? kv_alloc_pd(o) : NULL;
  return pd ? (int)(pd - rdma_pds) : -1;
}

int uv_dealloc_pd(int h) {
  struct kv_owner *o = self(0);
  return o ? kv_dealloc_pd(o, AT(rdma_pds, RDMA_MAX_PD, h)) : -1;
}

// Registers the caller's [addr, addr+length) in its PD pdh with access
// (IBV_ACCESS_*): the MR's handle and *keys, or -1.
int uv_reg_mr(int pdh, uint64 addr, uint64 length, uint32 access, struct rdma_mr_keys *keys) {
  struct kv_owner *o = self(0);
  struct rdma_mr *mr = o ? kv_reg_user_mr(o, AT(rdma_pds, RDMA_MAX_PD, pdh), current()->pagetable,
                                          addr, length, access, keys) : NULL;
  return mr ? (int)(mr - rdma_mrs) : -1;
}

int uv_dereg_mr(int h) {
  struct kv_owner *o = self(0);
  return o ? kv_dereg_mr(o, AT(rdma_mrs, RDMA_MAX_MR, h)) : -1;
}

// ---- completion channels ----

static const struct file_ops chan_ops;

// Lock held. The caller's channel behind descriptor fd: its slot, or -1
// (not a channel, or another process's: it is its creator's, as every
// verbs object, even where fork shared the descriptor).
static int chan_get(int fd) {
  struct uv_chan *c = fd_obj(fd, &chan_ops);
  return c && c->pid == current()->pid ? (int)(c - uv_chans) : -1;
}

// Lock held. The first live front-end CQ reporting to channel slot ch, at
// or after slot i, with an event not yet taken when events; or -1.
static int chan_cq(int ch, int i, int events) {
  for (int j = rdma_live_next(rdma.cq_live, i); j >= 0; j = rdma_live_next(rdma.cq_live, j + 1))
    if (rdma_cqs[j].comp == uv_cq_comp && uv_cqs[j].chan == ch + 1 && (!events || uv_cqs[j].events > 0))
      return j;
  return -1;
}

// Lock held. Frees channel slot ch once its file is closed and no CQ
// reports to it.
static void chan_free_if_unused(int ch) {
  if (ch >= 0 && uv_chans[ch].used && !uv_chans[ch].file_open && chan_cq(ch, 0, 0) < 0)
    uv_chans[ch].used = 0;
}

static void chan_close(struct file *f) {
  struct uv_chan *c = f->obj;
  spin_lock(&rdma.lock);
  c->file_open = 0;
  chan_free_if_unused((int)(c - uv_chans));
  spin_unlock(&rdma.lock);
}

// An event the core recorded but the engine has not yet drained (a
// completion made by a receive pass that woke the engine instead of
// running it) counts: it is drained here first, as get_cq_event does.
static int chan_poll(struct file *f) {
  struct uv_chan *c = f->obj;
  spin_lock(&rdma.lock);
  rdma_events_drain();
  int bits = chan_cq((int)(c - uv_chans), 0, 1) >= 0 ? POLLIN : 0;
  spin_unlock(&rdma.lock);
  return bits;
}

// read() and write() are NULL: events come through get_cq_event.
static const struct file_ops chan_ops = { .poll = chan_poll, .close = chan_close };

// A completion channel: its file descriptor, or -1.
int uv_create_chan(void) {
  int h = -1;
  spin_lock(&rdma.lock);
  for (int i = 0; i < RDMA_MAX_CHAN && h < 0; i++) {
    if (!uv_chans[i].used) {
      uv_chans[i] = (struct uv_chan){ .used = 1, .pid = current()->pid, .file_open = 1 };
      h = i;
    }
  }
  spin_unlock(&rdma.lock);
  if (h < 0) return -1;
  int fd = fd_open_obj(&chan_ops, &uv_chans[h]);
  if (fd < 0) {
    spin_lock(&rdma.lock);
    uv_chans[h].used = 0;
    spin_unlock(&rdma.lock);
  }
  return fd;
}

// Closes the caller's channel fd, unless a CQ uses it: 0, or -1.
int uv_destroy_chan(int fd) {
  spin_lock(&rdma.lock);
  int ch = chan_get(fd);
  int busy = ch < 0 || chan_cq(ch, 0, 0) >= 0;
  spin_unlock(&rdma.lock);
  return busy ? -1 : fd_close(fd);
}

// ---- rings mapped into the process: CQs' and QPs' ----

// Lock held. Copies n bytes between byte off of the ring whose pinned
// pages are pa and buf (to the ring if out), page by page through the
// direct map. off + n is inside the ring (the callers' offsets derive
// from the ring's size, never from what the ring holds).
static void ring_copy(const uint64 *pa, uint64 off, void *buf, uint64 n, int out) {
  while (n > 0) {
    uint64 in_page = PGSIZE - off % PGSIZE, k = n < in_page ? n : in_page;
    uint8 *at = (uint8 *)pa[off / PGSIZE] + off % PGSIZE;
    if (out) memmove(at, buf, k);
    else memmove(buf, at, k);
    off += k, buf = (uint8 *)buf + k, n -= k;
  }
}

// Lock held. The 32-bit word at byte off (4-aligned) of the ring whose
// pinned pages are pa, read or written whole: the process may write its
// own indices at the same time (from another hart), and a word copied
// byte by byte could mix its old and new value.
static uint32 ring_get32(const uint64 *pa, uint64 off) {
  return *(volatile uint32 *)((uint8 *)pa[off / PGSIZE] + off % PGSIZE);
}
static void ring_put32(const uint64 *pa, uint64 off, uint32 v) {
  *(volatile uint32 *)((uint8 *)pa[off / PGSIZE] + off % PGSIZE) = v;
}

// Lock NOT held (may sleep). Pins the caller's ring of bytes (> 0) at va:
// page-aligned, below MAXVA, memory the process may write (not read-only
// text). Its pages' addresses into pa (max of them): how many, or -1.
static int ring_pin(uint64 va, uint64 bytes, uint64 *pa, int max) {
  if (bytes == 0 || va % PGSIZE != 0 || va + bytes <= va || va + bytes > MAXVA) return -1;
  for (uint64 off = 0; off < bytes; off += PGSIZE)
    if (uvm_user_pa(current()->pagetable, va + off, 1) == 0) return -1;
  return uvm_pin(current()->pagetable, va, bytes, pa, max);
}

// ---- CQ rings (uapi.h struct rdma_cq_ring) ----

#define RING_FIELD(f) offsetof(struct rdma_cq_ring, f)

// Lock held. The process's consumer index, read once: how many entries of
// the ring are still unread, or cqe + 1 for a garbage index (which the
// kernel treats as a full ring: the CQ then overruns, the process's own).
static uint32 ring_unread(struct rdma_cq *cq, struct uv_cq *u) {
  uint32 unread = u->prod - ring_get32(u->ring_pa, RING_FIELD(cons));
  return unread <= cq->cq.size ? unread : cq->cq.size + 1;
}

// Lock held. Moves cq's completions into its mapped ring while there is
// room, then publishes prod (after the entries: a fence between), held
// and error. More completions unpolled than the CQ's size (ring and
// kernel together) is an overrun, as the core's own ring full would be
// (IBTA 11.4.2.1); a garbage consumer index makes one.
static void ring_move(struct rdma_cq *cq, struct uv_cq *u) {
  if (u->ring_pages == 0) return;
  uint32 unread = ring_unread(cq, u), size = cq->cq.size;
  struct rct_wc wc;
  while (!cq->error && unread < size && rdma_cq_take_locked(cq, &wc, 1) == 1) {
    ring_copy(u->ring_pa, RING_FIELD(wc) + (uint64)(u->prod % size) * sizeof wc, &wc, sizeof wc, 1);
    u->prod++, unread++;
  }
  uint32 held = rct_cq_count(&cq->cq);
  if (!cq->error && unread + held > size) rdma_cq_overrun_locked(cq);
  uint32 err = cq->error;
  __sync_synchronize();
  ring_put32(u->ring_pa, RING_FIELD(prod), u->prod);
  ring_put32(u->ring_pa, RING_FIELD(held), held);
  ring_put32(u->ring_pa, RING_FIELD(error), err);
}

// Maps the caller's CQ h's ring at va (page-aligned, zeroed by the
// process, RDMA_CQ_RING_BYTES(cqe) long): pins its pages, from then on
// completions go there (ring_move). 0, or -1 (not the caller's CQ, mapped
// already, or memory the process may not write).
int uv_map_cq(int h, uint64 va) {
  uint64 pa[RING_MAX_PAGES];
  spin_lock(&rdma.lock);
  struct rdma_cq *cq = own_cq(h);
  uint64 bytes = cq && uv_cqs[h].ring_pages == 0 ? RDMA_CQ_RING_BYTES(cq->cq.size) : 0;
  spin_unlock(&rdma.lock);
  int n = ring_pin(va, bytes, pa, RING_MAX_PAGES);
  if (n < 0) return -1;
  spin_lock(&rdma.lock);
  int ok = own_cq(h) == cq && uv_cqs[h].ring_pages == 0;
  if (ok) {
    for (int i = 0; i < n; i++) uv_cqs[h].ring_pa[i] = pa[i];
    uv_cqs[h].ring_pages = n;
    uv_cqs[h].prod = 0;
    ring_move(cq, &uv_cqs[h]);     // completions taken before the mapping
  }
  spin_unlock(&rdma.lock);
  if (!ok) uvm_unpin(pa, n);
  return ok ? 0 : -1;
}

// The completion handler of every front-end CQ (kverbs.h's rules: lock
// held, no sleeping). Wakes uv_wait_cq's sleepers, and raises the event
// of an armed CQ on its channel unless solicited_only and none of the
// completions was solicited or an error.
static void uv_cq_comp(struct rdma_cq *cq, void *ctx, uint32 flags) {
  struct uv_cq *u = &uv_cqs[cq - rdma_cqs];
  ring_move(cq, u);
  if (cq->error) flags |= KV_COMP_OVERRUN;
  if (u->waiters) proc_wakeup(u);
  if ((flags & KV_COMP_OVERRUN) || !u->armed || !u->chan) return;
  if (u->solicited_only && !(flags & KV_COMP_SOLICITED)) return;
  u->armed = 0;
  u->events++;
  proc_wakeup(&uv_chans[u->chan - 1]);
  poll_notify();
}

// A CQ of cqe entries reporting to channel chan_fd (-1: none), its events
// carrying cookie: its handle, -1 for a bad argument, or
// RDMA_NO_RESOURCES (every slot taken, or no pool run for the ring).
int uv_create_cq(int cqe, int chan_fd, uint64 cookie) {
  struct kv_owner *o = self(1);
  int h = -1;
  if (!o) return -1;
  spin_lock(&rdma.lock);
  int ch = chan_fd == -1 ? -1 : chan_get(chan_fd);
  struct rdma_cq *cq;
  if (chan_fd == -1 || ch >= 0) {
    h = rdma_cq_create_locked(o, cqe, uv_cq_comp, NULL, &cq);
    if (h == 0) {
      h = (int)(cq - rdma_cqs);
      uv_cqs[h] = (struct uv_cq){ .chan = ch + 1, .cookie = cookie };
    }
  }
  spin_unlock(&rdma.lock);
  return h;
}

// The caller's CQ h, unless a QP uses it: 0, or -1.
int uv_destroy_cq(int h) {
  spin_lock(&rdma.lock);
  struct kv_owner *o = self_locked();
  int slot = o ? rdma_cq_destroy_locked(o, AT(rdma_cqs, RDMA_MAX_CQ, h)) : -1;
  if (slot >= 0) {
    int ch = uv_cqs[slot].chan - 1;
    cq_forget(slot);
    chan_free_if_unused(ch);
  }
  spin_unlock(&rdma.lock);
  return slot >= 0 ? 0 : -1;
}

// Up to n of the caller's CQ h's completions: how many, or -1. A mapped
// CQ's completions go to its ring instead: this moves those the kernel
// held while the ring was full, and returns 0 (-1 once overrun).
int uv_poll_cq(int h, struct rct_wc *out, int n) {
  spin_lock(&rdma.lock);
  struct rdma_cq *cq = own_cq(h);
  int mapped = cq && uv_cqs[h].ring_pages > 0;
  if (mapped) ring_move(cq, &uv_cqs[h]);
  int r = mapped && !cq->error ? 0 : -1;
  spin_unlock(&rdma.lock);
  if (mapped) return r;
  struct kv_owner *o = self(0);
  return o ? kv_poll_cq(o, AT(rdma_cqs, RDMA_MAX_CQ, h), out, n) : -1;
}

// Lock held. The caller's CQ h, or NULL.
static struct rdma_cq *own_cq(int h) {
  struct kv_owner *o = self_locked();
  struct rdma_cq *cq = AT(rdma_cqs, RDMA_MAX_CQ, h);
  return o && rdma_cq_owned(o, cq) >= 0 ? cq : NULL;
}

// Arms the caller's CQ h for one event: 0, or -1. With sol (solicited
// only) the event waits for a receive completion whose message carried
// BTH.SE (rct_wc.solicited) or for an error completion. Completions the
// core reported before the arming are taken first, so only later ones
// raise the event.
int uv_req_notify(int h, int sol) {
  int r = -1;
  spin_lock(&rdma.lock);
  struct rdma_cq *cq = own_cq(h);
  if (cq && !cq->error) {
    rdma_events_drain();
    uv_cqs[h].armed = 1;
    uv_cqs[h].solicited_only = sol != 0;
    r = 0;
  }
  spin_unlock(&rdma.lock);
  return r;
}

// Sleeps until a CQ of the caller's channel fd has an event, takes it:
// the CQ's handle and *cookie, or -1 (not the caller's channel, killed,
// or O_NONBLOCK and no event waits).
int uv_get_cq_event(int fd, uint64 *cookie) {
  int h = -1, ch;
  struct proc *p = current();
  spin_lock(&rdma.lock);
  while ((ch = chan_get(fd)) >= 0) {
    rdma_events_drain();
    if ((h = chan_cq(ch, 0, 1)) >= 0) {
      uv_cqs[h].events--;
      *cookie = uv_cqs[h].cookie;
      break;
    }
    if (proc_killed(p) || file_nonblock(fd_file(fd))) break;
    proc_sleep(&uv_chans[ch], &rdma.lock);
  }
  spin_unlock(&rdma.lock);
  return h;
}

static uint64 deadline_after_ms(int timeout_ms) {
  return timeout_ms < 0 ? ~0ull : clock_ns() + (uint64)timeout_ms * 1000000;
}

// 0 once the caller's CQ h holds a completion (or has overrun: the next
// poll reports it), -2 at the timeout (< 0: none), -1 for a CQ that is
// not the caller's or a kill. Completions stay in the CQ for ibv_poll_cq:
// this is the sleeping half of a polling loop for programs without a
// completion channel. The completion handler wakes the waiters.
int uv_wait_cq(int h, int timeout_ms) {
  uint64 deadline = deadline_after_ms(timeout_ms);
  struct proc *p = current();
  int r;
  spin_lock(&rdma.lock);
  if (own_cq(h) && rdma_progress(RDMA_BUDGET)) rdma_kick();
  for (;;) {
    struct rdma_cq *cq = own_cq(h);
    if (!cq || proc_killed(p)) { r = -1; break; }
    if (uv_cqs[h].ring_pages > 0) ring_move(cq, &uv_cqs[h]);
    if (cq->error || rct_cq_count(&cq->cq) > 0 || (uv_cqs[h].ring_pages > 0 && ring_unread(cq, &uv_cqs[h]) > 0)) {
      r = 0;
      break;
    }
    if (clock_ns() >= deadline) { r = -2; break; }
    uv_cqs[h].waiters++;
    proc_sleep_until(&uv_cqs[h], &rdma.lock, deadline);
    uv_cqs[h].waiters--;
  }
  spin_unlock(&rdma.lock);
  return r;
}

// addr: the kernel's address of a byte of the caller's memory (the system
// call translated it; the caller, asleep here, cannot unmap it). 0 once
// *addr != old, -2 at the timeout (< 0: none), -1 for a kill. Every frame
// the core takes in wakes the sleepers (rdma_frame_arrived).
int uv_wait_write(const volatile uint8 *addr, uint8 old, int timeout_ms) {
  uint64 deadline = deadline_after_ms(timeout_ms);
  struct proc *p = current();
  int r;
  spin_lock(&rdma.lock);
  for (;;) {
    if (proc_killed(p)) { r = -1; break; }
    if (*addr != old) { r = 0; break; }
    if (clock_ns() >= deadline) { r = -2; break; }
    rdma.frame_waiters++;
    proc_sleep_until(&rdma.frame_waiters, &rdma.lock, deadline);
    rdma.frame_waiters--;
  }
  spin_unlock(&rdma.lock);
  return r;
}

// ---- async events ----

// The async handler of every process's owner (lock held): the event goes
// to that process's queue, named by the object's handle and, for a CQ,
// its cookie. A full queue: its own oldest event makes room (counted in
// async_dropped); no other process's events are touched. Wakes only its
// own waiters.
static void uv_async(struct kv_owner *o, const struct kv_async_event *ev) {
  struct uv_proc *q = proc_of(o);
  if (!q) return;
  int h = ev->cq ? (int)(ev->cq - rdma_cqs) : ev->srq ? (int)(ev->srq - rdma_srqs) : (int)(ev->qp - rdma_qps);
  uint64 cookie = ev->cq ? uv_cqs[h].cookie : 0;
  if (q->tail - q->head == RDMA_ASYNC_PER_PROC) {
    q->head++;
    async_dropped++;
  }
  q->ev[q->tail++ % RDMA_ASYNC_PER_PROC] =
    (struct rdma_async_event){ .event_type = ev->type, .handle = h, .cookie = cookie };
  proc_wakeup(q);
}

// Takes the caller's oldest async event into *ev: 0, or -1 if there is
// none (with block: sleeps until there is one, -1 if killed).
int uv_get_async(struct rdma_async_event *ev, int block) {
  int found = 0;
  struct proc *p = current();
  spin_lock(&rdma.lock);
  for (;;) {
    struct uv_proc *q = proc_entry(p->pid, block);
    if (q && q->head != q->tail) {
      *ev = q->ev[q->head++ % RDMA_ASYNC_PER_PROC];
      found = 1;
    }
    if (found || !block || !q || proc_killed(p)) break;
    proc_sleep(q, &rdma.lock);
  }
  spin_unlock(&rdma.lock);
  return found ? 0 : -1;
}

// ---- QPs ----

// A QP over the caller's PD and CQs with c's queue sizes; fills in what
// was granted and the QPN. Returns the handle, -1 for a bad argument, or
// RDMA_NO_RESOURCES.
int uv_create_qp(struct rdma_qp_create *c) {
  struct kv_owner *o = self(0);
  if (!o) return -1;
  if (c->qp_type != 0 && c->qp_type != KV_QPT_RC && c->qp_type != KV_QPT_UD) return -1;
  struct kv_qp_init in = {
    .qp_type = c->qp_type ? c->qp_type : KV_QPT_RC, .pd = AT(rdma_pds, RDMA_MAX_PD, c->pd),
    .send_cq = AT(rdma_cqs, RDMA_MAX_CQ, c->send_cq), .recv_cq = AT(rdma_cqs, RDMA_MAX_CQ, c->recv_cq),
    .max_send_wr = c->max_send_wr, .max_recv_wr = c->max_recv_wr,
    .max_send_sge = c->max_send_sge, .max_recv_sge = c->max_recv_sge, .sq_sig_all = c->sq_sig_all,
    .srq = c->srq ? AT(rdma_srqs, RDMA_MAX_SRQ, c->srq - 1) : NULL,
  };
  if (c->srq && !in.srq) return -1;
  struct rdma_qp *qp;
  int r = kv_create_qp(o, &in, &qp);
  if (r < 0) return r;
  c->max_send_wr = in.max_send_wr;
  c->max_recv_wr = in.max_recv_wr;
  c->max_send_sge = in.max_send_sge;
  c->max_recv_sge = in.max_recv_sge;
  c->qp_num = in.qp_num;
  return (int)(qp - rdma_qps);
}

// The caller's QP h goes, with its rings: 0, or -1.
int uv_destroy_qp(int h) {
  spin_lock(&rdma.lock);
  struct kv_owner *o = self_locked();
  int slot = o ? rdma_qp_destroy_locked(o, AT(rdma_qps, RDMA_MAX_QP, h)) : -1;
  if (slot >= 0) qp_forget(slot);
  spin_unlock(&rdma.lock);
  return slot >= 0 ? 0 : -1;
}

// ---- send and receive rings mapped into the process (uapi.h struct rdma_wq_ring) ----

#define WQ_FIELD(f) offsetof(struct rdma_wq_ring, f)

// Lock held. The caller's QP h's ring `which` (RDMA_WQ_*), mapped or not,
// and its queue's size in *size; NULL if h is not the caller's QP.
static struct uv_wq *own_wq(int h, int which, uint32 *size) {
  struct kv_owner *o = self_locked();
  struct rdma_qp *qp = AT(rdma_qps, RDMA_MAX_QP, h);
  if (!o || (which != RDMA_WQ_SEND && which != RDMA_WQ_RECV) || rdma_qp_owned(o, qp) < 0) return NULL;
  *size = which == RDMA_WQ_SEND ? qp->base->init.sq_size : qp->srq < 0 ? qp->base->init.rq_size : 0;
  return &uv_qps[h].wq[which];
}

// Maps the caller's QP h's ring `which` at va (page-aligned, zeroed by the
// process, RDMA_WQ_RING_BYTES(which, the queue's size) long): pins its
// pages; from then on uv_doorbell posts from it. 0, or -1 (not the
// caller's QP, a queue of size 0 (an SRQ's QP's receives), mapped
// already, or memory the process may not write).
int uv_map_qp(int h, int which, uint64 va) {
  uint64 pa[WQ_RING_MAX_PAGES];
  uint32 size = 0, now = 0;
  spin_lock(&rdma.lock);
  struct uv_wq *w = own_wq(h, which, &size);
  uint64 bytes = w && w->pages == 0 && size > 0 ? RDMA_WQ_RING_BYTES(which, size) : 0;
  spin_unlock(&rdma.lock);
  int n = ring_pin(va, bytes, pa, WQ_RING_MAX_PAGES);
  if (n < 0) return -1;
  spin_lock(&rdma.lock);
  int ok = own_wq(h, which, &now) == w && w->pages == 0 && now == size;
  if (ok) {
    *w = (struct uv_wq){ .pages = n, .size = size, .cons = 0 };
    for (int i = 0; i < n; i++) w->pa[i] = pa[i];
  }
  spin_unlock(&rdma.lock);
  if (!ok) uvm_unpin(pa, n);
  return ok ? 0 : -1;
}

// The ring entry being taken in (under rdma.lock): slot 0 of a post
// batch, and a UD send's AH, QPN and Q_Key around it.
static struct post_batch wq_in;
static struct kv_ud_send_wr wq_ud;

// Lock held; q is o's, w its mapped ring `which`. Copies w's entry i into
// kernel memory (wq_in), then posts the copy, which the process can no
// longer change: 0, or the RDMA_E* reason the core refused it. Nothing
// is checked before the copy.
static int wq_post_entry(struct kv_owner *o, struct rdma_qp *q, struct uv_wq *w, int which, uint32 i) {
  int send = which == RDMA_WQ_SEND;
  uint64 esize = send ? sizeof(struct rdma_sq_entry) : sizeof(struct rdma_rq_entry);
  uint64 off = sizeof(struct rdma_wq_ring) + (uint64)(i % w->size) * esize;
  uint64 sge_off = off + (send ? offsetof(struct rdma_sq_entry, sge) : offsetof(struct rdma_rq_entry, sge));
  ring_copy(w->pa, off, send ? (void *)&wq_in.s[0] : (void *)&wq_in.r[0],
            send ? sizeof(struct rdma_send_wr) : sizeof(struct rdma_recv_wr), 0);
  uint64 ignored;               // the entry's sg_list: its SGEs are inline
  int nsge = post_batch_sges(&wq_in, send, 0, &ignored);
  ring_copy(w->pa, sge_off, wq_in.sg[0], (uint64)nsge * sizeof(struct rct_sge), 0);
  if (!send) return rdma_qp_post_locked(o, q, RDMA_POST_RECV, &wq_in.r[0]);
  if (q->type != KV_QPT_UD) return rdma_qp_post_locked(o, q, RDMA_POST_SEND, &wq_in.s[0]);
  const struct rdma_send_wr *u = (const struct rdma_send_wr *)&wq_in.s[0];
  wq_ud = (struct kv_ud_send_wr){ .wr = wq_in.s[0], .ah = AT(rdma_ahs, RDMA_MAX_AH, u->ud_ah),   // bad or foreign: refused
                                  .remote_qpn = u->ud_remote_qpn, .remote_qkey = u->ud_remote_qkey };
  return rdma_qp_post_locked(o, q, RDMA_POST_UD_SEND, &wq_ud);
}

// How an intake treats a refused entry (uapi.h struct rdma_wq_ring).
enum { WQ_DOORBELL, WQ_ENGINE };

// Lock held; q is o's, w its mapped ring `which`. Takes w's entries from
// cons up to prod, read once, and publishes cons. A refused entry ends
// the intake: at an engine pass one that does not fit (RDMA_ENOMEM) waits
// in the ring with those after it; otherwise it and the rest are dropped
// (at a doorbell err and err_at say which and why). Returns the entries
// posted, or -1 for garbage (prod - cons above size: nothing taken; or an
// entry refused without a doorbell): the caller makes the QP fatal.
static int wq_take(struct kv_owner *o, struct rdma_qp *q, struct uv_wq *w, int which, int mode) {
  uint32 prod = ring_get32(w->pa, WQ_FIELD(prod)), todo = prod - w->cons, done = 0;
  int err = 0;
  if (todo > w->size) return -1;
  __sync_synchronize();         // the entries after prod: the process wrote them before it
  for (; done < todo; done++)
    if ((err = wq_post_entry(o, q, w, which, w->cons + done)) != 0) break;
  int waits = mode == WQ_ENGINE && err == RDMA_ENOMEM;
  if (mode == WQ_DOORBELL) {
    ring_put32(w->pa, WQ_FIELD(err), (uint32)err);
    ring_put32(w->pa, WQ_FIELD(err_at), w->cons + done);
  }
  w->cons = waits ? w->cons + done : prod;
  __sync_synchronize();
  ring_put32(w->pa, WQ_FIELD(cons), w->cons);
  return err && mode == WQ_ENGINE && !waits ? -1 : (int)done;
}

// Lock held. QP slot h's ring held garbage: it is disarmed and the QP
// goes to ERR with IBV_EVENT_QP_FATAL, as a hardware QP that met a
// malformed WQE.
static void wq_fail(int h) {
  wq_disarm(h);
  rdma_qp_fatal_locked(rdma_qps[h].owner, &rdma_qps[h]);
}

// Lock held; q (slot h) is o's, w its mapped send ring. Publishes retired
// and arms w while q is an RC QP in RTS with WRs in its send queue (an
// engine pass is then bound to come: rdma.ring_intake takes w in; never
// in RESET, INIT or RTR, whose posts fail at the doorbell [QP-STATE-4]), else
// disarms it: armed = 0, fence, prod read again, and what came meanwhile
// is taken (uapi.h struct rdma_wq_ring). Returns -1 for garbage.
static int wq_settle(struct kv_owner *o, struct rdma_qp *q, int h, struct uv_wq *w) {
  for (;;) {
    int live;
    uint32 queued = rdma_qp_send_queued_locked(q, &live);
    ring_put32(w->pa, WQ_FIELD(retired), w->cons - queued);
    if (live && queued > 0) {
      if (!w->armed) ring_put32(w->pa, WQ_FIELD(armed), 1);
      w->armed = 1;
      rdma_live_set(wq_armed, h);
      return 0;
    }
    rdma_live_clear(wq_armed, h);
    if (w->armed) {
      w->armed = 0;
      ring_put32(w->pa, WQ_FIELD(armed), 0);
      __sync_synchronize();
    }
    if (ring_get32(w->pa, WQ_FIELD(prod)) == w->cons) return 0;
    if (wq_take(o, q, w, RDMA_WQ_SEND, WQ_ENGINE) < 0) return -1;
    rdma_qp_send_queued_locked(q, &live);
    if (!live) return 0;        // not RTS (ERR: flushed at once): stays disarmed
  }
}

// Lock held; an engine pass (rdma.ring_intake). Every armed send ring is
// taken in and settled; a ring found garbage makes its QP fatal. Returns
// the entries taken. The work is per armed ring: QPs with nothing in
// flight are not visited.
static int wq_intake_all(void) {
  int taken = 0;
  rdma_for_each_live(h, wq_armed) {
    struct rdma_qp *q = &rdma_qps[h];
    struct uv_wq *w = &uv_qps[h].wq[RDMA_WQ_SEND];
    uint32 before = w->cons;
    int r = wq_take(q->owner, q, w, RDMA_WQ_SEND, WQ_ENGINE);
    if (r < 0 || wq_settle(q->owner, q, h, w) < 0) wq_fail(h);
    if (w->cons != before) rdma_watch(h), taken += (int)(w->cons - before);
  }
  return taken;
}

// The doorbell of the caller's QP h's ring `which`: takes the entries from
// cons up to prod, each copied into kernel memory first, as
// SYS_rdma_post_* posts them (WQ_DOORBELL), then settles a send ring
// (wq_settle) and runs an engine pass. Returns the entries posted, or -1
// (not the caller's QP, no ring, or garbage: the QP goes to ERR and the
// process gets IBV_EVENT_QP_FATAL).
int uv_doorbell(int h, int which) {
  uint32 size;
  spin_lock(&rdma.lock);
  struct uv_wq *w = own_wq(h, which, &size);
  struct rdma_qp *q = AT(rdma_qps, RDMA_MAX_QP, h);
  if (!w || w->pages == 0) { spin_unlock(&rdma.lock); return -1; }
  struct kv_owner *o = q->owner;
  rdma_watch(h);
  int done = wq_take(o, q, w, which, WQ_DOORBELL);
  if (done >= 0 && which == RDMA_WQ_SEND && wq_settle(o, q, h, w) < 0) done = -1;
  if (done < 0) wq_fail(h);
  if (rdma_progress(RDMA_BUDGET)) rdma_kick();
  spin_unlock(&rdma.lock);
  return done;
}

// A modify first takes in the send ring's entries posted without a
// doorbell, under the state they were posted in, and disarms it: the next
// post rings the doorbell, which arms it again if the new state allows.
// A move to ERR so flushes them in posting order, as every queued WR
// [QP-ERR-2].
int uv_modify_qp(int h, struct rdma_qp_attr *a, uint32 mask) {
  struct kv_owner *o = self(0);
  uint32 size;
  spin_lock(&rdma.lock);
  struct uv_wq *w = own_wq(h, RDMA_WQ_SEND, &size);
  if (w && w->armed) {
    if (wq_take(rdma_qps[h].owner, &rdma_qps[h], w, RDMA_WQ_SEND, WQ_ENGINE) < 0) wq_fail(h);
    wq_disarm(h);
  }
  spin_unlock(&rdma.lock);
  return o ? kv_modify_qp(o, AT(rdma_qps, RDMA_MAX_QP, h), a, mask) : -1;
}

int uv_query_qp(int h, struct rdma_qp_attr *a) {
  struct kv_owner *o = self(0);
  return o ? kv_query_qp(o, AT(rdma_qps, RDMA_MAX_QP, h), a) : -1;
}

// UD sends: each WR as struct rdma_send_wr names its AH by handle (a bad
// or foreign one reaches the core as no AH: refused, RDMA_EINVAL).
static int post_send_ud(struct kv_owner *o, struct rdma_qp *qp, const struct rct_send_wr *wr, int n,
                        int *err) {
  struct kv_ud_send_wr ud[POST_UD_BATCH];
  int done = 0;
  while (done < n) {
    int k = n - done < POST_UD_BATCH ? n - done : POST_UD_BATCH;
    for (int i = 0; i < k; i++) {
      const struct rdma_send_wr *u = (const struct rdma_send_wr *)&wr[done + i];
      ud[i] = (struct kv_ud_send_wr){ .wr = wr[done + i], .ah = AT(rdma_ahs, RDMA_MAX_AH, u->ud_ah),
                                      .remote_qpn = u->ud_remote_qpn, .remote_qkey = u->ud_remote_qkey };
    }
    int r = kv_post_send_ud(o, qp, ud, k, err);
    if (r < 0) return done > 0 ? done : -1;
    done += r;
    if (r < k) break;
  }
  return done;
}

int uv_post_send(int h, const struct rct_send_wr *wr, int n, int *err) {
  struct kv_owner *o = self(0);
  *err = 0;
  struct rdma_qp *qp = AT(rdma_qps, RDMA_MAX_QP, h);
  if (!o) return -1;
  // The type read without the lock is a hint: each kv_ call refuses the
  // other type's sends, and create/destroy under the same handle race
  // only with the caller's own calls.
  if (qp && qp->type == KV_QPT_UD) return post_send_ud(o, qp, wr, n, err);
  return kv_post_send(o, qp, wr, n, err);
}

// ---- address handles ----

// An AH in the caller's PD a->pd: its handle, -1, RDMA_NO_ROUTE or
// RDMA_NO_RESOURCES. May sleep (ARP).
int uv_create_ah(const struct rdma_ah_attr *a) {
  struct kv_owner *o = self(0);
  struct rdma_ah *ah;
  if (!o) return -1;
  int r = kv_create_ah(o, AT(rdma_pds, RDMA_MAX_PD, a->pd), a, &ah);
  return r < 0 ? r : (int)(ah - rdma_ahs);
}

int uv_destroy_ah(int h) {
  struct kv_owner *o = self(0);
  return o ? kv_destroy_ah(o, AT(rdma_ahs, RDMA_MAX_AH, h)) : -1;
}

int uv_post_recv(int h, const struct rct_recv_wr *wr, int n, int *err) {
  struct kv_owner *o = self(0);
  *err = 0;
  return o ? kv_post_recv(o, AT(rdma_qps, RDMA_MAX_QP, h), wr, n, err) : -1;
}

// ---- shared receive queues ----

// An SRQ in the caller's PD c->pd: its handle (granted sizes in c), -1,
// or RDMA_NO_RESOURCES.
int uv_create_srq(struct rdma_srq_create *c) {
  struct kv_owner *o = self(0);
  if (!o) return -1;
  struct kv_srq_init in = { .pd = AT(rdma_pds, RDMA_MAX_PD, c->pd), .max_wr = c->max_wr, .max_sge = c->max_sge };
  struct rdma_srq *srq;
  int r = kv_create_srq(o, &in, &srq);
  if (r < 0) return r;
  c->max_wr = in.max_wr;
  c->max_sge = in.max_sge;
  return (int)(srq - rdma_srqs);
}

int uv_modify_srq(int h, const struct rdma_srq_attr *a, uint32 mask) {
  struct kv_owner *o = self(0);
  return o ? kv_modify_srq(o, AT(rdma_srqs, RDMA_MAX_SRQ, h), a, mask) : -1;
}

int uv_query_srq(int h, struct rdma_srq_attr *a) {
  struct kv_owner *o = self(0);
  return o ? kv_query_srq(o, AT(rdma_srqs, RDMA_MAX_SRQ, h), a) : -1;
}

int uv_destroy_srq(int h) {
  struct kv_owner *o = self(0);
  return o ? kv_destroy_srq(o, AT(rdma_srqs, RDMA_MAX_SRQ, h)) : -1;
}

int uv_post_srq_recv(int h, const struct rct_recv_wr *wr, int n, int *err) {
  struct kv_owner *o = self(0);
  *err = 0;
  return o ? kv_post_srq_recv(o, AT(rdma_srqs, RDMA_MAX_SRQ, h), wr, n, err) : -1;
}

// ---- statistics ----

// Slot i's QP (of any process) into *s: 0, 1 for an empty slot or a
// kernel consumer's QP (QP1's counters are rdma_dev_stats' gsi_*), -1
// past the table. Its handle is i for the caller's own QP, else -1.
int uv_qp_stats(int i, struct rdma_qp_stats *s) {
  if (i < 0 || i >= RDMA_MAX_QP) return -1;
  memset(s, 0, sizeof *s);
  spin_lock(&rdma.lock);
  struct uv_proc *u = rdma_live(rdma.qp_live, i) ? proc_of(rdma_qps[i].owner) : NULL;
  int live = u != NULL;          // a kernel consumer's QP (QP1: gsi.c) is not listed
  if (live) {
    rdma_qp_stats_locked(i, s);
    s->owner_pid = u->pid;
    s->handle = u->pid == current()->pid ? i : -1;
  }
  spin_unlock(&rdma.lock);
  return live ? 0 : 1;
}

// The device's counters and live objects, with the front end's own.
void uv_dev_stats(struct rdma_dev_stats *s) {
  kv_dev_stats(s);
  spin_lock(&rdma.lock);
  int chans = 0;
  for (int i = 0; i < RDMA_MAX_CHAN; i++) chans += uv_chans[i].used != 0;
  s->live_chans = chans;
  s->async_dropped = async_dropped;
  spin_unlock(&rdma.lock);
  cma_stats(s);
}
