// syscall.h: system call dispatch (syscall.c) and argument fetching for
// the sys_* handlers in sysproc.c and sysfile.c. A user program puts the
// SYS_* number (uapi.h) in a7 and arguments in a0..a5, then ecall;
// the handler's return value goes back in a0.
#ifndef SYSCALL_H
#define SYSCALL_H
#include "types.h"
void   syscall_dispatch(void);
int64  arg_raw(int n);                            // nth argument register
int    arg_int(int n);
uint64 arg_addr(int n);
int    arg_str(int n, char *buf, int max);        // length or -1
#endif
