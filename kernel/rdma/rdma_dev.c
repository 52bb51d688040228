// rdma_dev.c: the RDMA device. Boot-time setup of the transport core's
// device (address from the boot arguments ip= and mac=, the MR interface,
// the QP lookup), the object tables, the random numbers for keys and QPNs
// (random.c), the device/port queries, the neighbour table (IPv4 -> MAC for
// address vectors) and the end of an owner (kv_release_owner).
#include "lib/types.h"
#include "lib/param.h"
#include "lib/riscv.h"
#include "core/printk.h"
#include "core/vm.h"
#include "lib/klib.h"
#include "lib/bootarg.h"
#include "net/net.h"
#include "rdma/rdma.h"
#include "rdma/cma.h"
#include "rdma/ucma.h"
#include "cm/ibcm.h"
#include "dev/random.h"

struct rdma_dev rdma;

// The core's IPv4 Identifications come from the interface's one counter,
// the one ipv4.c's own frames take theirs from [ENC-IP-2].
static uint16 iface_ip_id(void *ctx) { return ip_next_id(); }
struct rdma_pd rdma_pds[RDMA_MAX_PD];
struct rdma_mr rdma_mrs[RDMA_MAX_MR];
struct rdma_cq rdma_cqs[RDMA_MAX_CQ];
struct rdma_qp rdma_qps[RDMA_MAX_QP];
struct rdma_ah rdma_ahs[RDMA_MAX_AH];

// MR keys, QPNs and the neighbour table's victim slot: the kernel's
// ChaCha20 generator (random.c), keyed from virtio-rng (proto-spec/
// security.md [SEC-RAND-6]). Any context.
uint32 rdma_random(void) {
  return random_u32();
}

// Every object of o goes: QPs first (they hold CQs and PDs), then CQs,
// MRs and PDs.
void rdma_release_owner_locked(struct kv_owner *o) {
  rdma_qp_release_all(o);
  rdma_ah_release_all(o);
  rdma_cq_release_all(o);
  rdma_mr_release_all(o);
}

void kv_release_owner(struct kv_owner *o) {
  spin_lock(&rdma.lock);
  rdma_release_owner_locked(o);
  spin_unlock(&rdma.lock);
}

void rdma_init(void) {
  spin_init(&rdma.lock, "rdma");
  const char *ip = bootarg("ip"), *mac = bootarg("mac");
  rdma.ipv4 = ip ? net_parse_ip(ip) : 0;
  if (rdma.ipv4 == 0) rdma.ipv4 = 0x0a000001;                  // 10.0.0.1
  static const uint8 default_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
  if (!mac || net_parse_mac(mac, rdma.mac) < 0) memcpy(rdma.mac, default_mac, 6);
  rdma_net_init();                 // with a NIC: the stack's address and port 4791
  struct rct_dev_attr a;
  memset(&a, 0, sizeof a);
  memcpy(a.mac, rdma.mac, 6);
  a.ipv4 = rdma.ipv4;
  a.flags = RCT_DEV_ROCE_V1;       // QPs may choose RoCE v1 in their AV [ENC-V1-3]
  a.ip_mtu = rdma.ip_mtu;          // [ENC-IP-3]; loopback frames never meet a link
  // How long a plain ACK may wait for a request to go out first (boot
  // argument ack_delay=N us, 0 = at once; the default 300 suits a
  // ping-pong between two guests: a process woken by a WRITE posts its
  // answer in ~0.1-0.3 ms here, far below the RTO) [RESP-ACK-5]. SR: one
  // selective NAK per sack_every out-of-order packets (boot argument
  // sack_every=N, 1 = each) [SR-RESP-11].
  a.ack_delay_ns = bootarg_uint("ack_delay", RDMA_ACK_DELAY_US) * 1000;
  a.sack_every = (uint32)bootarg_uint("sack_every", RDMA_SACK_EVERY);
  a.mr_ops = &rdma_mr_ops;
  a.qp_lookup_any = rdma_qp_lookup_any;   // RC and UD QPs
  a.next_ip_id = iface_ip_id;
  rct_dev_init(&rdma.dev, &a);
  rdma.timer_deadline = RCT_NEVER;
  uv_init();                       // the per-process front end: its exit hook
  rdma_engine_start();
  ucma_init();                     // the rdma_cm's front end: its exit hook
  cma_init();                      // the kernel rdma_cm: its thread sets up QP1 (gsi.c)
  kprintf("rdma: rxe0 gid ::ffff:%d.%d.%d.%d mac %x:%x:%x:%x:%x:%x\n",
          rdma.ipv4 >> 24, (rdma.ipv4 >> 16) & 255, (rdma.ipv4 >> 8) & 255, rdma.ipv4 & 255,
          rdma.mac[0], rdma.mac[1], rdma.mac[2], rdma.mac[3], rdma.mac[4], rdma.mac[5]);
}

// Lock held. The peer's MAC: our own for our address, else the table.
int rdma_neigh_lookup(uint32 ipv4, uint8 mac[6]) {
  if (ipv4 == rdma.ipv4) { memcpy(mac, rdma.mac, 6); return 0; }
  for (int i = 0; i < RDMA_MAX_NEIGH; i++) {
    if (rdma.neigh[i].ipv4 == ipv4) { memcpy(mac, rdma.neigh[i].mac, 6); return 0; }
  }
  return -1;
}

