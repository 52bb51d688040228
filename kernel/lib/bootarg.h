// bootarg.h: the boot command line (QEMU -append) and facts from the
// device tree (fdt.c). fdt_scan runs once on hart 0 before the page
// allocator takes RAM (QEMU puts the DTB in RAM), and copies what it needs.
//
// bootarg("ip") returns the value of "ip=..." in /chosen/bootargs as a
// NUL-terminated string that lives forever, or NULL if the key is absent.
// A bare word "key" (no '=') yields "".
#ifndef BOOTARG_H
#define BOOTARG_H
#include "lib/types.h"
void fdt_scan(uint64 dtb);
const char *bootarg(const char *key);
// The decimal value of "key=N", or dflt if the key is absent.
uint64 bootarg_uint(const char *key, uint64 dflt);
const char *bootargs_all(void);
uint64 fdt_timebase_hz(void);   // 0 if the DTB did not say
uint64 fdt_ram_base(void);      // the first /memory node's range (QEMU -m);
uint64 fdt_ram_size(void);      //   both 0 if the DTB did not say
#endif
