// pci.h: PCI Express enumeration on the QEMU virt host bridge (pci.c).
//
// pci_init() walks bus 0 of the ECAM window once at boot, gives every
// memory BAR an address from the MMIO window, turns on memory decoding and
// bus mastering, and remembers each function. A driver then asks for its
// device with pci_find(vendor, device) and gets the BAR addresses and the
// PLIC IRQ that the function's INTx pin is wired to.
#ifndef PCI_H
#define PCI_H
#include "lib/types.h"

#define PCI_MAX_BARS 6

struct pci_dev {
  uint8  bus, dev, fn;
  uint16 vendor, device;
  uint32 class_code;          // class << 16 | subclass << 8 | prog-if
  uint64 bar[PCI_MAX_BARS];   // assigned base of each memory BAR, 0 if none
  uint64 bar_size[PCI_MAX_BARS];
  int    irq;                 // PLIC IRQ of the INTx pin, 0 if no pin
};

void pci_init(void);
// The first function with this vendor:device id, or NULL.
struct pci_dev *pci_find(uint16 vendor, uint16 device);

#endif
