// arp.c: the Address Resolution Protocol for IPv4 over Ethernet.
//
// A small cache of ip -> mac with expiry (ARP_TTL_NS, 20 min). Sending to an
// address with no entry creates a pending entry, broadcasts a request and
// queues the frame (at most ARP_QUEUE per entry); the reply flushes the
// queue. The stack's timer thread calls arp_tick() to retry requests and
// to give up (dropping the queue) after ARP_TRIES. We answer requests for
// our address, learn from every valid ARP frame addressed to us, and
// announce ourselves once at boot (gratuitous ARP). Our own address
// resolves to our MAC without a request (an RDMA QP of this guest that
// names it talks through the kernel's loopback).
#include "lib/types.h"
#include "core/lock.h"
#include "core/proc.h"
#include "core/printk.h"
#include "lib/klib.h"
#include "core/timer.h"
#include "net/net.h"

#define NARP        32
#define ARP_QUEUE   16
#define ARP_TTL_NS  (1200ull * 1000000000)   // 20 minutes, as BSD: no mid-test refreshes
#define ARP_RETRY_NS (300ull * 1000000)
#define ARP_TRIES   4
#define ARP_LEN     28
#define ARP_REQUEST 1
#define ARP_REPLY   2

enum arp_state { ARP_FREE, ARP_PENDING, ARP_RESOLVED };

struct arp_entry {
  enum arp_state state;
  uint32 ip;
  uint8 mac[6];
  uint64 expires;            // RESOLVED: when the entry dies
  uint64 next_try;           // PENDING: when to ask again
  int tries;
  struct netbuf *queue, *queue_tail;   // frames waiting (their EtherType in dst_port)
  int qlen;
};

static struct arp_entry table[NARP];
static struct spinlock arp_lock;

static void send_arp(uint16 op, const uint8 dst_mac[6], uint32 target_ip, const uint8 target_mac[6]) {
  struct netbuf *nb = netbuf_alloc();
  if (!nb) { net_count(NC_netbuf_none); return; }
  uint8 *a = nb->data;
  nb->len = ARP_LEN;
  put16(a, 1);                    // hardware: Ethernet
  put16(a + 2, ETHERTYPE_IPV4);
  a[4] = 6; a[5] = 4;
  put16(a + 6, op);
  memcpy(a + 8, netcfg.mac, 6);
  put32(a + 14, netcfg.ip);
  memcpy(a + 18, target_mac, 6);
  put32(a + 24, target_ip);
  net_count(op == ARP_REQUEST ? NC_arp_requests_sent : NC_arp_replies_sent);
  eth_output(nb, dst_mac, ETHERTYPE_ARP);
}

static const uint8 zero_mac[6];

static void send_request(uint32 ip) { send_arp(ARP_REQUEST, eth_broadcast, ip, zero_mac); }

void arp_init(void) { spin_init(&arp_lock, "arp"); }

// Caller holds arp_lock.
static struct arp_entry *find(uint32 ip) {
  for (int i = 0; i < NARP; i++)
    if (table[i].state != ARP_FREE && table[i].ip == ip) return &table[i];
  return NULL;
}

// Caller holds arp_lock. A free entry, else the resolved one expiring first.
static struct arp_entry *claim(uint32 ip) {
  struct arp_entry *victim = NULL;
  for (int i = 0; i < NARP; i++) {
    struct arp_entry *e = &table[i];
    if (e->state == ARP_FREE) { victim = e; break; }
    if (e->state == ARP_RESOLVED && (!victim || e->expires < victim->expires)) victim = e;
  }
  if (!victim) return NULL;
  memset(victim, 0, sizeof *victim);
  victim->ip = ip;
  return victim;
}

// Caller holds arp_lock; returns the queued frames, emptied from e.
static struct netbuf *take_queue(struct arp_entry *e) {
  struct netbuf *q = e->queue;
  e->queue = e->queue_tail = NULL;
  e->qlen = 0;
  return q;
}

static void send_queue(struct netbuf *q, const uint8 mac[6]) {
  while (q) {
    struct netbuf *next = q->next;
    q->next = NULL;
    eth_output(q, mac, q->dst_port);
    q = next;
  }
}

static void drop_queue(struct netbuf *q) {
  while (q) {
    struct netbuf *next = q->next;
    net_count(NC_arp_unresolved_drop);
    netbuf_free(q);
    q = next;
  }
}

void arp_output(struct netbuf *nb, uint32 next_hop, uint16 type) {
  uint8 mac[6];
  int ask = 0;
  spin_lock(&arp_lock);
  struct arp_entry *e = find(next_hop);
  uint64 now = clock_ns();
  if (e && e->state == ARP_RESOLVED && now < e->expires) {
    memcpy(mac, e->mac, 6);
    spin_unlock(&arp_lock);
    eth_output(nb, mac, type);
    return;
  }
  if (!e || e->state == ARP_RESOLVED) {      // missing or expired: ask again
    if (!e) e = claim(next_hop);
    if (e) { e->state = ARP_PENDING; e->tries = 1; e->next_try = now + ARP_RETRY_NS; ask = 1; }
  }
  if (!e || e->qlen >= ARP_QUEUE) {
    net_count(NC_arp_queue_drop);
    netbuf_free(nb);
  } else {
    nb->dst_port = type;
    nb->next = NULL;
    if (e->queue_tail) e->queue_tail->next = nb; else e->queue = nb;
    e->queue_tail = nb;
    e->qlen++;
  }
  spin_unlock(&arp_lock);
  if (ask) send_request(next_hop);
}

