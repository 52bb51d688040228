// rdma_cm_util.h: the RDMA tools' synchronous rdma_cm steps (rdmau_cm_*)
// and the errors they print for a person. user/lib/rdmacm/rdma_cm_util.c.
// Above the connection library: it uses rdma_cm.h, which does not use it.
#ifndef RDMA_CM_UTIL_H
#define RDMA_CM_UTIL_H
#include "rdma_cm.h"

// rdma_cm (rdma_cm.h) as the tools use it: a synchronous id listening on
// `port`, or one resolved towards ip:port (host order), ready for
// rdma_connect; -1 with errno on failure. rdmau_cm_wait_disconnect waits
// up to timeout_ms for the connection's DISCONNECTED event (the peer's
// DREQ): 0, or -1 with errno ETIMEDOUT.
#define RDMAU_RESOLVE_MS 2000   // rdma_resolve_addr/route's timeout: the ARP wait for the peer
int rdmau_cm_listen(struct rdma_cm_id **listen, int port);
int rdmau_cm_resolve(struct rdma_cm_id **id, uint32_t ip, int port);
int rdmau_cm_wait_disconnect(struct rdma_cm_id *id, int timeout_ms);
// Why a synchronous rdma_cm step towards a peer failed, for a person:
// from err (the step's errno) and, for rdma_connect, the id's last event
// (id NULL when the id is gone): "refused (REJ NO_LISTENER: ...)",
// "unreachable (no ARP answer ...)", "no answer within 1.5 s (...)", else
// errno's text. The text lives until the next call.
const char *rdmau_cm_why(const struct rdma_cm_id *id, int err);
// "prog: what A.B.C.D port P: why" (rdmau_cm_why) and exit(1).
void rdmau_cm_die(const char *prog, const char *what, uint32_t ip, int port,
                  const struct rdma_cm_id *id, int err);
#endif
