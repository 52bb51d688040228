// fd.c: tests of file descriptor handling: bad numbers, limits, dup.
#include "ut.h"

static void test_fd_bad_numbers_fail(void)
{
  int fds[] = { -1, -1000, 100, 1 << 20, 0x7fffffff, (int)0x80000000 };
  char buf[8];
  struct stat st;
  for (int i = 0; i < (int)(sizeof fds / sizeof fds[0]); i++) {
    int fd = fds[i];
    TR_CHECK(read(fd, buf, 1) == -1, "read(%d)", fd);
    TR_CHECK(write(fd, "x", 1) == -1, "write(%d)", fd);
    TR_CHECK(close(fd) == -1, "close(%d)", fd);
    TR_CHECK(fstat(fd, &st) == -1, "fstat(%d)", fd);
    TR_CHECK(dup(fd) == -1, "dup(%d)", fd);
  }
  int fd = open("/", O_RDONLY);
  close(fd);
  TR_CHECK(read(fd, buf, 1) == -1, "read of a closed fd %d", fd);
  TR_CHECK(close(fd) == -1, "double close of fd %d", fd);
}

// Negative and huge lengths must not crash or corrupt anything.
static void test_fd_hostile_lengths(void)
{
  char buf[64];
  ut_write_file("ut_fdlen", "hello", 5);
  int fd = open("ut_fdlen", O_RDWR);
  TR_CHECK(fd >= 0, "open");
  int r = read(fd, buf, -1);
  TR_CHECK(r == -1 || r == 0, "read of length -1 returned %d", r);
  r = write(fd, buf, -5);
  TR_CHECK(r == -1 || r == 0, "write of length -5 returned %d", r);
  r = read(fd, buf, 0);
  TR_CHECK(r == 0, "read of length 0 returned %d", r);
  r = read(fd, buf, 0x7fffffff);   // buffer far smaller, but file is 5 bytes
  TR_CHECK(r == -1 || r == 5, "read of 2 GiB from a 5-byte file gave %d", r);
  close(fd);
  TR_CHECK(ut_read_file("ut_fdlen", buf, sizeof buf) == 5 &&
           memcmp(buf, "hello", 5) == 0, "file changed");
  unlink("ut_fdlen");
}

static void test_fd_dup_shares_offset(void)
{
  int fd = open("ut_fddup", O_CREATE | O_TRUNC | O_RDWR);
  TR_CHECK(fd >= 0, "create");
  int fd2 = dup(fd);
  TR_CHECK(fd2 > fd, "dup returned %d", fd2);
  TR_CHECK(write(fd, "abc", 3) == 3 && write(fd2, "def", 3) == 3, "write");
  close(fd);
  TR_CHECK(write(fd2, "g", 1) == 1, "dup'd fd died with the original");
  close(fd2);
  char buf[16];
  int n = ut_read_file("ut_fddup", buf, sizeof buf);
  unlink("ut_fddup");
  TR_CHECK(n == 7 && memcmp(buf, "abcdefg", 7) == 0,
           "dup'd fds do not share the offset (%d bytes)", n);
}

static void test_fd_lowest_free_reused(void)
{
  int a = open("/", O_RDONLY), b = open("/", O_RDONLY), c = open("/", O_RDONLY);
  TR_CHECK(a >= 3 && b > a && c > b, "fds %d %d %d", a, b, c);
  close(b);
  int d = open("/", O_RDONLY);
  TR_CHECK(d == b, "lowest free fd is %d, open returned %d", b, d);
  close(a);
  close(c);
  close(d);
}

// Opens until the table is full; the limit is sane and all close again.
static void test_fd_table_limit(void)
{
  static int fds[1100];
  int n = 0;
  while (n < 1100 && (fds[n] = open("/", O_RDONLY)) >= 0)
    n++;
  TR_CHECK(n >= 8 && n < 1100, "opened %d fds before failure", n);
  TR_CHECK(dup(0) == -1, "dup with a full table");
  int p[2] = { -7, -7 };
  TR_CHECK(pipe(p) == -1, "pipe with a full table");
  close(fds[n - 1]);
  TR_CHECK(pipe(p) == -1, "pipe with one free slot");
  for (int i = 0; i < n - 1; i++)
    TR_CHECK(close(fds[i]) == 0, "close(%d)", fds[i]);
  TR_CHECK(pipe(p) == 0, "pipe after closing everything");
}

static void test_fd_access_modes(void)
{
  char c;
  ut_write_file("ut_fdmode", "z", 1);
  int ro = open("ut_fdmode", O_RDONLY), wo = open("ut_fdmode", O_WRONLY);
  TR_CHECK(ro >= 0 && wo >= 0, "open");
  TR_CHECK(write(ro, "x", 1) == -1, "wrote through a read-only fd");
  TR_CHECK(read(wo, &c, 1) == -1, "read through a write-only fd");
  TR_CHECK(read(ro, &c, 1) == 1 && c == 'z', "read through the read-only fd");
  close(ro);
  close(wo);
  int p[2];
  TR_CHECK(pipe(p) == 0, "pipe");
  TR_CHECK(write(p[0], "x", 1) == -1, "wrote to a pipe's read end");
  close(p[1]);
  TR_CHECK(read(p[1], &c, 1) == -1, "read from a closed pipe end");
  close(p[0]);
  unlink("ut_fdmode");
}

const struct tr_case ut_fd_tests[] = {
  { "fd_bad_numbers_fail", test_fd_bad_numbers_fail, TR_QUICK, 0 },
  { "fd_hostile_lengths", test_fd_hostile_lengths, TR_QUICK, 0 },
  { "fd_dup_shares_offset", test_fd_dup_shares_offset, TR_QUICK, 0 },
  { "fd_lowest_free_reused", test_fd_lowest_free_reused, TR_QUICK, 0 },
  { "fd_table_limit", test_fd_table_limit, TR_QUICK, 0 },
  { "fd_access_modes", test_fd_access_modes, TR_QUICK, 0 },
  { NULL },
};
