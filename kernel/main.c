// main.c: supervisor-mode boot. Hart 0 initializes every subsystem in
// dependency order and creates the first process; the other harts wait
// for it, then set up their own page-table register, trap vector, PLIC
// context and timer. Every hart ends in scheduler().
#include "lib/types.h"
#include "lib/riscv.h"
#include "lib/param.h"
#include "core/lock.h"
#include "core/proc.h"
#include "proc/lifecycle.h"
#include "core/printk.h"
#include "core/pmem.h"
#include "core/vm.h"
#include "core/pager.h"
#include "proc/trap.h"
#include "sys/syscall.h"
#include "dev/irq.h"
#include "core/timer.h"
#include "dev/console.h"
#include "dev/uart.h"
#include "fs/buf.h"
#include "fs/blkdev.h"
#include "fs/fs.h"
#include "fs/file.h"
#include "lib/bootarg.h"
#include "rmem/rmem_client.h"
#include "selftest.h"
#include "core/prof.h"
#include "lib/memlayout.h"
#include "rdma/rdma.h"
#include "dev/pci.h"
#include "net/net.h"
#include "dev/random.h"

extern uint64 boot_dtb;
extern int sstc_missing;
static volatile int boot_done;

// Paging is already on (kvm_hart_init): devices are reached at KDEV.
static void hart_local_init(void) {
  trap_hart_init();
  plic_hart_init();
  timer_hart_init();
  __sync_fetch_and_add(&ncpu_started, 1);
}

static void boot_hart0(void) {
  console_init();
  printk_init(uart_putc_sync);
  trap_set_syscall(syscall_dispatch);
  if (sstc_missing) panic("CPU lacks the Sstc extension (stimecmp); QEMU 7.1 or newer needed");
  fdt_scan(boot_dtb);           // before pmem_init hands the DTB's RAM out
  kprintf("\nxv6-rdma kernel booting (bootargs \"%s\")\n", bootargs_all());
  pmem_init();
  pager_init();
  kvm_init();
  proc_table_init();            // maps kernel stacks into the kernel table
  kvm_hart_init();              // paging on: the drivers below map their devices at KDEV
  timer_init(fdt_timebase_hz());
  kprintf("timebase %d Hz\n", (int)fdt_timebase_hz());
  prof_init(fdt_timebase_hz());
  irq_register(UART0_IRQ, uart_interrupt, NULL);
  bcache_init();
  inode_table_init();
  file_table_init();
  blk_init();
  random_init();                // virtio-rng and ChaCha20: before anything draws keys or ports
  proc_start_init();
  pci_init();
  net_init();                   // E1000 on PCI (kthreads: after init exists); else no network
  sysnet_init();
  hart_local_init();
  selftest_start();
  rdma_init();                  // RDMA verbs device and its engine thread
  rdma_mr_selftest();           // the MR contract (kernel/transport/mr_contract.h)
  rmem_client_init();           // rmem=IP[:PORT]: the memory node's client (kernel/rmem)
  // The kernel as an RDMA consumer (kernel/rdma/kverbs.h); then the memory
  // node's client may make its objects (a thread connects; boot goes on).
  selftest_kverbs_start(rmem_client_start);
  selftest_pager_start();       // TEST-ONLY in-RAM paging store, boot argument pagertest=N only
  kprintf("hart 0 up: %d free pages of %d\n", (int)pmem_free_pages(), (int)pmem_total_pages());
  __sync_synchronize();
  boot_done = 1;
}

void kernel_main(void) {
  if (hart_id() == 0) {
    boot_hart0();
  } else {
    while (!boot_done)
      ;
    __sync_synchronize();
    kvm_hart_init();
    hart_local_init();
  }
  scheduler();
}
