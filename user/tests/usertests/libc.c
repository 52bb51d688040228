// libc.c: tests of the user C library itself (strings, printf and scanf,
// strto*, getopt, the heap, time, addresses, streams, readline), run in the
// guest like everything else.
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


static void test_libc_printf_integer_flags(void)
{
  CHECK_FORMAT("-1 4464 -9223372036854775808", "%hhd %hd %lld", 0x1ff, 70000,
               (long long)(1ULL << 63));
  CHECK_FORMAT("123 -5 7 200", "%zu %jd %td %hhu", (size_t)123, (long)-5, (long)7, 200);
  CHECK_FORMAT("ABC 0xff 0XFF 010 10 0 0", "%X %#x %#X %#o %o %#x %o", 0xabc, 255, 255, 8, 8,
               0, 0);
  CHECK_FORMAT("+5  5 -5", "%+d % d %+d", 5, 5, -5);
  CHECK_FORMAT("007|  007|007  ||-007", "%.3d|%5.3d|%-5.3d|%.0d|%04d", 7, 7, 7, 0, -7);
  CHECK_FORMAT("   42|7   |ab|42   ", "%*d|%-*d|%.*s|%*d", 5, 42, 4, 7, 2, "abcdef", -5, 42);
  CHECK_FORMAT("  0x2a|0x00002a", "%6p|%#08x", (void *)42, 42);
  CHECK_FORMAT("%5|q", "%%5|%c", 'q');
  char buf[32];
  TR_CHECK(sprintf(buf, "%s-%d", "ab", 12) == 5 && strcmp(buf, "ab-12") == 0,
           "sprintf gave \"%s\"", buf);
  TR_CHECK(snprintf(NULL, 0, "%d", 12345) == 5, "snprintf(NULL, 0) counts");
}

static void test_libc_printf_floating_point(void)
{
  CHECK_FORMAT("3.141593 2.67 0.3333333333", "%f %.2f %.10f", 3.14159265, 2.675, 1.0 / 3);
  CHECK_FORMAT("1.234568e+04 1.2E-07 0.000e+00", "%e %.1E %.3e", 12345.678, 1.2e-7, 0.0);
  CHECK_FORMAT("0.0001 1e-05 1.23457e+08 100000 1e+06 0 1.00000", "%g %g %g %g %g %g %#g",
               0.0001, 1e-5, 123456789.0, 100000.0, 1e6, 0.0, 1.0);
  CHECK_FORMAT("     3.142|3.142     |+2.0|-0001.50", "%10.3f|%-10.3f|%+.1f|%08.2f",
               3.14159, 3.14159, 2.0, -1.5);
  CHECK_FORMAT("-0.000000 inf INF nan", "%f %f %F %f", -0.0, __builtin_inf(),
               __builtin_inf(), __builtin_nan(""));
  CHECK_FORMAT("100000000000000000000.000000", "%f", 1e20);
  CHECK_FORMAT("0.1 0.00  10.0 1e+300 2.5e-310", "%.1f %.2f %5.1f %g %.2g", 0.05, 0.004,
               9.96, 1e300, 2.5e-310);
  CHECK_FORMAT("1 -2.5 0.001", "%.0f %g %G", 1.0, -2.5, 0.001);
}

