// pipe.c: pipes. A pipe is a ring buffer shared by a read end and a write
// end (two struct files); it is freed when both ends are closed. Readers
// sleep while it is empty and a writer exists; writers sleep while it is
// full and a reader exists; writing with no reader fails.
#include "lib/types.h"
#include "core/lock.h"
#include "core/proc.h"
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
  (*rd)->kind = (*wr)->kind = F_PIPE;
  (*rd)->pipe = (*wr)->pipe = pi;
  (*rd)->readable = 1; (*rd)->writable = 0;
  (*wr)->readable = 0; (*wr)->writable = 1;
  return 0;
}

void pipe_close(struct pipe *pi, int writer) {
  spin_lock(&pi->lock);
  if (writer) { pi->writer_open = 0; proc_wakeup(&pi->nread); }
  else { pi->reader_open = 0; proc_wakeup(&pi->nwritten); }
  int gone = !pi->reader_open && !pi->writer_open;
  spin_unlock(&pi->lock);
  if (gone) page_put((uint64)pi);
}

int pipe_write(struct pipe *pi, uint64 uva, int n) {
  struct proc *p = current();
  int i = 0;
  spin_lock(&pi->lock);
  while (i < n) {
    if (!pi->reader_open || proc_killed(p)) { spin_unlock(&pi->lock); return -1; }
    if (pi->nwritten - pi->nread == PIPE_BYTES) {
      proc_wakeup(&pi->nread);
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
  proc_wakeup(&pi->nread);
  spin_unlock(&pi->lock);
  return i;
}

int pipe_read(struct pipe *pi, uint64 uva, int n) {
  struct proc *p = current();
  spin_lock(&pi->lock);
  while (pi->nread == pi->nwritten && pi->writer_open) {
    if (proc_killed(p)) { spin_unlock(&pi->lock); return -1; }
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
  proc_wakeup(&pi->nwritten);
  spin_unlock(&pi->lock);
  return i;
}
