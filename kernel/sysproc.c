// sysproc.c: system calls about processes, time and the machine.
#include "prof.h"
#include "types.h"
#include "riscv.h"
#include "param.h"
#include "proc.h"
#include "printk.h"
#include "pmem.h"
#include "vm.h"
#include "timer.h"
#include "power.h"
#include "syscall.h"
#include "uapi.h"

int64 sys_fork(void) { return proc_fork(); }
int64 sys_exit(void) { proc_exit(arg_int(0)); }
int64 sys_wait(void) { return proc_wait(arg_addr(0)); }
int64 sys_kill(void) { return proc_kill(arg_int(0)); }
int64 sys_getpid(void) { return current()->pid; }
int64 sys_kclock_ns(void) { return clock_ns(); }
int64 sys_timebase(void) { return clock_hz(); }

int64 sys_sbrk(void) {
  uint64 old = current()->heap_end;
  if (proc_grow(arg_raw(0)) < 0) return -1;
  return old;
}

// A sleeping process waits for its own ktimer, not for every tick: each
// wakeup costs a context switch (and a page-table switch, see vm.h), and
// a sleeper woken at every tick to recheck its deadline paid that 100
// times a second.
struct sleep_wait {
  struct ktimer timer;
  int fired;                 // set under tick_lock, by an atomic store
};

// Its last touch of w is the store to fired: proc_wakeup only compares
// the address.
static void sleep_expired(void *arg) {
  struct sleep_wait *w = arg;
  spin_lock(&tick_lock);
  __atomic_store_n(&w->fired, 1, __ATOMIC_RELEASE);
  proc_wakeup(w);
  spin_unlock(&tick_lock);
}

// Sleeps until the tick boundary at least n whole ticks away; -1 if
// killed meanwhile.
int64 sys_sleep(void) {
  int n = arg_int(0);
  if (n <= 0) return 0;
  struct sleep_wait w = { .fired = 0 };
  ktimer_arm(&w.timer, ticks_after(n) * TICK_NS, sleep_expired, &w);
  int killed = 0;
  spin_lock(&tick_lock);
  while (!w.fired && !(killed = proc_killed(current())))
    proc_sleep(&w, &tick_lock);
  spin_unlock(&tick_lock);
  // Killed first: take the timer back, or, if its callback already runs
  // on another hart, wait until it has let go of w (on this stack).
  if (killed && !ktimer_cancel(&w.timer))
    while (!__atomic_load_n(&w.fired, __ATOMIC_ACQUIRE))
      ;
  return killed ? -1 : 0;
}

int64 sys_uptime(void) { return clock_ticks(); }

int64 sys_halt(void) {
  int status = arg_int(0);
  prof_dump();
  kprintf("halt: powering off with status %d\n", status);
  power_off(status);
}

int64 sys_sysinfo(void) {
  struct sysinfo si;
  si.freepages = pmem_free_pages();
  si.totalpages = pmem_total_pages();
  si.nproc = proc_count();
  si.ncpu = ncpu_started;
  intr_push();
  si.hart = hart_id();
  intr_pop();
  si.pad = 0;
  return copy_out(current()->pagetable, arg_addr(0), &si, sizeof si);
}
