// netbuf.c: the pool of packet buffers (struct netbuf, net.h).
//
// A fixed pool in static memory, so every buffer is physically contiguous
// and a whole jumbo frame fits in one. Senders in process context wait for
// a buffer but never take the last NETBUF_RX_RESERVE, so a busy sender
// cannot starve the receive path.
//
// Every buffer knows its owner (enum netbuf_owner): the receive path
// (netbuf_alloc), a process sending (netbuf_alloc_wait), a socket's receive
// queue or the RDMA engine. The pool counts what each owner holds and
// netbuf_own moves a buffer to a new owner only within that owner's share,
// so one kind of holder (unread sockets) cannot take the whole pool.
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
  int held[NB_COUNT];           // buffers per owner; held[NB_free] == nfree
} nbp;

const char *netbuf_owner_names[NB_COUNT] = {
#define NB_NAME(name) "netbufs_" #name,
  NETBUF_OWNERS(NB_NAME)
#undef NB_NAME
};

// Caller holds nbp.lock.
static void set_owner(struct netbuf *nb, enum netbuf_owner owner) {
  nbp.held[nb->owner]--;
  nbp.held[owner]++;
  nb->owner = owner;
}

void netbuf_init(void) {
  spin_init(&nbp.lock, "netbuf");
  for (int i = 0; i < NNETBUF; i++) {
    pool[i].next = nbp.free;
    pool[i].owner = NB_free;
    nbp.free = &pool[i];
  }
  nbp.nfree = nbp.held[NB_free] = NNETBUF;
}

static struct netbuf *take(enum netbuf_owner owner) {
  struct netbuf *nb = nbp.free;
  nbp.free = nb->next;
  nbp.nfree--;
  set_owner(nb, owner);
  nb->next = NULL;
  nb->data = nb->space + NETBUF_HEADROOM;
  nb->len = 0;
  nb->frame = NULL;
  nb->src_ip = nb->dst_ip = 0;
  nb->src_port = nb->dst_port = 0;
  return nb;
}

struct netbuf *netbuf_alloc(void) {
  struct netbuf *nb = NULL;
  netbuf_alloc_n(&nb, 1);
  return nb;
}

// Up to n buffers (owner rx) under one hold of the pool lock: the driver
// takes one per frame already waiting in its ring.
int netbuf_alloc_n(struct netbuf **out, int n) {
  int got = 0;
  spin_lock(&nbp.lock);
  while (got < n && nbp.free) out[got++] = take(NB_rx);
  spin_unlock(&nbp.lock);
  return got;
}

struct netbuf *netbuf_alloc_wait(void) {
  spin_lock(&nbp.lock);
  while (nbp.nfree <= NETBUF_RX_RESERVE) {
    if (proc_killed(current())) { spin_unlock(&nbp.lock); return NULL; }
    nbp.waiting++;
    proc_sleep(&nbp.free, &nbp.lock);
    nbp.waiting--;
  }
  struct netbuf *nb = take(NB_tx);
  spin_unlock(&nbp.lock);
  return nb;
}

void netbuf_free(struct netbuf *nb) {
  netbuf_free_n(&nb, 1);
}

// One lock hold and at most one wakeup for the whole batch: the receive
// path frees what a pass took in together (rdma_net.c's rx_pass_end).
void netbuf_free_n(struct netbuf *const *nbs, int n) {
  for (int i = 0; i < n; i++)
    if (nbs[i] < pool || nbs[i] >= pool + NNETBUF) panic("netbuf_free: %p is not a netbuf", nbs[i]);
  spin_lock(&nbp.lock);
  for (int i = 0; i < n; i++) {
    struct netbuf *nb = nbs[i];
    if (nb->owner == NB_free) panic("netbuf_free: freed twice");
    set_owner(nb, NB_free);
    nb->next = nbp.free;
    nbp.free = nb;
    nbp.nfree++;
  }
  if (n > 0 && nbp.waiting) proc_wakeup(&nbp.free);   // a wakeup scans every process: only if needed
  spin_unlock(&nbp.lock);
}

int netbuf_free_count(void) { return nbp.nfree; }

int netbuf_own(struct netbuf *nb, enum netbuf_owner owner, int share) {
  int r = -1;
  spin_lock(&nbp.lock);
  if (nb->owner == owner || nbp.held[owner] < share) { set_owner(nb, owner); r = 0; }
  spin_unlock(&nbp.lock);
  return r;
}

void netbuf_held_all(int out[NB_COUNT]) {
  spin_lock(&nbp.lock);
  for (int i = 0; i < NB_COUNT; i++) out[i] = nbp.held[i];
  spin_unlock(&nbp.lock);
}

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
