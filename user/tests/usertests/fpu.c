// fpu.c: tests of user-mode floating point (kernel/core/fpu.c): FP
// instructions run in user mode, and each process keeps its own f0-f31
// and fcsr across system calls, preemption and moves between harts.
#include "ut.h"

#define FPU_WORKERS 6          // more than the harts, so they share them
#define FPU_RUN_NS (1000 * MS) // long enough for many preemptions and moves

// fcsr's rounding-mode field (frm): 0 round to nearest, 1 toward zero.
static unsigned int frm_read(void)
{
  unsigned int v;
  asm volatile("frrm %0" : "=r"(v));
  return v;
}

static void frm_write(unsigned int v)
{
  asm volatile("fsrm %0" :: "r"(v));
}

// Adds a worker-specific exact binary fraction until the deadline, with a
// system call every 64 steps and a one-tick sleep every 4096 (a sleeper
// wakes on whichever hart is free: the moves between harts, with harts
// left idle, are what a stale copy of the registers would show in); the
// sum stays exact (below 2^53), so any mixing of another process's
// registers, or of an old copy of its own, shows as a wrong sum. Exits 0
// when right.
static void fpu_worker(int id)
{
  double step = 1.0 / (1 << (id + 1)), sum = 0;
  volatile double tenth = 1.0;
  frm_write(id & 1);   // odd workers round toward zero
  long n = 0;
  unsigned long deadline = clock_ns() + FPU_RUN_NS;
  while (clock_ns() < deadline) {
    sum += step;
    n++;
    if (n % 64 == 0)
      getpid();
    if (n % 4096 == 0)
      sleep(1);
  }
  tenth = tenth / 10;   // nearest rounds up, toward zero rounds down
  int ok = sum == step * n && frm_read() == (unsigned)(id & 1);
  ok = ok && (id & 1 ? tenth < 0.1 : tenth == 0.1);
  exit(ok ? 0 : 1);
}

static void test_fpu_processes_keep_their_registers(void)
{
  int pids[FPU_WORKERS];
  for (int i = 0; i < FPU_WORKERS; i++) {
    pids[i] = ut_fork();
    if (pids[i] == 0)
      fpu_worker(i);
  }
  for (int done = 0; done < FPU_WORKERS; done++) {
    int status = -1, pid = wait(&status), i = 0;
    while (i < FPU_WORKERS && pids[i] != pid)
      i++;
    TR_CHECK(i < FPU_WORKERS, "wait returned %d, not a worker", pid);
    TR_CHECK(status == 0, "worker %d saw FP state it did not write", i);
  }
}

// A child starts with its parent's FP registers; exec starts from zero.
static void test_fpu_fork_copies_state(void)
{
  volatile double v = 2.5;
  frm_write(1);
  double x = v * 3;
  int pid = ut_fork();
  if (pid == 0)
    exit(x == 7.5 && frm_read() == 1 ? 0 : 1);
  TR_CHECK(ut_wait_for(pid) == 0, "the child's FP state differs");
  TR_CHECK(frm_read() == 1, "the parent lost its rounding mode");
}

static void test_fpu_printf_float(void)
{
  char buf[64];
  volatile double r = 2.0;
  double root = r;
  for (int i = 0; i < 30; i++)   // Newton's method for sqrt(2)
    root = (root + r / root) / 2;
  snprintf(buf, sizeof buf, "%f %.3e", root, root * 1000);
  TR_CHECK(strcmp(buf, "1.414214 1.414e+03") == 0, "got \"%s\"", buf);
}

const struct tr_case ut_fpu_tests[] = {
  { "fpu_processes_keep_their_registers", test_fpu_processes_keep_their_registers, TR_QUICK, 0 },
  { "fpu_fork_copies_state", test_fpu_fork_copies_state, TR_QUICK, 0 },
  { "fpu_printf_float", test_fpu_printf_float, TR_QUICK, 0 },
  { NULL },
};
