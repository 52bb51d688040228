// uapi.h: the ABI between the kernel and user programs.
//
// Owns: system call numbers, open() flags, struct stat, file types,
// device majors, struct sysinfo and the tick length. Both the kernel
// (kernel/syscall.c dispatches by SYS_* through a table) and user space
// (user/usys.S is generated from the SYS_* lines below) include this file,
// so it must stay free of kernel-only types: it uses only the C base types.
//
// Adding a syscall: add a SYS_ line here, an entry in the kernel's table,
// and a prototype in user/user.h; the user stub is generated.
#ifndef UAPI_H
#define UAPI_H

// System call numbers. Numbers are never reused.
#define SYS_fork      1
#define SYS_exit      2
#define SYS_wait      3
#define SYS_pipe      4
#define SYS_read      5
#define SYS_write     6
#define SYS_close     7
#define SYS_kill      8
#define SYS_exec      9
#define SYS_open     10
#define SYS_mknod    11
#define SYS_unlink   12
#define SYS_fstat    13
#define SYS_link     14
#define SYS_mkdir    15
#define SYS_chdir    16
#define SYS_dup      17
#define SYS_getpid   18
#define SYS_sbrk     19
#define SYS_sleep    20
#define SYS_uptime   21
#define SYS_clock_ns 22   // monotonic nanoseconds since boot, from the time CSR
#define SYS_halt     23   // power off through the test finisher; arg = exit status
#define SYS_sysinfo  24   // fill a struct sysinfo
// 40..59 are reserved for the network stack, 60..99 for RDMA verbs.

// Scheduler tick: sleep(n) and uptime() count ticks of this length.
#define TICK_NS 10000000ULL   // 10 ms, 100 ticks per second

// open() flags.
#define O_RDONLY  0x000
#define O_WRONLY  0x001
#define O_RDWR    0x002
#define O_CREATE  0x040
#define O_TRUNC   0x200

// File types in struct stat.
#define T_DIR     1
#define T_FILE    2
#define T_DEVICE  3

// Device majors for mknod().
#define DEV_CONSOLE 1

struct stat {
  int dev;                  // file system's disk device
  unsigned int ino;         // inode number
  short type;               // T_DIR, T_FILE or T_DEVICE
  short nlink;              // number of links to the file
  unsigned long size;       // size of the file in bytes
};

struct sysinfo {
  unsigned long freepages;  // physical pages on the free list
  unsigned long totalpages; // physical pages the allocator manages
  unsigned int nproc;       // processes not in the UNUSED state
  unsigned int ncpu;        // harts running
};

#define DIRSIZ 14           // longest file name component, in bytes

// A directory is a file of these records; inum 0 marks a free slot.
struct dirent {
  unsigned short inum;
  char name[DIRSIZ];
};

#endif
