// e1000.c: the Intel 82540EM network driver, the lower half of netdev.h.
//
// Rings: TX_RING legacy transmit descriptors and RX_RING receive
// descriptors in static memory (RAM is mapped 1:1, so an address is both
// virtual and physical). Each receive descriptor owns one 4096-byte buffer,
// a page from the page allocator (RCTL.BSEX + BSIZE); a jumbo frame (up to 9018 bytes, RCTL.LPE) spans
// several descriptors and ends at the one with EOP. Transmit is
// scatter-gather: one descriptor per fragment of the caller's frame; the
// tail register (the doorbell) is written per frame, or once per burst
// between netdev_tx_hold and netdev_tx_flush.
//
// Interrupts: the handler only reads ICR (which acknowledges it), notes the
// link state and wakes the driver thread; the thread reaps finished
// transmissions (running their done callbacks) and received frames (copied
// into netbufs, taken from the pool together for the frames ready in the
// ring, and passed up with net_rx). ITR caps the interrupt rate so a
// burst of frames costs a few interrupts, not one per frame; by default
// the thread picks ITR per window of traffic (itr_adapt: a ping-pong gets
// no moderation, a stream gets 250 us), boot argument itr=N fixes it. A receive pass
// has one owner at a time (rx_busy): the thread, or a caller of
// netdev_rx_poll that wants the frames already in the ring taken in now.
#include "lib/types.h"
#include "lib/param.h"
#include "core/lock.h"
#include "core/proc.h"
#include "proc/lifecycle.h"
#include "core/printk.h"
#include "core/timer.h"
#include "lib/klib.h"
#include "core/pmem.h"
#include "dev/irq.h"
#include "dev/pci.h"
#include "lib/bootarg.h"
#include "net/net.h"
#include "net/netdev.h"
#include "net/e1000.h"
#include "net/e1000_regs.h"

#define TX_RING 1024           // ~340 RoCE frames of 3 fragments: a 256-packet window never waits for room
#define RX_RING 1024           // 4 MiB of buffers: rides out a guest descheduled by a busy host
#define RX_BUF  4096
#define RX_STASH (NETBUF_RX_RESERVE / 2)   // netbufs taken at once for frames ready in the ring: half the pool's receive reserve
#define ITR_WINDOW_NS 1000000  // adaptive moderation classifies windows of at least 1 ms

// Adaptive moderation classes, tried in order: the first whose limits the
// last window stayed within gives ITR (256 ns units); bulk, the last, has
// no limits and takes every window the others do not. The classes follow
// the Intel 8254x driver's dynamic mode (lowest latency, low latency,
// bulk); their limits are ours. A ping-pong carries a few frames per
// interrupt at a few MB/s and pays for every microsecond of throttle; a
// stream carries many frames per interrupt or tens of MB/s and saves an
// interrupt (a VM exit and a thread wakeup) per frame. On QEMU every ITR
// write is a VM exit too, so ITR is written only when the class changes.
struct itr_class {
  uint32 itr;
  uint32 max_frames_per_irq;   // frames both ways per interrupt in the window
  uint32 max_bytes_per_ms;     // bytes both ways per millisecond
};
static const struct itr_class itr_classes[NETDEV_ITR_CLASSES] = {
  [NETDEV_ITR_LOWEST] = { 0,   4,          24 * 1024 },   // no moderation
  [NETDEV_ITR_LOW]    = { 488, 16,         48 * 1024 },   // 125 us, at most 8,000 interrupts/s
  [NETDEV_ITR_BULK]   = { 977, 0, 0 },                    // 250 us, at most 4,000 interrupts/s
};

static struct e1000_tx_desc tx_ring[TX_RING] __attribute__((aligned(4096)));
static struct e1000_rx_desc rx_ring[RX_RING] __attribute__((aligned(4096)));
static uint8 *rx_bufs[RX_RING];      // one page each, allocated only when a NIC is found

struct tx_slot {               // per descriptor; meaningful at a frame's first one
  uint16 eop;                  // index of the frame's last descriptor
  uint16 nfrags;
  netdev_done_fn done;
  void *arg;
};

