// spinlock.c: mutual exclusion between harts for short critical sections.
// A spin lock turns interrupts off on the acquiring hart (an interrupt
// handler taking the same lock would otherwise deadlock) and records its
// owner so a recursive acquire panics instead of hanging.
#include "lock.h"
#include "riscv.h"
#include "proc.h"
#include "printk.h"

void spin_init(struct spinlock *lk, const char *name) {
  lk->held = 0;
  lk->name = name;
  lk->owner = NULL;
}

void spin_lock(struct spinlock *lk) {
  intr_push();
  if (spin_holding(lk))
    panic("spin_lock: recursive acquire of %s", lk->name);
  while (__sync_lock_test_and_set(&lk->held, 1) != 0)
    ;
  __sync_synchronize();   // critical section loads/stores stay after this
  lk->owner = this_cpu();
}

void spin_unlock(struct spinlock *lk) {
  if (!spin_holding(lk))
    panic("spin_unlock: %s not held by this hart", lk->name);
  lk->owner = NULL;
  __sync_synchronize();
  __sync_lock_release(&lk->held);
  intr_pop();
}

// Precondition: interrupts are off (else the answer could go stale).
int spin_holding(struct spinlock *lk) {
  return lk->held && lk->owner == this_cpu();
}

void intr_push(void) {
  int was_on = intr_enabled();
  intr_off();
  struct cpu *c = this_cpu();
  if (c->intr_depth == 0)
    c->intr_was_on = was_on;
  c->intr_depth++;
}

void intr_pop(void) {
  struct cpu *c = this_cpu();
  if (intr_enabled())
    panic("intr_pop: interrupts on inside a locked section");
  if (c->intr_depth < 1)
    panic("intr_pop: unbalanced push/pop");
  c->intr_depth--;
  if (c->intr_depth == 0 && c->intr_was_on)
    intr_on();
}
