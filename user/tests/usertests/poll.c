// poll.c: tests of poll() and fcntl(O_NONBLOCK) on pipes, files, the
// console and sockets as file descriptors (no network card needed: a
// socket's readiness and non-blocking receive need no datagram).
#include "ut.h"

// poll of one fd for events with timeout_ms: its return, *revents set.
static int poll1(int fd, short events, int timeout_ms, short *revents)
{
  struct pollfd p = { fd, events, 0x7777 };
  int r = poll(&p, 1, timeout_ms);
  *revents = p.revents;
  return r;
}

#define FD_PROBE 256          // more descriptors than any process has

// The descriptors this process has free (dup until refused, then close).
static int free_fds(void)
{
  static int fds[FD_PROBE];
  int n = 0, d;
  while (n < FD_PROBE && (d = dup(1)) >= 0) fds[n++] = d;
  for (int i = 0; i < n; i++) close(fds[i]);
  return n;
}

// The size of the descriptor table: the open ones and the free ones.
static int fd_table_size(void)
{
  int open = 0;
  for (int fd = 0; fd < FD_PROBE; fd++) open += fcntl(fd, F_GETFL) >= 0;
  return open + free_fds();
}

static void test_poll_pipe_ready_states(void)
{
  int p[2];
  short rev;
  TR_ASSERT(pipe(p) == 0);
  TR_CHECK(poll1(p[0], POLLIN, 0, &rev) == 0 && rev == 0, "empty pipe: revents 0x%x", rev);
  TR_CHECK(poll1(p[1], POLLOUT, 0, &rev) == 1 && rev == POLLOUT, "write end: revents 0x%x", rev);
  TR_ASSERT(write(p[1], "x", 1) == 1);
  struct pollfd both[2] = { { p[0], POLLIN | POLLOUT, 0 }, { p[1], POLLIN | POLLOUT, 0 } };
  TR_CHECK(poll(both, 2, 0) == 2, "two ready fds");
  TR_CHECK(both[0].revents == POLLIN && both[1].revents == POLLOUT, "revents 0x%x 0x%x",
           both[0].revents, both[1].revents);
  char c;
  TR_ASSERT(read(p[0], &c, 1) == 1 && c == 'x');
  TR_CHECK(poll1(p[0], POLLIN, 0, &rev) == 0 && rev == 0, "drained pipe: revents 0x%x", rev);
  // A full pipe is not writable.
  char buf[600];
  memset(buf, 'y', sizeof buf);
  TR_ASSERT(fcntl(p[1], F_SETFL, O_NONBLOCK) == 0);
  TR_CHECK(write(p[1], buf, sizeof buf) == 512, "non-blocking write fills 512 bytes");
  TR_CHECK(poll1(p[1], POLLOUT, 0, &rev) == 0 && rev == 0, "full pipe: revents 0x%x", rev);
  TR_CHECK(write(p[1], buf, 1) == -1, "write to a full non-blocking pipe");
}

static void test_poll_timeout_expires(void)
{
  int p[2];
  short rev;
  TR_ASSERT(pipe(p) == 0);
  unsigned long t0 = ut_now_ms();
  TR_CHECK(poll1(p[0], POLLIN, 100, &rev) == 0 && rev == 0, "timeout: revents 0x%x", rev);
  unsigned long waited = ut_now_ms() - t0;
  TR_CHECK(waited >= 100, "returned after %lu ms of a 100 ms timeout", waited);
  t0 = ut_now_ms();
  TR_CHECK(poll(NULL, 0, 50) == 0, "poll of no fds");
  TR_CHECK(ut_now_ms() - t0 >= 50, "poll of no fds did not wait its timeout");
}

