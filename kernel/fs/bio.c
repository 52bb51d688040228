// bio.c: the buffer cache. Keeps NBUF blocks in memory, gives each block
// at most one buffer (so the per-buffer sleep lock serializes access to a
// block), and recycles the least recently used unreferenced buffer.
#include "lib/types.h"
#include "lib/param.h"
#include "core/lock.h"
#include "core/printk.h"
#include "fs/buf.h"
#include "fs/blkdev.h"

static struct {
  struct spinlock lock;
  struct buf bufs[NBUF];
  struct buf lru;        // list head: lru.next is the most recently used
} cache;

static void lru_unlink(struct buf *b) { b->prev->next = b->next; b->next->prev = b->prev; }
static void lru_push_front(struct buf *b) {
  b->next = cache.lru.next;
  b->prev = &cache.lru;
  cache.lru.next->prev = b;
  cache.lru.next = b;
}

void bcache_init(void) {
  spin_init(&cache.lock, "bcache");
  cache.lru.next = cache.lru.prev = &cache.lru;
  for (struct buf *b = cache.bufs; b < &cache.bufs[NBUF]; b++) {
    sleeplock_init(&b->lock, "buf");
    lru_push_front(b);
  }
}

// Caller holds cache.lock. The cached buffer for the block, or NULL.
static struct buf *lookup(uint32 dev, uint32 blockno) {
  for (struct buf *b = cache.lru.next; b != &cache.lru; b = b->next)
    if (b->dev == dev && b->blockno == blockno && (b->refs > 0 || b->valid)) return b;
  return NULL;
}

// Finds or recycles the buffer for (dev, blockno); returns it locked.
static struct buf *buf_get(uint32 dev, uint32 blockno) {
  spin_lock(&cache.lock);
  struct buf *hit = lookup(dev, blockno);
  if (hit) {
    hit->refs++;
    spin_unlock(&cache.lock);
    sleeplock_acquire(&hit->lock);
    return hit;
  }
  for (struct buf *b = cache.lru.prev; b != &cache.lru; b = b->prev) {
    if (b->refs == 0) {
      b->dev = dev;
      b->blockno = blockno;
      b->valid = 0;
      b->refs = 1;
      spin_unlock(&cache.lock);
      sleeplock_acquire(&b->lock);
      return b;
    }
  }
  panic("buf_get: every buffer is in use (NBUF %d too small)", NBUF);
}

// Reads the listed blocks that are not cached yet, all in one batch.
// Only freshly recycled buffers are used: nobody else can hold their
// locks, so this never waits on a lock and cannot deadlock.
void buf_prefetch(uint32 dev, const uint32 *blocknos, int n) {
  struct buf *batch[PREFETCH_MAX];
  int k = 0;
  for (int i = 0; i < n && i < PREFETCH_MAX; i++) {
    spin_lock(&cache.lock);
    struct buf *b = NULL;
    if (blocknos[i] != 0 && !lookup(dev, blocknos[i])) {
      for (b = cache.lru.prev; b != &cache.lru && b->refs != 0; b = b->prev)
        ;
      if (b == &cache.lru) b = NULL;         // everything busy: skip
    }
    if (b) { b->dev = dev; b->blockno = blocknos[i]; b->valid = 0; b->refs = 1; }
    spin_unlock(&cache.lock);
    if (b) { sleeplock_acquire(&b->lock); batch[k++] = b; }
  }
  if (k == 0) return;
  blk_rw_batch(batch, k, 0);
  for (int i = 0; i < k; i++) { batch[i]->valid = 1; buf_release(batch[i]); }
}

struct buf *buf_read(uint32 dev, uint32 blockno) {
  struct buf *b = buf_get(dev, blockno);
  if (!b->valid) {
    blk_rw(b, 0);
    b->valid = 1;
  }
  return b;
}

void buf_write(struct buf *b) {
  if (!sleeplock_holding(&b->lock)) panic("buf_write: buffer not locked");
  blk_rw(b, 1);
}

void buf_write_batch(struct buf **bs, int n) {
  for (int i = 0; i < n; i++)
    if (!sleeplock_holding(&bs[i]->lock)) panic("buf_write_batch: buffer not locked");
  blk_rw_batch(bs, n, 1);
}

void buf_release(struct buf *b) {
  if (!sleeplock_holding(&b->lock)) panic("buf_release: buffer not locked");
  sleeplock_release(&b->lock);
  spin_lock(&cache.lock);
  if (--b->refs == 0) {
    lru_unlink(b);
    lru_push_front(b);
  }
  spin_unlock(&cache.lock);
}

void buf_pin(struct buf *b) {
  spin_lock(&cache.lock);
  b->refs++;
  spin_unlock(&cache.lock);
}

void buf_unpin(struct buf *b) {
  spin_lock(&cache.lock);
  if (b->refs <= 0) panic("buf_unpin: buffer not pinned");
  b->refs--;
  spin_unlock(&cache.lock);
}
