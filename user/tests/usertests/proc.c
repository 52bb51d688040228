// proc.c: tests of fork, exit, wait, kill and exec.
#include "ut.h"

static void test_proc_wait_status_propagates(void)
{
  int statuses[] = { 0, 1, 42, 255, -3, 100000 };
  int n = sizeof statuses / sizeof statuses[0];
  for (int i = 0; i < n; i++) {
    int pid = ut_fork();
    if (pid == 0)
      exit(statuses[i]);
    int got = ut_wait_for(pid);
    TR_CHECK(got == statuses[i], "exit(%d) reached wait as %d",
             statuses[i], got);
  }
}

static void test_proc_wait_many_children(void)
{
  enum { N = 12 };
  int seen[N] = { 0 }, pids[N];
  for (int i = 0; i < N; i++) {
    pids[i] = ut_fork();
    if (pids[i] == 0)
      exit(10 + i);
  }
  for (int k = 0; k < N; k++) {
    int status, pid = wait(&status);
    int i = status - 10;
    TR_CHECK(i >= 0 && i < N && pids[i] == pid && !seen[i],
             "wait gave pid %d status %d", pid, status);
    seen[i] = 1;
  }
  TR_CHECK(wait(NULL) == -1, "wait with no children left must fail");
}

static void test_proc_wait_without_children_fails(void)
{
  TR_CHECK(wait(NULL) == -1, "wait returned a child that does not exist");
  int status;
  TR_CHECK(wait(&status) == -1, "wait(&status) with no children");
}

// Memory is copied at fork: the child's writes don't reach the parent.
static int shared_value = 1;
static void test_proc_fork_copies_memory(void)
{
  char *heap = malloc(8192);
  TR_CHECK(heap != NULL, "malloc");
  memset(heap, 'p', 8192);
  int pid = ut_fork();
  if (pid == 0) {
    shared_value = 2;
    memset(heap, 'c', 8192);
    exit(shared_value == 2 && heap[8191] == 'c' ? 0 : 1);
  }
  TR_CHECK(ut_wait_for(pid) == 0, "child did not see its own writes");
  TR_CHECK(shared_value == 1, "child's write to data reached the parent");
  TR_CHECK(heap[0] == 'p' && heap[8191] == 'p',
           "child's write to the heap reached the parent");
}

// A killed child must not come back with status 0.
static void check_killed_promptly(int pid)
{
  sleep(5);
  unsigned long t0 = ut_now_ms();
  TR_CHECK(kill(pid) == 0, "kill(%d) failed", pid);
  int status = ut_wait_for(pid);
  unsigned long took = ut_now_ms() - t0;
  TR_CHECK(status != 0, "killed child exited with 0");
  TR_CHECK(took < 1000, "killed child took %lu ms to die", took);
}

static void test_proc_kill_sleeping_child(void)
{
  int pid = ut_fork();
  if (pid == 0) {
    sleep(100000);
    exit(0);
  }
  check_killed_promptly(pid);
}

static void test_proc_kill_looping_child(void)
{
  int pid = ut_fork();
  if (pid == 0) {
    for (volatile unsigned long i = 0;; i++)
      ;
  }
  check_killed_promptly(pid);
}

static void test_proc_kill_blocked_reader(void)
{
  int p[2];
  TR_CHECK(pipe(p) == 0, "pipe");
  int pid = ut_fork();
  if (pid == 0) {
    char c;
    close(p[1]);
    read(p[0], &c, 1);   // blocks: nobody writes, but the parent holds p[1]
    exit(0);
  }
  check_killed_promptly(pid);
  close(p[0]);
  close(p[1]);
}

static void test_proc_kill_bad_pid_fails(void)
{
  int pids[] = { -1, -100, 0x7fffffff, 99999 };
  for (int i = 0; i < 4; i++)
    TR_CHECK(kill(pids[i]) == -1, "kill(%d) succeeded", pids[i]);
}

static void test_proc_kill_self(void)
{
  int pid = ut_fork();
  if (pid == 0) {
    kill(getpid());
    for (int i = 0; i < 100; i++)
      sleep(1);   // the kill takes effect at the latest on return from here
    exit(0);
  }
  TR_CHECK(ut_wait_for(pid) != 0, "a process survived killing itself");
}

// A child forks a grandchild and exits; init must reap the orphan.
static void test_proc_orphans_reaped(void)
{
  unsigned int before = ut_nproc();
  int pid = ut_fork();
  if (pid == 0) {
    for (int i = 0; i < 5; i++) {
      if (fork() == 0) {
        sleep(10);
        exit(0);
      }
    }
    exit(0);
  }
  ut_wait_for(pid);
  sleep(20);
  unsigned int after = ut_settle_nproc(before);
  TR_CHECK(after == before, "%u processes before, %u after the orphans died",
           before, after);
}

