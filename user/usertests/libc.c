// libc.c: tests of the user C library itself (string.c, printf.c,
// malloc.c, readline.c), run in the guest like everything else.
#include "ut.h"

// Formats with snprintf and compares with the expected text.
#define CHECK_FORMAT(expect, ...) do { \
    char got_[128]; \
    snprintf(got_, sizeof got_, __VA_ARGS__); \
    TR_CHECK(strcmp(got_, expect) == 0, "got \"%s\", want \"%s\"", got_, expect); \
  } while (0)

static void test_libc_printf_formats(void)
{
  CHECK_FORMAT("42 -7 x %", "%d %i %c %%", 42, -7, 'x');
  CHECK_FORMAT("4294967295 ffffffff", "%u %x", -1, -1);
  CHECK_FORMAT("18446744073709551615 ffffffffffffffff", "%lu %lx", -1L, -1L);
  CHECK_FORMAT("-9223372036854775808", "%ld", (long)(1UL << 63));
  CHECK_FORMAT("0x1000 0x0", "%p %p", (void *)0x1000, (void *)0);
  CHECK_FORMAT("  5|5  |00005|-0005", "%3d|%-3d|%05d|%05d", 5, 5, 5, -5);
  CHECK_FORMAT("abc|  abc|abc  |(null)", "%s|%5s|%-5s|%s", "abc", "abc", "abc",
               (char *)0);
  CHECK_FORMAT("0000beef", "%08x", 0xbeef);
}

static void test_libc_snprintf_truncates(void)
{
  char buf[8];
  memset(buf, 'z', sizeof buf);
  int n = snprintf(buf, 5, "%s", "abcdefgh");
  TR_CHECK(n == 8, "snprintf returned %d, want the full length 8", n);
  TR_CHECK(strcmp(buf, "abcd") == 0 && buf[5] == 'z', "buffer \"%s\"", buf);
}

static void test_libc_string_functions(void)
{
  char buf[32];
  TR_CHECK(strlen("") == 0 && strlen("abc") == 3, "strlen");
  TR_CHECK(strcmp("abc", "abc") == 0 && strcmp("abc", "abd") < 0 &&
           strcmp("b", "abc") > 0 && strcmp("ab", "abc") < 0, "strcmp");
  TR_CHECK(strncmp("abcx", "abcy", 3) == 0 && strncmp("a", "b", 0) == 0, "strncmp");
  TR_CHECK(strcmp(strcpy(buf, "copy"), "copy") == 0, "strcpy");
  const char *s = "hello";
  TR_CHECK(strchr(s, 'l') == s + 2 && strchr(s, 'z') == NULL &&
           strchr(s, 0) == s + 5, "strchr");
  TR_CHECK(strstr(s, "llo") == s + 2 && strstr(s, "lol") == NULL, "strstr");
  memset(buf, 0, sizeof buf);
  memcpy(buf, "0123456789", 10);
  memmove(buf + 2, buf, 8);   // overlapping, destination above
  TR_CHECK(memcmp(buf, "0101234567", 10) == 0, "memmove up: %s", buf);
  memmove(buf, buf + 2, 8);   // overlapping, destination below
  TR_CHECK(memcmp(buf, "0123456767", 10) == 0, "memmove down: %s", buf);
  TR_CHECK(atoi("123") == 123 && atoi("-45") == -45 && atoi("7x") == 7 &&
           atoi("") == 0, "atoi");
  TR_CHECK(itoa(-120, buf, 10) == 4 && strcmp(buf, "-120") == 0, "itoa base 10");
  TR_CHECK(itoa(255, buf, 16) == 2 && strcmp(buf, "ff") == 0, "itoa base 16");
  TR_CHECK(strcmp(strncpy_z(buf, "truncated", 4), "tru") == 0, "strncpy_z");
}

// Blocks are 16-byte aligned, distinct, and freed space is reused.
static void test_libc_malloc_alignment_and_reuse(void)
{
  char *a = malloc(1), *b = malloc(100), *c = malloc(5000);
  TR_CHECK(a && b && c, "malloc failed");
  TR_CHECK(((unsigned long)a | (unsigned long)b | (unsigned long)c) % 16 == 0,
           "unaligned blocks %p %p %p", a, b, c);
  TR_CHECK(a + 1 <= b || b + 100 <= a, "blocks overlap");
  TR_CHECK(malloc(0) == NULL, "malloc(0) returned memory");
  TR_CHECK(malloc(0x7fffffff) == NULL, "malloc(2 GiB) returned memory");
  TR_CHECK(calloc(1UL << 40, 1UL << 40) == NULL, "calloc overflow");
  free(c);
  char *d = malloc(4000);
  TR_CHECK(d == c, "freed block not reused (%p, then %p)", c, d);
  char *brk_before = sbrk(0);
  for (int i = 0; i < 1000; i++)
    free(malloc(3000));   // must not grow the heap each time
  TR_CHECK(sbrk(0) == brk_before, "malloc/free loop grew the heap");
}

static void test_libc_readline_from_pipe(void)
{
  int p[2];
  char line[8];
  TR_CHECK(pipe(p) == 0, "pipe");
  const char *text = "one\n\nlong line here\nlast";
  write(p[1], text, strlen(text));
  close(p[1]);
  TR_CHECK(readline(p[0], line, sizeof line) == 3 && strcmp(line, "one") == 0,
           "first line \"%s\"", line);
  TR_CHECK(readline(p[0], line, sizeof line) == 0, "empty line");
  TR_CHECK(readline(p[0], line, sizeof line) == 7 &&
           strcmp(line, "long li") == 0, "long line cut at the buffer");
  while (strcmp(line, "last") != 0)
    TR_CHECK(readline(p[0], line, sizeof line) >= 0, "lost the last line");
  TR_CHECK(readline(p[0], line, sizeof line) == -1, "no end of input");
  close(p[0]);
}

const struct tr_case ut_libc_tests[] = {
  { "libc_printf_formats", test_libc_printf_formats, TR_QUICK, 0 },
  { "libc_snprintf_truncates", test_libc_snprintf_truncates, TR_QUICK, 0 },
  { "libc_string_functions", test_libc_string_functions, TR_QUICK, 0 },
  { "libc_malloc_alignment_and_reuse", test_libc_malloc_alignment_and_reuse, TR_QUICK, 0 },
  { "libc_readline_from_pipe", test_libc_readline_from_pipe, TR_QUICK, 0 },
  { NULL },
};
