// printk.c: formatted kernel output and panic. Output goes to the sink
// boot hands printk_init (the UART's polling putc), so it works with
// interrupts off and from any hart; a lock keeps lines from different harts
// apart. Nothing is printed before printk_init.
#include <stdarg.h>
#include "lib/types.h"
#include "core/lock.h"
#include "core/printk.h"
#include "core/power.h"
#include "lib/riscv.h"

static struct spinlock print_lock;
static int print_locking;            // 0 until init and after a panic
volatile int panicked;

static void (*put)(int c);
static volatile int console_line_open;   // printk_after_console: a console line without its newline

static void out_char(int c) {
  if (put) put(c);
}

void printk_init(void (*putc_polled)(int c)) {
  put = putc_polled;
  spin_init(&print_lock, "printk");
  print_locking = 1;
}

static void put_unsigned(uint64 v, int base) {
  char digits[24];
  int n = 0;
  do { digits[n++] = "0123456789abcdef"[v % base]; v /= base; } while (v);
  while (n > 0) out_char(digits[--n]);
}

static void put_signed(int64 v) {
  if (v < 0) { out_char('-'); put_unsigned((uint64)(-v), 10); }
  else put_unsigned((uint64)v, 10);
}

// Supports %d %u %x %p %s %c %% and the l/ll length prefixes.
static void vformat(const char *fmt, va_list ap) {
  for (; *fmt; fmt++) {
    if (*fmt != '%') { out_char(*fmt); continue; }
    int longs = 0;
    while (*++fmt == 'l') longs++;
    switch (*fmt) {
    case 'd': put_signed(longs ? va_arg(ap, int64) : va_arg(ap, int)); break;
    case 'u': put_unsigned(longs ? va_arg(ap, uint64) : va_arg(ap, uint32), 10); break;
    case 'x': put_unsigned(longs ? va_arg(ap, uint64) : va_arg(ap, uint32), 16); break;
    case 'p': out_char('0'); out_char('x'); put_unsigned(va_arg(ap, uint64), 16); break;
    case 's': { const char *s = va_arg(ap, const char *); if (!s) s = "(null)"; while (*s) out_char(*s++); break; }
    case 'c': out_char(va_arg(ap, int)); break;
    case '%': out_char('%'); break;
    case 0: return;
    default: out_char('%'); out_char(*fmt); break;
    }
  }
}

void printk_after_console(int c) {
  console_line_open = c != '\n';
}

void kprintf(const char *fmt, ...) {
  va_list ap;
  int lock = print_locking;
  if (lock) spin_lock(&print_lock);
  if (console_line_open) {
    console_line_open = 0;
    out_char('\n');
  }
  va_start(ap, fmt);
  vformat(fmt, ap);
  va_end(ap);
  if (lock) spin_unlock(&print_lock);
}

void panic(const char *fmt, ...) {
  va_list ap;
  intr_off();
  print_locking = 0;        // the lock holder may be the one panicking
  panicked = 1;             // other harts stop echoing console output
  out_char('\n');
  for (const char *s = "panic: "; *s; s++) out_char(*s);
  va_start(ap, fmt);
  vformat(fmt, ap);
  va_end(ap);
  out_char('\n');
  power_off(PANIC_EXIT_STATUS);
}
