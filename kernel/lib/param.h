// param.h: compile-time limits of the kernel.
#ifndef PARAM_H
#define PARAM_H
#include "lib/fs_format.h"
#include "lib/uapi.h"

#define NCPU         8     // harts the kernel can run on (QEMU: CPUS=1..4)
#define NPROC        64    // process table slots (user processes + kthreads)
#define NOFILE       OPEN_MAX   // open files per process (uapi.h)
#define NFILE        128   // open files system-wide
#define NINODE       64    // in-memory inodes
#define NBUF         512   // buffer cache blocks (> LOG_CAP: logged blocks stay pinned)
#define MAXARG       32    // exec argv entries
#define MAXPATH      512   // longest path a syscall accepts
#define USTACK_PAGES 4     // user stack size set up by exec
#define MAX_OP_BLOCKS 120  // most blocks one file-system operation writes
#define LOG_CAP      FS_LOG_CAP  // fs_format.h; at least 2 * MAX_OP_BLOCKS
#define NEXIT_HOOKS  8
#define BOOT_STACK_SIZE 16384

#endif
