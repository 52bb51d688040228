// printk.h: kernel console output (kprintf) and fatal errors (panic).
// panic prints its message and powers the machine off with a failure
// status, so a test run never hangs on a dead kernel.
#ifndef PRINTK_H
#define PRINTK_H

void kprintf(const char *fmt, ...);
void panic(const char *fmt, ...) __attribute__((noreturn));
void printk_init(void (*putc_polled)(int c));   // boot: the sink, polled, any context

// Invariant check: panics naming the broken invariant.
#define ASSERT(cond, what) do { if (!(cond)) panic("invariant broken: %s (%s:%d)", what, __FILE__, __LINE__); } while (0)

#endif
