// inode.c: the inode layer. Owns the table of in-memory inodes, the free
// inode and free block allocation, the block map (direct, single- and
// double-indirect) and file content I/O. See fs.h for the rules.
#include "lib/types.h"
#include "lib/param.h"
#include "core/lock.h"
#include "core/proc.h"
#include "core/printk.h"
#include "lib/klib.h"
#include "fs/buf.h"
#include "fs/log.h"
#include "fs/fs.h"
#include "core/vm.h"
#include "fs/file.h"

struct fs_super superblock;
static struct { struct spinlock lock; struct inode slots[NINODE]; } itable;

void inode_table_init(void) {
  spin_init(&itable.lock, "itable");
  for (int i = 0; i < NINODE; i++) sleeplock_init(&itable.slots[i].lock, "inode");
}

void fs_mount(int dev) {
  struct buf *b = buf_read(dev, 1);
  memmove(&superblock, b->data, sizeof superblock);
  buf_release(b);
  if (superblock.magic != FS_MAGIC) panic("fs_mount: bad superblock magic %x", superblock.magic);
  log_init(dev, &superblock);
}

// ---- blocks ----

static void block_zero(uint32 dev, uint32 bno) {
  struct buf *b = buf_read(dev, bno);
  memset(b->data, 0, FS_BLOCK_SIZE);
  log_write(b);
  buf_release(b);
}

// Where the last allocation happened: the next search starts there, so
// growing a big file does not rescan the full start of the bitmap each
// time. Only a hint: a stale value costs time, not correctness.
static uint32 alloc_hint;

// Caller holds b->lock (a bitmap block whose first bit is block base).
// Claims the first free bit at or after bit `from`; returns it or -1.
static int claim_bit(struct buf *b, uint32 base, uint32 from) {
  for (uint32 bit = from; bit < BITS_PER_BLOCK && base + bit < superblock.total_blocks; bit++) {
    if (bit % 8 == 0 && b->data[bit / 8] == 0xff) { bit += 7; continue; }
    uint8 mask = 1 << (bit % 8);
    if (b->data[bit / 8] & mask) continue;
    b->data[bit / 8] |= mask;
    log_write(b);
    return bit;
  }
  return -1;
}

// Returns a zeroed free block marked in use, or 0 if the disk is full.
static uint32 block_alloc(uint32 dev) {
  uint32 nbitmap = (superblock.total_blocks + BITS_PER_BLOCK - 1) / BITS_PER_BLOCK;
  uint32 hint = alloc_hint < superblock.total_blocks ? alloc_hint : 0;
  for (uint32 k = 0; k <= nbitmap; k++) {          // one extra: the hint's block again
    uint32 base = ((hint / BITS_PER_BLOCK + k) % nbitmap) * BITS_PER_BLOCK;
    uint32 from = (k == 0) ? hint % BITS_PER_BLOCK : 0;
    struct buf *b = buf_read(dev, superblock.bitmap_start + base / BITS_PER_BLOCK);
    int bit = claim_bit(b, base, from);
    buf_release(b);
    if (bit >= 0) {
      alloc_hint = base + bit + 1;
      block_zero(dev, base + bit);
      return base + bit;
    }
  }
  kprintf("fs: out of blocks\n");
  return 0;
}

static void block_free(uint32 dev, uint32 bno) {
  struct buf *b = buf_read(dev, superblock.bitmap_start + bno / BITS_PER_BLOCK);
  uint32 bit = bno % BITS_PER_BLOCK;
  if (!(b->data[bit / 8] & (1 << (bit % 8)))) panic("block_free: block %d already free", bno);
  b->data[bit / 8] &= ~(1 << (bit % 8));
  log_write(b);
  buf_release(b);
}

// ---- the inode table ----

struct inode *inode_get(uint32 dev, uint32 inum) {
  struct inode *empty = NULL;
  spin_lock(&itable.lock);
  for (struct inode *ip = itable.slots; ip < &itable.slots[NINODE]; ip++) {
    if (ip->refs > 0 && ip->dev == dev && ip->inum == inum) {
      ip->refs++;
      spin_unlock(&itable.lock);
      return ip;
    }
    if (!empty && ip->refs == 0) empty = ip;
  }
  if (!empty) panic("inode_get: inode table full (NINODE %d)", NINODE);
  empty->dev = dev;
  empty->inum = inum;
  empty->refs = 1;
  empty->valid = 0;
  spin_unlock(&itable.lock);
  return empty;
}

struct inode *inode_dup(struct inode *ip) {
  spin_lock(&itable.lock);
  ip->refs++;
  spin_unlock(&itable.lock);
  return ip;
}

static struct disk_inode *disk_slot(struct buf *b, uint32 inum) {
  return (struct disk_inode *)b->data + inum % INODES_PER_BLOCK;
}

