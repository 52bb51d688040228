// lifecycle.h: the process life cycle (lifecycle.c) and kernel threads
// (kthread.c). struct proc, the table and scheduling are core/proc.h's.
#ifndef PROC_LIFECYCLE_H
#define PROC_LIFECYCLE_H
#include "lib/types.h"
#include "core/proc.h"

void proc_table_init(void);
void proc_start_init(void);
struct proc *proc_alloc(void);          // returns with p->lock held
void proc_release_slot(struct proc *p); // caller holds p->lock
int  proc_fork(void);
void proc_exit(int status) __attribute__((noreturn));
int  proc_wait(uint64 status_uva);
int  proc_kill(int pid);
int  proc_grow(int64 delta);
int  proc_count(void);
void proc_adopt_by_init(struct proc *p);
// Registers hook(p), called in the exiting process's own context (it may
// sleep) before its files are closed; at most NEXIT_HOOKS hooks.
void proc_on_exit(void (*hook)(struct proc *));


// kthread.c: a kernel-only thread running fn(arg) on its own stack with
// interrupts on; it may sleep and be woken like any process. When fn
// returns the thread exits. Returns the pid, or -1 if the table is full.
int kthread_start(const char *name, void (*fn)(void *), void *arg);

#endif
