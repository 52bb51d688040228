// rdma_cq.c: completion queues, completion channels and async events.
//
// A CQ is the core's struct rct_cq over a ring in the slot. poll hands
// out the core's completions as they are (the ABI's struct rdma_wc is
// their layout, rdma_abi.c). Functions here take kernel values; the system
// calls are kernel/sys/sysrdma.c. Notification:
// req_notify arms the CQ; the next completion added after arming raises
// one event on the CQ's channel, and get_cq_event sleeps until there is
// one (IBTA 11.4.2.2). Overrun: when a completion did not fit, the CQ goes
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
      cq->seen_overflow = cq->cq.overflow;
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
// or for an error completion.
int rdma_req_notify(int h, int sol) {
  int r = -1;
  spin_lock(&rdma.lock);
  struct rdma_cq *cq = rdma_cq_get(h);
  if (cq && !cq->error) {
    cq->armed = 1;
    cq->solicited_only = sol != 0;
    cq->arm_tail = cq->cq.tail;
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

// Lock held; cq armed with new completions since arm_tail. Does one of
// them raise the event? Any does, unless solicited_only; then a solicited
// receive or an error does. Completions already polled are skipped, and
// arm_tail moves on so each is looked at once.
static int wakes(struct rdma_cq *cq) {
  if (!cq->solicited_only) return 1;
  uint32 i = (int32)(cq->cq.head - cq->arm_tail) > 0 ? cq->cq.head : cq->arm_tail;
  int hit = 0;
  for (; i != cq->cq.tail && !hit; i++) {
    const struct rct_wc *w = rct_cq_at(&cq->cq, i);
    hit = w->solicited || w->status != RCT_WC_SUCCESS;
  }
  cq->arm_tail = cq->cq.tail;
  return hit;
}

// Lock held. After the core ran: overruns and armed CQs that got work.
void rdma_cq_scan(void) {
  rdma_for_each_live(i, rdma.cq_live) {
    struct rdma_cq *cq = &rdma_cqs[i];
    if (cq->cq.overflow != cq->seen_overflow && !cq->error) {
      cq->seen_overflow = cq->cq.overflow;
      cq->error = 1;
      rdma_async_push(cq->owner, IBV_EVENT_CQ_ERR, i, cq->cookie);
    }
    if (cq->waiters && (cq->cq.tail != cq->cq.head || cq->error))
      proc_wakeup(cq);                       // rdma_wait_cq
    if (cq->armed && cq->cq.tail != cq->arm_tail && cq->chan >= 0 && wakes(cq)) {
      cq->armed = 0;
      cq->events++;
      proc_wakeup(&rdma_chans[cq->chan]);
    }
  }
}

// Lock held; the process's QPs are already gone.
void rdma_cq_release_all(int pid) {
  for (int i = 0; i < RDMA_MAX_CQ; i++)
    if (rdma_live(rdma.cq_live, i) && rdma_cqs[i].owner == pid)
      rdma.cq_live &= ~(1u << i);
  for (int i = 0; i < RDMA_MAX_CHAN; i++)
    if (rdma_chans[i].used && rdma_chans[i].owner == pid) rdma_chans[i].used = 0;
}
