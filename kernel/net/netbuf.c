// netbuf.c: the pool of packet buffers (struct netbuf, net.h).
//
// A fixed pool in static memory, so every buffer is physically contiguous
// and a whole jumbo frame fits in one. Senders in process context wait for
// a buffer but never take the last NETBUF_RX_RESERVE, so a busy sender
// cannot starve the receive path.
#include "lib/types.h"
#include "core/lock.h"
#include "core/proc.h"
#include "core/printk.h"
#include "net/net.h"

static struct netbuf pool[NNETBUF];
static struct {
  struct spinlock lock;
  struct netbuf *free;
  int nfree;
  int waiting;                  // senders asleep in netbuf_alloc_wait
} nbp;

void netbuf_init(void) {
  spin_init(&nbp.lock, "netbuf");
  for (int i = 0; i < NNETBUF; i++) {
    pool[i].next = nbp.free;
    nbp.free = &pool[i];
  }
  nbp.nfree = NNETBUF;
}

static struct netbuf *take(void) {
  struct netbuf *nb = nbp.free;
  nbp.free = nb->next;
  nbp.nfree--;
  nb->next = NULL;
  nb->data = nb->space + NETBUF_HEADROOM;
  nb->len = 0;
  nb->src_ip = nb->dst_ip = 0;
  nb->src_port = nb->dst_port = 0;
  return nb;
}

struct netbuf *netbuf_alloc(void) {
  struct netbuf *nb = NULL;
  spin_lock(&nbp.lock);
  if (nbp.free) nb = take();
  spin_unlock(&nbp.lock);
  return nb;
}

struct netbuf *netbuf_alloc_wait(void) {
  spin_lock(&nbp.lock);
  while (nbp.nfree <= NETBUF_RX_RESERVE) {
    if (proc_killed(current())) { spin_unlock(&nbp.lock); return NULL; }
    nbp.waiting++;
    proc_sleep(&nbp.free, &nbp.lock);
    nbp.waiting--;
  }
  struct netbuf *nb = take();
  spin_unlock(&nbp.lock);
  return nb;
}

void netbuf_free(struct netbuf *nb) {
  if (nb < pool || nb >= pool + NNETBUF) panic("netbuf_free: %p is not a netbuf", nb);
  spin_lock(&nbp.lock);
  nb->next = nbp.free;
  nbp.free = nb;
  nbp.nfree++;
  if (nbp.nfree > NNETBUF) panic("netbuf_free: freed twice");
  if (nbp.waiting) proc_wakeup(&nbp.free);   // a wakeup scans every process: only if needed
  spin_unlock(&nbp.lock);
}

int netbuf_free_count(void) { return nbp.nfree; }

uint8 *netbuf_push(struct netbuf *nb, uint32 n) {
  if (nb->data - nb->space < n) panic("netbuf_push: no headroom for %d bytes", (int)n);
  nb->data -= n;
  nb->len += n;
  return nb->data;
}

uint8 *netbuf_pull(struct netbuf *nb, uint32 n) {
  if (nb->len < n) return NULL;
  uint8 *h = nb->data;
  nb->data += n;
  nb->len -= n;
  return h;
}
