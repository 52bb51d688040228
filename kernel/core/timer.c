// timer.c: the time CSR as a nanosecond clock, scheduler ticks, and the
// ktimer deadline list (see timer.h). Deadlines are programmed through
// the Sstc stimecmp CSR; writing it also clears a pending timer interrupt.
#include "lib/types.h"
#include "lib/riscv.h"
#include "lib/param.h"
#include "core/lock.h"
#include "core/proc.h"
#include "core/printk.h"
#include "core/timer.h"
#include "lib/uapi.h"

#define NS_PER_SEC 1000000000ULL

static uint64 timebase_hz = 10000000;        // QEMU virt: 10 MHz
static uint64 tick_cycles;                   // TICK_NS in time-CSR units
static uint64 next_tick[NCPU];               // per hart, in time-CSR units
static uint64 programmed[NCPU];              // per hart: stimecmp as last written
static struct spinlock ktimer_lock;
static struct ktimer *pending_list;          // sorted, earliest first

static uint64 ns_per_cycle;                  // NS_PER_SEC / timebase_hz when whole, else 0 (timer_init)

// The RDMA paths read the clock for every frame: one multiply instead of
// three divisions when the timebase divides a second (QEMU's 10 MHz).
static uint64 cycles_to_ns(uint64 c) {
  if (ns_per_cycle)
    return c * ns_per_cycle;
  return (c / timebase_hz) * NS_PER_SEC + (c % timebase_hz) * NS_PER_SEC / timebase_hz;
}

static uint64 ns_to_cycles(uint64 ns) {      // rounds up: never early
  if (ns_per_cycle)
    return ns / ns_per_cycle + (ns % ns_per_cycle != 0);
  uint64 whole = ns / NS_PER_SEC, rest = ns % NS_PER_SEC;
  return whole * timebase_hz + (rest * timebase_hz + NS_PER_SEC - 1) / NS_PER_SEC;
}

uint64 clock_ns(void) { return cycles_to_ns(read_time()); }

uint64 clock_hz(void) { return timebase_hz; }

void timer_init(uint64 hz) {
  if (hz) timebase_hz = hz;
  ns_per_cycle = NS_PER_SEC % timebase_hz == 0 ? NS_PER_SEC / timebase_hz : 0;
  tick_cycles = ns_to_cycles(TICK_NS);
  spin_init(&ktimer_lock, "ktimer");
}

// Interrupts off. Sets this hart's stimecmp to its next event, unless
// what it holds is still ahead and no later: that interrupt comes first
// and reprograms. Each write costs an exit to the emulator, which takes
// its global lock (contended by the NIC's receive path), and a driver
// re-arming its deadline per frame would otherwise pay that per frame.
static void program_deadline(void) {
  int hart = hart_id();
  uint64 when = next_tick[hart];
  spin_lock(&ktimer_lock);
  if (pending_list) {
    uint64 t = ns_to_cycles(pending_list->deadline_ns);
    if (t < when) when = t;
  }
  spin_unlock(&ktimer_lock);
  if (when >= programmed[hart] && programmed[hart] > read_time())
    return;
  programmed[hart] = when;
  csr_write(0x14d, when);                    // stimecmp
}

void timer_hart_init(void) {
  intr_push();
  next_tick[hart_id()] = (read_time() / tick_cycles + 1) * tick_cycles;
  program_deadline();
  csr_set(sie, 1 << IRQ_STIMER);
  intr_pop();
}

// Caller holds ktimer_lock.
static void unlink_timer(struct ktimer *t) {
  for (struct ktimer **pp = &pending_list; *pp; pp = &(*pp)->next) {
    if (*pp == t) { *pp = t->next; t->pending = 0; t->next = NULL; return; }
  }
  panic("ktimer: pending timer missing from the list");
}

