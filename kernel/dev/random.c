// random.c: the kernel's random generator (see random.h) and getrandom().
//
// Output is the ChaCha20 block function (RFC 8439 2.3) under a 256-bit
// key that no one outside this file sees. Each output request uses a new
// nonce (the request count) and, when done, replaces the key with one
// more block of its own output ("fast key erasure"): what a later memory
// dump reveals cannot give back bytes already handed out.
//
// Entropy: at boot, 32 bytes from virtio-rng (virtio_rng.c) and timing
// jitter of the time CSR; afterwards the time CSR at every device
// interrupt (plic.c), gathered per hart without a lock, and a fresh
// virtio-rng chunk every RESEED_NS; a request folds both into an 8-word
// pool and the pool into the key (reseed) once it holds a device chunk or
// RESEED_EVENTS interrupt samples.
// Without the device the boot seed is jitter and time alone (a warning
// says so). A boot self-test checks the block function against RFC 8439's
// test vector (2.3.2) and panics on a mismatch.
#include "lib/types.h"
#include "lib/riscv.h"
#include "core/lock.h"
#include "core/proc.h"
#include "core/printk.h"
#include "lib/param.h"
#include "lib/klib.h"
#include "core/timer.h"
#include "core/vm.h"
#include "dev/random.h"
#include "dev/virtio_rng.h"

#define SEED_BYTES 32                      // one ChaCha20 key
#define RNG_BOOT_TIMEOUT_NS 2000000000ULL  // virtio-rng's first answer, polled
#define BOOT_JITTER_SAMPLES 256
#define RESEED_EVENTS 64                   // interrupt samples that trigger a reseed
#define RESEED_NS 5000000000ULL            // fresh device bytes this often
#define RESEED_TAG 0x72657365              // nonce word of a reseed block ("rese")

static struct {
  struct spinlock lock;
  uint32 key[8];
  uint32 pool[8];                          // entropy not yet in the key
  int pool_pos;
  uint32 jitter_seen;                      // harts' jitter samples at the last reseed
  int pool_fresh;                          // device bytes since the last reseed
  uint64 reseeds;
  uint64 requests;                         // output requests: the nonce
  uint64 refill_at;                        // clock_ns of the next device request
} rnd = { .lock = { 0, "random", 0 } };      // ready for interrupts before random_init

// Interrupt timing, one accumulator per hart: the handler touches only its
// own hart's (interrupts are off there), so no lock is taken on the
// interrupt path; a request reads them all under rnd.lock.
static struct {
  volatile uint32 acc, events;
} jitter[NCPU];

static uint32 rotl(uint32 x, int n) { return (x << n) | (x >> (32 - n)); }

// The quarter rounds of one double round: four columns, four diagonals.
static const uint8 qr_index[8][4] = {
  { 0, 4, 8, 12 }, { 1, 5, 9, 13 }, { 2, 6, 10, 14 }, { 3, 7, 11, 15 },
  { 0, 5, 10, 15 }, { 1, 6, 11, 12 }, { 2, 7, 8, 13 }, { 3, 4, 9, 14 },
};

static void quarter_round(uint32 *x, const uint8 *i) {
  x[i[0]] += x[i[1]]; x[i[3]] = rotl(x[i[3]] ^ x[i[0]], 16);
  x[i[2]] += x[i[3]]; x[i[1]] = rotl(x[i[1]] ^ x[i[2]], 12);
  x[i[0]] += x[i[1]]; x[i[3]] = rotl(x[i[3]] ^ x[i[0]], 8);
  x[i[2]] += x[i[3]]; x[i[1]] = rotl(x[i[1]] ^ x[i[2]], 7);
}

// One ChaCha20 block (RFC 8439 2.3): 16 words; out serialized is the
// words little-endian, which is memory order on RISC-V.
static void chacha20_block(const uint32 key[8], uint32 counter, const uint32 nonce[3], uint32 out[16]) {
  uint32 in[16] = { 0x61707865, 0x3320646e, 0x79622d32, 0x6b206574 };   // "expand 32-byte k"
  for (int i = 0; i < 8; i++) in[4 + i] = key[i];
  in[12] = counter;
  for (int i = 0; i < 3; i++) in[13 + i] = nonce[i];
  for (int i = 0; i < 16; i++) out[i] = in[i];
  for (int r = 0; r < 10; r++)
    for (int q = 0; q < 8; q++) quarter_round(out, qr_index[q]);
  for (int i = 0; i < 16; i++) out[i] += in[i];
}

// RFC 8439 2.3.2: key 00 01 .. 1f, nonce 00 00 00 09 00 00 00 4a 00 00
// 00 00, block count 1, and the state it must end in.
static int chacha20_selftest(void) {
  static const uint32 want[16] = {
    0xe4e7f110, 0x15593bd1, 0x1fdd0f50, 0xc47120a3, 0xc7f4d1c7, 0x0368c033, 0x9aaa2204, 0x4e6cd4c3,
    0x466482d2, 0x09aa9f07, 0x05d7c214, 0xa2028bd9, 0xd19c12b5, 0xb94e16de, 0xe883d0cb, 0x4e3c50a2,
  };
  uint32 key[8], out[16];
  const uint32 nonce[3] = { 0x09000000, 0x4a000000, 0 };
  for (int i = 0; i < 8; i++)
    key[i] = (uint32)(4 * i) | (uint32)(4 * i + 1) << 8 | (uint32)(4 * i + 2) << 16 | (uint32)(4 * i + 3) << 24;
  chacha20_block(key, 1, nonce, out);
  return memcmp(out, want, sizeof want) == 0;
}

