// rdma_verbs.h: librdmacm's <rdma/rdma_verbs.h> for xv6-rdma: memory
// registration and work requests on an rdma_cm_id's PD and QP, and waiting
// for their completions (rdma_get_send_comp / rdma_get_recv_comp in
// user/lib/rdmacm/rdma_cm.c). Returns as librdmacm's: 0 / -1 with errno, pointers
// NULL. rdmax_post_write_imm and rdmax_post_send_imm are project
// extensions (librdmacm has no immediate-data helpers).
#ifndef RDMA_VERBS_H
#define RDMA_VERBS_H
#include "rdma_cm.h"

static inline struct ibv_mr *rdma_reg_msgs(struct rdma_cm_id *id, void *addr, size_t length) {
  return ibv_reg_mr(id->pd, addr, length, IBV_ACCESS_LOCAL_WRITE);
}
static inline struct ibv_mr *rdma_reg_read(struct rdma_cm_id *id, void *addr, size_t length) {
  return ibv_reg_mr(id->pd, addr, length, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
}
static inline struct ibv_mr *rdma_reg_write(struct rdma_cm_id *id, void *addr, size_t length) {
  return ibv_reg_mr(id->pd, addr, length, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
}
static inline int rdma_dereg_mr(struct ibv_mr *mr) {
  int rc = ibv_dereg_mr(mr);
  if (rc) { errno = rc; return -1; }
  return 0;
}

// ibv_post_recv / ibv_post_send's errno value as librdmacm's -1 and errno.
static inline int rdma_seterrno(int rc) {
  if (rc) { errno = rc; return -1; }
  return 0;
}

static inline int rdma_post_recvv(struct rdma_cm_id *id, void *context, struct ibv_sge *sgl, int nsge) {
  struct ibv_recv_wr wr = { .wr_id = (uint64_t)context, .sg_list = sgl, .num_sge = nsge }, *bad;
  return rdma_seterrno(ibv_post_recv(id->qp, &wr, &bad));
}

// One send-queue work request: opcode, flags, immediate (network order)
// and remote buffer, as every rdma_post_* below builds it.
static inline int rdmax_post_sq(struct rdma_cm_id *id, void *context, struct ibv_sge *sgl, int nsge,
                                enum ibv_wr_opcode op, int flags, uint32_t imm_be,
                                uint64_t remote_addr, uint32_t rkey) {
  struct ibv_send_wr wr = { .wr_id = (uint64_t)context, .sg_list = sgl, .num_sge = nsge,
                            .opcode = op, .send_flags = (unsigned)flags }, *bad;
  wr.imm_data = imm_be;
  wr.wr.rdma.remote_addr = remote_addr;
  wr.wr.rdma.rkey = rkey;
  return rdma_seterrno(ibv_post_send(id->qp, &wr, &bad));
}

static inline int rdma_post_sendv(struct rdma_cm_id *id, void *context, struct ibv_sge *sgl, int nsge,
                                  int flags) {
  return rdmax_post_sq(id, context, sgl, nsge, IBV_WR_SEND, flags, 0, 0, 0);
}
static inline int rdma_post_readv(struct rdma_cm_id *id, void *context, struct ibv_sge *sgl, int nsge,
                                  int flags, uint64_t remote_addr, uint32_t rkey) {
  return rdmax_post_sq(id, context, sgl, nsge, IBV_WR_RDMA_READ, flags, 0, remote_addr, rkey);
}
static inline int rdma_post_writev(struct rdma_cm_id *id, void *context, struct ibv_sge *sgl, int nsge,
                                   int flags, uint64_t remote_addr, uint32_t rkey) {
  return rdmax_post_sq(id, context, sgl, nsge, IBV_WR_RDMA_WRITE, flags, 0, remote_addr, rkey);
}

static inline int rdma_post_recv(struct rdma_cm_id *id, void *context, void *addr, size_t length,
                                 struct ibv_mr *mr) {
  struct ibv_sge sge = { (uint64_t)addr, (uint32_t)length, mr->lkey };
  return rdma_post_recvv(id, context, &sge, 1);
}
static inline int rdma_post_send(struct rdma_cm_id *id, void *context, void *addr, size_t length,
                                 struct ibv_mr *mr, int flags) {
  struct ibv_sge sge = { (uint64_t)addr, (uint32_t)length, mr ? mr->lkey : 0 };
  return rdma_post_sendv(id, context, &sge, 1, flags);
}
// A UD id's datagram (RDMA_PS_UDP) to remote_qpn through ah, with Q_Key
// RDMA_UDP_QKEY (every rdma_cm UD QP's), as librdmacm sends it.
static inline int rdma_post_ud_send(struct rdma_cm_id *id, void *context, void *addr, size_t length,
                                    struct ibv_mr *mr, int flags, struct ibv_ah *ah, uint32_t remote_qpn) {
  struct ibv_sge sge = { (uint64_t)addr, (uint32_t)length, mr ? mr->lkey : 0 };
  struct ibv_send_wr wr = { .wr_id = (uint64_t)context, .sg_list = &sge, .num_sge = 1,
                            .opcode = IBV_WR_SEND, .send_flags = (unsigned)flags }, *bad;
  wr.wr.ud.ah = ah;
  wr.wr.ud.remote_qpn = remote_qpn;
  wr.wr.ud.remote_qkey = RDMA_UDP_QKEY;
  return rdma_seterrno(ibv_post_send(id->qp, &wr, &bad));
}
static inline int rdma_post_read(struct rdma_cm_id *id, void *context, void *addr, size_t length,
                                 struct ibv_mr *mr, int flags, uint64_t remote_addr, uint32_t rkey) {
  struct ibv_sge sge = { (uint64_t)addr, (uint32_t)length, mr->lkey };
  return rdma_post_readv(id, context, &sge, 1, flags, remote_addr, rkey);
}
static inline int rdma_post_write(struct rdma_cm_id *id, void *context, void *addr, size_t length,
                                  struct ibv_mr *mr, int flags, uint64_t remote_addr, uint32_t rkey) {
  struct ibv_sge sge = { (uint64_t)addr, (uint32_t)length, mr ? mr->lkey : 0 };
  return rdma_post_writev(id, context, &sge, 1, flags, remote_addr, rkey);
}

// Project extensions: WRITE_WITH_IMM and SEND_WITH_IMM (imm in host order).
static inline int rdmax_post_write_imm(struct rdma_cm_id *id, void *context, void *addr, size_t length,
                                       struct ibv_mr *mr, int flags, uint32_t imm,
                                       uint64_t remote_addr, uint32_t rkey) {
  struct ibv_sge sge = { (uint64_t)addr, (uint32_t)length, mr ? mr->lkey : 0 };
  return rdmax_post_sq(id, context, &sge, 1, IBV_WR_RDMA_WRITE_WITH_IMM, flags, htonl(imm),
                       remote_addr, rkey);
}
static inline int rdmax_post_send_imm(struct rdma_cm_id *id, void *context, void *addr, size_t length,
                                      struct ibv_mr *mr, int flags, uint32_t imm) {
  struct ibv_sge sge = { (uint64_t)addr, (uint32_t)length, mr ? mr->lkey : 0 };
  return rdmax_post_sq(id, context, &sge, 1, IBV_WR_SEND_WITH_IMM, flags, htonl(imm), 0, 0);
}

// The next send / receive completion (blocking): 1, or -1 with errno.
int rdma_get_send_comp(struct rdma_cm_id *id, struct ibv_wc *wc);
int rdma_get_recv_comp(struct rdma_cm_id *id, struct ibv_wc *wc);
#endif
