// user.h: everything a user program can call.
//
// Owns the prototypes of the system calls (stubs generated into build/user/lib/c/usys.S
// from kernel/lib/uapi.h) and of the C library in user/, one declaration of
// each function: strings (string.c, ctype.c), numbers (strtol.c, sort.c,
// random.c), formatted output and streams (printf.c, stdio.c), input
// parsing (scanf.c), the heap (malloc.c), options (getopt.c), time (time.c,
// clock.c), the system (unistd.c), addresses (inet.c), errors (errno.c) and
// line input (readline.c), linked as build/user/ulib.a. xv6 programs
// include only this file; the standard headers in user/include/ include it
// too, so Linux sources build with their own #include lines (docs/libc.md
// says what differs from POSIX).
#ifndef USER_H
#define USER_H

#include "kernel/lib/uapi.h"
#include <stddef.h>    // the compiler's: size_t, NULL, offsetof
#include <stdarg.h>    // the compiler's: va_list
#include <stdint.h>    // the compiler's: uint32_t, ...

typedef unsigned char uint8;
typedef unsigned int uint32;
typedef unsigned long uint64;
typedef long ssize_t;
typedef int pid_t;
typedef long off_t;
typedef unsigned int mode_t;
typedef long time_t;
typedef long suseconds_t;
typedef unsigned int useconds_t;
typedef int clockid_t;
typedef unsigned int socklen_t;

#define STDIN  0
#define STDOUT 1
#define STDERR 2
#define STDIN_FILENO  0
#define STDOUT_FILENO 1
#define STDERR_FILENO 2

// System calls (build/user/lib/c/usys.S).
int fork(void);
void exit(int status) __attribute__((noreturn));
int wait(int *status);
int pipe(int *fds);
int read(int fd, void *buf, int n);
int write(int fd, const void *buf, int n);
int close(int fd);
int kill(int pid);
int exec(const char *path, char **argv);
// flags: O_* of kernel/lib/uapi.h; mode (with O_CREAT) is accepted and
// ignored: the file system has no permissions. Sets errno on failure.
int open(const char *path, int flags, ...);
int mknod(const char *path, short major, short minor);
int unlink(const char *path);
int fstat(int fd, struct stat *st);
int link(const char *oldpath, const char *newpath);
int mkdir(const char *path);
int chdir(const char *path);
int dup(int fd);
int getpid(void);
char *sbrk(int increment);
int sleep(int ticks);             // ticks of TICK_NS; <unistd.h> makes sleep() seconds
int uptime(void);
unsigned long clock_ns(void);    // user/lib/c/clock.c: no system call
unsigned long kclock_ns(void);   // the same clock through a system call
unsigned long timebase(void);    // Hz of the time CSR user mode reads; 0 = it may not
int halt(int status);
int sysinfo(struct sysinfo *info);
int pagestat(struct pagestat *ps); // demand paging's counters (kernel/core/pager.c)
long syscount(void);               // system calls this process made, this one included
// The kernel's client of a memory node (uapi.h SYS_rmemctl; user/bin/rmemctl.c).
long rmemctl(int op, unsigned long a, unsigned long b);
// Up to GETRANDOM_MAX random bytes from the kernel's generator (flags 0);
// returns how many, -1 for a bad pointer or argument.
int getrandom(void *buf, int len, int flags);
unsigned int random_u32(void);   // user/lib/c/random.c: 4 bytes of getrandom
// Wait for readiness of fds (pipes, console, files, sockets, completion
// channels, CM event channels); uapi.h has struct pollfd and the POLL* bits.
// The system call itself.
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
const char *netstat_text(void);   // a netstat() snapshot, NUL-terminated (static buffer)
unsigned long netstat_value(const char *text, const char *name);  // one counter of netstat's text, or 0
int netinfo(struct net_info *info);
int arpwait(unsigned int ip, unsigned char *mac, int timeout_ms);
int sendzc(int s, const void *buf, int n, const struct net_addr *to);
int netblast(int s, const void *buf, int n, const struct net_addr *to, int count);

