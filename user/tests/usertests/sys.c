// sys.c: tests of the system call layer itself and of sysinfo/getpid.
#include "ut.h"

// Traps with an arbitrary syscall number; the stubs can't do that.
static long raw_syscall(long number, long arg0)
{
  register long a0 asm("a0") = arg0;
  register long a7 asm("a7") = number;
  asm volatile("ecall" : "+r"(a0) : "r"(a7) : "memory");
  return a0;
}

// 26 and 39 are holes between assigned numbers (a table lookup must not
// find a null handler there); move them if uapi.h ever assigns them.
static void test_sys_unknown_number_fails(void)
{
  long numbers[] = { 0, 26, 39, 999, 100000, -1, 0x7fffffff, 1L << 40 };
  for (int i = 0; i < (int)(sizeof numbers / sizeof numbers[0]); i++) {
    long r = raw_syscall(numbers[i], 0);
    TR_CHECK(r == -1, "syscall %ld returned %ld, expected -1", numbers[i], r);
  }
  TR_CHECK(getpid() > 0, "process unusable after bad syscalls");
}

static void test_sys_sysinfo_sane(void)
{
  struct sysinfo info;
  TR_CHECK(sysinfo(&info) == 0, "sysinfo failed");
  TR_CHECK(info.totalpages >= 1000 && info.totalpages <= (1UL << 24),
           "totalpages %lu implausible", info.totalpages);
  TR_CHECK(info.freepages > 0 && info.freepages < info.totalpages,
           "freepages %lu of %lu", info.freepages, info.totalpages);
  TR_CHECK(info.nproc >= 3, "nproc %u: init, sh, usertests and this test "
           "should be running", info.nproc);
  TR_CHECK(info.ncpu >= 1 && info.ncpu <= 64, "ncpu %u", info.ncpu);
}

// lock_parks counts contended spin-lock waits that parked: with two harts
// or more the boot self-test parks one waiter on purpose (selftest.c), so
// the count is at least 1, and it never goes back.
static void test_sys_sysinfo_lock_parks(void)
{
  struct sysinfo a, b;
  TR_CHECK(sysinfo(&a) == 0 && sysinfo(&b) == 0, "sysinfo failed");
  if (a.ncpu >= 2)
    TR_CHECK(a.lock_parks >= 1, "lock_parks %lu with %u harts: the boot self-test's park is missing",
             a.lock_parks, a.ncpu);
  TR_CHECK(b.lock_parks >= a.lock_parks, "lock_parks went back: %lu then %lu", a.lock_parks, b.lock_parks);
}

// nproc follows fork and wait.
static void test_sys_sysinfo_counts_procs(void)
{
  unsigned int before = ut_nproc();
  int p[2];
  TR_CHECK(pipe(p) == 0, "pipe");
  int pid = ut_fork();
  if (pid == 0) {
    char c;
    close(p[1]);
    read(p[0], &c, 1);   // park until the parent closes its end
    exit(0);
  }
  unsigned int during = ut_nproc();
  close(p[1]);
  ut_wait_for(pid);
  unsigned int after = ut_settle_nproc(before);
  TR_CHECK(during == before + 1, "nproc %u with a child, %u without",
           during, before);
  TR_CHECK(after == before, "nproc %u after wait, %u before", after, before);
}

// sysinfo's freepages moves when memory is allocated and freed.
static void test_sys_sysinfo_tracks_sbrk(void)
{
  unsigned long before = ut_freepages();
  char *p = sbrk(64 * PGSIZE);
  TR_CHECK(p != (char *)-1, "sbrk failed");
  for (int i = 0; i < 64; i++)
    p[i * PGSIZE] = 1;   // touch, in case the kernel allocates lazily
  unsigned long during = ut_freepages();
  sbrk(-64 * PGSIZE);
  unsigned long after = ut_freepages();
  TR_CHECK(during + 64 <= before, "freepages %lu -> %lu after 64 pages",
           before, during);
  TR_CHECK(after >= before - 2, "freepages %lu, baseline %lu", after, before);
}

