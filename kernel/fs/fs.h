// fs.h: in-memory inodes (inode.c) and directories and paths (dir.c).
//
// Reference rules: inode_get/inode_dup take a reference (the in-memory
// inode stays cached), inode_put drops it; when the last reference goes
// and no directory entry names the inode (nlink == 0), its blocks and the
// disk inode are freed -- so an unlinked file lives until its last close.
// inode_lock loads the inode from disk if needed and must be held to read
// or change any field below `lock`. Calls that may write the disk
// (inode_put, inode_write, inode_alloc, dir_link...) run inside
// fs_tx_begin()/fs_tx_end() (log.h).
#ifndef FS_H
#define FS_H
#include "lib/types.h"
#include "core/lock.h"
#include "lib/fs_format.h"
#include "lib/uapi.h"

struct inode {
  uint32 dev, inum;
  int refs;                    // under the inode table lock
  struct sleeplock lock;
  int valid;                   // fields below were read from disk
  short type, major, minor, nlink;
  uint32 size;
  uint32 blocks[FS_NDIRECT + 2];
};

extern struct fs_super superblock;

void fs_mount(int dev);
void inode_table_init(void);
struct inode *inode_get(uint32 dev, uint32 inum);
struct inode *inode_alloc(uint32 dev, short type);
struct inode *inode_dup(struct inode *ip);
void inode_lock(struct inode *ip);
void inode_unlock(struct inode *ip);
void inode_put(struct inode *ip);
void inode_unlock_put(struct inode *ip);
void inode_update(struct inode *ip);       // write the fields to disk
void inode_truncate(struct inode *ip);     // drop all contents; locked, in a tx
void inode_stat(struct inode *ip, struct stat *st);
int  inode_read(struct inode *ip, int to_user, uint64 dst, uint32 off, uint32 n);
int  inode_write(struct inode *ip, int from_user, uint64 src, uint32 off, uint32 n);

// dir.c
int dir_name_eq(const char *a, const char *b);
struct inode *dir_lookup(struct inode *dp, const char *name, uint32 *off_out);
int dir_link(struct inode *dp, const char *name, uint32 inum);
int dir_is_empty(struct inode *dp);
struct inode *path_lookup(const char *path);
struct inode *path_parent(const char *path, char name[DIRSIZ + 1]);
#endif
