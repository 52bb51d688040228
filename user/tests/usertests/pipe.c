// pipe.c: tests of pipes: big transfers, end-of-file, broken pipes.
#include "ut.h"

#define CHUNK 1000   // deliberately not a power of two

// Sends nbytes of the pattern for `seed` through fd, CHUNK at a time.
static void send_pattern(int fd, int nbytes, unsigned seed)
{
  static unsigned char buf[CHUNK];
  for (int sent = 0, k = 0; sent < nbytes; sent += CHUNK, k++) {
    int n = nbytes - sent < CHUNK ? nbytes - sent : CHUNK;
    ut_fill_pattern(buf, n, seed + k);
    TR_CHECK(write(fd, buf, n) == n, "short pipe write at %d", sent);
  }
}

// Receives what send_pattern sent, in odd-sized reads; returns the count.
static int receive_pattern(int fd, int nbytes, unsigned seed)
{
  static unsigned char buf[CHUNK];
  int got = 0, n, k = 0;
  while (got < nbytes) {
    int fill = 0;
    while (fill < CHUNK && got + fill < nbytes &&
           (n = read(fd, buf + fill, 333 < CHUNK - fill ? 333 : CHUNK - fill)) > 0)
      fill += n;
    if (fill == 0)
      break;
    int bad = ut_check_pattern(buf, fill, seed + k);
    TR_CHECK(bad < 0, "byte %d of the stream is wrong", got + bad);
    got += fill;
    k++;
  }
  return got;
}

static void test_pipe_large_transfer(void)
{
  enum { TOTAL = 1 << 20 };
  int p[2];
  TR_CHECK(pipe(p) == 0, "pipe");
  int pid = ut_fork();
  if (pid == 0) {
    close(p[0]);
    send_pattern(p[1], TOTAL, 7);
    exit(0);
  }
  close(p[1]);
  int got = receive_pattern(p[0], TOTAL + 1, 7);
  close(p[0]);
  TR_CHECK(ut_wait_for(pid) == 0, "writer failed");
  TR_CHECK(got == TOTAL, "received %d of %d bytes", got, TOTAL);
}

static void test_pipe_eof_after_writers_close(void)
{
  int p[2];
  char buf[8];
  TR_CHECK(pipe(p) == 0, "pipe");
  int pid = ut_fork();
  if (pid == 0) {
    write(p[1], "last", 4);
    exit(0);   // closes the child's copy of p[1]
  }
  close(p[1]);
  TR_CHECK(read(p[0], buf, sizeof buf) == 4, "data before EOF");
  TR_CHECK(read(p[0], buf, sizeof buf) == 0, "no EOF after writers closed");
  close(p[0]);
  ut_wait_for(pid);
}

// Writing with no reader left fails instead of blocking forever.
static void test_pipe_write_without_reader_fails(void)
{
  int p[2];
  static char buf[4096];
  TR_CHECK(pipe(p) == 0, "pipe");
  close(p[0]);
  int pid = ut_fork();
  if (pid == 0) {
    for (int i = 0; i < 64; i++) {
      if (write(p[1], buf, sizeof buf) < 0)
        exit(0);
    }
    exit(1);
  }
  close(p[1]);
  TR_CHECK(ut_wait_for(pid) == 0, "256 KiB written into a pipe with no reader");
}

// The reader goes away while the writer is blocked on a full pipe.
static void test_pipe_reader_exits_mid_stream(void)
{
  int p[2];
  TR_CHECK(pipe(p) == 0, "pipe");
  int reader = ut_fork();
  if (reader == 0) {
    char buf[100];
    close(p[1]);
    read(p[0], buf, sizeof buf);
    exit(0);
  }
  close(p[0]);
  static char buf[4096];
  int failed = 0;
  for (int i = 0; i < 64 && !failed; i++)
    failed = write(p[1], buf, sizeof buf) < 0;
  close(p[1]);
  ut_wait_for(reader);
  TR_CHECK(failed, "writes kept succeeding after the reader exited");
}

// Many pipes at once; all pages come back when they are closed.
static void test_pipe_many_open_pipes(void)
{
  int fds[64], n = 0;
  int p[2];
  TR_CHECK(pipe(p) == 0, "pipe");   // warm up
  close(p[0]);
  close(p[1]);
  unsigned long before = ut_freepages();
  while (n + 2 <= 64 && pipe(fds + n) == 0) {
    write(fds[n + 1], "q", 1);
    n += 2;
  }
  TR_CHECK(n >= 8, "only %d pipes", n / 2);
  for (int i = 0; i < n; i++)
    close(fds[i]);
  unsigned long after = ut_settle_freepages(before);
  TR_CHECK(after >= before, "%lu pages lost by %d pipes", before - after, n / 2);
}

const struct tr_case ut_pipe_tests[] = {
  { "pipe_large_transfer", test_pipe_large_transfer, TR_QUICK, 0 },
  { "pipe_eof_after_writers_close", test_pipe_eof_after_writers_close, TR_QUICK, 0 },
  { "pipe_write_without_reader_fails", test_pipe_write_without_reader_fails, TR_QUICK, 0 },
  { "pipe_reader_exits_mid_stream", test_pipe_reader_exits_mid_stream, TR_QUICK, 0 },
  { "pipe_many_open_pipes", test_pipe_many_open_pipes, TR_QUICK, 0 },
  { NULL },
};
