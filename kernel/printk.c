// printk.c: formatted kernel output and panic. Output goes straight to the
// UART by polling (uart_putc_sync) so it works with interrupts off and
// from any hart; a lock keeps lines from different harts apart.
#include <stdarg.h>
#include "types.h"
#include "lock.h"
#include "printk.h"
#include "uart.h"
#include "power.h"
#include "riscv.h"

static struct spinlock print_lock;
static int print_locking;            // 0 until init and after a panic
volatile int panicked;

void printk_init(void) {
  spin_init(&print_lock, "printk");
  print_locking = 1;
}

static void put_unsigned(uint64 v, int base) {
  char digits[24];
  int n = 0;
  do { digits[n++] = "0123456789abcdef"[v % base]; v /= base; } while (v);
  while (n > 0) uart_putc_sync(digits[--n]);
}

static void put_signed(int64 v) {
  if (v < 0) { uart_putc_sync('-'); put_unsigned((uint64)(-v), 10); }
  else put_unsigned((uint64)v, 10);
}

// Supports %d %u %x %p %s %c %% and the l/ll length prefixes.
static void vformat(const char *fmt, va_list ap) {
  for (; *fmt; fmt++) {
    if (*fmt != '%') { uart_putc_sync(*fmt); continue; }
    int longs = 0;
    while (*++fmt == 'l') longs++;
    switch (*fmt) {
    case 'd': put_signed(longs ? va_arg(ap, int64) : va_arg(ap, int)); break;
    case 'u': put_unsigned(longs ? va_arg(ap, uint64) : va_arg(ap, uint32), 10); break;
    case 'x': put_unsigned(longs ? va_arg(ap, uint64) : va_arg(ap, uint32), 16); break;
    case 'p': uart_putc_sync('0'); uart_putc_sync('x'); put_unsigned(va_arg(ap, uint64), 16); break;
    case 's': { const char *s = va_arg(ap, const char *); if (!s) s = "(null)"; while (*s) uart_putc_sync(*s++); break; }
    case 'c': uart_putc_sync(va_arg(ap, int)); break;
    case '%': uart_putc_sync('%'); break;
    case 0: return;
    default: uart_putc_sync('%'); uart_putc_sync(*fmt); break;
    }
  }
}

void kprintf(const char *fmt, ...) {
  va_list ap;
  int lock = print_locking;
  if (lock) spin_lock(&print_lock);
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
  uart_putc_sync('\n');
  for (const char *s = "panic: "; *s; s++) uart_putc_sync(*s);
  va_start(ap, fmt);
  vformat(fmt, ap);
  va_end(ap);
  uart_putc_sync('\n');
  power_off(PANIC_EXIT_STATUS);
}