// errno is set, and the end and value are C's, at every edge.
static void test_libc_strtol_bases_and_range(void)
{
  char *end;
  const char *s = "  -123abc";
  TR_CHECK(strtol(s, &end, 10) == -123 && *end == 'a', "strtol -123abc");
  TR_CHECK(strtol("0x1F", NULL, 0) == 31 && strtol("017", NULL, 0) == 15 &&
           strtol("17", NULL, 0) == 17 && strtol("0x1f", NULL, 16) == 31 &&
           strtol("z", NULL, 36) == 35 && strtol("-101", NULL, 2) == -5, "bases");
  s = "0x";
  TR_CHECK(strtol(s, &end, 16) == 0 && end == s + 1, "\"0x\" parses as 0, ends at x");
  s = "abc";
  TR_CHECK(strtol(s, &end, 10) == 0 && end == s, "no digits: end = start");
  errno = 0;
  s = "99999999999999999999x";
  TR_CHECK(strtol(s, &end, 10) == 0x7fffffffffffffffL && errno == ERANGE && *end == 'x',
           "overflow: LONG_MAX, ERANGE, end after the digits");
  errno = 0;
  TR_CHECK(strtoll("-9223372036854775808", NULL, 10) == (long long)(1ULL << 63) && errno == 0,
           "LLONG_MIN without ERANGE");
  TR_CHECK(strtol("-9223372036854775809", NULL, 10) == (long)(1ULL << 63) && errno == ERANGE,
           "underflow: LONG_MIN, ERANGE");
  errno = 0;
  TR_CHECK(strtoull("18446744073709551615", NULL, 10) == ~0ULL && errno == 0, "ULLONG_MAX");
  TR_CHECK(strtoull("18446744073709551616", NULL, 10) == ~0ULL && errno == ERANGE,
           "ULLONG_MAX + 1");
  TR_CHECK(strtoul("ff", NULL, 16) == 255 && strtoul("-1", NULL, 10) == ~0UL, "strtoul");
  errno = 0;
  TR_CHECK(strtol("1", NULL, 1) == 0 && errno == EINVAL, "base 1 is EINVAL");
  TR_CHECK(atol("-77") == -77 && atoi(" 42") == 42 && atoll("1") == 1, "ato*");
  TR_CHECK(strtod("2.5e3x", &end) == 2500.0 && *end == 'x', "strtod");
}

// Both option forms, grouped options, "--", and the error returns.
static void test_libc_getopt_short_and_long(void)
{
  char *argv1[] = { "prog", "-a", "-b", "val", "-cval", "-ad", "--", "-x", NULL };
  char got[16];
  int n = 0, c;
  opterr = 0;
  optind = 1;
  char *b_arg = NULL, *c_arg = NULL;
  while ((c = getopt(8, argv1, "ab:c:d")) != -1) {
    got[n++] = c;
    if (c == 'b') b_arg = optarg;
    if (c == 'c') c_arg = optarg;
  }
  got[n] = 0;
  TR_CHECK(strcmp(got, "abcad") == 0 && strcmp(b_arg, "val") == 0 &&
           strcmp(c_arg, "val") == 0 && optind == 7, "getopt saw \"%s\", optind %d", got, optind);
  char *argv2[] = { "prog", "-z", "-b", NULL };
  optind = 1;
  TR_CHECK(getopt(3, argv2, ":b:") == '?' && optopt == 'z', "unknown option");
  TR_CHECK(getopt(3, argv2, ":b:") == ':' && optopt == 'b', "missing argument");

  int verbose = 0, idx = -1;
  const struct option longs[] = {
    { "size", required_argument, NULL, 's' },
    { "verbose", no_argument, &verbose, 1 },
    { "port", optional_argument, NULL, 'p' },
    { NULL, 0, NULL, 0 },
  };
  char *argv3[] = { "prog", "--size=10", "--verbose", "--port", "--size", "20", "-s", "5",
                    "--siz=7", "--bogus", "file", NULL };
  const char *want_args[] = { "10", NULL, NULL, "20", "5", "7" };
  const int want[] = { 's', 0, 'p', 's', 's', 's', '?' };
  optind = 1;
  for (int i = 0; i < 7; i++) {
    c = getopt_long(11, argv3, "s:", longs, &idx);
    TR_CHECK(c == want[i], "option %d: got %d, want %d", i, c, want[i]);
    if (i < 6)
      TR_CHECK(want_args[i] ? optarg && strcmp(optarg, want_args[i]) == 0 : optarg == NULL,
               "option %d: argument %s", i, optarg ? optarg : "(none)");
  }
  TR_CHECK(verbose == 1, "--verbose did not set its flag");
  TR_CHECK(getopt_long(11, argv3, "s:", longs, &idx) == -1 && optind == 10 &&
           strcmp(argv3[optind], "file") == 0, "stops at the operand, optind %d", optind);
}

