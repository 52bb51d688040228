// ucma.c: the per-process front end of the kernel rdma_cm (the role of
// Linux's rdma_ucm): the only rdma_cm code that knows processes and files.
//
// Owns: event channels as file descriptors (a kind of open file whose
// object names a channel of cma.c; poll() reports POLLIN while an event
// waits, O_NONBLOCK makes get_event fail with EAGAIN, close() destroys the
// channel's ids), the owner key of every id and channel (the caller's
// pid: another process's id or channel is refused), and the exit hook
// that destroys a process's ids (connections DREQ'd, REQs rejected,
// listeners released) before its files, and so its channels, close.
// The system calls (kernel/sys/sysucma.c) copy arguments in and out.
#include "lib/types.h"
#include "lib/param.h"
#include "core/proc.h"
#include "proc/lifecycle.h"
#include "fs/file.h"
#include "rdma/cma.h"
#include "rdma/ucma.h"

static int chan_slots[CMA_MAX_CHAN];     // a channel file's object: &chan_slots[slot]

static int self(void) { return current()->pid; }
// A blocked get_event gives up when its process is killed.
static int killed(void) { return proc_killed(current()); }

static int chan_poll(struct file *f) { return cma_chan_ready(*(int *)f->obj) ? POLLIN : 0; }
static void chan_close(struct file *f) { cma_chan_close(*(int *)f->obj); }
static const struct file_ops chan_ops = { .poll = chan_poll, .close = chan_close };

// The channel slot behind fd, or -EBADF.
int ucma_chan_of(int fd) {
  int *slot = fd_obj(fd, &chan_ops);
  return slot ? *slot : -EBADF;
}

int ucma_create_chan(void) {
  int ch = cma_chan_create(self());
  if (ch < 0) return ch;
  chan_slots[ch] = ch;
  int fd = fd_open_obj(&chan_ops, &chan_slots[ch]);
  if (fd < 0) {
    cma_chan_close(ch);
    return -EMFILE;
  }
  return fd;
}

int ucma_get_event(int fd, struct ucma_event *out) {
  struct file *f = fd_file(fd);
  int ch = ucma_chan_of(fd);
  return ch < 0 ? ch : cma_get_event(self(), ch, file_nonblock(f) ? 0 : killed, out);
}

int ucma_create_id(int fd, int ps, uint64 cookie) {
  int ch = ucma_chan_of(fd);
  return ch < 0 ? ch : cma_create_id(self(), ch, ps, cookie);
}

int ucma_migrate_id(int id, int fd) {
  int ch = ucma_chan_of(fd);
  return ch < 0 ? ch : cma_migrate_id(self(), id, ch);
}

int ucma_destroy_id(int id) { return cma_destroy_id(self(), id); }
int ucma_bind(int id, uint32 ip, uint16 port) { return cma_bind(self(), id, ip, port); }
int ucma_resolve_addr(int id, uint32 src, uint32 dst, uint16 port, int timeout_ms) {
  return cma_resolve_addr(self(), id, src, dst, port, timeout_ms);
}
int ucma_resolve_route(int id, int timeout_ms) { return cma_resolve_route(self(), id, timeout_ms); }
int ucma_listen(int id, int backlog) { return cma_listen(self(), id, backlog); }
int ucma_connect(int id, const struct ucma_conn_param *p) { return cma_connect(self(), id, p); }
int ucma_accept(int id, const struct ucma_conn_param *p) { return cma_accept(self(), id, p); }
int ucma_reject(int id, const void *priv, int len) { return cma_reject(self(), id, priv, len); }
int ucma_disconnect(int id) { return cma_disconnect(self(), id); }
int ucma_established(int id) { return cma_established(self(), id); }
int ucma_init_qp_attr(int id, int state, struct rdma_qp_attr *a) {
  return cma_init_qp_attr(self(), id, state, a);
}

static void ucma_exit(struct proc *p) { cma_owner_exit(p->pid); }

void ucma_init(void) { proc_on_exit(ucma_exit); }
