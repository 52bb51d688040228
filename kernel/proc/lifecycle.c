// lifecycle.c: the process life cycle (the table itself is sched.c's): creation (the
// first process, fork), exit with exit hooks, wait, kill, sbrk.
// Lock order: family_lock, then p->lock. family_lock guards every
// p->parent and is the condition lock of wait().
#include "lib/types.h"
#include "lib/riscv.h"
#include "lib/memlayout.h"
#include "lib/param.h"
#include "core/lock.h"
#include "core/proc.h"
#include "core/fpu.h"
#include "proc/lifecycle.h"
#include "core/printk.h"
#include "lib/klib.h"
#include "core/pmem.h"
#include "core/vm.h"
#include "fs/file.h"
#include "fs/fs.h"
#include "fs/log.h"
#include "proc/trap.h"
#include "proc/exec.h"

static struct proc *init_proc;
static struct spinlock pid_lock;
static int next_pid = 1;
static struct spinlock family_lock;
static void (*exit_hooks[NEXIT_HOOKS])(struct proc *);
static int nexit_hooks;

void proc_table_init(void) {
  spin_init(&pid_lock, "pid");
  spin_init(&family_lock, "family");
  for (int i = 0; i < NPROC; i++) {
    struct proc *p = &proc_table[i];
    spin_init(&p->lock, "proc");
    p->slot = i;
    p->state = P_FREE;
    p->kstack_top = KSTACK_TOP(i);
    kvm_map_kstack(i);
  }
  for (int i = 0; i < NPROC; i++)   // after every kernel mapping: they copy its root
    if ((proc_table[i].root = uvm_create_root()) == NULL) panic("proc_table_init: no memory");
}

void proc_on_exit(void (*hook)(struct proc *)) {
  spin_lock(&family_lock);
  if (nexit_hooks == NEXIT_HOOKS) panic("proc_on_exit: more than %d hooks", NEXIT_HOOKS);
  exit_hooks[nexit_hooks++] = hook;
  spin_unlock(&family_lock);
}

static void first_run(void);

// Claims a free slot; returns it P_EMBRYO with p->lock held, or NULL.
struct proc *proc_alloc(void) {
  for (struct proc *p = proc_table; p < &proc_table[NPROC]; p++) {
    spin_lock(&p->lock);
    if (p->state != P_FREE) { spin_unlock(&p->lock); continue; }
    spin_lock(&pid_lock);
    p->pid = next_pid++;
    spin_unlock(&pid_lock);
    p->state = P_EMBRYO;
    p->killed = p->exit_status = p->is_kthread = 0;
    p->heap_end = 0;
    p->pagetable = NULL;
    p->tf = NULL;
    memset(&p->ctx, 0, sizeof p->ctx);
    p->ctx.ra = (uint64)first_run;
    p->ctx.sp = p->kstack_top;
    return p;
  }
  return NULL;
}

// Adds a trap frame and an empty user address space. Caller holds p->lock;
// on failure the slot is released and -1 returned.
static int give_user_memory(struct proc *p) {
  p->tf = page_alloc();
  if (p->tf && uvm_attach(p->root, (uint64)p->tf) == 0) {
    p->pagetable = p->root;
    return 0;
  }
  proc_release_slot(p);
  spin_unlock(&p->lock);
  return -1;
}

// Caller holds p->lock. Frees everything the slot still owns.
void proc_release_slot(struct proc *p) {
  if (p->pagetable) {
    uvm_release(p->pagetable, p->heap_end);
    p->vm_gen++;                    // a hart may still hold the root: see vm.h
  }
  if (p->tf) page_put((uint64)p->tf);
  p->pagetable = NULL;
  p->tf = NULL;
  p->heap_end = 0;
  p->nsyscalls = 0;
  p->pid = 0;
  p->parent = NULL;
  p->name[0] = 0;
  p->killed = 0;
  p->wait_chan = NULL;
  p->state = P_FREE;
}

// A new process's first instructions, still holding p->lock from the
// scheduler. The very first one mounts the file system and execs /init,
// which needs process context because disk I/O sleeps.
static void first_run(void) {
  static int fs_ready;
  struct proc *p = current();
  spin_unlock(&p->lock);
  if (p->is_kthread) {
    intr_on();                      // the scheduler ran us with interrupts off
    p->kthread_fn(p->kthread_arg);
    proc_exit(0);
  }
  if (!fs_ready) {
    fs_mount(ROOT_DEV);
    fs_ready = 1;
    p->cwd = inode_get(ROOT_DEV, ROOT_INUM);
    char *argv[] = { "init", NULL };
    int argc = exec_program("/init", argv);
    if (argc < 0) panic("first_run: cannot exec /init");
    p->tf->regs[REG_A0] = argc;
  }
  user_trap_return();
}

void proc_start_init(void) {
  struct proc *p = proc_alloc();
  if (!p || give_user_memory(p) < 0) panic("proc_start_init: no memory");
  str_copy(p->name, "init", sizeof p->name);
  p->cwd = NULL;                    // set by fs_mount once the disk is up
  init_proc = p;
  p->state = P_RUNNABLE;
  spin_unlock(&p->lock);
}

