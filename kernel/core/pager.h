// pager.h: demand paging of user memory to a backing store (pager.c).
// The pager (core) evicts user pages to a store an upper layer registers
// and faults them back; it never includes anything from rmem/ or rdma/.
#ifndef PAGER_H
#define PAGER_H
#include "lib/types.h"

// A backing store for evicted user pages (registered by an upper layer:
// kernel/rmem/rmem_client.c). Slots are page-sized, 0 .. nslots-1.
struct pager_store {
  const char *name;   // for messages, e.g. "memory node 10.0.2.15:7471"
  uint64 nslots;      // how many pages the store holds
  // Moves n pages (n >= 1) between kernel pages and slots: write: the
  // page at physical address pa[i] -> slot[i]; read: slot[i] -> pa[i].
  // All n may be in flight together; sleeps until each is done; called
  // from process context (a faulting or evicting process), never with a
  // spin lock held, possibly by several processes at once. 0: all done;
  // -1: the store stayed unreachable beyond its retry budget (a read
  // placed nothing trustworthy; a write may not have landed).
  int (*io)(int write, const uint32 *slot, const uint64 *pa, int n);
};
// Registers the store (NULL: none; paging off). Before any process pages.
void pager_set_store(const struct pager_store *s);

#endif
