// blkdev.h: the block device under the buffer cache (virtio_blk.c).
// blk_rw reads or writes one FS_BLOCK_SIZE block and sleeps until the
// device has finished. Caller holds b->lock; process context only.
#ifndef BLKDEV_H
#define BLKDEV_H
struct buf;
void blk_init(void);
void blk_rw(struct buf *b, int write);
// The same for n buffers at once, all in flight together (each locked).
void blk_rw_batch(struct buf **bufs, int n, int write);
// Returns once every write completed before it is on stable storage.
void blk_flush(void);
#endif
