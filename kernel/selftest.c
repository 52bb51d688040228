// selftest.c: boot-time checks of kernel services that user programs
// cannot reach directly. Runs in a kthread so the rest of boot is not
// delayed. Checks: ktimer precision (arm short deadlines, print how late
// each callback ran) and ktimer_cancel; page pinning (a pinned page
// survives the destruction of its address space until unpinned); memmove
// against a byte-at-a-time copy for every alignment pair, disjoint and
// overlapping; a spin lock waiter on another hart parks in wfi instead of
// spinning, and gets the lock once it is released; proc_sleep_until wakes
// at its deadline, and earlier for a proc_wakeup; a tick leaves a kernel
// thread its hart through its first tick and takes it at its second
// (trap.c's rule for bottom halves).
// Failures panic; results are printed only with the boot argument
// "selftest". Boot argument "kpanic" panics on purpose, to check that a
// panic powers QEMU off with a failure status.
#include "lib/types.h"
#include "core/lock.h"
#include "core/proc.h"
#include "proc/lifecycle.h"
#include "core/printk.h"
#include "core/timer.h"
#include "selftest.h"
#include "lib/riscv.h"
#include "core/pmem.h"
#include "core/vm.h"
#include "lib/bootarg.h"
#include "lib/klib.h"
#include "core/prof.h"

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

// Arms a timer delay_ns ahead and returns how late it fired, in ns. The
// thread either sleeps (the hart may idle in wfi) or spins with
// interrupts on (the hart stays busy).
static uint64 measure_lateness(struct probe *pr, uint64 delay_ns, int spin) {
  pr->fired_ns = 0;
  uint64 deadline = clock_ns() + delay_ns;
  ktimer_arm(&pr->timer, deadline, probe_fire, pr);
  while (spin && *(volatile uint64 *)&pr->fired_ns == 0)
    ;
  spin_lock(&pr->lock);
  while (pr->fired_ns == 0)
    proc_sleep(pr, &pr->lock);
  spin_unlock(&pr->lock);
  if (pr->fired_ns < deadline) panic("ktimer fired %d ns early", (int)(deadline - pr->fired_ns));
  return pr->fired_ns - deadline;
}

// Builds a throwaway address space of 4 pages, pins 2 of them, destroys
// the space, and checks the pinned pages stay allocated until unpinned.
static void check_pinning(void) {
  uint64 pa[4];
  void *tf = page_alloc();
  pagetable_t pt = tf ? uvm_create((uint64)tf) : NULL;
  if (!pt || uvm_grow(pt, 0, 4 * PGSIZE, PTE_W) < 0) panic("selftest: no memory for the pin check");
  if (uvm_pin(pt, PGSIZE + 100, PGSIZE, pa, 4) != 2) panic("uvm_pin: wrong page count");
  if (uvm_pin(pt, 3 * PGSIZE, 2 * PGSIZE, pa + 2, 2) != -1) panic("uvm_pin: pinned an unmapped range");
  if (uvm_pin(pt, MAXVA - PGSIZE, 2 * PGSIZE, pa + 2, 2) != -1) panic("uvm_pin: pinned beyond MAXVA");
  uvm_destroy(pt, 4 * PGSIZE);
  page_put((uint64)tf);
  if (page_refs(pa[0]) != 1 || page_refs(pa[1]) != 1) panic("pinned page lost its reference");
  uvm_unpin(pa, 2);                  // the last references: both pages free again
}

// memmove's word paths (aligned, shifted, overlapping) must move exactly
// what a byte loop moves, and nothing outside [dst, dst + n).
static uint8 mm_buf[2][3072];
static void check_memmove_case(int so, int doff, int n) {
  uint8 *src = mm_buf[0], *got = mm_buf[1];
  static uint8 want[3072];
  for (int i = 0; i < 3072; i++) { src[i] = (uint8)(i * 7 + 3); got[i] = want[i] = (uint8)(i * 13 + 1); }
  for (int i = 0; i < n; i++) want[64 + doff + i] = src[64 + so + i];
  memmove(got + 64 + doff, src + 64 + so, n);
  for (int i = 0; i < 3072; i++)
    if (got[i] != want[i]) panic("memmove(dst+%d, src+%d, %d) wrong at byte %d", doff, so, n, i - 64 - doff);
  // overlapping, both directions, within one buffer
  for (int i = 0; i < 3072; i++) got[i] = want[i] = (uint8)(i * 5 + 9);
  int shift = (so - doff) ? (so - doff) : 3;
  for (int i = 0; i < n; i++) want[1024 + shift + i] = got[1024 + i];
  memmove(got + 1024 + shift, got + 1024, n);
  for (int i = 0; i < 3072; i++)
    if (got[i] != want[i]) panic("memmove overlap shift %d, %d bytes wrong at byte %d", shift, n, i);
}

