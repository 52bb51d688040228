// syscall.h: system call dispatch (syscall.c). A user program puts the
// SYS_* number (uapi.h) in a7 and arguments in a0..a5, then ecall; the
// handler reads them with proc/args.h and its return value goes back in a0.
#ifndef SYSCALL_H
#define SYSCALL_H
#include "lib/types.h"
void   syscall_dispatch(void);
void   sysbench_init(void);   // sysbench.c: its lock (sysnet_init calls it at boot)
#endif
