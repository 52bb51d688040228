// random.h: the kernel's random generator (random.c): ChaCha20 (RFC 8439)
// keyed from the virtio-rng entropy device at boot and re-keyed from an
// entropy pool fed by device-interrupt timing and fresh virtio-rng bytes.
// Everything that must not be guessed draws from it: MR keys and QPNs
// (rdma_random), UDP ephemeral ports, getrandom() for user space.
#ifndef RANDOM_H
#define RANDOM_H
#include "lib/uapi.h"             // SYS_getrandom and GETRANDOM_MAX

void   random_init(void);                    // boot, after the PLIC and the timer
void   random_bytes(void *buf, int n);       // any context; n >= 0
uint32 random_u32(void);
// Entropy in: bytes from a device (virtio-rng), any context.
void   random_add_entropy(const void *buf, int n);
// Entropy in: the time CSR at a device interrupt (plic.c), interrupt context;
// takes no lock (a per-hart accumulator).
void   random_add_jitter(void);
#endif