static void test_libc_sscanf_fields(void)
{
  int i = 0, port = 0, a = 0, b = 0, n = 0;
  unsigned x = 0;
  long l = 0;
  char word[16], host[16], ch[2];
  TR_CHECK(sscanf("12 abc 0x1f -7", "%d %s %x %ld", &i, word, &x, &l) == 4 && i == 12 &&
           strcmp(word, "abc") == 0 && x == 31 && l == -7, "%%d %%s %%x %%ld");
  TR_CHECK(sscanf("host.a:4791", "%15[^:]:%d", host, &port) == 2 &&
           strcmp(host, "host.a") == 0 && port == 4791, "%%[^:] got \"%s\" %d", host, port);
  TR_CHECK(sscanf("12345", "%3d%d", &a, &b) == 2 && a == 123 && b == 45, "widths");
  TR_CHECK(sscanf("1 2", "%*d %d%n", &a, &n) == 1 && a == 2 && n == 3, "%%* and %%n");
  TR_CHECK(sscanf("xy", "%2c", ch) == 1 && ch[0] == 'x' && ch[1] == 'y', "%%2c");
  TR_CHECK(sscanf("", "%d", &a) == -1, "empty input gives EOF");
  TR_CHECK(sscanf("abc", "%d", &a) == 0, "no match gives 0");
  double d = 0;
  TR_CHECK(sscanf("3.5", "%lf", &d) == 1 && d == 3.5, "%%lf");
}

static void test_libc_string_extras(void)
{
  char buf[32], *p, *save;
  const char *s = "a/b/c";
  TR_CHECK(strrchr(s, '/') == s + 3 && strrchr(s, 'x') == NULL && strrchr(s, 0) == s + 5,
           "strrchr");
  memset(buf, 'z', sizeof buf);
  strncpy(buf, "ab", 4);
  TR_CHECK(memcmp(buf, "ab\0\0z", 5) == 0, "strncpy pads with NULs");
  strcpy(buf, "ab");
  TR_CHECK(strcmp(strcat(buf, "cd"), "abcd") == 0 &&
           strcmp(strncat(buf, "efgh", 2), "abcdef") == 0, "strcat/strncat: %s", buf);
  p = strdup("dup");
  TR_CHECK(p && strcmp(p, "dup") == 0, "strdup");
  free(p);
  p = strndup("abcdef", 3);
  TR_CHECK(p && strcmp(p, "abc") == 0, "strndup");
  free(p);
  TR_CHECK(strcasecmp("HeLLo", "hello") == 0 && strcasecmp("a", "B") < 0 &&
           strncasecmp("ABx", "aby", 2) == 0, "strcasecmp");
  TR_CHECK(strspn("aabx", "ab") == 3 && strcspn("abc,d", ",") == 3 &&
           strpbrk("abc", "xc") != NULL && strnlen("abc", 2) == 2, "spans");
  TR_CHECK(memchr("abc", 'c', 3) != NULL && memchr("abc", 'c', 2) == NULL, "memchr");
  strcpy(buf, " one,two,,three ");
  TR_CHECK(strcmp(strtok(buf, " ,"), "one") == 0 && strcmp(strtok(NULL, " ,"), "two") == 0 &&
           strcmp(strtok(NULL, " ,"), "three") == 0 && strtok(NULL, " ,") == NULL, "strtok");
  strcpy(buf, "x=1");
  TR_CHECK(strcmp(strtok_r(buf, "=", &save), "x") == 0 &&
           strcmp(strtok_r(NULL, "=", &save), "1") == 0, "strtok_r");
  strcpy(buf, "a,,b");
  p = buf;
  TR_CHECK(strcmp(strsep(&p, ","), "a") == 0 && strcmp(strsep(&p, ","), "") == 0 &&
           strcmp(strsep(&p, ","), "b") == 0 && p == NULL, "strsep keeps empty fields");
  TR_CHECK(isdigit('7') && !isdigit('a') && isxdigit('F') && isspace('\n') && isalpha('q') &&
           ispunct('!') && !isprint('\n') && toupper('a') == 'A' && tolower('Z') == 'z', "ctype");
  TR_CHECK(strcmp(strerror(EINVAL), "Invalid argument") == 0 &&
           strcmp(strerror(9999), "Unknown error 9999") == 0, "strerror");
}

