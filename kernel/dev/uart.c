// uart.c: NS16550 driver (register facts from the 16550 data sheet).
// Transmit: a ring of bytes drained by the "transmit holding register
// empty" interrupt. Receive: each byte goes to the console line discipline.
#include "lib/types.h"
#include "lib/memlayout.h"
#include "core/lock.h"
#include "core/proc.h"
#include "dev/uart.h"
#include "dev/console.h"
#include "dev/irq.h"

#define REG(off) ((volatile uint8 *)(KDEV(UART0_BASE) + (off)))
#define RBR 0   // receive buffer (read)
#define THR 0   // transmit holding (write)
#define IER 1   // interrupt enable
#define  IER_RX 0x01
#define  IER_TX 0x02
#define FCR 2   // FIFO control (write)
#define  FCR_ENABLE 0x01
#define  FCR_CLEAR  0x06
#define LCR 3   // line control
#define  LCR_8N1  0x03
#define  LCR_DLAB 0x80
#define LSR 5   // line status
#define  LSR_RX_READY 0x01
#define  LSR_THR_EMPTY 0x20

#define TX_RING 64
static struct spinlock tx_lock;
static char tx_ring[TX_RING];
static uint64 tx_head, tx_tail;    // bytes [tail, head) wait to go out
extern volatile int panicked;

void uart_init(void) {
  *REG(IER) = 0;
  *REG(LCR) = LCR_DLAB;            // divisor latch: 38.4k (QEMU ignores it)
  *REG(0) = 3;
  *REG(1) = 0;
  *REG(LCR) = LCR_8N1;
  *REG(FCR) = FCR_ENABLE | FCR_CLEAR;
  *REG(IER) = IER_RX | IER_TX;
  spin_init(&tx_lock, "uart tx");
}

void uart_putc_sync(int c) {
  intr_push();
  while ((*REG(LSR) & LSR_THR_EMPTY) == 0)
    ;
  *REG(THR) = c;
  intr_pop();
}

// Caller holds tx_lock. Moves queued bytes into the UART while it has room.
static void tx_pump(void) {
  while (tx_tail != tx_head && (*REG(LSR) & LSR_THR_EMPTY)) {
    *REG(THR) = tx_ring[tx_tail % TX_RING];
    tx_tail++;
    proc_wakeup(&tx_tail);          // a writer may wait for ring space
  }
}

// Process context only: sleeps while the ring is full.
void uart_putc(int c) {
  spin_lock(&tx_lock);
  while (tx_head - tx_tail == TX_RING)
    proc_sleep(&tx_tail, &tx_lock);
  tx_ring[tx_head % TX_RING] = c;
  tx_head++;
  tx_pump();
  spin_unlock(&tx_lock);
}

// IRQ handler: drain received bytes, then refill the transmitter.
void uart_interrupt(void *arg) {
  (void)arg;
  while (*REG(LSR) & LSR_RX_READY)
    console_input(*REG(RBR));
  spin_lock(&tx_lock);
  tx_pump();
  spin_unlock(&tx_lock);
}
