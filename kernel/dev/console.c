// console.c: line discipline between the UART and readers of the console.
// Editing: backspace/DEL erase a character, ^U erases the line, ^D ends
// input (with text on the line it passes the text on; at the start of a
// line the next read returns 0), ^P lists processes. A read returns at
// most one line, after newline or ^D.
#include "lib/types.h"
#include "lib/riscv.h"
#include "core/lock.h"
#include "core/proc.h"
#include "core/printk.h"
#include "core/poll.h"
#include "dev/uart.h"
#include "dev/console.h"
#include "dev/devsw.h"
#include "lib/uapi.h"
#include "core/vm.h"
#include "dev/irq.h"
#include "lib/memlayout.h"

struct devsw devsw[NDEV];            // devsw.h

#define CTRL(x) ((x) - '@')
#define BACKSPACE 0x100              // tells echo() to erase a character
#define LINE_MAX_BYTES 1024            // longest input line; more is dropped

static struct {
  struct spinlock lock;
  char buf[LINE_MAX_BYTES];
  uint64 rd;    // next byte a reader takes
  uint64 wr;    // end of completed lines (readers may take up to here)
  uint64 ed;    // end of the line being edited
} cons;

static void echo(int c) {
  if (c == BACKSPACE) {
    uart_putc_sync('\b'); uart_putc_sync(' '); uart_putc_sync('\b');
  } else {
    uart_putc_sync(c);
    printk_after_console(c);
  }
}

// Called from the UART interrupt with interrupts off.
void console_input(int c) {
  spin_lock(&cons.lock);
  switch (c) {
  case CTRL('P'):
    proc_dump();
    break;
  case CTRL('U'):
    while (cons.ed != cons.wr && cons.buf[(cons.ed - 1) % LINE_MAX_BYTES] != '\n') {
      cons.ed--;
      echo(BACKSPACE);
    }
    break;
  case '\b': case 0x7f:
    if (cons.ed != cons.wr) { cons.ed--; echo(BACKSPACE); }
    break;
  case CTRL('D'):
    // With a partial line, ^D hands it to readers as it is; at the start
    // of a line it is stored as an end-of-file mark (a read returns 0).
    if (cons.ed == cons.wr && cons.ed - cons.rd < LINE_MAX_BYTES)
      cons.buf[cons.ed++ % LINE_MAX_BYTES] = c;
    cons.wr = cons.ed;
    proc_wakeup(&cons.rd);
    poll_notify();
    break;
  default:
    if (c == 0 || cons.ed - cons.rd >= LINE_MAX_BYTES) break;
    if (c == '\r') c = '\n';
    echo(c);
    cons.buf[cons.ed++ % LINE_MAX_BYTES] = c;
    if (c == '\n' || cons.ed - cons.rd == LINE_MAX_BYTES) {
      cons.wr = cons.ed;          // a whole line is ready for readers
      proc_wakeup(&cons.rd);
      poll_notify();
    }
  }
  spin_unlock(&cons.lock);
}

// Device read: copies at most one line to user (or kernel) memory. User
// memory is checked (and faulted in) before bytes leave the buffer, and
// written after cons.lock is dropped: a copy may fault a page in from the
// paging store and sleep (core/pager.c). One read stays within one user
// page.
static int console_read(int to_user, uint64 dst, int n) {
  char line[LINE_MAX_BYTES];
  if (to_user && n > 0) {
    if (uvm_user_pa(current()->pagetable, dst, 1) == 0) return -1;
    if (n > PGSIZE - (int)(dst % PGSIZE)) n = PGSIZE - (int)(dst % PGSIZE);
  }
  if (n > LINE_MAX_BYTES) n = LINE_MAX_BYTES;
  int want = n;
  spin_lock(&cons.lock);
  while (n > 0) {
    if (cons.rd == cons.wr && n < want) break;   // the end of what ^D pushed
    while (cons.rd == cons.wr) {
      if (proc_killed(current())) { spin_unlock(&cons.lock); return -1; }
      proc_sleep(&cons.rd, &cons.lock);
    }
    char c = cons.buf[cons.rd++ % LINE_MAX_BYTES];
    if (c == CTRL('D')) {
      if (n < want) cons.rd--;    // keep ^D so the next read returns 0
      break;
    }
    line[want - n] = c;
    n--;
    if (c == '\n') break;
  }
  spin_unlock(&cons.lock);
  if (copy_to(to_user, dst, line, want - n) < 0) return -1;
  return want - n;
}

// POLLIN while a line (or ^D's end of file) waits; output never blocks.
static int console_poll(void) {
  spin_lock(&cons.lock);
  int bits = (cons.rd != cons.wr ? POLLIN : 0) | POLLOUT;
  spin_unlock(&cons.lock);
  return bits;
}

// Serializes writers so that one write() reaches the screen whole, never
// interleaved character by character with another process's output.
static struct sleeplock write_lock;

// Process context only (may sleep).
static int console_write(int from_user, uint64 src, int n) {
  int i;
  char last = 0;
  sleeplock_acquire(&write_lock);
  for (i = 0; i < n; i++) {
    char c;
    if (copy_from(from_user, &c, src + i, 1) < 0) break;
    uart_putc(c);
    last = c;
  }
  if (i > 0) printk_after_console(last);
  sleeplock_release(&write_lock);
  return i > 0 || n == 0 ? i : -1;
}

void console_init(void) {
  spin_init(&cons.lock, "console");
  sleeplock_init(&write_lock, "console-write");
  uart_init();
  devsw[DEV_CONSOLE].read = console_read;
  devsw[DEV_CONSOLE].write = console_write;
  devsw[DEV_CONSOLE].poll = console_poll;
}
