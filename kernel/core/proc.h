// proc.h: harts (struct cpu), processes and kernel threads (struct proc).
// sched.c owns the process table, the per-hart scheduler, sleep/wakeup,
// preemption and the kill flag; proc/lifecycle.c owns fork/exit/wait/kill
// and exit hooks (proc/lifecycle.h); proc/kthread.c starts kernel threads.
#ifndef PROC_H
#define PROC_H
#include "lib/types.h"
#include "lib/param.h"
#include "core/lock.h"
#include "core/fpu.h"

// Callee-saved registers kept across a context switch (swtch.S).
struct context {
  uint64 ra, sp;
  uint64 s[12];
};

// Saved user state, one page per process, mapped at TRAPFRAME in the user
// page table. trampoline.S relies on these offsets: do not reorder.
struct trapframe {
  uint64 kernel_sp;     //  0: top of this process's kernel stack
  uint64 kernel_trap;   //  8: address of user_trap()
  uint64 user_pc;       // 16: sepc of the trapping instruction
  uint64 kernel_hartid; // 24: restored into tp
  uint64 regs[32];      // 32: x0..x31 by register number (regs[0] unused)
};
#define REG_SP 2
#define REG_A0 10
#define REG_A1 11
#define REG_A7 17

struct cpu {
  struct proc *running;       // process on this hart, or NULL
  struct context sched_ctx;   // swtch here to enter the scheduler loop
  int intr_depth;             // intr_push nesting
  int intr_was_on;            // interrupts enabled before the first push
  volatile int idle;          // in the scheduler with nothing to run
  uint64 idle_ns;             // time spent in wfi with nothing to run (sched_idle_ns)
  pagetable_t vm_root;        // the table in satp, and the generation
  uint64 vm_gen;              // of its user part when loaded (vm.c)
  struct proc *fp_owner;      // whose FP state the FP registers hold (fpu.c)
  int woke_kthread;           // a wakeup on this hart made a kernel thread runnable (trap.c)
};

enum proc_state { P_FREE, P_EMBRYO, P_RUNNABLE, P_RUNNING, P_SLEEPING, P_ZOMBIE };

// A tick takes the hart from a kernel thread only once this many ticks
// began since it got it (trap.c kthread_keeps_hart): ticks before that
// leave it the hart, at most KTHREAD_HOLD_TICKS of them.
#define KTHREAD_HOLD_TICKS 2

struct proc {
  struct spinlock lock;
  // under lock:
  enum proc_state state;
  void *wait_chan;           // what a P_SLEEPING process waits for
  int killed;
  int exit_status;
  int pid;
  // under family_lock (proc/lifecycle.c):
  struct proc *parent;
  // private to the process itself (or its creator before it runs):
  int slot;                  // index in the table; picks the kernel stack
  int is_kthread;            // kernel-only: no user memory, no trap frame
  uint64 run_from;           // the tick (clock_ticks) it last got a hart (sched.c run_pass)
  uint64 ticks_kept;         // kernel thread: ticks that left it its hart (trap.c)
  uint64 kstack_top;
  uint64 heap_end;           // user memory is [0, heap_end)
  uint64 nsyscalls;          // system calls made (SYS_syscount), 0 at a free slot
  void (*kthread_fn)(void *); // kthreads: body and its argument
  void *kthread_arg;
  pagetable_t pagetable;     // root while the slot has user memory, else NULL
  pagetable_t root;          // this slot's root table, kept for good (vm.h)
  uint64 vm_gen;             // bumped on every change of the user mappings
  struct trapframe *tf;
  struct context ctx;
  struct fpu_state fp;       // user FP registers while not on a hart (fpu.c)
  int fp_hart;               // hart holding the latest fp, or -1
  struct file *ofile[NOFILE];
  struct inode *cwd;
  char name[16];
};

extern struct cpu cpus[NCPU];
extern int ncpu_started;

// Precondition for both: interrupts off (else the hart may change under us).
static inline int hart_id(void) { uint64 x; asm volatile("mv %0, tp" : "=r"(x)); return (int)x; }
static inline struct cpu *this_cpu(void) { return &cpus[hart_id()]; }
struct proc *current(void);

// sched.c: the process table, scheduling, sleep/wakeup, the kill flag
extern struct proc proc_table[NPROC];
int  proc_killed(struct proc *p);
void proc_set_killed(struct proc *p);
void proc_dump(void);                   // ^P: a lock-free snapshot
void scheduler(void) __attribute__((noreturn));
void sched_switch_out(void);            // caller holds p->lock, state set
void proc_yield(void);
void proc_sleep(void *chan, struct spinlock *lk);
void proc_wakeup(void *chan);
uint64 sched_idle_ns(void);              // every hart's idle time, summed
void kick_idle_hart(void);               // after making something runnable
void hart_kick(int hart);                // a cross-hart interrupt: leaves wfi (sched.c)
void swtch(struct context *save, struct context *load);

#endif
