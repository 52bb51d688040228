# machinevec.S: the only machine-mode trap handler. Two jobs:
#  - a machine software interrupt (another hart wrote our CLINT msip word
#    to wake us, see hart_kick in sched.c) becomes a supervisor software
#    interrupt: clear msip, set mip.SSIP, mret;
#  - a machine timer interrupt is the sampling profiler's tick (prof.c):
#    it fires even while S-mode runs with interrupts off, records mepc in
#    prof_ring (bit 0 set for a user pc), and re-arms mtimecmp prof_period
#    time units later; with prof_period 0 it just silences the timer.
# Everything else is delegated to S-mode, so nothing else can arrive here.
# mscratch points at a three-word save area per hart (mstart.c).
.globl machine_vector
.balign 4
machine_vector:
        csrrw sp, mscratch, sp
        sd   t0, 0(sp)
        sd   t1, 8(sp)
        sd   t2, 16(sp)
        csrr t0, mcause
        andi t0, t0, 0xff
        li   t1, 7                    # machine timer interrupt
        beq  t0, t1, sample
        csrr t0, mhartid
        slli t0, t0, 2
        li   t1, 0x2000000            # CLINT_BASE: msip words, 4 bytes per hart
        add  t0, t0, t1
        sw   zero, 0(t0)
        li   t0, 2                    # SSIP
        csrs mip, t0
        j    out
sample:
        csrr t0, mhartid
        slli t0, t0, 3
        li   t1, 0x2004000            # CLINT mtimecmp, 8 bytes per hart
        add  t1, t1, t0
        la   t2, prof_period
        ld   t2, 0(t2)
        bnez t2, 1f
        li   t0, -1                   # profiler off: no more timer interrupts
        sd   t0, 0(t1)
        j    out
1:      li   t0, 0x200bff8            # CLINT mtime
        ld   t0, 0(t0)
        add  t0, t0, t2
        sd   t0, 0(t1)
        la   t1, prof_next
        li   t0, 1
        amoadd.d t2, t0, (t1)         # t2 = this sample's slot number
        li   t0, 65535                # PROF_RING - 1
        and  t2, t2, t0
        slli t2, t2, 3
        la   t1, prof_ring
        add  t1, t1, t2
        csrr t0, mstatus
        srli t0, t0, 11
        andi t0, t0, 3                # MPP: 0 = the sample interrupted user mode
        csrr t2, mepc
        bnez t0, 2f
        ori  t2, t2, 1
2:      sd   t2, 0(t1)
out:
        ld   t0, 0(sp)
        ld   t1, 8(sp)
        ld   t2, 16(sp)
        csrrw sp, mscratch, sp
        mret
