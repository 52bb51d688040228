// power.h: power the machine off through QEMU virt's test finisher.
// Status 0 makes QEMU exit 0; any other status makes it exit non-zero.
#ifndef POWER_H
#define POWER_H
#define PANIC_EXIT_STATUS 99
void power_off(int status) __attribute__((noreturn));
#endif
