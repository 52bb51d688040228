// time.c: tests of clock_ns, sleep and uptime, and how they agree.
//
// Tolerances are wide because QEMU's timer runs on a busy host; they still
// catch a clock that is off by a factor, stalls or runs backwards.
#include "ut.h"

static void test_time_clock_monotonic(void)
{
  unsigned long prev = clock_ns();
  for (int i = 0; i < 20000; i++) {
    unsigned long now = clock_ns();
    TR_CHECK(now >= prev, "clock went back from %lu to %lu", prev, now);
    prev = now;
  }
  sleep(2);
  TR_CHECK(clock_ns() > prev, "clock did not advance across a sleep");
}

// clock_ns() reads the time CSR in user mode (user/lib/c/clock.c); the kernel's
// own clock (kclock_ns, a system call) must fall between two readings, on
// every hart the process may move to. Without scounteren.TM the rdtime
// traps and the test process dies.
static void test_time_user_clock_matches_kernel(void)
{
  TR_CHECK(timebase() > 0, "the kernel says user mode may not read the time CSR");
  for (int i = 0; i < 2000; i++) {
    unsigned long before = clock_ns(), kernel = kclock_ns(), after = clock_ns();
    TR_CHECK(before <= kernel && kernel <= after,
             "round %d: user %lu, kernel %lu, user again %lu", i, before, kernel, after);
    if (i % 200 == 0)
      sleep(1);                 // may resume on another hart
  }
}

// sleep(10) never returns early; the shortest of three lasts about 100 ms.
// A loaded host can only make a sleep longer, so the upper bound holds the
// best of the three, not each one.
static void test_time_sleep_matches_clock(void)
{
  unsigned long best = ~0UL;
  for (int i = 0; i < 3; i++) {
    unsigned long t0 = clock_ns();
    TR_CHECK(sleep(10) == 0, "sleep returned nonzero");
    unsigned long ms = (clock_ns() - t0) / MS;
    TR_CHECK(ms >= 90, "sleep(10) took only %lu ms", ms);
    best = ms < best ? ms : best;
  }
  TR_CHECK(best <= 300, "the shortest of three sleep(10) took %lu ms", best);
}

static void test_time_uptime_matches_clock(void)
{
  int u0 = uptime();
  unsigned long c0 = clock_ns();
  sleep(50);
  int u1 = uptime();
  unsigned long c1 = clock_ns();
  long ticks_ns = (long)(u1 - u0) * (long)TICK_NS;
  long clock_delta = (long)(c1 - c0);
  long diff = ticks_ns > clock_delta ? ticks_ns - clock_delta
                                     : clock_delta - ticks_ns;
  TR_CHECK(u1 - u0 >= 50, "uptime advanced %d ticks over sleep(50)", u1 - u0);
  TR_CHECK(diff <= 3 * (long)TICK_NS, "uptime says %ld ms, clock_ns %ld ms",
           ticks_ns / (long)MS, clock_delta / (long)MS);
}

// A child reads the clock after the parent's message reached it, so its
// reading can never be earlier than the parent's reading before sending,
// whichever harts the two run on.
static void test_time_clock_agrees_across_processes(void)
{
  int to_child[2], to_parent[2];
  TR_CHECK(pipe(to_child) == 0 && pipe(to_parent) == 0, "pipe");
  int pid = ut_fork();
  if (pid == 0) {
    unsigned long t;
    close(to_child[1]);   // or the loop below never sees end-of-file
    close(to_parent[0]);
    while (read(to_child[0], &t, sizeof t) == sizeof t) {
      unsigned long mine = clock_ns();
      write(to_parent[1], &mine, sizeof mine);
    }
    exit(0);
  }
  close(to_child[0]);
  close(to_parent[1]);
  for (int i = 0; i < 200; i++) {
    unsigned long sent = clock_ns(), child;
    write(to_child[1], &sent, sizeof sent);
    TR_CHECK(read(to_parent[0], &child, sizeof child) == sizeof child, "reply");
    unsigned long back = clock_ns();
    TR_CHECK(sent <= child && child <= back,
             "round %d: parent %lu, child %lu, parent again %lu", i, sent,
             child, back);
  }
  close(to_child[1]);
  ut_wait_for(pid);
}

// sleep(0) and a negative sleep return at once instead of hanging.
static void test_time_sleep_zero_and_negative(void)
{
  unsigned long t0 = ut_now_ms();
  sleep(0);
  TR_CHECK(ut_now_ms() - t0 < 100, "sleep(0) took %lu ms", ut_now_ms() - t0);
  int pid = ut_fork();
  if (pid == 0) {
    sleep(-1);
    sleep(-2147483647 - 1);
    exit(7);
  }
  sleep(100);
  kill(pid);   // fails harmlessly if the child is already done
  int status = ut_wait_for(pid);
  TR_CHECK(status == 7, "negative sleep did not return within 1 s");
}

const struct tr_case ut_time_tests[] = {
  { "time_clock_monotonic", test_time_clock_monotonic, TR_QUICK, 0 },
  { "time_user_clock_matches_kernel", test_time_user_clock_matches_kernel, TR_QUICK, 0 },
  { "time_sleep_matches_clock", test_time_sleep_matches_clock, TR_QUICK, 0 },
  { "time_uptime_matches_clock", test_time_uptime_matches_clock, TR_QUICK, 0 },
  { "time_sleep_zero_and_negative", test_time_sleep_zero_and_negative, TR_QUICK, 0 },
  { "time_clock_agrees_across_processes", test_time_clock_agrees_across_processes, TR_QUICK, 0 },
  { NULL },
};
