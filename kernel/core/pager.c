// pager.c: demand paging of user memory to a registered backing store
// (pager.h: the store interface and the PTE states). Owns the store, the
// store's slots (a reference count each), which resident page still has
// a current copy in which slot, the clock hand, read-ahead's per-process
// pattern, and the paging counters (SYS_pagestat). Without a store every
// call here behaves as before paging existed: pager_alloc is page_alloc.
//
// When: a user-page allocation (pager_alloc: sbrk, exec, fork, a fault)
// that would leave fewer than PAGER_RESERVE free pages first evicts a
// batch. The reserve is what the kernel may still allocate on its own
// while user memory is full: per hart that may be in the middle of a
// system call, an exec's argument pages (MAXARG) and the page-table pages
// a new mapping needs (2 below the root), a trap frame and a pipe.
// Evicting down to the reserve plus one batch leaves write-back batches
// full (PAGER_BATCH pages per store->io call).
//
// Which: the clock (second chance). The hand walks every process's user
// pages in address order, process slot after process slot. A page whose
// accessed bit (PTE_A, set by the hardware on use) is set has it cleared
// and is passed over; one found with PTE_A clear was not used for a whole
// revolution and is evicted. init's pages stay (a store that fails would
// kill it, and the kernel cannot go on without it). Pinned pages
// (page_refs > 1: RDMA MRs, zero-copy sends) and page tables (never user
// leaves) are never taken.
// A page whose dirty bit is clear and whose slot copy is still current
// (it came in from that slot and was not written since) is dropped
// without a write.
//
// Whose: a process's pages are taken only while it cannot touch them
// behind the pager's back: it is the evicting process itself, or it is
// not on a hart (RUNNABLE or SLEEPING). The entry is first made BUSY
// (not valid), then the owner's vm_gen is bumped under its lock, so the
// next hart to run it flushes its TLB; if it turns out to be running
// meanwhile, the entry goes back as it was (nothing was written yet).
// Kernel accesses to user memory (vm.c's copies) translate and copy under
// pager_lock, so a page cannot go between the two.
//
// Read-ahead: a process whose faults follow each other page by page gets
// the next PAGER_READAHEAD paged-out pages in the same store call; a page
// read ahead counts as a hit when the clock, eviction or unmap finds it
// used (PTE_A).
//
// Nothing to take: when the clock finds no page it may take, the room
// may still come: pages in transit (BUSY until a store call returns:
// another process's write-back batch, or its fault's read, whose pages
// are takeable once in; under loss that is seconds), or
// pages of processes the clock skipped because they were on a hart (on a
// loaded host a TCG hart may stay descheduled, and a busy process may
// never sleep). The allocation then does not fail at once: it asks the
// running owners to give pages back (pg.wanted) and sleeps until a batch
// settles; each running owner runs the clock itself on its next way back
// to user mode (pager_user_trap: at the latest its next timer tick),
// where its own pages are takeable. The wait ends when the room is there,
// or after the store's retry budget (a write-back may take that long)
// plus PAGER_GIVE_BACK_NS (a giver's next trap on a loaded host); only
// then does the allocation fail. A full store, or nothing in transit and
// no one running, fails after PAGER_IDLE_TRIES yields.
//
// Failure: a store call that fails (-1) loses nothing on a write (the
// pages stay resident, dirty); a failed read kills the faulting process
// with a console line naming the store, and the page stays in the store.
// A fault that finds no page to read into because write-backs fail is
// killed the same way; sbrk, exec and fork just fail (-1).
#include "lib/types.h"
#include "lib/riscv.h"
#include "lib/param.h"
#include "lib/memlayout.h"
#include "lib/uapi.h"
#include "lib/klib.h"
#include "core/lock.h"
#include "core/proc.h"
#include "core/printk.h"
#include "core/pmem.h"
#include "core/vm.h"
#include "core/timer.h"
#include "core/pager.h"

