// pmem.h: the physical page allocator (pmem.c). Every page carries a
// reference count: page_alloc returns a zeroed page with count 1,
// page_hold adds a reference (page pinning, shared pages), page_put drops
// one and frees the page when the count reaches zero.
#ifndef PMEM_H
#define PMEM_H
#include "lib/types.h"
void   pmem_init(void);
void  *page_alloc(void);           // NULL when memory is exhausted
void   page_hold(uint64 pa);
void   page_put(uint64 pa);
int    page_refs(uint64 pa);
uint64 pmem_free_pages(void);
uint64 pmem_total_pages(void);
uint64 pmem_ram_end(void);         // first byte after the guest's RAM
#endif
