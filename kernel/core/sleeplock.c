// sleeplock.c: locks that a process may hold while it sleeps (disk I/O,
// inode contents). Waiters sleep instead of spinning. Only usable from
// process or kthread context, never from an interrupt handler.
#include "core/lock.h"
#include "core/proc.h"

void sleeplock_init(struct sleeplock *lk, const char *name) {
  spin_init(&lk->guard, "sleeplock guard");
  lk->name = name;
  lk->held = 0;
  lk->owner_pid = 0;
}

void sleeplock_acquire(struct sleeplock *lk) {
  spin_lock(&lk->guard);
  while (lk->held)
    proc_sleep(lk, &lk->guard);
  lk->held = 1;
  lk->owner_pid = current()->pid;
  spin_unlock(&lk->guard);
}

void sleeplock_release(struct sleeplock *lk) {
  spin_lock(&lk->guard);
  lk->held = 0;
  lk->owner_pid = 0;
  proc_wakeup(lk);
  spin_unlock(&lk->guard);
}

int sleeplock_holding(struct sleeplock *lk) {
  spin_lock(&lk->guard);
  int mine = lk->held && lk->owner_pid == current()->pid;
  spin_unlock(&lk->guard);
  return mine;
}