// basename and dirname, POSIX's examples.
static void test_libc_basename_dirname(void)
{
  static const struct { const char *path, *base, *dir; } cases[] = {
    { "/usr/lib", "lib", "/usr" }, { "/usr/", "usr", "/" }, { "usr", "usr", "." },
    { "/", "/", "/" }, { ".", ".", "." }, { "a/b//", "b", "a" }, { "//x", "x", "/" },
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char b[16], d[16];
    strcpy(b, cases[i].path);
    strcpy(d, cases[i].path);
    const char *gb = basename(b), *gd = dirname(d);
    TR_CHECK(strcmp(gb, cases[i].base) == 0 && strcmp(gd, cases[i].dir) == 0,
             "%s: basename %s dirname %s", cases[i].path, gb, gd);
  }
}

static void test_libc_aligned_alloc_and_realloc(void)
{
  void *p = NULL;
  TR_CHECK(posix_memalign(&p, 4096, 10000) == 0 && (unsigned long)p % 4096 == 0,
           "posix_memalign 4096: %p", p);
  memset(p, 0xab, 10000);
  char *q = aligned_alloc(64, 100);
  TR_CHECK(q && (unsigned long)q % 64 == 0, "aligned_alloc 64: %p", q);
  TR_CHECK((char *)p + 10000 <= q || q + 100 <= (char *)p, "aligned blocks overlap");
  free(p);
  free(q);
  TR_CHECK(posix_memalign(&p, 24, 10) == EINVAL, "alignment 24 accepted");
  char *r = malloc(10);
  memcpy(r, "0123456789", 10);
  r = realloc(r, 5000);
  TR_CHECK(r && memcmp(r, "0123456789", 10) == 0, "realloc lost the contents");
  free(r);
  int *z = calloc(100, sizeof *z);
  int sum = 0;
  for (int i = 0; i < 100; i++)
    sum |= z[i];
  TR_CHECK(z && sum == 0, "calloc not zeroed");
  free(z);
}

static void test_libc_rand_sequences(void)
{
  srand48(7);
  long a = lrand48(), b = lrand48();
  srand48(7);
  TR_CHECK(lrand48() == a && lrand48() == b, "srand48 does not repeat the sequence");
  srand48(8);
  TR_CHECK(lrand48() != a, "seeds 7 and 8 give the same first value");
  for (int i = 0; i < 100; i++) {
    double d = drand48();
    long l = lrand48();
    int r = rand();
    TR_CHECK(d >= 0 && d < 1 && l >= 0 && l < (1L << 31) && r >= 0 && r <= RAND_MAX,
             "out of range: %f %ld %d", d, l, r);
  }
  srand(3);
  int r1 = rand();
  srand(3);
  TR_CHECK(rand() == r1, "srand does not repeat");
}

static void test_libc_time_and_sysconf(void)
{
  struct timeval t0, t1;
  struct timespec m, r;
  TR_CHECK(gettimeofday(&t0, NULL) == 0, "gettimeofday");
  TR_CHECK(usleep(30000) == 0, "usleep");
  gettimeofday(&t1, NULL);
  long us = (t1.tv_sec - t0.tv_sec) * 1000000 + (t1.tv_usec - t0.tv_usec);
  TR_CHECK(us >= 30000 && t1.tv_usec < 1000000, "usleep(30 ms) took %ld us", us);
  TR_CHECK(clock_gettime(CLOCK_MONOTONIC, &m) == 0 && clock_gettime(CLOCK_REALTIME, &r) == 0 &&
           m.tv_nsec < 1000000000 && m.tv_sec >= t1.tv_sec, "clock_gettime");
  errno = 0;
  TR_CHECK(clock_gettime(99, &m) == -1 && errno == EINVAL, "bad clock id accepted");
  time_t t;
  TR_CHECK(time(&t) == t && t >= t1.tv_sec, "time");
  struct timespec req = { 0, 20 * 1000000 };
  unsigned long before = clock_ns();
  TR_CHECK(nanosleep(&req, NULL) == 0 && clock_ns() - before >= 20 * MS, "nanosleep");
  TR_CHECK(sysconf(_SC_PAGESIZE) == 4096 && getpagesize() == 4096, "page size");
  TR_CHECK(sysconf(_SC_NPROCESSORS_ONLN) >= 1, "processors");
  errno = 0;
  TR_CHECK(sysconf(12345) == -1 && errno == EINVAL, "unknown sysconf name");
}

