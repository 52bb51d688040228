// cq.c: xrpeer's verbs resources (PD, a CQ on a completion channel, one RC
// or UD QP, MRs) and waiting for completions with a deadline, sleeping on the
// channel's file descriptor rather than spinning (the guest shares a small
// host with QEMU peers).
#include "peer.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

int pres_create(struct pres *r, struct peer_dev *d, int cq_depth, int wr_depth) {
  return pres_create_qp(r, d, cq_depth, wr_depth, IBV_QPT_RC);
}

int pres_create_qp(struct pres *r, struct peer_dev *d, int cq_depth, int wr_depth, enum ibv_qp_type type) {
  memset(r, 0, sizeof *r);
  r->pd = ibv_alloc_pd(d->ctx);
  r->chan = ibv_create_comp_channel(d->ctx);
  if (!r->pd || !r->chan) return -1;
  int fl = fcntl(r->chan->fd, F_GETFL);
  if (fl < 0 || fcntl(r->chan->fd, F_SETFL, fl | O_NONBLOCK) < 0) return -1;
  r->cq = ibv_create_cq(d->ctx, cq_depth, NULL, r->chan, 0);
  if (!r->cq || ibv_req_notify_cq(r->cq, 0)) return -1;
  struct ibv_qp_init_attr ia;
  memset(&ia, 0, sizeof ia);
  ia.send_cq = ia.recv_cq = r->cq;
  ia.cap.max_send_wr = ia.cap.max_recv_wr = (uint32_t)wr_depth;
  ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
  ia.qp_type = type;
  r->qp = ibv_create_qp(r->pd, &ia);
  return r->qp ? 0 : -1;
}

void pres_destroy(struct pres *r) {
  if (r->qp) ibv_destroy_qp(r->qp);
  if (r->cq) ibv_destroy_cq(r->cq);
  if (r->chan) ibv_destroy_comp_channel(r->chan);
  if (r->pd) ibv_dealloc_pd(r->pd);
  memset(r, 0, sizeof *r);
}

struct ibv_mr *pres_reg(struct pres *r, void *buf, size_t len) {
  return ibv_reg_mr(r->pd, buf, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                    IBV_ACCESS_REMOTE_ATOMIC);
}

// Takes any pending event and re-arms the CQ; -1 on error.
static int rearm(struct pres *r) {
  struct ibv_cq *cq;
  void *ctx;
  while (ibv_get_cq_event(r->chan, &cq, &ctx) == 0) ibv_ack_cq_events(cq, 1);
  if (errno != EAGAIN && errno != EWOULDBLOCK) return -1;
  return ibv_req_notify_cq(r->cq, 0) ? -1 : 0;
}

int pres_poll(struct pres *r, struct ibv_wc *wc, int max, int timeout_ms) {
  uint64_t end = now_ns() + (uint64_t)timeout_ms * 1000000u;
  for (;;) {
    int n = ibv_poll_cq(r->cq, max, wc);
    if (n != 0) return n < 0 ? -1 : n;
    uint64_t t = now_ns();
    if (t >= end) return 0;
    // Armed before this poll found the CQ empty, so a completion since
    // then raises an event on the channel's fd.
    struct pollfd pf = { .fd = r->chan->fd, .events = POLLIN };
    int pr = poll(&pf, 1, (int)((end - t) / 1000000u) + 1);
    if (pr < 0 && errno != EINTR) return -1;
    if (rearm(r)) return -1;
  }
}
