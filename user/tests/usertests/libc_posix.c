// libc_posix.c: the C library seen from a Linux program: this file
// includes only standard headers (user/include/ and the compiler's), as
// a program written for Linux does, and uses their names.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>
#include <limits.h>
#include <inttypes.h>
#include <errno.h>
#include <unistd.h>
#include <fcntl.h>
#include <getopt.h>
#include <time.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/param.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <endian.h>
#include <byteswap.h>
#include <libgen.h>
#include <ctype.h>
#include <assert.h>
#include <malloc.h>
#include <poll.h>
#include <sys/poll.h>
#include "user/tests/testrun.h"

// The headers' macros and types: PRI*, limits, MIN/MAX, bswap, bool.
static void test_libc_posix_header_names(void)
{
  char buf[64];
  uint64_t big = UINT64_MAX;
  int32_t small = INT32_MIN;
  bool yes = true;
  snprintf(buf, sizeof buf, "%" PRIu64 " %" PRId32 " %" PRIx64 " %d", big, small,
           (uint64_t)0xabc, yes);
  TR_CHECK(strcmp(buf, "18446744073709551615 -2147483648 abc 1") == 0, "got \"%s\"", buf);
  TR_CHECK(INT_MAX == 2147483647 && LONG_MAX == 0x7fffffffffffffffL && CHAR_BIT == 8,
           "limits");
  TR_CHECK(MIN(3, 4) == 3 && MAX(3, 4) == 4, "MIN/MAX");
  TR_CHECK(bswap_32(0x11223344) == 0x44332211 && be32toh(htobe32(7)) == 7, "byte order");
  ssize_t s = -1;
  size_t z = sizeof(struct sockaddr_in);
  TR_CHECK(s < 0 && z == 16 && sizeof(struct sockaddr_in6) == 28 &&
           offsetof(struct sockaddr_in, sin_addr) == 4, "socket address layout");
  assert(yes);
}

// A Linux-style server's start: options, the address to bind, stderr.
static void test_libc_posix_server_setup(void)
{
  char *argv[] = { "server", "-p", "7471", "-a", "10.0.0.1", "--verbose", NULL };
  static const struct option opts[] = {
    { "port", required_argument, NULL, 'p' },
    { "addr", required_argument, NULL, 'a' },
    { "verbose", no_argument, NULL, 'v' },
    { NULL, 0, NULL, 0 },
  };
  const char *port = NULL, *addr = NULL;
  int verbose = 0, c;
  optind = 1;
  while ((c = getopt_long(6, argv, "p:a:v", opts, NULL)) != -1) {
    if (c == 'p') port = optarg;
    else if (c == 'a') addr = optarg;
    else if (c == 'v') verbose = 1;
  }
  TR_CHECK(port && addr && verbose, "options lost");
  struct addrinfo hints, *res;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_INET;
  hints.ai_flags = AI_NUMERICHOST;
  int err = getaddrinfo(addr, port, &hints, &res);
  TR_CHECK(err == 0, "getaddrinfo: %s", gai_strerror(err));
  struct sockaddr_in *sin = (struct sockaddr_in *)res->ai_addr;
  char text[INET_ADDRSTRLEN];
  TR_CHECK(strcmp(inet_ntop(AF_INET, &sin->sin_addr, text, sizeof text), "10.0.0.1") == 0 &&
           ntohs(sin->sin_port) == 7471, "address %s port %u", text, ntohs(sin->sin_port));
  freeaddrinfo(res);
  TR_CHECK(fprintf(stderr, "%s", "") == 0 && fflush(stdout) == 0, "stderr");
}

// <unistd.h>'s sleep counts seconds; usleep and clock_gettime agree.
static void test_libc_posix_sleep_seconds(void)
{
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  TR_CHECK(sleep(1) == 0, "sleep(1) was cut short");
  clock_gettime(CLOCK_MONOTONIC, &t1);
  long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
  TR_CHECK(ms >= 1000, "sleep(1) took %ld ms", ms);
  TR_CHECK(sysconf(_SC_PAGESIZE) == getpagesize(), "page size");
}

