// rdma_cq.c: completion queues of the verbs core (kverbs.h).
//
// A CQ is the core's struct rct_cq over a ring of pool pages
// (rdma_pool.c), taken at create and given back at destroy. poll hands
// out the core's completions as they are (the ABI's struct rdma_wc is
// their layout, rdma_abi.c). The core says which CQs got completions (and
// whether one was solicited or an error) as events the engine drains
// (rdma_cq_on_event); this file reads none of the CQ's ring for that, and
// calls the CQ's completion handler. Overrun: when a completion did not
// fit, the CQ goes to the error state (poll fails from then on), its
// owner's async handler hears IBV_EVENT_CQ_ERR once (IBTA 11.4.2.1, "CQ
// overrun") and its completion handler KV_COMP_OVERRUN. Completion
// channels, arming and the per-process event queues are the front end's
// (uverbs.c), built on the handler.
#include "lib/types.h"
#include "lib/param.h"
#include "lib/klib.h"
#include "rdma/rdma.h"

// Lock held. cq's slot if it is a live CQ of o, else -1.
int rdma_cq_owned(struct kv_owner *o, const struct rdma_cq *cq) {
  if (cq < rdma_cqs || cq >= rdma_cqs + RDMA_MAX_CQ) return -1;
  int h = (int)(cq - rdma_cqs);
  return (rdma_live(rdma.cq_live, h) && cq->owner == o) ? h : -1;
}

// Lock held. A CQ of o with cqe entries and handler fn(ctx): 0 and *out,
// -1 for a bad size, or RDMA_NO_RESOURCES (every slot taken, or no pool
// run for the ring).
int rdma_cq_create_locked(struct kv_owner *o, int cqe, kv_comp_fn fn, void *ctx, struct rdma_cq **out) {
  if (cqe < 1 || cqe > RDMA_MAX_CQE || !o) return -1;
  int h = rdma_live_free(rdma.cq_live);
  if (h < 0) return RDMA_NO_RESOURCES;
  struct rdma_cq *cq = &rdma_cqs[h];
  int pages = (int)RDMA_PAGES((uint64)cqe * sizeof(struct rct_wc));
  struct rct_wc *ring = rdma_pool_alloc(pages);
  if (!ring) return RDMA_NO_RESOURCES;
  rdma_live_set(rdma.cq_live, h);
  *cq = (struct rdma_cq){ .owner = o, .comp = fn, .comp_ctx = ctx, .ring = ring, .ring_pages = pages };
  rct_cq_init(&cq->cq, ring, (uint32)cqe);
  *out = cq;
  return 0;
}

int kv_create_cq(struct kv_owner *o, int cqe, kv_comp_fn fn, void *ctx, struct rdma_cq **out) {
  spin_lock(&rdma.lock);
  int r = rdma_cq_create_locked(o, cqe, fn, ctx, out);
  spin_unlock(&rdma.lock);
  return r;
}

// Lock held. Slot h's CQ goes (no QP uses it), its ring back to the pool.
static void cq_free(int h) {
  struct rdma_cq *cq = &rdma_cqs[h];
  rct_cq_destroy(&cq->cq);
  rdma_pool_free(cq->ring, cq->ring_pages);
  cq->ring = NULL;
  rdma_live_clear(rdma.cq_live, h);
}

// Lock held. o's CQ cq goes, unless a QP uses it: its slot, or -1.
int rdma_cq_destroy_locked(struct kv_owner *o, struct rdma_cq *cq) {
  int h = rdma_cq_owned(o, cq);
  if (h < 0 || cq->refs != 0) return -1;
  cq_free(h);
  return h;
}

int kv_destroy_cq(struct kv_owner *o, struct rdma_cq *cq) {
  spin_lock(&rdma.lock);
  int h = rdma_cq_destroy_locked(o, cq);
  spin_unlock(&rdma.lock);
  return h >= 0 ? 0 : -1;
}

// Up to n of o's CQ cq's completions into wc: how many, or -1 for a CQ
// that is not o's or has overrun. It does not run the engine (received
// frames, posts and the engine thread do): a process spinning in
// ibv_poll_cq would hold rdma.lock for most of its time, and the receive
// path waits for that lock (bench/results/latency-notes.md).
int kv_poll_cq(struct kv_owner *o, struct rdma_cq *cq, struct rct_wc *wc, int n) {
  int got = -1;
  spin_lock(&rdma.lock);
  if (rdma_cq_owned(o, cq) >= 0 && !cq->error && n >= 0) got = rdma_cq_take_locked(cq, wc, n);
  spin_unlock(&rdma.lock);
  return got;
}

// Lock held, n >= 0. Up to n of cq's completions into wc, their padding
// zeroed (it may reach user space: no stale bytes): how many.
int rdma_cq_take_locked(struct rdma_cq *cq, struct rct_wc *wc, int n) {
  int got = rct_poll_cq(&cq->cq, wc, n);
  for (int i = 0; i < got; i++)
    memset(&wc[i].solicited + 1, 0, sizeof *wc - offsetof(struct rct_wc, solicited) - 1);
  return got;
}

// Lock held. The core's event for a live CQ (rct_cq_destroy takes a freed
// CQ's events away). An overrun puts the CQ in error and tells its owner
// once; completions go to the completion handler.
void rdma_cq_on_event(const struct rct_event *ev) {
  struct rdma_cq *cq = (struct rdma_cq *)((char *)ev->cq - offsetof(struct rdma_cq, cq));
  uint32 flags = 0;
  if (ev->type == RCT_EV_CQ_OVERFLOW) {
    if (cq->error) return;
    rdma_cq_overrun_locked(cq);
    flags = KV_COMP_OVERRUN;
  } else if (ev->info & RCT_EV_SOLICITED) {
    flags = KV_COMP_SOLICITED;
  }
  if (cq->comp) cq->comp(cq, cq->comp_ctx, flags);
}

// Lock held, cq not in error. cq overran (the core's ring, or a ring
// mapped into a process, did not hold every completion not yet polled):
// it goes to the error state and its owner hears IBV_EVENT_CQ_ERR.
void rdma_cq_overrun_locked(struct rdma_cq *cq) {
  cq->error = 1;
  struct kv_async_event ae = { .type = IBV_EVENT_CQ_ERR, .cq = cq };
  if (cq->owner->async) cq->owner->async(cq->owner, &ae);
}

// Lock held; the owner's QPs are already gone.
void rdma_cq_release_all(struct kv_owner *o) {
  rdma_for_each_live(i, rdma.cq_live)
    if (rdma_cqs[i].owner == o) cq_free(i);
}
