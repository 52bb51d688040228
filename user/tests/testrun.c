// testrun.c: the guest test runner (see testrun.h for the command line and
// the output it promises).
//
// Owns case selection, the per-case child process and its watchdog, the
// pipe through which a failing case tells why (tr_fail), the optional
// free-page check and the summary line.
#include "user/tests/testrun.h"

#define WHY_LEN 200
#define MAX_SKIP 32

static int report_fd = -1;   // in a case's process: where tr_fail writes

struct options {
  int quick;
  int list;
  char *skip[MAX_SKIP];
  int nskip;
  char **names;
  int nnames;
};

void tr_failed(const char *why)
{
  char line[WHY_LEN];
  snprintf(line, sizeof line, "%s", why);
  for (char *c = line; *c; c++) {   // the runner's record ends at '\n'
    if (*c == '\n')
      *c = ' ';
  }
  if (report_fd >= 0) {
    write(report_fd, line, strlen(line));
    write(report_fd, "; ", 2);     // a forked helper may add its own
  } else {
    fprintf(stderr, "%s\n", line);
  }
  exit(1);
}

void tr_fail(int line, const char *fmt, ...)
{
  char why[WHY_LEN];
  int n = snprintf(why, sizeof why, "line %d: ", line);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why + n, sizeof why - n, fmt, ap);
  va_end(ap);
  tr_failed(why);
}

static int name_matches(const char *name, const char *pattern)
{
  int n = strlen(pattern);
  return strcmp(name, pattern) == 0 ||
         (strncmp(name, pattern, n) == 0 && name[n] == '_');
}

static int selected(const struct tr_case *c, const struct options *o)
{
  if (o->quick && c->speed == TR_SLOW)
    return 0;
  for (int i = 0; i < o->nskip; i++) {
    if (strcmp(c->name, o->skip[i]) == 0)
      return 0;
  }
  if (o->nnames == 0)
    return 1;
  for (int i = 0; i < o->nnames; i++) {
    if (name_matches(c->name, o->names[i]))
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

static int start_case(const struct tr_case *c, int report[2])
{
  int pid = fork();
  if (pid == 0) {
    close(report[0]);
    report_fd = report[1];
    c->run();
    exit(0);
  }
  return pid;
}

// Collects the case's child and the watchdog. Returns the case's exit
// status and sets *timed_out if the watchdog fired first.
static int collect(int case_pid, int watchdog, int *timed_out)
{
  int status = 0, case_status = 0, pending = 2;
  *timed_out = 0;
  while (pending > 0) {
    int pid = wait(&status);
    if (pid < 0)
      break;
    pending--;
    if (pid == case_pid) {
      case_status = status;
      if (pending)
        kill(watchdog);
    } else if (pid == watchdog && pending) {
      *timed_out = 1;
      kill(case_pid);
    }
  }
  return case_status;
}

// Reads the failure reason up to the '\n' the runner itself appends, and
// drops the separator tr_fail leaves after the last one.
static void read_reason(int report[2], char *why, int size)
{
  int len = 0;
  char c;
  write(report[1], "\n", 1);
  while (read(report[0], &c, 1) == 1 && c != '\n') {
    if (len + 1 < size)
      why[len++] = c;
  }
  if (len >= 2 && why[len - 2] == ';' && why[len - 1] == ' ')
    len -= 2;
  why[len] = 0;
}

static unsigned long free_pages(void)
{
  struct sysinfo info;
  return sysinfo(&info) == 0 ? info.freepages : 0;
}

// Runs the case in a child under a watchdog; returns 1 if it passed, else
// fills why.
static int run_child(const struct tr_suite *s, const struct tr_case *c,
                     int seconds, char *why, int size)
{
  int report[2], timed_out = 0;
  if (pipe(report) < 0) {
    snprintf(why, size, "runner: pipe failed");
    return 0;
  }
  unsigned long before = free_pages();   // the pipe open, as after the wait
  int watchdog = start_watchdog(seconds);
  int pid = start_case(c, report);
  int status = pid < 0 ? -1 : collect(pid, watchdog, &timed_out);
  if (pid < 0) {
    kill(watchdog);
    wait(NULL);
  }
  read_reason(report, why, size);
  unsigned long after = free_pages();
  close(report[0]);
  close(report[1]);
  if (pid < 0)
    snprintf(why, size, "runner: fork failed");
  else if (timed_out)
    snprintf(why, size, "timeout after %d s", seconds);
  else if (status != 0 && !why[0])
    snprintf(why, size, "exit status %d", status);
  else if (status == 0 && s->check_pages && after != before)
    snprintf(why, size, "LEAK: free pages %lu -> %lu", before, after);
  else
    return status == 0;
  return 0;
}

// Runs one case; returns 1 if it passed.
static int run_one(const struct tr_suite *s, const struct tr_case *c)
{
  char why[WHY_LEN];
  int seconds = c->timeout_s ? c->timeout_s : s->timeout_s;
  if (run_child(s, c, seconds, why, sizeof why)) {
    printf("test %s: OK\n", c->name);
    return 1;
  }
  printf("test %s: FAILED (%s)\n", c->name, why);
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
    else if (strcmp(argv[i], "-x") == 0 && i + 1 < argc && o->nskip < MAX_SKIP)
      o->skip[o->nskip++] = argv[++i];
    else
      return -1;
  }
  o->names = argv + i;
  o->nnames = argc - i;
  return 0;
}

int tr_main(const struct tr_suite *s, int argc, char **argv)
{
  struct options o;
  int passed = 0, failed = 0;
  if (parse_options(argc, argv, &o) < 0) {
    fprintf(stderr, "usage: %s [-q] [-l] [-x name]... [name...]\n", s->prog);
    return 2;
  }
  if (!o.list && s->setup && s->setup() < 0) {
    printf("%s: setup failed\n0 passed, 1 failed\n", s->prog);
    return 1;
  }
  for (int t = 0; t < s->ntables; t++) {
    for (const struct tr_case *c = s->tables[t]; c->name; c++) {
      if (!selected(c, &o))
        continue;
      if (o.list)
        printf("%s%s\n", c->name, c->speed == TR_SLOW ? " (slow)" : "");
      else if (run_one(s, c))
        passed++;
      else
        failed++;
    }
  }
  if (!o.list)
    printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