static struct {
  volatile uint32 *regs;
  int present;
  uint8 mac[6];
  int link_up;
  // transmit, under tx_lock
  struct spinlock tx_lock;
  struct tx_slot tx[TX_RING];
  uint32 tx_tail;              // next descriptor to fill
  uint32 tx_clean;             // first descriptor not yet reaped
  uint32 tx_used;              // descriptors owned by the device
  int tx_waiting;              // senders asleep in netdev_tx_wait
  int tx_hold;                 // netdev_tx_hold depth: TDT is written at the flush
  int tx_dirty;                // descriptors queued since TDT was last written
  // receive, only by the owner of the receive pass (rx_busy)
  uint32 rx_next;
  uint32 rx_unreturned;        // descriptors taken since RDT was last written
  struct netbuf *rx_partial;   // frame being assembled from several descriptors
  struct netbuf *rx_stash[RX_STASH];   // taken for the frames ready in the ring, one lock hold
  int rx_nstash;
  int rx_partial_bad;
  // the driver thread's wakeup and the receive pass's owner, under work_lock
  struct spinlock work_lock;
  int work;
  int rx_busy;                 // a receive pass runs (the thread's or netdev_rx_poll's)
  struct netdev_stats st;
  // adaptive moderation, only by the driver thread
  int itr_fixed;               // boot argument itr=N: never reprogrammed
  uint64 win_start_ns, win_frames, win_bytes, win_irqs;   // counters at the window's start
} nic;

static uint32 rd(uint32 off) { return nic.regs[off / 4]; }
static void wr(uint32 off, uint32 v) { nic.regs[off / 4] = v; }

static uint16 eeprom_read(int word) {
  wr(E1000_EERD, ((uint32)word << EERD_ADDR_SHIFT) | EERD_START);
  for (int i = 0; i < 100000; i++) {
    uint32 v = rd(E1000_EERD);
    if (v & EERD_DONE) return v >> EERD_DATA_SHIFT;
  }
  panic("e1000: EEPROM read of word %d timed out", word);
}

static void read_mac(void) {
  for (int i = 0; i < 3; i++) {
    uint16 w = eeprom_read(i);
    nic.mac[2 * i] = w & 0xff;
    nic.mac[2 * i + 1] = w >> 8;
  }
  uint32 ral = nic.mac[0] | nic.mac[1] << 8 | nic.mac[2] << 16 | (uint32)nic.mac[3] << 24;
  wr(E1000_RAL0, ral);
  wr(E1000_RAH0, nic.mac[4] | nic.mac[5] << 8 | RAH_AV);
}

static void rx_setup(void) {
  for (int i = 0; i < RX_RING; i++) {
    if (!(rx_bufs[i] = page_alloc())) panic("e1000: no memory for RX buffer %d", i);
    rx_ring[i].addr = (uint64)rx_bufs[i];
    rx_ring[i].status = 0;
  }
  for (int i = 0; i < 128; i++) wr(E1000_MTA + 4 * i, 0);
  wr(E1000_RDBAL, (uint32)(uint64)rx_ring);
  wr(E1000_RDBAH, (uint32)((uint64)rx_ring >> 32));
  wr(E1000_RDLEN, sizeof rx_ring);
  wr(E1000_RDH, 0);
  wr(E1000_RDT, RX_RING - 1);        // the device owns all but one descriptor
  wr(E1000_RDTR, 0);                 // no per-frame delay: ITR does the moderation
  wr(E1000_RADV, 0);
  // Promiscuous (UPE, MPE): the device filters nothing, eth.c decides and
  // counts every frame it refuses (eth_not_for_us), so each frame the link
  // delivers shows up in some counter.
  wr(E1000_RCTL, RCTL_EN | RCTL_UPE | RCTL_MPE | RCTL_BAM | RCTL_LPE | RCTL_BSEX |
                 RCTL_BSIZE_4096 | RCTL_SECRC);
}

static void tx_setup(void) {
  memset(tx_ring, 0, sizeof tx_ring);
  wr(E1000_TDBAL, (uint32)(uint64)tx_ring);
  wr(E1000_TDBAH, (uint32)((uint64)tx_ring >> 32));
  wr(E1000_TDLEN, sizeof tx_ring);
  wr(E1000_TDH, 0);
  wr(E1000_TDT, 0);
  wr(E1000_TIDV, 0);
  wr(E1000_TADV, 0);
  wr(E1000_TIPG, 10 | 8 << 10 | 6 << 20);
  wr(E1000_TCTL, TCTL_EN | TCTL_PSP | 0x10 << TCTL_CT_SHIFT | 0x40 << TCTL_COLD_SHIFT);
}

// ---- transmit ----

// tx_lock held: the descriptors written so far go to the device, one TDT
// write (counted: dev_tx_doorbells).
static void tx_doorbell(void) {
  __sync_synchronize();              // descriptors before the doorbell
  wr(E1000_TDT, nic.tx_tail);
  nic.st.tx_doorbells++;
}