#define PAGER_RESERVE (NCPU * (MAXARG + 2 + 2))   // see the top
#define PAGER_BATCH 32             // pages per write-back call
#define PAGER_READAHEAD 8          // pages read ahead of a sequential fault
#define PAGER_MAX_SLOTS (1 << 16)  // 256 MiB of store: slots beyond are not used
#define PAGER_INIT_PID 1           // init: never evicted (a few pages; its death panics)
#define PAGER_IDLE_TRIES 8         // yields for other momentary room (an exit) before failing
#define PAGER_GIVE_BACK_NS (100 * TICK_NS)   // a running owner's next trap, loaded host (see the top)
#define PAGER_SEQ_RUN 2            // sequential faults before read-ahead starts
#define RAM_PAGES (RAM_SIZE / PGSIZE)
#define PAGE_NO(pa) (((pa) - RAM_BASE) / PGSIZE)
#define SLOT_TO_PTE(s) ((pte_t)(s) << 10)
#define PTE_TO_SLOT(e) ((uint32)((e) >> 10))
#define NO_SLOT 0xffffffffU

static struct {
  struct spinlock lock;
  const struct pager_store *store;
  uint32 nslots, slot_hint;
  uint8 slot_refs[PAGER_MAX_SLOTS];  // mappings using the slot; 0 = free
  uint32 slot_of[RAM_PAGES];         // resident page -> slot + 1 holding its copy; 0 none
  uint8 ra_unused[RAM_PAGES];        // read ahead, not yet seen used
  int clock_proc;                    // the clock hand: a process slot and a va
  uint64 clock_va;
  uint64 last_fault[NPROC];          // read-ahead: each process's last fault va
  int seq_run[NPROC];                //   and how many sequential faults led to it
  int wanted;                        // allocations waiting for room (pager_user_trap)
  int in_flight;                     // BUSY entries: victims and pages being read
  struct pagestat st;
} pg;

void pager_init(void) { spin_init(&pg.lock, "pager"); }

void pager_set_store(const struct pager_store *s) {
  spin_lock(&pg.lock);
  pg.store = s;
  pg.nslots = !s ? 0 : s->nslots < PAGER_MAX_SLOTS ? (uint32)s->nslots : PAGER_MAX_SLOTS;
  pg.st.store_slots = pg.nslots;
  spin_unlock(&pg.lock);
  if (s) kprintf("pager: paging to %s (%d slots)\n", s->name, (int)pg.nslots);
}

int  pager_active(void) { return __atomic_load_n(&pg.store, __ATOMIC_ACQUIRE) != NULL; }
void pager_lock(void) { spin_lock(&pg.lock); }
void pager_unlock(void) { spin_unlock(&pg.lock); }

// ---- slots (caller holds pg.lock) ----

static uint32 slot_alloc(void) {
  for (uint32 i = 0; i < pg.nslots; i++) {
    uint32 s = (pg.slot_hint + i) % pg.nslots;
    if (pg.slot_refs[s] == 0) {
      pg.slot_refs[s] = 1;
      pg.slot_hint = s + 1;
      pg.st.slots_used++;
      return s;
    }
  }
  return NO_SLOT;
}

static void slot_put(uint32 s) {
  if (s >= pg.nslots || pg.slot_refs[s] == 0) panic("pager: slot %d is not in use", (int)s);
  if (--pg.slot_refs[s] == 0) pg.st.slots_used--;
}

// A resident page stops being mapped: its slot copy (if any) goes.
static void forget_page(uint64 pa, pte_t e) {
  uint64 i = PAGE_NO(pa);
  if (pg.slot_of[i]) slot_put(pg.slot_of[i] - 1);
  pg.slot_of[i] = 0;
  if (pg.ra_unused[i] && (e & PTE_A)) pg.st.ra_hits++;
  pg.ra_unused[i] = 0;
}

// ---- what vm.c calls under pager_lock ----

void pager_mapped(void) { pg.st.resident++; }

void pager_unmap(pte_t *e) {
  pte_t old = *e;
  if (old & PTE_BUSY) {                      // the pager frees it when done
    *e = old & ~PTE_U;
  } else if (old & PTE_V) {
    forget_page(PTE_TO_PA(old), old);
    pg.st.resident--;
    *e = 0;
    page_put(PTE_TO_PA(old));
  } else if (old & PTE_PAGED) {
    slot_put(PTE_TO_SLOT(old));
    pg.st.paged_out--;
    *e = 0;
  }
}

pte_t pager_share(pte_t e) {
  uint32 s = PTE_TO_SLOT(e);
  if (pg.slot_refs[s] == 0xff) panic("pager: slot %d shared too often", (int)s);
  pg.slot_refs[s]++;
  pg.st.paged_out++;
  return e;
}