// Inside a transaction. Returns an unlocked, referenced inode or NULL.
struct inode *inode_alloc(uint32 dev, short type) {
  for (uint32 inum = 1; inum < superblock.ninodes; inum++) {
    struct buf *b = buf_read(dev, INODE_BLOCK(inum, superblock));
    struct disk_inode *di = disk_slot(b, inum);
    if (di->type == 0) {
      memset(di, 0, sizeof *di);
      di->type = type;
      log_write(b);
      buf_release(b);
      return inode_get(dev, inum);
    }
    buf_release(b);
  }
  kprintf("fs: out of inodes\n");
  return NULL;
}

// Caller holds ip->lock, inside a transaction.
void inode_update(struct inode *ip) {
  struct buf *b = buf_read(ip->dev, INODE_BLOCK(ip->inum, superblock));
  struct disk_inode *di = disk_slot(b, ip->inum);
  di->type = ip->type; di->major = ip->major; di->minor = ip->minor;
  di->nlink = ip->nlink; di->size = ip->size;
  memmove(di->blocks, ip->blocks, sizeof ip->blocks);
  log_write(b);
  buf_release(b);
}

void inode_lock(struct inode *ip) {
  if (ip == NULL || ip->refs < 1) panic("inode_lock: unreferenced inode");
  sleeplock_acquire(&ip->lock);
  if (ip->valid) return;
  struct buf *b = buf_read(ip->dev, INODE_BLOCK(ip->inum, superblock));
  struct disk_inode *di = disk_slot(b, ip->inum);
  ip->type = di->type; ip->major = di->major; ip->minor = di->minor;
  ip->nlink = di->nlink; ip->size = di->size;
  memmove(ip->blocks, di->blocks, sizeof ip->blocks);
  buf_release(b);
  ip->valid = 1;
  if (ip->type == 0) panic("inode_lock: inode %d is free on disk", ip->inum);
}

void inode_unlock(struct inode *ip) {
  if (ip == NULL || !sleeplock_holding(&ip->lock) || ip->refs < 1)
    panic("inode_unlock: inode not locked by caller");
  sleeplock_release(&ip->lock);
}


// Inside a transaction (it may free the inode).
void inode_put(struct inode *ip) {
  spin_lock(&itable.lock);
  if (ip->refs == 1 && ip->valid && ip->nlink == 0) {
    // Last reference and no names: nobody else can find it, so locking it
    // cannot block (refs == 1 means we hold the only pointer).
    spin_unlock(&itable.lock);
    sleeplock_acquire(&ip->lock);
    inode_truncate(ip);
    ip->type = 0;
    inode_update(ip);
    ip->valid = 0;
    sleeplock_release(&ip->lock);
    spin_lock(&itable.lock);
  }
  ip->refs--;
  spin_unlock(&itable.lock);
}

void inode_unlock_put(struct inode *ip) {
  inode_unlock(ip);
  inode_put(ip);
}

// st_mode's file type for each T_* type (uapi.h).
static const unsigned int mode_of_type[] = { [T_DIR] = S_IFDIR, [T_FILE] = S_IFREG, [T_DEVICE] = S_IFCHR };

void inode_stat(struct inode *ip, struct stat *st) {
  st->dev = ip->dev;
  st->ino = ip->inum;
  st->type = ip->type;
  st->st_mode = ((unsigned)ip->type < sizeof mode_of_type / sizeof mode_of_type[0]
                 ? mode_of_type[ip->type] : 0) | S_STAT_PERMS;
  st->nlink = ip->nlink;
  st->size = ip->size;
}

// ---- the block map ----

// Entry idx of the pointer block *slot (allocating both as needed).
// Returns the block number, or 0 if absent (or the disk is full).
static uint32 map_through(struct inode *ip, uint32 *slot, uint32 idx, int alloc) {
  if (*slot == 0) {
    if (!alloc || (*slot = block_alloc(ip->dev)) == 0) return 0;
  }
  struct buf *b = buf_read(ip->dev, *slot);
  uint32 *ptrs = (uint32 *)b->data;
  if (ptrs[idx] == 0 && alloc && (ptrs[idx] = block_alloc(ip->dev)) != 0)
    log_write(b);
  uint32 bno = ptrs[idx];
  buf_release(b);
  return bno;
}

// Disk block holding file block fbn, or 0. Caller holds ip->lock; with
// alloc, inside a transaction (the caller then calls inode_update).
static uint32 block_of(struct inode *ip, uint32 fbn, int alloc) {
  if (fbn < FS_NDIRECT) {
    if (ip->blocks[fbn] == 0 && alloc) ip->blocks[fbn] = block_alloc(ip->dev);
    return ip->blocks[fbn];
  }
  fbn -= FS_NDIRECT;
  if (fbn < FS_NINDIRECT)
    return map_through(ip, &ip->blocks[FS_SLOT_INDIRECT], fbn, alloc);
  fbn -= FS_NINDIRECT;
  if (fbn >= FS_NINDIRECT * FS_NINDIRECT) panic("block_of: file block out of range");
  uint32 mid = map_through(ip, &ip->blocks[FS_SLOT_DINDIRECT], fbn / FS_NINDIRECT, alloc);
  if (mid == 0) return 0;
  return map_through(ip, &mid, fbn % FS_NINDIRECT, alloc);
}