int netdev_tx(const struct netdev_frag *frags, int nfrags, netdev_done_fn done, void *arg) {
  if (!nic.present || nfrags < 1 || nfrags > NETDEV_MAX_FRAGS) return -1;
  for (int i = 0; i < nfrags; i++)
    if (frags[i].len == 0 || frags[i].len > NETDEV_FRAG_MAX) return -1;
  spin_lock(&nic.tx_lock);
  if (nic.tx_used + nfrags > TX_RING - 1) {
    nic.st.tx_ring_full++;
    spin_unlock(&nic.tx_lock);
    return -1;
  }
  uint32 first = nic.tx_tail, i = first, bytes = 0;
  for (int k = 0; k < nfrags; k++) {
    struct e1000_tx_desc *d = &tx_ring[i];
    d->addr = frags[k].pa;
    d->length = frags[k].len;
    d->cmd = TXD_CMD_IFCS | (k == nfrags - 1 ? TXD_CMD_EOP | TXD_CMD_RS : 0);
    d->status = 0;
    bytes += frags[k].len;
    if (k < nfrags - 1) i = (i + 1) % TX_RING;
  }
  nic.tx[first] = (struct tx_slot){ .eop = i, .nfrags = nfrags, .done = done, .arg = arg };
  nic.tx_tail = (i + 1) % TX_RING;
  nic.tx_used += nfrags;
  nic.st.tx_frames++;
  nic.st.tx_bytes += bytes;
  if (nic.tx_hold) {
    nic.tx_dirty = 1;
  } else {
    tx_doorbell();
  }
  spin_unlock(&nic.tx_lock);
  return 0;
}

void netdev_tx_hold(void) {
  spin_lock(&nic.tx_lock);
  nic.tx_hold++;
  spin_unlock(&nic.tx_lock);
}

void netdev_tx_flush(void) {
  spin_lock(&nic.tx_lock);
  if (nic.tx_hold > 0 && --nic.tx_hold == 0 && nic.tx_dirty) {
    nic.tx_dirty = 0;
    tx_doorbell();
  }
  spin_unlock(&nic.tx_lock);
}

// Driver thread: retires frames the device has sent, then runs their
// callbacks with no lock held.
static void tx_reap(void) {
  struct tx_slot finished[32];
  for (;;) {
    int n = 0;
    spin_lock(&nic.tx_lock);
    while (n < (int)ARRAY_LEN(finished) && nic.tx_used > 0) {
      struct tx_slot *s = &nic.tx[nic.tx_clean];
      if (!(tx_ring[s->eop].status & TXD_STAT_DD)) break;
      finished[n++] = *s;
      nic.tx_used -= s->nfrags;
      nic.tx_clean = (s->eop + 1) % TX_RING;
    }
    if (n > 0 && nic.tx_waiting) proc_wakeup(&nic.tx_used);
    spin_unlock(&nic.tx_lock);
    for (int k = 0; k < n; k++)
      if (finished[k].done) finished[k].done(finished[k].arg);
    if (n < (int)ARRAY_LEN(finished)) return;
  }
}

int netdev_tx_wait(int nfrags) {
  if (!nic.present) return -1;
  spin_lock(&nic.tx_lock);
  while (nic.tx_used + nfrags > TX_RING - 1) {
    nic.tx_waiting++;
    proc_sleep(&nic.tx_used, &nic.tx_lock);
    nic.tx_waiting--;
  }
  spin_unlock(&nic.tx_lock);
  return 0;
}

// ---- receive ----

// Receive pass: a netbuf for the next frame. The first call of a run
// takes one for each ready descriptor (up to RX_STASH) under one hold of
// the pool lock instead of one hold per frame; a ping-pong's single frame
// still takes exactly one. NULL if the pool is empty.
static struct netbuf *rx_netbuf(void) {
  if (nic.rx_nstash == 0) {
    int ready = 1;
    while (ready < RX_STASH && (rx_ring[(nic.rx_next + ready) % RX_RING].status & RXD_STAT_DD))
      ready++;
    nic.rx_nstash = netbuf_alloc_n(nic.rx_stash, ready);
    if (nic.rx_nstash == 0) return NULL;
  }
  return nic.rx_stash[--nic.rx_nstash];
}

// End of a receive pass: the netbufs taken and not used (a frame of
// several descriptors needs only one) go back to the pool.
static void rx_unstash(void) {
  netbuf_free_n(nic.rx_stash, nic.rx_nstash);
  nic.rx_nstash = 0;
}

