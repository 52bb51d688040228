// sysucma.c: the kernel rdma_cm's system calls (SYS_ucma_* in lib/uapi.h).
// Each handler fetches its arguments, copies ABI structs in or out and
// calls the per-process front end (rdma/ucma.c). Results: >= 0, or a
// negated errno; a bad user pointer is -EFAULT and changes nothing.
#include "lib/types.h"
#include "lib/param.h"
#include "core/proc.h"
#include "core/vm.h"
#include "proc/args.h"
#include "rdma/ucma.h"
#include "lib/uapi.h"

static int64 in(void *dst, uint64 uva, uint64 len) {
  return copy_in(current()->pagetable, dst, uva, len) < 0 ? -EFAULT : 0;
}

static int64 out(uint64 uva, const void *src, uint64 len) {
  return copy_out(current()->pagetable, uva, src, len) < 0 ? -EFAULT : 0;
}

int64 sys_ucma_create_chan(void) { return ucma_create_chan(); }
int64 sys_ucma_create_id(void) { return ucma_create_id(arg_int(0), arg_int(1), arg_addr(2)); }
int64 sys_ucma_destroy_id(void) { return ucma_destroy_id(arg_int(0)); }
int64 sys_ucma_bind(void) {
  int port = arg_int(2);
  return port < 0 || port > 0xffff ? -EINVAL : ucma_bind(arg_int(0), (uint32)arg_int(1), (uint16)port);
}
int64 sys_ucma_resolve_addr(void) {
  int port = arg_int(3);
  if (port < 0 || port > 0xffff) return -EINVAL;
  return ucma_resolve_addr(arg_int(0), (uint32)arg_int(1), (uint32)arg_int(2), (uint16)port, arg_int(4));
}
int64 sys_ucma_resolve_route(void) { return ucma_resolve_route(arg_int(0), arg_int(1)); }
int64 sys_ucma_listen(void) { return ucma_listen(arg_int(0), arg_int(1)); }

int64 sys_ucma_connect(void) {
  struct ucma_conn_param p;
  int64 r = in(&p, arg_addr(1), sizeof p);
  return r < 0 ? r : ucma_connect(arg_int(0), &p);
}

// (id, param or NULL): NULL is the active side's RTU.
int64 sys_ucma_accept(void) {
  struct ucma_conn_param p;
  uint64 uva = arg_addr(1);
  int64 r = uva ? in(&p, uva, sizeof p) : 0;
  return r < 0 ? r : ucma_accept(arg_int(0), uva ? &p : NULL);
}

int64 sys_ucma_reject(void) {
  uint8 priv[UCMA_PRIVATE_MAX];
  int len = arg_int(2);
  if (len < 0 || len > UCMA_PRIVATE_MAX) return -EINVAL;
  int64 r = len ? in(priv, arg_addr(1), (uint64)len) : 0;
  return r < 0 ? r : ucma_reject(arg_int(0), priv, len);
}

int64 sys_ucma_disconnect(void) { return ucma_disconnect(arg_int(0)); }
int64 sys_ucma_established(void) { return ucma_established(arg_int(0)); }
int64 sys_ucma_migrate_id(void) { return ucma_migrate_id(arg_int(0), arg_int(1)); }

int64 sys_ucma_init_qp_attr(void) {
  struct rdma_qp_attr a;
  int r = ucma_init_qp_attr(arg_int(0), arg_int(1), &a);
  if (r < 0) return r;
  int64 w = out(arg_addr(2), &a, sizeof a);
  return w < 0 ? w : r;
}

// The event is copied out after it left the channel: a bad buffer loses
// it, as a bad buffer of poll_cq loses its completions.
int64 sys_ucma_get_event(void) {
  struct ucma_event ev;
  int r = ucma_get_event(arg_int(0), &ev);
  if (r < 0) return r;
  return out(arg_addr(1), &ev, sizeof ev);
}
