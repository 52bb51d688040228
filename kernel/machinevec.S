# machinevec.S: the only machine-mode trap handler. Its one job is to turn
# a machine software interrupt (another hart wrote our CLINT msip word to
# wake us, see hart_kick in sched.c) into a supervisor software interrupt:
# clear msip, set mip.SSIP, mret. Everything else is delegated to S-mode,
# so nothing else can arrive here.
# mscratch points at a two-word save area per hart (mstart.c).
.globl machine_vector
.balign 4
machine_vector:
        csrrw sp, mscratch, sp
        sd   t0, 0(sp)
        sd   t1, 8(sp)
        csrr t0, mhartid
        slli t0, t0, 2
        li   t1, 0x2000000            # CLINT_BASE: msip words, 4 bytes per hart
        add  t0, t0, t1
        sw   zero, 0(t0)
        li   t0, 2                    # SSIP
        csrs mip, t0
        ld   t0, 0(sp)
        ld   t1, 8(sp)
        csrrw sp, mscratch, sp
        mret
