// spinlock.c: mutual exclusion between harts for short critical sections.
// A spin lock turns interrupts off on the acquiring hart (an interrupt
// handler taking the same lock would otherwise deadlock) and records its
// owner so a recursive acquire panics instead of hanging.
//
// A waiter spins SPINS_BEFORE_PARK times (a few microseconds), then
// parks: it waits in wfi until the holder's spin_unlock sends it a
// cross-hart interrupt (CLINT msip, turned into SSIP). Under QEMU every
// hart is a host thread, and a waiter that spins through a long hold (the
// RDMA engine holds its lock while the emulated NIC transmits a burst, or
// while the host has descheduled the holder) burns the host core that the
// holder, the NIC's I/O thread or the peer guest needed: measured on a
// 64 KiB RDMA WRITE run, the waiters of rdma.lock spun for 4 of 9 seconds.
#include "core/lock.h"
#include "lib/riscv.h"
#include "core/proc.h"
#include "core/printk.h"

#define SPINS_BEFORE_PARK 512

uint64 spin_parks;        // waits that ended in wfi, all harts (selftest.c)

void spin_init(struct spinlock *lk, const char *name) {
  lk->held = 0;
  lk->name = name;
  lk->owner = NULL;
  lk->parked = 0;
}

// Interrupts off. Waits in wfi while lk is held. The parked bit is set
// before held is checked and spin_unlock clears held before it reads the
// bits (a fence on each side), so either the holder sees our bit and
// interrupts us, or we see the lock free and do not sleep. A stale SSIP
// is cleared first, else wfi would return at once. wfi also returns for
// any pending interrupt enabled in sie, even with interrupts off: a due
// timer (STIP stays pending until stimecmp moves) or a device's SEIP
// would turn the wait into a loop through wfi, each pass a trip through
// QEMU's slow path that burns the host core the holder needs. So only the
// unlocker's SSIP is enabled while parked; the others stay pending and
// are taken when interrupts come back on.
static void park(struct spinlock *lk) {
  uint32 me = 1u << hart_id();
  uint64 enabled = csr_read(sie);
  csr_write(sie, 1 << IRQ_SSOFT);
  csr_clear(sip, 1 << IRQ_SSOFT);
  __sync_fetch_and_or(&lk->parked, me);
  __sync_synchronize();
  if (lk->held) {
    __sync_fetch_and_add(&spin_parks, 1);
    asm volatile("wfi");
  }
  __sync_fetch_and_and(&lk->parked, ~me);
  csr_write(sie, enabled);
}

// Interrupts off; the first test-and-set failed. Spins on plain loads
// (no write traffic on the holder's line), parks after SPINS_BEFORE_PARK
// (counted, not timed: reading the clock costs more than a spin).
static void spin_contended(struct spinlock *lk) {
  int spins = 0;
  for (;;) {
    while (*(volatile uint32 *)&lk->held) {
      if (++spins >= SPINS_BEFORE_PARK)
        park(lk);
    }
    if (__sync_lock_test_and_set(&lk->held, 1) == 0)
      return;
  }
}

// Interrupts off: a parked hart is leaving wfi to retry.
static void unpark(uint32 harts) {
  for (int h = 0; harts; h++, harts >>= 1)
    if (harts & 1)
      hart_kick(h);
}

void spin_lock(struct spinlock *lk) {
  intr_push();
  if (spin_holding(lk))
    panic("spin_lock: recursive acquire of %s", lk->name);
  if (__sync_lock_test_and_set(&lk->held, 1) != 0)
    spin_contended(lk);
  __sync_synchronize();   // critical section loads/stores stay after this
  lk->owner = this_cpu();
}

void spin_unlock(struct spinlock *lk) {
  if (!spin_holding(lk))
    panic("spin_unlock: %s not held by this hart", lk->name);
  lk->owner = NULL;
  __sync_synchronize();
  __sync_lock_release(&lk->held);
  __sync_synchronize();   // held clear before the parked bits are read: see park
  if (lk->parked)
    unpark(lk->parked);
  intr_pop();
}

// Precondition: interrupts are off (else the answer could go stale).
int spin_holding(struct spinlock *lk) {
  return lk->held && lk->owner == this_cpu();
}

void intr_push(void) {
  int was_on = intr_off_was_on();
  struct cpu *c = this_cpu();
  if (c->intr_depth == 0)
    c->intr_was_on = was_on;
  c->intr_depth++;
}

// Checks that interrupts stayed off only at the outermost pop: the check
// is a CSR read, and under QEMU every CSR access ends a translated block
// (a lock pair used to make four of them).
void intr_pop(void) {
  struct cpu *c = this_cpu();
  if (c->intr_depth < 1)
    panic("intr_pop: unbalanced push/pop");
  if (--c->intr_depth > 0)
    return;
  if (intr_enabled())
    panic("intr_pop: interrupts on inside a locked section");
  if (c->intr_was_on)
    intr_on();
}
