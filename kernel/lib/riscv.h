// riscv.h: RISC-V privileged-architecture helpers (CSR access, Sv39 PTE
// bits, page arithmetic). Facts come from the RISC-V privileged spec.
// Everything here is static inline or a macro; any file may include it.
#ifndef RISCV_H
#define RISCV_H
#include "lib/types.h"

// CSR access by name or by number (for CSRs older assemblers don't know).
#define csr_read(csr) ({ uint64 v_; asm volatile("csrr %0, " #csr : "=r"(v_)); v_; })
#define csr_write(csr, val) asm volatile("csrw " #csr ", %0" :: "r"((uint64)(val)))
#define csr_set(csr, bits) asm volatile("csrs " #csr ", %0" :: "r"((uint64)(bits)))
#define csr_clear(csr, bits) asm volatile("csrc " #csr ", %0" :: "r"((uint64)(bits)))

#define CSR_MENVCFG  0x30a   // menvcfg: bit 63 STCE lets S-mode use stimecmp
#define CSR_STIMECMP 0x14d   // Sstc: supervisor timer compare

// mstatus / sstatus fields
#define MSTATUS_MPP_MASK (3ULL << 11)
#define MSTATUS_MPP_S    (1ULL << 11)
#define SSTATUS_SPP      (1ULL << 8)   // previous mode was S
#define SCOUNTEREN_TM    (1ULL << 1)   // U mode may read the time CSR
#define SSTATUS_SPIE     (1ULL << 5)
#define SSTATUS_SIE      (1ULL << 1)
#define SSTATUS_SUM      (1ULL << 18)
#define SSTATUS_FS_MASK  (3ULL << 13)  // FP state: Off, Initial, Clean, Dirty
#define SSTATUS_FS_CLEAN (2ULL << 13)
#define SSTATUS_FS_DIRTY (3ULL << 13)

// Interrupt bits in sie/sip/mideleg, and scause codes.
#define IRQ_SSOFT  1
#define IRQ_STIMER 5
#define IRQ_SEXT   9
#define SCAUSE_INTR (1ULL << 63)
#define SCAUSE_ECALL_U 8
#define SCAUSE_FETCH_PAGE_FAULT 12
#define SCAUSE_LOAD_PAGE_FAULT  13
#define SCAUSE_STORE_PAGE_FAULT 15

#define MENVCFG_STCE (1ULL << 63)
#define SATP_SV39 (8ULL << 60)
#define MAKE_SATP(pt) (SATP_SV39 | (((uint64)(pt)) >> 12))

// Sv39 page-table entries
#define PGSIZE 4096
#define PGSHIFT 12
#define PG_ROUND_UP(a)   (((a) + PGSIZE - 1) & ~(uint64)(PGSIZE - 1))
#define PG_ROUND_DOWN(a) ((a) & ~(uint64)(PGSIZE - 1))
#define PTE_V (1L << 0)
#define PTE_R (1L << 1)
#define PTE_W (1L << 2)
#define PTE_X (1L << 3)
#define PTE_U (1L << 4)
#define PTE_A (1L << 6)
#define PTE_D (1L << 7)
#define PTE_LEAF_BITS (PTE_R | PTE_W | PTE_X)
#define PA_TO_PTE(pa) ((((uint64)(pa)) >> 12) << 10)
#define PTE_TO_PA(pte) (((pte) >> 10) << 12)
#define PTE_FLAGS(pte) ((pte) & 0x3FF)
#define VPN_INDEX(va, level) ((((uint64)(va)) >> (PGSHIFT + 9 * (level))) & 0x1FF)

// One below the top of Sv39's lower half: user and kernel high mappings
// live below MAXVA so no address needs sign extension.
#define MAXVA (1ULL << 38)

static inline uint64 read_tp(void) { uint64 x; asm volatile("mv %0, tp" : "=r"(x)); return x; }
static inline void write_tp(uint64 x) { asm volatile("mv tp, %0" :: "r"(x)); }
static inline void sfence_vma(void) { asm volatile("sfence.vma zero, zero"); }
static inline uint64 read_time(void) { return csr_read(time); }

static inline void intr_on(void)  { csr_set(sstatus, SSTATUS_SIE); }
static inline void intr_off(void) { csr_clear(sstatus, SSTATUS_SIE); }
static inline int intr_enabled(void) { return (csr_read(sstatus) & SSTATUS_SIE) != 0; }
// Interrupts off; returns whether they were on. One csrrci instead of a
// read and a clear: under QEMU each CSR access ends a translated block.
static inline int intr_off_was_on(void) {
  uint64 old;
  asm volatile("csrrci %0, sstatus, %1" : "=r"(old) : "i"(SSTATUS_SIE));
  return (old & SSTATUS_SIE) != 0;
}

#endif
