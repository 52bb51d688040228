// unistd.h: the POSIX calls (user/lib/c/user.h declares them: read, write, close,
// fork, getpid, ...; sysconf and getpagesize in user/lib/c/unistd.c), getopt, and
// POSIX sleep: a program that includes this header gets sleep(seconds)
// (user/lib/c/time.c's sleep_seconds); xv6 programs that include only user.h
// keep the system call, sleep(ticks).
#ifndef UNISTD_H
#define UNISTD_H
#include "user/lib/c/user.h"
#define sleep sleep_seconds
#endif
