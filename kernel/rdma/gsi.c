// gsi.c: QP1, the General Services Interface QP (IBTA 13.5.1), the
// kernel's sender and receiver of MADs over RoCEv2: the communication
// manager's datagrams (kernel/rdma/cma.c runs the IB CM above it).
//
// Owns: a kernel owner (kverbs.h) with a PD, one MR over kernel pages
// (GSI_RECV receive slots of the GRH area and a MAD each, then GSI_SEND
// send slots of a MAD each), a send CQ and a receive CQ, and the UD QP
// with QPN 1 and Q_Key RDMA_GSI_QKEY; the ring of posted receives (a
// receive goes back to the QP as soon as its MAD is taken), the MADs that
// wait for their destination's MAC (ARP), and the GSI counters rdmastat
// shows (struct rdma_dev_stats' gsi_*).
//
// What the core checks before a MAD reaches us: the BTH P_Key (the only
// one, full membership; a frame with another is dropped and counted as
// rx_bad_header, rx.c) and the DETH Q_Key (another is dropped and counted
// on QP1, rx_bad_qkey [UD-QKEY-1]). Here: a MAD is exactly RDMA_MAD_LEN
// bytes and its source an IPv4 address, else it is dropped and counted.
//
// Context: gsi_start, gsi_recv, gsi_send and gsi_work are called by one
// kernel thread only (the CM's, cma.c), which may sleep; nothing here
// sleeps. The completion handler runs under rdma.lock (kverbs.h): it only
// calls the waker the CM thread gave. The counters have that one writer;
// gsi_stats reads them a word at a time.
#include "lib/types.h"
#include "lib/param.h"
#include "lib/klib.h"
#include "core/printk.h"
#include "core/pmem.h"
#include "core/timer.h"
#include "rdma/rdma.h"
#include "rdma/gsi.h"

// Receives kept posted: every connection the CM may open at once can have
// a REQ and a retransmission of it in flight towards us
// (GSI_MAX_BURST_CONNS), and room for DREQs / RTUs of as many more.
#define GSI_MAX_BURST_CONNS 16
#define GSI_RECV   (4 * GSI_MAX_BURST_CONNS)
#define GSI_SEND   GSI_MAX_BURST_CONNS           // MADs in flight out (the CM answers one by one)
#define GSI_WAITQ  GSI_SEND                      // MADs waiting for ARP: each holds its send slot
#define GSI_GRH    40                            // a UD receive's GRH area [UD-RECV-2]
#define GSI_RSLOT  512                           // GRH area + MAD, rounded: 8 slots a page
#define GSI_VA     0x10000ULL                    // the MR's address (its own space)
#define GSI_SEND_OFF ((uint64)GSI_RECV * GSI_RSLOT)
#define GSI_BYTES  (GSI_SEND_OFF + (uint64)GSI_SEND * RDMA_MAD_LEN)
#define GSI_PAGES  ((int)((GSI_BYTES + PGSIZE - 1) / PGSIZE))
#define GSI_ARP_NS      2000000000ULL   // a MAD waits this long for ARP (the verbs' AV wait, rdma_net.c)
#define GSI_ARP_POLL_NS 10000000ULL     // how often a waiting MAD looks at the ARP cache
_Static_assert(GSI_RSLOT >= GSI_GRH + RDMA_MAD_LEN && PGSIZE % GSI_RSLOT == 0, "receive slots tile pages");

struct gsi_wait {               // a MAD whose destination's MAC is not known yet
  int used, slot;               // slot: its send slot, holding the MAD
  uint32 ip, qpn;
  uint64 deadline;
};

static struct {
  struct kv_owner owner;
  struct rdma_pd *pd;
  struct rdma_mr *mr;
  struct rdma_mr_keys keys;
  struct rdma_cq *scq, *rcq;
  struct rdma_qp *qp;
  uint64 pa[GSI_PAGES];
  int send_busy[GSI_SEND];      // 1: the slot holds a MAD waiting or in flight
  struct gsi_wait wait[GSI_WAITQ];
  void (*wake)(void);
  int up;
  uint64 rx_mads, tx_mads, rx_dropped, tx_dropped, arp_waits;
} gsi;

// The completion handler (rdma.lock held, kverbs.h): the CM thread takes it from here.
static void gsi_comp(struct rdma_cq *cq, void *ctx, uint32 flags) {
  if (gsi.wake) gsi.wake();
}

// Byte off of the MR, through its page.
static uint8 *at(uint64 off) { return (uint8 *)(gsi.pa[off / PGSIZE] + off % PGSIZE); }

// Receive slot i back to the QP: 0, or -1.
static int post_recv(int i) {
  struct rct_sge sge = { GSI_VA + (uint64)i * GSI_RSLOT, GSI_GRH + RDMA_MAD_LEN, gsi.keys.lkey };
  struct rct_recv_wr wr = { .wr_id = (uint64)i, .sg_list = &sge, .num_sge = 1 };
  int err;
  return kv_post_recv(&gsi.owner, gsi.qp, &wr, 1, &err) == 1 ? 0 : -1;
}

