// rdma_mr_selftest.c: the boot check that the kernel's MR translate()
// (rdma_mr_ops, rdma_mr.c) keeps the rct_mr_ops contract. It runs the case
// table that the host's reference backend is tested with too
// (kernel/transport/mr_contract.h; host side: tests/unit/test_mr_contract.c):
// the table's four MRs are registered through rdma_mr.c's own checks,
// slots and keys (kv_reg_kernel_mr) on kernel pages, under a kernel
// owner of its own, and every case goes through rdma_mr_ops.translate. Each
// MR's pages are handed over in descending physical order, so no two are
// adjacent and translate() must split at every page boundary, as the
// host's does. A mismatch panics (make test-kernel boots every kernel);
// the boot argument "selftest" prints the count of cases that passed.
#include "lib/types.h"
#include "lib/riscv.h"
#include "lib/bootarg.h"
#include "core/printk.h"
#include "core/pmem.h"
#include "rdma/rdma.h"
#include "transport/mr_contract.h"

static struct kv_owner selftest_owner;   // no process's; no async events
#define MRC_PAGES 4           // pages of the largest MR in mrc_mrs

struct kernel_side {
  struct mrc_side side;       // first: the runner hands it back to kaddr
  struct rdma_pd *pd;
  struct rdma_mr *mr[MRC_NMR];
  uint64 pa[MRC_NMR][MRC_PAGES];
  int npages[MRC_NMR];
};

static uint8 *kaddr(const struct mrc_side *s, int mr, uint64 off) {
  const struct kernel_side *k = (const struct kernel_side *)s;
  uint64 in = mrc_mrs[mr].va % PGSIZE + off;      // from the MR's first page
  return (uint8 *)(k->pa[mr][in / PGSIZE] + in % PGSIZE);
}

// n fresh pages in pa[], highest address first (so none follows another).
static void alloc_descending(uint64 *pa, int n) {
  for (int i = 0; i < n; i++) {
    uint64 p = (uint64)page_alloc();
    if (!p) panic("rdma MR selftest: out of pages");
    int j = i;
    for (; j > 0 && pa[j - 1] < p; j--) pa[j] = pa[j - 1];
    pa[j] = p;
  }
}

// Registers MR i of mrc_mrs in k's PD.
static void reg(struct kernel_side *k, int i) {
  const struct mrc_mr *m = &mrc_mrs[i];
  struct rdma_mr_keys keys;
  k->npages[i] = (int)((PG_ROUND_UP(m->va + m->len) - PG_ROUND_DOWN(m->va)) / PGSIZE);
  if (k->npages[i] > MRC_PAGES) panic("rdma MR selftest: MR %d has %d pages", i, k->npages[i]);
  alloc_descending(k->pa[i], k->npages[i]);
  k->mr[i] = kv_reg_kernel_mr(&selftest_owner, k->pd, m->va, m->len, k->pa[i], m->access, &keys);
  if (!k->mr[i]) panic("rdma MR selftest: MR %d not registered", i);
  k->side.lkey[i] = keys.lkey;
  k->side.rkey[i] = keys.rkey;
}

// Deregisters every MR, frees their pages and the PD.
static void unreg(struct kernel_side *k) {
  for (int i = 0; i < MRC_NMR; i++) {
    if (kv_dereg_mr(&selftest_owner, k->mr[i]) < 0) panic("rdma MR selftest: MR %d busy", i);
    for (int j = 0; j < k->npages[i]; j++) page_put(k->pa[i][j]);
  }
  if (kv_dealloc_pd(&selftest_owner, k->pd) < 0) panic("rdma MR selftest: PD busy");
}

// Lock NOT held (translate runs under it, as the core calls it).
void rdma_mr_selftest(void) {
  static struct kernel_side k;
  k.pd = kv_alloc_pd(&selftest_owner);
  if (!k.pd) panic("rdma MR selftest: no PD");
  // translate() compares the MR's PD with the QP's, by slot
  k.side = (struct mrc_side){ .ops = &rdma_mr_ops, .ctx = 0, .pd = (uint32)(k.pd - rdma_pds), .addr = kaddr };
  for (int i = 0; i < MRC_NMR; i++) reg(&k, i);
  for (int i = 0; i < MRC_NCASES; i++) {
    const struct mrc_case *c = &mrc_cases[i];
    int got;
    spin_lock(&rdma.lock);
    const char *diff = mrc_run(&k.side, c, &got);
    spin_unlock(&rdma.lock);
    if (diff) panic("rdma MR selftest: case %d \"%s\": %s differs (returned %d, expected %d)",
                    i, c->what, diff, got, c->expect);
  }
  unreg(&k);
  if (bootarg("selftest")) kprintf("selftest: rdma MR contract, %d cases ok\n", MRC_NCASES);
}
