// rdma_engine.c: drives the sans-IO transport core. rdma_progress() runs
// the core's expired timers, pulls frames with rct_dev_poll_transmit and
// routes each one by the destination the core gives it (rct_frame.dipv4,
// from the QP's address vector; no header byte is read back): a frame for
// our own IPv4 goes straight back into rct_handle_frame (loopback: two QPs
// of this guest talk without the NIC), any other frame goes to the NIC
// seam (rdma_net.c), which hands received frames to the core itself. After
// moving frames it acts on the events the core recorded
// (rct_dev_next_event: QPs that entered ERR, CQs that got completions or
// overflowed; the cost is per event, not per QP) and re-arms the one ktimer
// to the core's next deadline.
//
// Timers: the core's device-wide timer calls walk every QP; the engine
// instead keeps the QPs that may have a deadline and reads only what
// changed. A QP's deadlines change only when something touches it: work
// posted, a frame for it received (rdma_qp_lookup), a state change, or a
// timer of its own that fired (and a QP can join the core's list of QPs
// with frames to send only through these). A touch marks it dirty
// (rdma_watch). Each pass runs the expired timers of the dirty QPs and of
// those at the top of a min-heap of known deadlines; once the core has no
// frame left to send, the dirty QPs' deadlines are read again and they go
// into the heap, or out of the bookkeeping if they have none. The work is
// per touched QP and O(log n) per deadline: idle QPs cost nothing per
// pass, and busy ones only what they did.
//
// Waiting for a WRITE (uverbs.c's wait_write): a WRITE makes no
// completion at its target, so a process that waits for one polls memory.
// Instead of spinning, it may sleep until the byte it watches changes:
// every frame the core takes in wakes the sleepers on rdma.frame_waiters,
// each re-reads its byte.
//
// Work posted without a doorbell: each pass first asks the front end
// (rdma.ring_intake, uverbs.c) to take in the send rings it has armed,
// so that work leaves with the pass's frames, and asks again once the
// frames have moved: a WR completed by them (loopback ACKs) may have
// emptied a send queue whose ring must now be disarmed.
//
// Who runs it: syscalls that post work (low latency, same hart),
// and the "rdma" kernel thread, woken by the ktimer, by received frames
// and when a syscall or the NIC's receive path stopped at the budget.
// Before a pass that runs an expired timer the thread takes in the frames
// already in the NIC's ring (rdma_net_rx_first), so that an ACK that came
// while the guest was not running stops the timer it answers. Everything
// runs under rdma.lock; the thread drops the lock between budgets (and
// around that receive pass) so interrupts and other harts get in.
#include "lib/types.h"
#include "lib/param.h"
#include "core/proc.h"
#include "proc/lifecycle.h"
#include "core/printk.h"
#include "lib/klib.h"
#include "core/vm.h"
#include "rdma/rdma.h"

static struct rct_frame tx_frame;              // under rdma.lock
static uint8 loop_buf[RDMA_FRAME_MAX + 8] __attribute__((aligned(8)));   // under rdma.lock

// Returns -1 when the NIC's ring is full (stop pulling frames for now).
static int route(const struct rct_frame *f, uint64 now) {
  if (f->dipv4 != rdma.ipv4) {     // the core's address for the frame (v1 and v2)
    if (rdma.nic_send) return rdma.nic_send(f);
    rdma.tx_no_route++;
    return 0;                       // no NIC: the frame is lost, as on a dead link
  }
  // Start the frame so that its payload lands 8-byte aligned: both copies
  // (MR -> frame here, frame -> MR in the responder) then move words.
  uint8 *frame = loop_buf + (8 - f->hdr_len % 8) % 8;
  int len = rct_frame_linearize(f, frame, RDMA_FRAME_MAX);
  if (len < 0) {
    kprintf("rdma: frame of %d bytes does not fit the loopback buffer\n", (int)f->len);
    rdma.tx_too_big++;
    return 0;
  }
  // The frame never left memory: no ICRC check (saves a CRC per frame).
  rct_handle_frame_ex(&rdma.dev, now, frame, (uint64)len, RCT_RX_TRUSTED);
  rdma_frame_arrived();
  return 0;
}