static void test_libc_inet_addresses(void)
{
  struct in_addr a;
  char text[INET_ADDRSTRLEN];
  TR_CHECK(inet_pton(AF_INET, "10.0.0.2", &a) == 1 && a.s_addr == htonl(0x0a000002),
           "inet_pton: %x", a.s_addr);
  TR_CHECK(memcmp(&a.s_addr, "\x0a\x00\x00\x02", 4) == 0, "not network byte order");
  TR_CHECK(inet_pton(AF_INET, "256.1.1.1", &a) == 0 && inet_pton(AF_INET, "1.2.3", &a) == 0,
           "malformed accepted");
  errno = 0;
  TR_CHECK(inet_pton(12345, "1.2.3.4", &a) == -1 && errno == EAFNOSUPPORT, "unknown family");
  a.s_addr = htonl(0xc0a80101);
  TR_CHECK(inet_ntop(AF_INET, &a, text, sizeof text) == text &&
           strcmp(text, "192.168.1.1") == 0, "inet_ntop: %s", text);
  TR_CHECK(inet_ntop(AF_INET, &a, text, 8) == NULL, "inet_ntop overflowed");
  TR_CHECK(inet_addr("1.2.3.4") == htonl(0x01020304) && inet_addr("x") == INADDR_NONE,
           "inet_addr");
  TR_CHECK(strcmp(inet_ntoa(a), "192.168.1.1") == 0, "inet_ntoa");
  TR_CHECK(htonl(0x01020304) == 0x04030201 && ntohs(0x1234) == 0x3412 &&
           htobe64(0x0102030405060708UL) == 0x0807060504030201UL && le32toh(5) == 5 &&
           be16toh(htobe16(0xbeef)) == 0xbeef, "byte order");
}

static void test_libc_getaddrinfo_numeric(void)
{
  struct addrinfo hints = { 0 }, *res = NULL;
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  TR_CHECK(getaddrinfo("10.0.0.1", "7471", &hints, &res) == 0 && res, "numeric host");
  struct sockaddr_in *sin = (struct sockaddr_in *)res->ai_addr;
  TR_CHECK(res->ai_family == AF_INET && res->ai_socktype == SOCK_STREAM &&
           res->ai_addrlen == sizeof *sin && sin->sin_family == AF_INET &&
           sin->sin_port == htons(7471) && sin->sin_addr.s_addr == htonl(0x0a000001) &&
           res->ai_next == NULL, "result fields");
  freeaddrinfo(res);
  hints.ai_flags = AI_PASSIVE;
  TR_CHECK(getaddrinfo(NULL, "20000", &hints, &res) == 0, "passive");
  sin = (struct sockaddr_in *)res->ai_addr;
  TR_CHECK(sin->sin_addr.s_addr == INADDR_ANY && sin->sin_port == htons(20000), "INADDR_ANY");
  freeaddrinfo(res);
  TR_CHECK(getaddrinfo("example.com", "80", &hints, &res) == EAI_NONAME, "a name resolved");
  TR_CHECK(getaddrinfo("1.2.3.4", "http", &hints, &res) == EAI_SERVICE, "a service name");
  hints.ai_family = AF_INET6;
  TR_CHECK(getaddrinfo("1.2.3.4", "80", &hints, &res) == EAI_FAMILY, "AF_INET6");
  TR_CHECK(strcmp(gai_strerror(EAI_NONAME), "Name or service not known") == 0, "gai_strerror");
}

// O_EXCL refuses an existing path; the mode argument is taken.
static void test_libc_open_exclusive(void)
{
  const char *path = "ut_libc_excl";
  unlink(path);
  int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
  TR_CHECK(fd >= 0, "O_CREAT|O_EXCL of a new file failed");
  TR_CHECK(write(fd, "abc", 3) == 3, "write");
  close(fd);
  TR_CHECK(open(path, O_CREAT | O_EXCL | O_RDWR, 0644) == -1, "O_EXCL opened an existing file");
  TR_CHECK(open("/", O_CREATE | O_EXCL | O_RDONLY) == -1, "O_EXCL opened a directory");
  fd = open(path, O_CREAT | O_RDWR, 0644);   // without O_EXCL: the same file, kept
  struct stat st;
  TR_CHECK(fd >= 0 && fstat(fd, &st) == 0 && st.size == 3, "O_CREAT alone lost the file");
  close(fd);
  TR_CHECK(unlink(path) == 0, "unlink");
}

