// rmem_verbs.h: the verbs steps both ends of the rmem protocol take alike
// (rmemd, user/bin/rmemd.c, and librmem, rmem.c): posting a receive of a
// control message, an RC QP's attributes, and offering xv6's selective
// repeat on an rdma_cm id.
// Header-only so that rmemd need not link librmem; builds for xv6 and Linux.
#ifndef RMEM_VERBS_H
#define RMEM_VERBS_H

#include <stdint.h>
#include <string.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

// One receive of len bytes at buf (lkey's MR), completing with wr_id.
static inline int rmemv_post_recv(struct ibv_qp *qp, void *buf, uint32_t len, uint32_t lkey,
                                  uint64_t wr_id) {
  struct ibv_sge sge = { (uint64_t)(uintptr_t)buf, len, lkey };
  struct ibv_recv_wr wr, *bad;
  memset(&wr, 0, sizeof wr);
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  return ibv_post_recv(qp, &wr, &bad);
}

// An RC QP's attributes: both queues on cq, one SGE, these depths.
static inline void rmemv_qp_attr(struct ibv_qp_init_attr *qa, struct ibv_cq *cq, uint32_t send_wr,
                                 uint32_t recv_wr) {
  memset(qa, 0, sizeof *qa);
  qa->send_cq = qa->recv_cq = cq;
  qa->qp_type = IBV_QPT_RC;
  qa->cap.max_send_wr = send_wr;
  qa->cap.max_recv_wr = recv_wr;
  qa->cap.max_send_sge = qa->cap.max_recv_sge = 1;
}

// xv6's transport extension (rdma_cm.h's RDMAX_OPTION_XV6): offer selective
// repeat on id before rdma_connect / rdma_accept; the connection uses it
// when both ends offered it [SR-NEG-1]. Linux's rdma_cm has no such
// option: there it does nothing and returns 0.
static inline int rmemv_offer_sr(struct rdma_cm_id *id) {
#ifdef RDMAX_OPTION_XV6
  struct rdmax_transport t;
  memset(&t, 0, sizeof t);
  t.sr = 1;
  return rdma_set_option(id, RDMAX_OPTION_XV6, RDMAX_OPTION_TRANSPORT, &t, sizeof t);
#else
  (void)id;
  return 0;
#endif
}

#endif
