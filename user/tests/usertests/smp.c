// smp.c: concurrency across harts. Several children hit the same kernel
// structures at once (files in one directory, pipes, the page allocator,
// the process table); results must be exact and nothing may leak.
#include "ut.h"

#define WORKERS 4

// Forks WORKERS children running fn(i); fails unless all exit with 0.
static void run_workers(void (*fn)(int))
{
  int pids[WORKERS];
  for (int i = 0; i < WORKERS; i++) {
    pids[i] = ut_fork();
    if (pids[i] == 0) {
      fn(i);
      exit(0);
    }
  }
  int failures = 0, status;
  for (int i = 0; i < WORKERS; i++) {
    TR_CHECK(wait(&status) > 0, "lost a worker");
    failures += status != 0;
  }
  TR_CHECK(failures == 0, "%d of %d workers failed", failures, WORKERS);
}

static void files_worker(int id)
{
  char name[32], buf[32];
  for (int i = 0; i < 40; i++) {
    snprintf(name, sizeof name, "ut_smpdir/w%d_%d", id, i);
    ut_write_file(name, name, strlen(name));
    TR_CHECK(ut_read_file(name, buf, sizeof buf) == (int)strlen(name) &&
             memcmp(buf, name, strlen(name)) == 0, "%s corrupted", name);
    // Everyone fights over one shared name too.
    int fd = open("ut_smpdir/shared", O_CREATE | O_RDWR);
    if (fd >= 0)
      close(fd);
    unlink("ut_smpdir/shared");
    TR_CHECK(unlink(name) == 0, "unlink %s", name);
  }
}

static void test_smp_parallel_files(void)
{
  mkdir("ut_smpdir");
  run_workers(files_worker);
  unlink("ut_smpdir/shared");
  int fd = open("ut_smpdir", O_RDONLY);
  struct dirent de;
  int left = 0;
  while (read(fd, &de, sizeof de) == sizeof de)
    left += de.inum != 0 && de.name[0] != '.';
  close(fd);
  TR_CHECK(left == 0, "%d entries left in the directory", left);
  TR_CHECK(unlink("ut_smpdir") == 0, "rmdir");
}

// Each worker streams through its own pipe to its own child.
static void pipes_worker(int id)
{
  enum { TOTAL = 128 * 1024 };
  int p[2];
  static unsigned char buf[4096];
  TR_CHECK(pipe(p) == 0, "pipe");
  int pid = ut_fork();
  if (pid == 0) {
    close(p[0]);
    for (int k = 0; k < TOTAL / 4096; k++) {
      memset(buf, (id * 31 + k) & 0xff, sizeof buf);
      if (write(p[1], buf, sizeof buf) != sizeof buf)
        exit(1);
    }
    exit(0);
  }
  close(p[1]);
  long got = 0;
  int n;
  while ((n = read(p[0], buf, 1000)) > 0) {
    for (int i = 0; i < n; i++) {
      int k = (got + i) / 4096;
      TR_CHECK(buf[i] == ((id * 31 + k) & 0xff), "byte %ld wrong", got + i);
    }
    got += n;
  }
  TR_CHECK(got == TOTAL, "got %ld bytes", got);
  TR_CHECK(ut_wait_for(pid) == 0, "writer failed");
}

static void test_smp_concurrent_pipes(void)
{
  run_workers(pipes_worker);
}

static void sbrk_worker(int id)
{
  for (int round = 0; round < 30; round++) {
    int pages = 8 + (id + round) % 24;
    unsigned char *p = (unsigned char *)sbrk(pages * PGSIZE);
    TR_CHECK(p != (unsigned char *)-1, "sbrk %d pages", pages);
    for (int i = 0; i < pages; i++)
      p[i * PGSIZE + id] = (unsigned char)(round + i);
    for (int i = 0; i < pages; i++)
      TR_CHECK(p[i * PGSIZE + id] == (unsigned char)(round + i),
               "page %d lost its byte", i);
    sbrk(-pages * (int)PGSIZE);
  }
}

static void test_smp_concurrent_sbrk(void)
{
  unsigned long before = ut_freepages();
  run_workers(sbrk_worker);
  unsigned long after = ut_settle_freepages(before);
  TR_CHECK(after >= before, "%lu pages lost", before - after);
}

// Every worker runs echo repeatedly: exec on several harts at once.
static void exec_worker(int id)
{
  char word[8], out[16];
  int len;
  snprintf(word, sizeof word, "w%d", id);
  char *argv[] = { "/echo", word, NULL };
  for (int i = 0; i < 15; i++) {
    TR_CHECK(ut_run_capture(argv, out, sizeof out, &len) == 0, "echo failed");
    TR_CHECK(len == (int)strlen(word) + 1 && memcmp(out, word, len - 1) == 0,
             "worker %d got the wrong output", id);
  }
}

static void test_smp_parallel_exec(void)
{
  unsigned long before = ut_freepages();
  run_workers(exec_worker);
  unsigned long after = ut_settle_freepages(before);
  TR_CHECK(after >= before, "%lu pages lost", before - after);
}

static void fork_worker(int id)
{
  (void)id;
  for (int round = 0; round < 15; round++) {
    int made = 0;
    for (int i = 0; i < 4; i++) {
      int pid = fork();
      if (pid == 0)
        exit(0);
      made += pid > 0;
    }
    for (int i = 0; i < made; i++)
      TR_CHECK(wait(NULL) > 0, "lost a grandchild");
  }
}

static void test_smp_fork_storm(void)
{
  unsigned int before = ut_nproc();
  unsigned long free_before = ut_freepages();
  run_workers(fork_worker);
  TR_CHECK(ut_settle_nproc(before) == before, "process count grew");
  unsigned long after = ut_settle_freepages(free_before);
  TR_CHECK(after >= free_before, "%lu pages lost", free_before - after);
}

const struct tr_case ut_smp_tests[] = {
  { "smp_parallel_files", test_smp_parallel_files, TR_QUICK, 120 },
  { "smp_concurrent_pipes", test_smp_concurrent_pipes, TR_QUICK, 0 },
  { "smp_concurrent_sbrk", test_smp_concurrent_sbrk, TR_QUICK, 0 },
  { "smp_fork_storm", test_smp_fork_storm, TR_QUICK, 0 },
  { "smp_parallel_exec", test_smp_parallel_exec, TR_QUICK, 0 },
  { NULL },
};
