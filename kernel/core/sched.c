// sched.c: per-hart scheduling. Each hart runs scheduler(), which picks a
// P_RUNNABLE process round-robin and swtch'es to it; the process comes
// back through sched_switch_out() when it yields, sleeps or exits.
// Sleep/wakeup use a channel (any address) and a condition lock so that a
// wakeup between "check the condition" and "sleep" cannot be lost.
// An idle hart waits in wfi; proc_wakeup kicks one idle hart through the
// CLINT (machinevec.S turns that into a supervisor software interrupt) so
// a newly runnable process does not wait for that hart's next tick.
#include "lib/types.h"
#include "lib/riscv.h"
#include "lib/param.h"
#include "core/lock.h"
#include "core/proc.h"
#include "core/fpu.h"
#include "core/printk.h"
#include "lib/memlayout.h"
#include "core/vm.h"
#include "core/timer.h"

struct cpu cpus[NCPU];
struct proc proc_table[NPROC];
int ncpu_started;                   // harts through their per-hart init (main.c)

struct proc *current(void) {
  intr_push();
  struct proc *p = this_cpu()->running;
  intr_pop();
  return p;
}

// state read without p->lock, as a hint: under QEMU every lock costs
// CSR accesses and each of those ends a translated block (a helper call
// and a block lookup), so a pass that locked all NPROC slots cost tens of
// microseconds.
// Only a hint: whoever makes a process runnable then kicks an idle hart
// (proc_wakeup), or runs a pass itself (proc_yield, exit), and callers
// recheck under the lock.
static enum proc_state state_hint(struct proc *p) {
  return __atomic_load_n(&p->state, __ATOMIC_RELAXED);
}

// One pass over the table with interrupts off; returns 1 if anything ran.
static int run_pass(struct cpu *c) {
  int ran = 0;
  for (struct proc *p = proc_table; p < &proc_table[NPROC]; p++) {
    if (state_hint(p) != P_RUNNABLE) continue;
    spin_lock(&p->lock);
    if (p->state == P_RUNNABLE) {
      c->idle = 0;
      p->state = P_RUNNING;
      c->running = p;
      p->run_from = clock_ticks();
      if (p->pagetable) vm_load(p->pagetable, p->vm_gen);   // kthreads run on any (vm.h)
      swtch(&c->sched_ctx, &p->ctx);
      c->running = NULL;       // the process changed its state before coming back
      ran = 1;
    }
    spin_unlock(&p->lock);
  }
  return ran;
}

void scheduler(void) {
  struct cpu *c = this_cpu();
  c->running = NULL;
  for (;;) {
    intr_on();                 // take pending interrupts (they may wake someone)
    intr_off();
    c->idle = 1;               // before the pass: a wakeup after it kicks us
    __sync_synchronize();
    if (!run_pass(c)) {
      uint64 t0 = clock_ns();
      asm volatile("wfi");     // resumes on any enabled pending interrupt
      c->idle_ns += clock_ns() - t0;
    }
  }
}

// Precondition: caller holds p->lock and nothing else, and has already
// moved p out of P_RUNNING.
void sched_switch_out(void) {
  struct proc *p = current();
  struct cpu *c = this_cpu();
  if (!spin_holding(&p->lock)) panic("sched_switch_out: p->lock not held");
  if (c->intr_depth != 1) panic("sched_switch_out: other locks held");
  if (p->state == P_RUNNING) panic("sched_switch_out: process still running");
  if (intr_enabled()) panic("sched_switch_out: interrupts on");
  int was_on = c->intr_was_on;   // belongs to this thread, not the hart
  fpu_switch_out(p);
  swtch(&p->ctx, &c->sched_ctx);
  this_cpu()->intr_was_on = was_on;
}

void proc_yield(void) {
  struct proc *p = current();
  spin_lock(&p->lock);
  p->state = P_RUNNABLE;
  sched_switch_out();
  spin_unlock(&p->lock);
}

