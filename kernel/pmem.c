// pmem.c: owns all RAM from the end of the kernel image to RAM_END, as a
// free list of 4 KiB pages plus a reference count per page.
#include "types.h"
#include "riscv.h"
#include "memlayout.h"
#include "lock.h"
#include "printk.h"
#include "klib.h"
#include "pmem.h"

extern char kernel_end[];            // kernel.ld: first byte after the image

#define NPAGES (RAM_SIZE / PGSIZE)
#define PAGE_INDEX(pa) (((pa) - RAM_BASE) / PGSIZE)

struct free_page { struct free_page *next; };

static struct {
  struct spinlock lock;
  struct free_page *free_list;
  uint64 nfree, ntotal;
  uint16 refs[NPAGES];
} pmem;

static void check_pa(uint64 pa, const char *who) {
  if (pa % PGSIZE || pa < PG_ROUND_UP((uint64)kernel_end) || pa >= RAM_END)
    panic("%s: %p is not an allocatable page", who, pa);
}

void pmem_init(void) {
  spin_init(&pmem.lock, "pmem");
  for (uint64 pa = PG_ROUND_UP((uint64)kernel_end); pa + PGSIZE <= RAM_END; pa += PGSIZE) {
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
    if (pmem.refs[PAGE_INDEX((uint64)f)] != 0)
      panic("page_alloc: free page %p has references", f);
    pmem.refs[PAGE_INDEX((uint64)f)] = 1;
  }
  spin_unlock(&pmem.lock);
  if (f) memset(f, 0, PGSIZE);
  return f;
}

void page_hold(uint64 pa) {
  check_pa(pa, "page_hold");
  spin_lock(&pmem.lock);
  if (pmem.refs[PAGE_INDEX(pa)] == 0) panic("page_hold: page %p is free", pa);
  if (pmem.refs[PAGE_INDEX(pa)] == 0xffff) panic("page_hold: refcount overflow");
  pmem.refs[PAGE_INDEX(pa)]++;
  spin_unlock(&pmem.lock);
}

void page_put(uint64 pa) {
  check_pa(pa, "page_put");
  spin_lock(&pmem.lock);
  uint16 *r = &pmem.refs[PAGE_INDEX(pa)];
  if (*r == 0) panic("page_put: page %p already free", pa);
  if (--*r == 0) {
    struct free_page *f = (struct free_page *)pa;
    f->next = pmem.free_list;
    pmem.free_list = f;
    pmem.nfree++;
  }
  spin_unlock(&pmem.lock);
}

int page_refs(uint64 pa) {
  check_pa(pa, "page_refs");
  return pmem.refs[PAGE_INDEX(pa)];
}

uint64 pmem_free_pages(void) { return pmem.nfree; }
uint64 pmem_total_pages(void) { return pmem.ntotal; }
