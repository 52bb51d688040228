// sysfile.c: system calls about files, directories, pipes and exec.
// Argument checking lives here; the work is done by file.c, inode.c,
// dir.c and exec.c. Every call that changes the disk runs in one
// transaction (fs_tx_begin/fs_tx_end).
#include "lib/types.h"
#include "lib/riscv.h"
#include "lib/param.h"
#include "core/proc.h"
#include "core/printk.h"
#include "lib/klib.h"
#include "core/pmem.h"
#include "core/vm.h"
#include "core/poll.h"
#include "core/timer.h"
#include "fs/fs.h"
#include "fs/log.h"
#include "fs/file.h"
#include "proc/exec.h"
#include "proc/args.h"
#include "lib/uapi.h"

// The open file behind descriptor argument n, or NULL.
static struct file *arg_file(int n) { return fd_file(arg_int(n)); }

int64 sys_read(void) {
  struct file *f = arg_file(0);
  return f ? file_read(f, arg_addr(1), arg_int(2)) : -1;
}

int64 sys_write(void) {
  struct file *f = arg_file(0);
  return f ? file_write(f, arg_addr(1), arg_int(2)) : -1;
}

int64 sys_close(void) { return fd_close(arg_int(0)); }

int64 sys_dup(void) {
  struct file *f = arg_file(0);
  if (!f) return -1;
  int fd = fd_install(f);
  if (fd >= 0) file_dup(f);
  return fd;
}

int64 sys_fstat(void) {
  struct file *f = arg_file(0);
  return f ? file_stat(f, arg_addr(1)) : -1;
}

// fcntl(fd, F_GETFL): the access mode and O_NONBLOCK; fcntl(fd, F_SETFL,
// flags): sets or clears O_NONBLOCK (the other bits are ignored, as
// Linux ignores the access mode). The flags belong to the open file, so
// dup'd and inherited descriptors share them. -1 for a bad fd or command.
int64 sys_fcntl(void) {
  struct file *f = arg_file(0);
  int cmd = arg_int(1);
  if (!f) return -1;
  if (cmd == F_GETFL)
    return (f->readable && f->writable ? O_RDWR : f->writable ? O_WRONLY : O_RDONLY) | f->flags;
  if (cmd != F_SETFL) return -1;
  f->flags = (f->flags & ~O_NONBLOCK) | (arg_int(2) & O_NONBLOCK);
  return 0;
}

// Sets every entry's revents from its file's readiness: POLLNVAL for a
// descriptor that is not open, nothing for a negative one. Returns how
// many entries have revents set.
static int poll_scan(struct pollfd *fds, int nfds) {
  int ready = 0;
  for (int i = 0; i < nfds; i++) {
    struct file *f = fd_file(fds[i].fd);
    int bits = fds[i].fd < 0 ? 0 : f ? file_poll(f) : POLLNVAL;
    fds[i].revents = (short)(bits & (fds[i].events | POLLERR | POLLHUP | POLLNVAL));
    if (fds[i].revents) ready++;
  }
  return ready;
}

// poll(fds, nfds, timeout_ms): waits until one of the files is ready, the
// timeout passes (0: check once; < 0: no limit) or the process is killed
// (-1). The generation read before each scan makes the sleep wake on any
// readiness change after it (core/poll.h). -1 for nfds outside 0..NOFILE
// or a bad fds pointer, with nothing written.
int64 sys_poll(void) {
  struct pollfd fds[NOFILE];
  uint64 uva = arg_addr(0);
  int nfds = arg_int(1), timeout_ms = arg_int(2);
  pagetable_t pt = current()->pagetable;
  uint64 len = (uint64)nfds * sizeof fds[0];
  if (nfds < 0 || nfds > NOFILE) return -1;
  // Written back as read first: a read-only array fails before any wait.
  if (nfds > 0 && (copy_in(pt, fds, uva, len) < 0 || copy_out(pt, uva, fds, len) < 0)) return -1;
  uint64 deadline = timeout_ms < 0 ? ~0ull : clock_ns() + (uint64)timeout_ms * 1000000;
  int ready;
  for (;;) {
    uint64 gen = poll_generation();
    ready = poll_scan(fds, nfds);
    if (ready || clock_ns() >= deadline) break;
    if (proc_killed(current())) return -1;
    poll_wait_change(gen, deadline);
  }
  if (nfds > 0 && copy_out(pt, uva, fds, len) < 0) return -1;
  return ready;
}