static void check_memmove(void) {
  static const int lens[] = {0, 1, 7, 8, 15, 16, 17, 31, 32, 33, 63, 100, 1024, 1031};
  for (int so = 0; so < 8; so++)
    for (int doff = 0; doff < 8; doff++)
      for (int k = 0; k < (int)ARRAY_LEN(lens); k++)
        check_memmove_case(so, doff, lens[k]);
}

// The holder (its own kthread) takes the lock, then holds it until it
// sees the waiter's parked bit; the waiter is the selftest thread on
// another hart. The holder gives up only PARK_GIVE_UP_NS after the waiter
// said it is about to take the lock: a bound that catches a waiter that
// never parks, far beyond any pause a loaded host gives a vCPU (a 2 s
// bound counted from the holder's start panicked a boot under load).
#define PARK_GIVE_UP_NS 30000000000ULL
// Once parked, the waiter is held PARK_HOLD_NS more with a timer
// interrupt pending (its stimecmp in the past) and must stay in one wfi:
// before park() masked the other interrupts, that wait was a loop
// through wfi, 2,000-3,000 passes in 2 ms. A stale or stray SSIP may
// cost a pass or two, and each of the profiler's samples one (prof=N
// samples through machine timer interrupts, which no sie bit masks).
#define PARK_HOLD_NS 2000000ULL
#define PARK_HOLD_MAX_WAITS 3
static struct {
  struct spinlock lock;
  volatile int held, waiting, released;
  volatile uint32 saw_parked;
  volatile uint64 waits_in_hold;
} park_probe;

static void park_holder(void *arg) {
  (void)arg;
  spin_lock(&park_probe.lock);
  park_probe.held = 1;
  while (!park_probe.waiting)
    ;
  uint64 give_up = clock_ns() + PARK_GIVE_UP_NS;
  uint32 seen = 0;
  // Keep the value that ended the loop: the waiter's bit flickers (an
  // SSIP ends its wfi, and it clears the bit before it parks again), so
  // a second read may miss it.
  while (!(seen = *(volatile uint32 *)&park_probe.lock.parked) && clock_ns() < give_up)
    ;
  park_probe.saw_parked = seen;
  if (seen) {
    volatile uint64 *waits = &spin_parks;   // the waiter's hart adds to it
    uint64 parks = *waits, until = clock_ns() + PARK_HOLD_NS;
    while (clock_ns() < until)
      ;
    park_probe.waits_in_hold = *waits - parks;
  }
  park_probe.released = 1;
  spin_unlock(&park_probe.lock);
}

static void check_spin_park(void) {
  if (ncpu_started < 2) return;              // one hart: nobody to wait on
  spin_init(&park_probe.lock, "park_probe");
  if (kthread_start("park_probe", park_holder, NULL) < 0) panic("selftest: no slot for park_probe");
  while (!park_probe.held)
    proc_yield();                            // lets the holder run, here or elsewhere
  uint64 parks = spin_parks;
  intr_push();
  uint64 cmp = csr_read(0x14d);              // stimecmp, put back below
  csr_write(0x14d, 0);                       // stimecmp in the past: STIP pending
  park_probe.waiting = 1;
  spin_lock(&park_probe.lock);
  int released = park_probe.released;
  spin_unlock(&park_probe.lock);
  csr_write(0x14d, cmp);
  intr_pop();
  if (!released) panic("spin_lock: got the lock while another hart held it");
  if (!park_probe.saw_parked || spin_parks == parks)
    panic("spin_lock: a waiter on a held lock did not park in wfi");
  if (park_probe.waits_in_hold > PARK_HOLD_MAX_WAITS + prof_samples_within(PARK_HOLD_NS))
    panic("spin_lock: a parked waiter left wfi %d times in %d us for a pending timer",
          (int)park_probe.waits_in_hold, (int)(PARK_HOLD_NS / 1000));
}

#define SAMPLES 15

static uint64 median_us(uint64 *v, int n) {
  for (int i = 1; i < n; i++)                   // insertion sort
    for (int j = i; j > 0 && v[j - 1] > v[j]; j--) { uint64 t = v[j]; v[j] = v[j - 1]; v[j - 1] = t; }
  return v[n / 2] / 1000;
}

// Measures SAMPLES lateness values while sleeping and while spinning.
// Prints them only if asked (boot argument "selftest"): the line would
// otherwise land in the middle of whatever the shell prints.
static void check_ktimer(struct probe *pr, int report) {
  uint64 late[2][SAMPLES], worst[2] = {0, 0};
  int samples = report ? SAMPLES : 3;
  for (int i = 0; i < 2 * samples; i++) {
    uint64 l = measure_lateness(pr, 300 * 1000, i % 2);
    late[i % 2][i / 2] = l;
    if (l > worst[i % 2]) worst[i % 2] = l;
  }
  struct ktimer never = {0};
  ktimer_arm(&never, clock_ns() + 1000000000ULL, probe_fire, pr);
  if (ktimer_cancel(&never) != 1 || ktimer_cancel(&never) != 0) panic("ktimer_cancel misbehaves");
  if (!report) return;
  kprintf("selftest: ktimer 300us deadline, lateness over %d runs: sleeping median %d us "
          "worst %d us, spinning median %d us worst %d us\n", samples,
          (int)median_us(late[0], samples), (int)(worst[0] / 1000),
          (int)median_us(late[1], samples), (int)(worst[1] / 1000));
}

