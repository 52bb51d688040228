// file.c: the system-wide table of open files and the read/write/stat
// operations on them, dispatching to pipes, inodes or devices.
#include "lib/types.h"
#include "lib/param.h"
#include "core/lock.h"
#include "core/proc.h"
#include "core/printk.h"
#include "fs/fs.h"
#include "fs/log.h"
#include "core/vm.h"
#include "fs/file.h"

static struct { struct spinlock lock; struct file files[NFILE]; } ftable;

// Worst case per written block: the block and a bitmap block; plus the
// inode and up to four pointer blocks with their bitmap blocks.
#define WRITE_CHUNK_BLOCKS ((MAX_OP_BLOCKS - 10) / 2)

void file_table_init(void) { spin_init(&ftable.lock, "ftable"); }

struct file *file_alloc(void) {
  spin_lock(&ftable.lock);
  for (struct file *f = ftable.files; f < &ftable.files[NFILE]; f++) {
    if (f->refs == 0) {
      f->refs = 1;
      spin_unlock(&ftable.lock);
      return f;
    }
  }
  spin_unlock(&ftable.lock);
  return NULL;
}

struct file *file_dup(struct file *f) {
  spin_lock(&ftable.lock);
  if (f->refs < 1) panic("file_dup: file not open");
  f->refs++;
  spin_unlock(&ftable.lock);
  return f;
}

void file_close(struct file *f) {
  spin_lock(&ftable.lock);
  if (f->refs < 1) panic("file_close: file not open");
  if (--f->refs > 0) { spin_unlock(&ftable.lock); return; }
  struct file copy = *f;               // release the slot, then clean up
  f->kind = F_NONE;
  spin_unlock(&ftable.lock);
  if (copy.kind == F_PIPE) {
    pipe_close(copy.pipe, copy.writable);
  } else if (copy.kind == F_INODE || copy.kind == F_DEVICE) {
    fs_tx_begin();
    inode_put(copy.ip);
    fs_tx_end();
  }
}

int file_stat(struct file *f, uint64 st_uva) {
  if (f->kind != F_INODE && f->kind != F_DEVICE) return -1;
  struct stat st;
  inode_lock(f->ip);
  inode_stat(f->ip, &st);
  inode_unlock(f->ip);
  return copy_out(current()->pagetable, st_uva, &st, sizeof st);
}

int file_read(struct file *f, uint64 uva, int n) {
  if (!f->readable || n < 0) return -1;
  switch (f->kind) {
  case F_PIPE: return pipe_read(f->pipe, uva, n);
  case F_DEVICE:
    if (f->major < 0 || f->major >= NDEV || !devsw[f->major].read) return -1;
    return devsw[f->major].read(1, uva, n);
  case F_INODE: {
    inode_lock(f->ip);
    int r = inode_read(f->ip, 1, uva, f->off, n);
    if (r > 0) f->off += r;
    inode_unlock(f->ip);
    return r;
  }
  default: panic("file_read: bad file kind %d", f->kind);
  }
}

// Writes in transactions of at most WRITE_CHUNK_BLOCKS blocks so one big
// write cannot overflow the log.
static int inode_file_write(struct file *f, uint64 uva, int n) {
  int done = 0;
  while (done < n) {
    int chunk = n - done;
    if (chunk > WRITE_CHUNK_BLOCKS * FS_BLOCK_SIZE) chunk = WRITE_CHUNK_BLOCKS * FS_BLOCK_SIZE;
    fs_tx_begin();
    inode_lock(f->ip);
    int r = inode_write(f->ip, 1, uva + done, f->off, chunk);
    if (r > 0) f->off += r;
    inode_unlock(f->ip);
    fs_tx_end();
    if (r != chunk) break;
    done += r;
  }
  return done == n ? n : (done > 0 ? done : -1);
}

int file_write(struct file *f, uint64 uva, int n) {
  if (!f->writable || n < 0) return -1;
  switch (f->kind) {
  case F_PIPE: return pipe_write(f->pipe, uva, n);
  case F_DEVICE:
    if (f->major < 0 || f->major >= NDEV || !devsw[f->major].write) return -1;
    return devsw[f->major].write(1, uva, n);
  case F_INODE: return inode_file_write(f, uva, n);
  default: panic("file_write: bad file kind %d", f->kind);
  }
}
