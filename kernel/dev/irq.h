// irq.h: external interrupts through the PLIC (plic.c).
// A driver calls irq_register(irq, fn, arg) once; the IRQ is then enabled
// on every hart's supervisor context, and fn(arg) runs in interrupt
// context (interrupts off, must not sleep) each time the device raises it.
#ifndef IRQ_H
#define IRQ_H
#define NIRQ 128
void irq_register(int irq, void (*fn)(void *), void *arg);
void plic_hart_init(void);        // each hart, once, before enabling interrupts
void plic_dispatch(void);         // trap.c: on a supervisor external interrupt
#endif
