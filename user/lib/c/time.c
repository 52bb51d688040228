// time.c: time of day and sleeping in POSIX terms (<time.h>,
// <sys/time.h>, usleep/sleep of <unistd.h>), over clock_ns() (user/lib/c/clock.c).
// The machine has no calendar clock: CLOCK_REALTIME, gettimeofday and time
// count from the boot, like CLOCK_MONOTONIC.
#include "user.h"

#define NS_PER_US  1000UL
#define NS_PER_SEC 1000000000UL

int clock_gettime(clockid_t id, struct timespec *ts)
{
  if ((id != CLOCK_REALTIME && id != CLOCK_MONOTONIC) || ts == NULL) {
    errno = EINVAL;
    return -1;
  }
  unsigned long ns = clock_ns();
  ts->tv_sec = ns / NS_PER_SEC;
  ts->tv_nsec = ns % NS_PER_SEC;
  return 0;
}

// tz is accepted and ignored (obsolete in POSIX).
int gettimeofday(struct timeval *tv, void *tz)
{
  (void)tz;
  if (tv) {
    unsigned long ns = clock_ns();
    tv->tv_sec = ns / NS_PER_SEC;
    tv->tv_usec = ns % NS_PER_SEC / NS_PER_US;
  }
  return 0;
}

time_t time(time_t *out)
{
  time_t t = clock_ns() / NS_PER_SEC;
  if (out)
    *out = t;
  return t;
}

// Processor time is not counted separately: the time since the boot.
clock_t clock(void)
{
  return clock_ns() / (NS_PER_SEC / CLOCKS_PER_SEC);
}

// Sleeps whole ticks (TICK_NS) until ns have passed, at least one tick
// for any ns > 0; returns -1 if the sleep was cut short by a kill.
static int sleep_ns(unsigned long ns)
{
  unsigned long deadline = clock_ns() + ns;
  while (clock_ns() < deadline) {
    unsigned long left = deadline - clock_ns();
    if (sleep((left + TICK_NS - 1) / TICK_NS) < 0)
      return -1;
  }
  return 0;
}

int usleep(useconds_t us)
{
  return sleep_ns((unsigned long)us * NS_PER_US);
}

int nanosleep(const struct timespec *req, struct timespec *rem)
{
  if (req == NULL || req->tv_nsec < 0 || req->tv_nsec >= (long)NS_PER_SEC || req->tv_sec < 0) {
    errno = EINVAL;
    return -1;
  }
  if (rem)
    rem->tv_sec = rem->tv_nsec = 0;
  return sleep_ns(req->tv_sec * NS_PER_SEC + req->tv_nsec);
}

// POSIX sleep (<unistd.h> maps sleep to this): returns the seconds not slept.
unsigned int sleep_seconds(unsigned int s)
{
  return sleep_ns(s * NS_PER_SEC) < 0 ? s : 0;
}