// errno (errno.c; perror in stdio.c): set by the library functions that say so, Linux
// values (the E* constants are uapi.h's: the kernel reports some of them too).
extern int errno;
char *strerror(int err);
void perror(const char *what);

// Strings and memory (string.c).
size_t strlen(const char *s);
size_t strnlen(const char *s, size_t max);
int strcmp(const char *a, const char *b);
int strncmp(const char *a, const char *b, size_t n);
int strcasecmp(const char *a, const char *b);
int strncasecmp(const char *a, const char *b, size_t n);
char *strcpy(char *dst, const char *src);
char *strncpy(char *dst, const char *src, size_t n);
char *strncpy_z(char *dst, const char *src, size_t size);
char *strcat(char *dst, const char *src);
char *strncat(char *dst, const char *src, size_t n);
char *strchr(const char *s, int c);
char *strrchr(const char *s, int c);
char *strstr(const char *haystack, const char *needle);
size_t strspn(const char *s, const char *accept);
size_t strcspn(const char *s, const char *reject);
char *strpbrk(const char *s, const char *accept);
char *strtok(char *s, const char *delim);
char *strtok_r(char *s, const char *delim, char **save);
char *strsep(char **sp, const char *delim);
void *memset(void *dst, int c, size_t n);
void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
int memcmp(const void *a, const void *b, size_t n);
void *memchr(const void *s, int c, size_t n);
int itoa(long value, char *buf, int base);
int stat(const char *path, struct stat *st);
char *basename(char *path);
char *dirname(char *path);

// Characters (ctype.c), ASCII only.
int isdigit(int c);
int isxdigit(int c);
int isalpha(int c);
int isalnum(int c);
int isupper(int c);
int islower(int c);
int isspace(int c);
int isblank(int c);
int isprint(int c);
int isgraph(int c);
int ispunct(int c);
int iscntrl(int c);
int toupper(int c);
int tolower(int c);

// Numbers from text (strtol.c): base 0 (prefix decides), 2..36; ERANGE
// and the extreme value on overflow, EINVAL for a bad base.
long strtol(const char *s, char **end, int base);
unsigned long strtoul(const char *s, char **end, int base);
long long strtoll(const char *s, char **end, int base);
unsigned long long strtoull(const char *s, char **end, int base);
double strtod(const char *s, char **end);
int atoi(const char *s);
long atol(const char *s);
long long atoll(const char *s);
double atof(const char *s);
#define EXIT_SUCCESS 0
#define EXIT_FAILURE 1
// Sorting and searching (sort.c): qsort is a heap sort,
// in place, not stable.
void qsort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));
void *bsearch(const void *key, const void *base, size_t n, size_t size,
              int (*cmp)(const void *, const void *));
int abs(int v);
long labs(long v);
long long llabs(long long v);

// Formatted output (printf.c): %d %i %u %x %X %o %c %s %p %% %f %F %e %E
// %g %G, the length modifiers hh h l ll z j t, flags - + space # 0, width
// and precision (both also *). Every call leaves in one write() per 256
// bytes, so lines of concurrent processes rarely interleave.
int printf(const char *fmt, ...);
int vprintf(const char *fmt, va_list ap);
int dprintf(int fd, const char *fmt, ...);
int vdprintf(int fd, const char *fmt, va_list ap);
int snprintf(char *buf, size_t size, const char *fmt, ...)
 ;
int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
int sprintf(char *buf, const char *fmt, ...);
int vsprintf(char *buf, const char *fmt, va_list ap);
// Into a new malloc'd string (*out); -1 (and *out untouched) without memory.
int asprintf(char **out, const char *fmt, ...);
int vasprintf(char **out, const char *fmt, va_list ap);

