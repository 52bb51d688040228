// rdma_sys.h: prototypes of the raw RDMA system calls (SYS_rdma_* in
// kernel/lib/uapi.h; stubs generated into build/user/lib/c/usys.S). Programs use the verbs
// in ibverbs.h; only the library and rdmastat call these directly. The seven
// whose names librdmacm takes (rdma_cm.h, rdma_verbs.h) are stubbed as sys_rdma_* (gen_usys.py).
#ifndef RDMA_SYS_H
#define RDMA_SYS_H
#include "kernel/lib/uapi.h"

int rdma_query_device(struct rdma_device_info *out);
int rdma_query_port(int port, struct rdma_port_info *out);
int rdma_alloc_pd(void);
int rdma_dealloc_pd(int pd);
int rdma_reg_mr(int pd, void *addr, unsigned long length, int access, struct rdma_mr_keys *out);
int sys_rdma_dereg_mr(int mr);
int rdma_create_chan(void);
int rdma_destroy_chan(int chan);
int rdma_create_cq(int cqe, int chan, void *cookie);
int rdma_destroy_cq(int cq);
int rdma_map_cq(int cq, struct rdma_cq_ring *ring);
int rdma_map_qp(int qp, int which, struct rdma_wq_ring *ring);   // which: RDMA_WQ_SEND / RDMA_WQ_RECV
int rdma_doorbell(int qp, int which);
int rdma_poll_cq(int cq, int n, struct rdma_wc *wc);
int rdma_req_notify(int cq, int solicited_only);
int rdma_get_cq_event(int chan, unsigned long long *cookie);
int sys_rdma_create_qp(struct rdma_qp_create *io);
int rdma_modify_qp(int qp, struct rdma_qp_attr *attr, unsigned int mask);
int rdma_query_qp(int qp, struct rdma_qp_attr *out);
int sys_rdma_destroy_qp(int qp);
int sys_rdma_post_send(int qp, struct rdma_send_wr *wr, int n, int *err);
int sys_rdma_post_recv(int qp, struct rdma_recv_wr *wr, int n, int *err);
int rdma_get_async(struct rdma_async_event *out, int block);
int rdma_qp_stats(int i, struct rdma_qp_stats *out);
int rdma_set_neigh(unsigned int ipv4, const unsigned char mac[6]);
int rdma_wait_write(const volatile unsigned char *addr, int old, int timeout_ms);
int rdma_wait_cq(int cq, int timeout_ms);
int rdma_dev_stats(struct rdma_dev_stats *out);
int rdma_create_ah(const struct rdma_ah_attr *attr);
int rdma_destroy_ah(int ah);
int sys_rdma_create_srq(struct rdma_srq_create *io);
int rdma_modify_srq(int srq, struct rdma_srq_attr *attr, unsigned int mask);
int rdma_query_srq(int srq, struct rdma_srq_attr *out);
int sys_rdma_destroy_srq(int srq);
int rdma_post_srq_recv(int srq, struct rdma_recv_wr *wr, int n, int *err);

#endif
