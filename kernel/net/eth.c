// eth.c: Ethernet II, the bottom of the stack. net_rx() is the driver's
// upcall (netdev.h): it checks the frame is for us and dispatches on the
// EtherType through a table that other layers fill with
// eth_register_type() (IPv4 and ARP at boot; 0x8915, RoCE v1, is left for
// the RDMA layer). eth_output() and eth_output_sg() prepend the header
// and hand the frame to netdev_tx(). net_rx_pass_end() (also the driver's)
// runs the hooks of layers that batch what a receive pass brought in
// (eth_on_rx_pass_end).
#include "lib/types.h"
#include "core/lock.h"
#include "core/printk.h"
#include "lib/klib.h"
#include "net/net.h"
#include "net/netdev.h"

#define NETHTYPES 8
const uint8 eth_broadcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

static struct { uint16 type; eth_handler_fn fn; } types[NETHTYPES];
static struct spinlock types_lock = { 0, "eth_types", 0 };

#define NPASSHOOKS 4
static void (*pass_hooks[NPASSHOOKS])(void);
static int npass_hooks;   // published after its slot: the driver reads it without the lock

int eth_on_rx_pass_end(void (*fn)(void)) {
  int r = -1;
  spin_lock(&types_lock);
  if (npass_hooks < NPASSHOOKS) {
    pass_hooks[npass_hooks] = fn;
    __sync_synchronize();
    npass_hooks++;
    r = 0;
  }
  spin_unlock(&types_lock);
  return r;
}

void net_rx_pass_end(void) {
  int n = npass_hooks;
  __sync_synchronize();
  for (int i = 0; i < n; i++) pass_hooks[i]();
}

int eth_register_type(uint16 type, eth_handler_fn fn) {
  int r = -1;
  spin_lock(&types_lock);
  for (int i = 0; i < NETHTYPES; i++) if (types[i].fn && types[i].type == type) goto out;
  for (int i = 0; i < NETHTYPES; i++)
    if (!types[i].fn) { types[i].type = type; types[i].fn = fn; r = 0; break; }
out:
  spin_unlock(&types_lock);
  return r;
}

static eth_handler_fn handler_for(uint16 type) {
  for (int i = 0; i < NETHTYPES; i++)
    if (types[i].fn && types[i].type == type) return types[i].fn;
  return NULL;
}

void net_rx(struct netbuf *nb) {
  net_count(NC_eth_rx);
  uint8 *h = netbuf_pull(nb, ETH_HLEN);
  if (!h) { net_count(NC_eth_short); goto drop; }
  int to_us = memcmp(h, netcfg.mac, 6) == 0 || memcmp(h, eth_broadcast, 6) == 0;
  if (!to_us) { net_count(NC_eth_not_for_us); goto drop; }
  eth_handler_fn fn = handler_for(get16(h + 12));
  if (!fn) { net_count(NC_eth_unknown_type); goto drop; }
  memcpy(nb->src_mac, h + 6, 6);
  fn(nb);                                // the layer above owns nb now
  return;
drop:
  netbuf_free(nb);
}

void eth_push_header(struct netbuf *nb, const uint8 dst[6], uint16 type) {
  uint8 *h = netbuf_push(nb, ETH_HLEN);
  memcpy(h, dst, 6);
  memcpy(h + 6, netcfg.mac, 6);
  put16(h + 12, type);
}

static void free_netbuf_done(void *nb) { netbuf_free(nb); }

void eth_output(struct netbuf *nb, const uint8 dst[6], uint16 type) {
  eth_push_header(nb, dst, type);
  struct netdev_frag f = { (uint64)nb->data, nb->len };
  if (netdev_tx(&f, 1, free_netbuf_done, nb) < 0) {
    net_count(NC_eth_tx_fail);
    netbuf_free(nb);
    return;
  }
  net_count(NC_eth_tx);
}

struct sg_done { void (*done)(void *); void *arg; struct netbuf *hdr; };

// The header buffer carries the caller's callback in its own payload area
// past the headers, so no extra allocation is needed.
static void sg_done(void *p) {
  struct sg_done *d = p;
  struct sg_done copy = *d;
  netbuf_free(copy.hdr);
  if (copy.done) copy.done(copy.arg);
}

int eth_output_sg(struct netbuf *hdr, const uint8 dst[6], uint16 type,
                  const struct netdev_frag *frags, int nfrags,
                  void (*done)(void *), void *arg) {
  uint64 end = (uint64)(hdr->space + sizeof hdr->space);
  struct sg_done *d = (struct sg_done *)((end - sizeof *d) & ~7ull);
  if (nfrags + 1 > NETDEV_MAX_FRAGS || hdr->data + hdr->len > (uint8 *)d) return -1;
  eth_push_header(hdr, dst, type);
  struct netdev_frag all[NETDEV_MAX_FRAGS];
  all[0] = (struct netdev_frag){ (uint64)hdr->data, hdr->len };
  for (int i = 0; i < nfrags; i++) all[i + 1] = frags[i];
  *d = (struct sg_done){ done, arg, hdr };
  if (netdev_tx(all, nfrags + 1, sg_done, d) < 0) {
    netbuf_pull(hdr, ETH_HLEN);          // give the caller back what it passed
    net_count(NC_eth_tx_fail);
    return -1;
  }
  net_count(NC_eth_tx);
  return 0;
}
