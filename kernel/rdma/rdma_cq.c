// rdma_cq.c: completion queues, completion channels and async events.
//
// A CQ is the core's struct rct_cq over a ring of pool pages
// (rdma_pool.c), taken at create and given back at destroy. poll hands
// out the core's completions as they are (the ABI's struct rdma_wc is
// their layout, rdma_abi.c). Functions here take kernel values; the system
// calls are kernel/sys/sysrdma.c. Notification:
// req_notify arms the CQ; the next completion added after arming raises
// one event on the CQ's channel, and get_cq_event sleeps until there is
// one (IBTA 11.4.2.2). A channel is a file descriptor (its struct
// file_ops are here): poll() reports POLLIN while one of its CQs has an
// event, O_NONBLOCK makes get_cq_event return -1 instead of sleeping, and
// its slot is freed once the file is closed and no CQ reports to it
// (destroy_chan refuses while one does, as libibverbs' EBUSY). The core says which CQs got completions (and
// whether one was solicited or an error) as events the engine drains
// (rdma_cq_on_event); this file reads none of the CQ's ring. Overrun: when a completion did not fit, the CQ goes
// to the error state (poll fails from then on) and an IBV_EVENT_CQ_ERR
// async event is recorded for the owner (IBTA 11.4.2.1, "CQ overrun").
// Async events: a queue per process (rdma.evq), created by its first
// event or blocking wait and freed by the exit hook; a full queue drops
// its own oldest event, so no process can crowd out another's.
#include "lib/types.h"
#include "lib/param.h"
#include "core/proc.h"
#include "core/printk.h"
#include "core/vm.h"
#include "lib/klib.h"
#include "core/poll.h"
#include "fs/file.h"
#include "rdma/rdma.h"

static const struct file_ops chan_ops;

// The caller's channel behind descriptor fd: its slot, or -1 (not a
// channel, or another process's: it is its creator's, as every verbs
// object, even where fork shared the descriptor).
static int chan_get(int fd) {
  struct rdma_chan *c = fd_obj(fd, &chan_ops);
  return c && c->owner == rdma_cur_pid() ? (int)(c - rdma_chans) : -1;
}

// Lock held. The first live CQ reporting to channel slot ch, at or after
// slot i, with an event not yet taken when events; or -1.
static int chan_cq(int ch, int i, int events) {
  for (int j = rdma_live_next(rdma.cq_live, i); j >= 0; j = rdma_live_next(rdma.cq_live, j + 1))
    if (rdma_cqs[j].chan == ch && (!events || rdma_cqs[j].events > 0)) return j;
  return -1;
}

// Lock held. Frees channel slot ch once its file is closed and no CQ
// reports to it.
static void chan_free_if_unused(int ch) {
  if (ch >= 0 && rdma_chans[ch].used && !rdma_chans[ch].file_open && chan_cq(ch, 0, 0) < 0)
    rdma_chans[ch].used = 0;
}

static void chan_close(struct file *f) {
  struct rdma_chan *c = f->obj;
  spin_lock(&rdma.lock);
  c->file_open = 0;
  chan_free_if_unused((int)(c - rdma_chans));
  spin_unlock(&rdma.lock);
}

// An event the core recorded but the engine has not yet drained (a
// completion made by a receive pass that woke the engine instead of
// running it) counts: it is drained here first, as get_cq_event does.
static int chan_poll(struct file *f) {
  struct rdma_chan *c = f->obj;
  spin_lock(&rdma.lock);
  rdma_events_drain();
  int bits = chan_cq((int)(c - rdma_chans), 0, 1) >= 0 ? POLLIN : 0;
  spin_unlock(&rdma.lock);
  return bits;
}

// read() and write() are NULL: events come through get_cq_event.
static const struct file_ops chan_ops = { .poll = chan_poll, .close = chan_close };

// Lock held. A CQ of the calling process, or NULL.
struct rdma_cq *rdma_cq_get(int h) {
  if (h < 0 || h >= RDMA_MAX_CQ) return NULL;
  struct rdma_cq *cq = &rdma_cqs[h];
  return (rdma_live(rdma.cq_live, h) && cq->owner == rdma_cur_pid()) ? cq : NULL;
}

