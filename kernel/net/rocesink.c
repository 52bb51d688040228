// rocesink.c: the receiving end of the RoCE frame ceiling (bench/net,
// bench/rdma). It holds UDP port NET_ROCE_SINK_PORT; each datagram there is
// a RoCEv2 frame body (BTH, payload, ICRC) with no QP behind it, and pays
// the per-byte work the RDMA layer pays for every RoCEv2 frame: its ICRC is
// computed over the received frame and compared, then its payload is
// copied into one buffer. Counted (roce_sink_ok, roce_sink_bad_icrc), then
// dropped.
#include "lib/types.h"
#include "lib/uapi.h"
#include "lib/klib.h"
#include "core/printk.h"
#include "net/net.h"
#include "transport/wire.h"

// Where payloads land. Only the copy's cost matters, so concurrent
// receivers may overwrite each other's bytes.
static uint8 sink_buf[NET_MAX_UDP_PAYLOAD];

// Driver thread; nb's data is the UDP payload and nb->frame the Ethernet
// header of the same contiguous frame. A datagram a process sent to our own
// address (ipv4.c's loopback) has no frame: it counts as bad.
static void roce_sink_rx(struct netbuf *nb, void *arg) {
  (void)arg;
  uint8 *l3 = nb->frame ? nb->frame + ETH_HLEN : NULL;
  int ok = l3 && nb->len >= BTH_LEN + ICRC_LEN && l3[0] == 0x45 &&
           nb->data == l3 + IPV4_HLEN + UDP_HLEN;            // no IPv4 options
  if (ok) {
    uint32 plen = nb->len - BTH_LEN - ICRC_LEN;
    struct rct_iov seg = { nb->data + BTH_LEN, plen };
    uint32 want = rct_wire_icrc_load(nb->data + BTH_LEN + plen);
    // [ICRC-CALC-5] computed over the frame as received, before the copy
    ok = rct_icrc_compute(nb->frame, ETH_HLEN + IPV4_HLEN + UDP_HLEN + BTH_LEN, ETH_HLEN,
                          RCT_ENCAP_V2, &seg, 1, 0, 0) == want;
    if (ok) memcpy(sink_buf, seg.base, plen);
  }
  net_count(ok ? NC_roce_sink_ok : NC_roce_sink_bad_icrc);
  netbuf_free(nb);
}

void roce_sink_init(void) {
  if (udp_register_port(NET_ROCE_SINK_PORT, roce_sink_rx, NULL) < 0)
    panic("roce_sink_init: port taken");
}