// Precondition: caller holds lk. Atomically releases lk and sleeps on chan;
// reacquires lk before returning. Wakeups may be spurious: recheck.
// wait_chan and P_SLEEPING are set before lk is released: a waker that
// changed the condition under lk then sees them in proc_wakeup's unlocked
// look, and waits on p->lock until we are off the CPU.
// A killed process yields instead of sleeping: proc_kill wakes only a
// process already asleep, so one killed between its caller's look at
// proc_killed and this point would sleep through its kill (a blocking
// call without a deadline, forever). To the caller it is a spurious wakeup.
void proc_sleep(void *chan, struct spinlock *lk) {
  struct proc *p = current();
  if (lk != &p->lock)
    spin_lock(&p->lock);
  p->wait_chan = chan;
  p->state = p->killed ? P_RUNNABLE : P_SLEEPING;
  if (lk != &p->lock)
    spin_unlock(lk);
  sched_switch_out();
  p->wait_chan = NULL;
  if (lk != &p->lock) {
    spin_unlock(&p->lock);
    spin_lock(lk);
  }
}

// Makes hart h leave wfi: a CLINT software interrupt, which machinevec.S
// turns into SSIP. Any context.
void hart_kick(int h) {
  *(volatile uint32 *)KDEV(CLINT_MSIP(h)) = 1;
}

// Wakes one idle hart other than this one, if there is one.
void kick_idle_hart(void) {
  intr_push();
  int me = hart_id();
  for (int h = 0; h < NCPU; h++) {
    if (h != me && cpus[h].idle) {
      hart_kick(h);
      break;
    }
  }
  intr_pop();
}

// Makes every process sleeping on chan runnable. Safe from interrupts.
// Precondition, as for any sleep/wakeup pair: the condition the sleeper
// tests was changed under the lock it passed to proc_sleep (or under
// p->lock), so a sleeper we must wake already shows P_SLEEPING on chan
// in the unlocked look (see proc_sleep); the look saves locking every slot.
void proc_wakeup(void *chan) {
  struct proc *self = current();
  int woke = 0;
  for (struct proc *p = proc_table; p < &proc_table[NPROC]; p++) {
    if (p == self) continue;
    if (state_hint(p) != P_SLEEPING || __atomic_load_n(&p->wait_chan, __ATOMIC_RELAXED) != chan)
      continue;
    spin_lock(&p->lock);
    if (p->state == P_SLEEPING && p->wait_chan == chan) {
      p->state = P_RUNNABLE;
      woke = 1;
      if (p->is_kthread) this_cpu()->woke_kthread = 1;   // trap.c yields to it
    }
    spin_unlock(&p->lock);
  }
  if (woke) {
    __sync_synchronize();      // runnable before we look at idle flags
    kick_idle_hart();
  }
}

void proc_set_killed(struct proc *p) {
  spin_lock(&p->lock);
  p->killed = 1;
  spin_unlock(&p->lock);
}

int proc_killed(struct proc *p) {
  spin_lock(&p->lock);
  int k = p->killed;
  spin_unlock(&p->lock);
  return k;
}

// ^P: a lock-free snapshot (it runs from the console interrupt).
void proc_dump(void) {
  static const char *state_names[] = {
    [P_FREE] = "free", [P_EMBRYO] = "embryo", [P_RUNNABLE] = "runnable",
    [P_RUNNING] = "running", [P_SLEEPING] = "sleeping", [P_ZOMBIE] = "zombie",
  };
  for (struct proc *p = proc_table; p < &proc_table[NPROC]; p++) {   // from a line of its own (printk)
    if (p->state == P_FREE) continue;
    kprintf("%d %s %s%s\n", p->pid, state_names[p->state], p->name, p->is_kthread ? " [kthread]" : "");
  }
}

// Nanoseconds every hart has spent waiting for an interrupt with nothing
// to run, summed (sysinfo's idle_ns). Read without a lock: a hart's
// counter only grows, and a reader wants a total, not a snapshot.
uint64 sched_idle_ns(void) {
  uint64 t = 0;
  for (int i = 0; i < NCPU; i++) t += __atomic_load_n(&cpus[i].idle_ns, __ATOMIC_RELAXED);
  return t;
}
