// file.h: open files (file.c), pipes (pipe.c), the device switch and the
// per-process descriptor table's helpers.
// A struct file is shared by every descriptor that dup/fork made from
// the same open(); it holds the offset and the status flags (O_NONBLOCK).
// What a file does is its kind's struct file_ops: file.c's for inodes
// and devices (device files dispatch through devsw[major]), pipe.c's for
// pipes, and kinds of upper layers (sockets in net/socket.c, completion
// channels in rdma/rdma_cq.c) hand their own ops to file_alloc's caller
// and keep their object in f->obj: file.c never names them.
#ifndef FILE_H
#define FILE_H
#include "lib/types.h"
#include "lib/param.h"
#include "lib/uapi.h"

struct pipe;
struct inode;
struct file;

// One kind of open file. read/write/stat NULL: the call fails (-1).
// poll returns the POLL* bits true now (NULL: POLLIN | POLLOUT, always
// ready); a kind whose readiness changes calls poll_notify() (core/poll.h)
// after each change. close runs once, after the last reference went, on a
// copy of the file (the slot is free again by then).
struct file_ops {
  int  (*read)(struct file *f, uint64 uva, int n);
  int  (*write)(struct file *f, uint64 uva, int n);
  int  (*stat)(struct file *f, uint64 st_uva);
  int  (*poll)(struct file *f);
  void (*close)(struct file *f);
};

struct file {
  const struct file_ops *ops;  // NULL until the creator has set the file up
  int refs;              // under the file table lock
  char readable, writable;
  int flags;             // O_NONBLOCK (fcntl F_SETFL)
  struct pipe *pipe;     // pipes
  struct inode *ip;      // inodes and devices
  uint32 off;            // inodes; under ip->lock
  short major;           // devices
  void *obj;             // an upper layer's object (socket, completion channel)
};

extern const struct file_ops file_inode_ops, file_device_ops;

#include "dev/devsw.h"

void file_table_init(void);
struct file *file_alloc(void);
struct file *file_dup(struct file *f);
void file_close(struct file *f);
int  file_stat(struct file *f, uint64 st_uva);
int  file_read(struct file *f, uint64 uva, int n);
int  file_write(struct file *f, uint64 uva, int n);
int  file_poll(struct file *f);
static inline int file_nonblock(const struct file *f) { return (f->flags & O_NONBLOCK) != 0; }

// The calling process's descriptors (process context).
struct file *fd_file(int fd);            // the open file, or NULL
int  fd_install(struct file *f);         // the lowest free fd now naming f, or -1
int  fd_close(int fd);                   // 0, or -1 if fd is not open
// A file of a kind with ops, installed as an fd: the fd, or -1 with
// nothing allocated. The creator owns obj until then.
int  fd_open_obj(const struct file_ops *ops, void *obj);
// The object behind fd if its file is of kind ops, else NULL.
void *fd_obj(int fd, const struct file_ops *ops);

int  pipe_alloc(struct file **rd, struct file **wr);
#endif
