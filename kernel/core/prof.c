// prof.c: a sampling profiler for the whole kernel, off unless the boot
// argument prof=N is given (N microseconds between samples per hart, e.g.
// prof=200).
//
// Sampling happens in machine mode (machinevec.S): the CLINT's machine
// timer interrupts a hart every N us even while the kernel runs with
// interrupts off (every spin-locked section, so most of the RDMA and
// network paths), and the handler appends the interrupted pc to prof_ring
// (bit 0 marks a user pc). An idle hart samples the scheduler's wfi.
// At halt, prof_dump() folds the ring (the last PROF_RING samples) into a
// pc -> count table and prints the hottest pcs as "prof: <pc> <count>";
// resolve them on the host with riscv64-unknown-elf-addr2line -f -e
// kernel/kernel (bench/prof.py does it and sums per function).
#include "lib/types.h"
#include "core/lock.h"
#include "core/timer.h"
#include "core/printk.h"
#include "lib/bootarg.h"
#include "lib/memlayout.h"
#include "core/prof.h"

#define PROF_RING  65536              // machinevec.S masks with PROF_RING - 1
#define PROF_SLOTS 4096               // distinct pcs folded at dump; power of 2
#define PROF_TOP   80

uint64 prof_period;                   // time units between samples; 0 = off (machinevec.S reads it)
uint64 prof_next;                     // samples taken (machinevec.S: amoadd)
uint64 prof_ring[PROF_RING];
static uint64 prof_us;                // prof=N as given; 0 = off
static struct { uint64 pc, count; } table[PROF_SLOTS];

// Boot, hart 0, after timer_init. The other harts' timers start on their
// own: mtimecmp resets to 0, so their first machine timer interrupt comes
// at once and arms the next.
void prof_init(uint64 timebase_hz) {
  uint64 us = bootarg_uint("prof", 0);
  if (us == 0) return;
  prof_us = us;
  prof_period = us * timebase_hz / 1000000;
  if (prof_period == 0) prof_period = 1;
  __sync_synchronize();
  *(volatile uint64 *)KDEV(CLINT_MTIMECMP(0)) = *(volatile uint64 *)KDEV(CLINT_MTIME) + prof_period;
  kprintf("prof: sampling every %d us\n", (int)us);
}

static void count(uint64 pc) {
  uint32 h = (uint32)((pc >> 1) * 0x9e3779b1u) & (PROF_SLOTS - 1);
  for (int i = 0; i < PROF_SLOTS; i++, h = (h + 1) & (PROF_SLOTS - 1)) {
    if (table[h].pc == pc || table[h].pc == 0) {
      table[h].pc = pc;
      table[h].count++;
      return;
    }
  }
}

// Each sample is a machine timer interrupt, which ends a wfi whatever sie
// masks: a parked spin-lock waiter (spinlock.c) wakes once per sample, and
// the boot self-test that counts its wakeups allows for them.
uint64 prof_samples_within(uint64 ns) {
  return prof_us ? ns / (prof_us * 1000) + 1 : 0;
}

// Halt: stops sampling, prints the PROF_TOP hottest kernel pcs.
void prof_dump(void) {
  if (!prof_period) return;
  prof_period = 0;
  __sync_synchronize();
  uint64 n = prof_next < PROF_RING ? prof_next : PROF_RING, user = 0;
  for (uint64 i = 0; i < n; i++) {
    if (prof_ring[i] & 1) user++;
    else count(prof_ring[i]);
  }
  kprintf("prof: samples %d (last %d) user %d\n", (int)prof_next, (int)n, (int)user);
  for (int k = 0; k < PROF_TOP; k++) {
    int best = -1;
    for (int i = 0; i < PROF_SLOTS; i++)
      if (table[i].count && (best < 0 || table[i].count > table[best].count)) best = i;
    if (best < 0) break;
    kprintf("prof: %p %d\n", table[best].pc, (int)table[best].count);
    table[best].count = 0;
  }
}
