// sysrdma.c: the RDMA verbs system calls (SYS_rdma_* in lib/uapi.h).
// Each handler fetches its arguments, copies ABI structs in or out and
// calls the per-process front end (rdma/uverbs.c: handles, owner checks,
// channels, async events) or the device's queries (rdma/kverbs.h) with
// kernel values. A bad user pointer or handle is
// -1. Work requests and completions cross as the core lays them out
// (rdma/rdma_abi.c asserts it): a WR is copied in straight into a struct
// rct_send_wr / rct_recv_wr, its SGEs into kernel memory the WR then
// points at, and completions go out as the core wrote them.
#include "lib/types.h"
#include "lib/param.h"
#include "core/proc.h"
#include "core/vm.h"
#include "proc/args.h"
#include "rdma/rdma.h"
#include "lib/uapi.h"

#define POLL_BATCH 16           // completions per rdma_poll_cq call

static pagetable_t user_pt(void) { return current()->pagetable; }

// Copies out len bytes for a call whose result r >= 0 means success.
static int64 out_if_ok(int64 r, uint64 uva, const void *src, uint64 len) {
  if (r < 0) return r;
  return copy_out(user_pt(), uva, src, len) < 0 ? -1 : r;
}

int64 sys_rdma_query_device(void) {
  struct rdma_device_info d;
  kv_query_device(&d);
  return out_if_ok(0, arg_addr(0), &d, sizeof d);
}

int64 sys_rdma_query_port(void) {
  struct rdma_port_info pi;
  return out_if_ok(kv_query_port(arg_int(0), &pi), arg_addr(1), &pi, sizeof pi);
}

int64 sys_rdma_alloc_pd(void) { return uv_alloc_pd(); }
int64 sys_rdma_dealloc_pd(void) { return uv_dealloc_pd(arg_int(0)); }

// (pd, addr, length, access, struct rdma_mr_keys *out) -> mr
int64 sys_rdma_reg_mr(void) {
  struct rdma_mr_keys k;
  int h = uv_reg_mr(arg_int(0), arg_addr(1), arg_addr(2), (uint32)arg_int(3), &k);
  if (out_if_ok(h, arg_addr(4), &k, sizeof k) >= 0 || h < 0) return h;
  uv_dereg_mr(h);             // the caller cannot learn the handle: undo
  return -1;
}

int64 sys_rdma_dereg_mr(void) { return uv_dereg_mr(arg_int(0)); }
int64 sys_rdma_create_chan(void) { return uv_create_chan(); }
int64 sys_rdma_destroy_chan(void) { return uv_destroy_chan(arg_int(0)); }
int64 sys_rdma_create_cq(void) { return uv_create_cq(arg_int(0), arg_int(1), arg_addr(2)); }
int64 sys_rdma_destroy_cq(void) { return uv_destroy_cq(arg_int(0)); }
int64 sys_rdma_map_cq(void) { return uv_map_cq(arg_int(0), arg_addr(1)); }
int64 sys_rdma_req_notify(void) { return uv_req_notify(arg_int(0), arg_int(1)); }

// (cq, n, struct rdma_wc *wc) -> completions copied. A bad buffer is -1
// and loses the completions taken for it, as a poller's own bad buffer.
int64 sys_rdma_poll_cq(void) {
  int h = arg_int(0), n = arg_int(1), got = 0, k;
  uint64 uva = arg_addr(2);
  struct rct_wc wc[POLL_BATCH];
  if (n < 0) return -1;
  do {
    int want = n - got < POLL_BATCH ? n - got : POLL_BATCH;
    if ((k = uv_poll_cq(h, wc, want)) < 0) return got > 0 ? got : -1;
    if (copy_out(user_pt(), uva + (uint64)got * sizeof(struct rdma_wc), wc,
                 (uint64)k * sizeof(struct rdma_wc)) < 0) return -1;
    got += k;
    if (k < want) break;
  } while (got < n);
  return got;
}