int arp_lookup(uint32 ip, uint8 mac[6]) {
  if (ip && ip == netcfg.ip) {                    // ourselves: no question on the wire
    memcpy(mac, netcfg.mac, 6);
    return 1;
  }
  int found = 0, ask = 0;
  uint64 now = clock_ns();
  spin_lock(&arp_lock);
  struct arp_entry *e = find(ip);
  if (e && e->state == ARP_RESOLVED && now < e->expires) {
    memcpy(mac, e->mac, 6);
    found = 1;
  } else if (!e || e->state == ARP_RESOLVED) {
    if (!e) e = claim(ip);
    if (e) { e->state = ARP_PENDING; e->tries = 1; e->next_try = now + ARP_RETRY_NS; ask = 1; }
  }
  spin_unlock(&arp_lock);
  if (ask) send_request(ip);
  return found;
}

// Sleeps until arp_rx resolves an entry (any: the lookup tells which),
// and looks again at least every ARP_RETRY_NS in case the entry could
// not be made (a table of pending entries) or timed out in arp_tick.
int arp_resolve_wait(uint32 ip, uint8 mac[6], uint64 timeout_ns) {
  uint64 end = clock_ns() + timeout_ns;
  while (!arp_lookup(ip, mac)) {
    uint64 now = clock_ns();
    if (now >= end || proc_killed(current())) return -1;
    spin_lock(&arp_lock);
    struct arp_entry *e = find(ip);
    if (!e || e->state != ARP_RESOLVED)          // no answer since the lookup
      proc_sleep_until(table, &arp_lock, now + ARP_RETRY_NS < end ? now + ARP_RETRY_NS : end);
    spin_unlock(&arp_lock);
  }
  return 0;
}

// Valid frames only; learns the sender, answers requests for us, and
// flushes frames that waited for the sender's address.
void arp_rx(struct netbuf *nb) {
  net_count(NC_arp_rx);
  uint8 *a = nb->data;
  if (nb->len < ARP_LEN || get16(a) != 1 || get16(a + 2) != ETHERTYPE_IPV4 || a[4] != 6 ||
      a[5] != 4 || (get16(a + 6) != ARP_REQUEST && get16(a + 6) != ARP_REPLY)) {
    net_count(NC_arp_bad);
    goto done;
  }
  uint16 op = get16(a + 6);
  uint32 sender_ip = get32(a + 14), target_ip = get32(a + 24);
  uint8 sender_mac[6];
  memcpy(sender_mac, a + 8, 6);
  if (sender_ip == 0 || !netcfg.ip) goto done;
  struct netbuf *ready = NULL;
  spin_lock(&arp_lock);
  struct arp_entry *e = find(sender_ip);
  if (!e && target_ip == netcfg.ip) e = claim(sender_ip);   // they talk to us: we will answer
  if (e) {
    memcpy(e->mac, sender_mac, 6);
    e->state = ARP_RESOLVED;
    e->expires = clock_ns() + ARP_TTL_NS;
    ready = take_queue(e);
    proc_wakeup(table);                      // arp_resolve_wait
  }
  spin_unlock(&arp_lock);
  send_queue(ready, sender_mac);
  if (op == ARP_REQUEST && target_ip == netcfg.ip)
    send_arp(ARP_REPLY, sender_mac, sender_ip, sender_mac);
done:
  netbuf_free(nb);
}

void arp_tick(uint64 now) {
  static int announced;
  if (!announced && netcfg.ip) {        // gratuitous ARP: our address, once
    announced = 1;
    send_arp(ARP_REQUEST, eth_broadcast, netcfg.ip, zero_mac);
  }
  for (int i = 0; i < NARP; i++) {
    struct netbuf *dead = NULL;
    uint32 ask = 0;
    spin_lock(&arp_lock);
    struct arp_entry *e = &table[i];
    if (e->state == ARP_PENDING && now >= e->next_try) {
      if (e->tries >= ARP_TRIES) { dead = take_queue(e); e->state = ARP_FREE; }
      else { e->tries++; e->next_try = now + ARP_RETRY_NS; ask = e->ip; }
    } else if (e->state == ARP_RESOLVED && now >= e->expires) {
      e->state = ARP_FREE;
    }
    spin_unlock(&arp_lock);
    drop_queue(dead);
    if (ask) send_request(ask);
  }
}

// Text for netstat: one "ip mac state" line per entry.
int arp_dump(char *buf, int n) {
  static const char hex[] = "0123456789abcdef";
  int len = 0;
  spin_lock(&arp_lock);
  for (int i = 0; i < NARP && len + 48 < n; i++) {
    struct arp_entry *e = &table[i];
    if (e->state == ARP_FREE) continue;
    char line[64];
    int k = 0;
    line[k++] = 'a'; line[k++] = 'r'; line[k++] = 'p'; line[k++] = ' ';
    for (int b = 3; b >= 0; b--) {
      int v = (e->ip >> (8 * b)) & 255, started = 0;
      for (int d = 100; d >= 1; d /= 10)
        if (v / d || started || d == 1) { line[k++] = '0' + (v / d) % 10; started = 1; }
      if (b) line[k++] = '.';
    }
    line[k++] = ' ';
    for (int b = 0; b < 6; b++) {
      line[k++] = hex[e->mac[b] >> 4]; line[k++] = hex[e->mac[b] & 15];
      if (b < 5) line[k++] = ':';
    }
    const char *st = e->state == ARP_RESOLVED ? " resolved\n" : " pending\n";
    for (; *st; st++) line[k++] = *st;
    memcpy(buf + len, line, k);
    len += k;
  }
  spin_unlock(&arp_lock);
  return len;
}
