// net.h: what every layer of the network stack shares: the packet buffer
// (netbuf.c), byte-order helpers, the stack's addresses, and the drop
// counters (net.c). One file per layer implements the rest:
//   eth.c   Ethernet II: dispatch by EtherType, frame output
//   arp.c   ARP: cache with expiry, pending queue, replies
//   ipv4.c  IPv4: header check, our-address check, output
//   icmp.c  ICMP echo (ping both ways)
//   udp.c   UDP: dispatch by port, checksums
//   socket.c  UDP/ICMP sockets: table, receive queues, file ops (socket.h);
//             the network system calls are sys/sysnet.c, sys/sysbench.c
//
// Buffer ownership: a netbuf has exactly one owner. A receive layer either
// passes the buffer up (the next layer owns it) or frees it at its single
// exit; an output function always consumes the buffer it is given.
// Receive layers strip headers with netbuf_pull, which only moves `data`:
// the Ethernet, IPv4 and UDP headers stay in place just before it, and
// net_rx records where the frame starts (nb->frame), so a layer above that
// needs the whole frame (RoCE: the ICRC covers the IP and UDP headers)
// takes frame..data+len without recomputing any header's length.
#ifndef NET_H
#define NET_H
#include "lib/types.h"
#include "net/netdev.h"

// ---- packet buffers ----
// Room to prepend Ethernet + IPv4 + UDP headers (128), plus 2 so that a
// frame received at nb->data ends its 14-byte Ethernet header 8-aligned:
// the IPv4 header is then word-aligned, and a RoCEv2 payload (after 54
// header bytes, 70 with a RETH) is 8-aligned like the MR it is copied to,
// so that copy moves aligned words instead of shifting every one.
#define NETBUF_HEADROOM (128 + 2)
#define NETBUF_DATA     9216    // a whole jumbo frame
#define NNETBUF         1024    // 9.6 MiB: a slow reader may queue hundreds (socket.c)
#define NETBUF_RX_RESERVE 64    // senders leave these for the receive path
// Socket receive queues together hold at most half the pool. The other
// half is the receive path's: frames in flight through the stack, the RDMA
// engine's receive batch (RX_BATCH, rdma_net.c), ARP's pending frames and
// senders' frames waiting for the TX ring. So no number of unread sockets
// can stop the NIC from receiving or another process from sending.
#define NETBUF_SOCK_SHARE (NNETBUF / 2)

// Who holds a netbuf; the pool counts each holder's buffers (netstat
// `netbufs_<owner>`), and netbuf_own refuses an owner past its share.
#define NETBUF_OWNERS(X) X(free) X(rx) X(tx) X(sock) X(rdma)
enum netbuf_owner {
#define NB_ENUM(name) NB_##name,
  NETBUF_OWNERS(NB_ENUM)
#undef NB_ENUM
  NB_COUNT
};
extern const char *netbuf_owner_names[NB_COUNT];

struct netbuf {
  struct netbuf *next;          // link in whichever queue owns it
  uint8 *data;                  // first valid byte
  uint32 len;                   // valid bytes
  // Set by receive layers for the layers above (host byte order):
  uint8 *frame;                 // net_rx: the Ethernet header (NULL on output)
  uint32 src_ip, dst_ip;
  uint16 src_port, dst_port;
  uint8 src_mac[6];
  uint8 owner;                  // enum netbuf_owner
  uint8 space[NETBUF_HEADROOM + NETBUF_DATA] __attribute__((aligned(8)));
};

void netbuf_init(void);
struct netbuf *netbuf_alloc(void);      // any context; NULL if none is free (owner rx)
// Any context: up to n buffers (owner rx) under one lock hold; returns how many.
int netbuf_alloc_n(struct netbuf **out, int n);
struct netbuf *netbuf_alloc_wait(void); // process context: sleeps; keeps the RX reserve (owner tx)
void netbuf_free(struct netbuf *nb);
// Frees n buffers under one hold of the pool lock (a receive batch).
void netbuf_free_n(struct netbuf *const *nbs, int n);
// Hands nb to owner if owner holds fewer than share buffers: 0; else -1
// and nb keeps its owner (the caller drops it and counts the drop).
int netbuf_own(struct netbuf *nb, enum netbuf_owner owner, int share);
// Every owner's count in one snapshot (under the pool's lock): they sum to
// NNETBUF, which counts read one by one while buffers move need not
// (tests check that sum in `nettest stat`).
void netbuf_held_all(int out[NB_COUNT]);
uint8 *netbuf_push(struct netbuf *nb, uint32 n);   // prepend n bytes (panics if no room)
uint8 *netbuf_pull(struct netbuf *nb, uint32 n);   // strip n bytes; NULL if too short
int netbuf_free_count(void);

