# kernelvec.S: stvec while running in the kernel. Saves all registers on
# the current kernel stack, calls kernel_trap() (trap.c), restores, sret.
# A timer interrupt may make kernel_trap yield; we come back here later,
# possibly on another hart, which is why tp is not restored.
.globl kernel_vector
.balign 4
kernel_vector:
        addi sp, sp, -256
        .irp n, 1,3,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
        sd   x\n, (8 * \n)(sp)
        .endr
        call kernel_trap
        .irp n, 1,3,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
        ld   x\n, (8 * \n)(sp)
        .endr
        addi sp, sp, 256
        sret
