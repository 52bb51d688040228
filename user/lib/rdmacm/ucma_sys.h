// ucma_sys.h: prototypes of the kernel rdma_cm's system calls (SYS_ucma_*
// in kernel/lib/uapi.h; stubs generated into build/user/lib/c/usys.S).
// Programs use librdmacm's API (rdma_cm.h); only the library and the
// hostile tests call these. Each returns >= 0 or a negated errno.
#ifndef UCMA_SYS_H
#define UCMA_SYS_H
#include "kernel/lib/uapi.h"

int ucma_create_chan(void);
int ucma_create_id(int chan_fd, int ps, unsigned long long cookie);
int ucma_destroy_id(int id);
int ucma_bind(int id, unsigned int ip, int port);
int ucma_resolve_addr(int id, unsigned int src, unsigned int dst, int port, int timeout_ms);
int ucma_resolve_route(int id, int timeout_ms);
int ucma_listen(int id, int backlog);
int ucma_connect(int id, const struct ucma_conn_param *p);
int ucma_accept(int id, const struct ucma_conn_param *p);
int ucma_reject(int id, const void *private_data, int len);
int ucma_disconnect(int id);
int ucma_init_qp_attr(int id, int qp_state, struct rdma_qp_attr *out);
int ucma_get_event(int chan_fd, struct ucma_event *out);
int ucma_migrate_id(int id, int chan_fd);
int ucma_established(int id);
#endif
