# trampoline.S: the page mapped at TRAMPOLINE in every address space,
# where stvec points while a process runs in user mode. The trap frame
# (struct trapframe in proc.h) is at TRAPFRAME:
#   0 kernel_sp, 8 kernel_trap, 16 user_pc, 24 hartid,
#   32 + 8*n saved register xn.
#
# user_entry: stvec while in user mode. Saves every user register, loads
#   the kernel's sp/tp and jumps to user_trap() (trap.c).
# user_exit: restores registers, sret. trap.c jumps here through its
#   trampoline address.
# Neither touches satp: the process's table maps the kernel too (vm.h),
# and under QEMU every satp write or sfence.vma flushes the whole software
# TLB, which a system call would then refill page by page.
#define TRAPFRAME_VA 0x3fffffe000   /* TRAPFRAME in memlayout.h */
.section .trampoline, "ax"
.balign 4096
.globl trampoline
trampoline:
.globl user_entry
user_entry:
        csrw sscratch, a0                # free a0 to address the trap frame
        li   a0, TRAPFRAME_VA
        .irp n, 1,2,3,4,5,6,7,8,9,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
        sd   x\n, (32 + 8 * \n)(a0)
        .endr
        csrr t0, sscratch
        sd   t0, (32 + 8 * 10)(a0)       # user a0
        ld   sp, 0(a0)
        ld   tp, 24(a0)
        ld   t0, 8(a0)
        jr   t0                          # user_trap() does not return here

.globl user_exit
user_exit:
        li   a0, TRAPFRAME_VA
        .irp n, 1,2,3,4,5,6,7,8,9,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
        ld   x\n, (32 + 8 * \n)(a0)
        .endr
        ld   a0, (32 + 8 * 10)(a0)
        sret
