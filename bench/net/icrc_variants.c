/*
 * icrc_variants.c: ns per KiB of CRC-32 (the ICRC's polynomial) variants
 * under QEMU's RISC-V TCG, run by bench/net/icrc_variants.py under
 * qemu-riscv64 (user mode). A static freestanding RV64 program: its own
 * _start, Linux system calls by ecall (write, clock_gettime, exit).
 *
 * Variants: a bytewise table; slicing-by-4 on 32-bit loads; slicing-by-8
 * on byte loads and on one 64-bit load; the transport core's own
 * rct_crc32_update (kernel/transport/icrc.c, linked in); slicing-by-16 on
 * two 64-bit loads; and on receive, CRC then copy against one fused pass
 * that stores each 64-bit word it loads for the CRC. Each is first checked
 * against a bitwise reference at every alignment and many lengths; a
 * variant that disagrees prints FAIL and the program exits 1. Prints one
 * line per variant, "variant NS.N ns/KiB NAME", the median of 9 rounds.
 */
#include <stdint.h>
#include <stddef.h>
#include "wire.h"

#define KIB 1024
#define BUF (4 * KIB)                 /* one MTU-4096 payload per call */

/* ---- the C runtime this program needs ---- */

static long sys3(long n, long a, long b, long c)
{
  register long a0 __asm__("a0") = a, a1 __asm__("a1") = b, a2 __asm__("a2") = c;
  register long a7 __asm__("a7") = n;
  __asm__ volatile("ecall" : "+r"(a0) : "r"(a1), "r"(a2), "r"(a7) : "memory");
  return a0;
}

void *memcpy(void *d, const void *s, size_t n)
{
  uint8_t *dp = d;
  const uint8_t *sp = s;
  while (n--) *dp++ = *sp++;
  return d;
}

void *memset(void *d, int c, size_t n)
{
  uint8_t *dp = d;
  while (n--) *dp++ = (uint8_t)c;
  return d;
}

static char out[4096];
static int outlen;

static void put(const char *s)
{
  while (*s && outlen < (int)sizeof out) out[outlen++] = *s++;
}

static void put_u(uint64_t v)
{
  char d[24];
  int k = 0;
  do { d[k++] = (char)('0' + v % 10); v /= 10; } while (v);
  while (k) { char c[2] = { d[--k], 0 }; put(c); }
}

static uint64_t now_ns(void)
{
  struct { long sec, nsec; } ts;
  sys3(113, 1, (long)&ts, 0);                    /* clock_gettime(CLOCK_MONOTONIC) */
  return (uint64_t)ts.sec * 1000000000u + (uint64_t)ts.nsec;
}

/* ---- the variants ---- */

typedef uint64_t __attribute__((may_alias)) u64a;
typedef uint32_t __attribute__((may_alias)) u32a;
static uint32_t tab[16][256];

static void tables(void)
{
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1)));
    tab[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; i++)
    for (int t = 1; t < 16; t++) tab[t][i] = (tab[t - 1][i] >> 8) ^ tab[0][tab[t - 1][i] & 0xff];
}

static uint32_t crc_bitwise(uint32_t c, const uint8_t *p, size_t n)
{
  while (n--) {
    c ^= *p++;
    for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1)));
  }
  return c;
}

static uint32_t crc_bytewise(uint32_t c, const uint8_t *p, size_t n)
{
  while (n--) c = tab[0][(c ^ *p++) & 0xff] ^ (c >> 8);
  return c;
}

static inline __attribute__((always_inline)) uint32_t fold4(uint32_t a)
{
  return tab[3][a & 0xff] ^ tab[2][(a >> 8) & 0xff] ^ tab[1][(a >> 16) & 0xff] ^ tab[0][a >> 24];
}

static inline __attribute__((always_inline)) uint32_t fold8(uint32_t a, uint32_t b)
{
  return tab[7][a & 0xff] ^ tab[6][(a >> 8) & 0xff] ^ tab[5][(a >> 16) & 0xff] ^ tab[4][a >> 24] ^
         fold4(b);
}

