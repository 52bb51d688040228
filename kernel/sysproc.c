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
  return copy_out(current()->pagetable, arg_addr(0), &si, sizeof si);
}
