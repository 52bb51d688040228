# entry.S: first instructions of every hart. QEMU (-bios none) jumps here
# in machine mode with a0 = hart id and a1 = device-tree address. Each
# hart takes its own BOOT_STACK_SIZE slice of boot_stacks and calls
# machine_start(hartid, dtb) in mstart.c, which drops to supervisor mode.
.section .text.entry
.globl _start
_start:
        la   sp, boot_stacks
        li   t0, 16384            # BOOT_STACK_SIZE (param.h)
        addi t1, a0, 1
        mul  t0, t0, t1
        add  sp, sp, t0           # sp = top of this hart's slice
        call machine_start
park:
        wfi
        j    park