// Lock NOT held (for every function below that takes a handle from a
// system call). A completion channel: its file descriptor, or -1.
int rdma_create_chan(void) {
  int h = -1;
  spin_lock(&rdma.lock);
  for (int i = 0; i < RDMA_MAX_CHAN && h < 0; i++) {
    if (!rdma_chans[i].used) {
      rdma_chans[i] = (struct rdma_chan){ .used = 1, .owner = rdma_cur_pid(), .file_open = 1 };
      h = i;
    }
  }
  spin_unlock(&rdma.lock);
  if (h < 0) return -1;
  int fd = fd_open_obj(&chan_ops, &rdma_chans[h]);
  if (fd < 0) {
    spin_lock(&rdma.lock);
    rdma_chans[h].used = 0;
    spin_unlock(&rdma.lock);
  }
  return fd;
}

// Closes the caller's channel fd, unless a CQ uses it: 0, or -1.
int rdma_destroy_chan(int fd) {
  spin_lock(&rdma.lock);
  int ch = chan_get(fd);
  int busy = ch < 0 || chan_cq(ch, 0, 0) >= 0;
  spin_unlock(&rdma.lock);
  return busy ? -1 : fd_close(fd);
}

// Lock held; slot h free. Its ring takes pool pages: h, or
// RDMA_NO_RESOURCES.
static int cq_init(int h, int cqe, int ch, uint64 cookie) {
  struct rdma_cq *cq = &rdma_cqs[h];
  int pages = (int)RDMA_PAGES((uint64)cqe * sizeof(struct rct_wc));
  struct rct_wc *ring = rdma_pool_alloc(pages);
  if (!ring) return RDMA_NO_RESOURCES;
  rdma_live_set(rdma.cq_live, h);
  cq->owner = rdma_cur_pid();
  cq->chan = ch;
  cq->cookie = cookie;
  cq->refs = cq->armed = cq->events = cq->error = cq->waiters = 0;
  cq->ring = ring;
  cq->ring_pages = pages;
  rct_cq_init(&cq->cq, ring, (uint32)cqe);
  return h;
}

// Lock held. Slot h's CQ goes (no QP uses it), its ring back to the pool.
static void cq_free(int h) {
  struct rdma_cq *cq = &rdma_cqs[h];
  rct_cq_destroy(&cq->cq);
  rdma_pool_free(cq->ring, cq->ring_pages);
  cq->ring = NULL;
  rdma_live_clear(rdma.cq_live, h);
}

// A CQ of cqe entries reporting to channel ch (-1: none), its events
// carrying cookie: its handle, -1 for a bad argument, or
// RDMA_NO_RESOURCES (every slot taken, or no pool run for the ring).
int rdma_create_cq(int cqe, int chan_fd, uint64 cookie) {
  int h = -1;
  if (cqe < 1 || cqe > RDMA_MAX_CQE) return -1;
  spin_lock(&rdma.lock);
  int ch = chan_fd == -1 ? -1 : chan_get(chan_fd);
  if (chan_fd == -1 || ch >= 0) {
    int slot = rdma_live_free(rdma.cq_live);
    h = slot < 0 ? RDMA_NO_RESOURCES : cq_init(slot, cqe, ch, cookie);
  }
  spin_unlock(&rdma.lock);
  return h;
}

// The caller's CQ h, unless a QP uses it: 0, or -1.
int rdma_destroy_cq(int h) {
  int r = -1;
  spin_lock(&rdma.lock);
  struct rdma_cq *cq = rdma_cq_get(h);
  if (cq && cq->refs == 0) {
    cq_free(h);
    chan_free_if_unused(cq->chan);
    r = 0;
  }
  spin_unlock(&rdma.lock);
  return r;
}

// Up to n of the caller's CQ h's completions into out: how many, or -1
// for a CQ that is not the caller's or has overrun. It does not run the
// engine (received frames, posts and the engine thread do): a process
// spinning in ibv_poll_cq would hold rdma.lock for most of its time, and
// the receive path waits for that lock (bench/results/latency-notes.md).
int rdma_poll_cq(int h, struct rct_wc *out, int n) {
  int got = -1;
  spin_lock(&rdma.lock);
  if (rdma_cq_get(h) && !rdma_cqs[h].error) {
    got = rct_poll_cq(&rdma_cqs[h].cq, out, n);
  }
  for (int i = 0; i < got; i++)   // the padding goes to user space too: no stale bytes
    memset(&out[i].solicited + 1, 0, sizeof *out - offsetof(struct rct_wc, solicited) - 1);
  spin_unlock(&rdma.lock);
  return got;
}

// Arms the caller's CQ h for one event: 0, or -1. With sol (solicited
// only) the event waits
// for a receive completion whose message carried BTH.SE (rct_wc.solicited)
// or for an error completion. Completions the core reported before the
// arming are taken first, so only later ones raise the event.
int rdma_req_notify(int h, int sol) {
  int r = -1;
  spin_lock(&rdma.lock);
  struct rdma_cq *cq = rdma_cq_get(h);
  if (cq && !cq->error) {
    rdma_events_drain();
    cq->armed = 1;
    cq->solicited_only = sol != 0;
    r = 0;
  }
  spin_unlock(&rdma.lock);
  return r;
}

