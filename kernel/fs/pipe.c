// pipe.c: pipes. A pipe is a ring buffer shared by a read end and a write
// end (two struct files); it is freed when both ends are closed. Readers
// sleep while it is empty and a writer exists; writers sleep while it is
// full and a reader exists; writing with no reader fails. With O_NONBLOCK
// an end that would sleep returns what it moved, or -1 if nothing.
// poll: the read end is POLLIN with bytes buffered, POLLHUP once the
// writer is gone; the write end is POLLOUT with room, POLLERR once the
// reader is gone.
#include "lib/types.h"
#include "core/lock.h"
#include "core/proc.h"
#include "core/poll.h"
#include "core/pmem.h"
#include "core/vm.h"
#include "fs/file.h"

#define PIPE_BYTES 512

struct pipe {
  struct spinlock lock;
  uint64 nread, nwritten;     // totals; nwritten - nread bytes are buffered
  int reader_open, writer_open;
  char data[PIPE_BYTES];
};

// Caller holds pi->lock. Wakes the sleepers on one end and any poller.
static void pipe_wake(void *chan) {
  proc_wakeup(chan);
  poll_notify();
}

static void pipe_close(struct file *f) {
  struct pipe *pi = f->pipe;
  spin_lock(&pi->lock);
  if (f->writable) { pi->writer_open = 0; pipe_wake(&pi->nread); }
  else { pi->reader_open = 0; pipe_wake(&pi->nwritten); }
  int gone = !pi->reader_open && !pi->writer_open;
  spin_unlock(&pi->lock);
  if (gone) page_put((uint64)pi);
}

static int pipe_write(struct file *f, uint64 uva, int n) {
  struct pipe *pi = f->pipe;
  struct proc *p = current();
  int i = 0;
  spin_lock(&pi->lock);
  while (i < n) {
    if (!pi->reader_open || proc_killed(p)) { spin_unlock(&pi->lock); return -1; }
    if (pi->nwritten - pi->nread == PIPE_BYTES) {
      pipe_wake(&pi->nread);
      if (file_nonblock(f)) {
        if (i == 0) i = -1;
        break;
      }
      proc_sleep(&pi->nwritten, &pi->lock);
      continue;
    }
    char c;
    if (copy_in(p->pagetable, &c, uva + i, 1) < 0) {
      if (i == 0) i = -1;            // a bad buffer fails; a partial write counts
      break;
    }
    pi->data[pi->nwritten++ % PIPE_BYTES] = c;
    i++;
  }
  pipe_wake(&pi->nread);
  spin_unlock(&pi->lock);
  return i;
}

static int pipe_read(struct file *f, uint64 uva, int n) {
  struct pipe *pi = f->pipe;
  struct proc *p = current();
  spin_lock(&pi->lock);
  while (pi->nread == pi->nwritten && pi->writer_open) {
    if (proc_killed(p) || file_nonblock(f)) { spin_unlock(&pi->lock); return -1; }
    proc_sleep(&pi->nread, &pi->lock);
  }
  int i;
  for (i = 0; i < n && pi->nread != pi->nwritten; i++) {
    char c = pi->data[pi->nread % PIPE_BYTES];
    if (copy_out(p->pagetable, uva + i, &c, 1) < 0) {
      if (i == 0) i = -1;            // the byte stays in the pipe
      break;
    }
    pi->nread++;
  }
  pipe_wake(&pi->nwritten);
  spin_unlock(&pi->lock);
  return i;
}

static int pipe_poll(struct file *f) {
  struct pipe *pi = f->pipe;
  int bits = 0;
  spin_lock(&pi->lock);
  if (f->readable) {
    if (pi->nread != pi->nwritten) bits |= POLLIN;
    if (!pi->writer_open) bits |= POLLHUP;
  } else {
    if (pi->nwritten - pi->nread < PIPE_BYTES) bits |= POLLOUT;
    if (!pi->reader_open) bits |= POLLERR;
  }
  spin_unlock(&pi->lock);
  return bits;
}

static const struct file_ops pipe_ops = {
  .read = pipe_read, .write = pipe_write, .poll = pipe_poll, .close = pipe_close,
};

int pipe_alloc(struct file **rd, struct file **wr) {
  struct pipe *pi = page_alloc();   // a page is plenty for one pipe
  *rd = file_alloc();
  *wr = *rd ? file_alloc() : NULL;
  if (!pi || !*wr) {
    if (pi) page_put((uint64)pi);
    if (*rd) file_close(*rd);
    return -1;
  }
  spin_init(&pi->lock, "pipe");
  pi->reader_open = pi->writer_open = 1;
  (*rd)->ops = (*wr)->ops = &pipe_ops;
  (*rd)->pipe = (*wr)->pipe = pi;
  (*rd)->readable = 1; (*rd)->writable = 0;
  (*wr)->readable = 0; (*wr)->writable = 1;
  return 0;
}
