// syscall.c: the system call table, indexed by SYS_* number, and the
// helpers handlers use to read their arguments from the trap frame.
// Unknown numbers return -1 and print a console message.
#include "types.h"
#include "param.h"
#include "proc.h"
#include "printk.h"
#include "vm.h"
#include "syscall.h"
#include "uapi.h"

int64 arg_raw(int n) {
  if (n < 0 || n > 5) panic("arg_raw: argument %d out of range", n);
  return current()->tf->regs[REG_A0 + n];
}
int arg_int(int n) { return (int)arg_raw(n); }
uint64 arg_addr(int n) { return (uint64)arg_raw(n); }

int arg_str(int n, char *buf, int max) {
  return copy_in_str(current()->pagetable, buf, arg_addr(n), max);
}

#define HANDLERS(X) \
  X(fork) X(exit) X(wait) X(pipe) X(read) X(write) X(close) X(kill) \
  X(exec) X(open) X(mknod) X(unlink) X(fstat) X(link) X(mkdir) X(chdir) \
  X(dup) X(getpid) X(sbrk) X(sleep) X(uptime) X(clock_ns) X(halt) X(sysinfo)

#define DECLARE(name) int64 sys_##name(void);
HANDLERS(DECLARE)

struct syscall_entry { const char *name; int64 (*fn)(void); };
#define ENTRY(name) [SYS_##name] = { #name, sys_##name },
static const struct syscall_entry syscall_table[] = { HANDLERS(ENTRY) };

void syscall_dispatch(void) {
  struct proc *p = current();
  uint64 num = p->tf->regs[REG_A7];
  if (num < ARRAY_LEN(syscall_table) && syscall_table[num].fn) {
    p->tf->regs[REG_A0] = syscall_table[num].fn();
  } else {
    kprintf("pid %d (%s): unknown system call %d\n", p->pid, p->name, (int)num);
    p->tf->regs[REG_A0] = -1;
  }
}
