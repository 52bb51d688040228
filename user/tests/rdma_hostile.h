// rdma_hostile.h: the hostile inputs rdmahostile and rdmafuzz share.
//
// Owns the list of addresses no system call may accept as the caller's
// memory: null and near-null, unmapped memory past the break, the kernel's
// RAM and devices (mapped in every page table without PTE_U, see
// kernel/lib/memlayout.h), the kernel stacks, the trap frame and trampoline at
// the top of the user range, MAXVA and beyond, and the last bytes below
// 2^64 (any length wraps).
#ifndef RDMA_HOSTILE_H
#define RDMA_HOSTILE_H

#define HOSTILE_PG 4096UL
#define HOSTILE_MAXVA (1UL << 38)    // one past the highest user address (Sv39)
#define HOSTILE_NBAD 17

// Fills out[HOSTILE_NBAD]; call it after the break has its final size.
static inline void hostile_bad_addrs(unsigned long *out) {
  unsigned long brk = ((unsigned long)sbrk(0) + HOSTILE_PG - 1) & ~(HOSTILE_PG - 1);
  const unsigned long list[HOSTILE_NBAD] = {
    0, 8, brk, brk + 16 * HOSTILE_PG,
    0x80000000UL, 0x80201000UL,                        // RAM_BASE: the kernel's text and data
    0x40000000UL,                                      // PCI MMIO, one-to-one
    (253UL << 30) + 0x10000000UL,                      // KDEV_ALIAS + UART0
    (255UL << 30) - HOSTILE_PG, (254UL << 30) + 64,    // kernel stacks
    HOSTILE_MAXVA - 2 * HOSTILE_PG, HOSTILE_MAXVA - HOSTILE_PG,   // trap frame, trampoline
    HOSTILE_MAXVA - 8, HOSTILE_MAXVA, 1UL << 63,
    0xfffffffffffff000UL, 0xfffffffffffffff0UL,
  };
  for (int i = 0; i < HOSTILE_NBAD; i++) out[i] = list[i];
}

#endif