// <poll.h> and <fcntl.h> give a Linux program poll and O_NONBLOCK: a pipe
// with nothing in it is not readable, then is once written.
static void test_libc_posix_poll_pipe(void)
{
  int p[2];
  TR_CHECK(pipe(p) == 0, "pipe");
  struct pollfd pfd = { .fd = p[0], .events = POLLIN };
  TR_CHECK(poll(&pfd, 1, 0) == 0, "an empty pipe is readable");
  TR_CHECK(fcntl(p[0], F_SETFL, fcntl(p[0], F_GETFL) | O_NONBLOCK) == 0, "O_NONBLOCK");
  char c;
  TR_CHECK(read(p[0], &c, 1) == -1, "a non-blocking read of an empty pipe");
  TR_CHECK(write(p[1], "x", 1) == 1, "write");
  TR_CHECK(poll(&pfd, 1, 1000) == 1 && (pfd.revents & POLLIN), "revents %x", pfd.revents);
  close(p[0]);
  close(p[1]);
}

static int cmp_int(const void *a, const void *b)
{
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

// qsort sorts (duplicates, reversed runs), bsearch finds; asprintf sizes.
static void test_libc_posix_qsort_bsearch_asprintf(void)
{
  int v[200];
  unsigned int x = 12345;
  for (int i = 0; i < 200; i++) {
    x = x * 1103515245 + 12345;
    v[i] = i < 100 ? (int)(x >> 16) % 50 : 300 - i;
  }
  qsort(v, 200, sizeof v[0], cmp_int);
  for (int i = 1; i < 200; i++)
    TR_CHECK(v[i - 1] <= v[i], "out of order at %d: %d > %d", i, v[i - 1], v[i]);
  int key = 150;
  int *hit = bsearch(&key, v, 200, sizeof v[0], cmp_int);
  TR_CHECK(hit && *hit == 150, "bsearch missed 150");
  key = 1000;
  TR_CHECK(bsearch(&key, v, 200, sizeof v[0], cmp_int) == NULL, "bsearch found 1000");
  char *s = NULL;
  TR_CHECK(asprintf(&s, "%s-%d-%.1f", "port", 7471, 0.5) == 13 && s &&
           strcmp(s, "port-7471-0.5") == 0, "asprintf gave \"%s\"", s ? s : "(null)");
  free(s);
  void *m = memalign(256, 1000);
  TR_CHECK(m && (unsigned long)m % 256 == 0 && EXIT_FAILURE == 1 && EXIT_SUCCESS == 0,
           "memalign %p", m);
  free(m);
}

// inet_pton(AF_INET6): RFC 4291 2.2's forms, each to its 16 bytes; text
// that is none of them is 0 and leaves the destination alone.
static void test_libc_posix_inet6_pton_forms(void)
{
  static const struct { const char *text; const char *hex; } good[] = {
    { "::", "00000000000000000000000000000000" },
    { "::1", "00000000000000000000000000000001" },
    { "1::", "00010000000000000000000000000000" },
    { "2001:DB8::8:800:200C:417a", "20010db80000000000080800200c417a" },
    { "fe80::1:2", "fe800000000000000000000000010002" },
    { "1:2:3:4:5:6:7:8", "00010002000300040005000600070008" },
    { "1:2:3:4:5:6:7::", "00010002000300040005000600070000" },
    { "::ffff:10.0.0.1", "00000000000000000000ffff0a000001" },
    { "64:ff9b::192.0.2.33", "0064ff9b0000000000000000c0000221" },
  };
  static const char *const bad[] = {
    "", ":", ":::", "1:::2", "1::2::3", "12345::", "1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7",
    ":1::", "1:", "::g", "1.2.3.4", "::1.2.3", "1:2:3:4:5:6:7:1.2.3.4", "::ffff:256.0.0.1",
  };
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    unsigned char got[16], want[16];
    const char *h = good[i].hex;
    for (int k = 0; k < 16; k++, h += 2)
      want[k] = (unsigned char)strtoul((char[]){ h[0], h[1], 0 }, NULL, 16);
    TR_CHECK(inet_pton(AF_INET6, good[i].text, got) == 1 && memcmp(got, want, 16) == 0,
             "inet_pton(AF_INET6, \"%s\")", good[i].text);
  }
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    unsigned char got[16];
    memset(got, 0x5a, sizeof got);
    TR_CHECK(inet_pton(AF_INET6, bad[i], got) == 0 && got[0] == 0x5a && got[15] == 0x5a,
             "inet_pton(AF_INET6, \"%s\") accepted", bad[i]);
  }
}

