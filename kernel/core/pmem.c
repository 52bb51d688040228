// pmem.c: owns all RAM from the end of the kernel image to the end of the
// guest's RAM, as a free list of 4 KiB pages plus a reference count per
// page. The guest's RAM is what the device tree's /memory node says (QEMU
// -m), capped at RAM_SIZE, the most the static arrays here are sized for.
// The free list is under pmem.lock; the counts of pages in use change with
// atomic adds and no lock: the RDMA transmit path holds and puts a payload
// page for every frame, and under QEMU a spin lock's interrupt toggling
// (CSR accesses) costs far more than an atomic add. Only the put that
// drops a count to 0 takes the lock, to give the page back.
#include "lib/types.h"
#include "lib/riscv.h"
#include "lib/memlayout.h"
#include "core/lock.h"
#include "core/printk.h"
#include "lib/klib.h"
#include "core/pmem.h"
#include "lib/bootarg.h"

extern char kernel_end[];            // kernel.ld: first byte after the image

#define NPAGES (RAM_SIZE / PGSIZE)
#define PAGE_INDEX(pa) (((pa) - RAM_BASE) / PGSIZE)

struct free_page { struct free_page *next; };

static struct {
  struct spinlock lock;
  struct free_page *free_list;
  uint64 nfree, ntotal;
  uint64 end;                        // end of the guest's RAM (pmem_ram_end)
  uint32 refs[NPAGES];               // 0 = free; atomics, see the top
} pmem;

static void check_pa(uint64 pa, const char *who) {
  if (pa % PGSIZE || pa < PG_ROUND_UP((uint64)kernel_end) || pa >= pmem.end)
    panic("%s: %p is not an allocatable page", who, pa);
}

// The end of RAM from the device tree (fdt_scan ran), capped at RAM_END.
static uint64 guest_ram_end(void) {
  uint64 base = fdt_ram_base(), size = fdt_ram_size();
  if (size == 0 || base != RAM_BASE) {
    kprintf("pmem: no /memory node at %p in the device tree; assuming %d MiB\n",
            RAM_BASE, (int)(RAM_SIZE >> 20));
    return RAM_END;
  }
  if (size > RAM_SIZE) {
    kprintf("pmem: guest has %d MiB; using the first %d MiB (RAM_SIZE)\n",
            (int)(size >> 20), (int)(RAM_SIZE >> 20));
    return RAM_END;
  }
  return PG_ROUND_DOWN(base + size);
}

void pmem_init(void) {
  spin_init(&pmem.lock, "pmem");
  pmem.end = guest_ram_end();
  for (uint64 pa = PG_ROUND_UP((uint64)kernel_end); pa + PGSIZE <= pmem.end; pa += PGSIZE) {
    struct free_page *f = (struct free_page *)pa;
    f->next = pmem.free_list;
    pmem.free_list = f;
    pmem.nfree++;
  }
  pmem.ntotal = pmem.nfree;
}

void *page_alloc(void) {
  spin_lock(&pmem.lock);
  struct free_page *f = pmem.free_list;
  if (f) {
    pmem.free_list = f->next;
    pmem.nfree--;
    uint32 *r = &pmem.refs[PAGE_INDEX((uint64)f)];
    if (__atomic_load_n(r, __ATOMIC_RELAXED) != 0)
      panic("page_alloc: free page %p has references", f);
    __atomic_store_n(r, 1, __ATOMIC_RELAXED);
  }
  spin_unlock(&pmem.lock);
  if (f) memset(f, 0, PGSIZE);
  return f;
}

void page_hold(uint64 pa) {
  check_pa(pa, "page_hold");
  uint32 old = __atomic_fetch_add(&pmem.refs[PAGE_INDEX(pa)], 1, __ATOMIC_RELAXED);
  if (old == 0) panic("page_hold: page %p is free", pa);
  if (old >= 0x7fffffff) panic("page_hold: refcount overflow");
}

void page_put(uint64 pa) {
  check_pa(pa, "page_put");
  // Release: this holder's accesses to the page come before the put
  // that frees it; acquire: the last put sees every other holder's.
  uint32 old = __atomic_fetch_sub(&pmem.refs[PAGE_INDEX(pa)], 1, __ATOMIC_ACQ_REL);
  if (old == 0) panic("page_put: page %p already free", pa);
  if (old > 1) return;
  spin_lock(&pmem.lock);
  struct free_page *f = (struct free_page *)pa;
  f->next = pmem.free_list;
  pmem.free_list = f;
  pmem.nfree++;
  spin_unlock(&pmem.lock);
}

int page_refs(uint64 pa) {
  check_pa(pa, "page_refs");
  return (int)__atomic_load_n(&pmem.refs[PAGE_INDEX(pa)], __ATOMIC_RELAXED);
}

uint64 pmem_free_pages(void) { return pmem.nfree; }
uint64 pmem_total_pages(void) { return pmem.ntotal; }
uint64 pmem_ram_end(void) { return pmem.end; }