// Adds one descriptor's bytes to the frame being assembled; at EOP passes
// a good frame up. Returns the number of frames passed up (0 or 1).
static int rx_take(struct e1000_rx_desc *d, uint8 *buf) {
  if (!nic.rx_partial && !nic.rx_partial_bad) {
    nic.rx_partial = rx_netbuf();
    if (!nic.rx_partial) { nic.st.rx_no_buf++; net_count(NC_netbuf_none); nic.rx_partial_bad = 1; }
  }
  struct netbuf *nb = nic.rx_partial;
  if (d->errors && nb) { nic.st.rx_errors++; nic.rx_partial_bad = 1; }
  if (nb && !nic.rx_partial_bad) {
    if (nb->len + d->length > NETBUF_DATA) { nic.st.rx_errors++; nic.rx_partial_bad = 1; }
    else { memcpy(nb->data + nb->len, buf, d->length); nb->len += d->length; }
  }
  if (!(d->status & RXD_STAT_EOP)) return 0;
  int bad = nic.rx_partial_bad;
  nic.rx_partial = NULL;
  nic.rx_partial_bad = 0;
  if (bad) {                         // counted above: no buffer, or a device error
    if (nb) netbuf_free(nb);
    return 0;
  }
  nic.st.rx_frames++;
  nic.st.rx_bytes += nb->len;
  net_rx(nb);
  return 1;
}

// Buffers go back to the device RX_RETURN at a time, not at the end of
// every pass: the device always keeps RX_RING - RX_RETURN of them, and on
// QEMU an RDT write costs tens of microseconds (it flushes the backend's
// queue and wakes the I/O thread), which a ping-pong paid once per frame.
#define RX_RETURN 64

static int rx_reap(void) {
  int frames = 0;
  for (;;) {
    struct e1000_rx_desc *d = &rx_ring[nic.rx_next];
    if (!(d->status & RXD_STAT_DD)) break;
    __sync_synchronize();            // status before the rest of the descriptor
    frames += rx_take(d, rx_bufs[nic.rx_next]);
    d->status = 0;
    nic.rx_next = (nic.rx_next + 1) % RX_RING;
    if (++nic.rx_unreturned == RX_RETURN) {
      nic.rx_unreturned = 0;
      wr(E1000_RDT, (nic.rx_next + RX_RING - 1) % RX_RING);
    }
  }
  return frames;
}

// ---- interrupt and driver thread ----

static void e1000_interrupt(void *unused) {
  uint32 icr = rd(E1000_ICR);
  if (icr == 0) return;
  nic.st.interrupts++;
  if (icr & ICR_LSC) nic.link_up = (rd(E1000_STATUS) & STATUS_LU) != 0;
  spin_lock(&nic.work_lock);
  nic.work = 1;
  proc_wakeup(&nic.work);
  spin_unlock(&nic.work_lock);
}

// The owner of the receive pass (rx_busy set): takes in every frame in
// the ring and ends the pass upward.
static void rx_pass(void) {
  int frames = rx_reap();
  rx_unstash();
  if (frames) net_rx_pass_end();
  if ((uint64)frames > nic.st.max_frames_per_irq) nic.st.max_frames_per_irq = frames;
}

// wake: the pass was netdev_rx_poll's, and the driver thread (the only
// sleeper on nic.work) may wait for it to end.
static void rx_pass_done(int wake) {
  spin_lock(&nic.work_lock);
  nic.rx_busy = 0;
  if (wake) proc_wakeup(&nic.work);
  spin_unlock(&nic.work_lock);
}

static uint64 frames_both(void) { return nic.st.rx_frames + nic.st.tx_frames; }
static uint64 bytes_both(void) { return nic.st.rx_bytes + nic.st.tx_bytes; }

static void itr_window_start(uint64 now) {
  nic.win_start_ns = now;
  nic.win_frames = frames_both();
  nic.win_bytes = bytes_both();
  nic.win_irqs = nic.st.interrupts;
}

static int itr_classify(uint64 frames, uint64 bytes, uint64 irqs, uint64 ns) {
  if (irqs == 0) irqs = 1;           // frames taken in by netdev_rx_poll alone
  if (ns > 1000000000) ns = 1000000000;   // an idle second is as idle as a day (no overflow)
  for (int c = 0; c < NETDEV_ITR_CLASSES - 1; c++) {
    const struct itr_class *k = &itr_classes[c];
    if (frames <= k->max_frames_per_irq * irqs && bytes * 1000000 <= k->max_bytes_per_ms * ns)
      return c;
  }
  return NETDEV_ITR_BULK;
}

