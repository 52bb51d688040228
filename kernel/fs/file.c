// file.c: the system-wide table of open files, the read/write/stat/poll
// operations on them (dispatched through each file's struct file_ops),
// the ops of inode and device files, and the calling process's
// descriptor table helpers.
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
      *f = (struct file){ .refs = 1 };
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
  f->ops = NULL;
  spin_unlock(&ftable.lock);
  if (copy.ops && copy.ops->close) copy.ops->close(&copy);
}

int file_stat(struct file *f, uint64 st_uva) {
  return f->ops && f->ops->stat ? f->ops->stat(f, st_uva) : -1;
}

int file_read(struct file *f, uint64 uva, int n) {
  if (!f->readable || n < 0 || !f->ops || !f->ops->read) return -1;
  return f->ops->read(f, uva, n);
}

int file_write(struct file *f, uint64 uva, int n) {
  if (!f->writable || n < 0 || !f->ops || !f->ops->write) return -1;
  return f->ops->write(f, uva, n);
}

int file_poll(struct file *f) {
  if (!f->ops) return POLLNVAL;
  return f->ops->poll ? f->ops->poll(f) : POLLIN | POLLOUT;
}

// ---- inodes and devices ----

static void inode_file_close(struct file *f) {
  fs_tx_begin();
  inode_put(f->ip);
  fs_tx_end();
}

static int inode_file_stat(struct file *f, uint64 st_uva) {
  struct stat st;
  inode_lock(f->ip);
  inode_stat(f->ip, &st);
  inode_unlock(f->ip);
  return copy_out(current()->pagetable, st_uva, &st, sizeof st);
}

static int inode_file_read(struct file *f, uint64 uva, int n) {
  inode_lock(f->ip);
  int r = inode_read(f->ip, 1, uva, f->off, n);
  if (r > 0) f->off += r;
  inode_unlock(f->ip);
  return r;
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

// Regular files and directories are always ready (poll's NULL).
const struct file_ops file_inode_ops = {
  .read = inode_file_read, .write = inode_file_write, .stat = inode_file_stat,
  .close = inode_file_close,
};

// A device file's major was checked against NDEV when it was opened.
static const struct devsw *dev_of(struct file *f) { return &devsw[f->major]; }

static int device_read(struct file *f, uint64 uva, int n) {
  return dev_of(f)->read ? dev_of(f)->read(1, uva, n) : -1;
}

static int device_write(struct file *f, uint64 uva, int n) {
  return dev_of(f)->write ? dev_of(f)->write(1, uva, n) : -1;
}

static int device_poll(struct file *f) {
  return dev_of(f)->poll ? dev_of(f)->poll() : POLLIN | POLLOUT;
}

const struct file_ops file_device_ops = {
  .read = device_read, .write = device_write, .stat = inode_file_stat,
  .poll = device_poll, .close = inode_file_close,
};

// ---- the calling process's descriptors ----

struct file *fd_file(int fd) {
  if (fd < 0 || fd >= NOFILE) return NULL;
  return current()->ofile[fd];
}

int fd_install(struct file *f) {
  struct proc *p = current();
  for (int fd = 0; fd < NOFILE; fd++) {
    if (!p->ofile[fd]) { p->ofile[fd] = f; return fd; }
  }
  return -1;
}

int fd_close(int fd) {
  struct file *f = fd_file(fd);
  if (!f) return -1;
  current()->ofile[fd] = NULL;
  file_close(f);
  return 0;
}

int fd_open_obj(const struct file_ops *ops, void *obj) {
  struct file *f = file_alloc();
  if (!f) return -1;
  int fd = fd_install(f);
  if (fd < 0) { file_close(f); return -1; }     // ops still NULL: obj stays the caller's
  f->readable = f->writable = 1;
  f->obj = obj;
  f->ops = ops;
  return fd;
}

void *fd_obj(int fd, const struct file_ops *ops) {
  struct file *f = fd_file(fd);
  return f && f->ops == ops ? f->obj : NULL;
}
