// log.c: write-ahead log with group commit (see log.h). Transactions from
// several processes share one commit: fs_tx_begin waits while a commit
// runs or while the log could overflow if all open transactions used
// their MAX_OP_BLOCKS.
#include "types.h"
#include "param.h"
#include "lock.h"
#include "proc.h"
#include "printk.h"
#include "klib.h"
#include "buf.h"
#include "log.h"

static struct {
  struct spinlock lock;
  int dev;
  uint32 start;              // header block
  int open_tx;               // transactions between begin and end
  int committing;
  struct log_header lh;      // in-memory copy: blocks logged so far
} wal;

static void copy_blocks_to_log(void) {
  for (uint32 i = 0; i < wal.lh.count; i++) {
    struct buf *to = buf_read(wal.dev, wal.start + 1 + i);
    struct buf *from = buf_read(wal.dev, wal.lh.home[i]);
    memmove(to->data, from->data, FS_BLOCK_SIZE);
    buf_write(to);
    buf_release(from);
    buf_release(to);
  }
}

// Copies logged blocks to their home locations. During normal commits
// the home buffers were pinned by log_write; recovery pins nothing.
static void install_blocks(int recovering) {
  for (uint32 i = 0; i < wal.lh.count; i++) {
    struct buf *logged = buf_read(wal.dev, wal.start + 1 + i);
    struct buf *home = buf_read(wal.dev, wal.lh.home[i]);
    memmove(home->data, logged->data, FS_BLOCK_SIZE);
    buf_write(home);
    if (!recovering) buf_unpin(home);
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
  install_blocks(1);
  wal.lh.count = 0;
  write_header();
}

static void commit(void) {
  if (wal.lh.count == 0) return;
  copy_blocks_to_log();
  write_header();
  install_blocks(0);
  wal.lh.count = 0;
  write_header();
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
