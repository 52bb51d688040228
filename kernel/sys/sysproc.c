// sysproc.c: system calls about processes, time and the machine.
#include "core/prof.h"
#include "lib/types.h"
#include "dev/random.h"
#include "lib/klib.h"
#include "lib/riscv.h"
#include "lib/param.h"
#include "core/proc.h"
#include "proc/lifecycle.h"
#include "core/printk.h"
#include "core/pmem.h"
#include "core/vm.h"
#include "core/pager.h"
#include "core/timer.h"
#include "core/power.h"
#include "proc/args.h"
#include "lib/uapi.h"

int64 sys_fork(void) { return proc_fork(); }
int64 sys_exit(void) { proc_exit(arg_int(0)); }
int64 sys_wait(void) { return proc_wait(arg_addr(0)); }
int64 sys_kill(void) { return proc_kill(arg_int(0)); }
int64 sys_getpid(void) { return current()->pid; }
int64 sys_syscount(void) { return (int64)current()->nsyscalls; }
int64 sys_kclock_ns(void) { return clock_ns(); }
int64 sys_timebase(void) { return clock_hz(); }

int64 sys_sbrk(void) {
  uint64 old = current()->heap_end;
  if (proc_grow(arg_raw(0)) < 0) return -1;
  return old;
}

// Sleeps until the tick boundary at least n whole ticks away; -1 if
// killed meanwhile. The process waits for its own deadline, not for every
// tick: a sleeper woken at every tick to recheck paid a context switch 100
// times a second.
int64 sys_sleep(void) {
  int n = arg_int(0);
  if (n <= 0) return 0;
  return sleep_until_ns(ticks_after(n) * TICK_NS);
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
  si.idle_ns = sched_idle_ns();
  si.now_ns = clock_ns();
  si.lock_parks = __atomic_load_n(&spin_parks, __ATOMIC_RELAXED);
  return copy_out(current()->pagetable, arg_addr(0), &si, sizeof si);
}

int64 sys_pagestat(void) {
  struct pagestat ps;
  pager_stats(&ps);
  return copy_out(current()->pagetable, arg_addr(0), &ps, sizeof ps);
}

// getrandom(buf, len, flags): flags must be 0; writes min(len,
// GETRANDOM_MAX) random bytes and returns how many; -1 for a bad pointer,
// a negative len or unknown flags.
int64 sys_getrandom(void) {
  uint8 tmp[GETRANDOM_MAX];
  int len = arg_int(1);
  if (len < 0 || arg_int(2) != 0) return -1;
  if (len > GETRANDOM_MAX) len = GETRANDOM_MAX;
  random_bytes(tmp, len);
  int r = copy_out(current()->pagetable, arg_addr(0), tmp, len);
  memset(tmp, 0, sizeof tmp);
  return r < 0 ? -1 : len;
}