// ---- byte order (the wire is big-endian; RISC-V is little-endian) ----
static inline uint16 get16(const uint8 *p) { return (uint16)(p[0] << 8 | p[1]); }
static inline uint32 get32(const uint8 *p) {
  return (uint32)p[0] << 24 | (uint32)p[1] << 16 | (uint32)p[2] << 8 | p[3];
}
static inline void put16(uint8 *p, uint16 v) { p[0] = v >> 8; p[1] = v; }
static inline void put32(uint8 *p, uint32 v) { p[0] = v >> 24; p[1] = v >> 16; p[2] = v >> 8; p[3] = v; }

// Internet checksum: one's-complement sum of 16-bit words, folded.
uint32 csum_add(uint32 sum, const uint8 *p, uint32 len);
uint16 csum_fold(uint32 sum);

// ---- addresses of this host (from the boot arguments) ----
struct net_config {
  uint32 ip;              // host order, 0 = not configured
  uint32 netmask;
  uint8 mac[6];
};
extern struct net_config netcfg;

// Address parsing for boot arguments (net.c); also used by the RDMA device.
uint32 net_parse_ip(const char *dotted);            // 0 if malformed
int net_parse_mac(const char *s, uint8 mac[6]);     // 0, or -1 if malformed

// ---- counters: every drop has a name ----
#define NET_COUNTERS(X) \
  X(eth_rx) X(eth_tx) X(eth_short) X(eth_not_for_us) X(eth_unknown_type) \
  X(eth_tx_fail) \
  X(arp_rx) X(arp_bad) X(arp_requests_sent) X(arp_replies_sent) \
  X(arp_queue_drop) X(arp_unresolved_drop) \
  X(ip_rx) X(ip_tx) X(ip_bad_header) X(ip_bad_checksum) X(ip_not_for_us) \
  X(ip_fragment_drop) X(ip_ttl_zero) X(ip_unknown_proto) X(ip_too_big) X(ip_loopback) \
  X(icmp_rx) X(icmp_bad_checksum) X(icmp_echo_replied) X(icmp_other) \
  X(udp_rx) X(udp_tx) X(udp_bad_header) X(udp_bad_checksum) X(udp_no_port) \
  X(sock_rx) X(sock_rcvq_drop) X(netbuf_none) \
  X(roce_sink_ok) X(roce_sink_bad_icrc)

enum net_counter {
#define NC_ENUM(name) NC_##name,
  NET_COUNTERS(NC_ENUM)
#undef NC_ENUM
  NC_COUNT
};
extern uint64 net_counters[NC_COUNT];
extern const char *net_counter_names[NC_COUNT];
static inline void net_count(enum net_counter c) { __sync_fetch_and_add(&net_counters[c], 1); }

// ---- boot ----
void net_init(void);          // boot, after pci_init: buffers, layers, the driver, addresses
void sysnet_init(void);       // boot (sys/sysnet.c): the socket table, the benchmark sends' lock

