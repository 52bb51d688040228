// mkfs.c: host tool that builds an empty file system image (layout in
// kernel/lib/fs_format.h) and installs the given user programs in the root
// directory, dropping a leading '_' and any directory prefix from their
// names ("user/_sh" becomes "/sh").
//
// usage: mkfs fs.img file...
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/fs_format.h"
#include "lib/uapi.h"          // no POSIX headers: they clash with uapi's names

static FILE *img;
static struct fs_super sb;
static unsigned int next_free_block;   // data blocks are handed out in order
static unsigned int next_inum = ROOT_INUM;

static void die(const char *what) { perror(what); exit(1); }

static void block_io(unsigned int bno, void *buf, int write) {
  if (fseek(img, (long)bno * FS_BLOCK_SIZE, SEEK_SET) != 0) die("seek");
  size_t n = write ? fwrite(buf, FS_BLOCK_SIZE, 1, img) : fread(buf, FS_BLOCK_SIZE, 1, img);
  if (n != 1) die("block i/o");
}

static void inode_io(unsigned int inum, struct disk_inode *di, int write) {
  unsigned char blk[FS_BLOCK_SIZE];
  block_io(INODE_BLOCK(inum, sb), blk, 0);
  struct disk_inode *slot = (struct disk_inode *)blk + inum % INODES_PER_BLOCK;
  if (write) { *slot = *di; block_io(INODE_BLOCK(inum, sb), blk, 1); }
  else *di = *slot;
}

static unsigned int new_inode(short type) {
  struct disk_inode di;
  memset(&di, 0, sizeof di);
  di.type = type;
  di.nlink = 1;
  inode_io(next_inum, &di, 1);
  return next_inum++;
}

static unsigned int take_block(void) {
  if (next_free_block >= sb.total_blocks) { fprintf(stderr, "mkfs: image full\n"); exit(1); }
  return next_free_block++;
}

// Pointer entry idx of block *slot (both allocated on demand).
static unsigned int through(unsigned int *slot, unsigned int idx) {
  unsigned int ptrs[FS_NINDIRECT];
  if (*slot == 0) { *slot = take_block(); memset(ptrs, 0, sizeof ptrs); block_io(*slot, ptrs, 1); }
  block_io(*slot, ptrs, 0);
  if (ptrs[idx] == 0) { ptrs[idx] = take_block(); block_io(*slot, ptrs, 1); }
  return ptrs[idx];
}

static unsigned int file_block(struct disk_inode *di, unsigned int fbn) {
  if (fbn < FS_NDIRECT) {
    if (di->blocks[fbn] == 0) di->blocks[fbn] = take_block();
    return di->blocks[fbn];
  }
  fbn -= FS_NDIRECT;
  if (fbn < FS_NINDIRECT) return through(&di->blocks[FS_SLOT_INDIRECT], fbn);
  fbn -= FS_NINDIRECT;
  unsigned int mid = through(&di->blocks[FS_SLOT_DINDIRECT], fbn / FS_NINDIRECT);
  return through(&mid, fbn % FS_NINDIRECT);
}

static void append(unsigned int inum, const void *data, unsigned int len) {
  struct disk_inode di;
  unsigned char blk[FS_BLOCK_SIZE];
  const unsigned char *p = data;
  inode_io(inum, &di, 0);
  while (len > 0) {
    unsigned int off = di.size % FS_BLOCK_SIZE, n = FS_BLOCK_SIZE - off;
    if (n > len) n = len;
    unsigned int bno = file_block(&di, di.size / FS_BLOCK_SIZE);
    block_io(bno, blk, 0);
    memcpy(blk + off, p, n);
    block_io(bno, blk, 1);
    di.size += n; p += n; len -= n;
  }
  inode_io(inum, &di, 1);
}

static void add_entry(unsigned int dir, const char *name, unsigned int inum) {
  struct dirent de;
  memset(&de, 0, sizeof de);
  de.inum = (unsigned short)inum;
  memcpy(de.name, name, strlen(name) < DIRSIZ ? strlen(name) : DIRSIZ);
  append(dir, &de, sizeof de);
}

static void install(unsigned int root, const char *path) {
  const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  if (*name == '_') name++;
  FILE *f = fopen(path, "rb");
  if (!f) die(path);
  unsigned int inum = new_inode(T_FILE);
  add_entry(root, name, inum);
  char buf[8192];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) append(inum, buf, n);
  fclose(f);
}

static void layout(void) {
  sb.magic = FS_MAGIC;
  sb.total_blocks = FS_TOTAL_BLOCKS;
  sb.ninodes = FS_NINODES;
  sb.log_start = 2;
  sb.log_blocks = FS_LOG_CAP;
  sb.inode_start = sb.log_start + 1 + FS_LOG_CAP;
  sb.bitmap_start = sb.inode_start + FS_NINODES / INODES_PER_BLOCK + 1;
  sb.data_start = sb.bitmap_start + FS_TOTAL_BLOCKS / BITS_PER_BLOCK + 1;
  next_free_block = sb.data_start;
}

// Marks blocks [0, next_free_block) as used in the bitmap.
static void write_bitmap(void) {
  unsigned char blk[FS_BLOCK_SIZE];
  for (unsigned int base = 0; base < sb.total_blocks; base += BITS_PER_BLOCK) {
    memset(blk, 0, sizeof blk);
    for (unsigned int b = base; b < next_free_block && b < base + BITS_PER_BLOCK; b++)
      blk[(b - base) / 8] |= 1 << ((b - base) % 8);
    block_io(sb.bitmap_start + base / BITS_PER_BLOCK, blk, 1);
  }
}

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: mkfs fs.img files...\n"); return 1; }
  if (sizeof(struct disk_inode) != 64 || FS_BLOCK_SIZE % sizeof(struct dirent) != 0) {
    fprintf(stderr, "mkfs: unexpected struct sizes\n");
    return 1;
  }
  img = fopen(argv[1], "w+b");
  if (!img) die(argv[1]);
  unsigned char blk[FS_BLOCK_SIZE];
  memset(blk, 0, sizeof blk);
  block_io(FS_TOTAL_BLOCKS - 1, blk, 1);   // sets the image size (sparse)
  layout();
  memcpy(blk, &sb, sizeof sb);
  block_io(1, blk, 1);
  next_inum = ROOT_INUM;
  unsigned int root = new_inode(T_DIR);
  add_entry(root, ".", root);
  add_entry(root, "..", root);
  struct disk_inode di;
  inode_io(root, &di, 0);
  di.nlink = 2;                          // "." plus ".." of itself
  inode_io(root, &di, 1);
  for (int i = 2; i < argc; i++) install(root, argv[i]);
  write_bitmap();
  printf("mkfs: %s: %u blocks (%u used), %u inodes, %d files\n", argv[1],
         sb.total_blocks, next_free_block, sb.ninodes, argc - 2);
  if (fclose(img) != 0) die(argv[1]);
  return 0;
}
