// pci.c: enumerate PCI functions through ECAM and give them resources.
//
// QEMU virt exposes one host bridge: configuration space at PCI_ECAM_BASE
// (function address = bus << 20 | device << 15 | function << 12) and a
// 32-bit memory window at PCI_MMIO_BASE. There is no firmware here, so we
// size and place every memory BAR ourselves with a bump allocator, aligned
// to the BAR's size as PCI requires. I/O BARs are left unassigned.
//
// Interrupts: virt wires INTA..INTD of slot s to PLIC 32..35 rotated by the
// slot number (the standard swizzle): irq = 32 + (pin - 1 + s) % 4.
#include "lib/types.h"
#include "lib/memlayout.h"
#include "core/printk.h"
#include "dev/pci.h"

#define CFG_VENDOR     0x00
#define CFG_DEVICE     0x02
#define CFG_COMMAND    0x04
#define CFG_CLASS_REV  0x08
#define CFG_HEADER     0x0e
#define CFG_BAR0       0x10
#define CFG_INT_LINE   0x3c
#define CFG_INT_PIN    0x3d

#define CMD_MEMORY     (1u << 1)
#define CMD_BUS_MASTER (1u << 2)
#define CMD_INTX_OFF   (1u << 10)

#define BAR_IO         0x1
#define BAR_TYPE_MASK  0x6
#define BAR_TYPE_64    0x4

#define VIRT_PCI_IRQ_BASE 32
#define VIRT_PCI_NIRQ     4
#define NPCIDEV 16

static struct pci_dev devs[NPCIDEV];
static int ndevs;
static uint64 mmio_next = PCI_MMIO_BASE;

static volatile uint32 *cfg32(int bus, int dev, int fn, int off) {
  uint64 a = KDEV(PCI_ECAM_BASE) + ((uint64)bus << 20) + ((uint64)dev << 15) + ((uint64)fn << 12) + off;
  return (volatile uint32 *)a;
}
static uint32 cfg_read(int b, int d, int f, int off) {
  uint32 w = *cfg32(b, d, f, off & ~3);
  return w >> (8 * (off & 3));
}
static void cfg_write32(int b, int d, int f, int off, uint32 v) { *cfg32(b, d, f, off) = v; }

// Sizes memory BAR i (and i+1 for a 64-bit BAR) and places it in the
// window. Returns how many BAR slots it used.
static int assign_bar(struct pci_dev *p, int i) {
  int off = CFG_BAR0 + 4 * i;
  uint32 orig = cfg_read(p->bus, p->dev, p->fn, off);
  if (orig & BAR_IO) return 1;
  int is64 = (orig & BAR_TYPE_MASK) == BAR_TYPE_64;
  cfg_write32(p->bus, p->dev, p->fn, off, 0xffffffff);
  uint64 mask = cfg_read(p->bus, p->dev, p->fn, off) & ~0xfull;
  if (is64) {
    cfg_write32(p->bus, p->dev, p->fn, off + 4, 0xffffffff);
    mask |= (uint64)cfg_read(p->bus, p->dev, p->fn, off + 4) << 32;
  } else {
    mask |= 0xffffffff00000000ull;
  }
  if ((mask & 0xffffffff) == 0) return is64 ? 2 : 1;   // unimplemented BAR
  uint64 size = ~mask + 1;
  uint64 base = (mmio_next + size - 1) & ~(size - 1);
  if (base + size > PCI_MMIO_BASE + PCI_MMIO_SIZE) {
    kprintf("pci: %x:%x.%d BAR%d of %d bytes does not fit\n", p->bus, p->dev, p->fn, i, (int)size);
    return is64 ? 2 : 1;
  }
  mmio_next = base + size;
  cfg_write32(p->bus, p->dev, p->fn, off, (uint32)base);
  if (is64) cfg_write32(p->bus, p->dev, p->fn, off + 4, (uint32)(base >> 32));
  p->bar[i] = base;
  p->bar_size[i] = size;
  return is64 ? 2 : 1;
}

static void add_function(int bus, int dev, int fn, uint32 id) {
  if (ndevs == NPCIDEV) { kprintf("pci: too many functions\n"); return; }
  struct pci_dev *p = &devs[ndevs++];
  p->bus = bus; p->dev = dev; p->fn = fn;
  p->vendor = id & 0xffff;
  p->device = id >> 16;
  p->class_code = cfg_read(bus, dev, fn, CFG_CLASS_REV) >> 8;
  if ((cfg_read(bus, dev, fn, CFG_HEADER) & 0x7f) == 0) {   // ordinary function
    cfg_write32(bus, dev, fn, CFG_COMMAND, 0);              // decode off while sizing
    for (int i = 0; i < PCI_MAX_BARS; )
      i += assign_bar(p, i);
  }
  int pin = cfg_read(bus, dev, fn, CFG_INT_PIN) & 0xff;
  if (pin >= 1 && pin <= 4) {
    p->irq = VIRT_PCI_IRQ_BASE + (pin - 1 + dev) % VIRT_PCI_NIRQ;
    uint32 line = cfg_read(bus, dev, fn, CFG_INT_LINE & ~3);
    cfg_write32(bus, dev, fn, CFG_INT_LINE, (line & ~0xffu) | (uint32)p->irq);
  }
  uint32 cmd = cfg_read(bus, dev, fn, CFG_COMMAND) & 0xffff;
  cmd = (cmd | CMD_MEMORY | CMD_BUS_MASTER) & ~CMD_INTX_OFF;
  cfg_write32(bus, dev, fn, CFG_COMMAND, cmd);
  kprintf("pci: %x:%x.%d %x:%x class %x bar0 %p irq %d\n", bus, dev, fn,
          p->vendor, p->device, p->class_code, (void *)p->bar[0], p->irq);
}

void pci_init(void) {
  for (int dev = 0; dev < 32; dev++) {
    for (int fn = 0; fn < 8; fn++) {
      uint32 id = cfg_read(0, dev, fn, CFG_VENDOR);
      if ((id & 0xffff) == 0xffff) { if (fn == 0) break; continue; }
      add_function(0, dev, fn, id);
      if (fn == 0 && !(cfg_read(0, dev, 0, CFG_HEADER) & 0x80)) break;   // single-function
    }
  }
}

struct pci_dev *pci_find(uint16 vendor, uint16 device) {
  for (int i = 0; i < ndevs; i++)
    if (devs[i].vendor == vendor && devs[i].device == device) return &devs[i];
  return NULL;
}
