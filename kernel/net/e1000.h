// e1000.h: driver for the Intel 82540EM (QEMU's `-device e1000`).
// e1000_init() finds the device on PCI, resets it, reads its MAC from the
// EEPROM, sets up the rings and interrupt moderation, and starts the
// driver thread. The stack reaches the driver only through netdev.h.
#ifndef E1000_H
#define E1000_H
int e1000_init(void);   // 0, or -1 if there is no E1000 (networking off)
#endif
