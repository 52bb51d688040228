// udp.c: UDP input dispatch by port and output with checksums.
//
// Ports are claimed with udp_register_port(port, handler, arg): sockets
// (socket.c) and, later, the RDMA layer on 4791 (RoCEv2) use the same
// table. Input checks length and, when the sender filled it in, the
// checksum over the pseudo-header; a datagram for a port nobody holds is
// counted and dropped. Output always fills in the checksum, except for
// scatter-gather sends (udp_output_sg), which send 0 as RoCEv2 does.
#include "lib/types.h"
#include "core/lock.h"
#include "core/printk.h"
#include "lib/klib.h"
#include "net/net.h"

#define NUDPPORTS 48

static struct udp_port { uint16 port; udp_handler_fn fn; void *arg; } ports[NUDPPORTS];
static struct spinlock ports_lock = { 0, "udp_ports", 0 };

int udp_register_port(uint16 port, udp_handler_fn fn, void *arg) {
  int r = -1;
  if (port == 0 || !fn) return -1;
  spin_lock(&ports_lock);
  for (int i = 0; i < NUDPPORTS; i++) if (ports[i].fn && ports[i].port == port) goto out;
  for (int i = 0; i < NUDPPORTS; i++)
    if (!ports[i].fn) { ports[i] = (struct udp_port){ port, fn, arg }; r = 0; break; }
out:
  spin_unlock(&ports_lock);
  return r;
}

void udp_unregister_port(uint16 port) {
  spin_lock(&ports_lock);
  for (int i = 0; i < NUDPPORTS; i++)
    if (ports[i].fn && ports[i].port == port) ports[i].fn = NULL;
  spin_unlock(&ports_lock);
}

static uint32 pseudo_sum(uint32 src, uint32 dst, uint32 udp_len) {
  uint8 p[12];
  put32(p, src);
  put32(p + 4, dst);
  p[8] = 0;
  p[9] = IPPROTO_UDP;
  put16(p + 10, udp_len);
  return csum_add(0, p, 12);
}

// The handler is called with ports_lock released; a port unregistered at
// the same moment may still see one last datagram (handlers must cope).
void udp_rx(struct netbuf *nb) {
  net_count(NC_udp_rx);
  uint8 *h = nb->data;
  if (nb->len < UDP_HLEN) { net_count(NC_udp_bad_header); goto drop; }
  uint32 ulen = get16(h + 4);
  if (ulen < UDP_HLEN || ulen > nb->len) { net_count(NC_udp_bad_header); goto drop; }
  nb->len = ulen;
  if (get16(h + 6) != 0 &&
      csum_fold(csum_add(pseudo_sum(nb->src_ip, nb->dst_ip, ulen), h, ulen)) != 0) {
    net_count(NC_udp_bad_checksum);
    goto drop;
  }
  nb->src_port = get16(h);
  nb->dst_port = get16(h + 2);
  udp_handler_fn fn = NULL;
  void *arg = NULL;
  spin_lock(&ports_lock);
  for (int i = 0; i < NUDPPORTS; i++)
    if (ports[i].fn && ports[i].port == nb->dst_port) { fn = ports[i].fn; arg = ports[i].arg; break; }
  spin_unlock(&ports_lock);
  if (!fn) { net_count(NC_udp_no_port); goto drop; }
  netbuf_pull(nb, UDP_HLEN);
  fn(nb, arg);                                   // the port's owner has nb now
  return;
drop:
  netbuf_free(nb);
}

static void write_header(uint8 *h, uint16 sport, uint16 dport, uint32 ulen) {
  put16(h, sport);
  put16(h + 2, dport);
  put16(h + 4, ulen);
  put16(h + 6, 0);
}

void udp_output(struct netbuf *nb, uint16 src_port, uint32 dst, uint16 dst_port) {
  uint8 *h = netbuf_push(nb, UDP_HLEN);
  write_header(h, src_port, dst_port, nb->len);
  uint16 c = csum_fold(csum_add(pseudo_sum(netcfg.ip, dst, nb->len), h, nb->len));
  put16(h + 6, c == 0 ? 0xffff : c);             // 0 would mean "no checksum"
  net_count(NC_udp_tx);
  ip_output(nb, dst, IPPROTO_UDP);
}

void udp_push_headers(struct netbuf *hdr, uint16 src_port, uint32 dst, uint16 dst_port,
                      uint32 payload) {
  write_header(netbuf_push(hdr, UDP_HLEN), src_port, dst_port, payload + UDP_HLEN);
  ip_build_header(netbuf_push(hdr, IP_HLEN), netcfg.ip, dst, IPPROTO_UDP, payload + UDP_HLEN);
}

int udp_output_sg(struct netbuf *hdr, uint16 src_port, uint32 dst, uint16 dst_port,
                  const struct netdev_frag *frags, int nfrags,
                  void (*done)(void *), void *arg) {
  uint8 mac[6];
  uint32 payload = hdr->len;
  for (int i = 0; i < nfrags; i++) payload += frags[i].len;
  if (payload + UDP_HLEN + IP_HLEN > NETDEV_MTU) { net_count(NC_ip_too_big); return -1; }
  if (!arp_lookup(ip_next_hop(dst), mac)) return -1;   // asked; the caller retries
  uint32 keep = hdr->len;
  udp_push_headers(hdr, src_port, dst, dst_port, payload);
  if (eth_output_sg(hdr, mac, ETHERTYPE_IPV4, frags, nfrags, done, arg) < 0) {
    netbuf_pull(hdr, hdr->len - keep);           // back to what the caller gave
    return -1;
  }
  net_count(NC_udp_tx);
  net_count(NC_ip_tx);
  return 0;
}
