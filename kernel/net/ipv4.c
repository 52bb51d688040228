// ipv4.c: IPv4 input and output (no options, no fragmentation).
//
// Input checks, in order: header length and version, header checksum,
// total length against the frame, destination (ours or broadcast),
// fragments (dropped and counted: nothing here reassembles), TTL; then
// dispatch by protocol to ICMP or UDP. Output writes a 20-byte header
// (TTL 64, DF) and resolves the next hop with ARP; every host is on our
// /24 (no router). A datagram to our own address never meets the link: it
// goes straight back into ip_rx on the sender's thread (counted
// ip_loopback), so UDP and ping work between processes of one guest.
// ip_next_id is the interface's one Identification counter: RoCE frames,
// which the RDMA core builds whole, take theirs here too.
#include "lib/types.h"
#include "core/printk.h"
#include "lib/klib.h"
#include "net/net.h"

#define IP_TTL 64
#define IP_FLAG_DF 0x4000
#define IP_FLAG_MF 0x2000
#define IP_OFFSET_MASK 0x1fff

static uint32 ip_id;               // low 16 bits go on the wire

uint16 ip_next_id(void) { return (uint16)__sync_fetch_and_add(&ip_id, 1); }

void ip_build_header(uint8 *h, uint32 src, uint32 dst, uint8 proto, uint32 payload_len) {
  h[0] = 0x45;                            // version 4, 5 words
  h[1] = 0;
  put16(h + 2, IP_HLEN + payload_len);
  put16(h + 4, ip_next_id());
  put16(h + 6, IP_FLAG_DF);
  h[8] = IP_TTL;
  h[9] = proto;
  put16(h + 10, 0);
  put32(h + 12, src);
  put32(h + 16, dst);
  put16(h + 10, csum_fold(csum_add(0, h, IP_HLEN)));
}

uint32 ip_next_hop(uint32 dst) { return dst; }   // one link, no gateway

void ip_output(struct netbuf *nb, uint32 dst, uint8 proto) {
  if (nb->len + IP_HLEN > NETDEV_MTU) {
    net_count(NC_ip_too_big);
    netbuf_free(nb);
    return;
  }
  uint32 payload = nb->len;
  ip_build_header(netbuf_push(nb, IP_HLEN), netcfg.ip, dst, proto, payload);
  net_count(NC_ip_tx);
  if (dst == netcfg.ip) {                 // to ourselves: no frame, no Ethernet header
    net_count(NC_ip_loopback);
    memcpy(nb->src_mac, netcfg.mac, 6);
    ip_rx(nb);
    return;
  }
  if (dst == 0xffffffff || dst == (netcfg.ip | ~netcfg.netmask))
    eth_output(nb, eth_broadcast, ETHERTYPE_IPV4);
  else
    arp_output(nb, ip_next_hop(dst), ETHERTYPE_IPV4);
}

void ip_rx(struct netbuf *nb) {
  net_count(NC_ip_rx);
  uint8 *h = nb->data;
  if (nb->len < IP_HLEN || (h[0] >> 4) != 4 || (h[0] & 15) < 5) { net_count(NC_ip_bad_header); goto drop; }
  uint32 hlen = (h[0] & 15) * 4, total = get16(h + 2);
  if (hlen > nb->len || total < hlen || total > nb->len) { net_count(NC_ip_bad_header); goto drop; }
  if (csum_fold(csum_add(0, h, hlen)) != 0) { net_count(NC_ip_bad_checksum); goto drop; }
  uint32 dst = get32(h + 16);
  int bcast = dst == 0xffffffff || dst == (netcfg.ip | ~netcfg.netmask);
  if (!netcfg.ip || (dst != netcfg.ip && !bcast)) { net_count(NC_ip_not_for_us); goto drop; }
  if ((get16(h + 6) & (IP_FLAG_MF | IP_OFFSET_MASK)) != 0) { net_count(NC_ip_fragment_drop); goto drop; }
  if (h[8] == 0) { net_count(NC_ip_ttl_zero); goto drop; }
  nb->src_ip = get32(h + 12);
  nb->dst_ip = dst;
  uint8 proto = h[9];
  nb->len = total;                        // strip Ethernet padding
  netbuf_pull(nb, hlen);
  if (proto == IPPROTO_UDP) { udp_rx(nb); return; }
  if (proto == IPPROTO_ICMP) { icmp_rx(nb); return; }
  net_count(NC_ip_unknown_proto);
drop:
  netbuf_free(nb);
}
