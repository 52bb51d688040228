// user.h: everything a user program can call.
//
// Owns the prototypes of the system calls (stubs generated into user/usys.S
// from kernel/lib/uapi.h) and of the small C library in user/: strings
// (string.c), formatted output (printf.c), the heap (malloc.c) and line
// input (readline.c). Programs include only this file; it pulls in the ABI.
#ifndef USER_H
#define USER_H

#include "kernel/lib/uapi.h"

typedef unsigned long size_t;
typedef unsigned char uint8;
typedef unsigned int uint32;
typedef unsigned long uint64;

#define NULL ((void *)0)
#define STDIN  0
#define STDOUT 1
#define STDERR 2

typedef __builtin_va_list va_list;
#define va_start(ap, last) __builtin_va_start(ap, last)
#define va_arg(ap, type)   __builtin_va_arg(ap, type)
#define va_end(ap)         __builtin_va_end(ap)
#define va_copy(dst, src)  __builtin_va_copy(dst, src)

// System calls (user/usys.S).
int fork(void);
void exit(int status) __attribute__((noreturn));
int wait(int *status);
int pipe(int *fds);
int read(int fd, void *buf, int n);
int write(int fd, const void *buf, int n);
int close(int fd);
int kill(int pid);
int exec(const char *path, char **argv);
int open(const char *path, int flags);
int mknod(const char *path, short major, short minor);
int unlink(const char *path);
int fstat(int fd, struct stat *st);
int link(const char *oldpath, const char *newpath);
int mkdir(const char *path);
int chdir(const char *path);
int dup(int fd);
int getpid(void);
char *sbrk(int increment);
int sleep(int ticks);
int uptime(void);
unsigned long clock_ns(void);    // user/clock.c: no system call
unsigned long kclock_ns(void);   // the same clock through a system call
unsigned long timebase(void);    // Hz of the time CSR user mode reads; 0 = it may not
int halt(int status);
int sysinfo(struct sysinfo *info);
// Up to GETRANDOM_MAX random bytes from the kernel's generator (flags 0);
// returns how many, -1 for a bad pointer or argument.
int getrandom(void *buf, int len, int flags);
unsigned int random_u32(void);   // user/random.c: 4 bytes of getrandom
// Wait for readiness of fds (pipes, console, files, sockets, completion
// channels); uapi.h has struct pollfd and the POLL* bits.
int poll(struct pollfd *fds, int nfds, int timeout_ms);
int fcntl(int fd, int cmd, ...);    // F_GETFL, F_SETFL with O_NONBLOCK
// Network (kernel/sys/sysnet.c; see uapi.h). Addresses in host byte order.
// A socket is a file descriptor: close() (or sockclose) closes it.
int socket(int type);
int bind(int s, int port);
int sendto(int s, const void *buf, int n, const struct net_addr *to);
int recvfrom(int s, void *buf, int n, struct net_addr *from, int timeout_ms);
int sockclose(int s);
int netstat(char *buf, int n);
int netinfo(struct net_info *info);
int arpwait(unsigned int ip, unsigned char *mac, int timeout_ms);
int sendzc(int s, const void *buf, int n, const struct net_addr *to);
int netblast(int s, const void *buf, int n, const struct net_addr *to, int count);
unsigned int inet_parse(const char *dotted);   // user/inet.c; 0 if malformed

// Strings and memory (string.c).
size_t strlen(const char *s);
int strcmp(const char *a, const char *b);
int strncmp(const char *a, const char *b, size_t n);
char *strcpy(char *dst, const char *src);
char *strncpy_z(char *dst, const char *src, size_t size);
char *strchr(const char *s, int c);
char *strstr(const char *haystack, const char *needle);
void *memset(void *dst, int c, size_t n);
void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
int memcmp(const void *a, const void *b, size_t n);
int atoi(const char *s);
int itoa(long value, char *buf, int base);
int stat(const char *path, struct stat *st);

// Formatted output (printf.c): %d %i %u %x %lx %ld %lu %p %s %c %%,
// with optional '-', '0' and a field width.
int printf(const char *fmt, ...);
int fprintf(int fd, const char *fmt, ...);
int vfprintf(int fd, const char *fmt, va_list ap);
int snprintf(char *buf, int size, const char *fmt, ...);
int vsnprintf(char *buf, int size, const char *fmt, va_list ap);

// Heap on top of sbrk (malloc.c).
void *malloc(size_t n);
void free(void *p);
void *calloc(size_t count, size_t size);
void *realloc(void *p, size_t n);

// Line input (readline.c). readline returns the line length without the
// newline, or -1 at end of input with nothing read.
int readline(int fd, char *buf, int size);
char *gets(char *buf, int size);

#endif