// Lock NOT held; never sleeps. The MAC of ipv4 as far as known now: 0
// (ours, a neighbour, the ARP cache), 1 (not yet: ARP was asked, look
// again later) or -1 (no network to ask).
int rdma_lookup_mac(uint32 ipv4, uint8 mac[6]) {
  spin_lock(&rdma.lock);
  int known = rdma_neigh_lookup(ipv4, mac) == 0;
  spin_unlock(&rdma.lock);
  return known ? 0 : rdma_net_lookup(ipv4, mac);
}

// Lock NOT held; may sleep. The MAC of ipv4 for an AV or an AH: our
// own address, the neighbour table, else ARP through the network stack.
// 0, or -1 (no answer; mac left zero).
int rdma_resolve_mac(uint32 ipv4, uint8 mac[6]) {
  spin_lock(&rdma.lock);
  int known = rdma_neigh_lookup(ipv4, mac) == 0;
  spin_unlock(&rdma.lock);
  if (known || rdma_net_resolve(ipv4, mac) == 0) return 0;
  memset(mac, 0, 6);
  return -1;
}

// Lock NOT held. ip (host order, not 0) is at mac: 0, or -1.
int rdma_set_neigh(uint32 ip, const uint8 mac[6]) {
  if (ip == 0) return -1;
  spin_lock(&rdma.lock);
  int slot = -1;
  for (int i = 0; i < RDMA_MAX_NEIGH && slot < 0; i++)
    if (rdma.neigh[i].ipv4 == ip || rdma.neigh[i].ipv4 == 0) slot = i;
  if (slot < 0) slot = rdma_random() % RDMA_MAX_NEIGH;
  rdma.neigh[slot].ipv4 = ip;
  memcpy(rdma.neigh[slot].mac, mac, 6);
  spin_unlock(&rdma.lock);
  return 0;
}

// The device's attributes and limits.
void kv_query_device(struct rdma_device_info *out) {
  struct rdma_device_info d;
  memset(&d, 0, sizeof d);
  d.node_guid = ((uint64)rdma.mac[0] << 56) | ((uint64)rdma.mac[1] << 48) |
                ((uint64)rdma.mac[2] << 40) | 0xfffe000000ULL |
                ((uint64)rdma.mac[3] << 16) | ((uint64)rdma.mac[4] << 8) | rdma.mac[5];
  d.max_mr_size = RDMA_MAX_MR_SIZE;
  d.page_size_cap = PGSIZE;
  d.vendor_id = 0x5856;          // "XV"
  d.vendor_part_id = 1;
  d.max_qp = RDMA_MAX_QP;
  d.max_qp_wr = RDMA_MAX_QP_WR;
  d.max_sge = RDMA_MAX_SGE;
  d.max_cq = RDMA_MAX_CQ;
  d.max_cqe = RDMA_MAX_CQE;
  d.max_mr = RDMA_MAX_MR;
  d.max_pd = RDMA_MAX_PD;
  d.max_qp_rd_atom = RDMA_MAX_RD;
  d.max_qp_init_rd_atom = RDMA_MAX_RD;
  d.max_res_rd_atom = RDMA_MAX_RD * RDMA_MAX_QP;
  d.atomic_cap = IBV_ATOMIC_HCA;   // atomic across every QP of the node: one device lock [RESP-ATOM-4]
  d.phys_port_cnt = 1;
  *out = d;
}

// The port's active MTU: rdma_mtu=N on the boot line, else 1024.
static enum rct_mtu boot_mtu(void) {
  static const char *const names[] = { "256", "512", "1024", "2048", "4096" };
  const char *v = bootarg("rdma_mtu");
  for (int i = 0; v && i < 5; i++)
    if (strncmp(v, names[i], 5) == 0) return (enum rct_mtu)(RCT_MTU_256 + i);
  return RCT_MTU_1024;
}

// Port port's attributes into *out: 0, or -1 (the device has port 1 only).
int kv_query_port(int port, struct rdma_port_info *out) {
  if (port != 1) return -1;
  struct rdma_port_info pi;
  memset(&pi, 0, sizeof pi);
  pi.state = IBV_PORT_ACTIVE;
  pi.max_mtu = IBV_MTU_4096;
  // 1024 fits a standard 1500-byte Ethernet frame. The E1000 path carries
  // jumbo frames too, but bursts of 4 KiB frames overflow the host socket
  // buffers of the QEMU link (measured: 25 % loss at 0 % link loss), so
  // 4096 stays opt-in: the boot argument rdma_mtu=256|512|1024|2048|4096
  // (bench-rdma compares 1024 with 4096).
  pi.active_mtu = boot_mtu();
  pi.gid_tbl_len = RDMA_GID_TBL_LEN;
  pi.max_msg_sz = 1u << 31;
  pi.ipv4 = rdma.ipv4;
  memcpy(pi.mac, rdma.mac, 6);
  ibcm_gid_from_ipv4(pi.gid, rdma.ipv4);
  *out = pi;
  return 0;
}