// Creates path as a new inode of the given type, or for T_FILE returns
// an existing file unless excl. Returns it locked and referenced, or NULL.
// Inside a transaction.
static struct inode *create(const char *path, short type, short major, short minor,
                            int excl) {
  char name[DIRSIZ + 1];
  struct inode *dp = path_parent(path, name), *ip;
  if (!dp) return NULL;
  inode_lock(dp);
  if ((ip = dir_lookup(dp, name, NULL)) != NULL) {
    inode_unlock_put(dp);
    inode_lock(ip);
    if (type == T_FILE && !excl && (ip->type == T_FILE || ip->type == T_DEVICE)) return ip;
    inode_unlock_put(ip);
    return NULL;
  }
  if ((ip = inode_alloc(dp->dev, type)) == NULL) { inode_unlock_put(dp); return NULL; }
  inode_lock(ip);
  ip->major = major; ip->minor = minor; ip->nlink = 1;
  inode_update(ip);
  if (type == T_DIR && (dir_link(ip, ".", ip->inum) < 0 || dir_link(ip, "..", dp->inum) < 0))
    goto undo;
  if (dir_link(dp, name, ip->inum) < 0) goto undo;
  if (type == T_DIR) { dp->nlink++; inode_update(dp); }   // the new ".."
  inode_unlock_put(dp);
  return ip;
undo:
  ip->nlink = 0;                           // inode_put frees it
  inode_update(ip);
  inode_unlock_put(ip);
  inode_unlock_put(dp);
  return NULL;
}

// Opens (or with O_CREATE creates) a path; returns the inode locked.
static struct inode *open_inode(const char *path, int flags) {
  if (flags & O_CREATE) return create(path, T_FILE, 0, 0, flags & O_EXCL);
  struct inode *ip = path_lookup(path);
  if (!ip) return NULL;
  inode_lock(ip);
  if (ip->type == T_DIR && (flags & (O_WRONLY | O_RDWR))) { inode_unlock_put(ip); return NULL; }
  return ip;
}

int64 sys_open(void) {
  char path[MAXPATH];
  int flags = arg_int(1);
  if (arg_str(0, path, sizeof path) < 0) return -1;
  fs_tx_begin();
  struct inode *ip = open_inode(path, flags);
  if (!ip) { fs_tx_end(); return -1; }
  struct file *f = NULL;
  int fd = -1;
  if (ip->type == T_DEVICE && (ip->major < 0 || ip->major >= NDEV)) goto fail;
  if ((f = file_alloc()) == NULL || (fd = fd_install(f)) < 0) goto fail;
  f->ops = ip->type == T_DEVICE ? &file_device_ops : &file_inode_ops;
  f->major = ip->major;
  f->ip = ip;
  f->readable = !(flags & O_WRONLY);
  f->writable = (flags & O_WRONLY) || (flags & O_RDWR);
  f->flags = flags & O_NONBLOCK;
  if ((flags & O_TRUNC) && ip->type == T_FILE)
    inode_truncate(ip);
  inode_unlock(ip);
  fs_tx_end();
  return fd;
fail:
  if (f) file_close(f);
  inode_unlock_put(ip);
  fs_tx_end();
  return -1;
}

int64 sys_mkdir(void) {
  char path[MAXPATH];
  if (arg_str(0, path, sizeof path) < 0) return -1;
  fs_tx_begin();
  struct inode *ip = create(path, T_DIR, 0, 0, 0);
  if (ip) inode_unlock_put(ip);
  fs_tx_end();
  return ip ? 0 : -1;
}

int64 sys_mknod(void) {
  char path[MAXPATH];
  if (arg_str(0, path, sizeof path) < 0) return -1;
  fs_tx_begin();
  struct inode *ip = create(path, T_DEVICE, arg_int(1), arg_int(2), 0);
  if (ip) inode_unlock_put(ip);
  fs_tx_end();
  return ip ? 0 : -1;
}

int64 sys_chdir(void) {
  char path[MAXPATH];
  struct proc *p = current();
  if (arg_str(0, path, sizeof path) < 0) return -1;
  fs_tx_begin();
  struct inode *ip = path_lookup(path);
  if (!ip) { fs_tx_end(); return -1; }
  inode_lock(ip);
  if (ip->type != T_DIR) { inode_unlock_put(ip); fs_tx_end(); return -1; }
  inode_unlock(ip);
  if (p->cwd) inode_put(p->cwd);
  p->cwd = ip;
  fs_tx_end();
  return 0;
}

