// virtio_blk.c: virtio block device over virtio-mmio, modern interface
// (virtio 1.x, MMIO version 2; QEMU needs -global
// virtio-mmio.force-legacy=false). Owns the device's one request queue.
// Each request is a chain of three descriptors: header, data, status
// (a flush has no data). blk_rw and blk_rw_batch sleep until the
// interrupt handler has seen every request they queued complete.
//
// Fault injection (tools/crash_test.py): boot argument
// powercut=N lets the first N-1 block writes since boot reach the disk and
// then powers the machine off with status POWERCUT_STATUS, the way a
// power cut between two writes would leave the disk.
//
// Write cache: we accept VIRTIO_BLK_F_FLUSH when the device offers it,
// so the device may keep writes in a cache until blk_flush() (the log
// flushes at each ordering point of a commit). A driver that does not
// accept the feature gets a write-through device: under QEMU, a host
// fdatasync after every write.
#include "lib/types.h"
#include "lib/riscv.h"
#include "lib/memlayout.h"
#include "lib/param.h"
#include "core/lock.h"
#include "core/proc.h"
#include "core/printk.h"
#include "lib/klib.h"
#include "core/pmem.h"
#include "dev/irq.h"
#include "fs/buf.h"
#include "fs/blkdev.h"
#include "lib/bootarg.h"
#include "core/power.h"
#include "dev/virtio.h"

#define FEATURE_LO_FLUSH (1u << 9)       // VIRTIO_BLK_F_FLUSH
#define BLK_T_IN 0
#define BLK_T_OUT 1
#define BLK_T_FLUSH 4
#define POWERCUT_STATUS 3
#define QSIZE 64                  // descriptors; 3 per request

struct blk_req_header { uint32 type, reserved; uint64 sector; };

static struct {
  struct spinlock lock;
  uint64 base;
  struct virtq q;
  uint8 desc_free[QSIZE];
  uint16 used_seen;                       // used->idx already processed
  int has_flush;                          // VIRTIO_BLK_F_FLUSH negotiated
  uint64 powercut_at;                     // boot argument powercut; 0 = never
  uint64 blocks_written;
  // b is the block's buffer, NULL for a flush (done tells its waiter).
  struct { struct buf *b; uint8 status; uint8 done; struct blk_req_header hdr; } req[QSIZE];
} vblk;

static volatile uint32 *reg(int off) { return virtio_reg(vblk.base, off); }

static void blk_interrupt(void *arg);

void blk_init(void) {
  spin_init(&vblk.lock, "virtio_blk");
  vblk.powercut_at = bootarg_uint("powercut", 0);
  int slot, legacy;
  uint32 got;
  const char *err;
  vblk.base = virtio_find(VIRTIO_DEV_BLOCK, &slot, &legacy);
  if (!vblk.base && legacy)
    panic("virtio_blk: legacy device; run QEMU with -global virtio-mmio.force-legacy=false");
  if (!vblk.base) panic("virtio_blk: no disk (is fs.img attached?)");
  if ((err = virtio_start(vblk.base, FEATURE_LO_FLUSH, &got)) != 0) panic("virtio_blk: %s", err);
  vblk.has_flush = got != 0;                           // the only optional feature
  if ((err = virtio_queue_setup(vblk.base, QSIZE, &vblk.q)) != 0) panic("virtio_blk: %s", err);
  for (int i = 0; i < QSIZE; i++) vblk.desc_free[i] = 1;
  virtio_ready(vblk.base);
  irq_register(VIRTIO_MMIO_IRQ0 + slot, blk_interrupt, NULL);
}

// Caller holds vblk.lock. Takes n free descriptors, or returns 0.
static int take_descs(int *idx, int n) {
  int got = 0;
  for (int i = 0; i < QSIZE && got < n; i++)
    if (vblk.desc_free[i]) idx[got++] = i;
  if (got < n) return 0;
  for (int i = 0; i < n; i++) vblk.desc_free[idx[i]] = 0;
  return 1;
}

// Caller holds vblk.lock.
static void free_chain(int head) {
  for (int i = head;;) {
    vblk.desc_free[i] = 1;
    if (!(vblk.q.desc[i].flags & DESC_F_NEXT)) break;
    i = vblk.q.desc[i].next;
  }
  proc_wakeup(&vblk.desc_free);
}

