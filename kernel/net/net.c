// net.c: the stack's shared state and boot: this host's addresses (from
// the boot arguments ip= and mac=), the drop counters, the Internet
// checksum, and the stack's timer thread (ARP expiry and retries).
#include "lib/types.h"
#include "core/lock.h"
#include "core/proc.h"
#include "proc/lifecycle.h"
#include "core/printk.h"
#include "lib/klib.h"
#include "core/timer.h"
#include "lib/bootarg.h"
#include "net/net.h"
#include "net/netdev.h"
#include "net/e1000.h"

struct net_config netcfg;
uint64 net_counters[NC_COUNT];
const char *net_counter_names[NC_COUNT] = {
#define NC_NAME(name) #name,
  NET_COUNTERS(NC_NAME)
#undef NC_NAME
};

// On the hot-loops page (klib.h), not inlined: a received frame's header
// checksum loop must not straddle a page wherever the link puts ip_rx.
HOT_LOOP __attribute__((noinline)) uint32 csum_add(uint32 sum, const uint8 *p, uint32 len) {
  uint64 s = sum;
  for (; len >= 2; p += 2, len -= 2) s += (uint32)(p[0] << 8 | p[1]);
  if (len) s += (uint32)p[0] << 8;
  while (s >> 32) s = (s & 0xffffffff) + (s >> 32);
  return (uint32)s;
}

uint16 csum_fold(uint32 sum) {
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return (uint16)~sum;
}

// "10.0.0.1" -> host-order address; 0 if malformed.
uint32 net_parse_ip(const char *s) {
  uint32 ip = 0;
  for (int part = 0; part < 4; part++) {
    uint32 v = 0;
    int digits = 0;
    for (; *s >= '0' && *s <= '9'; s++, digits++) v = v * 10 + (*s - '0');
    if (!digits || v > 255) return 0;
    ip = ip << 8 | v;
    if (part < 3 && *s++ != '.') return 0;
  }
  return *s ? 0 : ip;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// "52:54:00:00:00:0a" -> mac; 0 on success, -1 if malformed.
int net_parse_mac(const char *s, uint8 mac[6]) {
  for (int i = 0; i < 6; i++) {
    int hi = hexval(s[0]), lo = hexval(s[1]);
    if (hi < 0 || lo < 0) return -1;
    mac[i] = hi << 4 | lo;
    s += 2;
    if (i < 5 && *s++ != ':') return -1;
  }
  return *s ? -1 : 0;
}

// The stack's housekeeping thread: ARP retries and expiry every 100 ms.
#define NET_HOUSEKEEPING_NS 100000000ull
static void net_timer_thread(void *unused) {
  for (;;) {
    sleep_until_ns(clock_ns() + NET_HOUSEKEEPING_NS);
    arp_tick(clock_ns());
  }
}

// Boot, after pci_init: buffers and layers first, so the driver can pass
// frames up as soon as it starts.
void net_init(void) {
  netbuf_init();
  arp_init();
  eth_register_type(ETHERTYPE_IPV4, ip_rx);
  eth_register_type(ETHERTYPE_ARP, arp_rx);
  roce_sink_init();
  if (e1000_init() < 0) return;
  netdev_mac(netcfg.mac);
  const char *mac = bootarg("mac"), *ip = bootarg("ip");
  uint8 want[6];
  if (mac && (net_parse_mac(mac, want) < 0 || memcmp(want, netcfg.mac, 6) != 0))
    kprintf("net: boot argument mac=%s differs from the device's; using the device's\n", mac);
  if (ip && !(netcfg.ip = net_parse_ip(ip))) kprintf("net: bad boot argument ip=%s\n", ip);
  netcfg.netmask = 0xffffff00;          // /24
  kthread_start("net-timer", net_timer_thread, NULL);
  kprintf("net: ip %d.%d.%d.%d/24\n", (int)(netcfg.ip >> 24), (int)(netcfg.ip >> 16 & 255),
          (int)(netcfg.ip >> 8 & 255), (int)(netcfg.ip & 255));
}