// inet_ntop(AF_INET6): RFC 5952's one text for each address (lowercase, no
// leading zeros, the longest zero run as "::", the first of equal runs, a
// single zero group kept, IPv4-mapped as ::ffff:a.b.c.d); a short buffer
// is ENOSPC.
static void test_libc_posix_inet6_ntop_rfc5952(void)
{
  static const char *const cases[][2] = {
    { "0:0:0:0:0:0:0:0", "::" },
    { "0:0:0:0:0:0:0:1", "::1" },
    { "2001:0DB8:0000:0000:0000:0000:0002:0001", "2001:db8::2:1" },
    { "2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1" },
    { "2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1" },
    { "2001:0:0:1:0:0:0:1", "2001:0:0:1::1" },
    { "fe80:0:0:0:0:0:0:0", "fe80::" },
    { "0:0:0:0:0:ffff:a00:1", "::ffff:10.0.0.1" },
    { "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8" },
  };
  char text[INET6_ADDRSTRLEN];
  unsigned char a[16];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    TR_CHECK(inet_pton(AF_INET6, cases[i][0], a) == 1, "inet_pton(\"%s\")", cases[i][0]);
    TR_CHECK(inet_ntop(AF_INET6, a, text, sizeof text) == text && strcmp(text, cases[i][1]) == 0,
             "inet_ntop of %s: \"%s\", want \"%s\"", cases[i][0], text, cases[i][1]);
  }
  memset(a, 0xff, sizeof a);
  TR_CHECK(inet_ntop(AF_INET6, a, text, sizeof text) == text &&
           strcmp(text, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff") == 0, "all ones: %s", text);
  errno = 0;
  TR_CHECK(inet_ntop(AF_INET6, a, text, 39) == NULL && errno == ENOSPC, "39 bytes for 40 taken");
  errno = 0;
  TR_CHECK(inet_pton(12345, "::1", a) == -1 && errno == EAFNOSUPPORT, "unknown family");
}

// <sys/stat.h>: st_mode's type bits agree with the file's type (a
// directory, a regular file, the console device), the S_IS* tests, the
// permission bits (no checks here: 0777), POSIX's octal values.
static void test_libc_posix_stat_mode_bits(void)
{
  struct stat st;
  TR_CHECK(stat("/", &st) == 0 && S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode),
           "/: mode %o", st.st_mode);
  int fd = open("ut_stmode", O_CREATE | O_WRONLY | O_TRUNC);
  TR_CHECK(fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) &&
           (st.st_mode & ~S_IFMT) == (S_IRWXU | S_IRWXG | S_IRWXO), "file: mode %o", st.st_mode);
  close(fd);
  unlink("ut_stmode");
  TR_CHECK(fstat(0, &st) == 0 && S_ISCHR(st.st_mode), "console: mode %o", st.st_mode);
  TR_CHECK(S_IFMT == 0170000 && S_IFDIR == 0040000 && S_IFREG == 0100000 && S_IFCHR == 0020000 &&
           S_IFIFO == 0010000 && S_IFLNK == 0120000 && S_IFSOCK == 0140000 && S_IFBLK == 0060000 &&
           S_IRUSR == 0400 && S_IWGRP == 020 && S_IXOTH == 01 && S_IRWXU == 0700 && S_ISVTX == 01000,
           "POSIX values");
}

const struct tr_case ut_libc_posix_tests[] = {
  { "libc_posix_header_names", test_libc_posix_header_names, TR_QUICK, 0 },
  { "libc_posix_server_setup", test_libc_posix_server_setup, TR_QUICK, 0 },
  { "libc_posix_sleep_seconds", test_libc_posix_sleep_seconds, TR_QUICK, 0 },
  { "libc_posix_poll_pipe", test_libc_posix_poll_pipe, TR_QUICK, 0 },
  { "libc_posix_qsort_bsearch_asprintf", test_libc_posix_qsort_bsearch_asprintf, TR_QUICK, 0 },
  { "libc_posix_inet6_pton_forms", test_libc_posix_inet6_pton_forms, TR_QUICK, 0 },
  { "libc_posix_inet6_ntop_rfc5952", test_libc_posix_inet6_ntop_rfc5952, TR_QUICK, 0 },
  { "libc_posix_stat_mode_bits", test_libc_posix_stat_mode_bits, TR_QUICK, 0 },
  { NULL },
};
