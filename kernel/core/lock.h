// lock.h: spin locks (short critical sections, interrupts off while held)
// and sleep locks (may be held across disk I/O; the holder can sleep).
// Implemented in spinlock.c and sleeplock.c.
#ifndef LOCK_H
#define LOCK_H
#include "lib/types.h"

struct cpu;

struct spinlock {
  uint32 held;          // 1 while some hart holds it (amoswap)
  const char *name;     // for panic messages
  struct cpu *owner;    // hart holding it, to catch recursive acquire
  uint32 parked;        // harts waiting in wfi for it (bit per hart): spinlock.c
};

struct sleeplock {
  struct spinlock guard; // protects the two fields below
  int held;
  int owner_pid;
  const char *name;
};

void spin_init(struct spinlock *lk, const char *name);
void spin_lock(struct spinlock *lk);
void spin_unlock(struct spinlock *lk);
int  spin_holding(struct spinlock *lk);
extern uint64 spin_parks;   // contended waits that went to wfi (spinlock.c)

// Nestable interrupt disabling: interrupts come back on only when the
// outermost intr_push is undone, and only if they were on before it.
void intr_push(void);
void intr_pop(void);

void sleeplock_init(struct sleeplock *lk, const char *name);
void sleeplock_acquire(struct sleeplock *lk);
void sleeplock_release(struct sleeplock *lk);
int  sleeplock_holding(struct sleeplock *lk);

#endif
