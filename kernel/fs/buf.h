// buf.h: the buffer cache (bio.c): one in-memory copy of a disk block.
// buf_read returns the block locked (sleep lock) and valid; the caller
// modifies it, logs it with log_write (log.h) inside a transaction, and
// hands it back with buf_release. The log pins dirty blocks in the cache
// (buf_pin) until they reach their home location.
#ifndef BUF_H
#define BUF_H
#include "lib/types.h"
#include "core/lock.h"
#include "lib/fs_format.h"

struct buf {
  struct sleeplock lock;  // guards data and valid
  int valid;              // data holds the block's contents
  int disk_busy;          // owned by the disk driver until it completes
  uint32 dev, blockno;
  int refs;               // under the cache lock: users + pins
  struct buf *prev, *next;// LRU list, most recently released first
  uint8 data[FS_BLOCK_SIZE];
};

void bcache_init(void);
struct buf *buf_read(uint32 dev, uint32 blockno);
void buf_write(struct buf *b);      // caller holds b->lock
void buf_write_batch(struct buf **bs, int n);   // caller holds every lock
void buf_release(struct buf *b);
#define PREFETCH_MAX 32
// Starts nothing, waits for all: reads up to PREFETCH_MAX uncached
// blocks (0 entries are skipped) into the cache in one batch.
void buf_prefetch(uint32 dev, const uint32 *blocknos, int n);
void buf_pin(struct buf *b);
void buf_unpin(struct buf *b);
#endif