// (chan fd, unsigned long long *cookie) -> cq; sleeps unless O_NONBLOCK.
int64 sys_rdma_get_cq_event(void) {
  uint64 cookie = 0;
  return out_if_ok(uv_get_cq_event(arg_int(0), &cookie), arg_addr(1), &cookie, sizeof cookie);
}

// (struct rdma_qp_create *io) -> qp
int64 sys_rdma_create_qp(void) {
  struct rdma_qp_create c;
  uint64 uva = arg_addr(0);
  if (copy_in(user_pt(), &c, uva, sizeof c) < 0) return -1;
  int h = uv_create_qp(&c);
  if (out_if_ok(h, uva, &c, sizeof c) >= 0 || h < 0) return h;
  uv_destroy_qp(h);           // the caller cannot learn the handle: undo
  return -1;
}

int64 sys_rdma_destroy_qp(void) { return uv_destroy_qp(arg_int(0)); }
int64 sys_rdma_map_qp(void) { return uv_map_qp(arg_int(0), arg_int(1), arg_addr(2)); }
int64 sys_rdma_doorbell(void) { return uv_doorbell(arg_int(0), arg_int(1)); }

// (qp, struct rdma_qp_attr *attr, IBV_QP_* | RDMA_QP_* mask)
int64 sys_rdma_modify_qp(void) {
  struct rdma_qp_attr a;
  if (copy_in(user_pt(), &a, arg_addr(1), sizeof a) < 0) return -1;
  return uv_modify_qp(arg_int(0), &a, (uint32)arg_int(2));
}

int64 sys_rdma_query_qp(void) {
  struct rdma_qp_attr a;
  return out_if_ok(uv_query_qp(arg_int(0), &a), arg_addr(1), &a, sizeof a);
}

// What a post call posts to: a QP's send or receive queue, or an SRQ.
enum { TO_RECV, TO_SEND, TO_SRQ };

// WR i of the batch from uva: 0, or -1 for a bad WR or SGE address. A
// num_sge out of range copies no SGE: rdma_post_* refuses the WR.
static int wr_in(int is_send, uint64 uva, struct post_batch *b, int i) {
  uint64 size = is_send ? sizeof(struct rdma_send_wr) : sizeof(struct rdma_recv_wr);
  if (copy_in(user_pt(), is_send ? (void *)&b->s[i] : (void *)&b->r[i], uva, size) < 0) return -1;
  uint64 sg_uva;
  int nsge = post_batch_sges(b, is_send, i, &sg_uva);
  return nsge == 0 ? 0 : copy_in(user_pt(), b->sg[i], sg_uva, (uint64)nsge * sizeof(struct rct_sge));
}

// (qp, wr array, n, int *err) -> WRs accepted; the first refused one is
// index "accepted" and *err says why. -1 for a bad handle, a bad error
// pointer (checked before anything is posted) or a first WR that cannot
// be read; a later unreadable WR ends the post there.
static int64 post_common(int to) {
  int h = arg_int(0), n = arg_int(2), err = 0, done = 0, is_send = to == TO_SEND;
  uint64 uva = arg_addr(1), err_uva = arg_addr(3);
  uint64 size = is_send ? sizeof(struct rdma_send_wr) : sizeof(struct rdma_recv_wr);
  struct post_batch b;
  if (n < 0) return -1;
  if (err_uva && copy_out(user_pt(), err_uva, &err, sizeof err) < 0) return -1;
  for (;;) {
    int k = 0, unreadable = 0;
    for (; k < RDMA_POST_BATCH && done + k < n && !unreadable; k++)
      unreadable = wr_in(is_send, uva + (uint64)(done + k) * size, &b, k) < 0;
    k -= unreadable;
    int r = is_send ? uv_post_send(h, b.s, k, &err)
            : to == TO_SRQ ? uv_post_srq_recv(h, b.r, k, &err) : uv_post_recv(h, b.r, k, &err);
    if (r < 0) return -1;
    done += r;
    if (r < k || done == n) break;
    if (unreadable) return done > 0 ? done : -1;
  }
  if (err && err_uva && copy_out(user_pt(), err_uva, &err, sizeof err) < 0) return -1;
  return done;
}

