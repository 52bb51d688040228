// dir.c: directories and path names. A directory is a file of struct
// dirent records (uapi.h); names longer than DIRSIZ are cut to DIRSIZ.
// Paths are resolved one component at a time, holding only one inode
// lock at a time (so lookups in different directories cannot deadlock).
#include "lib/types.h"
#include "lib/param.h"
#include "core/proc.h"
#include "core/printk.h"
#include "lib/klib.h"
#include "fs/fs.h"

int dir_name_eq(const char *a, const char *b) { return strncmp(a, b, DIRSIZ) == 0; }

static void read_entry(struct inode *dp, uint32 off, struct dirent *de) {
  if (inode_read(dp, 0, (uint64)de, off, sizeof *de) != sizeof *de)
    panic("dir: short read of directory %d", dp->inum);
}

// Caller holds dp->lock. Returns the named entry's inode (unlocked,
// referenced) and its offset, or NULL.
struct inode *dir_lookup(struct inode *dp, const char *name, uint32 *off_out) {
  if (dp->type != T_DIR) panic("dir_lookup: inode %d is not a directory", dp->inum);
  struct dirent de;
  for (uint32 off = 0; off < dp->size; off += sizeof de) {
    read_entry(dp, off, &de);
    if (de.inum != 0 && dir_name_eq(name, de.name)) {
      if (off_out) *off_out = off;
      return inode_get(dp->dev, de.inum);
    }
  }
  return NULL;
}

// Caller holds dp->lock, inside a transaction. -1 if the name exists.
int dir_link(struct inode *dp, const char *name, uint32 inum) {
  struct inode *ip = dir_lookup(dp, name, NULL);
  if (ip) { inode_put(ip); return -1; }
  struct dirent de;
  uint32 off;
  for (off = 0; off < dp->size; off += sizeof de) {
    read_entry(dp, off, &de);
    if (de.inum == 0) break;               // reuse a free slot
  }
  memset(&de, 0, sizeof de);
  memmove(de.name, name, strlen(name) < DIRSIZ ? strlen(name) : DIRSIZ);
  de.inum = inum;
  if (inode_write(dp, 0, (uint64)&de, off, sizeof de) != sizeof de) return -1;
  return 0;
}

// Caller holds dp->lock. True if only "." and ".." remain.
int dir_is_empty(struct inode *dp) {
  struct dirent de;
  for (uint32 off = 2 * sizeof de; off < dp->size; off += sizeof de) {
    read_entry(dp, off, &de);
    if (de.inum != 0) return 0;
  }
  return 1;
}

// Copies the next component of *path into name; advances *path past it
// and any following slashes. Returns 0 when there is no component left.
static int next_component(const char **path, char name[DIRSIZ + 1]) {
  const char *p = *path;
  while (*p == '/') p++;
  if (*p == 0) return 0;
  const char *start = p;
  while (*p != '/' && *p != 0) p++;
  uint64 len = p - start;
  if (len > DIRSIZ) len = DIRSIZ;
  memmove(name, start, len);
  name[len] = 0;
  while (*p == '/') p++;
  *path = p;
  return 1;
}

// Walks path. With want_parent, stops one component early, copies the
// last component into name and returns its directory.
static struct inode *walk(const char *path, int want_parent, char name[DIRSIZ + 1]) {
  struct proc *p = current();
  struct inode *ip = (*path == '/' || !p->cwd) ? inode_get(ROOT_DEV, ROOT_INUM) : inode_dup(p->cwd);
  while (next_component(&path, name)) {
    inode_lock(ip);
    if (ip->type != T_DIR) { inode_unlock_put(ip); return NULL; }
    if (want_parent && *path == 0) { inode_unlock(ip); return ip; }
    struct inode *next = dir_lookup(ip, name, NULL);
    inode_unlock_put(ip);
    if (!next) return NULL;
    ip = next;
  }
  if (want_parent) { inode_put(ip); return NULL; }   // path had no component
  return ip;
}

struct inode *path_lookup(const char *path) {
  char name[DIRSIZ + 1];
  return walk(path, 0, name);
}

struct inode *path_parent(const char *path, char name[DIRSIZ + 1]) {
  return walk(path, 1, name);
}
