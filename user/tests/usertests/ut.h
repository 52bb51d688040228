// ut.h: what the usertests modules share.
//
// A test is a function that returns normally on success and fails through
// TR_CHECK (user/tests/testrun.h). The shared runner runs each test in its own
// child process, so a test may crash, leak, or exit freely. Each module
// (proc.c, mem.c, ...) exports a table of its tests ending with an entry
// whose name is NULL; main.c lists the tables.
#ifndef UT_H
#define UT_H

#include "user/lib/c/user.h"
#include "user/tests/testrun.h"

#define PGSIZE     4096L
#define PGROUNDUP(a) (((a) + PGSIZE - 1) & ~(PGSIZE - 1))
#define MAXVA      (1UL << 38)   // one past the highest user address (Sv39)
#define KERNBASE   0x80000000UL  // where the kernel's RAM mapping starts
// Other kernel regions in every process's own page table (memlayout.h),
// none of them with PTE_U: PCI MMIO, the device alias (its UART page)
// and the kernel stacks' region (its top page).
#define KPCI_MMIO  0x40000000UL
#define KDEV_UART  ((253UL << 30) + 0x10000000UL)
#define KSTACK_TOP_PAGE ((255UL << 30) - PGSIZE)
#define MS         1000000UL     // nanoseconds per millisecond

// The module tables (each ends with a { NULL } entry).
extern const struct tr_case ut_proc_tests[], ut_mem_tests[],
  ut_badptr_tests[], ut_fd_tests[], ut_pipe_tests[], ut_fs_tests[],
  ut_time_tests[], ut_sys_tests[], ut_smp_tests[], ut_exec_tests[],
  ut_libc_tests[], ut_badptr_ext_tests[], ut_net_tests[], ut_fpu_tests[],
  ut_poll_tests[], ut_libc_posix_tests[];

// Helpers (helpers.c). Each fails the test itself when the system call it
// wraps fails unexpectedly, so tests stay short.
unsigned long ut_freepages(void);
unsigned int ut_nproc(void);
unsigned long ut_settle_freepages(unsigned long baseline);
unsigned int ut_settle_nproc(unsigned int baseline);
int ut_fork(void);
int ut_wait_for(int pid);
unsigned long ut_now_ms(void);
void ut_write_file(const char *path, const void *data, int n);
int ut_read_file(const char *path, void *buf, int size);
int ut_run_capture(char **argv, char *out, int size, int *out_len);
// Execs path in a child; returns UT_EXEC_REFUSED if exec returned -1.
// If exec wrongly succeeds, the program's own exit status comes back.
#define UT_EXEC_REFUSED 42
int ut_exec_status(const char *path, char **argv);
void ut_fill_pattern(unsigned char *buf, int n, unsigned seed);
int ut_check_pattern(const unsigned char *buf, int n, unsigned seed);

#endif
