// poll.c: poll() for the C library: the poll system call (sys_poll), plus
// readiness a library keeps in its own memory. A library whose events can
// wait in a queue of its process, not in the kernel object behind its
// descriptor (the CM event channel: user/lib/rdmacm/rdma_cm.c, its events parsed
// from the channel's socket or made by the library itself), registers the
// descriptor with pollx_set_ready. poll() then asks its hook before it
// sleeps: the hook does whatever is due (a retransmission, a timeout that
// makes an event) and says whether an event waits and when it wants to be
// asked again. A descriptor whose hook says so is POLLIN and poll() does
// not sleep; otherwise poll() sleeps at most until the earliest time a hook
// asked for. With no hook registered, poll() is the system call alone.
#include "user.h"

static struct {
  pollx_ready_fn ready;
  void *arg;
} hooks[OPEN_MAX];
static int nhooks;

int pollx_set_ready(int fd, pollx_ready_fn ready, void *arg) {
  if (fd < 0 || fd >= OPEN_MAX) { errno = EBADF; return -1; }
  nhooks += (ready != NULL) - (hooks[fd].ready != NULL);
  hooks[fd].ready = ready;
  hooks[fd].arg = arg;
  return 0;
}

// Precondition: fds[0..nfds) holds the kernel's revents. A hooked
// descriptor's POLLIN is its hook's answer (the hook takes in what made its
// kernel object readable); lowers *next_ns to the hooks' earliest wish.
// Returns how many entries have revents.
static int hooks_ready(struct pollfd *fds, int nfds, uint64_t *next_ns) {
  int n = 0;
  for (int i = 0; i < nfds; i++) {
    int fd = fds[i].fd;
    if (fd >= 0 && fd < OPEN_MAX && hooks[fd].ready && (fds[i].events & POLLIN)) {
      uint64_t next = ~0ull;
      int ready = hooks[fd].ready(hooks[fd].arg, &next);
      fds[i].revents = (short)((fds[i].revents & ~POLLIN) | (ready ? POLLIN : 0));
      if (next < *next_ns) *next_ns = next;
    }
    n += fds[i].revents != 0;
  }
  return n;
}

// Milliseconds from now to t, rounded up; ~0: -1 (no limit).
static int ms_to(uint64_t t, uint64_t now) {
  if (t == ~0ull) return -1;
  return t > now ? (int)((t - now + 999999) / 1000000) : 0;
}

// A sleep ends when a file is ready or at a hook's time; either way the
// files and hooks are looked at again before poll returns.
int poll(struct pollfd *fds, int nfds, int timeout_ms) {
  if (nhooks == 0) return sys_poll(fds, nfds, timeout_ms);
  uint64_t end = timeout_ms < 0 ? ~0ull : clock_ns() + (uint64_t)timeout_ms * 1000000ull;
  for (;;) {
    if (sys_poll(fds, nfds, 0) < 0) return -1;   // checks fds; the kernel's readiness
    uint64_t next = end;
    int r = hooks_ready(fds, nfds, &next);
    uint64_t now = clock_ns();
    if (r > 0 || now >= end) return r;
    if (sys_poll(fds, nfds, ms_to(next, now)) < 0) return -1;
  }
}
