// rdma_cq.c: completion queues, completion channels and async events.
//
// A CQ is the core's struct rct_cq over a ring in the slot. poll copies
// completions out in the ABI layout (libibverbs values). Notification:
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
#include "proc/args.h"
#include "rdma/rdma.h"

#define IBV_EVENT_CQ_ERR 0

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

int64 sys_rdma_create_chan(void) {
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

int64 sys_rdma_destroy_chan(void) {
  int h = arg_int(0), r = -1;
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

// rdma_create_cq(cqe, chan or -1, cookie) -> cq
int64 sys_rdma_create_cq(void) {
  int cqe = arg_int(0), ch = arg_int(1), h = -1;
  uint64 cookie = arg_addr(2);
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

int64 sys_rdma_destroy_cq(void) {
  int h = arg_int(0), r = -1;
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

static void to_abi_wc(const struct rct_wc *w, struct rdma_wc *o) {
  o->wr_id = w->wr_id;
  o->status = w->status;
  o->opcode = w->opcode;
  o->vendor_err = w->vendor_err;
  o->byte_len = w->byte_len;
  o->imm_data = __builtin_bswap32(w->imm_data);   // ibv_wc.imm_data is big-endian
  o->qp_num = w->qp_num;
  o->src_qp = w->src_qp;
  o->wc_flags = w->wc_flags;
}

// rdma_poll_cq(cq, n, struct rdma_wc *wc) -> completions copied
int64 sys_rdma_poll_cq(void) {
  int h = arg_int(0), n = arg_int(1);
  uint64 uva = arg_addr(2);
  pagetable_t pt = current()->pagetable;
  if (n < 0) return -1;
  int got = 0;
  spin_lock(&rdma.lock);
  if (rdma_cq_get(h) == NULL || rdma_cqs[h].error) { spin_unlock(&rdma.lock); return -1; }
  if (rdma_progress(16)) rdma_kick();
  while (got < n) {
    struct rct_wc w;
    struct rdma_wc o;
    if (rct_poll_cq(&rdma_cqs[h].cq, &w, 1) != 1) break;
    to_abi_wc(&w, &o);
    // copy_out under the spin lock: user pages are resident (no paging).
    if (copy_out(pt, uva + (uint64)got * sizeof o, &o, sizeof o) < 0) {
      spin_unlock(&rdma.lock);
      return -1;       // the completion is lost, as when a poller passes a bad buffer
    }
    got++;
  }
  spin_unlock(&rdma.lock);
  return got;
}

// rdma_req_notify(cq, solicited_only). With solicited_only the event waits
// for a receive completion whose message carried BTH.SE (rct_wc.solicited)
// or for an error completion. Completions the core reported before the
// arming are taken first, so only later ones raise the event.
int64 sys_rdma_req_notify(void) {
  int h = arg_int(0), sol = arg_int(1), r = -1;
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

// rdma_get_cq_event(chan, unsigned long long *cookie) -> cq; sleeps.
int64 sys_rdma_get_cq_event(void) {
  int ch = arg_int(0), h = -1;
  uint64 cookie = 0;
  struct proc *p = current();
  spin_lock(&rdma.lock);
  while (chan_get(ch) >= 0 && h < 0) {
    for (int i = 0; i < RDMA_MAX_CQ && h < 0; i++) {
      struct rdma_cq *cq = &rdma_cqs[i];
      if (rdma_live(rdma.cq_live, i) && cq->chan == ch && cq->events > 0) {
        cq->events--;
        h = i;
        cookie = cq->cookie;
      }
    }
    if (h >= 0 || proc_killed(p)) break;
    proc_sleep(&rdma_chans[ch], &rdma.lock);
  }
  spin_unlock(&rdma.lock);
  if (h >= 0 && copy_out(p->pagetable, arg_addr(1), &cookie, sizeof cookie) < 0) return -1;
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

// rdma_get_async(struct rdma_async_event *out, block) -> 0, or -1 if none.
// Takes the caller's oldest event.
int64 sys_rdma_get_async(void) {
  int block = arg_int(1), found = 0;
  struct rdma_async_event ev;
  struct proc *p = current();
  spin_lock(&rdma.lock);
  for (;;) {
    struct rdma_evq *q = evq_of(p->pid, block);
    if (q && q->head != q->tail) {
      ev = q->ev[q->head++ % RDMA_ASYNC_PER_PROC];
      found = 1;
    }
    if (found || !block || !q || proc_killed(p)) break;
    proc_sleep(q, &rdma.lock);
  }
  spin_unlock(&rdma.lock);
  if (!found) return -1;
  return copy_out(p->pagetable, arg_addr(0), &ev, sizeof ev);
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
