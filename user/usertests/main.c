// main.c: the usertests runner.
//
// Usage: usertests [-q] [-l] [name...]
//   -q      quick: skip tests marked slow
//   -l      list the test names and exit
//   name    run only the tests with this name, or whose name starts with
//           "name_" (so "usertests fs" runs every fs test)
//
// Each test runs in a forked child; a sleeping watchdog child kills it if
// it runs past its timeout. The child reports why it failed through a pipe
// (see ut_fail); the runner then prints one line per test,
//   test <name>: OK        or        test <name>: FAILED (<why>)
// and at the end exactly "<passed> passed, <failed> failed". The exit
// status is 0 only if nothing failed.
#include "ut.h"

#define DEFAULT_TIMEOUT_S 60

static const struct ut_test *const modules[] = {
  ut_sys_tests, ut_proc_tests, ut_exec_tests, ut_mem_tests, ut_badptr_tests,
  ut_badptr_ext_tests, ut_net_tests, ut_fd_tests,
  ut_pipe_tests, ut_fs_tests, ut_time_tests, ut_smp_tests, ut_libc_tests,
};
#define NMODULES (int)(sizeof modules / sizeof modules[0])

struct options {
  int quick;
  int list;
  char **names;
  int nnames;
};

static int selected(const struct ut_test *t, const struct options *o)
{
  if (o->quick && t->speed == UT_SLOW)
    return 0;
  if (o->nnames == 0)
    return 1;
  for (int i = 0; i < o->nnames; i++) {
    int n = strlen(o->names[i]);
    if (strcmp(t->name, o->names[i]) == 0 ||
        (strncmp(t->name, o->names[i], n) == 0 && t->name[n] == '_'))
      return 1;
  }
  return 0;
}

static int start_watchdog(int seconds)
{
  int pid = fork();
  if (pid == 0) {
    sleep(seconds * (int)(1000000000ULL / TICK_NS));
    exit(0);
  }
  return pid;
}

static int start_test(const struct ut_test *t, int report[2])
{
  int pid = fork();
  if (pid == 0) {
    close(report[0]);
    ut_report_fd = report[1];
    t->run();
    exit(0);
  }
  return pid;
}

// Collects the test child and the watchdog. Returns the test's exit
// status and sets *timed_out if the watchdog fired first.
static int collect(int test_pid, int watchdog, int *timed_out)
{
  int status = 0, test_status = 0, pending = 2;
  *timed_out = 0;
  while (pending > 0) {
    int pid = wait(&status);
    if (pid < 0)
      break;
    pending--;
    if (pid == test_pid) {
      test_status = status;
      if (pending)
        kill(watchdog);
    } else if (pid == watchdog && pending) {
      *timed_out = 1;
      kill(test_pid);
    }
  }
  return test_status;
}

// Reads the failure reason up to the '\n' the runner itself appends.
static void read_reason(int report[2], char *why, int size)
{
  int len = 0;
  char c;
  write(report[1], "\n", 1);
  while (read(report[0], &c, 1) == 1 && c != '\n') {
    if (len + 1 < size)
      why[len++] = c;
  }
  why[len] = 0;
}

// Runs one test; returns 1 if it passed.
static int run_one(const struct ut_test *t)
{
  int report[2], timed_out;
  char why[200];
  int seconds = t->timeout_s ? t->timeout_s : DEFAULT_TIMEOUT_S;
  if (pipe(report) < 0) {
    printf("test %s: FAILED (runner: pipe failed)\n", t->name);
    return 0;
  }
  int watchdog = start_watchdog(seconds);
  int pid = start_test(t, report);
  int status = pid < 0 ? -1 : collect(pid, watchdog, &timed_out);
  if (pid < 0) {
    kill(watchdog);
    wait(NULL);
  }
  read_reason(report, why, sizeof why);
  close(report[0]);
  close(report[1]);
  if (pid >= 0 && status == 0 && !timed_out) {
    printf("test %s: OK\n", t->name);
    return 1;
  }
  if (pid < 0)
    printf("test %s: FAILED (runner: fork failed)\n", t->name);
  else if (timed_out)
    printf("test %s: FAILED (timeout after %d s)\n", t->name, seconds);
  else if (why[0])
    printf("test %s: FAILED (%s)\n", t->name, why);
  else
    printf("test %s: FAILED (exit status %d)\n", t->name, status);
  return 0;
}

static int parse_options(int argc, char **argv, struct options *o)
{
  memset(o, 0, sizeof *o);
  int i = 1;
  for (; i < argc && argv[i][0] == '-'; i++) {
    if (strcmp(argv[i], "-q") == 0)
      o->quick = 1;
    else if (strcmp(argv[i], "-l") == 0)
      o->list = 1;
    else
      return -1;
  }
  o->names = argv + i;
  o->nnames = argc - i;
  return 0;
}

int main(int argc, char **argv)
{
  struct options o;
  int passed = 0, failed = 0;
  if (parse_options(argc, argv, &o) < 0) {
    fprintf(STDERR, "usage: usertests [-q] [-l] [name...]\n");
    return 2;
  }
  chdir("/");
  for (int m = 0; m < NMODULES; m++) {
    for (const struct ut_test *t = modules[m]; t->name; t++) {
      if (!selected(t, &o))
        continue;
      if (o.list) {
        printf("%s%s\n", t->name, t->speed == UT_SLOW ? " (slow)" : "");
        continue;
      }
      if (run_one(t))
        passed++;
      else
        failed++;
    }
  }
  if (!o.list)
    printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
