// example.h: what the example programs of user/examples share: the
// private data a server sends with its accept (a buffer's address, rkey and
// length, in network byte order, as librdmacm programs commonly do), the
// test pattern and checksum both ends print for tests/rdma/run_examples.py,
// and waiting for one completion through a completion channel.
#ifndef EXAMPLE_H
#define EXAMPLE_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <stdint.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#define EX_PORT "18515"    // the tools' default rdma_cm port (perftest's), as a service string
#define EX_SIZE 8192       // bytes each transfer moves

struct ex_pdata {
  uint64_t buf_va;
  uint32_t buf_rkey;
  uint32_t buf_len;
};

static inline void ex_pattern(uint8_t *b, int n, int seed) {
  for (int i = 0; i < n; i++) b[i] = (uint8_t)(seed * 37 + i * 7 + (i >> 8));
}

// The synchronous examples' end on an error: which call failed, errno.
static inline void ex_fail(const char *prog, const char *what) {
  printf("%s: %s failed (errno %d)\n%s: FAILED\n", prog, what, errno, prog);
  exit(1);
}

// A completion rdma_get_send_comp / rdma_get_recv_comp returned (n of
// them): 0 if it is one and successful.
static inline int ex_comp_ok(const char *prog, int n, const struct ibv_wc *wc) {
  if (n > 0 && wc->status != IBV_WC_SUCCESS) printf("%s: %s\n", prog, ibv_wc_status_str(wc->status));
  return n > 0 && wc->status == IBV_WC_SUCCESS ? 0 : -1;
}

// The QP the synchronous examples ask rdma_create_ep for: one message
// each way at a time, every send signaled.
static inline void ex_ep_attr(struct ibv_qp_init_attr *attr) {
  memset(attr, 0, sizeof *attr);
  attr->cap.max_send_wr = attr->cap.max_recv_wr = 1;
  attr->cap.max_send_sge = attr->cap.max_recv_sge = 1;
  attr->qp_type = IBV_QPT_RC;
  attr->sq_sig_all = 1;
}

// FNV-1a 32 of n bytes.
static inline uint32_t ex_sum(const uint8_t *b, int n) {
  uint32_t h = 2166136261u;
  for (int i = 0; i < n; i++) h = (h ^ b[i]) * 16777619u;
  return h;
}

// The next completion of cq, sleeping on its channel: arm, poll once more
// (a completion may have come before the arm), then wait for the event.
// Returns 0 with *wc filled and successful, -1 otherwise.
static inline int ex_wait_comp(struct ibv_comp_channel *ch, struct ibv_cq *cq, struct ibv_wc *wc) {
  for (;;) {
    int n = ibv_poll_cq(cq, 1, wc);
    if (n == 0) {
      if (ibv_req_notify_cq(cq, 0)) return -1;
      n = ibv_poll_cq(cq, 1, wc);
    }
    if (n < 0) return -1;
    if (n == 1) {
      if (wc->status == IBV_WC_SUCCESS) return 0;
      printf("completion error: %s\n", ibv_wc_status_str(wc->status));
      return -1;
    }
    struct ibv_cq *ev_cq;
    void *ev_ctx;
    if (ibv_get_cq_event(ch, &ev_cq, &ev_ctx)) return -1;
    ibv_ack_cq_events(ev_cq, 1);
  }
}
#endif
