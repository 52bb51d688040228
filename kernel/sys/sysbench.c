// sysbench.c: benchmark-only kernel paths, the system calls that exist to
// measure the link and the NIC, not to carry applications' traffic:
//   sendzc    a UDP send whose payload the device reads from the caller's
//             pinned pages (nettest's zero-copy mode, bench/net);
//   netblast  one datagram sent count times from the kernel, no system call
//             per datagram (nettest kblast/kburst: the raw link ceiling);
//             to NET_ROCE_SINK_PORT each copy is a RoCEv2 frame whose ICRC
//             is stamped again before it is queued, as the RDMA engine does.
// Both send on a UDP socket of net/socket.c (sysnet.c has the others).
#include "lib/types.h"
#include "lib/param.h"
#include "core/lock.h"
#include "core/proc.h"
#include "lib/klib.h"
#include "fs/file.h"
#include "core/vm.h"
#include "lib/riscv.h"
#include "proc/args.h"
#include "sys/syscall.h"
#include "lib/uapi.h"
#include "net/net.h"
#include "net/netdev.h"
#include "net/socket.h"
#include "transport/wire.h"

static struct spinlock zc_lock;       // sendzc and netblast waiters and their done state

void sysbench_init(void) { spin_init(&zc_lock, "sock_zc"); }

// ---- zero-copy send: the scatter-gather path the RDMA layer uses ----

#define ZC_MAX_PAGES 4          // 8972 bytes span at most 4 pages

struct zc_wait { int done; };

// Pins the user pages behind [buf, buf+n) and describes the payload as
// device fragments, one per page piece (frags[i] lies in page pa[i]).
// Returns the page count (0 when n is 0; the caller uvm_unpins pa after
// the device is done), or -1 with nothing pinned for a bad range.
static int pin_payload(pagetable_t pt, uint64 buf, int n, uint64 pa[ZC_MAX_PAGES],
                       struct netdev_frag frags[ZC_MAX_PAGES]) {
  int npages = n ? uvm_pin(pt, buf, n, pa, ZC_MAX_PAGES) : 0;
  for (uint64 off = 0, i = 0; npages > 0 && off < (uint64)n; i++) {
    uint64 in_page = (buf + off) % PGSIZE;
    uint64 len = PGSIZE - in_page < n - off ? PGSIZE - in_page : n - off;
    frags[i] = (struct netdev_frag){ pa[i] + in_page, len };
    off += len;
  }
  return npages;
}

static void zc_done(void *arg) {
  struct zc_wait *w = arg;
  spin_lock(&zc_lock);
  w->done = 1;
  proc_wakeup(w);
  spin_unlock(&zc_lock);
}

// sendzc(s, buf, n, to): like sendto for a UDP socket, but the device reads
// the payload straight from the caller's pinned pages (one TX descriptor
// per page piece after a header buffer; UDP checksum 0). Returns once the
// device is done with the pages.
int64 sys_sendzc(void) {
  struct sock *s = sock_fd(arg_int(0));
  uint64 buf = arg_addr(1);
  int n = arg_int(2);
  struct net_addr to;
  pagetable_t pt = current()->pagetable;
  if (!s || s->type != SOCK_UDP || n < 0 || n > NET_MAX_UDP_PAYLOAD) return -1;
  if (copy_in(pt, &to, arg_addr(3), sizeof to) < 0 || !netdev_present() || !netcfg.ip) return -1;
  if (!s->port && sock_bind(s, 0) < 0) return -1;
  uint64 pa[ZC_MAX_PAGES];
  struct netdev_frag frags[ZC_MAX_PAGES];
  int npages = pin_payload(pt, buf, n, pa, frags), nfrags = npages;
  if (npages < 0) return -1;
  struct netbuf *hdr = netbuf_alloc_wait();
  int r = -1;
  struct zc_wait w = { 0 };
  uint8 mac[6];
  for (int tries = 0; hdr && tries < 50; tries++) {
    if (udp_output_sg(hdr, s->port, to.ip, to.port, frags, nfrags, zc_done, &w) == 0) { r = n; break; }
    if (arp_resolve_wait(ip_next_hop(to.ip), mac, 1000000000ull) < 0) break;
    netdev_tx_wait(nfrags + 1);
  }
  if (r < 0) {
    if (hdr) netbuf_free(hdr);
  } else {                                // hdr belongs to the stack now
    spin_lock(&zc_lock);
    while (!w.done) proc_sleep(&w, &zc_lock);
    spin_unlock(&zc_lock);
  }
  if (npages > 0) uvm_unpin(pa, npages);
  return r;
}