// Returns the child's pid to the parent; the child returns 0 from its trap.
int proc_fork(void) {
  struct proc *parent = current(), *child = proc_alloc();
  if (!child || give_user_memory(child) < 0) return -1;
  // The copy may evict and sleep (pager.c): not under the child's lock.
  // The child is P_EMBRYO meanwhile: nothing runs or pages it.
  spin_unlock(&child->lock);
  int copied = uvm_clone(parent->pagetable, child->pagetable, parent->heap_end);
  spin_lock(&child->lock);
  if (copied < 0) {
    proc_release_slot(child);
    spin_unlock(&child->lock);
    return -1;
  }
  child->heap_end = parent->heap_end;
  *child->tf = *parent->tf;
  fpu_fork(parent, child);
  child->tf->regs[REG_A0] = 0;
  for (int fd = 0; fd < NOFILE; fd++)
    child->ofile[fd] = parent->ofile[fd] ? file_dup(parent->ofile[fd]) : NULL;
  child->cwd = parent->cwd ? inode_dup(parent->cwd) : NULL;
  str_copy(child->name, parent->name, sizeof child->name);
  int pid = child->pid;
  spin_unlock(&child->lock);
  spin_lock(&family_lock);
  child->parent = parent;
  spin_unlock(&family_lock);
  spin_lock(&child->lock);
  child->state = P_RUNNABLE;
  spin_unlock(&child->lock);
  kick_idle_hart();
  return pid;
}

// Makes init the parent of a new process (used for kthreads).
void proc_adopt_by_init(struct proc *p) {
  spin_lock(&family_lock);
  p->parent = init_proc;
  spin_unlock(&family_lock);
}

// Caller holds family_lock. Hands p's children to init.
static void reparent_children(struct proc *p) {
  for (struct proc *c = proc_table; c < &proc_table[NPROC]; c++) {
    if (c->parent == p) {
      c->parent = init_proc;
      proc_wakeup(init_proc);
    }
  }
}

// Releases what the process holds, becomes a zombie and never returns;
// the parent's wait() frees the memory and the slot.
void proc_exit(int status) {
  struct proc *p = current();
  if (p == init_proc) panic("init exited (status %d)", status);
  for (int i = 0; i < nexit_hooks; i++)
    exit_hooks[i](p);
  for (int fd = 0; fd < NOFILE; fd++) {
    if (p->ofile[fd]) { file_close(p->ofile[fd]); p->ofile[fd] = NULL; }
  }
  if (p->cwd) {
    fs_tx_begin();
    inode_put(p->cwd);
    fs_tx_end();
    p->cwd = NULL;
  }
  spin_lock(&family_lock);
  reparent_children(p);
  if (p->parent) proc_wakeup(p->parent);
  spin_lock(&p->lock);
  p->exit_status = status;
  p->state = P_ZOMBIE;
  spin_unlock(&family_lock);
  sched_switch_out();
  panic("proc_exit: zombie %d was scheduled", p->pid);
}

// Waits for a child to exit; stores its status at status_uva unless 0.
int proc_wait(uint64 status_uva) {
  struct proc *me = current();
  spin_lock(&family_lock);
  for (;;) {
    int have_children = 0;
    for (struct proc *c = proc_table; c < &proc_table[NPROC]; c++) {
      if (c->parent != me) continue;
      have_children = 1;
      spin_lock(&c->lock);
      if (c->state == P_ZOMBIE) {
        int pid = c->pid, status = c->exit_status;
        proc_release_slot(c);
        spin_unlock(&c->lock);
        spin_unlock(&family_lock);
        // After the locks: the copy may fault a page in (core/pager.c) and sleep.
        if (status_uva && copy_out(me->pagetable, status_uva, &status, sizeof status) < 0) return -1;
        return pid;
      }
      spin_unlock(&c->lock);
    }
    if (!have_children || proc_killed(me)) {
      spin_unlock(&family_lock);
      return -1;
    }
    proc_sleep(me, &family_lock);
  }
}

int proc_kill(int pid) {
  for (struct proc *p = proc_table; p < &proc_table[NPROC]; p++) {
    spin_lock(&p->lock);
    if (p->pid == pid && p->state != P_FREE && !p->is_kthread) {
      p->killed = 1;
      if (p->state == P_SLEEPING) p->state = P_RUNNABLE;  // let it notice
      spin_unlock(&p->lock);
      return 0;
    }
    spin_unlock(&p->lock);
  }
  return -1;
}

// sbrk: grows or shrinks user memory by delta bytes; returns the old end.
int proc_grow(int64 delta) {
  struct proc *p = current();
  uint64 old = p->heap_end, new_end = old + delta;
  if (delta > 0) {
    if (new_end < old || new_end > USER_TOP) return -1;
    if (uvm_grow(p->pagetable, old, new_end, PTE_W) < 0) return -1;
  } else if (delta < 0) {
    if ((uint64)(-delta) > old) return -1;
    uvm_shrink(p->pagetable, old, new_end);
  }
  if (delta != 0) vm_user_changed(p);
  p->heap_end = new_end;
  return 0;
}

int proc_count(void) {
  int n = 0;
  for (struct proc *p = proc_table; p < &proc_table[NPROC]; p++)
    if (p->state != P_FREE) n++;
  return n;
}

