// icmp.c: ICMP echo. Requests to us are answered in place (the same
// buffer, type changed, addresses swapped by ip_output); replies go to
// the ICMP socket whose id matches (socket.c), which is how ping works.
#include "lib/types.h"
#include "core/printk.h"
#include "net/net.h"

static void (*echo_reply_sink)(struct netbuf *nb, uint16 id, uint16 seq);

void icmp_set_echo_reply_sink(void (*deliver)(struct netbuf *nb, uint16 id, uint16 seq)) {
  echo_reply_sink = deliver;
}

#define ICMP_ECHO_REPLY   0
#define ICMP_ECHO_REQUEST 8
#define ICMP_HLEN 8

void icmp_rx(struct netbuf *nb) {
  net_count(NC_icmp_rx);
  uint8 *h = nb->data;
  if (nb->len < ICMP_HLEN || csum_fold(csum_add(0, h, nb->len)) != 0) {
    net_count(NC_icmp_bad_checksum);
    goto drop;
  }
  if (h[0] == ICMP_ECHO_REQUEST && h[1] == 0) {
    if (nb->dst_ip != netcfg.ip) goto drop;        // no replies to broadcast pings
    h[0] = ICMP_ECHO_REPLY;
    put16(h + 2, 0);
    put16(h + 2, csum_fold(csum_add(0, h, nb->len)));
    net_count(NC_icmp_echo_replied);
    ip_output(nb, nb->src_ip, IPPROTO_ICMP);       // consumes nb
    return;
  }
  if (h[0] == ICMP_ECHO_REPLY && h[1] == 0) {
    uint16 id = get16(h + 4), seq = get16(h + 6);
    netbuf_pull(nb, ICMP_HLEN);
    if (echo_reply_sink) {
      echo_reply_sink(nb, id, seq);                // consumes nb
      return;
    }
  }
  net_count(NC_icmp_other);
drop:
  netbuf_free(nb);
}

int icmp_echo_send(uint32 dst, uint16 id, uint16 seq, struct netbuf *nb) {
  uint8 *h = netbuf_push(nb, ICMP_HLEN);
  h[0] = ICMP_ECHO_REQUEST;
  h[1] = 0;
  put16(h + 2, 0);
  put16(h + 4, id);
  put16(h + 6, seq);
  put16(h + 2, csum_fold(csum_add(0, h, nb->len)));
  ip_output(nb, dst, IPPROTO_ICMP);
  return 0;
}