// Caller holds rnd.lock. Folds one word into the pool.
static void pool_mix(uint32 w) {
  uint32 *p = &rnd.pool[rnd.pool_pos];
  *p = rotl(*p ^ w, 7) + rnd.pool[(rnd.pool_pos + 3) & 7];
  rnd.pool_pos = (rnd.pool_pos + 1) & 7;
}

// Caller holds rnd.lock. The pool goes into the key, and the key through
// the block function, so the new key depends on every bit of both.
static void reseed(void) {
  uint32 out[16];
  const uint32 nonce[3] = { RESEED_TAG, (uint32)rnd.reseeds, (uint32)(rnd.reseeds >> 32) };
  for (int i = 0; i < 8; i++) rnd.key[i] ^= rnd.pool[i];
  chacha20_block(rnd.key, 0, nonce, out);
  memcpy(rnd.key, out, sizeof rnd.key);
  memset(out, 0, sizeof out);
  memset(rnd.pool, 0, sizeof rnd.pool);
  rnd.pool_fresh = 0;
  rnd.reseeds++;
}

void random_add_entropy(const void *buf, int n) {
  const uint8 *b = buf;
  spin_lock(&rnd.lock);
  for (int i = 0; i + 4 <= n; i += 4)
    pool_mix((uint32)b[i] | (uint32)b[i + 1] << 8 | (uint32)b[i + 2] << 16 | (uint32)b[i + 3] << 24);
  rnd.pool_fresh = 1;
  spin_unlock(&rnd.lock);
}

void random_add_jitter(void) {
  uint64 t = read_time();
  int h = hart_id();
  jitter[h].acc = rotl(jitter[h].acc, 5) ^ (uint32)t ^ (uint32)(t >> 32);
  jitter[h].events++;
}

// Caller holds rnd.lock. Folds every hart's jitter into the pool; returns
// how many samples arrived since the last reseed.
static uint32 gather_jitter(void) {
  uint32 events = 0;
  for (int h = 0; h < NCPU; h++) {
    pool_mix(jitter[h].acc);
    events += jitter[h].events;
  }
  return events - rnd.jitter_seen;
}

void random_bytes(void *buf, int n) {
  uint32 block[16];
  uint8 *dst = buf;
  int refill = 0;
  spin_lock(&rnd.lock);
  uint32 fresh_events = gather_jitter();
  if (rnd.pool_fresh || fresh_events >= RESEED_EVENTS) {
    rnd.jitter_seen += fresh_events;
    reseed();
  }
  const uint32 nonce[3] = { (uint32)rnd.requests, (uint32)(rnd.requests >> 32), 0 };
  rnd.requests++;
  for (uint32 ctr = 1; n > 0; ctr++) {
    chacha20_block(rnd.key, ctr, nonce, block);
    int k = n < (int)sizeof block ? n : (int)sizeof block;
    memcpy(dst, block, k);
    dst += k;
    n -= k;
  }
  chacha20_block(rnd.key, 0, nonce, block);           // fast key erasure
  memcpy(rnd.key, block, sizeof rnd.key);
  memset(block, 0, sizeof block);
  uint64 now = clock_ns();
  if (now >= rnd.refill_at) { rnd.refill_at = now + RESEED_NS; refill = 1; }
  spin_unlock(&rnd.lock);
  if (refill) rng_refill();                           // its interrupt feeds the pool
}

uint32 random_u32(void) {
  uint32 v;
  random_bytes(&v, sizeof v);
  return v;
}

// Boot: how long the time CSR takes to move on, in loop turns, folded
// with the time itself (host scheduling makes both vary).
static void boot_jitter(void) {
  spin_lock(&rnd.lock);
  for (int i = 0; i < BOOT_JITTER_SAMPLES; i++) {
    uint64 t0 = read_time(), t;
    uint32 spins = 0;
    while ((t = read_time()) == t0) spins++;
    pool_mix((uint32)t ^ (uint32)(t >> 32) ^ spins << 16);
  }
  spin_unlock(&rnd.lock);
}

void random_init(void) {
  uint8 seed[SEED_BYTES];
  if (!chacha20_selftest()) panic("random: ChaCha20 self-test failed (RFC 8439 2.3.2)");
  boot_jitter();
  int got = rng_init() == 0 ? rng_read_polled(seed, SEED_BYTES, RNG_BOOT_TIMEOUT_NS) : 0;
  if (got > 0) random_add_entropy(seed, got);
  memset(seed, 0, sizeof seed);
  spin_lock(&rnd.lock);
  reseed();
  rnd.refill_at = clock_ns() + RESEED_NS;
  spin_unlock(&rnd.lock);
  if (got == SEED_BYTES)
    kprintf("random: ChaCha20 self-test ok; seeded from virtio-rng and timer jitter\n");
  else
    kprintf("random: warning: %s; ChaCha20 seeded from timer jitter and the clock only\n",
            got ? "short read from virtio-rng" : "no virtio-rng device");
}