// Sleeps until a CQ of the caller's channel fd has an event, takes it:
// the CQ's handle and *cookie, or -1 (not the caller's channel, killed,
// or O_NONBLOCK and no event waits).
int rdma_get_cq_event(int fd, uint64 *cookie) {
  int h = -1, ch;
  struct proc *p = current();
  spin_lock(&rdma.lock);
  while ((ch = chan_get(fd)) >= 0) {
    rdma_events_drain();
    if ((h = chan_cq(ch, 0, 1)) >= 0) {
      rdma_cqs[h].events--;
      *cookie = rdma_cqs[h].cookie;
      break;
    }
    if (proc_killed(p) || file_nonblock(fd_file(fd))) break;
    proc_sleep(&rdma_chans[ch], &rdma.lock);
  }
  spin_unlock(&rdma.lock);
  return h;
}

// Lock held. pid's event queue; with create, a free slot becomes it.
// NULL if pid has none (and create is 0, or the table is full).
static struct rdma_evq *evq_of(int pid, int create) {
  struct rdma_evq *free = NULL;
  for (int i = 0; i < NPROC; i++) {
    if (rdma.evq[i].pid == pid) return &rdma.evq[i];
    if (!free && rdma.evq[i].pid == 0) free = &rdma.evq[i];
  }
  if (!create || !free) return NULL;
  *free = (struct rdma_evq){ .pid = pid };
  return free;
}

// Lock held. Record an async event for process owner. Its queue full: its
// own oldest event makes room (counted in rdma.async_dropped); no other
// process's events are touched. Wakes only owner's waiters.
void rdma_async_push(int owner, int type, int handle, uint64 cookie) {
  struct rdma_evq *q = evq_of(owner, 1);
  if (!q) return;            // cannot happen: a slot per process slot
  if (q->tail - q->head == RDMA_ASYNC_PER_PROC) {
    q->head++;
    rdma.async_dropped++;
  }
  q->ev[q->tail++ % RDMA_ASYNC_PER_PROC] =
    (struct rdma_async_event){ .event_type = type, .handle = handle, .cookie = cookie };
  proc_wakeup(q);
}

// Takes the caller's oldest async event into *ev: 0, or -1 if there is
// none (with block: sleeps until there is one, -1 if killed).
int rdma_get_async(struct rdma_async_event *ev, int block) {
  int found = 0;
  struct proc *p = current();
  spin_lock(&rdma.lock);
  for (;;) {
    struct rdma_evq *q = evq_of(p->pid, block);
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

// Lock held. The exit hook: pid's queue and its events go.
void rdma_async_release(int pid) {
  struct rdma_evq *q = evq_of(pid, 0);
  if (q) q->pid = 0;
}

// Lock held. The core's event for a live CQ (rct_cq_destroy takes a freed
// CQ's events away). An overrun puts the CQ in error and tells its owner
// once; completions wake rdma_wait_cq's sleepers, and an armed CQ's
// channel unless solicited_only and none of them was solicited or an error.
void rdma_cq_on_event(const struct rct_event *ev) {
  struct rdma_cq *cq = (struct rdma_cq *)((char *)ev->cq - offsetof(struct rdma_cq, cq));
  int h = (int)(cq - rdma_cqs);
  if (ev->type == RCT_EV_CQ_OVERFLOW && !cq->error) {
    cq->error = 1;
    rdma_async_push(cq->owner, IBV_EVENT_CQ_ERR, h, cq->cookie);
  }
  if (cq->waiters) proc_wakeup(cq);          // rdma_wait_cq
  if (ev->type != RCT_EV_CQ_COMP || !cq->armed || cq->chan < 0) return;
  if (cq->solicited_only && !(ev->info & RCT_EV_SOLICITED)) return;
  cq->armed = 0;
  cq->events++;
  proc_wakeup(&rdma_chans[cq->chan]);
  poll_notify();
}

// Lock held; the process's QPs are already gone. Its channels go with
// their files (closed after the exit hooks), or here if already closed.
void rdma_cq_release_all(int pid) {
  rdma_for_each_live(i, rdma.cq_live)
    if (rdma_cqs[i].owner == pid) cq_free(i);
  for (int i = 0; i < RDMA_MAX_CHAN; i++) chan_free_if_unused(i);
}
