// log.c: write-ahead log with group commit (see log.h). Transactions from
// several processes share one commit: fs_tx_begin waits while a commit
// runs or while the log could overflow if all open transactions used
// their MAX_OP_BLOCKS.
#include "lib/types.h"
#include "lib/param.h"
#include "core/lock.h"
#include "core/proc.h"
#include "core/printk.h"
#include "lib/klib.h"
#include "fs/buf.h"
#include "fs/log.h"
#include "fs/blkdev.h"

static struct {
  struct spinlock lock;
  int dev;
  uint32 start;              // header block
  int open_tx;               // transactions between begin and end
  int committing;
  struct log_header lh;      // in-memory copy: blocks logged so far
} wal;

#define BATCH 16      // blocks written together (two buffers each held)

// Copies the logged home blocks into the log area, BATCH at a time, each
// batch written to disk in one go.
static void copy_blocks_to_log(void) {
  struct buf *to[BATCH];
  for (uint32 first = 0; first < wal.lh.count; first += BATCH) {
    int n = wal.lh.count - first < BATCH ? wal.lh.count - first : BATCH;
    for (int i = 0; i < n; i++) {
      struct buf *from = buf_read(wal.dev, wal.lh.home[first + i]);
      to[i] = buf_read(wal.dev, wal.start + 1 + first + i);
      memmove(to[i]->data, from->data, FS_BLOCK_SIZE);
      buf_release(from);
    }
    buf_write_batch(to, n);
    for (int i = 0; i < n; i++) buf_release(to[i]);
  }
}

// Commit: the cached home buffers already hold the committed data (and
// log_write pinned them), so install writes them where they belong.
static void install_from_cache(void) {
  struct buf *home[BATCH];
  for (uint32 first = 0; first < wal.lh.count; first += BATCH) {
    int n = wal.lh.count - first < BATCH ? wal.lh.count - first : BATCH;
    for (int i = 0; i < n; i++) home[i] = buf_read(wal.dev, wal.lh.home[first + i]);
    buf_write_batch(home, n);
    for (int i = 0; i < n; i++) { buf_unpin(home[i]); buf_release(home[i]); }
  }
}

// Recovery after a crash: copies each logged block to its home location.
static void install_from_log(void) {
  for (uint32 i = 0; i < wal.lh.count; i++) {
    struct buf *logged = buf_read(wal.dev, wal.start + 1 + i);
    struct buf *home = buf_read(wal.dev, wal.lh.home[i]);
    memmove(home->data, logged->data, FS_BLOCK_SIZE);
    buf_write(home);
    buf_release(logged);
    buf_release(home);
  }
}

static void read_header(void) {
  struct buf *b = buf_read(wal.dev, wal.start);
  memmove(&wal.lh, b->data, sizeof wal.lh);
  buf_release(b);
}

// Writing the header with count > 0 is the commit point.
static void write_header(void) {
  struct buf *b = buf_read(wal.dev, wal.start);
  memmove(b->data, &wal.lh, sizeof wal.lh);
  buf_write(b);
  buf_release(b);
}

void log_init(int dev, struct fs_super *sb) {
  if (sizeof(struct log_header) > FS_BLOCK_SIZE) panic("log_init: header larger than a block");
  if (sb->log_blocks < LOG_CAP) panic("log_init: disk log smaller than LOG_CAP");
  spin_init(&wal.lock, "log");
  wal.dev = dev;
  wal.start = sb->log_start;
  read_header();
  if (wal.lh.count > 0) kprintf("fs: replaying %d logged blocks\n", wal.lh.count);
  install_from_log();
  blk_flush();
  wal.lh.count = 0;
  write_header();
  blk_flush();
}

// The disk may cache writes (virtio_blk.c), so each step that the next
// one relies on is flushed: the logged blocks before the header that
// names them; the header (the commit point) before any home block
// changes; the home blocks before the header forgets them; and the
// cleared header before the next commit overwrites the log.
_Static_assert(LOG_CAP >= 2 * MAX_OP_BLOCKS, "the log must hold two whole transactions");
_Static_assert(sizeof(struct log_header) <= FS_BLOCK_SIZE, "the log header must fit one block");

static void commit(void) {
  if (wal.lh.count == 0) return;
  copy_blocks_to_log();
  blk_flush();
  write_header();
  blk_flush();
  install_from_cache();
  blk_flush();
  wal.lh.count = 0;
  write_header();
  blk_flush();
}

void fs_tx_begin(void) {
  spin_lock(&wal.lock);
  while (wal.committing || wal.lh.count + (wal.open_tx + 1) * MAX_OP_BLOCKS > LOG_CAP)
    proc_sleep(&wal, &wal.lock);
  wal.open_tx++;
  spin_unlock(&wal.lock);
}

void fs_tx_end(void) {
  spin_lock(&wal.lock);
  if (wal.committing) panic("fs_tx_end: commit already running");
  int do_commit = (--wal.open_tx == 0);
  if (do_commit) wal.committing = 1;
  else proc_wakeup(&wal);            // room may have freed up for waiters
  spin_unlock(&wal.lock);
  if (!do_commit) return;
  commit();                          // no other transaction can be open now
  spin_lock(&wal.lock);
  wal.committing = 0;
  proc_wakeup(&wal);
  spin_unlock(&wal.lock);
}

// Precondition: inside a transaction; caller holds b->lock.
void log_write(struct buf *b) {
  spin_lock(&wal.lock);
  if (wal.open_tx < 1) panic("log_write: outside a transaction");
  uint32 i;
  for (i = 0; i < wal.lh.count; i++)
    if (wal.lh.home[i] == b->blockno) break;   // absorbed: already logged
  if (i == wal.lh.count) {
    if (wal.lh.count >= LOG_CAP) panic("log_write: transaction too big for the log");
    wal.lh.home[wal.lh.count++] = b->blockno;
    buf_pin(b);                      // keep it cached until installed
  }
  spin_unlock(&wal.lock);
}
