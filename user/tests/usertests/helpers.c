// helpers.c: small wrappers the usertests modules share (see ut.h).
//
// "settle" helpers exist because the kernel frees some memory after the
// fact (init reaps orphans, zombies wait for their parent): they poll for
// up to two seconds until the count is back to the baseline.
#include "ut.h"

static struct sysinfo read_sysinfo(void)
{
  struct sysinfo info;
  TR_CHECK(sysinfo(&info) == 0, "sysinfo failed");
  return info;
}

unsigned long ut_freepages(void)
{
  return read_sysinfo().freepages;
}

unsigned int ut_nproc(void)
{
  return read_sysinfo().nproc;
}

unsigned long ut_settle_freepages(unsigned long baseline)
{
  unsigned long now = ut_freepages();
  for (int i = 0; i < 40 && now < baseline; i++) {
    sleep(5);
    now = ut_freepages();
  }
  return now;
}

unsigned int ut_settle_nproc(unsigned int baseline)
{
  unsigned int now = ut_nproc();
  for (int i = 0; i < 40 && now > baseline; i++) {
    sleep(5);
    now = ut_nproc();
  }
  return now;
}

int ut_fork(void)
{
  int pid = fork();
  TR_CHECK(pid >= 0, "fork failed");
  return pid;
}

// Waits for one child, which must be pid; returns its exit status.
int ut_wait_for(int pid)
{
  int status = -12345;
  int got = wait(&status);
  TR_CHECK(got == pid, "wait returned %d, expected child %d", got, pid);
  return status;
}

unsigned long ut_now_ms(void)
{
  return clock_ns() / MS;
}

void ut_write_file(const char *path, const void *data, int n)
{
  int fd = open(path, O_CREATE | O_TRUNC | O_WRONLY);
  TR_CHECK(fd >= 0, "cannot create %s", path);
  TR_CHECK(write(fd, data, n) == n, "short write to %s", path);
  close(fd);
}

// Reads up to size bytes of path; returns the count, -1 if it can't open.
int ut_read_file(const char *path, void *buf, int size)
{
  int fd = open(path, O_RDONLY);
  if (fd < 0)
    return -1;
  int total = 0, n;
  while (total < size && (n = read(fd, (char *)buf + total, size - total)) > 0)
    total += n;
  close(fd);
  return total;
}

// Runs argv[0] with stdout captured into out (at most size bytes are kept,
// the rest is drained); returns its exit status.
int ut_run_capture(char **argv, char *out, int size, int *out_len)
{
  int p[2];
  TR_CHECK(pipe(p) == 0, "pipe failed");
  int pid = ut_fork();
  if (pid == 0) {
    close(p[0]);
    close(STDOUT);
    dup(p[1]);
    close(p[1]);
    exec(argv[0], argv);
    exit(127);
  }
  close(p[1]);
  int total = 0, n;
  char spill[64];
  for (;;) {
    char *to = total < size ? out + total : spill;
    int room = total < size ? size - total : (int)sizeof spill;
    if ((n = read(p[0], to, room)) <= 0)
      break;
    if (to != spill)
      total += n;
  }
  close(p[0]);
  *out_len = total;
  return ut_wait_for(pid);
}

int ut_exec_status(const char *path, char **argv)
{
  int pid = ut_fork();
  if (pid == 0) {
    close(STDOUT);   // a wrongly started program prints nothing
    int r = exec(path, argv);
    exit(r == -1 ? UT_EXEC_REFUSED : UT_EXEC_REFUSED + 1);
  }
  return ut_wait_for(pid);
}

// A reproducible byte pattern, different for every seed and offset.
void ut_fill_pattern(unsigned char *buf, int n, unsigned seed)
{
  unsigned x = seed * 2654435761u + 1;
  for (int i = 0; i < n; i++) {
    x = x * 1103515245u + 12345u;
    buf[i] = (unsigned char)(x >> 16);
  }
}

// Returns the first offset that differs from the pattern, or -1.
int ut_check_pattern(const unsigned char *buf, int n, unsigned seed)
{
  unsigned x = seed * 2654435761u + 1;
  for (int i = 0; i < n; i++) {
    x = x * 1103515245u + 12345u;
    if (buf[i] != (unsigned char)(x >> 16))
      return i;
  }
  return -1;
}
