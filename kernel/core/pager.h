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
  uint64 budget_ns;   // the longest io may take before it returns -1 (0: no retries)
};
// Registers the store (NULL: none; paging off). Before any process pages.
void pager_set_store(const struct pager_store *s);

// ---- What vm.c, trap.c and the system calls use (pager.c) ----
//
// A user leaf PTE is in one of four states (the RSW bits 8-9 are the
// pager's; the R/W/X/U bits always keep the page's permissions):
//   resident     V, PPN = the page                (slot copy: pager.c's slot_of)
//   paged out    !V, PAGED, PPN = the store slot
//   evicting     !V, BUSY,  PPN = the page        (being written to the store)
//   faulting in  !V, BUSY | PAGED, PPN = the slot (being read back)
// A BUSY entry belongs to the pager until it clears BUSY: others wait
// (pager_wait_busy) or, when they unmap it, clear PTE_U ("abandoned") and
// the pager frees what is behind it when it is done.
#define PTE_PAGED (1L << 8)
#define PTE_BUSY  (1L << 9)
#define PTE_PERM_BITS (PTE_R | PTE_W | PTE_X | PTE_U)

void pager_init(void);
int  pager_active(void);                // a store is registered
void pager_lock(void);                  // guards user leaf PTEs' state changes
void pager_unlock(void);                //   and user page tables' shape
// A page for user memory: with a store, evicts first to keep the kernel's
// reserve (may sleep; process context, no spin lock held); NULL when
// nothing is left (as page_alloc without a store).
void  *pager_alloc(void);
// Faults in the page at va of the current process's table pt (process
// context, no lock held). 0: resident now; -1: not a user page with that
// access, or the store failed (the process is then marked killed and the
// console says why).
int    pager_fault(pagetable_t pt, uint64 va, int write);
// Caller holds pager_lock. Takes the entry out of the table: frees a
// resident page (and its slot) or a paged-out page's slot, abandons a
// busy one; *e is then 0 or abandoned.
void   pager_unmap(pte_t *e);
// Caller holds pager_lock; e is paged out. Shares its slot with a copy
// (fork): returns the entry the child's table takes.
pte_t  pager_share(pte_t e);
// Caller holds pager_lock (released while asleep): waits for a BUSY
// entry to settle. -1 if the process was killed meanwhile.
int    pager_wait_busy(void);
// The current process is on its way back to user mode (trap.c, interrupts
// off; may turn them on and sleep): if an allocation waits for pages of
// processes on harts, evicts a batch (its own pages takeable now).
void   pager_user_trap(void);
void   pager_mapped(void);              // a user page was mapped (counts)
struct pagestat;
void   pager_stats(struct pagestat *out);

#endif