// Frees every block listed in pointer block bno (recursing depth levels),
// then bno itself.
static void free_pointer_block(uint32 dev, uint32 bno, int depth) {
  struct buf *b = buf_read(dev, bno);
  uint32 *ptrs = (uint32 *)b->data;
  for (uint32 i = 0; i < FS_NINDIRECT; i++) {
    if (ptrs[i] == 0) continue;
    if (depth > 1) free_pointer_block(dev, ptrs[i], depth - 1);
    else block_free(dev, ptrs[i]);
  }
  buf_release(b);
  block_free(dev, bno);
}

// Caller holds ip->lock, inside a transaction.
void inode_truncate(struct inode *ip) {
  for (int i = 0; i < FS_NDIRECT; i++) {
    if (ip->blocks[i]) block_free(ip->dev, ip->blocks[i]);
    ip->blocks[i] = 0;
  }
  if (ip->blocks[FS_SLOT_INDIRECT]) free_pointer_block(ip->dev, ip->blocks[FS_SLOT_INDIRECT], 1);
  if (ip->blocks[FS_SLOT_DINDIRECT]) free_pointer_block(ip->dev, ip->blocks[FS_SLOT_DINDIRECT], 2);
  ip->blocks[FS_SLOT_INDIRECT] = ip->blocks[FS_SLOT_DINDIRECT] = 0;
  ip->size = 0;
  inode_update(ip);
}

// ---- contents ----

// Caller holds ip->lock. Brings the blocks behind [off, off+n) into the
// cache in one disk batch, so a big read waits for the disk once.
static void prefetch_range(struct inode *ip, uint32 off, uint32 n) {
  uint32 bnos[PREFETCH_MAX];
  uint32 first = off / FS_BLOCK_SIZE, last = (off + n - 1) / FS_BLOCK_SIZE;
  int k = 0;
  for (uint32 fbn = first; fbn <= last && k < PREFETCH_MAX; fbn++)
    bnos[k++] = block_of(ip, fbn, 0);
  if (k > 1) buf_prefetch(ip->dev, bnos, k);
}

// Caller holds ip->lock. Returns bytes read, or -1 on a bad destination.
int inode_read(struct inode *ip, int to_user, uint64 dst, uint32 off, uint32 n) {
  if (off > ip->size || off + n < off) return 0;
  if (off + n > ip->size) n = ip->size - off;
  uint32 done = 0;
  while (done < n) {
    if (n - done > FS_BLOCK_SIZE && (done == 0 || off % (PREFETCH_MAX * FS_BLOCK_SIZE) == 0))
      prefetch_range(ip, off, n - done);   // the next PREFETCH_MAX blocks at once
    uint32 bno = block_of(ip, off / FS_BLOCK_SIZE, 0);
    uint32 chunk = FS_BLOCK_SIZE - off % FS_BLOCK_SIZE;
    if (chunk > n - done) chunk = n - done;
    if (bno == 0) {                       // a hole reads as zeros
      static const uint8 zeros[FS_BLOCK_SIZE];
      if (copy_to(to_user, dst, zeros, chunk) < 0) return -1;
    } else {
      struct buf *b = buf_read(ip->dev, bno);
      int bad = copy_to(to_user, dst, b->data + off % FS_BLOCK_SIZE, chunk) < 0;
      buf_release(b);
      if (bad) return -1;
    }
    done += chunk; off += chunk; dst += chunk;
  }
  return n;
}

// Caller holds ip->lock, inside a transaction sized for n bytes (see
// file_write). Returns bytes written (short if the disk fills) or -1.
int inode_write(struct inode *ip, int from_user, uint64 src, uint32 off, uint32 n) {
  if (off > ip->size || off + n < off) return -1;
  if ((uint64)off + n > (uint64)FS_MAX_FILE_BLOCKS * FS_BLOCK_SIZE) return -1;
  uint32 done = 0;
  while (done < n) {
    uint32 bno = block_of(ip, off / FS_BLOCK_SIZE, 1);
    if (bno == 0) break;
    uint32 chunk = FS_BLOCK_SIZE - off % FS_BLOCK_SIZE;
    if (chunk > n - done) chunk = n - done;
    struct buf *b = buf_read(ip->dev, bno);
    int bad = copy_from(from_user, b->data + off % FS_BLOCK_SIZE, src, chunk) < 0;
    if (!bad) log_write(b);
    buf_release(b);
    if (bad) break;
    done += chunk; off += chunk; src += chunk;
  }
  if (off > ip->size) ip->size = off;
  inode_update(ip);                      // block_of may have changed blocks[]
  return done;
}