static void fill_desc(int i, void *addr, uint32 len, uint16 flags, int next) {
  vblk.q.desc[i].addr = (uint64)addr;
  vblk.q.desc[i].len = len;
  vblk.q.desc[i].flags = flags;
  vblk.q.desc[i].next = next;
}

// Caller holds vblk.lock and the descriptors d (3, or 2 for a flush,
// b NULL). Queues one request (without notifying the device).
static void queue_request(uint32 type, struct buf *b, int *d) {
  int head = d[0], status = b ? d[2] : d[1];
  vblk.req[head].hdr = (struct blk_req_header){ type, 0,
                                                b ? (uint64)b->blockno * (FS_BLOCK_SIZE / 512) : 0 };
  vblk.req[head].status = 0xff;
  vblk.req[head].b = b;
  vblk.req[head].done = 0;
  fill_desc(head, &vblk.req[head].hdr, sizeof(struct blk_req_header), DESC_F_NEXT, d[1]);
  if (b) {
    fill_desc(d[1], b->data, FS_BLOCK_SIZE, DESC_F_NEXT | (type == BLK_T_IN ? DESC_F_WRITE : 0), d[2]);
    b->disk_busy = 1;
  }
  fill_desc(status, &vblk.req[head].status, 1, DESC_F_WRITE, 0);
  vblk.q.avail->ring[vblk.q.avail->idx % QSIZE] = head;
  __sync_synchronize();                   // ring entry before the index
  vblk.q.avail->idx++;
}

static void notify_device(void) {
  __sync_synchronize();
  *reg(VM_QUEUE_NOTIFY) = 0;
}

// Reads or writes n buffers (each locked by the caller), keeping as many
// requests in flight as the queue allows, and sleeps until all are done.
// One notification and one interrupt can then cover many blocks.
void blk_rw_batch(struct buf **bufs, int n, int write) {
  int d[3];
  int cut = 0;
  spin_lock(&vblk.lock);
  if (write && vblk.powercut_at && vblk.blocks_written + n >= vblk.powercut_at) {
    n = (int)(vblk.powercut_at - 1 - vblk.blocks_written);   // these still land
    cut = 1;
  }
  if (write) vblk.blocks_written += n;
  for (int i = 0; i < n; i++) {
    while (!take_descs(d, 3)) {
      notify_device();                    // what is queued must move first
      proc_sleep(&vblk.desc_free, &vblk.lock);
    }
    queue_request(write ? BLK_T_OUT : BLK_T_IN, bufs[i], d);
  }
  notify_device();
  for (int i = 0; i < n; i++)
    while (bufs[i]->disk_busy)
      proc_sleep(bufs[i], &vblk.lock);
  if (cut) {
    kprintf("virtio_blk: power cut before block write %d (boot argument powercut)\n",
            (int)vblk.powercut_at);
    power_off(POWERCUT_STATUS);
  }
  spin_unlock(&vblk.lock);
}

void blk_rw(struct buf *b, int write) {
  blk_rw_batch(&b, 1, write);
}

// Every write completed before the call is on stable storage when it
// returns (nothing to do for a write-through device).
void blk_flush(void) {
  if (!vblk.has_flush) return;
  int d[2];
  spin_lock(&vblk.lock);
  while (!take_descs(d, 2))
    proc_sleep(&vblk.desc_free, &vblk.lock);
  queue_request(BLK_T_FLUSH, NULL, d);
  notify_device();
  while (!vblk.req[d[0]].done)
    proc_sleep(&vblk.req[d[0]], &vblk.lock);
  spin_unlock(&vblk.lock);
}

static void blk_interrupt(void *arg) {
  (void)arg;
  spin_lock(&vblk.lock);
  *reg(VM_INTR_ACK) = *reg(VM_INTR_STATUS) & 3;
  __sync_synchronize();
  while (vblk.used_seen != vblk.q.used->idx) {
    __sync_synchronize();
    int head = vblk.q.used->ring[vblk.used_seen % QSIZE].id;
    struct buf *b = vblk.req[head].b;
    if (vblk.req[head].status != 0) {
      if (b) panic("virtio_blk: request for block %d failed", b->blockno);
      panic("virtio_blk: flush failed");
    }
    if (b) {
      b->disk_busy = 0;
      proc_wakeup(b);
    } else {
      vblk.req[head].done = 1;
      proc_wakeup(&vblk.req[head]);
    }
    free_chain(head);
    vblk.used_seen++;
  }
  spin_unlock(&vblk.lock);
}
