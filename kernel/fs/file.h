// file.h: open files (file.c), pipes (pipe.c) and the device switch.
// A struct file is shared by every descriptor that dup/fork made from
// the same open(); it holds the offset. Device files dispatch reads and
// writes through devsw[major].
#ifndef FILE_H
#define FILE_H
#include "lib/types.h"
#include "lib/param.h"
#include "lib/uapi.h"

struct pipe;
struct inode;

enum file_kind { F_NONE, F_PIPE, F_INODE, F_DEVICE };

struct file {
  enum file_kind kind;
  int refs;              // under the file table lock
  char readable, writable;
  struct pipe *pipe;     // F_PIPE
  struct inode *ip;      // F_INODE, F_DEVICE
  uint32 off;            // F_INODE; under ip->lock
  short major;           // F_DEVICE
};

#include "dev/devsw.h"

void file_table_init(void);
struct file *file_alloc(void);
struct file *file_dup(struct file *f);
void file_close(struct file *f);
int  file_stat(struct file *f, uint64 st_uva);
int  file_read(struct file *f, uint64 uva, int n);
int  file_write(struct file *f, uint64 uva, int n);

int  pipe_alloc(struct file **rd, struct file **wr);
void pipe_close(struct pipe *pi, int writer);
int  pipe_read(struct pipe *pi, uint64 uva, int n);
int  pipe_write(struct pipe *pi, uint64 uva, int n);
#endif
