// fdt.c: a minimal flattened-device-tree walker (layout from the
// devicetree specification: big-endian header, a structure block of
// BEGIN_NODE/END_NODE/PROP tokens, a strings block). It only extracts
// /chosen/bootargs, /cpus/timebase-frequency and the first /memory node's
// reg (the guest's RAM: QEMU -m), read with the root's #address-cells and
// #size-cells.
#include "lib/types.h"
#include "lib/klib.h"
#include "core/printk.h"
#include "lib/bootarg.h"

#define FDT_MAGIC 0xd00dfeed
enum { TOK_BEGIN_NODE = 1, TOK_END_NODE = 2, TOK_PROP = 3, TOK_NOP = 4, TOK_END = 9 };
#define BOOTARGS_MAX 256

static char bootargs[BOOTARGS_MAX];
static char values[BOOTARGS_MAX];   // bootargs with NULs, for bootarg()
static uint64 timebase_hz;
static uint32 addr_cells = 2, size_cells = 1;   // the spec's defaults
static uint64 mem_base, mem_size;               // 0: no memory node seen

static uint32 be32(const void *p) {
  const uint8 *b = p;
  return ((uint32)b[0] << 24) | ((uint32)b[1] << 16) | ((uint32)b[2] << 8) | b[3];
}

// A big-endian number of cells 32-bit cells (1 or 2) at *p; advances *p.
static uint64 take_cells(const uint8 **p, uint32 cells) {
  uint64 v = 0;
  for (uint32 i = 0; i < cells; i++, *p += 4) v = (v << 32) | be32(*p);
  return v;
}

static void take_root_property(const char *name, const uint8 *val) {
  if (strncmp(name, "#address-cells", 15) == 0) addr_cells = be32(val);
  else if (strncmp(name, "#size-cells", 12) == 0) size_cells = be32(val);
}

static void take_memory(const uint8 *val, uint32 len) {
  if (mem_size || addr_cells > 2 || size_cells > 2 || len < 4 * (addr_cells + size_cells)) return;
  mem_base = take_cells(&val, addr_cells);
  mem_size = take_cells(&val, size_cells);
}

static void take_property(const char *node, const char *name, const uint8 *val, uint32 len) {
  if (strncmp(node, "memory", 6) == 0 && (node[6] == 0 || node[6] == '@') &&
      strncmp(name, "reg", 4) == 0) {
    take_memory(val, len);
  } else if (strncmp(node, "chosen", 7) == 0 && strncmp(name, "bootargs", 9) == 0) {
    uint32 n = len < BOOTARGS_MAX ? len : BOOTARGS_MAX - 1;
    memmove(bootargs, val, n);
    bootargs[n] = 0;
  } else if (strncmp(node, "cpus", 5) == 0 && strncmp(name, "timebase-frequency", 19) == 0) {
    timebase_hz = len == 8 ? ((uint64)be32(val) << 32) | be32(val + 4) : be32(val);
  }
}

// Walks the structure block, tracking the name of each depth-1 node.
void fdt_scan(uint64 dtb) {
  const uint8 *base = (const uint8 *)dtb;
  if (dtb == 0 || be32(base) != FDT_MAGIC) { kprintf("fdt: no device tree\n"); return; }
  const uint8 *p = base + be32(base + 8);           // off_dt_struct
  const char *strings = (const char *)base + be32(base + 12);
  const char *node = "";
  int depth = 0;
  for (;;) {
    uint32 tok = be32(p);
    p += 4;
    if (tok == TOK_BEGIN_NODE) {
      const char *name = (const char *)p;
      if (++depth == 2) node = name;                // children of the root
      p += (strlen(name) + 1 + 3) & ~3ULL;
    } else if (tok == TOK_END_NODE) {
      if (--depth < 2) node = "";
    } else if (tok == TOK_PROP) {
      uint32 len = be32(p), nameoff = be32(p + 4);
      if (depth == 1 && len == 4) take_root_property(strings + nameoff, p + 8);
      if (depth == 2) take_property(node, strings + nameoff, p + 8, len);
      p += 8 + ((len + 3) & ~3U);
    } else if (tok == TOK_NOP) {
      continue;
    } else {
      break;                                        // TOK_END or garbage
    }
  }
  memmove(values, bootargs, sizeof values);
  for (int i = 0; i < BOOTARGS_MAX; i++)
    if (values[i] == ' ' || values[i] == '\t' || values[i] == '\n') values[i] = 0;
}

uint64 bootarg_uint(const char *key, uint64 dflt) {
  const char *v = bootarg(key);
  if (!v) return dflt;
  uint64 n = 0;
  for (; *v >= '0' && *v <= '9'; v++) n = n * 10 + (uint64)(*v - '0');
  return n;
}

const char *bootarg(const char *key) {
  uint64 klen = strlen(key);
  for (int i = 0; i < BOOTARGS_MAX && bootargs[i]; ) {
    const char *word = &values[i];
    uint64 wlen = strlen(word);
    if (wlen >= klen && strncmp(word, key, klen) == 0) {
      if (word[klen] == '=') return word + klen + 1;
      if (word[klen] == 0) return word + klen;
    }
    i += wlen + 1;
  }
  return NULL;
}

const char *bootargs_all(void) { return bootargs; }
uint64 fdt_timebase_hz(void) { return timebase_hz; }
uint64 fdt_ram_base(void) { return mem_base; }
uint64 fdt_ram_size(void) { return mem_size; }
