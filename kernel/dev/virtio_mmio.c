// virtio_mmio.c: probing and starting a device on QEMU virt's virtio-mmio
// transports (modern interface, virtio 1.x): the steps every driver here
// takes before its first request (see virtio.h). The drivers own their
// queues and requests.
#include "lib/types.h"
#include "lib/riscv.h"
#include "lib/memlayout.h"
#include "core/pmem.h"
#include "dev/virtio.h"

static void set_addr(uint64 base, int lo, uint64 addr) {
  *virtio_reg(base, lo) = (uint32)addr;
  *virtio_reg(base, lo + 4) = (uint32)(addr >> 32);
}

uint64 virtio_find(uint32 device_id, int *slot, int *legacy) {
  *legacy = 0;
  for (int i = 0; i < VIRTIO_MMIO_SLOTS; i++) {
    uint64 base = KDEV(VIRTIO_MMIO_BASE) + i * PGSIZE;
    if (*virtio_reg(base, VM_MAGIC) != VIRTIO_MAGIC || *virtio_reg(base, VM_DEVICE_ID) != device_id)
      continue;
    if (*virtio_reg(base, VM_VERSION) != 2) { *legacy = 1; continue; }
    *slot = i;
    return base;
  }
  return 0;
}

const char *virtio_start(uint64 base, uint32 want_lo, uint32 *got) {
  *virtio_reg(base, VM_STATUS) = 0;                    // reset
  *virtio_reg(base, VM_STATUS) = ST_ACK;
  *virtio_reg(base, VM_STATUS) = ST_ACK | ST_DRIVER;
  *virtio_reg(base, VM_DEV_FEATURES_SEL) = 1;
  if (!(*virtio_reg(base, VM_DEV_FEATURES) & FEATURE_HI_VERSION_1)) return "no VERSION_1 feature";
  *virtio_reg(base, VM_DEV_FEATURES_SEL) = 0;
  *got = *virtio_reg(base, VM_DEV_FEATURES) & want_lo;
  *virtio_reg(base, VM_DRV_FEATURES_SEL) = 0;
  *virtio_reg(base, VM_DRV_FEATURES) = *got;
  *virtio_reg(base, VM_DRV_FEATURES_SEL) = 1;
  *virtio_reg(base, VM_DRV_FEATURES) = FEATURE_HI_VERSION_1;
  *virtio_reg(base, VM_STATUS) = ST_ACK | ST_DRIVER | ST_FEATURES_OK;
  if (!(*virtio_reg(base, VM_STATUS) & ST_FEATURES_OK)) return "device refused our features";
  return 0;
}

const char *virtio_queue_setup(uint64 base, int qsize, struct virtq *q) {
  *virtio_reg(base, VM_QUEUE_SEL) = 0;
  if (*virtio_reg(base, VM_QUEUE_READY)) return "queue 0 already in use";
  if (*virtio_reg(base, VM_QUEUE_NUM_MAX) < (uint32)qsize) return "queue too small";
  q->desc = page_alloc();
  q->avail = page_alloc();
  q->used = page_alloc();
  if (!q->desc || !q->avail || !q->used) return "out of memory";
  *virtio_reg(base, VM_QUEUE_NUM) = qsize;
  set_addr(base, VM_DESC_LO, (uint64)q->desc);
  set_addr(base, VM_DRIVER_LO, (uint64)q->avail);
  set_addr(base, VM_DEVICE_LO, (uint64)q->used);
  *virtio_reg(base, VM_QUEUE_READY) = 1;
  return 0;
}

void virtio_ready(uint64 base) {
  *virtio_reg(base, VM_STATUS) = ST_ACK | ST_DRIVER | ST_FEATURES_OK | ST_DRIVER_OK;
}
