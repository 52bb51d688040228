// virtio_rng.h: the virtio entropy device (virtio_rng.c), device ID 4.
#ifndef VIRTIO_RNG_H
#define VIRTIO_RNG_H
// Finds and starts the device; 0, or -1 if the machine has none.
int  rng_init(void);
// Boot only (interrupts off): up to n bytes from the device into buf,
// polling for at most timeout_ns; returns the bytes got (0 if none).
int  rng_read_polled(void *buf, int n, uint64 timeout_ns);
// Asks the device for a fresh chunk if none is pending; the interrupt
// hands it to random_add_entropy(). No-op without a device.
void rng_refill(void);
#endif
