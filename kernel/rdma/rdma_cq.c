// rdma_cq.c: completion queues, completion channels and async events.
//
// A CQ is the core's struct rct_cq over a ring in the slot. poll hands
// out the core's completions as they are (the ABI's struct rdma_wc is
// their layout, rdma_abi.c). Functions here take kernel values; the system
// calls are kernel/sys/sysrdma.c. Notification:
// req_notify arms the CQ; the next completion added after arming raises
// one event on the CQ's channel, and get_cq_event sleeps until there is
// one (IBTA 11.4.2.2). The core says which CQs got completions (and
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
#include "rdma/rdma.h"

static int chan_get(int h) {
  if (h < 0 || h >= RDMA_MAX_CHAN) return -1;
  return (rdma_chans[h].used && rdma_chans[h].owner == rdma_cur_pid()) ? h : -1;
}

// Lock held. A CQ of the calling process, or NULL.
struct rdma_cq *rdma_cq_get(int h) {
  if (h < 0 || h >= RDMA_MAX_CQ) return NULL;
  struct rdma_cq *cq = &rdma_cqs[h];
  return (rdma_live(rdma.cq_live, h) && cq->owner == rdma_cur_pid()) ? cq : NULL;
}

// Lock NOT held (for every function below that takes a handle from a
// system call). A completion channel: its handle, or -1.
int rdma_create_chan(void) {
  int h = -1;
  spin_lock(&rdma.lock);
  for (int i = 0; i < RDMA_MAX_CHAN && h < 0; i++) {
    if (!rdma_chans[i].used) {
      rdma_chans[i] = (struct rdma_chan){ .used = 1, .owner = rdma_cur_pid() };
      h = i;
    }
  }
  spin_unlock(&rdma.lock);
  return h;
}

// The caller's channel h, unless a CQ uses it: 0, or -1.
int rdma_destroy_chan(int h) {
  int r = -1;
  spin_lock(&rdma.lock);
  if (chan_get(h) >= 0) {
    r = 0;
    for (int i = 0; i < RDMA_MAX_CQ; i++)
      if (rdma_live(rdma.cq_live, i) && rdma_cqs[i].chan == h) r = -1;
    if (r == 0) rdma_chans[h].used = 0;
  }
  spin_unlock(&rdma.lock);
  return r;
}

// A CQ of cqe entries reporting to channel ch (-1: none), its events
// carrying cookie: its handle, or -1.
int rdma_create_cq(int cqe, int ch, uint64 cookie) {
  int h = -1;
  if (cqe < 1 || cqe > RDMA_MAX_CQE) return -1;
  spin_lock(&rdma.lock);
  if (ch == -1 || chan_get(ch) >= 0) {
    for (int i = 0; i < RDMA_MAX_CQ && h < 0; i++) {
      struct rdma_cq *cq = &rdma_cqs[i];
      if (rdma_live(rdma.cq_live, i)) continue;
      h = i;
      rdma.cq_live |= 1u << i;
      cq->owner = rdma_cur_pid();
      cq->chan = ch;
      cq->cookie = cookie;
      cq->refs = cq->armed = cq->events = cq->error = cq->waiters = 0;
      rct_cq_init(&cq->cq, cq->ring, (uint32)cqe);
    }
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
    rct_cq_destroy(&cq->cq);
    rdma.cq_live &= ~(1u << h);
    r = 0;
  }
  spin_unlock(&rdma.lock);
  return r;
}

// Up to n of the caller's CQ h's completions into out: how many, or -1
// for a CQ that is not the caller's or has overrun.
int rdma_poll_cq(int h, struct rct_wc *out, int n) {
  int got = -1;
  spin_lock(&rdma.lock);
  if (rdma_cq_get(h) && !rdma_cqs[h].error) {
    if (rdma_progress(16)) rdma_kick();
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

// Sleeps until a CQ of the caller's channel ch has an event, takes it:
// the CQ's handle and *cookie, or -1 (not the caller's channel, killed).
int rdma_get_cq_event(int ch, uint64 *cookie) {
  int h = -1;
  struct proc *p = current();
  spin_lock(&rdma.lock);
  while (chan_get(ch) >= 0 && h < 0) {
    for (int i = 0; i < RDMA_MAX_CQ && h < 0; i++) {
      struct rdma_cq *cq = &rdma_cqs[i];
      if (rdma_live(rdma.cq_live, i) && cq->chan == ch && cq->events > 0) {
        cq->events--;
        h = i;
        *cookie = cq->cookie;
      }
    }
    if (h >= 0 || proc_killed(p)) break;
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
}

// Lock held; the process's QPs are already gone.
void rdma_cq_release_all(int pid) {
  for (int i = 0; i < RDMA_MAX_CQ; i++)
    if (rdma_live(rdma.cq_live, i) && rdma_cqs[i].owner == pid) {
      rct_cq_destroy(&rdma_cqs[i].cq);
      rdma.cq_live &= ~(1u << i);
    }
  for (int i = 0; i < RDMA_MAX_CHAN; i++)
    if (rdma_chans[i].used && rdma_chans[i].owner == pid) rdma_chans[i].used = 0;
}
