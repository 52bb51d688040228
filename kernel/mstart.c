// mstart.c: the only machine-mode C code. Each hart configures delegation,
// physical memory protection, counter access and the Sstc timer, then
// mret's into kernel_main() in supervisor mode. Machine mode never runs
// again, except for machine_vector (machinevec.S), which forwards a
// cross-hart wakeup (CLINT software interrupt) to S-mode and takes the
// profiler's samples (CLINT timer, off unless booted with prof=N). Every other trap
// and interrupt goes to S-mode directly, and the S-mode timer is stimecmp
// (Sstc, present in QEMU 7.2's rv64 CPU), so no M-mode timer handler is
// needed.
#include "lib/types.h"
#include "lib/riscv.h"
#include "lib/param.h"

void kernel_main(void);
void machine_vector(void);
__attribute__((aligned(16))) char boot_stacks[BOOT_STACK_SIZE * NCPU];
static uint64 machine_scratch[NCPU][3];   // machine_vector's register save area
uint64 boot_dtb;     // device-tree blob address QEMU passed to hart 0
int sstc_missing;    // the CPU has no Sstc: the kernel cannot keep time

void machine_start(uint64 hartid, uint64 dtb) {
  if (hartid >= NCPU)
    for (;;) asm volatile("wfi");
  if (hartid == 0) boot_dtb = dtb;
  uint64 ms = csr_read(mstatus);
  csr_write(mstatus, (ms & ~MSTATUS_MPP_MASK) | MSTATUS_MPP_S);
  csr_write(mepc, (uint64)kernel_main);
  csr_write(satp, 0);
  csr_write(medeleg, 0xffff);
  csr_write(mideleg, (1 << IRQ_SSOFT) | (1 << IRQ_STIMER) | (1 << IRQ_SEXT));
  csr_write(pmpaddr0, 0x3fffffffffffffULL);   // S/U may access all memory
  csr_write(pmpcfg0, 0xf);                     // TOR, R|W|X
  csr_write(mcounteren, 0x7);                  // S may read cycle/time/instret
  csr_set(0x30a, MENVCFG_STCE);                // menvcfg.STCE: enable stimecmp
  if (csr_read(0x30a) & MENVCFG_STCE)
    csr_write(0x14d, ~0ULL);                   // stimecmp: no deadline yet
  else
    sstc_missing = 1;                          // kernel_main reports it
  csr_write(mscratch, (uint64)machine_scratch[hartid]);
  csr_write(mtvec, (uint64)machine_vector);
  csr_set(mie, 1 << 3 | 1 << 7);               // MSIE: wakeups from other harts; MTIE: prof.c
  write_tp(hartid);
  asm volatile("mret");
}