// A poll with no timeout wakes for a write made after it went to sleep
// (or before: either way it must see the byte), from another process.
static void test_poll_wakes_on_pipe_write(void)
{
  int p[2], go[2];
  TR_ASSERT(pipe(p) == 0 && pipe(go) == 0);
  int pid = ut_fork();
  if (pid == 0) {
    char c;
    read(go[0], &c, 1);          // the parent is about to poll
    sleep(2);                    // let it go to sleep; correct either way
    exit(write(p[1], "z", 1) == 1 ? 0 : 1);
  }
  struct pollfd pf[1] = { { p[0], POLLIN, 0 } };
  TR_ASSERT(write(go[1], "g", 1) == 1);
  int r = poll(pf, 1, -1);
  TR_CHECK(r == 1 && pf[0].revents == POLLIN, "poll returned %d, revents 0x%x", r, pf[0].revents);
  char c;
  TR_ASSERT(read(p[0], &c, 1) == 1 && c == 'z');
  TR_CHECK(ut_wait_for(pid) == 0, "writer failed");
}

// A process asleep in poll() with no timeout can be killed.
static void test_poll_killed_while_waiting(void)
{
  int ready[2], never[2];
  TR_ASSERT(pipe(ready) == 0 && pipe(never) == 0);
  int pid = ut_fork();
  if (pid == 0) {
    struct pollfd pf = { never[0], POLLIN, 0 };
    write(ready[1], "r", 1);
    poll(&pf, 1, -1);            // nothing is ever written
    exit(3);
  }
  char c;
  TR_ASSERT(read(ready[0], &c, 1) == 1);
  TR_ASSERT(kill(pid) == 0);
  int st = 0;
  TR_CHECK(wait(&st) == pid && st == -1, "killed poller's status %d", st);
}

static void test_poll_hup_after_writer_closes(void)
{
  int p[2];
  short rev;
  TR_ASSERT(pipe(p) == 0);
  TR_ASSERT(write(p[1], "ab", 2) == 2);
  TR_ASSERT(close(p[1]) == 0);
  TR_CHECK(poll1(p[0], POLLIN, -1, &rev) == 1 && rev == (POLLIN | POLLHUP),
           "data and no writer: revents 0x%x", rev);
  char buf[4];
  TR_ASSERT(read(p[0], buf, sizeof buf) == 2);
  // POLLHUP comes whether asked for or not, and does not wait.
  TR_CHECK(poll1(p[0], 0, -1, &rev) == 1 && rev == POLLHUP, "no writer: revents 0x%x", rev);
  TR_ASSERT(read(p[0], buf, sizeof buf) == 0);
  // The write end of a pipe whose reader is gone: POLLERR.
  TR_ASSERT(pipe(p) == 0);
  TR_ASSERT(close(p[0]) == 0);
  TR_CHECK(poll1(p[1], POLLOUT, -1, &rev) == 1 && (rev & POLLERR), "no reader: revents 0x%x", rev);
}

static void test_poll_bad_fds_nval(void)
{
  int p[2];
  TR_ASSERT(pipe(p) == 0);
  int closed = dup(p[0]), nofile = fd_table_size();
  TR_ASSERT(closed >= 0 && close(closed) == 0);
  struct pollfd pf[5] = {
    { 99, POLLIN, 0 }, { closed, POLLIN, 0 }, { -1, POLLIN, 0x55 }, { p[1], POLLOUT, 0 },
    { nofile, POLLIN, 0 },
  };
  int r = poll(pf, 5, -1);       // returns at once: POLLNVAL is ready
  TR_CHECK(r == 4, "poll returned %d, expected 4 (3 invalid + 1 writable)", r);
  TR_CHECK(pf[0].revents == POLLNVAL && pf[1].revents == POLLNVAL && pf[4].revents == POLLNVAL,
           "revents 0x%x 0x%x 0x%x", pf[0].revents, pf[1].revents, pf[4].revents);
  TR_CHECK(pf[2].revents == 0, "a negative fd is skipped: revents 0x%x", pf[2].revents);
  TR_CHECK(pf[3].revents == POLLOUT, "write end: revents 0x%x", pf[3].revents);
}

