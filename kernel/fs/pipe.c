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
#include "lib/riscv.h"
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

// User bytes go through a small buffer on the stack, copied outside
// pi->lock: a copy may fault a page in from the paging store and sleep
// (core/pager.c). A chunk stays within one user page, so it is valid or
// not as a whole (a partial write or read stops exactly at a bad page).
#define PIPE_CHUNK 128

static int chunk_len(uint64 uva, int n) {
  int m = PGSIZE - (int)(uva % PGSIZE);
  if (m > PIPE_CHUNK) m = PIPE_CHUNK;
  return m < n ? m : n;
}

// Caller holds pi->lock. Puts buf[0..m) into the pipe, sleeping while it
// is full. Returns how many went in; -1 if the reader is gone or the
// writer killed; fewer than m only if O_NONBLOCK and full.
static int pipe_put(struct file *f, const char *buf, int m) {
  struct pipe *pi = f->pipe;
  int k = 0;
  while (k < m) {
    if (!pi->reader_open || proc_killed(current())) return -1;
    if (pi->nwritten - pi->nread == PIPE_BYTES) {
      pipe_wake(&pi->nread);
      if (file_nonblock(f)) break;
      proc_sleep(&pi->nwritten, &pi->lock);
      continue;
    }
    pi->data[pi->nwritten++ % PIPE_BYTES] = buf[k++];
  }
  return k;
}

static int pipe_write(struct file *f, uint64 uva, int n) {
  struct pipe *pi = f->pipe;
  struct proc *p = current();
  char buf[PIPE_CHUNK];
  int i = 0;
  while (i < n) {
    int m = chunk_len(uva + i, n - i);
    if (copy_in(p->pagetable, buf, uva + i, m) < 0) {
      if (i == 0) i = -1;            // a bad buffer fails; a partial write counts
      break;
    }
    spin_lock(&pi->lock);
    int k = pipe_put(f, buf, m);
    pipe_wake(&pi->nread);
    spin_unlock(&pi->lock);
    if (k < 0) return -1;
    i += k;
    if (k < m) {                      // O_NONBLOCK and full
      if (i == 0) i = -1;
      break;
    }
  }
  return i;
}

static int pipe_read(struct file *f, uint64 uva, int n) {
  struct pipe *pi = f->pipe;
  struct proc *p = current();
  char buf[PIPE_CHUNK];
  spin_lock(&pi->lock);
  while (pi->nread == pi->nwritten && pi->writer_open) {
    if (proc_killed(p) || file_nonblock(f)) { spin_unlock(&pi->lock); return -1; }
    proc_sleep(&pi->nread, &pi->lock);
  }
  int i = 0;
  while (i < n && pi->nread != pi->nwritten) {
    spin_unlock(&pi->lock);
    int ok = uvm_user_pa(p->pagetable, uva + i, 1) != 0;   // before bytes leave the pipe
    spin_lock(&pi->lock);
    if (!ok) {
      if (i == 0) i = -1;            // the bytes stay in the pipe
      break;
    }
    int k = 0, m = chunk_len(uva + i, n - i);
    for (; k < m && pi->nread != pi->nwritten; k++)
      buf[k] = pi->data[pi->nread++ % PIPE_BYTES];
    spin_unlock(&pi->lock);
    int copied = copy_out(p->pagetable, uva + i, buf, k);   // fails only if the store did
    spin_lock(&pi->lock);
    if (copied < 0) {
      if (i == 0) i = -1;
      break;
    }
    i += k;
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
