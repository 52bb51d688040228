// trap.c: where every trap lands after the assembly vectors.
// From user mode: trampoline.S user_entry -> user_trap(): a system call
// goes to syscall_dispatch(), a device interrupt to its handler, a page
// fault to the pager (core/pager.c: a page in the store comes back),
// anything else kills the process. From kernel mode: kernelvec.S -> kernel_trap():
// only interrupts are expected; any exception is a kernel bug and panics.
#include "lib/types.h"
#include "lib/riscv.h"
#include "lib/memlayout.h"
#include "core/proc.h"
#include "core/fpu.h"
#include "proc/lifecycle.h"
#include "core/printk.h"
#include "dev/irq.h"
#include "core/timer.h"
#include "proc/trap.h"
#include "core/pager.h"

// The system call layer sits above this one: boot hands its dispatcher in.
static void (*syscall_entry)(void);

void trap_set_syscall(void (*dispatch)(void)) {
  syscall_entry = dispatch;
}

extern char trampoline[], user_entry[], user_exit[];
void kernel_vector(void);

enum irq_kind { NOT_AN_IRQ, IRQ_HANDLED, IRQ_YIELD };   // IRQ_YIELD: a tick, or a woken kernel thread

void trap_hart_init(void) {
  csr_write(stvec, (uint64)kernel_vector);
  // User mode may read the time CSR (rdtime): user clock_ns() then costs
  // no system call (~0.1 us against ~5 us under QEMU).
  csr_write(scounteren, SCOUNTEREN_TM);
  csr_set(sie, (1 << IRQ_SEXT) | (1 << IRQ_STIMER) | (1 << IRQ_SSOFT));
}

// A device interrupt whose handler woke a kernel thread (a driver's
// bottom half: the NIC's receive path) yields the interrupted process as a
// tick does, so the thread can run on this hart at once. Else a process
// spinning here (polling a CQ or a buffer) left the thread to the next
// tick (one hart) or to an idle hart, which under QEMU is a host thread
// that must first get a host core from the spinning guests: polling
// latency was 2-6 ms against 0.3 ms (bench/results/latency-notes.md).
static enum irq_kind handle_interrupt(uint64 scause) {
  if (!(scause & SCAUSE_INTR)) return NOT_AN_IRQ;
  struct cpu *c = this_cpu();
  c->woke_kthread = 0;
  switch (scause & 0xff) {
  case IRQ_SEXT:
    plic_dispatch();
    return c->woke_kthread ? IRQ_YIELD : IRQ_HANDLED;
  case IRQ_STIMER: return timer_interrupt() ? IRQ_YIELD : IRQ_HANDLED;
  case IRQ_SSOFT:                   // hart_kick: only needed to leave wfi
    csr_clear(sip, 1 << IRQ_SSOFT);
    return IRQ_HANDLED;
  default:         return NOT_AN_IRQ;
  }
}

// A user page fault the pager may resolve (the page is in the store, or
// a stale translation). 1 if the process may go on, or was already killed
// with the pager's message; 0 if it faulted for real.
static int page_fault(struct proc *p, uint64 scause, uint64 va) {
  if (scause != SCAUSE_FETCH_PAGE_FAULT && scause != SCAUSE_LOAD_PAGE_FAULT &&
      scause != SCAUSE_STORE_PAGE_FAULT)
    return 0;
  intr_on();                        // the pager sleeps on the store
  if (pager_fault(p->pagetable, va, scause == SCAUSE_STORE_PAGE_FAULT) == 0) return 1;
  return proc_killed(p);
}

