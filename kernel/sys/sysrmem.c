// sysrmem.c: SYS_rmemctl (lib/uapi.h), the tool rmemctl's one call into
// the kernel's client of a memory node (rmem/rmem_client.c): status,
// connect, self-test. Results: 0 or a negated errno; a bad user pointer
// is -EFAULT.
#include "lib/types.h"
#include "core/proc.h"
#include "core/vm.h"
#include "proc/args.h"
#include "rmem/rmem_client.h"
#include "lib/uapi.h"

static int64 out(uint64 uva, const void *src, uint64 len) {
  return copy_out(current()->pagetable, uva, src, len) < 0 ? -EFAULT : 0;
}

static int64 status(void) {
  struct rmemctl_status s;
  rmem_client_status(&s);
  return out(arg_addr(1), &s, sizeof s);
}

static int64 lat(void) {
  struct rmemctl_lat l;
  rmem_client_lat(&l, arg_int(2));
  return out(arg_addr(1), &l, sizeof l);
}

static int64 connect(void) {
  int port = arg_int(2);
  return port <= 0 || port > 0xffff ? -EINVAL : rmem_client_connect((uint32)arg_int(1), (uint16)port);
}

static int64 test(void) {
  struct rmemctl_test t;
  if (copy_in(current()->pagetable, &t, arg_addr(1), sizeof t) < 0) return -EFAULT;
  int64 r = rmem_client_test(&t);
  int64 o = out(arg_addr(1), &t, sizeof t);
  return r < 0 ? r : o;
}

static int64 (*const ops[])(void) = {
  [RMEMCTL_STATUS] = status, [RMEMCTL_CONNECT] = connect, [RMEMCTL_TEST] = test,
  [RMEMCTL_LAT] = lat,
};

int64 sys_rmemctl(void) {
  int op = arg_int(0);
  return op < 0 || op >= (int)ARRAY_LEN(ops) ? -EINVAL : ops[op]();
}
