// plic.c: the platform-level interrupt controller (PLIC spec register map).
// Owns the IRQ -> handler table. On QEMU virt, hart h's supervisor
// context is number 2h+1.
#include "lib/types.h"
#include "lib/memlayout.h"
#include "core/lock.h"
#include "core/proc.h"
#include "core/printk.h"
#include "dev/irq.h"
#include "dev/random.h"

#define PLIC_PRIORITY(irq) ((volatile uint32 *)(KDEV(PLIC_BASE) + 4 * (irq)))
#define S_CONTEXT(hart) (2 * (hart) + 1)
#define PLIC_ENABLE(ctx, irq) ((volatile uint32 *)(KDEV(PLIC_BASE) + 0x2000 + 0x80 * (ctx) + 4 * ((irq) / 32)))
#define PLIC_THRESHOLD(ctx) ((volatile uint32 *)(KDEV(PLIC_BASE) + 0x200000 + 0x1000 * (ctx)))
#define PLIC_CLAIM(ctx) ((volatile uint32 *)(KDEV(PLIC_BASE) + 0x200004 + 0x1000 * (ctx)))

struct irq_handler { void (*fn)(void *); void *arg; };
static struct irq_handler handlers[NIRQ];
static struct spinlock plic_lock = { 0, "plic", 0 };
static int hart_ready[NCPU];     // plic_hart_init has run on this hart

static void enable_on(int hart, int irq) {
  *PLIC_ENABLE(S_CONTEXT(hart), irq) |= 1u << (irq % 32);
}

void irq_register(int irq, void (*fn)(void *), void *arg) {
  if (irq <= 0 || irq >= NIRQ) panic("irq_register: bad irq %d", irq);
  spin_lock(&plic_lock);
  if (handlers[irq].fn) panic("irq_register: irq %d registered twice", irq);
  handlers[irq].fn = fn;
  handlers[irq].arg = arg;
  *PLIC_PRIORITY(irq) = 1;
  for (int h = 0; h < NCPU; h++)
    if (hart_ready[h]) enable_on(h, irq);
  spin_unlock(&plic_lock);
}

void plic_hart_init(void) {
  int hart = hart_id();
  spin_lock(&plic_lock);
  for (int irq = 1; irq < NIRQ; irq++)
    if (handlers[irq].fn) enable_on(hart, irq);
  *PLIC_THRESHOLD(S_CONTEXT(hart)) = 0;
  hart_ready[hart] = 1;
  spin_unlock(&plic_lock);
}

// Claim, run the handler, complete. Called with interrupts off.
void plic_dispatch(void) {
  int ctx = S_CONTEXT(hart_id());
  uint32 irq;
  while ((irq = *PLIC_CLAIM(ctx)) != 0) {
    random_add_jitter();        // interrupt timing feeds the generator's pool
    if (irq < NIRQ && handlers[irq].fn)
      handlers[irq].fn(handlers[irq].arg);
    else
      kprintf("plic: unexpected irq %d\n", irq);
    *PLIC_CLAIM(ctx) = irq;
  }
}
