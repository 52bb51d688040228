// args.h: a system call's arguments, read from the current process's trap
// frame (args.c). Valid only inside a system call.
#ifndef ARGS_H
#define ARGS_H
#include "lib/types.h"
int64  arg_raw(int n);                            // nth argument register
int    arg_int(int n);
uint64 arg_addr(int n);
int    arg_str(int n, char *buf, int max);        // length or -1
#endif
