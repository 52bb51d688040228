// poll.c: the readiness generation (core/poll.h). One counter for the
// whole system, bumped by every readiness change; pollers sleep on it.
// A notifier pays one atomic add, and takes the lock to wake only when a
// poller is asleep.
#include "lib/types.h"
#include "core/lock.h"
#include "core/proc.h"
#include "core/timer.h"
#include "core/poll.h"

static struct spinlock poll_lock = { .name = "poll" };
static uint64 generation;        // atomic; sleepers wait for it to move
static int sleepers;             // under poll_lock; read without it by notifiers

uint64 poll_generation(void) { return __atomic_load_n(&generation, __ATOMIC_SEQ_CST); }

// The add and the sleeper count read are ordered (seq_cst), as are the
// sleeper's count write and generation read: one of the two sides sees
// the other, so a sleeper never misses a change.
void poll_notify(void) {
  __atomic_add_fetch(&generation, 1, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&sleepers, __ATOMIC_SEQ_CST) == 0) return;
  spin_lock(&poll_lock);
  proc_wakeup(&generation);
  spin_unlock(&poll_lock);
}

void poll_wait_change(uint64 seen, uint64 deadline_ns) {
  struct proc *p = current();
  spin_lock(&poll_lock);
  __atomic_add_fetch(&sleepers, 1, __ATOMIC_SEQ_CST);
  while (poll_generation() == seen && !proc_killed(p) && clock_ns() < deadline_ns)
    proc_sleep_until(&generation, &poll_lock, deadline_ns);
  __atomic_sub_fetch(&sleepers, 1, __ATOMIC_SEQ_CST);
  spin_unlock(&poll_lock);
}