int64 sys_rdma_post_send(void) { return post_common(TO_SEND); }
int64 sys_rdma_post_recv(void) { return post_common(TO_RECV); }
int64 sys_rdma_post_srq_recv(void) { return post_common(TO_SRQ); }

// (struct rdma_srq_create *io) -> srq
int64 sys_rdma_create_srq(void) {
  struct rdma_srq_create c;
  uint64 uva = arg_addr(0);
  if (copy_in(user_pt(), &c, uva, sizeof c) < 0) return -1;
  int h = uv_create_srq(&c);
  if (out_if_ok(h, uva, &c, sizeof c) >= 0 || h < 0) return h;
  uv_destroy_srq(h);          // the caller cannot learn the handle: undo
  return -1;
}

// (srq, struct rdma_srq_attr *attr, IBV_SRQ_* mask)
int64 sys_rdma_modify_srq(void) {
  struct rdma_srq_attr a;
  if (copy_in(user_pt(), &a, arg_addr(1), sizeof a) < 0) return -1;
  return uv_modify_srq(arg_int(0), &a, (uint32)arg_int(2));
}

int64 sys_rdma_query_srq(void) {
  struct rdma_srq_attr a;
  return out_if_ok(uv_query_srq(arg_int(0), &a), arg_addr(1), &a, sizeof a);
}

int64 sys_rdma_destroy_srq(void) { return uv_destroy_srq(arg_int(0)); }

// (struct rdma_async_event *out, block) -> 0, or -1 if none.
int64 sys_rdma_get_async(void) {
  struct rdma_async_event ev;
  return out_if_ok(uv_get_async(&ev, arg_int(1)), arg_addr(0), &ev, sizeof ev);
}

// (i, struct rdma_qp_stats *out) -> 0 = slot i holds a QP (of any
// process), 1 = empty slot, -1 = past the table or bad pointer.
int64 sys_rdma_qp_stats(void) {
  struct rdma_qp_stats s;
  int r = uv_qp_stats(arg_int(0), &s);
  return r == 0 ? out_if_ok(r, arg_addr(1), &s, sizeof s) : r;
}

// (ipv4 host order, unsigned char mac[6])
int64 sys_rdma_set_neigh(void) {
  uint8 mac[6];
  if (copy_in(user_pt(), mac, arg_addr(1), sizeof mac) < 0) return -1;
  return rdma_set_neigh((uint32)arg_int(0), mac);
}

// (const uchar *addr, old, timeout_ms) -> 0 changed, -2 timeout, -1 bad
// address or killed. The byte is read through the kernel's direct map; its
// page is pinned for the wait, so the pager (core/pager.c) cannot evict it.
int64 sys_rdma_wait_write(void) {
  uint64 va = arg_addr(0), pa;
  if (uvm_pin(user_pt(), va, 1, &pa, 1) != 1) return -1;
  int r = uv_wait_write((const volatile uint8 *)(pa + va % PGSIZE), (uint8)arg_int(1), arg_int(2));
  uvm_unpin(&pa, 1);
  return r;
}

int64 sys_rdma_wait_cq(void) { return uv_wait_cq(arg_int(0), arg_int(1)); }

int64 sys_rdma_dev_stats(void) {
  struct rdma_dev_stats s;
  uv_dev_stats(&s);
  return out_if_ok(0, arg_addr(0), &s, sizeof s);
}

// (struct rdma_ah_attr *attr) -> ah; RDMA_NO_ROUTE when the destination
// does not answer ARP.
int64 sys_rdma_create_ah(void) {
  struct rdma_ah_attr a;
  if (copy_in(user_pt(), &a, arg_addr(0), sizeof a) < 0) return -1;
  return uv_create_ah(&a);
}

int64 sys_rdma_destroy_ah(void) { return uv_destroy_ah(arg_int(0)); }