void user_trap(void) {
  if (csr_read(sstatus) & SSTATUS_SPP) panic("user_trap: trap did not come from user mode");
  csr_write(stvec, (uint64)kernel_vector);
  struct proc *p = current();
  p->tf->user_pc = csr_read(sepc);
  uint64 scause = csr_read(scause);
  enum irq_kind kind = NOT_AN_IRQ;
  if (scause == SCAUSE_ECALL_U) {
    if (proc_killed(p)) proc_exit(-1);
    p->tf->user_pc += 4;            // resume after the ecall
    intr_on();
    syscall_entry();
  } else if ((kind = handle_interrupt(scause)) == NOT_AN_IRQ) {
    uint64 stval = csr_read(stval);   // before page_fault: a sleep changes the CSRs
    if (!page_fault(p, scause, stval)) {
      kprintf("pid %d (%s): killed by fault scause %p sepc %p stval %p\n",
              p->pid, p->name, scause, p->tf->user_pc, stval);
      proc_set_killed(p);
    }
  }
  if (proc_killed(p)) proc_exit(-1);
  pager_user_trap();                // gives pages back if an allocation waits for them
  if (kind == IRQ_YIELD) proc_yield();
  user_trap_return();
}

void user_trap_return(void) {
  struct proc *p = current();
  intr_off();                       // stvec points to user code from here
  csr_write(stvec, TRAMPOLINE + (user_entry - trampoline));
  struct cpu *c = this_cpu();       // the scheduler's vm_load; no CSR read (QEMU: costly)
  if (c->vm_root != p->pagetable || c->vm_gen != p->vm_gen)
    panic("user_trap_return: this hart is not on pid %d's current table", p->pid);
  p->tf->kernel_sp = p->kstack_top;
  p->tf->kernel_trap = (uint64)user_trap;
  p->tf->kernel_hartid = hart_id();
  fpu_enter_user(p);
  uint64 st = csr_read(sstatus);
  csr_write(sstatus, (st & ~SSTATUS_SPP) | SSTATUS_SPIE);
  csr_write(sepc, p->tf->user_pc);
  void (*exit_to_user)(void) = (void (*)(void))(TRAMPOLINE + (user_exit - trampoline));
  exit_to_user();
  __builtin_unreachable();
}

// A tick does not take the hart from a kernel thread (a bottom half: the
// NIC's receive thread, the RDMA engine) that got it less than a whole
// tick ago. Yielded mid-pass, it was left RUNNABLE while the scheduler's
// round robin handed the hart to a process spinning in user mode (polling
// a CQ), and what the thread was taking in waited for the next tick:
// one-vCPU 64 B READs, polling, stalled one tick after a burst of
// responses, 14-20 times a second (with a 5 ms tick the stalls were 5 ms).
// A thread that keeps running is preempted at its second tick, so it
// cannot starve processes; an interrupt that woke another kernel thread
// still yields (woke_kthread).
// (kernel/selftest.c checks both halves, counting p->ticks_kept.)
static int kthread_keeps_hart(struct proc *p) {
  if (!p->is_kthread || this_cpu()->woke_kthread) return 0;
  if (clock_ticks() - p->run_from >= KTHREAD_HOLD_TICKS) return 0;
  p->ticks_kept++;
  return 1;
}

// sepc and sstatus are saved because a yield lets other traps overwrite them.
// sstatus.FS is not restored: it describes this hart's FP registers, which
// a yield may have saved and handed to another process (fpu.c); writing back
// the Dirty seen before the yield would make the next switch save another
// process's registers as this one's.
void kernel_trap(void) {
  uint64 sepc = csr_read(sepc), sstatus = csr_read(sstatus), scause = csr_read(scause);
  if (!(sstatus & SSTATUS_SPP)) panic("kernel_trap: trap came from user mode");
  if (intr_enabled()) panic("kernel_trap: interrupts enabled in a trap");
  enum irq_kind kind = handle_interrupt(scause);
  if (kind == NOT_AN_IRQ)
    panic("kernel trap: scause %p sepc %p stval %p", scause, sepc, csr_read(stval));
  struct proc *p = this_cpu()->running;
  if (kind == IRQ_YIELD && p && p->state == P_RUNNING && !kthread_keeps_hart(p))
    proc_yield();
  csr_write(sepc, sepc);
  uint64 fs_now = csr_read(sstatus) & SSTATUS_FS_MASK;
  csr_write(sstatus, (sstatus & ~SSTATUS_FS_MASK) | fs_now);
}
