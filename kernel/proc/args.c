// args.c: a system call's arguments, read from the caller's trap frame
// (a0..a5 at the ecall). Used by the sys_* handlers of every layer above.
#include "lib/types.h"
#include "lib/param.h"
#include "core/proc.h"
#include "core/printk.h"
#include "core/vm.h"
#include "proc/args.h"

int64 arg_raw(int n) {
  if (n < 0 || n > 5) panic("arg_raw: argument %d out of range", n);
  return current()->tf->regs[REG_A0 + n];
}
int arg_int(int n) { return (int)arg_raw(n); }
uint64 arg_addr(int n) { return (uint64)arg_raw(n); }

int arg_str(int n, char *buf, int max) {
  return copy_in_str(current()->pagetable, buf, arg_addr(n), max);
}