static uint32_t crc_slice4_w32(uint32_t c, const uint8_t *p, size_t n)
{
  while (n && ((uintptr_t)p & 3)) { c = tab[0][(c ^ *p++) & 0xff] ^ (c >> 8); n--; }
  for (; n >= 4; p += 4, n -= 4) c = fold4(c ^ *(const u32a *)p);
  return crc_bytewise(c, p, n);
}

static uint32_t crc_slice8_bytes(uint32_t c, const uint8_t *p, size_t n)
{
  for (; n >= 8; p += 8, n -= 8) {
    uint32_t a = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
    uint32_t b = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
    c = fold8(a, b);
  }
  return crc_bytewise(c, p, n);
}

static uint32_t crc_slice8_w64(uint32_t c, const uint8_t *p, size_t n)
{
  while (n && ((uintptr_t)p & 7)) { c = tab[0][(c ^ *p++) & 0xff] ^ (c >> 8); n--; }
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t w = *(const u64a *)p;
    c = fold8(c ^ (uint32_t)w, (uint32_t)(w >> 32));
  }
  return crc_bytewise(c, p, n);
}

static uint32_t crc_slice16_w64(uint32_t c, const uint8_t *p, size_t n)
{
  while (n && ((uintptr_t)p & 7)) { c = tab[0][(c ^ *p++) & 0xff] ^ (c >> 8); n--; }
  for (; n >= 16; p += 16, n -= 16) {
    uint64_t w = *(const u64a *)p, v = *(const u64a *)(p + 8);
    uint32_t a = c ^ (uint32_t)w, b = (uint32_t)(w >> 32), d = (uint32_t)v, e = (uint32_t)(v >> 32);
    c = tab[15][a & 0xff] ^ tab[14][(a >> 8) & 0xff] ^ tab[13][(a >> 16) & 0xff] ^ tab[12][a >> 24] ^
        tab[11][b & 0xff] ^ tab[10][(b >> 8) & 0xff] ^ tab[9][(b >> 16) & 0xff] ^ tab[8][b >> 24] ^
        fold8(d, e);
  }
  return crc_slice8_w64(c, p, n);
}

static uint32_t crc_core(uint32_t c, const uint8_t *p, size_t n)
{
  return rct_crc32_update(c, p, n);
}

/* Receive: copy n bytes to d and return the CRC; d and p 8-aligned. */
static void copy_words(uint8_t *d, const uint8_t *p, size_t n)
{
  for (; n >= 8; p += 8, d += 8, n -= 8) *(u64a *)d = *(const u64a *)p;
  while (n--) *d++ = *p++;
}

static uint32_t rx_crc_then_copy(uint32_t c, uint8_t *d, const uint8_t *p, size_t n)
{
  c = rct_crc32_update(c, p, n);
  copy_words(d, p, n);
  return c;
}

static uint32_t rx_fused(uint32_t c, uint8_t *d, const uint8_t *p, size_t n)
{
  for (; n >= 8; p += 8, d += 8, n -= 8) {
    uint64_t w = *(const u64a *)p;
    *(u64a *)d = w;
    c = fold8(c ^ (uint32_t)w, (uint32_t)(w >> 32));
  }
  while (n--) { *d = *p++; c = tab[0][(c ^ *d++) & 0xff] ^ (c >> 8); }
  return c;
}

/* ---- checks and timing ---- */

static const struct { const char *name; uint32_t (*fn)(uint32_t, const uint8_t *, size_t); } crcs[] = {
  { "bytewise table (1 table load per byte)", crc_bytewise },
  { "slicing-by-4, 32-bit loads", crc_slice4_w32 },
  { "slicing-by-8, byte loads", crc_slice8_bytes },
  { "slicing-by-8, 64-bit loads", crc_slice8_w64 },
  { "transport core rct_crc32_update (icrc.c)", crc_core },
  { "slicing-by-16, 64-bit loads", crc_slice16_w64 },
};