static void timer_fired(void *arg) {
  spin_lock(&rdma.lock);
  rdma.timer_deadline = RCT_NEVER;
  rdma_kick();
  spin_unlock(&rdma.lock);
}

// ---- the heap of known deadlines (lock held) ----

static uint64 key(int i) { return rdma_qps[rdma.heap[i]].deadline; }

static void heap_put(int i, int h) {
  rdma.heap[i] = h;
  rdma_qps[h].watch = 1 + i;
}

static void sift_up(int i) {
  int h = rdma.heap[i];
  while (i > 0 && key((i - 1) / 2) > rdma_qps[h].deadline) {
    heap_put(i, rdma.heap[(i - 1) / 2]);
    i = (i - 1) / 2;
  }
  heap_put(i, h);
}

static void sift_down(int i) {
  int h = rdma.heap[i];
  for (;;) {
    int c = 2 * i + 1;
    if (c >= rdma.nheap) break;
    if (c + 1 < rdma.nheap && key(c + 1) < key(c)) c++;
    if (key(c) >= rdma_qps[h].deadline) break;
    heap_put(i, rdma.heap[c]);
    i = c;
  }
  heap_put(i, h);
}

static void heap_remove(int i) {
  int last = rdma.heap[--rdma.nheap];
  if (i == rdma.nheap) return;
  heap_put(i, last);
  sift_up(i);
  sift_down(rdma_qps[last].watch - 1);
}

// Lock held. Takes slot h out of the heap and the dirty list.
void rdma_unwatch(int h) {
  struct rdma_qp *q = &rdma_qps[h];
  if (q->watch > 0) heap_remove(q->watch - 1);
  if (q->watch < 0) {                          // the last dirty QP takes its place
    int i = -1 - q->watch, last = rdma.dirty[--rdma.ndirty];
    rdma.dirty[i] = last;
    rdma_qps[last].watch = -1 - i;
  }
  q->watch = 0;
}

// Lock held. Slot h was touched: its deadlines may have changed.
void rdma_watch(int h) {
  struct rdma_qp *q = &rdma_qps[h];
  if (q->watch < 0) return;
  rdma_unwatch(h);
  rdma.dirty[rdma.ndirty] = h;
  q->watch = -1 - rdma.ndirty++;
}

// Lock held. The expired timers: the heap's due QPs become dirty (their
// timers change), then every dirty QP's expired timers run.
static void run_timers(uint64 now) {
  while (rdma.nheap > 0 && key(0) <= now) rdma_watch(rdma.heap[0]);
  for (int i = 0; i < rdma.ndirty; i++) {
    struct rct_qp_base *qp = rdma_qps[rdma.dirty[i]].base;
    if (rct_qpb_next_timeout(qp) <= now) rct_qpb_handle_timeout(qp, now);
  }
}

// Lock held. The earliest deadline. With drained (the core has no frame
// to send) the dirty QPs' deadlines are read into the heap and a QP
// without one leaves the bookkeeping; otherwise they stay dirty (a QP
// with frames to send may arm a timer when they go out).
static uint64 next_deadline(int drained) {
  uint64 next = RCT_NEVER;
  for (int i = 0; i < rdma.ndirty;) {
    int h = rdma.dirty[i];
    uint64 t = rct_qpb_next_timeout(rdma_qps[h].base);
    if (!drained) {
      if (t < next) next = t;
      i++;
      continue;
    }
    rdma_unwatch(h);                           // another dirty QP now sits at i
    if (t == RCT_NEVER) continue;
    rdma_qps[h].deadline = t;
    heap_put(rdma.nheap++, h);
    sift_up(rdma.nheap - 1);
  }
  return rdma.nheap > 0 && key(0) < next ? key(0) : next;
}