// ---- layer entry points (inside the stack) ----
#define ETH_HLEN 14
#define ETHERTYPE_IPV4 0x0800
#define ETHERTYPE_ARP  0x0806
#define ETHERTYPE_ROCE 0x8915
extern const uint8 eth_broadcast[6];
// Handler of an EtherType; owns nb (data at the payload, src_mac set).
typedef void (*eth_handler_fn)(struct netbuf *nb);
int  eth_register_type(uint16 type, eth_handler_fn fn);   // 0, or -1 if taken
// fn runs in the driver thread at the end of every receive pass that
// passed frames up (netdev.h net_rx_pass_end). 0, or -1 if the table is full.
int  eth_on_rx_pass_end(void (*fn)(void));
void eth_output(struct netbuf *nb, const uint8 dst[6], uint16 type);   // consumes nb
// Prepends the Ethernet header (dst, our MAC, type) to nb's data.
void eth_push_header(struct netbuf *nb, const uint8 dst[6], uint16 type);
// Scatter-gather: hdr holds the payload headers (the Ethernet header is
// prepended here); frags follow it on the wire. On 0 done(arg) runs when
// the device is finished with hdr and the fragments (hdr is freed by the
// stack); on -1 nothing was sent and the caller keeps everything.
int  eth_output_sg(struct netbuf *hdr, const uint8 dst[6], uint16 type,
                   const struct netdev_frag *frags, int nfrags,
                   void (*done)(void *), void *arg);

void arp_init(void);
void arp_rx(struct netbuf *nb);
void arp_output(struct netbuf *nb, uint32 next_hop, uint16 type);   // consumes nb
int  arp_lookup(uint32 ip, uint8 mac[6]);       // 1 if cached, else 0 (and asks)
int  arp_resolve_wait(uint32 ip, uint8 mac[6], uint64 timeout_ns);  // process ctx
void arp_tick(uint64 now);
int  arp_dump(char *buf, int n);

#define IPPROTO_ICMP 1
#define IPPROTO_UDP 17
#define IP_HLEN 20
void ip_rx(struct netbuf *nb);
void ip_output(struct netbuf *nb, uint32 dst, uint8 proto);   // consumes nb
// Writes an IPv4 header (no options, TTL 64, DF) for a payload of
// payload_len bytes into h[0..19].
void ip_build_header(uint8 *h, uint32 src, uint32 dst, uint8 proto, uint32 payload_len);
uint32 ip_next_hop(uint32 dst);
// The interface's one IPv4 Identification counter [ENC-IP-2]: every IPv4
// frame sent takes the next value, those of ip_build_header and those the
// RDMA core builds (it asks through its device interface). Any context.
uint16 ip_next_id(void);

void icmp_rx(struct netbuf *nb);
int  icmp_echo_send(uint32 dst, uint16 id, uint16 seq, struct netbuf *payload);  // consumes

#define UDP_HLEN 8
#define UDP_PORT_ROCEV2 4791
// A UDP port's receiver; owns nb (data at the UDP payload; src_ip,
// src_port, dst_port set). Runs in the driver thread; must not sleep.
typedef void (*udp_handler_fn)(struct netbuf *nb, void *arg);
int  udp_register_port(uint16 port, udp_handler_fn fn, void *arg);   // 0 or -1 if taken
void udp_unregister_port(uint16 port);
void udp_rx(struct netbuf *nb);
// Sends nb's data as one datagram; computes the checksum; consumes nb.
void udp_output(struct netbuf *nb, uint16 src_port, uint32 dst, uint16 dst_port);
// Scatter-gather datagram (checksum 0, as RoCEv2 sends): hdr's data is
// the start of the UDP payload (e.g. BTH + RETH), frags the rest. Returns
// 0 (done(arg) will run) or -1 (not sent: no ARP entry yet, which this call
// asks for, or no ring room; the caller keeps everything and may retry).
int  udp_output_sg(struct netbuf *hdr, uint16 src_port, uint32 dst, uint16 dst_port,
                   const struct netdev_frag *frags, int nfrags,
                   void (*done)(void *), void *arg);

// Prepends the UDP and IPv4 headers (UDP checksum 0) of a datagram whose
// payload is payload bytes to hdr's data; the caller adds the Ethernet
// header and sends (udp_output_sg; sysbench.c's netblast reuses one header).
void udp_push_headers(struct netbuf *hdr, uint16 src_port, uint32 dst, uint16 dst_port,
                      uint32 payload);

// rocesink.c: claims NET_ROCE_SINK_PORT (boot, after the UDP table exists).
void roce_sink_init(void);

// socket.c: delivers echo replies to ICMP sockets (consumes nb).
// The socket layer above registers where echo replies go (consumes nb).
void icmp_set_echo_reply_sink(void (*deliver)(struct netbuf *nb, uint16 id, uint16 seq));

#endif
