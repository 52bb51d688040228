// rdma_net.c: RoCEv2 over the network stack's seams (kernel/net/netdev.h,
// kernel/net/net.h).
//
// Out: the core's frames are complete Ethernet/IPv4/UDP/BTH frames, so
// they go straight to the driver with netdev_tx(): fragment 0 is the
// header block, then the payload segments that point into pinned MR pages
// (zero copy), then the pad + ICRC trailer. A TX slot keeps the header and
// trailer and holds a reference on every payload page until the driver's
// done() callback, so deregistering an MR or exiting cannot free a page
// the NIC is still reading. When the ring is full the frame stays in its
// slot and the engine stops pulling frames until a done() frees room.
//
// RoCE v1 frames (EtherType 0x8915, GRH) come from the Ethernet layer's
// type hook and go out the same way as v2 ones.
//
// In: the one place a RoCEv2 frame leaves the IP/UDP receive path is UDP
// port 4791's handler (roce_rx). eth.c has checked the destination MAC,
// ipv4.c the header (version, checksum, Total Length, our address or
// broadcast, no fragment, TTL) and udp.c the UDP length (and a checksum a
// sender filled in; RoCE sends 0). The netbuf records where the frame
// starts (nb->frame, set by net_rx), and the whole frame goes to the core
// once, flagged RCT_RX_IP_CHECKED: it skips what the stack checked and
// does the RoCE-only checks of [RX-ORDER-1] (IHL 5, unicast to our
// address, UDP length = Total Length - 20, ICRC, BTH, ...), counting its
// drops in the device counters (rdmastat); the stack's drops stay in
// netstat's counters. The handlers only put frames
// aside; at the end of the driver's receive pass (or when 32 wait),
// rx_pass_end hands them all to the core under one hold of rdma.lock and
// then runs one engine pass for what they caused (ACKs, READ responses).
// Per frame, that pass and the lock cost as much as the frame's own
// processing (ICRC included), and a burst needs them once.
#include "lib/types.h"
#include "lib/param.h"
#include "lib/riscv.h"
#include "core/proc.h"
#include "core/printk.h"
#include "core/pmem.h"
#include "lib/klib.h"
#include "net/net.h"
#include "net/netdev.h"
#include "rdma/rdma.h"
#include "lib/bootarg.h"

#define TX_SLOTS 512            // above what the NIC ring holds (TX_RING / 3 fragments)
// Payload pages a slot holds: a segment carries at most one MTU (4096
// bytes, one page) and so touches at most two pages.
#define TX_MAX_PAGES (2 * RCT_FRAME_MAX_SEGS)
_Static_assert(4096 <= PGSIZE, "an MTU of payload spans at most two pages");

struct tx_slot {
  struct tx_slot *next;           // in slots_owned or slots_returned while unused
  int nfrags;
  struct netdev_frag frags[RCT_FRAME_MAX_SEGS + 2];
  uint8 hdr[RCT_HDR_MAX];
  uint8 trailer[8];
  uint64 pages[TX_MAX_PAGES];     // payload pages held until done()
  int npages;
};

// The unused slots, in two lists and without a lock of their own: the
// engine allocates under rdma.lock from slots_owned; done() runs in the
// driver thread without rdma.lock and pushes onto slots_returned with a
// compare-and-swap; when slots_owned runs dry the engine takes the whole
// returned list with one exchange. Whole-list taking by a single consumer
// cannot meet the ABA problem of popping from a lock-free stack, and the
// slot pool costs no lock pair (two on every frame, before).
static struct tx_slot tx_slots[TX_SLOTS];
static struct tx_slot *slots_owned;            // under rdma.lock
static struct tx_slot *slots_returned;         // atomics only
static struct tx_slot *stalled;   // under rdma.lock: a frame the ring refused
// The engine waits for ring room or a slot. Written under rdma.lock, read
// by tx_done without it: see wait_for_room.
static volatile int tx_waiting;
uint64 rdma_net_tx_frames, rdma_net_tx_full, rdma_net_rx_frames, rdma_net_rx_bad;

// rdma.lock held.
static struct tx_slot *slot_alloc(void) {
  if (!slots_owned)
    slots_owned = __atomic_exchange_n(&slots_returned, NULL, __ATOMIC_ACQUIRE);
  struct tx_slot *s = slots_owned;
  if (s) slots_owned = s->next;
  return s;
}