int pager_wait_busy(void) {
  proc_sleep(&pg, &pg.lock);
  return proc_killed(current()) ? -1 : 0;
}

// ---- eviction ----

struct victim {
  struct proc *q;
  pte_t *e;
  pte_t old;          // the entry before it went BUSY
  uint64 pa;
  uint32 slot;
  int write;          // the slot needs the page's bytes
};

// Whose pages the clock may take (see the top). q's fields are read
// without its lock: the check is repeated under it before anything is
// written (evict_begin).
static int evictable(struct proc *q, struct proc *self) {
  if (q->is_kthread || q->pagetable == NULL || q->pid == PAGER_INIT_PID) return 0;
  enum proc_state s = __atomic_load_n(&q->state, __ATOMIC_RELAXED);
  return q == self || s == P_RUNNABLE || s == P_SLEEPING;
}

// Caller holds pg.lock. Decides about the resident entry e: second chance
// if used, else makes it a victim (BUSY) with a slot. 1 if taken.
static int clock_take(struct victim *v, pte_t *e) {
  pte_t old = __atomic_load_n(e, __ATOMIC_RELAXED);
  if ((old & (PTE_V | PTE_U)) != (PTE_V | PTE_U)) return 0;
  uint64 pa = PTE_TO_PA(old), i = PAGE_NO(pa);
  if (page_refs(pa) > 1) return 0;                        // pinned
  if (old & PTE_A) {                                      // atomic: the hardware sets D
    __atomic_fetch_and(e, ~PTE_A, __ATOMIC_RELAXED);
    if (pg.ra_unused[i]) { pg.st.ra_hits++; pg.ra_unused[i] = 0; }
    return 0;
  }
  uint32 slot = pg.slot_of[i] ? pg.slot_of[i] - 1 : NO_SLOT;
  pte_t busy = (old & ~PTE_V) | PTE_BUSY;
  if (!__atomic_compare_exchange_n(e, &old, busy, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
    return 0;                                             // changed meanwhile: next round
  int dirty = (old & PTE_D) != 0 || slot == NO_SLOT;
  if (dirty && slot != NO_SLOT && pg.slot_refs[slot] > 1) {   // shared with a fork: own one
    slot_put(slot);
    pg.slot_of[i] = 0;
    slot = NO_SLOT;
  }
  if (slot == NO_SLOT && (slot = slot_alloc()) == NO_SLOT) {
    *e = old;                                             // store full
    return 0;
  }
  pg.slot_of[i] = slot + 1;
  page_hold(PG_ROUND_DOWN((uint64)e));                    // the table outlives an unmap
  *v = (struct victim){ 0, e, old, pa, slot, dirty };
  return 1;
}

// A process whose pages the clock skips only because it is on a hart.
static int on_hart(struct proc *q) {
  return !q->is_kthread && q->pagetable != NULL && q->pid != PAGER_INIT_PID &&
         __atomic_load_n(&q->state, __ATOMIC_RELAXED) == P_RUNNING;
}

// Caller holds pg.lock. Moves the clock hand until max victims are taken
// or two revolutions found nothing; returns how many. *running: a process
// was skipped because it was on a hart.
static int clock_pick(struct victim *v, int max, struct proc *self, int *running) {
  int n = 0;
  *running = 0;
  uint64 budget = 2 * (pg.st.resident + pg.st.paged_out) + 1024;   // two revolutions
  for (int skipped = 0; n < max && budget > 0 && skipped <= 2 * NPROC; ) {
    struct proc *q = &proc_table[pg.clock_proc];
    if (!evictable(q, self) || pg.clock_va >= USER_TOP) {   // not heap_end: sbrk sets it last
      *running |= q != self && on_hart(q);
      pg.clock_proc = (pg.clock_proc + 1) % NPROC;
      pg.clock_va = 0;
      skipped++;
      continue;
    }
    uint64 va = pg.clock_va;
    pte_t *e = uvm_walk(q->pagetable, va);
    if (e == NULL) {                                      // no table: skip its 2 MiB
      pg.clock_va = (va + (PGSIZE << 9)) & ~((uint64)(PGSIZE << 9) - 1);
      continue;
    }
    pg.clock_va += PGSIZE;
    budget--;
    if (clock_take(&v[n], e)) {
      v[n].q = q;
      n++;
      pg.in_flight++;
      skipped = 0;
    }
  }
  return n;
}

// Caller holds pg.lock. Settles one victim: evicted (ok), or back as it
// was (the owner was running, or the write failed), or freed (abandoned).
static void victim_settle(struct victim *v, int ok) {
  pte_t now = *v->e;
  pg.in_flight--;
  uint64 i = PAGE_NO(v->pa);
  if (!(now & PTE_U)) {                                   // unmapped meanwhile
    forget_page(v->pa, now);
    pg.st.resident--;
    *v->e = 0;
    page_put(v->pa);
  } else if (!ok) {
    *v->e = v->old | (v->write ? PTE_D : 0);              // a failed write: the copy is stale
  } else {
    *v->e = SLOT_TO_PTE(v->slot) | (v->old & PTE_PERM_BITS) | PTE_PAGED;
    if (pg.ra_unused[i] && (v->old & PTE_A)) pg.st.ra_hits++;
    pg.ra_unused[i] = 0;
    pg.slot_of[i] = 0;                                    // the entry holds the slot now
    pg.st.resident--;
    pg.st.paged_out++;
    pg.st.evictions++;
    if (!v->write) pg.st.clean_evictions++;
    page_put(v->pa);
  }
  page_put(PG_ROUND_DOWN((uint64)v->e));
}

// After the victims went BUSY: each owner's next run flushes its TLB; an
// owner that is on a hart now (not self) keeps its pages. Returns how
// many victims are still to be evicted (compacted to the front).
static int evict_begin(struct victim *v, int n, struct proc *self) {
  int keep = 0;
  for (int i = 0; i < n; i++) {
    struct proc *q = v[i].q;
    int running = 0;
    if (q == self) {
      vm_user_changed(q);
    } else {
      spin_lock(&q->lock);                      // the scheduler loads q's table under it
      running = q->state == P_RUNNING;
      if (!running) q->vm_gen++;
      spin_unlock(&q->lock);
    }
    if (running) {
      spin_lock(&pg.lock);
      victim_settle(&v[i], 0);
      spin_unlock(&pg.lock);
    } else {
      v[keep++] = v[i];
    }
  }
  return keep;
}

// Evicts up to PAGER_BATCH pages (process context, no lock held). Returns
// how many the clock picked (some may have stayed: their owner ran); 0 if
// nothing could be taken (*running: a process on a hart was skipped), -1
// if the store failed.
static int evict_batch(int *running) {
  struct victim v[PAGER_BATCH];
  uint32 slot[PAGER_BATCH];
  uint64 pa[PAGER_BATCH];
  struct proc *self = current();
  spin_lock(&pg.lock);
  int picked = clock_pick(v, PAGER_BATCH, self, running);
  spin_unlock(&pg.lock);
  sfence_vma();     // this hart's TLB may hold A bits the clock cleared (our own pages)
  int n = evict_begin(v, picked, self);
  int nw = 0;
  for (int i = 0; i < n; i++)
    if (v[i].write) { slot[nw] = v[i].slot; pa[nw] = v[i].pa; nw++; }
  int ok = nw == 0 || pg.store->io(1, slot, pa, nw) == 0;
  spin_lock(&pg.lock);
  if (nw) { pg.st.wb_batches++; pg.st.writebacks += ok ? nw : 0; }
  if (!ok) pg.st.io_errors++;
  for (int i = 0; i < n; i++)
    victim_settle(&v[i], ok);
  spin_unlock(&pg.lock);
  proc_wakeup(&pg);
  if (!ok) kprintf("pager: %s unreachable: %d pages could not be written; kept in RAM\n",
                   pg.store->name, nw);
  return ok ? picked : -1;
}

// Nothing to take now (see the top): asks processes on harts to give
// pages back (pager_user_trap) and sleeps until a batch settles or the
// deadline (set on the first call). 0 (give up) when the deadline has
// passed, the store is full, or nothing is in transit and no one was
// running.
static int wait_for_room(int running, uint64 *deadline) {
  uint64 now = clock_ns();
  if (*deadline == 0) *deadline = now + pg.store->budget_ns + PAGER_GIVE_BACK_NS;
  if (now >= *deadline || proc_killed(current())) return 0;
  spin_lock(&pg.lock);                                 // settles and frees under it
  int hope = pg.st.slots_used < pg.nslots && (running || pg.in_flight > 0);
  if (hope && pmem_free_pages() < PAGER_RESERVE) {
    pg.wanted++;
    proc_sleep_until(&pg, &pg.lock, *deadline);
    pg.wanted--;
  }
  spin_unlock(&pg.lock);
  return hope;
}

// Evicts until PAGER_BATCH pages above the reserve; when nothing can be
// taken, waits for room while there is hope (wait_for_room), then a few
// yields (room can come without a settle: an exit). -1 if the store
// failed.
static int make_room(void) {
  uint64 deadline = 0;
  for (int idle = 0; pmem_free_pages() < PAGER_RESERVE + PAGER_BATCH; ) {
    int running;
    int r = evict_batch(&running);
    if (r < 0) return -1;
    if (r > 0) continue;
    if (pmem_free_pages() >= PAGER_RESERVE) break;
    if (wait_for_room(running, &deadline)) continue;
    if (++idle == PAGER_IDLE_TRIES) break;
    proc_yield();
  }
  return 0;
}

void pager_user_trap(void) {
  if (__atomic_load_n(&pg.wanted, __ATOMIC_RELAXED) == 0 ||
      pmem_free_pages() >= PAGER_RESERVE + PAGER_BATCH)
    return;
  intr_on();                        // the store sleeps
  int running;
  evict_batch(&running);            // our own pages are takeable now
}

// pager_alloc; *io_failed says whether a failed write-back is why it
// returned NULL.
static void *alloc_user_page(int *io_failed) {
  *io_failed = 0;
  if (!pager_active()) return page_alloc();
  if (pmem_free_pages() < PAGER_RESERVE && make_room() < 0) *io_failed = 1;
  if (pmem_free_pages() < PAGER_RESERVE) {
    spin_lock(&pg.lock);
    pg.st.oom++;
    spin_unlock(&pg.lock);
    return NULL;
  }
  *io_failed = 0;
  return page_alloc();
}

void *pager_alloc(void) {
  int io_failed;
  return alloc_user_page(&io_failed);
}

// ---- faults ----

// Caller holds pg.lock. Marks up to PAGER_READAHEAD paged-out pages after
// va BUSY when p's faults are sequential; appends them to e/old.
static int readahead_pick(pagetable_t pt, struct proc *p, uint64 va, pte_t **e, pte_t *old) {
  int s = p->slot, n = 0;
  pg.seq_run[s] = va == pg.last_fault[s] + PGSIZE ? pg.seq_run[s] + 1 : 0;
  pg.last_fault[s] = va;
  if (pg.seq_run[s] < PAGER_SEQ_RUN) return 0;
  for (int k = 1; k <= PAGER_READAHEAD; k++) {
    uint64 a = va + (uint64)k * PGSIZE;
    if (a >= p->heap_end) break;
    pte_t *x = uvm_walk(pt, a);
    if (x == NULL || (*x & (PTE_V | PTE_BUSY | PTE_PAGED)) != PTE_PAGED) break;
    e[n] = x;
    old[n] = *x;
    *x |= PTE_BUSY;
    n++;
  }
  pg.last_fault[s] = va + (uint64)n * PGSIZE;             // a hit on the last keeps the run
  return n;
}

static void fault_latency(uint64 ns) {
  uint64 us = ns / 1000;
  int b = 0;
  while (us > 1 && b < PAGESTAT_BUCKETS - 1) { us >>= 1; b++; }
  pg.st.lat_hist[b]++;
  pg.st.lat_count++;
  pg.st.lat_sum_ns += ns;
  if (ns > pg.st.lat_max_ns) pg.st.lat_max_ns = ns;
}

// Caller holds pg.lock; e is the faulting entry. What to do with it:
// 1 resident (fixed up), 0 paged out (read it), -1 not allowed (or busy
// and no_sleep), 2 asleep on a busy entry (look again).
static int fault_look(pte_t *e, int write, int no_sleep) {
  pte_t old = e ? *e : 0;
  pte_t need = PTE_U | (write ? PTE_W : PTE_R);
  if (old & PTE_BUSY) return no_sleep || pager_wait_busy() < 0 ? -1 : 2;
  if ((old & need) != need || !(old & (PTE_V | PTE_PAGED))) return -1;
  if (!(old & PTE_V)) return 0;
  __atomic_fetch_or(e, PTE_A | (write ? PTE_D : 0), __ATOMIC_RELAXED);
  return 1;
}

// Reads the n entries' slots into fresh pages and maps them (process
// context, no lock; the entries are BUSY). Returns 0, or -1 (entries
// back as they were) if there was no page for the first or the store
// failed (*failed_io: reading, or writing back to make room).
static int fault_read(pte_t **e, pte_t *old, int n, int *failed_io) {
  uint32 slot[1 + PAGER_READAHEAD];
  uint64 pa[1 + PAGER_READAHEAD];
  int got = 0, wb_failed = 0;
  for (; got < n; got++) {
    if ((pa[got] = (uint64)alloc_user_page(&wb_failed)) == 0) break;
    slot[got] = PTE_TO_SLOT(old[got]);
  }
  int ok = got > 0 && pg.store->io(0, slot, pa, got) == 0;
  *failed_io = got > 0 ? !ok : wb_failed;
  spin_lock(&pg.lock);
  pg.in_flight -= n;
  if (got > 0 && !ok) pg.st.io_errors++;
  for (int i = 0; i < n; i++) {
    if (!ok || i >= got) {
      *e[i] = old[i];
      if (i < got) page_put(pa[i]);
      continue;
    }
    uint64 pi = PAGE_NO(pa[i]);
    pg.slot_of[pi] = slot[i] + 1;                        // clean: the slot copy is current
    pg.ra_unused[pi] = i > 0;
    pg.st.resident++;
    pg.st.paged_out--;
    *e[i] = PA_TO_PTE(pa[i]) | (old[i] & PTE_PERM_BITS) | PTE_V | (i == 0 ? PTE_A : 0);
  }
  if (ok) { pg.st.faults++; pg.st.ra_issued += got - 1; }
  spin_unlock(&pg.lock);
  proc_wakeup(&pg);
  return ok ? 0 : -1;
}

// A fault sleeps on the store: 1 if the caller holds a spin lock (a copy
// to user memory under a lock), which gets -1 instead of a panic in the
// scheduler.
static int caller_holds_lock(void) {
  intr_push();
  int depth = this_cpu()->intr_depth;   // 1: our own push
  intr_pop();
  return depth > 1;
}

int pager_fault(pagetable_t pt, uint64 va, int write) {
  struct proc *p = current();
  uint64 t0 = clock_ns();
  va = PG_ROUND_DOWN(va);
  if (va >= USER_TOP) return -1;
  int no_sleep = caller_holds_lock();
  pte_t *e[1 + PAGER_READAHEAD];
  pte_t old[1 + PAGER_READAHEAD];
  spin_lock(&pg.lock);
  int look;
  while ((look = fault_look(e[0] = uvm_walk(pt, va), write, no_sleep)) == 2)
    ;
  if (look == 0 && no_sleep)
    kprintf("pager: page %p of pid %d is in the store but the caller holds a spin lock\n", va, p->pid);
  if (look != 0 || !pg.store || no_sleep) {
    spin_unlock(&pg.lock);
    if (look == 1) sfence_vma();                         // a stale invalid translation
    return look == 1 ? 0 : -1;
  }
  old[0] = *e[0];
  *e[0] |= PTE_BUSY;
  int n = 1 + readahead_pick(pt, p, va, e + 1, old + 1);
  pg.in_flight += n;
  spin_unlock(&pg.lock);
  int failed_io;
  if (fault_read(e, old, n, &failed_io) < 0) {
    if (failed_io)
      kprintf("pid %d (%s): killed: %s unreachable (page at %p could not be paged in)\n",
              p->pid, p->name, pg.store->name, va);
    else
      kprintf("pid %d (%s): killed: out of memory (no page to read %p back into)\n",
              p->pid, p->name, va);
    proc_set_killed(p);
    return -1;
  }
  spin_lock(&pg.lock);
  fault_latency(clock_ns() - t0);
  spin_unlock(&pg.lock);
  return 0;
}

void pager_stats(struct pagestat *out) {
  spin_lock(&pg.lock);
  *out = pg.st;
  spin_unlock(&pg.lock);
}
