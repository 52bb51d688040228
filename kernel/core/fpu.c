// fpu.c: user processes' floating-point registers (f0-f31, fcsr) across
// context switches.
//
// Save when dirty, restore when needed. sstatus.FS tracks whether the
// registers changed since they were last loaded or saved (the hardware
// sets Dirty on any FP write). A process's registers are saved into
// p->fp when it leaves its hart with FS Dirty (sched_switch_out), and
// loaded from p->fp on the way to user mode only when this hart's
// registers do not already hold them: cpu->fp_owner names the process
// whose state the hart holds and p->fp_hart the hart that holds p's
// latest state, so a process that ran elsewhere since, a new image (exec)
// or a new child (fork, fp_hart -1) is reloaded. A process that traps and
// returns without a switch costs nothing; a switch costs a save only if
// the process used FP. Kernel threads run with whatever the hart holds and
// never touch it.
#include "lib/types.h"
#include "lib/riscv.h"
#include "lib/klib.h"
#include "core/proc.h"
#include "core/fpu.h"

#define FPU_NO_HART (-1)

static void fregs_save(struct fpu_state *s)
{
  uint64 fcsr;
  asm volatile(".irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31\n"
               "fsd f\\n, (8 * \\n)(%1)\n"
               ".endr\n"
               "frcsr %0\n"
               : "=r"(fcsr) : "r"(s->f) : "memory");
  s->fcsr = fcsr;
}

static void fregs_load(const struct fpu_state *s)
{
  asm volatile(".irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31\n"
               "fld f\\n, (8 * \\n)(%0)\n"
               ".endr\n"
               "fscsr %1\n"
               : : "r"(s->f), "r"(s->fcsr) : "memory");
}

static void fs_set(uint64 fs)
{
  csr_clear(sstatus, SSTATUS_FS_MASK);
  csr_set(sstatus, fs);
}

// Precondition: p is the process running on this hart, in the kernel.
static void save_if_dirty(struct proc *p)
{
  if ((csr_read(sstatus) & SSTATUS_FS_MASK) == SSTATUS_FS_DIRTY) {
    fregs_save(&p->fp);
    fs_set(SSTATUS_FS_CLEAN);
  }
}

void fpu_exec_reset(struct proc *p)
{
  memset(&p->fp, 0, sizeof p->fp);
  p->fp_hart = FPU_NO_HART;
}

// Precondition: parent is the process running on this hart (in fork).
// Interrupts go off for the save: a switch in the middle would leave
// another process's registers in the second half.
void fpu_fork(struct proc *parent, struct proc *child)
{
  intr_push();
  save_if_dirty(parent);
  intr_pop();
  child->fp = parent->fp;
  child->fp_hart = FPU_NO_HART;
}

// Precondition: p is leaving this hart (interrupts off, in sched_switch_out).
void fpu_switch_out(struct proc *p)
{
  if (!p->is_kthread)
    save_if_dirty(p);
}

// Precondition: interrupts off, p about to return to user mode here.
// FS Off means this hart's FP registers were never loaded: load them.
void fpu_enter_user(struct proc *p)
{
  struct cpu *c = this_cpu();
  int hart = hart_id();
  if (c->fp_owner == p && p->fp_hart == hart &&
      (csr_read(sstatus) & SSTATUS_FS_MASK) != 0)
    return;
  fs_set(SSTATUS_FS_CLEAN);   // FP instructions legal; the loads leave it Clean
  fregs_load(&p->fp);
  fs_set(SSTATUS_FS_CLEAN);
  c->fp_owner = p;
  p->fp_hart = hart;
}
