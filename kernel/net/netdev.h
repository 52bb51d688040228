// netdev.h: the seam between the network driver (e1000.c) and the stack.
//
// Data moves across two functions (and net_rx_pass_end, which ends a
// burst of net_rx calls):
//   netdev_tx()  stack -> driver: send one frame given as fragments of
//                physical memory (a header buffer, then payload pages).
//                The driver never copies: it points one TX descriptor at
//                each fragment, EOP on the last. `done(arg)` runs once the
//                device has read every fragment; until then the caller must
//                keep them alive (e.g. pinned user pages for RDMA).
//   net_rx()     driver -> stack: one received frame in a netbuf; the stack
//                owns it from then on and frees it (eth.c implements this).
// Nothing above the driver touches a device register; the other functions
// here only report facts (MAC, link) or wait for ring space.
//
// Contexts: net_rx and every done() run in the driver's kernel thread
// ("e1000"), or net_rx in the caller of netdev_rx_poll; never in interrupt
// context, never two receive passes at once, with no driver lock held; they
// may take spin locks and call netdev_tx, but must not sleep. When done() runs,
// the frame's descriptors are already free, so a sender that found the ring
// full can retry from its done().
#ifndef NETDEV_H
#define NETDEV_H
#include "lib/types.h"

struct netbuf;

struct netdev_frag {
  uint64 pa;        // physical (= kernel virtual, RAM is mapped 1:1) address
  uint32 len;       // bytes, at most NETDEV_FRAG_MAX; a fragment may cross pages
};
#define NETDEV_MAX_FRAGS 24       // fragments in one frame
#define NETDEV_FRAG_MAX  16288    // largest single fragment the device takes
#define NETDEV_MTU       9000     // IP MTU; frames are up to 9018 bytes with
#define NETDEV_MAX_FRAME 9018     //   header and FCS room (jumbo frames)

typedef void (*netdev_done_fn)(void *arg);

// Queues one frame. Returns 0 (done will be called exactly once), or -1
// when the ring has no room for nfrags descriptors, the link is down or the
// arguments are bad (done is not called; the caller still owns everything).
// Any context; never sleeps.
int netdev_tx(const struct netdev_frag *frags, int nfrags, netdev_done_fn done, void *arg);

// Doorbell batching: between netdev_tx_hold() and netdev_tx_flush() the
// frames netdev_tx queues reach the device together, at the flush: one
// tail-register write (on QEMU one exit to the device model) for a burst
// instead of one per frame. Holds nest, from any context; every hold must
// be flushed before its caller sleeps or returns, or the ring stalls. A
// frame another hart queues meanwhile waits for the same flush.
void netdev_tx_hold(void);
void netdev_tx_flush(void);

// Upcall for each good received frame; implemented by the stack (eth.c).
void net_rx(struct netbuf *nb);
// Upcall at the end of each receive pass that passed frames up: a layer
// that put received frames aside (to serve a burst with one lock hold and
// one pass of its own work) finishes them now (eth.c: net_rx_pass_end).
void net_rx_pass_end(void);

// Whether the receive ring holds a received frame not yet taken in (a
// racy read, for deciding whether to poll). Any context.
int netdev_rx_pending(void);
// Process or kthread context, no lock held: takes in the frames already
// in the receive ring now (net_rx, then net_rx_pass_end) instead of when
// the driver thread next runs; when that thread's pass is running, leaves
// them to it. Returns 1 if it ran a pass.
int netdev_rx_poll(void);

// Process or kthread context: sleeps until nfrags descriptors are free.
// Returns 0, or -1 if there is no device.
int netdev_tx_wait(int nfrags);

int  netdev_present(void);
void netdev_mac(uint8 mac[6]);    // the MAC the device reports (EEPROM)
int  netdev_link_up(void);

// Driver statistics for netstat (counts since boot).
// Interrupt moderation classes (e1000.c picks one per window of traffic;
// FIXED when boot argument itr=N sets ITR).
enum netdev_itr_class { NETDEV_ITR_LOWEST, NETDEV_ITR_LOW, NETDEV_ITR_BULK, NETDEV_ITR_CLASSES,
                        NETDEV_ITR_FIXED = NETDEV_ITR_CLASSES };

struct netdev_stats {
  uint64 interrupts, rx_frames, tx_frames, rx_bytes, tx_bytes;
  uint64 rx_errors, rx_no_buf, rx_missed, tx_ring_full;
  uint64 tx_doorbells;         // TDT writes (one per frame, or per netdev_tx_hold burst)
  uint64 max_frames_per_irq;
  uint64 itr;                  // interrupt throttle now, 256 ns units
  uint64 itr_class;            // enum netdev_itr_class
  uint64 itr_changes;          // times adaptive moderation reprogrammed ITR
  uint64 itr_windows[NETDEV_ITR_CLASSES];   // windows classified into each class
};
void netdev_get_stats(struct netdev_stats *st);

#endif