// proc_sleep_until: nobody wakes the first sleep, so it must last until
// its deadline; a probe timer wakes the second one 1 ms in, so it must
// return before its far deadline; a deadline already past returns without
// sleeping. The far bounds only tell a wakeup from a deadline (or a hang):
// a loaded host may pause a vCPU for a long time, never for a minute.
#define SLEEP_FAR_NS 60000000000ULL
static void check_sleep_until(struct probe *pr) {
  spin_lock(&pr->lock);
  uint64 deadline = clock_ns() + 2000000;
  proc_sleep_until(&deadline, &pr->lock, deadline);
  uint64 now = clock_ns();
  if (now < deadline) panic("proc_sleep_until returned %d ns early", (int)(deadline - now));
  spin_unlock(&pr->lock);

  pr->fired_ns = 0;
  uint64 start = clock_ns();
  ktimer_arm(&pr->timer, start + 1000000, probe_fire, pr);
  spin_lock(&pr->lock);
  while (pr->fired_ns == 0 && clock_ns() < start + SLEEP_FAR_NS)
    proc_sleep_until(pr, &pr->lock, start + SLEEP_FAR_NS);
  spin_unlock(&pr->lock);
  if (pr->fired_ns == 0 || clock_ns() - start >= SLEEP_FAR_NS)
    panic("proc_sleep_until missed a proc_wakeup (%d ms)", (int)((clock_ns() - start) / 1000000));

  spin_lock(&pr->lock);
  start = clock_ns();
  proc_sleep_until(pr, &pr->lock, start - 1);
  spin_unlock(&pr->lock);
  if (clock_ns() - start >= SLEEP_FAR_NS) panic("proc_sleep_until slept past a deadline already gone");
}

// trap.c's tick rule, both halves: this kernel thread, given a hart anew,
// keeps it through the next tick (p->ticks_kept counts it) and loses it
// at the one after (the scheduler sets p->run_from again). A yield for a
// kernel thread that an interrupt woke, or a vCPU the host paused across
// two ticks, also changes run_from first; such a try is not counted. No
// clock bounds the second half: a tick pending when the scheduler gave the
// hart may be kept too, so KTHREAD_HOLD_TICKS kept ticks are allowed and
// one more is the rule failing (a host pause only makes the next tick
// yield).
#define TICK_RULE_TRIES 20
static void check_tick_rule(int report) {
  struct proc *p = current();
  volatile uint64 *run_from = &p->run_from, *ticks_kept = &p->ticks_kept;   // trap.c and sched.c write them
  int lost_first = 0;
  for (int t = 0; t < TICK_RULE_TRIES; t++) {
    proc_yield();
    uint64 from = *run_from, kept = *ticks_kept;
    while (*run_from == from && *ticks_kept == kept)
      ;
    if (*run_from != from) {          // switched out before or at its first tick
      lost_first++;
      continue;
    }
    while (*run_from == from && *ticks_kept - kept <= KTHREAD_HOLD_TICKS)
      ;
    if (*run_from == from) panic("tick rule: a kernel thread kept its hart past its second tick");
    if (report)
      kprintf("selftest: tick rule ok: a kernel thread kept its hart at its first tick, yielded by its "
              "second (%d earlier tries lost it first)\n", lost_first);
    return;
  }
  panic("tick rule: a kernel thread lost its hart before or at its first tick in %d of %d tries",
        lost_first, TICK_RULE_TRIES);
}

static void selftest_thread(void *arg) {
  (void)arg;
  static struct probe pr;
  int report = bootarg("selftest") != NULL;
  if (bootarg("kpanic")) panic("kpanic boot argument: deliberate panic");
  check_pinning();
  if (report) kprintf("selftest: pinning ok\n");
  check_memmove();
  if (report) kprintf("selftest: memmove ok\n");
  check_spin_park();
  if (report) kprintf("selftest: spin lock parking ok\n");
  spin_init(&pr.lock, "selftest");
  check_ktimer(&pr, report);
  check_sleep_until(&pr);
  if (report) kprintf("selftest: proc_sleep_until ok\n");
  check_tick_rule(report);
}

void selftest_start(void) {
  if (kthread_start("selftest", selftest_thread, NULL) < 0) panic("selftest: no slot");
}