// Streams (stdio.c): every call writes before it returns (no buffering
// across calls), reads are buffered per stream.
#define EOF (-1)
#define BUFSIZ 1024
#define FILE_RBUF 512
#define _IOFBF 0
#define _IOLBF 1
#define _IONBF 2
typedef struct stdio_file {
  int fd;
  int eof, err;
  int rpos, rlen;                  // unread input is rbuf[rpos..rlen)
  unsigned char rbuf[FILE_RBUF];
} FILE;
extern FILE *stdin, *stdout, *stderr;
FILE *fopen(const char *path, const char *mode);
FILE *fdopen(int fd, const char *mode);
int fclose(FILE *f);
int fflush(FILE *f);
int fileno(FILE *f);
int feof(FILE *f);
int ferror(FILE *f);
void clearerr(FILE *f);
int setvbuf(FILE *f, char *buf, int mode, size_t size);
void setbuf(FILE *f, char *buf);
size_t fwrite(const void *p, size_t size, size_t count, FILE *f);
size_t fread(void *p, size_t size, size_t count, FILE *f);
int fputs(const char *s, FILE *f);
int puts(const char *s);
int fputc(int c, FILE *f);
int putc(int c, FILE *f);
int putchar(int c);
int fgetc(FILE *f);
int getc(FILE *f);
int getchar(void);
int ungetc(int c, FILE *f);
int fprintf(FILE *f, const char *fmt, ...);     // printf.c
int vfprintf(FILE *f, const char *fmt, va_list ap);
char *fgets(char *buf, int size, FILE *f);
void assert_fail(const char *expr, const char *file, int line, const char *func)
  __attribute__((noreturn));

// Input parsing (scanf.c): %d %i %u %x %o %ld ... %s %c %[...] %n %%, width,
// '*' (assign nothing), hh h l ll z j t. Returns the fields assigned, -1 when
// the input ended before the first conversion.
int sscanf(const char *str, const char *fmt, ...);
int vsscanf(const char *str, const char *fmt, va_list ap);

// Heap on top of sbrk (malloc.c).
void *malloc(size_t n);
void free(void *p);
void *calloc(size_t count, size_t size);
void *realloc(void *p, size_t n);
int posix_memalign(void **out, size_t align, size_t n);
void *aligned_alloc(size_t align, size_t n);
void *memalign(size_t align, size_t n);
char *strdup(const char *s);
char *strndup(const char *s, size_t n);

// Line input (readline.c). readline returns the line length without the
// newline, or -1 at end of input with nothing read.
int readline(int fd, char *buf, int size);
char *gets(char *buf, int size);

// Command-line options (getopt.c), POSIX getopt and GNU getopt_long.
extern char *optarg;
extern int optind, opterr, optopt;
struct option {
  const char *name;
  int has_arg;          // no_argument, required_argument, optional_argument
  int *flag;            // NULL: return val; else *flag = val, return 0
  int val;
};
#define no_argument       0
#define required_argument 1
#define optional_argument 2
int getopt(int argc, char *const argv[], const char *optstring);
int getopt_long(int argc, char *const argv[], const char *optstring,
                const struct option *longopts, int *longindex);

// Time (time.c). CLOCK_REALTIME counts from boot: the machine has no
// calendar clock, so the epoch is the boot.
struct timeval { time_t tv_sec; suseconds_t tv_usec; };
struct timespec { time_t tv_sec; long tv_nsec; };
struct timezone { int tz_minuteswest, tz_dsttime; };
#define CLOCK_REALTIME  0
#define CLOCK_MONOTONIC 1
#define CLOCKS_PER_SEC 1000000L
typedef long clock_t;
int gettimeofday(struct timeval *tv, void *tz);
time_t time(time_t *out);
int clock_gettime(clockid_t id, struct timespec *ts);
clock_t clock(void);
int usleep(useconds_t us);
int nanosleep(const struct timespec *req, struct timespec *rem);
unsigned int sleep_seconds(unsigned int s);

// The system (unistd.c).
#define _SC_PAGESIZE 30
#define _SC_PAGE_SIZE _SC_PAGESIZE
#define _SC_NPROCESSORS_ONLN 84
#define _SC_CLK_TCK 2
long sysconf(int name);
int getpagesize(void);
char *getenv(const char *name);
void abort(void) __attribute__((noreturn));

// Random numbers (random.c). rand/drand48 are seeded generators (a fixed
// sequence per seed, like POSIX's); random_u32 is the kernel's.
#define RAND_MAX 2147483647
int rand(void);
void srand(unsigned int seed);
void srand48(long seed);
long lrand48(void);
long mrand48(void);
double drand48(void);

