// kthread.c: kernel-only threads (see proc.h). A kthread is a process
// slot with no user memory: it runs in supervisor mode on its own kernel
// stack, is scheduled and preempted like any process, and may sleep.
// Its parent is init, which reaps it after fn returns.
#include "lib/types.h"
#include "core/proc.h"
#include "proc/lifecycle.h"
#include "lib/klib.h"

int kthread_start(const char *name, void (*fn)(void *), void *arg) {
  struct proc *p = proc_alloc();
  if (!p) return -1;
  p->is_kthread = 1;
  p->kthread_fn = fn;
  p->kthread_arg = arg;
  p->cwd = NULL;
  for (int fd = 0; fd < NOFILE; fd++) p->ofile[fd] = NULL;
  str_copy(p->name, name, sizeof p->name);
  int pid = p->pid;
  spin_unlock(&p->lock);          // still P_EMBRYO: nobody runs it yet
  proc_adopt_by_init(p);
  spin_lock(&p->lock);
  p->state = P_RUNNABLE;
  spin_unlock(&p->lock);
  kick_idle_hart();
  return pid;
}