static void test_sys_getpid_distinct(void)
{
  int p[2], child_pid = 0;
  TR_CHECK(pipe(p) == 0, "pipe");
  int me = getpid();
  int pid = ut_fork();
  if (pid == 0) {
    int mine = getpid();
    write(p[1], &mine, sizeof mine);
    exit(0);
  }
  TR_CHECK(read(p[0], &child_pid, sizeof child_pid) == sizeof child_pid,
           "no pid from child");
  ut_wait_for(pid);
  TR_CHECK(me > 0 && getpid() == me, "getpid not stable");
  TR_CHECK(child_pid == pid, "child says %d, fork said %d", child_pid, pid);
  TR_CHECK(child_pid != me, "child has the parent's pid");
}

// getrandom [SEC-RAND-9]: -1 for a bad pointer, a negative length or
// unknown flags; the buffer untouched by a refused call; at most
// GETRANDOM_MAX bytes per call.
static void test_sys_getrandom_bad_args_fail(void)
{
  unsigned long brk = PGROUNDUP((unsigned long)sbrk(0));
  unsigned long bad[] = { 0, brk + 4 * PGSIZE, KERNBASE, KDEV_UART, KSTACK_TOP_PAGE, MAXVA - 8, 1UL << 63 };
  for (int i = 0; i < (int)(sizeof bad / sizeof bad[0]); i++)
    TR_CHECK(getrandom((void *)bad[i], 16, 0) == -1, "bad pointer %lx accepted", bad[i]);
  unsigned char buf[16] = { 0 };
  TR_CHECK(getrandom(buf, -1, 0) == -1, "negative length accepted");
  TR_CHECK(getrandom(buf, 16, 1) == -1, "unknown flags accepted");
  for (int i = 0; i < 16; i++) TR_CHECK(buf[i] == 0, "a refused call wrote byte %d", i);
  static unsigned char big[2 * GETRANDOM_MAX];
  TR_CHECK(getrandom(big, sizeof big, 0) == GETRANDOM_MAX, "more than GETRANDOM_MAX bytes");
  TR_CHECK(getrandom(big, 0, 0) == 0, "empty request");
}

// Output is not constant: consecutive calls differ (two equal 32-byte
// draws: p = 2^-256), and so do neighbouring bytes within one.
static void test_sys_getrandom_varies(void)
{
  unsigned char a[32], b[32];
  TR_CHECK(getrandom(a, sizeof a, 0) == sizeof a && getrandom(b, sizeof b, 0) == sizeof b, "getrandom");
  TR_CHECK(memcmp(a, b, sizeof a) != 0, "two draws are equal");
  int repeats = 0;                         // neighbours equal: 1/256 each if random
  for (int i = 1; i < 32; i++) repeats += a[i] == a[i - 1];
  TR_CHECK(repeats < 8, "%d of 31 neighbouring bytes equal", repeats);
  unsigned int x = random_u32(), y = random_u32();
  TR_CHECK(x != y, "random_u32 repeats %x", x);
}

const struct tr_case ut_sys_tests[] = {
  { "sys_unknown_number_fails", test_sys_unknown_number_fails, TR_QUICK, 0 },
  { "sys_sysinfo_sane", test_sys_sysinfo_sane, TR_QUICK, 0 },
  { "sys_sysinfo_lock_parks", test_sys_sysinfo_lock_parks, TR_QUICK, 0 },
  { "sys_sysinfo_counts_procs", test_sys_sysinfo_counts_procs, TR_QUICK, 0 },
  { "sys_sysinfo_tracks_sbrk", test_sys_sysinfo_tracks_sbrk, TR_QUICK, 0 },
  { "sys_getpid_distinct", test_sys_getpid_distinct, TR_QUICK, 0 },
  { "sys_getrandom_bad_args_fail", test_sys_getrandom_bad_args_fail, TR_QUICK, 0 },
  { "sys_getrandom_varies", test_sys_getrandom_varies, TR_QUICK, 0 },
  { NULL },
};
