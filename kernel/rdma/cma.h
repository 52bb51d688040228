// cma.h: the kernel's rdma_cm (cma.c), for its per-process front end
// (ucma.c). Ids and channels carry an owner key (a pid); every call
// returns >= 0 or a negated errno (uapi.h's SYS_ucma_* say which).
#ifndef CMA_H
#define CMA_H
#include "lib/types.h"
#include "lib/param.h"
#include "lib/uapi.h"

#define CMA_MAX_CHAN  (2 * NPROC)      // event channels, all processes together

void cma_init(void);                   // boot: the agent and the CM thread (QP1 in it)
int  cma_chan_create(int owner);       // slot, or -ENOMEM
void cma_chan_close(int ch);           // its ids and events go
int  cma_chan_ready(int ch);           // 1: an event waits
int  cma_get_event(int owner, int ch, int (*give_up)(void), struct ucma_event *out);  // sleeps unless give_up is NULL
int  cma_create_id(int owner, int ch, int ps, uint64 cookie);
int  cma_destroy_id(int owner, int id);
int  cma_bind(int owner, int id, uint32 ip, uint16 port);
int  cma_resolve_addr(int owner, int id, uint32 src, uint32 dst, uint16 port, int timeout_ms);
int  cma_resolve_route(int owner, int id, int timeout_ms);
int  cma_listen(int owner, int id, int backlog);
int  cma_connect(int owner, int id, const struct ucma_conn_param *p);
int  cma_accept(int owner, int id, const struct ucma_conn_param *p);   // p NULL: active side's RTU
int  cma_reject(int owner, int id, const void *priv, int len);
int  cma_disconnect(int owner, int id);
int  cma_established(int owner, int id);
int  cma_migrate_id(int owner, int id, int ch);
int  cma_init_qp_attr(int owner, int id, int qp_state, struct rdma_qp_attr *a);  // IBV_QP_* mask
void cma_owner_exit(int owner);
void cma_stats(struct rdma_dev_stats *s);   // cm_* and gsi_* fields
#endif
