# swtch.S: swtch(save, load) stores the callee-saved registers of the
# running kernel thread into *save and resumes the one described by *load.
# Layout matches struct context in proc.h: ra, sp, s0..s11.
.globl swtch
swtch:
        sd ra, 0(a0)
        sd sp, 8(a0)
        .irp n, 0,1,2,3,4,5,6,7,8,9,10,11
        sd s\n, (16 + 8 * \n)(a0)
        .endr
        ld ra, 0(a1)
        ld sp, 8(a1)
        .irp n, 0,1,2,3,4,5,6,7,8,9,10,11
        ld s\n, (16 + 8 * \n)(a1)
        .endr
        ret