// A deadline that moved later (or went away) leaves the armed ktimer
// alone: it fires early once, the engine runs and arms the real one. The
// core moves its deadlines with nearly every frame (retransmission timer,
// ACK hold), and re-arming costs a ktimer list walk and a stimecmp write.
static void rearm_timer(int drained) {
  uint64 next = next_deadline(drained);
  if (next >= rdma.timer_deadline) return;
  ktimer_arm(&rdma.timer, next, timer_fired, NULL);
  rdma.timer_deadline = next;
}

// Lock held. Returns 1 if it stopped at the budget with work left, or
// took in work posted without a doorbell after its frames had gone.
int rdma_progress(int budget) {
  uint64 now = clock_ns();
  int moved = 0, drained = 0;
  run_timers(now);
  if (rdma.ring_intake) rdma.ring_intake();   // work posted without a doorbell goes out now
  rdma_net_burst_begin();
  if (rdma_net_retry() == 0) {
    for (;;) {
      if (moved == budget) break;
      if (!rct_dev_poll_transmit(&rdma.dev, now, &tx_frame)) { drained = 1; break; }
      moved++;
      if (route(&tx_frame, now) < 0) break;     // done() kicks us when there is room
    }
  }
  rdma_net_burst_end();
  // The frames moved may have completed WRs (loopback: the ACKs came back
  // in route): a send queue that emptied has its ring disarmed now, or no
  // pass would come to do it; what that takes in goes out at the next pass.
  int taken = rdma.ring_intake ? rdma.ring_intake() : 0;
  rdma_events_drain();
  rearm_timer(drained && taken == 0);
  return moved == budget || taken > 0;
}

// What each kind of core event does (rdma_cq.c, rdma_qp.c); NULL: nothing.
static void (*const event_handlers[RCT_EV_COUNT])(const struct rct_event *) = {
  [RCT_EV_QP_ERR] = rdma_qp_on_event,
  [RCT_EV_CQ_OVERFLOW] = rdma_cq_on_event,
  [RCT_EV_CQ_COMP] = rdma_cq_on_event,
  [RCT_EV_QP_LAST_WQE] = rdma_qp_on_event,
  [RCT_EV_SRQ_LIMIT] = rdma_srq_on_event,
};

// Lock held. Every event the core recorded since the last drain.
void rdma_events_drain(void) {
  struct rct_event ev;
  while (rct_dev_next_event(&rdma.dev, &ev))
    if (event_handlers[ev.type]) event_handlers[ev.type](&ev);
}

void rdma_kick(void) {
  rdma.kick = 1;
  proc_wakeup(&rdma.kick);
}

static void engine_thread(void *arg) {
  spin_lock(&rdma.lock);
  for (;;) {
    // Frames that reached the ring before a timer expired are taken in
    // before it fires: after a pause of this guest (the host did not run
    // it) the retransmission timer and the early probe [REQ-TMO-8] are due
    // and the ACK they wait for sits in the ring, while the driver thread,
    // woken by the same pause's interrupt, waits for this hart.
    if (next_deadline(0) <= clock_ns()) rdma_net_rx_first();   // a timer is due
    rdma.kick = 0;
    if (rdma_progress(RDMA_BUDGET)) {
      spin_unlock(&rdma.lock);    // let interrupts and syscalls in
      proc_yield();
      spin_lock(&rdma.lock);
      continue;
    }
    if (!rdma.kick) proc_sleep(&rdma.kick, &rdma.lock);
  }
}

void rdma_engine_start(void) {
  if (kthread_start("rdma", engine_thread, NULL) < 0) panic("rdma: no slot for the engine thread");
}

// rdma.lock held: the core just took in a frame (it may have placed data).
// Returns 1 if a sleeper on rdma.frame_waiters (uverbs.c's wait_write)
// was woken.
int rdma_frame_arrived(void) {
  if (!rdma.frame_waiters) return 0;
  proc_wakeup(&rdma.frame_waiters);
  return 1;
}
