# trampoline.S: the page mapped at TRAMPOLINE in every address space, so
# the code keeps running while satp switches between user and kernel
# tables. The trap frame (struct trapframe in proc.h) is at TRAPFRAME:
#   0 kernel_satp, 8 kernel_sp, 16 kernel_trap, 24 user_pc, 32 hartid,
#   40 + 8*n saved register xn.
#
# user_entry: stvec while in user mode. Saves every user register, loads
#   the kernel's sp/tp/satp and jumps to user_trap() (trap.c).
# user_exit(satp): switches to the user table, restores registers, sret.
#   trap.c jumps here through its trampoline address.
# One sfence.vma after each satp write, none before: nothing between the
# two can use a stale translation, and under QEMU every sfence.vma (and
# satp write) flushes the whole software TLB, which a system call then
# refills page by page.
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
        sd   x\n, (40 + 8 * \n)(a0)
        .endr
        csrr t0, sscratch
        sd   t0, (40 + 8 * 10)(a0)       # user a0
        ld   sp, 8(a0)
        ld   tp, 32(a0)
        ld   t0, 16(a0)
        ld   t1, 0(a0)
        csrw satp, t1
        sfence.vma zero, zero            # drop the user table's translations (one ASID for all)
        jr   t0                          # user_trap() does not return here

.globl user_exit
user_exit:
        csrw satp, a0
        sfence.vma zero, zero            # also orders the kernel's page-table stores before use
        li   a0, TRAPFRAME_VA
        .irp n, 1,2,3,4,5,6,7,8,9,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
        ld   x\n, (40 + 8 * \n)(a0)
        .endr
        ld   a0, (40 + 8 * 10)(a0)
        sret
