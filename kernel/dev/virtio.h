// virtio.h: what the virtio-mmio drivers (virtio_blk.c, virtio_rng.c)
// share: the MMIO register map and status bits of a modern (version 2)
// virtio-mmio transport, the split-virtqueue layout (virtio 1.x spec,
// 2.7 and 4.2.2), and the probe/start helpers of virtio_mmio.c.
#ifndef VIRTIO_H
#define VIRTIO_H

// virtio-mmio register offsets (virtio spec 4.2.2)
enum {
  VM_MAGIC = 0x000, VM_VERSION = 0x004, VM_DEVICE_ID = 0x008,
  VM_DEV_FEATURES = 0x010, VM_DEV_FEATURES_SEL = 0x014,
  VM_DRV_FEATURES = 0x020, VM_DRV_FEATURES_SEL = 0x024,
  VM_QUEUE_SEL = 0x030, VM_QUEUE_NUM_MAX = 0x034, VM_QUEUE_NUM = 0x038,
  VM_QUEUE_READY = 0x044, VM_QUEUE_NOTIFY = 0x050,
  VM_INTR_STATUS = 0x060, VM_INTR_ACK = 0x064, VM_STATUS = 0x070,
  VM_DESC_LO = 0x080, VM_DESC_HI = 0x084, VM_DRIVER_LO = 0x090, VM_DRIVER_HI = 0x094,
  VM_DEVICE_LO = 0x0a0, VM_DEVICE_HI = 0x0a4,
};
#define VIRTIO_MAGIC 0x74726976      // "virt"
#define VIRTIO_DEV_BLOCK 2
#define VIRTIO_DEV_ENTROPY 4
#define ST_ACK 1
#define ST_DRIVER 2
#define ST_DRIVER_OK 4
#define ST_FEATURES_OK 8
#define FEATURE_HI_VERSION_1 (1u << 0)   // feature bit 32
#define DESC_F_NEXT 1
#define DESC_F_WRITE 2                   // device writes this buffer

// Split virtqueue rings; each lives in a page of its own, so the ring
// arrays are as long as the queue size the driver chose.
struct vq_desc { uint64 addr; uint32 len; uint16 flags; uint16 next; };
struct vq_avail { uint16 flags, idx, ring[]; };
struct vq_used_elem { uint32 id, len; };
struct vq_used { uint16 flags, idx; struct vq_used_elem ring[]; };

struct virtq {
  struct vq_desc *desc;
  struct vq_avail *avail;
  struct vq_used *used;
};

static inline volatile uint32 *virtio_reg(uint64 base, int off) {
  return (volatile uint32 *)(base + off);
}

// The register base of the first modern device of type device_id (its
// slot in *slot), or 0 if there is none. A legacy (version 1) device of
// that type is reported as *legacy = 1 and skipped.
uint64 virtio_find(uint32 device_id, int *slot, int *legacy);
// Reset, ACK, DRIVER, then features: offers VERSION_1 plus the wanted
// low feature bits the device has; *got = those accepted. NULL on
// success (status FEATURES_OK), else why the device was refused.
const char *virtio_start(uint64 base, uint32 want_lo, uint32 *got);
// Queue 0 with qsize entries in three fresh pages; NULL or why not.
const char *virtio_queue_setup(uint64 base, int qsize, struct virtq *q);
// Sets DRIVER_OK: the device may now use its queues.
void virtio_ready(uint64 base);
#endif