// Byte order (the machine is little-endian). No libgcc: no __builtin_bswap.
static inline uint16_t bswap_16(uint16_t x) { return (uint16_t)((x >> 8) | (x << 8)); }
static inline uint32_t bswap_32(uint32_t x) {
  return (x >> 24) | ((x >> 8) & 0xff00) | ((x << 8) & 0xff0000) | (x << 24);
}
static inline uint64_t bswap_64(uint64_t x) {
  return ((uint64_t)bswap_32((uint32_t)x) << 32) | bswap_32((uint32_t)(x >> 32));
}
#define htons(x)   bswap_16(x)
#define ntohs(x)   bswap_16(x)
#define htonl(x)   bswap_32(x)
#define ntohl(x)   bswap_32(x)
#define htobe16(x) bswap_16(x)
#define be16toh(x) bswap_16(x)
#define htobe32(x) bswap_32(x)
#define be32toh(x) bswap_32(x)
#define htobe64(x) bswap_64(x)
#define be64toh(x) bswap_64(x)
#define htole16(x) ((uint16_t)(x))
#define le16toh(x) ((uint16_t)(x))
#define htole32(x) ((uint32_t)(x))
#define le32toh(x) ((uint32_t)(x))
#define htole64(x) ((uint64_t)(x))
#define le64toh(x) ((uint64_t)(x))

// IPv4 addresses and names (inet.c). Only AF_INET and numeric names:
// there is no resolver.
#define AF_UNSPEC 0
#define AF_INET   2
#define AF_INET6 10
#define PF_INET  AF_INET
#define SOCK_STREAM 1
#define SOCK_DGRAM  2
typedef unsigned short sa_family_t;
typedef uint16_t in_port_t;
typedef uint32_t in_addr_t;
struct sockaddr { sa_family_t sa_family; char sa_data[14]; };
struct sockaddr_storage { sa_family_t ss_family; char ss_pad[126]; };
struct in_addr { in_addr_t s_addr; };          // network byte order
struct sockaddr_in {
  sa_family_t sin_family;
  in_port_t sin_port;                          // network byte order
  struct in_addr sin_addr;
  unsigned char sin_zero[8];
};
struct in6_addr { unsigned char s6_addr[16]; };
struct sockaddr_in6 {
  sa_family_t sin6_family;
  in_port_t sin6_port;
  uint32_t sin6_flowinfo;
  struct in6_addr sin6_addr;
  uint32_t sin6_scope_id;
};
#define INADDR_ANY       ((in_addr_t)0)
#define INADDR_LOOPBACK  ((in_addr_t)0x7f000001)
#define INADDR_BROADCAST ((in_addr_t)0xffffffff)
#define INADDR_NONE      ((in_addr_t)0xffffffff)
#define INET_ADDRSTRLEN  16
#define INET6_ADDRSTRLEN 46
#define IPPROTO_IP  0
#define IPPROTO_TCP 6
#define IPPROTO_UDP 17
struct addrinfo {
  int ai_flags, ai_family, ai_socktype, ai_protocol;
  socklen_t ai_addrlen;
  struct sockaddr *ai_addr;
  char *ai_canonname;
  struct addrinfo *ai_next;
};
#define AI_PASSIVE     0x0001
#define AI_CANONNAME   0x0002
#define AI_NUMERICHOST 0x0004
#define AI_NUMERICSERV 0x0400
#define EAI_BADFLAGS  (-1)
#define EAI_NONAME    (-2)
#define EAI_FAMILY    (-6)
#define EAI_SOCKTYPE  (-7)
#define EAI_SERVICE   (-8)
#define EAI_MEMORY   (-10)
#define EAI_SYSTEM   (-11)
unsigned int inet_parse(const char *dotted);   // host order; 0 if malformed
int inet_pton(int af, const char *src, void *dst);
const char *inet_ntop(int af, const void *src, char *dst, socklen_t size);
int inet_aton(const char *src, struct in_addr *dst);
in_addr_t inet_addr(const char *src);
char *inet_ntoa(struct in_addr in);
int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
                struct addrinfo **res);
void freeaddrinfo(struct addrinfo *res);
const char *gai_strerror(int err);

#endif
