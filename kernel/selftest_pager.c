// selftest_pager.c: a TEST-ONLY backing store for the pager (core/pager.c)
// that keeps evicted pages in the guest's own RAM. It exists to check the
// paging mechanism without a memory node; it is registered only when the
// boot argument "pagertest=N" asks for it (N slots, taken from RAM at
// boot), never in a normal boot; the real store is kernel/rmem's client
// of a memory node. "pagertest_fail=K" makes every store call after the
// K-th fail (-1), as an unreachable memory node's would.
#include "lib/types.h"
#include "lib/riscv.h"
#include "lib/klib.h"
#include "lib/bootarg.h"
#include "core/lock.h"
#include "core/printk.h"
#include "core/pmem.h"
#include "core/proc.h"
#include "core/pager.h"
#include "selftest.h"

#define TEST_STORE_MAX 16384        // slots: 64 MiB

static struct {
  struct spinlock lock;
  uint64 page[TEST_STORE_MAX];      // slot -> the kernel page holding it
  uint64 calls, fail_after;         // fail_after 0: never
} ts;

// Copies under no lock: the pager never has two calls on one slot at once.
static int test_io(int write, const uint32 *slot, const uint64 *pa, int n) {
  spin_lock(&ts.lock);
  int fail = ts.fail_after && ++ts.calls > ts.fail_after;
  spin_unlock(&ts.lock);
  if (fail) return -1;
  for (int i = 0; i < n; i++) {
    void *s = (void *)ts.page[slot[i]], *p = (void *)pa[i];
    if (write) memmove(s, p, PGSIZE);
    else memmove(p, s, PGSIZE);
  }
  proc_yield();                     // a store call sleeps: let others run meanwhile
  return 0;
}

static struct pager_store test_store = { "test store (in RAM)", 0, test_io };

void selftest_pager_start(void) {
  uint64 n = bootarg_uint("pagertest", 0);
  if (n == 0) return;
  if (n > TEST_STORE_MAX) n = TEST_STORE_MAX;
  spin_init(&ts.lock, "teststore");
  ts.fail_after = bootarg_uint("pagertest_fail", 0);
  for (uint64 i = 0; i < n; i++)
    if ((ts.page[i] = (uint64)page_alloc()) == 0) panic("pagertest: no RAM for slot %d", (int)i);
  test_store.nslots = n;
  pager_set_store(&test_store);
}