// Any context.
static void slot_free(struct tx_slot *s) {
  for (int i = 0; i < s->npages; i++) page_put(s->pages[i]);
  s->npages = 0;
  s->next = __atomic_load_n(&slots_returned, __ATOMIC_RELAXED);
  while (!__atomic_compare_exchange_n(&slots_returned, &s->next, s, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
    ;
}

// Driver thread, no driver lock: the device has read the frame. The
// engine is kicked only if it waits for room, so a busy sender's every
// frame does not also queue on rdma.lock behind the engine.
static void tx_done(void *arg) {
  slot_free((struct tx_slot *)arg);
  __sync_synchronize();            // the freed room before the flag (wait_for_room)
  if (!tx_waiting) return;
  spin_lock(&rdma.lock);
  if (tx_waiting) { tx_waiting = 0; rdma_kick(); }
  spin_unlock(&rdma.lock);
}

// rdma.lock held; `again` found no room. Raise tx_waiting, then try once
// more: a tx_done that freed room before it saw the flag is then seen
// here, and one that runs after it sees the flag and kicks (a Dekker
// pair of fences: no lost wakeup without taking rdma.lock in tx_done).
// Returns again's result; tx_waiting stays up only on failure.
static int wait_for_room(int (*again)(void *), void *arg) {
  tx_waiting = 1;
  __sync_synchronize();
  if (again(arg) < 0) return -1;
  tx_waiting = 0;
  return 0;
}

static int try_alloc(void *out) {
  return (*(struct tx_slot **)out = slot_alloc()) ? 0 : -1;
}

static int try_tx(void *slot) {
  struct tx_slot *s = slot;
  return netdev_tx(s->frags, s->nfrags, tx_done, s);
}

// Build a slot from a core frame: copy header and trailer, hold pages.
static int slot_fill(struct tx_slot *s, const struct rct_frame *f) {
  memcpy(s->hdr, f->hdr, f->hdr_len);
  memcpy(s->trailer, f->trailer, f->trailer_len);
  s->nfrags = 0;
  s->npages = 0;
  s->frags[s->nfrags++] = (struct netdev_frag){ (uint64)s->hdr, f->hdr_len };
  for (int i = 0; i < f->nseg; i++) {
    uint64 base = (uint64)f->seg[i].base;
    if (f->seg[i].len == 0) continue;
    for (uint64 pg = PG_ROUND_DOWN(base); pg < base + f->seg[i].len; pg += PGSIZE) {
      if (s->npages == TX_MAX_PAGES) return -1;
      page_hold(pg);
      s->pages[s->npages++] = pg;
    }
    s->frags[s->nfrags++] = (struct netdev_frag){ base, f->seg[i].len };
  }
  if (f->trailer_len) s->frags[s->nfrags++] = (struct netdev_frag){ (uint64)s->trailer, f->trailer_len };
  return 0;
}

// rdma.lock held. Returns 0 if sent or dropped, -1 if the ring is full
// (the frame waits in `stalled`; call rdma_net_retry before pulling more).
static int net_send(const struct rct_frame *f) {
  struct tx_slot *s = slot_alloc();
  if (!s && wait_for_room(try_alloc, &s) < 0) {
    rdma_net_tx_full++;
    return -1;                      // frame lost; retransmission recovers it
  }
  if (slot_fill(s, f) < 0) { slot_free(s); return 0; }
  if (try_tx(s) == 0 || wait_for_room(try_tx, s) == 0) { rdma_net_tx_frames++; return 0; }
  rdma_net_tx_full++;
  stalled = s;
  return -1;
}

// rdma.lock held. 0 when nothing is stalled any more.
int rdma_net_retry(void) {
  if (!stalled) return 0;
  if (try_tx(stalled) < 0 && wait_for_room(try_tx, stalled) < 0) return -1;
  rdma_net_tx_frames++;
  stalled = NULL;
  return 0;
}

// rdma.lock held: the frames sent between these two reach the NIC with
// one doorbell (netdev_tx_hold). No-ops without a NIC.
static int burst_doorbell = 1;
void rdma_net_burst_begin(void) { if (rdma.nic_send && burst_doorbell) netdev_tx_hold(); }
void rdma_net_burst_end(void) { if (rdma.nic_send && burst_doorbell) netdev_tx_flush(); }

// Received frames set aside until the receive pass ends; driver thread only.
#define GRH_BYTES 40            // RoCE v1: the GRH between Ethernet header and BTH
#define RX_BATCH 32             // of the NETBUF_RX_RESERVE buffers the pool keeps for receiving
static struct rx_waiting {
  struct netbuf *nb;            // owns the frame
  uint8 *frame;                 // its Ethernet header
  uint32 len;
  int may_place;                // not an acknowledgement: it may place data
  uint32 flags;                 // RCT_RX_IP_CHECKED when ipv4.c took it in
} rx_batch[RX_BATCH];
static int rx_nbatch;

// Receive pass (the driver thread, or rdma_net_rx_first's caller): the
// core takes in the waiting frames, then the engine runs once. rdma.lock
// is taken here, never held by the caller.
static void rx_pass_end(void) {
  if (rx_nbatch == 0) return;
  int may_place = 0;
  spin_lock(&rdma.lock);
  // One clock read for the batch: the frames arrived together, and under
  // QEMU each read of the time CSR is a call out of the translated code.
  uint64 now = clock_ns();
  for (int i = 0; i < rx_nbatch; i++) {
    rdma_net_rx_frames++;
    rct_handle_frame_ex(&rdma.dev, now, rx_batch[i].frame, rx_batch[i].len, rx_batch[i].flags);
    may_place |= rx_batch[i].may_place;
  }
  // A process woken for these frames (a ping-pong's answer) should not
  // wait behind our ACK's transmission: the engine thread, or the answer's
  // own post_send, sends what the frames caused, ACK and answer back to
  // back. An acknowledgement places no data: waking a process in
  // rdma_wait_write for it would only cost the answering WRITE behind it a
  // context switch.
  int woke = may_place && rdma_frame_arrived();
  if (woke || rdma_progress(RDMA_BUDGET)) rdma_kick();
  spin_unlock(&rdma.lock);
  struct netbuf *done[RX_BATCH];
  for (int i = 0; i < rx_nbatch; i++) done[i] = rx_batch[i].nb;
  netbuf_free_n(done, rx_nbatch);            // one pool-lock hold for the batch
  rx_nbatch = 0;
}

// Lock held, dropped around the receive pass. Frames already in the NIC's
// ring are taken in now, on the caller's thread (rx_pass_end runs for them
// here), not when the driver thread next gets the hart.
void rdma_net_rx_first(void) {
  if (!rdma.nic_send || !netdev_rx_pending()) return;   // no lock drop for nothing
  spin_unlock(&rdma.lock);
  netdev_rx_poll();
  spin_lock(&rdma.lock);
}

// Receive pass: sets the frame nb holds aside for rx_pass_end (it owns nb
// from here); the frame runs from nb->frame to the end of nb's data, and
// bth is where its BTH starts. A netbuf that did not come through net_rx
// has no recorded start and is dropped (counted: nic_rx_bad).
static void rx_set_aside(struct netbuf *nb, const uint8 *bth, uint32 flags) {
  if (!nb->frame || nb->frame >= nb->data) { rdma_net_rx_bad++; netbuf_free(nb); return; }
  if (rx_nbatch == RX_BATCH) rx_pass_end();
  netbuf_own(nb, NB_rdma, RX_BATCH);         // never refused: the batch holds at most RX_BATCH
  uint32 len = nb->data + nb->len - nb->frame;
  int may_place = nb->data + nb->len > bth && !rct_opcode_is_ack(bth[0]);
  rx_batch[rx_nbatch++] = (struct rx_waiting){ nb, nb->frame, len, may_place, flags };
}

// Receive pass: a UDP datagram for port 4791, data at the BTH; we own nb.
// This is where RoCEv2 frames leave the IP/UDP receive path.
static void roce_rx(struct netbuf *nb, void *arg) {
  rx_set_aside(nb, nb->data, RCT_RX_IP_CHECKED);
}

// Receive pass: a RoCE v1 frame (EtherType 0x8915); data is at the GRH,
// which no IP layer has seen: the core checks all of it.
static void roce_v1_rx(struct netbuf *nb) {
  rx_set_aside(nb, nb->data + GRH_BYTES, 0);
}

// Process context, rdma.lock NOT held: the MAC of a peer for an AV.
int rdma_net_resolve(uint32 ip, uint8 mac[6]) {
  if (!netdev_present()) return -1;
  return arp_resolve_wait(ip, mac, 2000000000ULL);
}

// Any context, rdma.lock NOT held, never sleeps: 0 and the MAC if ARP
// knows ip, 1 if not (ARP is asked), -1 without a NIC.
int rdma_net_lookup(uint32 ip, uint8 mac[6]) {
  if (!netdev_present()) return -1;
  return arp_lookup(ip, mac) ? 0 : 1;
}

// Boot: use the stack's addresses and hook port 4791 when there is a NIC.
void rdma_net_init(void) {
  burst_doorbell = (int)bootarg_uint("txburst", 1);
  for (int i = TX_SLOTS - 1; i >= 0; i--) {
    tx_slots[i].next = slots_owned;
    slots_owned = &tx_slots[i];
  }
  if (!netdev_present() || netcfg.ip == 0) return;
  rdma.ipv4 = netcfg.ip;
  memcpy(rdma.mac, netcfg.mac, 6);
  rdma.ip_mtu = NETDEV_MTU;        // jumbo frames: every path MTU fits
  if (udp_register_port(UDP_PORT_ROCEV2, roce_rx, NULL) < 0) {
    kprintf("rdma: UDP port %d is taken; RoCEv2 over the NIC disabled\n", UDP_PORT_ROCEV2);
    return;
  }
  rdma.nic_send = net_send;
  if (eth_on_rx_pass_end(rx_pass_end) < 0) panic("rdma: no room for a receive-pass hook");
  if (eth_register_type(ETHERTYPE_ROCE, roce_v1_rx) < 0)
    kprintf("rdma: EtherType 0x8915 is taken; RoCE v1 receive disabled\n");
}