// QP1 through INIT and RTR to RTS: Q_Key RDMA_GSI_QKEY, P_Key index 0.
static int qp_up(void) {
  struct rdma_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .pkey_index = 0,
                            .qkey = RDMA_GSI_QKEY };
  if (kv_modify_qp(&gsi.owner, gsi.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                   IBV_QP_QKEY) != 0) return -1;
  a = (struct rdma_qp_attr){ .qp_state = IBV_QPS_RTR };
  if (kv_modify_qp(&gsi.owner, gsi.qp, &a, IBV_QP_STATE) != 0) return -1;
  a = (struct rdma_qp_attr){ .qp_state = IBV_QPS_RTS, .sq_psn = 0 };
  return kv_modify_qp(&gsi.owner, gsi.qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

// Process context (the CM thread). QP1 with its receives posted; wake is
// called (under rdma.lock, handler rules) whenever a completion came.
// 0, or -1 (said on the console; the kernel then has no CM).
int gsi_start(void (*wake)(void)) {
  gsi.wake = wake;
  const char *why = "no pages";
  for (int p = 0; p < GSI_PAGES; p++)
    if (!(gsi.pa[p] = (uint64)page_alloc())) goto fail;
  why = "no PD";
  if (!(gsi.pd = kv_alloc_pd(&gsi.owner))) goto fail;
  why = "no MR or CQ";
  gsi.mr = kv_reg_kernel_mr(&gsi.owner, gsi.pd, GSI_VA, GSI_BYTES, gsi.pa, IBV_ACCESS_LOCAL_WRITE, &gsi.keys);
  if (!gsi.mr || kv_create_cq(&gsi.owner, GSI_SEND, gsi_comp, NULL, &gsi.scq) != 0 ||
      kv_create_cq(&gsi.owner, GSI_RECV, gsi_comp, NULL, &gsi.rcq) != 0) goto fail;
  struct kv_qp_init in = { .qp_type = KV_QPT_UD, .pd = gsi.pd, .send_cq = gsi.scq, .recv_cq = gsi.rcq,
                           .max_send_wr = GSI_SEND, .max_recv_wr = GSI_RECV, .max_send_sge = 1,
                           .max_recv_sge = 1, .sq_sig_all = 1, .gsi = 1 };
  why = "no QP with QPN 1";
  if (kv_create_qp(&gsi.owner, &in, &gsi.qp) != 0) goto fail;
  why = "QP1 refused INIT, RTR or RTS";
  if (qp_up() != 0) goto fail;
  why = "QP1 refused its receives";
  for (int i = 0; i < GSI_RECV; i++)
    if (post_recv(i) < 0) goto fail;
  gsi.up = 1;
  return 0;
fail:
  kprintf("gsi: cannot set up QP1: %s; no connection manager\n", why);
  kv_release_owner(&gsi.owner);
  for (int p = 0; p < GSI_PAGES && gsi.pa[p]; p++) page_put(gsi.pa[p]);
  return -1;
}

// The IPv4 source of a received datagram, from its GRH area (20 zero
// bytes, then the IPv4 header [UD-RECV-2]): 0, or -1 if it holds none.
static int grh_ipv4(const uint8 *grh, uint32 *ip) {
  if ((grh[20] >> 4) != 4) return -1;
  *ip = ((uint32)grh[32] << 24) | ((uint32)grh[33] << 16) | ((uint32)grh[34] << 8) | grh[35];
  return 0;
}

// The next received MAD into mad, its source's IPv4 address and QPN: 1,
// or 0 when none waits. Dropped receives (wrong size, no IPv4 source,
// error completions) are counted and skipped; every receive is posted again.
int gsi_recv(uint8 mad[RDMA_MAD_LEN], uint32 *src_ip, uint32 *src_qp) {
  struct rct_wc wc;
  while (gsi.up && kv_poll_cq(&gsi.owner, gsi.rcq, &wc, 1) == 1) {
    int i = (int)wc.wr_id;
    const uint8 *buf = at((uint64)i * GSI_RSLOT);
    int ok = wc.status == RCT_WC_SUCCESS && wc.byte_len == GSI_GRH + RDMA_MAD_LEN &&
             grh_ipv4(buf, src_ip) == 0;
    if (ok) {
      memcpy(mad, buf + GSI_GRH, RDMA_MAD_LEN);
      *src_qp = wc.src_qp;
    }
    if (wc.status != RCT_WC_WR_FLUSH_ERR && post_recv(i) < 0)
      kprintf("gsi: a receive could not be posted again\n");
    if (ok) {
      gsi.rx_mads++;
      return 1;
    }
    gsi.rx_dropped++;
  }
  return 0;
}

// Send slot s's MAD to ip / qpn through a one-time AH on mac: 0, or -1.
static int post_mad(int s, uint32 ip, uint32 qpn, const uint8 mac[6]) {
  struct rdma_ah_attr aa = { .dipv4 = ip, .hop_limit = 64, .port_num = 1 };
  memcpy(aa.dmac, mac, 6);
  struct rdma_ah *ah;
  if (kv_create_ah(&gsi.owner, gsi.pd, &aa, &ah) != 0) return -1;   // mac set: no ARP, no sleep
  struct rct_sge sge = { GSI_VA + GSI_SEND_OFF + (uint64)s * RDMA_MAD_LEN, RDMA_MAD_LEN, gsi.keys.lkey };
  struct kv_ud_send_wr wr = { .wr = { .wr_id = (uint64)s, .opcode = RCT_WR_SEND, .sg_list = &sge,
                                      .num_sge = 1, .send_flags = RCT_SEND_SIGNALED },
                              .ah = ah, .remote_qpn = qpn, .remote_qkey = RDMA_GSI_QKEY };
  int err, n = kv_post_send_ud(&gsi.owner, gsi.qp, &wr, 1, &err);
  kv_destroy_ah(&gsi.owner, ah);                                     // posted sends still go
  return n == 1 ? 0 : -1;
}

// Slot s's MAD goes now, or waits for ARP (ask: it was not queued yet).
// 0: sent or waiting; -1: dropped (counted, slot freed).
static int send_or_wait(int s, uint32 ip, uint32 qpn, uint64 now) {
  uint8 mac[6];
  int r = rdma_lookup_mac(ip, mac);
  if (r == 0 && post_mad(s, ip, qpn, mac) == 0) {
    gsi.tx_mads++;
    return 0;
  }
  for (int w = 0; r == 1 && w < GSI_WAITQ; w++) {
    if (gsi.wait[w].used) continue;
    gsi.wait[w] = (struct gsi_wait){ .used = 1, .slot = s, .ip = ip, .qpn = qpn, .deadline = now + GSI_ARP_NS };
    gsi.arp_waits++;
    return 0;
  }
  gsi.send_busy[s] = 0;
  gsi.tx_dropped++;
  return -1;
}

// mad to QP qpn (the GSI: RDMA_GSI_QPN) at ip: sent now, or queued until
// ARP answers. 0, or -1 (dropped and counted: no send slot, no room to
// wait, no network).
int gsi_send(uint32 ip, uint32 qpn, const uint8 mad[RDMA_MAD_LEN], uint64 now) {
  gsi_work(now);                                   // frees the slots of finished sends
  for (int s = 0; gsi.up && s < GSI_SEND; s++) {
    if (gsi.send_busy[s]) continue;
    gsi.send_busy[s] = 1;
    memcpy(at(GSI_SEND_OFF + (uint64)s * RDMA_MAD_LEN), mad, RDMA_MAD_LEN);
    return send_or_wait(s, ip, qpn, now);
  }
  gsi.tx_dropped++;
  return -1;
}

// Finished sends free their slots; waiting MADs whose MAC came go, those
// past their deadline are dropped. Returns the next time a waiting MAD
// wants a look (~0: none waits).
uint64 gsi_work(uint64 now) {
  struct rct_wc wc;
  while (gsi.up && kv_poll_cq(&gsi.owner, gsi.scq, &wc, 1) == 1) {
    if (wc.status != RCT_WC_SUCCESS) gsi.tx_dropped++;
    gsi.send_busy[(int)wc.wr_id] = 0;
  }
  uint64 next = ~0ULL;
  for (int w = 0; w < GSI_WAITQ; w++) {
    struct gsi_wait *q = &gsi.wait[w];
    if (!q->used) continue;
    uint8 mac[6];
    if (rdma_lookup_mac(q->ip, mac) == 0 || now >= q->deadline) {
      q->used = 0;
      if (now < q->deadline && post_mad(q->slot, q->ip, q->qpn, mac) == 0) {
        gsi.tx_mads++;
        continue;
      }
      gsi.send_busy[q->slot] = 0;
      gsi.tx_dropped++;
      continue;
    }
    if (now + GSI_ARP_POLL_NS < next) next = now + GSI_ARP_POLL_NS;
  }
  return next;
}

// Is ip's MAC known now (a MAD to it would go at once)? 1 or 0; asks ARP if not.
int gsi_peer_known(uint32 ip) {
  uint8 mac[6];
  return rdma_lookup_mac(ip, mac) == 0;
}

// The GSI counters into s's gsi_* fields.
void gsi_stats(struct rdma_dev_stats *s) {
  s->gsi_rx_mads = gsi.rx_mads;
  s->gsi_tx_mads = gsi.tx_mads;
  s->gsi_rx_dropped = gsi.rx_dropped;
  s->gsi_tx_dropped = gsi.tx_dropped;
  s->gsi_arp_waits = gsi.arp_waits;
  if (!gsi.up) return;
  spin_lock(&rdma.lock);
  s->gsi_rx_bad_qkey = gsi.qp->base->cnt.rx_bad_qkey;
  spin_unlock(&rdma.lock);
}