// Forks until the kernel refuses; everyone then exits and is reaped.
static void test_proc_fork_until_limit(void)
{
  unsigned int before = ut_nproc();
  unsigned long free_before = ut_freepages();
  int p[2], count = 0;
  TR_CHECK(pipe(p) == 0, "pipe");
  for (; count < 5000; count++) {
    int pid = fork();
    if (pid < 0)
      break;
    if (pid == 0) {
      char c;
      close(p[1]);
      read(p[0], &c, 1);   // wait for the parent to close p[1]
      exit(0);
    }
  }
  close(p[1]);
  close(p[0]);
  for (int i = 0; i < count; i++)
    TR_CHECK(wait(NULL) > 0, "reaped only %d of %d children", i, count);
  TR_CHECK(wait(NULL) == -1, "an extra child appeared");
  TR_CHECK(count >= 8 && count < 5000, "fork succeeded %d times", count);
  TR_CHECK(ut_settle_nproc(before) == before, "process count did not return");
  unsigned long free_after = ut_settle_freepages(free_before);
  TR_CHECK(free_after >= free_before, "lost %lu pages",
           free_before - free_after);
}

// A fork+exec+exit cycle returns every page it used.
static void test_proc_exec_exit_frees_pages(void)
{
  char out[64];
  int len;
  char *argv[] = { "/echo", "hello", NULL };
  ut_run_capture(argv, out, sizeof out, &len);   // warm up caches
  unsigned long before = ut_freepages();
  for (int i = 0; i < 5; i++) {
    TR_CHECK(ut_run_capture(argv, out, sizeof out, &len) == 0, "echo failed");
    TR_CHECK(len == 6 && memcmp(out, "hello\n", 6) == 0, "echo output");
  }
  unsigned long after = ut_settle_freepages(before);
  TR_CHECK(after >= before, "%lu pages not returned", before - after);
}

// A child that grabbed many pages gives them all back when it exits.
static void test_proc_big_child_frees_pages(void)
{
  unsigned long before = ut_freepages();
  int pid = ut_fork();
  if (pid == 0) {
    char *p = sbrk(1024 * PGSIZE);
    if (p == (char *)-1)
      exit(2);
    for (int i = 0; i < 1024; i++)
      p[i * PGSIZE] = (char)i;
    exit(0);
  }
  TR_CHECK(ut_wait_for(pid) == 0, "child could not grow by 4 MiB");
  unsigned long after = ut_settle_freepages(before);
  TR_CHECK(after >= before, "%lu pages not returned", before - after);
}

static void test_proc_fork_storm(void)
{
  unsigned int before = ut_nproc();
  for (int round = 0; round < 10; round++) {
    int made = 0;
    for (int i = 0; i < 20; i++) {
      int pid = fork();
      if (pid == 0)
        exit(i);
      made += pid > 0;
    }
    TR_CHECK(made >= 10, "only %d forks in round %d", made, round);
    for (int i = 0; i < made; i++)
      TR_CHECK(wait(NULL) > 0, "lost a child");
  }
  TR_CHECK(ut_settle_nproc(before) == before, "process count grew");
}

const struct tr_case ut_proc_tests[] = {
  { "proc_wait_status_propagates", test_proc_wait_status_propagates, TR_QUICK, 0 },
  { "proc_wait_many_children", test_proc_wait_many_children, TR_QUICK, 0 },
  { "proc_wait_without_children_fails", test_proc_wait_without_children_fails, TR_QUICK, 0 },
  { "proc_fork_copies_memory", test_proc_fork_copies_memory, TR_QUICK, 0 },
  { "proc_kill_sleeping_child", test_proc_kill_sleeping_child, TR_QUICK, 0 },
  { "proc_kill_looping_child", test_proc_kill_looping_child, TR_QUICK, 0 },
  { "proc_kill_blocked_reader", test_proc_kill_blocked_reader, TR_QUICK, 0 },
  { "proc_kill_bad_pid_fails", test_proc_kill_bad_pid_fails, TR_QUICK, 0 },
  { "proc_kill_self", test_proc_kill_self, TR_QUICK, 0 },
  { "proc_orphans_reaped", test_proc_orphans_reaped, TR_QUICK, 0 },
  { "proc_fork_until_limit", test_proc_fork_until_limit, TR_QUICK, 0 },
  { "proc_exec_exit_frees_pages", test_proc_exec_exit_frees_pages, TR_QUICK, 0 },
  { "proc_big_child_frees_pages", test_proc_big_child_frees_pages, TR_QUICK, 0 },
  { "proc_fork_storm", test_proc_fork_storm, TR_SLOW, 0 },
  { NULL },
};
