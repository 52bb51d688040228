// selftest.c: boot-time checks of kernel services that user programs
// cannot reach directly. Runs in a kthread so the rest of boot is not
// delayed. Currently: ktimer precision (arm short deadlines, print how
// late each callback ran) and ktimer_cancel.
#include "types.h"
#include "lock.h"
#include "proc.h"
#include "printk.h"
#include "timer.h"
#include "selftest.h"

struct probe {
  struct spinlock lock;
  struct ktimer timer;
  uint64 fired_ns;          // 0 until the callback runs
};

static void probe_fire(void *arg) {     // interrupt context
  struct probe *pr = arg;
  spin_lock(&pr->lock);
  pr->fired_ns = clock_ns();
  proc_wakeup(pr);
  spin_unlock(&pr->lock);
}

// Arms a timer delay_ns ahead and returns how late it fired, in ns.
static uint64 measure_lateness(struct probe *pr, uint64 delay_ns) {
  pr->fired_ns = 0;
  uint64 deadline = clock_ns() + delay_ns;
  ktimer_arm(&pr->timer, deadline, probe_fire, pr);
  spin_lock(&pr->lock);
  while (pr->fired_ns == 0)
    proc_sleep(pr, &pr->lock);
  spin_unlock(&pr->lock);
  if (pr->fired_ns < deadline) panic("ktimer fired %d ns early", (int)(deadline - pr->fired_ns));
  return pr->fired_ns - deadline;
}

static void selftest_thread(void *arg) {
  (void)arg;
  static struct probe pr;
  spin_init(&pr.lock, "selftest");
  uint64 worst = 0, total = 0;
  for (int i = 0; i < 5; i++) {
    uint64 late = measure_lateness(&pr, 300 * 1000);
    total += late;
    if (late > worst) worst = late;
  }
  struct ktimer never = {0};
  ktimer_arm(&never, clock_ns() + 1000000000ULL, probe_fire, &pr);
  if (ktimer_cancel(&never) != 1 || ktimer_cancel(&never) != 0) panic("ktimer_cancel misbehaves");
  kprintf("selftest: ktimer 300us deadline x5: mean lateness %d us, worst %d us\n",
          (int)(total / 5000), (int)(worst / 1000));
}

void selftest_start(void) {
  if (kthread_start("selftest", selftest_thread, NULL) < 0) panic("selftest: no slot");
}
