// timer.h: time keeping and the kernel timer facility (timer.c).
//
// clock_ns(): monotonic nanoseconds since boot, from the `time` CSR.
// Scheduler ticks of TICK_NS (uapi.h): clock_ticks() counts them since
// boot, ticks_after(n) is the tick value at which at least n whole ticks
// from now have passed. Each hart preempts its process every tick.
//
// ktimer: a one-shot deadline. ktimer_arm(t, deadline_ns, fn, arg) makes
// fn(arg) run once clock_ns() >= deadline_ns (re-arming a pending timer
// moves it). Each hart programs its Sstc stimecmp with the earlier of its
// next tick and the earliest pending ktimer, so precision is the interrupt
// latency (microseconds), not the tick.
//
// Callback context: interrupt context on whichever hart's timer interrupt
// notices the expiry first; interrupts are off and no timer lock is held.
// A callback must not sleep; it may take spin locks, call proc_wakeup,
// and arm or cancel timers (including its own).
//
// ktimer_cancel(t) returns 1 if it removed a pending timer, 0 if the timer
// was not pending (already fired, running now, or never armed). It does
// not wait for a running callback: if that matters, the owner's callback
// must check its own state under the owner's lock.
#ifndef TIMER_H
#define TIMER_H
#include "lib/types.h"
#include "core/lock.h"

struct ktimer {
  uint64 deadline_ns;
  void (*fn)(void *);
  void *arg;
  struct ktimer *next;     // in the pending list, sorted by deadline
  int pending;
};

uint64 clock_ns(void);
uint64 clock_hz(void);               // the time CSR's rate
void   ktimer_arm(struct ktimer *t, uint64 deadline_ns, void (*fn)(void *), void *arg);
int    ktimer_cancel(struct ktimer *t);

uint64 clock_ticks(void);
uint64 ticks_after(uint64 n);

// Sleeping with a deadline (process context, caller holds lk, as for
// proc_sleep): returns with lk held after a proc_wakeup(chan) or once
// clock_ns() >= deadline_ns (~0: none). No one is woken by ticks: a
// sleeper that waits for time names its deadline here. sleep_until_ns
// waits for time alone (no lock held; -1 if the process was killed).
void proc_sleep_until(void *chan, struct spinlock *lk, uint64 deadline_ns);
int  sleep_until_ns(uint64 deadline_ns);

void timer_init(uint64 timebase_hz);   // hart 0, once
void timer_hart_init(void);            // every hart
int  timer_interrupt(void);            // trap.c; returns 1 if a tick elapsed
#endif
