// uart.h: the NS16550 UART at UART0_BASE. uart.c owns its registers.
// Kernel messages use uart_putc_sync (polling); console writes from
// processes use uart_putc, which queues and may sleep when the queue is
// full; the receive interrupt hands each byte to console_input().
#ifndef UART_H
#define UART_H
void uart_init(void);
void uart_putc_sync(int c);
void uart_putc(int c);
void uart_interrupt(void *arg);
#endif