// ---- netblast: a kernel-side burst sender, in the spirit of Linux pktgen ----
//
// netblast(s, buf, n, to, count) sends one UDP datagram count times: its
// Ethernet + IPv4 + UDP header is built once in a netbuf, the payload
// stays in the caller's pinned pages, and each copy is one netdev_tx of
// the same fragments (header, then page pieces, as the RDMA layer sends;
// UDP checksum 0). A full ring makes it wait for room, not fail, so the
// rate it reaches is what the driver and the emulated link carry, with no
// system call per datagram. Returns the datagrams sent (fewer than count
// only if the process is killed) once the device is done with all of them.
// To NET_ROCE_SINK_PORT the payload is a RoCEv2 frame body and each copy
// pays the sender's ICRC first (struct blast_icrc).

#define NETBLAST_MAX_COUNT (1 << 20)   // datagrams per call

struct blast { int inflight; };        // frames queued whose done() has not run

static void blast_done(void *arg) {
  struct blast *b = arg;
  if (__sync_sub_and_fetch(&b->inflight, 1) > 0) return;
  spin_lock(&zc_lock);                 // the sender sleeps on b under zc_lock
  proc_wakeup(b);
  spin_unlock(&zc_lock);
}

// Prepends Ethernet + IPv4 + UDP headers for a payload of n bytes to hdr.
// A broadcast destination goes to the broadcast MAC; any other waits up to
// a second for ARP. Returns 0, or -1 if the address does not resolve.
static int blast_header(struct netbuf *hdr, uint16 src_port, const struct net_addr *to, int n) {
  uint8 mac[6];
  if (to->ip == 0xffffffff || to->ip == (netcfg.ip | ~netcfg.netmask)) memcpy(mac, eth_broadcast, 6);
  else if (arp_resolve_wait(ip_next_hop(to->ip), mac, 1000000000ull) < 0) return -1;
  udp_push_headers(hdr, src_port, to->ip, to->port, n);
  eth_push_header(hdr, mac, ETHERTYPE_IPV4);
  return 0;
}

// A RoCE blast's payload is BTH, data and ICRC; every copy's ICRC is
// computed again before it is queued, over the headers and the pinned
// pages, as the RDMA engine computes each frame's.
struct blast_icrc {
  uint8 hdr[ETH_HLEN + IPV4_HLEN + UDP_HLEN + BTH_LEN];   // Ethernet to BTH, contiguous
  struct rct_iov seg[ZC_MAX_PAGES];                       // the data, in the pinned pages
  int nseg;
  uint8 *at[ICRC_LEN];                                    // the ICRC's bytes in the pages
};

// The kernel address of payload byte off; off is below the frags' total.
static uint8 *frag_byte(const struct netdev_frag *frags, int nfrags, uint32 off) {
  int i = 0;
  while (i < nfrags - 1 && off >= frags[i].len) off -= frags[i++].len;
  return (uint8 *)(frags[i].pa + off);
}

// Preconditions: eth is the frame's Ethernet + IPv4 + UDP header; frags
// hold its payload of n >= BTH_LEN + ICRC_LEN bytes.
static void blast_icrc_init(struct blast_icrc *ic, const uint8 *eth, const struct netdev_frag *frags,
                            int nfrags, uint32 n) {
  uint32 l4 = ETH_HLEN + IPV4_HLEN + UDP_HLEN, lo = BTH_LEN, hi = n - ICRC_LEN, base = 0;
  memcpy(ic->hdr, eth, l4);
  for (uint32 k = 0; k < BTH_LEN; k++) ic->hdr[l4 + k] = *frag_byte(frags, nfrags, k);
  for (uint32 k = 0; k < ICRC_LEN; k++) ic->at[k] = frag_byte(frags, nfrags, hi + k);
  ic->nseg = 0;
  for (int i = 0; i < nfrags; base += frags[i].len, i++) {
    uint32 end = base + frags[i].len, s = base > lo ? base : lo, e = end < hi ? end : hi;
    if (s < e) ic->seg[ic->nseg++] = (struct rct_iov){ (uint8_t *)(frags[i].pa + s - base), e - s };
  }
}

