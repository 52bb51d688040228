// virtio_rng.c: the virtio entropy device over virtio-mmio (virtio 1.x,
// device ID 4; QEMU: -device virtio-rng-device,bus=virtio-mmio-bus.7).
// Owns the device's one request queue. A request is one device-writable
// buffer; the device fills some or all of it with random bytes and says
// how many in the used ring. One request is in flight at a time: at boot
// rng_read_polled() waits for it by polling (interrupts are still off);
// later rng_refill() queues one and the interrupt hands the bytes to the
// kernel generator (random.c). Without the device everything here is a
// no-op and random.c falls back to timing jitter.
#include "lib/types.h"
#include "lib/riscv.h"
#include "lib/memlayout.h"
#include "core/lock.h"
#include "core/printk.h"
#include "lib/klib.h"
#include "dev/irq.h"
#include "core/timer.h"
#include "dev/virtio.h"
#include "dev/virtio_rng.h"
#include "dev/random.h"

#define RNG_CHUNK 64             // bytes asked for per request: two ChaCha20 keys
#define RNG_QSIZE 2              // a power of two; one request uses one descriptor

static struct {
  struct spinlock lock;
  uint64 base;                   // 0: no device
  struct virtq q;
  uint16 used_seen;              // used->idx already processed
  int busy;                      // a request is with the device
  uint8 buf[RNG_CHUNK];
} vrng;

static void rng_interrupt(void *arg);

int rng_init(void) {
  int slot, legacy;
  uint32 got;
  const char *err;
  spin_init(&vrng.lock, "virtio_rng");
  uint64 base = virtio_find(VIRTIO_DEV_ENTROPY, &slot, &legacy);
  if (!base) return -1;
  if ((err = virtio_start(base, 0, &got)) != 0 || (err = virtio_queue_setup(base, RNG_QSIZE, &vrng.q)) != 0) {
    kprintf("virtio_rng: %s\n", err);
    return -1;
  }
  virtio_ready(base);
  vrng.base = base;
  irq_register(VIRTIO_MMIO_IRQ0 + slot, rng_interrupt, NULL);
  return 0;
}

// Caller holds vrng.lock and no request is pending: hands buf to the device.
static void submit(void) {
  vrng.q.desc[0] = (struct vq_desc){ (uint64)vrng.buf, RNG_CHUNK, DESC_F_WRITE, 0 };
  vrng.q.avail->ring[vrng.q.avail->idx % RNG_QSIZE] = 0;
  __sync_synchronize();                  // ring entry before the index
  vrng.q.avail->idx++;
  __sync_synchronize();
  vrng.busy = 1;
  *virtio_reg(vrng.base, VM_QUEUE_NOTIFY) = 0;
}

// Caller holds vrng.lock. Bytes of the finished request copied to out
// (at most RNG_CHUNK), or -1 if the device has not answered yet.
static int take_done(uint8 *out) {
  if (*(volatile uint16 *)&vrng.q.used->idx == vrng.used_seen) return -1;
  __sync_synchronize();
  uint32 len = vrng.q.used->ring[vrng.used_seen % RNG_QSIZE].len;
  vrng.used_seen++;
  vrng.busy = 0;
  if (len > RNG_CHUNK) len = RNG_CHUNK;
  memcpy(out, vrng.buf, len);
  memset(vrng.buf, 0, sizeof vrng.buf);   // no copy of key material stays behind
  return (int)len;
}

int rng_read_polled(void *buf, int n, uint64 timeout_ns) {
  uint8 chunk[RNG_CHUNK];
  int got = 0;
  if (!vrng.base) return 0;
  uint64 end = clock_ns() + timeout_ns;
  spin_lock(&vrng.lock);
  while (got < n && clock_ns() < end) {
    if (!vrng.busy) submit();
    int k = take_done(chunk);
    if (k < 0) continue;
    if (k > n - got) k = n - got;
    memcpy((uint8 *)buf + got, chunk, k);
    got += k;
  }
  spin_unlock(&vrng.lock);
  memset(chunk, 0, sizeof chunk);
  return got;
}

void rng_refill(void) {
  if (!vrng.base) return;
  spin_lock(&vrng.lock);
  if (!vrng.busy) submit();
  spin_unlock(&vrng.lock);
}

static void rng_interrupt(void *arg) {
  (void)arg;
  uint8 chunk[RNG_CHUNK];
  spin_lock(&vrng.lock);
  *virtio_reg(vrng.base, VM_INTR_ACK) = *virtio_reg(vrng.base, VM_INTR_STATUS) & 3;
  __sync_synchronize();
  int k = take_done(chunk);
  spin_unlock(&vrng.lock);
  if (k > 0) random_add_entropy(chunk, k);   // after the unlock: random.c calls rng_refill
  memset(chunk, 0, sizeof chunk);
}
