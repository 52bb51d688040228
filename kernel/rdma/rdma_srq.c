// rdma_srq.c: shared receive queues (proto-spec srq.md). An SRQ slot holds
// the core's struct rct_srq; its ring of receive WQEs is one run of pool
// pages (rdma_pool.c), sized to max_wr at create and given back at
// destroy. QPs created with it (rdma_qp.c) take its WQEs inside the core;
// this file owns create, modify (the limit), query, destroy (refused while
// a QP uses it), posting, the limit event to the owner, and the SRQs'
// release when their owner ends.
#include "lib/types.h"
#include "lib/param.h"
#include "lib/klib.h"
#include "rdma/rdma.h"

struct rdma_srq rdma_srqs[RDMA_MAX_SRQ];

// Lock held. srq's slot if it is a live SRQ of o, else -1.
int rdma_srq_owned(struct kv_owner *o, const struct rdma_srq *srq) {
  if (srq < rdma_srqs || srq >= rdma_srqs + RDMA_MAX_SRQ) return -1;
  return (srq->used && srq->owner == o) ? (int)(srq - rdma_srqs) : -1;
}

// Lock held; slot h free, c checked, pdh o's. RDMA_NO_RESOURCES when the
// pool has no run for the ring. [SRQ-VERB-1]
static int srq_init(struct kv_owner *o, int h, struct kv_srq_init *c, int pdh) {
  struct rdma_srq *s = &rdma_srqs[h];
  uint32 size = rdma_pow2_at_least(c->max_wr ? c->max_wr : 1);
  int pages = (int)RDMA_PAGES(size * sizeof(struct rct_recv_wqe));
  void *ring = rdma_pool_alloc(pages);
  if (!ring) return RDMA_NO_RESOURCES;
  if (rct_srq_init(&rdma.dev, &s->srq, ring, size) != RCT_OK) {
    rdma_pool_free(ring, pages);
    return -1;
  }
  s->used = 1;
  s->owner = o;
  s->pd = pdh;
  s->max_sge = c->max_sge ? c->max_sge : 1;
  s->ring = ring;
  s->ring_pages = pages;
  rdma_pds[pdh].refs++;
  c->max_wr = size;
  c->max_sge = s->max_sge;
  return 0;
}

int kv_create_srq(struct kv_owner *o, struct kv_srq_init *c, struct rdma_srq **out) {
  if (c->max_wr > RDMA_MAX_SRQ_WR || c->max_sge > RDMA_MAX_SGE) return -1;
  int rc = -1;
  spin_lock(&rdma.lock);
  int pdh = rdma_pd_owned(o, c->pd);
  if (pdh >= 0) {
    int slot = -1;
    for (int i = 0; i < RDMA_MAX_SRQ && slot < 0; i++)
      if (!rdma_srqs[i].used) slot = i;
    rc = slot < 0 ? RDMA_NO_RESOURCES : srq_init(o, slot, c, pdh);
    if (rc == 0) *out = &rdma_srqs[slot];
  }
  spin_unlock(&rdma.lock);
  return rc;
}

// Lock held; slot h live. Its WQEs still posted go uncompleted [SRQ-VERB-4].
static int srq_free(int h) {
  struct rdma_srq *s = &rdma_srqs[h];
  if (rct_srq_destroy(&s->srq) != RCT_OK) return RDMA_BUSY;
  rdma_pool_free(s->ring, s->ring_pages);
  rdma_pds[s->pd].refs--;
  *s = (struct rdma_srq){ 0 };
  return 0;
}

int kv_destroy_srq(struct kv_owner *o, struct rdma_srq *srq) {
  spin_lock(&rdma.lock);
  int h = rdma_srq_owned(o, srq);
  int r = h < 0 ? -1 : srq_free(h);
  spin_unlock(&rdma.lock);
  return r;
}

// Lock held. Every SRQ of o (its QPs are gone, so none is busy).
void rdma_srq_release_all(struct kv_owner *o) {
  for (int i = 0; i < RDMA_MAX_SRQ; i++)
    if (rdma_srqs[i].used && rdma_srqs[i].owner == o) srq_free(i);
}

// [SRQ-LIMIT-1] [SRQ-VERB-3]: all or nothing.
int kv_modify_srq(struct kv_owner *o, struct rdma_srq *srq, const struct rdma_srq_attr *a, uint32 mask) {
  if (mask & ~(uint32)IBV_SRQ_LIMIT) return -1;      // resizing (IBV_SRQ_MAX_WR) or unknown bits
  spin_lock(&rdma.lock);
  int h = rdma_srq_owned(o, srq);
  int r = h >= 0 && rct_srq_set_limit(&srq->srq, mask ? a->srq_limit : srq->srq.limit) == RCT_OK ? 0 : -1;
  spin_unlock(&rdma.lock);
  return r;
}

// [SRQ-VERB-2]
int kv_query_srq(struct kv_owner *o, struct rdma_srq *srq, struct rdma_srq_attr *a) {
  memset(a, 0, sizeof *a);
  spin_lock(&rdma.lock);
  int h = rdma_srq_owned(o, srq);
  if (h >= 0) *a = (struct rdma_srq_attr){ srq->srq.size, srq->max_sge, srq->srq.limit };
  spin_unlock(&rdma.lock);
  return h >= 0 ? 0 : -1;
}

// [SRQ-VERB-5]: in order until one is refused. Nothing to run: a QP that
// answered RNR takes the new WQEs when its peer retries.
int kv_post_srq_recv(struct kv_owner *o, struct rdma_srq *srq, const struct rct_recv_wr *wr, int n, int *err) {
  int done = -1;
  *err = 0;
  spin_lock(&rdma.lock);
  if (rdma_srq_owned(o, srq) >= 0) {
    for (done = 0; done < n; done++) {
      if ((uint32)wr[done].num_sge > srq->max_sge) *err = RDMA_EINVAL;
      else *err = rdma_post_errno(rct_srq_post_recv(&srq->srq, &wr[done]));
      if (*err) break;
    }
  }
  spin_unlock(&rdma.lock);
  return done;
}

// Lock held; the core's SRQ_LIMIT event [SRQ-LIMIT-2]. A destroyed SRQ's
// events left with it (rct_srq_destroy).
void rdma_srq_on_event(const struct rct_event *ev) {
  struct rdma_srq *s = (struct rdma_srq *)((char *)ev->srq - offsetof(struct rdma_srq, srq));
  struct kv_async_event ae = { .type = IBV_EVENT_SRQ_LIMIT_REACHED, .srq = s };
  if (s->used && s->owner->async) s->owner->async(s->owner, &ae);
}
