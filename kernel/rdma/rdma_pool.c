// rdma_pool.c: the ring pool, RDMA_POOL_PAGES pages of the kernel image
// that QP and CQ rings take at create and give back at destroy (rdma.h
// says how large it is and why). A ring is an array the transport core
// indexes, so it needs contiguous pages, which the page allocator
// (core/pmem.c) does not hand out: the pool keeps a bit per page and
// gives the first run of free pages long enough (first fit). Every
// caller holds rdma.lock.
#include "lib/types.h"
#include "lib/riscv.h"
#include "lib/param.h"
#include "core/printk.h"
#include "lib/klib.h"
#include "rdma/rdma.h"

#define POOL_WORDS ((RDMA_POOL_PAGES + 63) / 64)

static uint8 pool[RDMA_POOL_PAGES][PGSIZE] __attribute__((aligned(PGSIZE)));
static uint64 used[POOL_WORDS];    // bit i: pool[i] belongs to a ring
static int nfree = RDMA_POOL_PAGES;

static int page_used(int i) { return (used[i / 64] >> (i % 64)) & 1; }

static void mark(int first, int n, int on) {
  for (int i = first; i < first + n; i++) {
    if (on) used[i / 64] |= 1ULL << (i % 64);
    else used[i / 64] &= ~(1ULL << (i % 64));
  }
  nfree += on ? -n : n;
}

// Lock held; n >= 1. Skips a fully used word at a time.
void *rdma_pool_alloc(int n) {
  if (n < 1 || n > nfree) return NULL;
  int run = 0;
  for (int i = 0; i < RDMA_POOL_PAGES; i++) {
    if (i % 64 == 0 && used[i / 64] == ~0ULL) {
      run = 0;
      i += 63;
      continue;
    }
    run = page_used(i) ? 0 : run + 1;
    if (run == n) {
      int first = i - n + 1;
      mark(first, n, 1);
      memset(pool[first], 0, (uint64)n * PGSIZE);
      return pool[first];
    }
  }
  return NULL;
}

// Lock held; p and n as rdma_pool_alloc gave and took them.
void rdma_pool_free(void *p, int n) {
  int first = (int)(((uint8 *)p - pool[0]) / PGSIZE);
  if ((uint8 *)p < pool[0] || first + n > RDMA_POOL_PAGES || (uint64)((uint8 *)p - pool[0]) % PGSIZE)
    panic("rdma_pool_free: %p is not a pool run", p);
  for (int i = first; i < first + n; i++)
    if (!page_used(i)) panic("rdma_pool_free: page %d already free", i);
  mark(first, n, 0);
}

int rdma_pool_free_pages(void) { return nfree; }