// Driver thread, after a pass: once the window is ITR_WINDOW_NS old,
// classifies what it carried and reprograms ITR if the class changed.
static void itr_adapt(void) {
  uint64 now = clock_ns();
  if (nic.itr_fixed || now - nic.win_start_ns < ITR_WINDOW_NS) return;
  int c = itr_classify(frames_both() - nic.win_frames, bytes_both() - nic.win_bytes,
                       nic.st.interrupts - nic.win_irqs, now - nic.win_start_ns);
  nic.st.itr_windows[c]++;
  if (c != (int)nic.st.itr_class) {
    nic.st.itr_class = c;
    nic.st.itr = itr_classes[c].itr;
    nic.st.itr_changes++;
    wr(E1000_ITR, nic.st.itr);
  }
  itr_window_start(now);
}

static void e1000_thread(void *unused) {
  for (;;) {
    spin_lock(&nic.work_lock);
    while (!nic.work || nic.rx_busy) proc_sleep(&nic.work, &nic.work_lock);
    nic.work = 0;
    nic.rx_busy = 1;
    spin_unlock(&nic.work_lock);
    tx_reap();
    rx_pass();
    // MPC: the 8254x manual has it clear on read, but QEMU's E1000 keeps
    // a running total, so the register is the count (a sum of reads would
    // count every miss again on each pass).
    nic.st.rx_missed = rd(E1000_MPC);
    rx_pass_done(0);
    itr_adapt();
  }
}

int netdev_rx_pending(void) {
  return nic.present && (rx_ring[nic.rx_next].status & RXD_STAT_DD) != 0;
}

int netdev_rx_poll(void) {
  if (!netdev_rx_pending()) return 0;
  spin_lock(&nic.work_lock);
  int mine = !nic.rx_busy;
  nic.rx_busy = 1;
  spin_unlock(&nic.work_lock);
  if (!mine) return 0;               // the thread's pass takes them
  rx_pass();
  rx_pass_done(1);
  return 1;
}

int e1000_init(void) {
  struct pci_dev *pd = pci_find(E1000_VENDOR, E1000_DEVICE);
  if (!pd || !pd->bar[0]) { kprintf("e1000: no device\n"); return -1; }
  nic.regs = (volatile uint32 *)pd->bar[0];
  spin_init(&nic.tx_lock, "e1000_tx");
  spin_init(&nic.work_lock, "e1000_work");
  wr(E1000_IMC, 0xffffffff);
  wr(E1000_CTRL, rd(E1000_CTRL) | CTRL_RST);
  for (volatile int i = 0; i < 100000 && (rd(E1000_CTRL) & CTRL_RST); i++)
    ;
  wr(E1000_IMC, 0xffffffff);
  wr(E1000_CTRL, rd(E1000_CTRL) | CTRL_SLU);
  read_mac();
  tx_setup();
  rx_setup();
  nic.itr_fixed = bootarg("itr") != NULL;   // itr=N: fixed moderation, 256 ns units
  nic.st.itr_class = nic.itr_fixed ? NETDEV_ITR_FIXED : NETDEV_ITR_LOWEST;
  nic.st.itr = nic.itr_fixed ? (uint32)bootarg_uint("itr", 0) : itr_classes[NETDEV_ITR_LOWEST].itr;
  wr(E1000_ITR, nic.st.itr);
  itr_window_start(clock_ns());
  nic.link_up = (rd(E1000_STATUS) & STATUS_LU) != 0;
  nic.present = 1;
  if (kthread_start("e1000", e1000_thread, NULL) < 0) panic("e1000: no thread slot");
  irq_register(pd->irq, e1000_interrupt, NULL);
  rd(E1000_ICR);
  wr(E1000_IMS, ICR_TXDW | ICR_LSC | ICR_RXDMT0 | ICR_RXO | ICR_RXT0);
  kprintf("e1000: mac %x:%x:%x:%x:%x:%x link %s irq %d itr %s%d\n", nic.mac[0], nic.mac[1],
          nic.mac[2], nic.mac[3], nic.mac[4], nic.mac[5], nic.link_up ? "up" : "down",
          pd->irq, nic.itr_fixed ? "" : "adaptive from ", (int)nic.st.itr);
  return 0;
}

int netdev_present(void) { return nic.present; }
void netdev_mac(uint8 mac[6]) { memcpy(mac, nic.mac, 6); }
int netdev_link_up(void) { return nic.present && (nic.link_up = (rd(E1000_STATUS) & STATUS_LU) != 0); }
void netdev_get_stats(struct netdev_stats *st) { *st = nic.st; }