int64 sys_link(void) {
  char old[MAXPATH], new[MAXPATH], name[DIRSIZ + 1];
  if (arg_str(0, old, sizeof old) < 0 || arg_str(1, new, sizeof new) < 0) return -1;
  fs_tx_begin();
  struct inode *ip = path_lookup(old), *dp = NULL;
  if (!ip) { fs_tx_end(); return -1; }
  inode_lock(ip);
  if (ip->type == T_DIR) { inode_unlock_put(ip); fs_tx_end(); return -1; }
  ip->nlink++;                 // count the new name first: a crash leaks, never dangles
  inode_update(ip);
  inode_unlock(ip);
  if ((dp = path_parent(new, name)) == NULL) goto undo;
  inode_lock(dp);
  if (dp->dev != ip->dev || dir_link(dp, name, ip->inum) < 0) { inode_unlock_put(dp); goto undo; }
  inode_unlock_put(dp);
  inode_put(ip);
  fs_tx_end();
  return 0;
undo:
  inode_lock(ip);
  ip->nlink--;
  inode_update(ip);
  inode_unlock_put(ip);
  fs_tx_end();
  return -1;
}

// Caller holds dp->lock and ip->lock, in a transaction. Clears the entry.
static int remove_entry(struct inode *dp, uint32 off, struct inode *ip) {
  struct dirent empty;
  memset(&empty, 0, sizeof empty);
  if (inode_write(dp, 0, (uint64)&empty, off, sizeof empty) != sizeof empty)
    panic("unlink: cannot clear directory entry");
  if (ip->type == T_DIR) { dp->nlink--; inode_update(dp); }   // its ".."
  ip->nlink--;
  inode_update(ip);
  return 0;
}

int64 sys_unlink(void) {
  char path[MAXPATH], name[DIRSIZ + 1];
  uint32 off;
  if (arg_str(0, path, sizeof path) < 0) return -1;
  fs_tx_begin();
  struct inode *dp = path_parent(path, name), *ip = NULL;
  if (!dp) { fs_tx_end(); return -1; }
  inode_lock(dp);
  if (dir_name_eq(name, ".") || dir_name_eq(name, "..")) goto fail;
  if ((ip = dir_lookup(dp, name, &off)) == NULL) goto fail;
  inode_lock(ip);
  if (ip->nlink < 1) panic("unlink: inode %d has no links", ip->inum);
  if (ip->type == T_DIR && !dir_is_empty(ip)) { inode_unlock_put(ip); goto fail; }
  remove_entry(dp, off, ip);
  inode_unlock_put(ip);        // freed here unless some file keeps it open
  inode_unlock_put(dp);
  fs_tx_end();
  return 0;
fail:
  inode_unlock_put(dp);
  fs_tx_end();
  return -1;
}

int64 sys_pipe(void) {
  struct proc *p = current();
  uint64 fds_uva = arg_addr(0);
  struct file *rd, *wr;
  if (pipe_alloc(&rd, &wr) < 0) return -1;
  int fds[2] = { fd_install(rd), -1 };
  if (fds[0] >= 0) fds[1] = fd_install(wr);
  if (fds[1] < 0 || copy_out(p->pagetable, fds_uva, fds, sizeof fds) < 0) {
    if (fds[0] >= 0) p->ofile[fds[0]] = NULL;
    if (fds[1] >= 0) p->ofile[fds[1]] = NULL;
    file_close(rd);
    file_close(wr);
    return -1;
  }
  return 0;
}

// Copies the user argv into kernel pages; returns argc or -1.
static int fetch_argv(uint64 uargv, char **argv) {
  for (int i = 0; i < MAXARG; i++) {
    uint64 uarg;
    if (copy_in(current()->pagetable, &uarg, uargv + i * sizeof(uint64), sizeof uarg) < 0) return -1;
    if (uarg == 0) return i;
    if ((argv[i] = page_alloc()) == NULL) return -1;
    if (copy_in_str(current()->pagetable, argv[i], uarg, PGSIZE) < 0) return -1;
  }
  return -1;                        // too many arguments
}

int64 sys_exec(void) {
  char path[MAXPATH];
  char *argv[MAXARG + 1];
  for (int i = 0; i <= MAXARG; i++) argv[i] = NULL;
  int r = -1;
  if (arg_str(0, path, sizeof path) >= 0 && fetch_argv(arg_addr(1), argv) >= 0)
    r = exec_program(path, argv);
  for (int i = 0; i < MAXARG && argv[i]; i++) page_put((uint64)argv[i]);
  return r;
}