static void test_libc_file_streams(void)
{
  const char *path = "ut_libc_stream";
  FILE *f = fopen(path, "w");
  TR_CHECK(f != NULL, "fopen w");
  TR_CHECK(fprintf(f, "%s line\n", "first") == 11 && fputc('x', f) == 'x' &&
           fwrite("yz\n", 1, 3, f) == 3 && dprintf(fileno(f), "%s", "last") == 4, "writes");
  TR_CHECK(fclose(f) == 0, "fclose");
  f = fopen(path, "rb");
  char line[8], rest[16];
  TR_CHECK(f && fgets(line, sizeof line, f) == line && strcmp(line, "first l") == 0,
           "fgets cut at the buffer: \"%s\"", line);
  TR_CHECK(fgets(line, sizeof line, f) && strcmp(line, "ine\n") == 0, "fgets to newline");
  TR_CHECK(fgetc(f) == 'x' && ungetc('X', f) == 'X' && fgetc(f) == 'X', "fgetc/ungetc");
  size_t n = fread(rest, 1, sizeof rest, f);
  TR_CHECK(n == 7 && memcmp(rest, "yz\nlast", 7) == 0 && feof(f) && !ferror(f), "fread %d",
           (int)n);
  TR_CHECK(fgetc(f) == EOF && fgets(line, sizeof line, f) == NULL, "reads past the end");
  fclose(f);
  errno = 0;
  TR_CHECK(fopen(path, "a") == NULL && errno == EINVAL, "mode a accepted");
  TR_CHECK(fopen("ut_libc_no_such", "r") == NULL && errno == ENOENT, "missing file opened");
  TR_CHECK(fileno(stdout) == 1 && fileno(stderr) == 2 && fileno(stdin) == 0, "std streams");
  unlink(path);
}

const struct tr_case ut_libc_tests[] = {
  { "libc_printf_formats", test_libc_printf_formats, TR_QUICK, 0 },
  { "libc_snprintf_truncates", test_libc_snprintf_truncates, TR_QUICK, 0 },
  { "libc_string_functions", test_libc_string_functions, TR_QUICK, 0 },
  { "libc_malloc_alignment_and_reuse", test_libc_malloc_alignment_and_reuse, TR_QUICK, 0 },
  { "libc_readline_from_pipe", test_libc_readline_from_pipe, TR_QUICK, 0 },
  { "libc_printf_integer_flags", test_libc_printf_integer_flags, TR_QUICK, 0 },
  { "libc_printf_floating_point", test_libc_printf_floating_point, TR_QUICK, 0 },
  { "libc_strtol_bases_and_range", test_libc_strtol_bases_and_range, TR_QUICK, 0 },
  { "libc_getopt_short_and_long", test_libc_getopt_short_and_long, TR_QUICK, 0 },
  { "libc_sscanf_fields", test_libc_sscanf_fields, TR_QUICK, 0 },
  { "libc_string_extras", test_libc_string_extras, TR_QUICK, 0 },
  { "libc_basename_dirname", test_libc_basename_dirname, TR_QUICK, 0 },
  { "libc_aligned_alloc_and_realloc", test_libc_aligned_alloc_and_realloc, TR_QUICK, 0 },
  { "libc_rand_sequences", test_libc_rand_sequences, TR_QUICK, 0 },
  { "libc_time_and_sysconf", test_libc_time_and_sysconf, TR_QUICK, 0 },
  { "libc_inet_addresses", test_libc_inet_addresses, TR_QUICK, 0 },
  { "libc_getaddrinfo_numeric", test_libc_getaddrinfo_numeric, TR_QUICK, 0 },
  { "libc_open_exclusive", test_libc_open_exclusive, TR_QUICK, 0 },
  { "libc_file_streams", test_libc_file_streams, TR_QUICK, 0 },
  { NULL },
};
