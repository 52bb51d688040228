// fs_format.h: the on-disk layout of the file system, shared by the
// kernel (inode.c, dir.c, log.c) and the host tool tools/mkfs.c. Uses only
// C base types so the host compiler can include it as well.
//
// Disk, in FS_BLOCK_SIZE blocks:
//   [0 unused] [1 super] [log: header + FS_LOG_CAP blocks] [inodes]
//   [free bitmap] [data ...]
// An inode maps file blocks through FS_NDIRECT direct pointers, one
// single-indirect block and one double-indirect block, so a file can hold
// FS_MAX_FILE_BLOCKS blocks (about 64 MiB).
#ifndef FS_FORMAT_H
#define FS_FORMAT_H

#define FS_BLOCK_SIZE   1024
#define FS_MAGIC        0x78367264u   // "dr6x"
#define FS_TOTAL_BLOCKS 81920         // 80 MiB image
#define FS_NINODES      2048          // dirent.inum is 16 bits
#define FS_LOG_CAP      250           // blocks the log holds (all open transactions)
#define ROOT_INUM       1
#define ROOT_DEV        1

#define FS_NDIRECT   11
#define FS_NINDIRECT (FS_BLOCK_SIZE / sizeof(unsigned int))
#define FS_MAX_FILE_BLOCKS (FS_NDIRECT + FS_NINDIRECT + FS_NINDIRECT * FS_NINDIRECT)
#define FS_SLOT_INDIRECT FS_NDIRECT         // index in disk_inode.blocks
#define FS_SLOT_DINDIRECT (FS_NDIRECT + 1)

struct fs_super {
  unsigned int magic;
  unsigned int total_blocks;
  unsigned int ninodes;
  unsigned int log_start;     // header block; logged blocks follow it
  unsigned int log_blocks;    // FS_LOG_CAP
  unsigned int inode_start;
  unsigned int bitmap_start;
  unsigned int data_start;
};

struct disk_inode {
  short type;                 // 0 = free, else T_DIR / T_FILE / T_DEVICE
  short major, minor;         // T_DEVICE only
  short nlink;                // directory entries naming this inode
  unsigned int size;          // bytes
  unsigned int blocks[FS_NDIRECT + 2];
};

#define INODES_PER_BLOCK (FS_BLOCK_SIZE / sizeof(struct disk_inode))
#define INODE_BLOCK(inum, sb) ((inum) / INODES_PER_BLOCK + (sb).inode_start)
#define BITS_PER_BLOCK (FS_BLOCK_SIZE * 8)

// The log header: which home blocks the logged copies belong to.
struct log_header {
  unsigned int count;         // 0 = nothing committed
  unsigned int home[FS_LOG_CAP];
};

#endif