static void test_poll_bad_pointer_fails(void)
{
  unsigned long brk = PGROUNDUP((unsigned long)sbrk(0));
  unsigned long bad[] = { 0, brk + 4 * PGSIZE, KERNBASE, MAXVA - 4, 1UL << 63 };
  for (int i = 0; i < 5; i++)
    TR_CHECK(poll((struct pollfd *)bad[i], 1, 0) == -1, "poll(%p)", (void *)bad[i]);
  // An array that runs off the end of the heap, and one in read-only text.
  struct pollfd *edge = (struct pollfd *)(brk - sizeof(struct pollfd));
  edge->fd = 0;
  TR_CHECK(poll(edge, 2, 0) == -1, "poll of an array past the break");
  TR_CHECK(poll((struct pollfd *)test_poll_bad_pointer_fails, 1, 0) == -1, "poll(text)");
  int nofile = fd_table_size();
  struct pollfd pf[FD_PROBE + 1];
  for (int i = 0; i <= nofile; i++) pf[i] = (struct pollfd){ 1, POLLOUT, 0 };
  TR_CHECK(poll(pf, nofile + 1, 0) == -1, "nfds above the fd table (%d) accepted", nofile);
  TR_CHECK(poll(pf, -1, 0) == -1, "nfds -1 accepted");
  TR_CHECK(pf[0].revents == 0, "a refused poll wrote revents");
  TR_CHECK(poll(pf, nofile, 0) == nofile, "%d entries of stdout", nofile);
}

// Regular files are always ready; the console is writable.
static void test_poll_file_and_console(void)
{
  ut_write_file("pollfile", "data", 4);
  int fd = open("pollfile", O_RDWR);
  TR_ASSERT(fd >= 0);
  short rev;
  TR_CHECK(poll1(fd, POLLIN | POLLOUT, -1, &rev) == 1 && rev == (POLLIN | POLLOUT),
           "file: revents 0x%x", rev);
  close(fd);
  unlink("pollfile");
  TR_CHECK(poll1(1, POLLOUT, -1, &rev) == 1 && rev == POLLOUT, "console: revents 0x%x", rev);
}

static void test_fcntl_nonblock_pipe_read(void)
{
  int p[2];
  char c;
  TR_ASSERT(pipe(p) == 0);
  TR_CHECK(fcntl(p[0], F_GETFL) == O_RDONLY, "read end flags 0x%x", fcntl(p[0], F_GETFL));
  TR_CHECK(fcntl(p[1], F_GETFL) == O_WRONLY, "write end flags 0x%x", fcntl(p[1], F_GETFL));
  TR_ASSERT(fcntl(p[0], F_SETFL, O_NONBLOCK) == 0);
  int d = dup(p[0]);
  TR_CHECK(fcntl(d, F_GETFL) == (O_RDONLY | O_NONBLOCK), "dup shares the flags: 0x%x",
           fcntl(d, F_GETFL));
  TR_CHECK(read(p[0], &c, 1) == -1, "empty non-blocking pipe read did not fail");
  TR_ASSERT(write(p[1], "q", 1) == 1);
  TR_CHECK(read(d, &c, 1) == 1 && c == 'q', "non-blocking read of a byte");
  TR_ASSERT(fcntl(p[0], F_SETFL, 0) == 0);
  TR_CHECK(fcntl(d, F_GETFL) == O_RDONLY, "cleared flags 0x%x", fcntl(d, F_GETFL));
  TR_ASSERT(close(p[1]) == 0);
  TR_CHECK(read(p[0], &c, 1) == 0, "blocking read after the writer closed: end of file");
}

static void test_fcntl_rejects_bad_args(void)
{
  int p[2];
  TR_ASSERT(pipe(p) == 0);
  TR_CHECK(fcntl(-1, F_GETFL) == -1 && fcntl(99, F_GETFL) == -1, "bad fd accepted");
  TR_CHECK(fcntl(p[0], 12345) == -1 && fcntl(p[0], -1) == -1, "bad command accepted");
  TR_CHECK(fcntl(p[0], F_SETFL, ~0) == 0 && fcntl(p[0], F_GETFL) == (O_RDONLY | O_NONBLOCK),
           "F_SETFL changed more than O_NONBLOCK: 0x%x", fcntl(p[0], F_GETFL));
}

