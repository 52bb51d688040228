// printk.h: kernel console output (kprintf) and fatal errors (panic).
// panic prints its message and powers the machine off with a failure
// status, so a test run never hangs on a dead kernel.
#ifndef PRINTK_H
#define PRINTK_H

void kprintf(const char *fmt, ...);
void panic(const char *fmt, ...) __attribute__((noreturn));
void printk_init(void (*putc_polled)(int c));   // boot: the sink, polled, any context
// The console's own output (a process's write, the echo of typed input)
// ended with c: a kernel message that follows a line left open (the
// shell's "$ ") starts on a line of its own, so it never reads as part of
// that line, nor hides the prompt from a reader waiting for it at a line's end.
void printk_after_console(int c);

// Invariant check: panics naming the broken invariant.
#define ASSERT(cond, what) do { if (!(cond)) panic("invariant broken: %s (%s:%d)", what, __FILE__, __LINE__); } while (0)

#endif
