// ucma.h: the kernel rdma_cm's per-process front end (ucma.c), for the
// system calls (kernel/sys/sysucma.c). Results: >= 0, or a negated errno.
#ifndef UCMA_H
#define UCMA_H
#include "lib/types.h"
#include "lib/uapi.h"

void ucma_init(void);                  // boot: the exit hook
int  ucma_chan_of(int fd);             // the channel behind fd, or -EBADF
int  ucma_create_chan(void);
int  ucma_get_event(int fd, struct ucma_event *out);
int  ucma_create_id(int fd, int ps, uint64 cookie);
int  ucma_migrate_id(int id, int fd);
int  ucma_destroy_id(int id);
int  ucma_bind(int id, uint32 ip, uint16 port);
int  ucma_resolve_addr(int id, uint32 src, uint32 dst, uint16 port, int timeout_ms);
int  ucma_resolve_route(int id, int timeout_ms);
int  ucma_listen(int id, int backlog);
int  ucma_connect(int id, const struct ucma_conn_param *p);
int  ucma_accept(int id, const struct ucma_conn_param *p);
int  ucma_reject(int id, const void *priv, int len);
int  ucma_disconnect(int id);
int  ucma_established(int id);
int  ucma_init_qp_attr(int id, int state, struct rdma_qp_attr *a);
#endif