// A socket is a file descriptor: poll, fcntl, close, dup and fork apply.
static void test_poll_socket_fd(void)
{
  int s = socket(SOCK_UDP);
  TR_ASSERT(s > 2);
  short rev;
  TR_CHECK(poll1(s, POLLIN | POLLOUT, 0, &rev) == 1 && rev == POLLOUT,
           "idle socket: revents 0x%x", rev);
  TR_ASSERT(fcntl(s, F_SETFL, O_NONBLOCK) == 0);
  unsigned long t0 = ut_now_ms();
  char buf[8];
  TR_CHECK(recvfrom(s, buf, sizeof buf, NULL, -1) == -1, "non-blocking recvfrom");
  TR_CHECK(read(s, buf, sizeof buf) == -1, "non-blocking read of a socket");
  TR_CHECK(ut_now_ms() - t0 < 5000, "non-blocking calls waited");
  TR_CHECK(write(s, buf, 1) == -1, "write on an unconnected socket");
  int pid = ut_fork();
  if (pid == 0)                  // the child shares the open socket and its flags
    exit(fcntl(s, F_GETFL) == (O_RDWR | O_NONBLOCK) && close(s) == 0 ? 0 : 1);
  TR_CHECK(ut_wait_for(pid) == 0, "the child did not share the socket");
  TR_CHECK(poll1(s, POLLOUT, 0, &rev) == 1, "the child's close closed the parent's socket");
  int d = dup(s);
  TR_ASSERT(d >= 0 && close(s) == 0);
  TR_CHECK(poll1(d, POLLOUT, 0, &rev) == 1 && rev == POLLOUT, "the dup'd socket: revents 0x%x", rev);
  TR_CHECK(recvfrom(d, buf, sizeof buf, NULL, -1) == -1, "the dup shares O_NONBLOCK");
  TR_CHECK(sockclose(1) == -1, "sockclose of the console");
  TR_CHECK(sockclose(d) == 0 && sockclose(d) == -1 && close(d) == -1, "sockclose twice");
}

// The sockets a process holds are bounded by its descriptor table, and
// closing them gives every one back.
static void test_poll_socket_limit_is_fd_table(void)
{
  int fds[FD_PROBE], n = 0, s, room = free_fds();
  while (n < FD_PROBE && (s = socket(SOCK_UDP)) >= 0) fds[n++] = s;
  TR_CHECK(n == room, "%d sockets with %d free descriptors", n, room);
  TR_CHECK(socket(SOCK_UDP) == -1, "a socket past the fd table");
  for (int i = 0; i < n; i++) TR_ASSERT(close(fds[i]) == 0);
  TR_ASSERT((s = socket(SOCK_ICMP)) >= 0 && close(s) == 0);
}

const struct tr_case ut_poll_tests[] = {
  { "poll_pipe_ready_states", test_poll_pipe_ready_states, TR_QUICK, 0 },
  { "poll_timeout_expires", test_poll_timeout_expires, TR_QUICK, 0 },
  { "poll_wakes_on_pipe_write", test_poll_wakes_on_pipe_write, TR_QUICK, 0 },
  { "poll_killed_while_waiting", test_poll_killed_while_waiting, TR_QUICK, 0 },
  { "poll_hup_after_writer_closes", test_poll_hup_after_writer_closes, TR_QUICK, 0 },
  { "poll_bad_fds_nval", test_poll_bad_fds_nval, TR_QUICK, 0 },
  { "poll_bad_pointer_fails", test_poll_bad_pointer_fails, TR_QUICK, 0 },
  { "poll_file_and_console", test_poll_file_and_console, TR_QUICK, 0 },
  { "poll_socket_fd", test_poll_socket_fd, TR_QUICK, 0 },
  { "poll_socket_limit_is_fd_table", test_poll_socket_limit_is_fd_table, TR_QUICK, 0 },
  { "fcntl_nonblock_pipe_read", test_fcntl_nonblock_pipe_read, TR_QUICK, 0 },
  { "fcntl_rejects_bad_args", test_fcntl_rejects_bad_args, TR_QUICK, 0 },
  { NULL },
};