// The ICRC of the frame's masked headers and data, stored least
// significant byte first in its last four bytes [ICRC-CALC-1] [ICRC-CALC-3].
// Every queued copy holds the same bytes, so rewriting them is harmless.
static void blast_icrc_stamp(struct blast_icrc *ic) {
  uint32 v = rct_icrc_compute(ic->hdr, sizeof ic->hdr, ETH_HLEN, RCT_ENCAP_V2, ic->seg, ic->nseg, 0, 0);
  for (int k = 0; k < ICRC_LEN; k++) *ic->at[k] = (uint8)(v >> (8 * k));
}

#define BLAST_BURST 64        // = RDMA_BUDGET, the RDMA engine's burst

// Queues the frame made of frags count times, sleeping for ring room,
// each copy stamped with its ICRC first if ic is not NULL; returns how
// many were queued, after the device has finished them all.
static int blast_frames(const struct netdev_frag *frags, int nfrags, int count, struct blast_icrc *ic) {
  struct blast b = { 0 };
  int sent = 0, stamped = 0;
  // Doorbells in bursts of up to BLAST_BURST frames, as the RDMA engine
  // rings them (rdma_progress), so the link ceiling and RDMA pay alike.
  while (sent < count) {
    if (proc_killed(current())) break;
    int queued = 0, full = 0;
    netdev_tx_hold();
    while (sent < count && queued < BLAST_BURST) {
      if (ic && !stamped) { blast_icrc_stamp(ic); stamped = 1; }   // once per copy sent
      __sync_fetch_and_add(&b.inflight, 1);          // before done() can run
      if (netdev_tx(frags, nfrags, blast_done, &b) == 0) { sent++; queued++; stamped = 0; continue; }
      __sync_fetch_and_sub(&b.inflight, 1);          // not queued: no done()
      full = 1;
      break;
    }
    netdev_tx_flush();                               // before any sleep
    if (full && netdev_tx_wait(nfrags) < 0) break;
  }
  __sync_fetch_and_add(&net_counters[NC_udp_tx], sent);
  __sync_fetch_and_add(&net_counters[NC_ip_tx], sent);
  __sync_fetch_and_add(&net_counters[NC_eth_tx], sent);
  spin_lock(&zc_lock);
  while (b.inflight > 0) proc_sleep(&b, &zc_lock);
  spin_unlock(&zc_lock);
  return sent;
}

int64 sys_netblast(void) {
  struct sock *s = sock_fd(arg_int(0));
  uint64 buf = arg_addr(1);
  int n = arg_int(2), count = arg_int(4);
  struct net_addr to;
  pagetable_t pt = current()->pagetable;
  if (!s || s->type != SOCK_UDP || n < 0 || n > NET_MAX_UDP_PAYLOAD) return -1;
  if (count < 1 || count > NETBLAST_MAX_COUNT) return -1;
  if (copy_in(pt, &to, arg_addr(3), sizeof to) < 0 || !netdev_present() || !netcfg.ip) return -1;
  int roce = to.port == NET_ROCE_SINK_PORT;
  if (roce && n < BTH_LEN + ICRC_LEN) return -1;
  if (!s->port && sock_bind(s, 0) < 0) return -1;
  uint64 pa[ZC_MAX_PAGES];
  struct netdev_frag frags[1 + ZC_MAX_PAGES];
  int npages = pin_payload(pt, buf, n, pa, frags + 1);
  if (npages < 0) return -1;
  struct netbuf *hdr = netbuf_alloc_wait();
  int r = -1;
  if (hdr && blast_header(hdr, s->port, &to, n) == 0) {
    frags[0] = (struct netdev_frag){ (uint64)hdr->data, hdr->len };
    struct blast_icrc ic;
    if (roce) blast_icrc_init(&ic, hdr->data, frags + 1, npages, n);
    r = blast_frames(frags, 1 + npages, count, roce ? &ic : 0);
  }
  if (hdr) netbuf_free(hdr);
  if (npages > 0) uvm_unpin(pa, npages);
  return r;
}