static const struct { const char *name; uint32_t (*fn)(uint32_t, uint8_t *, const uint8_t *, size_t); } rxs[] = {
  { "receive: rct_crc32_update then 64-bit copy", rx_crc_then_copy },
  { "receive: fused copy + slicing-by-8 (one 64-bit load per word)", rx_fused },
};

static uint8_t src[BUF + 64] __attribute__((aligned(8))), dst[BUF + 64] __attribute__((aligned(8)));

static int check(const char *name, int ok)
{
  if (!ok) { put("FAIL "); put(name); put("\n"); }
  return ok;
}

static void report(const char *name, uint64_t ns, uint64_t kib)
{
  put("variant ");
  put_u(ns * 10 / kib / 10);
  put(".");
  put_u(ns * 10 / kib % 10);
  put(" ns/KiB ");
  put(name);
  put("\n");
}

void _start(void) __attribute__((noreturn, section(".text.start")));
void _start(void)
{
  __asm__ volatile(".option push\n.option norelax\nla gp, __global_pointer$\n.option pop");
  int ok = 1, iters = 1000;
  uint32_t x = 12345, sink = 0;
  tables();
  for (int i = 0; i < BUF + 64; i++) { x = x * 1103515245u + 12345u; src[i] = (uint8_t)(x >> 16); }
  ok &= check("CRC-32 of \"123456789\"", ~crc_core(~0u, (const uint8_t *)"123456789", 9) == 0xCBF43926u);
  for (int off = 0; off < 8; off++)
    for (size_t n = 0; n < 300; n += 7) {
      uint32_t want = crc_bitwise(~0u, src + off, n);
      for (size_t v = 0; v < sizeof crcs / sizeof crcs[0]; v++)
        ok &= check(crcs[v].name, crcs[v].fn(~0u, src + off, n) == want);
      for (size_t v = 0; v < sizeof rxs / sizeof rxs[0]; v++) {
        memset(dst, 0, n);
        ok &= check(rxs[v].name, rxs[v].fn(~0u, dst, src + off, n) == want);
        for (size_t k = 0; k < n; k++) ok &= check(rxs[v].name, dst[k] == src[off + k]);
      }
    }
  /* ROUNDS rounds, every variant once per round (the host's slow spells
   * hit them all); each variant's median round is reported. */
  enum { NCRC = sizeof crcs / sizeof crcs[0], NRX = sizeof rxs / sizeof rxs[0], ROUNDS = 9 };
  static uint64_t t[NCRC + NRX][ROUNDS];
  for (int r = 0; ok && r < ROUNDS; r++)
    for (size_t v = 0; v < NCRC + NRX; v++) {
      uint64_t t0 = now_ns();
      for (int i = 0; i < iters; i++)
        sink ^= v < NCRC ? crcs[v].fn(sink, src, BUF) : rxs[v - NCRC].fn(sink, dst, src, BUF);
      t[v][r] = now_ns() - t0;
    }
  for (size_t v = 0; ok && v < NCRC + NRX; v++) {
    for (int a = 1; a < ROUNDS; a++)                /* insertion sort */
      for (int b = a; b > 0 && t[v][b - 1] > t[v][b]; b--) {
        uint64_t y = t[v][b]; t[v][b] = t[v][b - 1]; t[v][b - 1] = y;
      }
    report(v < NCRC ? crcs[v].name : rxs[v - NCRC].name, t[v][ROUNDS / 2], (uint64_t)iters * BUF / KIB);
  }
  put("sink ");
  put_u(sink);
  put("\n");
  sys3(64, 1, (long)out, outlen);                /* write(1, ...) */
  sys3(93, ok ? 0 : 1, 0, 0);                    /* exit */
  for (;;) {}
}