void ktimer_arm(struct ktimer *t, uint64 deadline_ns, void (*fn)(void *), void *arg) {
  spin_lock(&ktimer_lock);
  if (t->pending) unlink_timer(t);
  t->deadline_ns = deadline_ns;
  t->fn = fn;
  t->arg = arg;
  struct ktimer **pp = &pending_list;
  while (*pp && (*pp)->deadline_ns <= deadline_ns)
    pp = &(*pp)->next;
  t->next = *pp;
  *pp = t;
  t->pending = 1;
  spin_unlock(&ktimer_lock);
  intr_push();
  program_deadline();                        // this hart will catch it
  intr_pop();
}

int ktimer_cancel(struct ktimer *t) {
  spin_lock(&ktimer_lock);
  int was = t->pending;
  if (was) unlink_timer(t);
  spin_unlock(&ktimer_lock);
  return was;
}

// Runs every expired callback, one at a time, without ktimer_lock held.
static void run_expired(void) {
  for (;;) {
    spin_lock(&ktimer_lock);
    struct ktimer *t = pending_list;
    if (!t || t->deadline_ns > clock_ns()) { spin_unlock(&ktimer_lock); return; }
    unlink_timer(t);
    spin_unlock(&ktimer_lock);
    t->fn(t->arg);
  }
}

int timer_interrupt(void) {
  int hart = hart_id(), tick = 0;
  uint64 now = read_time();
  if (now >= next_tick[hart]) {
    tick = 1;
    next_tick[hart] = (now / tick_cycles + 1) * tick_cycles;   // next boundary
  }
  run_expired();
  program_deadline();
  return tick;
}

uint64 clock_ticks(void) { return read_time() / tick_cycles; }

uint64 ticks_after(uint64 n) {
  return (read_time() + tick_cycles - 1) / tick_cycles + n;
}

// ---- sleeping with a deadline ----

struct timed_sleep {
  struct ktimer timer;
  void *chan;
  struct spinlock *lk;
  int released;              // the callback is done with this struct (atomic)
};

// The sleeper's stack holds w: copy what is needed, and let go of w
// before the wakeup, after which the sleeper may return.
static void timed_sleep_expired(void *arg) {
  struct timed_sleep *w = arg;
  void *chan = w->chan;
  struct spinlock *lk = w->lk;
  spin_lock(lk);             // a sleeper between its check and proc_sleep holds it
  __atomic_store_n(&w->released, 1, __ATOMIC_RELEASE);
  proc_wakeup(chan);
  spin_unlock(lk);
}

// Process context; caller holds lk, as for proc_sleep. Sleeps on chan
// until a proc_wakeup(chan) or until clock_ns() >= deadline_ns (~0: no
// deadline), and returns with lk held. As with proc_sleep, recheck the
// condition.
void proc_sleep_until(void *chan, struct spinlock *lk, uint64 deadline_ns) {
  if (deadline_ns == ~0ull) { proc_sleep(chan, lk); return; }
  if (clock_ns() >= deadline_ns) return;
  struct timed_sleep w = { .chan = chan, .lk = lk, .released = 0 };
  ktimer_arm(&w.timer, deadline_ns, timed_sleep_expired, &w);
  proc_sleep(chan, lk);
  if (ktimer_cancel(&w.timer)) return;
  // It fired, or its callback is running on another hart and needs lk.
  spin_unlock(lk);
  while (!__atomic_load_n(&w.released, __ATOMIC_ACQUIRE))
    ;
  spin_lock(lk);
}

static struct spinlock time_sleep_lock = { .name = "time sleep" };   // guards no data

// Process context, no lock held: sleeps until clock_ns() >= deadline_ns.
// Returns -1 if the process is killed first (kernel threads never are).
int sleep_until_ns(uint64 deadline_ns) {
  struct proc *p = current();
  int killed;
  spin_lock(&time_sleep_lock);
  while (!(killed = proc_killed(p)) && clock_ns() < deadline_ns)
    proc_sleep_until(&deadline_ns, &time_sleep_lock, deadline_ns);
  spin_unlock(&time_sleep_lock);
  return killed ? -1 : 0;
}
