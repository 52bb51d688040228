// fpu.h: user processes' floating-point state (f0-f31, fcsr); fpu.c owns
// saving and restoring it. The kernel itself never uses the FP registers
// (nothing in it is compiled to FP instructions but fpu.c's asm), so the
// registers hold user state only.
#ifndef FPU_H
#define FPU_H
#include "lib/types.h"

struct fpu_state {
  uint64 f[32];
  uint64 fcsr;
};

struct proc;
void fpu_exec_reset(struct proc *p);    // exec: zeros, fcsr 0 (FS Initial's meaning)
void fpu_fork(struct proc *parent, struct proc *child);
void fpu_switch_out(struct proc *p);    // p leaves its hart (sched_switch_out)
void fpu_enter_user(struct proc *p);    // p returns to user mode on this hart

#endif
