// memlayout.h: physical addresses of QEMU virt devices and RAM, and the
// fixed virtual addresses the kernel uses (trampoline, trap frame, kernel
// stacks). Drivers take their base addresses from here, through KDEV().
//
// Virtual layout (Sv39, one root entry = 1 GiB). Every process's page
// table also maps the whole kernel, so a system call or interrupt runs on
// it without switching satp (under QEMU each switch flushes the TLB):
//   root entry 0      [0, USER_TOP)   the process's memory (PTE_U)
//   root entry 1      PCI MMIO, one-to-one          }
//   root entry 2      RAM, one-to-one               } the kernel's: shared
//   root entry 253    devices below 1 GiB (KDEV)    } by every page table
//   root entry 254    kernel stacks                 }
//   root entry 255    trampoline, and a process's trap frame (per table)
#ifndef MEMLAYOUT_H
#define MEMLAYOUT_H

#define TEST_FINISHER 0x00100000ULL   // sifive test device: poweroff / fail
#define CLINT_BASE    0x02000000ULL   // only its msip words: cross-hart wakeups
#define CLINT_MSIP(hart) (CLINT_BASE + 4 * (hart))
#define CLINT_MTIMECMP(hart) (CLINT_BASE + 0x4000 + 8 * (hart))   // prof.c's sampling timer
#define CLINT_MTIME   (CLINT_BASE + 0xbff8)
#define PLIC_BASE     0x0c000000ULL
#define PLIC_SIZE     0x00400000ULL
#define UART0_BASE    0x10000000ULL
#define UART0_IRQ     10
#define VIRTIO_MMIO_BASE  0x10001000ULL   // 8 slots, 4 KiB apart
#define VIRTIO_MMIO_SLOTS 8
#define VIRTIO_MMIO_IRQ0  1               // slot i raises IRQ 1 + i
#define PCI_ECAM_BASE 0x30000000ULL
#define PCI_ECAM_SIZE 0x10000000ULL       // 256 MiB
#define PCI_MMIO_BASE 0x40000000ULL
#define PCI_MMIO_SIZE 0x40000000ULL       // 1 GiB

#define USER_TOP (1ULL << 30)            // user memory ends here (root entry 0)

// Once paging is on, the kernel reaches the devices below 1 GiB (root
// entry 0 belongs to user memory) at KDEV_ALIAS + pa. Before that, KDEV
// is the physical address: kdev_offset is 0 until vm.c turns paging on.
// Machine-mode code (mstart.c, machinevec.S) always uses physical ones.
#define KDEV_ALIAS (253ULL << 30)
#ifndef __ASSEMBLER__
extern unsigned long long kdev_offset;
#define KDEV(pa) ((pa) + kdev_offset)
#endif

#define RAM_BASE 0x80000000ULL
#define RAM_SIZE (128ULL * 1024 * 1024)
#define RAM_END  (RAM_BASE + RAM_SIZE)

// Top of every address space: the trampoline page (user<->kernel switch
// code), then each process's trap frame just below it in user tables.
#define TRAMPOLINE (MAXVA - PGSIZE)
#define TRAPFRAME  (TRAMPOLINE - PGSIZE)

// Kernel stacks fill root entry 254 downwards from its top, each followed
// (downwards) by an unmapped guard page that catches overflow.
#define KSTACK_REGION_TOP (255ULL << 30)
#define KSTACK_PAGES 4         // 16 KiB: room for deep driver and RDMA paths
#define KSTACK_STRIDE ((KSTACK_PAGES + 1) * PGSIZE)
#define KSTACK_TOP(slot) (KSTACK_REGION_TOP - (slot) * KSTACK_STRIDE)
#define KSTACK_BASE(slot) (KSTACK_TOP(slot) - KSTACK_PAGES * PGSIZE)

#endif
