// sysnet.c: sockets and the network system calls (numbers in uapi.h).
//
// A socket is a slot in a small table behind a file descriptor (its
// struct file_ops are here): fork and dup share it, and it is released
// when its last descriptor closes (close, sockclose, exit), so the number
// a process may hold is bounded by its descriptor table. Two kinds:
//   SOCK_UDP   bind(port) claims a UDP port through udp_register_port();
//              sendto() picks an ephemeral port if none is bound.
//   SOCK_ICMP  sendto() sends an echo request (to->port is the sequence
//              number); recvfrom() returns echo replies carrying this
//              socket's id (from->port = their sequence number).
// Received datagrams wait in the socket's queue, within the receive limits
// below (more are dropped and counted: sock_rcvq_drop, and per socket in
// netstat's `socket` lines). recvfrom() sleeps up to timeout_ms (< 0: no
// limit) and returns -2 on timeout; with O_NONBLOCK it returns -1 at once
// if nothing is queued. read() is recvfrom without the source address;
// write() fails (no connected UDP). poll() reports POLLIN while a datagram
// is queued and POLLOUT always (sends do not wait for a reader).
// Two sends bypass the copy: sendzc() (payload DMA'd from pinned pages) and
// netblast() (the same datagram count times, for the link benchmark).
#include "lib/types.h"
#include "lib/param.h"
#include "core/lock.h"
#include "core/proc.h"
#include "core/printk.h"
#include "lib/klib.h"
#include "core/timer.h"
#include "core/poll.h"
#include "fs/file.h"
#include "core/vm.h"
#include "core/pmem.h"
#include "lib/riscv.h"
#include "proc/args.h"
#include "lib/uapi.h"
#include "net/net.h"
#include "net/netdev.h"
#include "dev/random.h"
#include "transport/wire.h"

#define NSOCK 32
// Receive limits: the sockets' queues share NETBUF_SOCK_SHARE netbufs
// (net.h: half the pool). Each socket is guaranteed SOCK_RCVQ_MIN of them
// (all NSOCK at their minimum use half the share: 8 each), whatever the
// others hold, so a flooded socket cannot stop another process's ping,
// echo or CM exchange. The other half, SOCK_RCVQ_BURST, is shared first
// come by queues above their minimum: a busy reader falling behind may
// queue up to SOCK_RCVQ_MIN + SOCK_RCVQ_BURST (264) datagrams.
#define SOCK_RCVQ_MIN (NETBUF_SOCK_SHARE / 2 / NSOCK)
#define SOCK_RCVQ_BURST (NETBUF_SOCK_SHARE - NSOCK * SOCK_RCVQ_MIN)
#define EPHEMERAL_FIRST 49152
#define EPHEMERAL_COUNT (65536 - EPHEMERAL_FIRST)
// Random draws before bind(0) gives up. udp.c holds at most NUDPPORTS (48)
// ports, so a draw hits a held one with p <= 48 / 16384 < 1/256: 64
// misses in a row (p < 2^-512) mean the port table is full.
#define EPHEMERAL_TRIES 64

struct sock {
  int used;
  int type;                   // SOCK_UDP or SOCK_ICMP
  uint16 port;                // UDP: bound port (0 = none); ICMP: echo id
  struct netbuf *q, *qtail;   // received, oldest first
  int qlen;
  int readers;               // recvfrom/read calls asleep on this socket
  uint64 drops;              // datagrams dropped past the receive limits
};

static struct sock socks[NSOCK];
static struct spinlock sock_lock;
static int burst_used;        // queued past SOCK_RCVQ_MIN, over all sockets (sock_lock)
static struct spinlock zc_lock;       // sendzc and netblast waiters and their done state

// Caller holds sock_lock. Appends nb, or drops and counts it when s is at
// its minimum and the burst share is used up (or the pool's socket share
// is, which the limits keep from happening).
static void enqueue(struct sock *s, struct netbuf *nb) {
  int burst = s->qlen >= SOCK_RCVQ_MIN;
  if ((burst && burst_used >= SOCK_RCVQ_BURST) || netbuf_own(nb, NB_sock, NETBUF_SOCK_SHARE) < 0) {
    net_count(NC_sock_rcvq_drop);
    s->drops++;
    netbuf_free(nb);
    return;
  }
  burst_used += burst;
  nb->next = NULL;
  if (s->qtail) s->qtail->next = nb; else s->q = nb;
  s->qtail = nb;
  s->qlen++;
  net_count(NC_sock_rx);
  if (s->readers) proc_wakeup(s);
  poll_notify();
}

static void udp_deliver(struct netbuf *nb, void *arg) {
  struct sock *s = arg;
  spin_lock(&sock_lock);
  if (s->used && s->type == SOCK_UDP && s->port == nb->dst_port) enqueue(s, nb);
  else { net_count(NC_udp_no_port); netbuf_free(nb); }
  spin_unlock(&sock_lock);
}

static void sock_icmp_deliver(struct netbuf *nb, uint16 id, uint16 seq) {
  spin_lock(&sock_lock);
  for (int i = 0; i < NSOCK; i++) {
    struct sock *s = &socks[i];
    if (s->used && s->type == SOCK_ICMP && s->port == id) {
      nb->src_port = seq;
      enqueue(s, nb);
      spin_unlock(&sock_lock);
      return;
    }
  }
  spin_unlock(&sock_lock);
  net_count(NC_icmp_other);
  netbuf_free(nb);
}

static const struct file_ops sock_ops;

// The socket behind descriptor argument n, or NULL.
static struct sock *arg_sock(int n) { return fd_obj(arg_int(n), &sock_ops); }

static void sock_release(struct sock *s) {
  if (s->type == SOCK_UDP && s->port) udp_unregister_port(s->port);
  spin_lock(&sock_lock);
  struct netbuf *q = s->q;
  s->q = s->qtail = NULL;
  if (s->qlen > SOCK_RCVQ_MIN) burst_used -= s->qlen - SOCK_RCVQ_MIN;
  s->qlen = 0;
  s->used = 0;
  spin_unlock(&sock_lock);
  while (q) { struct netbuf *n = q->next; netbuf_free(q); q = n; }
}

void sysnet_init(void) {
  icmp_set_echo_reply_sink(sock_icmp_deliver);
  spin_init(&sock_lock, "sock");
  spin_init(&zc_lock, "sock_zc");
}

// A free slot of the table made a socket of type, or NULL.
static struct sock *sock_alloc(int type) {
  spin_lock(&sock_lock);
  for (int i = 0; i < NSOCK; i++) {
    struct sock *s = &socks[i];
    if (s->used) continue;
    s->used = 1;
    s->type = type;
    s->port = type == SOCK_ICMP ? (uint16)(0x8000 | (current()->pid & 0x3ff) << 5 | i) : 0;
    s->q = s->qtail = NULL;
    s->qlen = s->readers = 0;
    s->drops = 0;
    spin_unlock(&sock_lock);
    return s;
  }
  spin_unlock(&sock_lock);
  return NULL;
}

int64 sys_socket(void) {
  int type = arg_int(0);
  if (type != SOCK_UDP && type != SOCK_ICMP) return -1;
  struct sock *s = sock_alloc(type);
  if (!s) return -1;
  int fd = fd_open_obj(&sock_ops, s);
  if (fd < 0) sock_release(s);
  return fd;
}

// Caller must not hold sock_lock. Claims port (0: a random free one in
// the ephemeral range, so a stranger cannot guess a CM reply port
// [SEC-RAND-8]; a port someone holds is never taken twice: the
// registration refuses it and we draw again).
static int bind_port(struct sock *s, int port) {
  if (s->type != SOCK_UDP || s->port || port < 0 || port > 65535) return -1;
  if (port == UDP_PORT_ROCEV2) return -1;          // reserved for the RDMA layer
  if (port) {
    if (udp_register_port(port, udp_deliver, s) < 0) return -1;
    s->port = port;
    return 0;
  }
  for (int tries = 0; tries < EPHEMERAL_TRIES; tries++) {
    uint16 p = EPHEMERAL_FIRST + random_u32() % EPHEMERAL_COUNT;
    if (udp_register_port(p, udp_deliver, s) == 0) { s->port = p; return 0; }
  }
  return -1;
}

int64 sys_bind(void) {
  struct sock *s = arg_sock(0);
  return s ? bind_port(s, arg_int(1)) : -1;
}

int64 sys_sendto(void) {
  struct sock *s = arg_sock(0);
  uint64 buf = arg_addr(1);
  int n = arg_int(2);
  struct net_addr to;
  if (!s || n < 0 || copy_in(current()->pagetable, &to, arg_addr(3), sizeof to) < 0) return -1;
  int max = NETDEV_MTU - IP_HLEN - (s->type == SOCK_UDP ? UDP_HLEN : 8);
  if (n > max || !netdev_present() || !netcfg.ip) return -1;
  if (s->type == SOCK_UDP && !s->port && bind_port(s, 0) < 0) return -1;
  struct netbuf *nb = netbuf_alloc_wait();
  if (!nb) return -1;
  if (copy_in(current()->pagetable, nb->data, buf, n) < 0) { netbuf_free(nb); return -1; }
  nb->len = n;
  netdev_tx_wait(1);                       // do not drop our own frame on a full ring
  if (s->type == SOCK_UDP) udp_output(nb, s->port, to.ip, to.port);
  else icmp_echo_send(to.ip, s->port, to.port, nb);
  return n;
}

// Takes the oldest datagram of s into buf (at most n bytes; the rest of
// it is lost) and its source into from_uva (0: not wanted). Sleeps until
// one is queued or deadline (~0: none) passes: -2; nonblock: -1 at once if
// none is queued; -1 if killed or for a bad buffer.
static int sock_recv(struct sock *s, int nonblock, uint64 buf, int n, uint64 from_uva,
                     uint64 deadline) {
  if (n < 0) return -1;
  spin_lock(&sock_lock);
  while (!s->q) {
    int why = nonblock || proc_killed(current()) ? -1 : clock_ns() >= deadline ? -2 : 0;
    if (why) {
      spin_unlock(&sock_lock);
      return why;
    }
    s->readers++;
    proc_sleep_until(s, &sock_lock, deadline);
    s->readers--;
  }
  struct netbuf *nb = s->q;
  s->q = nb->next;
  if (!s->q) s->qtail = NULL;
  s->qlen--;
  burst_used -= s->qlen >= SOCK_RCVQ_MIN;
  spin_unlock(&sock_lock);
  int len = nb->len < (uint32)n ? (int)nb->len : n;
  struct net_addr from = { nb->src_ip, nb->src_port, 0 };
  int bad = copy_out(current()->pagetable, buf, nb->data, len) < 0 ||
            (from_uva && copy_out(current()->pagetable, from_uva, &from, sizeof from) < 0);
  netbuf_free(nb);
  return bad ? -1 : len;
}

int64 sys_recvfrom(void) {
  int fd = arg_int(0), timeout_ms = arg_int(4);
  struct sock *s = fd_obj(fd, &sock_ops);
  if (!s) return -1;
  uint64 deadline = timeout_ms < 0 ? ~0ull : clock_ns() + (uint64)timeout_ms * 1000000;
  return sock_recv(s, file_nonblock(fd_file(fd)), arg_addr(1), arg_int(2), arg_addr(3), deadline);
}

int64 sys_sockclose(void) { return arg_sock(0) ? fd_close(arg_int(0)) : -1; }

static int sock_read(struct file *f, uint64 uva, int n) {
  int r = sock_recv(f->obj, file_nonblock(f), uva, n, 0, ~0ull);
  return r < 0 ? -1 : r;
}

static int sock_poll(struct file *f) {
  struct sock *s = f->obj;
  spin_lock(&sock_lock);
  int bits = (s->q ? POLLIN : 0) | POLLOUT;
  spin_unlock(&sock_lock);
  return bits;
}

static void sock_close(struct file *f) { sock_release(f->obj); }

// write() is NULL: a UDP socket has no peer to send to.
static const struct file_ops sock_ops = { .read = sock_read, .poll = sock_poll, .close = sock_close };

// ---- zero-copy send: the scatter-gather path the RDMA layer uses ----

#define ZC_MAX_PAGES 4          // 8972 bytes span at most 4 pages

struct zc_wait { int done; };

// Pins the user pages behind [buf, buf+n) and describes the payload as
// device fragments, one per page piece (frags[i] lies in page pa[i]).
// Returns the page count (0 when n is 0; the caller uvm_unpins pa after
// the device is done), or -1 with nothing pinned for a bad range.
static int pin_payload(pagetable_t pt, uint64 buf, int n, uint64 pa[ZC_MAX_PAGES],
                       struct netdev_frag frags[ZC_MAX_PAGES]) {
  int npages = n ? uvm_pin(pt, buf, n, pa, ZC_MAX_PAGES) : 0;
  for (uint64 off = 0, i = 0; npages > 0 && off < (uint64)n; i++) {
    uint64 in_page = (buf + off) % PGSIZE;
    uint64 len = PGSIZE - in_page < n - off ? PGSIZE - in_page : n - off;
    frags[i] = (struct netdev_frag){ pa[i] + in_page, len };
    off += len;
  }
  return npages;
}

static void zc_done(void *arg) {
  struct zc_wait *w = arg;
  spin_lock(&zc_lock);
  w->done = 1;
  proc_wakeup(w);
  spin_unlock(&zc_lock);
}

// sendzc(s, buf, n, to): like sendto for a UDP socket, but the device reads
// the payload straight from the caller's pinned pages (one TX descriptor
// per page piece after a header buffer; UDP checksum 0). Returns once the
// device is done with the pages.
int64 sys_sendzc(void) {
  struct sock *s = arg_sock(0);
  uint64 buf = arg_addr(1);
  int n = arg_int(2);
  struct net_addr to;
  pagetable_t pt = current()->pagetable;
  if (!s || s->type != SOCK_UDP || n < 0 || n > NET_MAX_UDP_PAYLOAD) return -1;
  if (copy_in(pt, &to, arg_addr(3), sizeof to) < 0 || !netdev_present() || !netcfg.ip) return -1;
  if (!s->port && bind_port(s, 0) < 0) return -1;
  uint64 pa[ZC_MAX_PAGES];
  struct netdev_frag frags[ZC_MAX_PAGES];
  int npages = pin_payload(pt, buf, n, pa, frags), nfrags = npages;
  if (npages < 0) return -1;
  struct netbuf *hdr = netbuf_alloc_wait();
  int r = -1;
  struct zc_wait w = { 0 };
  uint8 mac[6];
  for (int tries = 0; hdr && tries < 50; tries++) {
    if (udp_output_sg(hdr, s->port, to.ip, to.port, frags, nfrags, zc_done, &w) == 0) { r = n; break; }
    if (arp_resolve_wait(ip_next_hop(to.ip), mac, 1000000000ull) < 0) break;
    netdev_tx_wait(nfrags + 1);
  }
  if (r < 0) {
    if (hdr) netbuf_free(hdr);
  } else {                                // hdr belongs to the stack now
    spin_lock(&zc_lock);
    while (!w.done) proc_sleep(&w, &zc_lock);
    spin_unlock(&zc_lock);
  }
  if (npages > 0) uvm_unpin(pa, npages);
  return r;
}

// ---- netblast: a kernel-side burst sender, in the spirit of Linux pktgen ----
//
// netblast(s, buf, n, to, count) sends one UDP datagram count times: its
// Ethernet + IPv4 + UDP header is built once in a netbuf, the payload
// stays in the caller's pinned pages, and each copy is one netdev_tx of
// the same fragments (header, then page pieces, as the RDMA layer sends;
// UDP checksum 0). A full ring makes it wait for room, not fail, so the
// rate it reaches is what the driver and the emulated link carry, with no
// system call per datagram. Returns the datagrams sent (fewer than count
// only if the process is killed) once the device is done with all of them.
// To NET_ROCE_SINK_PORT the payload is a RoCEv2 frame body and each copy
// pays the sender's ICRC first (struct blast_icrc).

#define NETBLAST_MAX_COUNT (1 << 20)   // datagrams per call

struct blast { int inflight; };        // frames queued whose done() has not run

static void blast_done(void *arg) {
  struct blast *b = arg;
  if (__sync_sub_and_fetch(&b->inflight, 1) > 0) return;
  spin_lock(&zc_lock);                 // the sender sleeps on b under zc_lock
  proc_wakeup(b);
  spin_unlock(&zc_lock);
}

// Prepends Ethernet + IPv4 + UDP headers for a payload of n bytes to hdr.
// A broadcast destination goes to the broadcast MAC; any other waits up to
// a second for ARP. Returns 0, or -1 if the address does not resolve.
static int blast_header(struct netbuf *hdr, uint16 src_port, const struct net_addr *to, int n) {
  uint8 mac[6];
  if (to->ip == 0xffffffff || to->ip == (netcfg.ip | ~netcfg.netmask)) memcpy(mac, eth_broadcast, 6);
  else if (arp_resolve_wait(ip_next_hop(to->ip), mac, 1000000000ull) < 0) return -1;
  udp_push_headers(hdr, src_port, to->ip, to->port, n);
  eth_push_header(hdr, mac, ETHERTYPE_IPV4);
  return 0;
}

// A RoCE blast's payload is BTH, data and ICRC; every copy's ICRC is
// computed again before it is queued, over the headers and the pinned
// pages, as the RDMA engine computes each frame's.
struct blast_icrc {
  uint8 hdr[ETH_HLEN + IPV4_HLEN + UDP_HLEN + BTH_LEN];   // Ethernet to BTH, contiguous
  struct rct_iov seg[ZC_MAX_PAGES];                       // the data, in the pinned pages
  int nseg;
  uint8 *at[ICRC_LEN];                                    // the ICRC's bytes in the pages
};

// The kernel address of payload byte off; off is below the frags' total.
static uint8 *frag_byte(const struct netdev_frag *frags, int nfrags, uint32 off) {
  int i = 0;
  while (i < nfrags - 1 && off >= frags[i].len) off -= frags[i++].len;
  return (uint8 *)(frags[i].pa + off);
}

// Preconditions: eth is the frame's Ethernet + IPv4 + UDP header; frags
// hold its payload of n >= BTH_LEN + ICRC_LEN bytes.
static void blast_icrc_init(struct blast_icrc *ic, const uint8 *eth, const struct netdev_frag *frags,
                            int nfrags, uint32 n) {
  uint32 l4 = ETH_HLEN + IPV4_HLEN + UDP_HLEN, lo = BTH_LEN, hi = n - ICRC_LEN, base = 0;
  memcpy(ic->hdr, eth, l4);
  for (uint32 k = 0; k < BTH_LEN; k++) ic->hdr[l4 + k] = *frag_byte(frags, nfrags, k);
  for (uint32 k = 0; k < ICRC_LEN; k++) ic->at[k] = frag_byte(frags, nfrags, hi + k);
  ic->nseg = 0;
  for (int i = 0; i < nfrags; base += frags[i].len, i++) {
    uint32 end = base + frags[i].len, s = base > lo ? base : lo, e = end < hi ? end : hi;
    if (s < e) ic->seg[ic->nseg++] = (struct rct_iov){ (uint8_t *)(frags[i].pa + s - base), e - s };
  }
}

// The ICRC of the frame's masked headers and data, stored least
// significant byte first in its last four bytes [ICRC-CALC-1] [ICRC-CALC-3].
// Every queued copy holds the same bytes, so rewriting them is harmless.
static void blast_icrc_stamp(struct blast_icrc *ic) {
  uint32 v = rct_icrc_compute(ic->hdr, sizeof ic->hdr, ETH_HLEN, RCT_ENCAP_V2, ic->seg, ic->nseg, 0, 0);
  for (int k = 0; k < ICRC_LEN; k++) *ic->at[k] = (uint8)(v >> (8 * k));
}

#define BLAST_BURST 64        // = RDMA_BUDGET, the RDMA engine's burst

// Queues the frame made of frags count times, sleeping for ring room,
// each copy stamped with its ICRC first if ic is not NULL; returns how
// many were queued, after the device has finished them all.
static int blast_frames(const struct netdev_frag *frags, int nfrags, int count, struct blast_icrc *ic) {
  struct blast b = { 0 };
  int sent = 0, stamped = 0;
  // Doorbells in bursts of up to BLAST_BURST frames, as the RDMA engine
  // rings them (rdma_progress), so the link ceiling and RDMA pay alike.
  while (sent < count) {
    if (proc_killed(current())) break;
    int queued = 0, full = 0;
    netdev_tx_hold();
    while (sent < count && queued < BLAST_BURST) {
      if (ic && !stamped) { blast_icrc_stamp(ic); stamped = 1; }   // once per copy sent
      __sync_fetch_and_add(&b.inflight, 1);          // before done() can run
      if (netdev_tx(frags, nfrags, blast_done, &b) == 0) { sent++; queued++; stamped = 0; continue; }
      __sync_fetch_and_sub(&b.inflight, 1);          // not queued: no done()
      full = 1;
      break;
    }
    netdev_tx_flush();                               // before any sleep
    if (full && netdev_tx_wait(nfrags) < 0) break;
  }
  __sync_fetch_and_add(&net_counters[NC_udp_tx], sent);
  __sync_fetch_and_add(&net_counters[NC_ip_tx], sent);
  __sync_fetch_and_add(&net_counters[NC_eth_tx], sent);
  spin_lock(&zc_lock);
  while (b.inflight > 0) proc_sleep(&b, &zc_lock);
  spin_unlock(&zc_lock);
  return sent;
}

int64 sys_netblast(void) {
  struct sock *s = arg_sock(0);
  uint64 buf = arg_addr(1);
  int n = arg_int(2), count = arg_int(4);
  struct net_addr to;
  pagetable_t pt = current()->pagetable;
  if (!s || s->type != SOCK_UDP || n < 0 || n > NET_MAX_UDP_PAYLOAD) return -1;
  if (count < 1 || count > NETBLAST_MAX_COUNT) return -1;
  if (copy_in(pt, &to, arg_addr(3), sizeof to) < 0 || !netdev_present() || !netcfg.ip) return -1;
  int roce = to.port == NET_ROCE_SINK_PORT;
  if (roce && n < BTH_LEN + ICRC_LEN) return -1;
  if (!s->port && bind_port(s, 0) < 0) return -1;
  uint64 pa[ZC_MAX_PAGES];
  struct netdev_frag frags[1 + ZC_MAX_PAGES];
  int npages = pin_payload(pt, buf, n, pa, frags + 1);
  if (npages < 0) return -1;
  struct netbuf *hdr = netbuf_alloc_wait();
  int r = -1;
  if (hdr && blast_header(hdr, s->port, &to, n) == 0) {
    frags[0] = (struct netdev_frag){ (uint64)hdr->data, hdr->len };
    struct blast_icrc ic;
    if (roce) blast_icrc_init(&ic, hdr->data, frags + 1, npages, n);
    r = blast_frames(frags, 1 + npages, count, roce ? &ic : 0);
  }
  if (hdr) netbuf_free(hdr);
  if (npages > 0) uvm_unpin(pa, npages);
  return r;
}

// ---- netstat: counters as text ----

static int put_str(char *b, int len, int cap, const char *s) {
  while (*s && len < cap) b[len++] = *s++;
  return len;
}

static int put_u64(char *b, int len, int cap, uint64 v) {
  char d[24];
  int k = 0;
  do { d[k++] = '0' + v % 10; v /= 10; } while (v);
  while (k && len < cap) b[len++] = d[--k];
  return len;
}

static int put_kv(char *b, int len, int cap, const char *k, uint64 v) {
  len = put_str(b, len, cap, k);
  len = put_str(b, len, cap, " ");
  len = put_u64(b, len, cap, v);
  return put_str(b, len, cap, "\n");
}

// One line per socket: "socket udp|icmp PORT queued N dropped M".
static int sock_dump(char *b, int len, int cap) {
  spin_lock(&sock_lock);
  for (int i = 0; i < NSOCK; i++) {
    struct sock *s = &socks[i];
    if (!s->used) continue;
    len = put_str(b, len, cap, s->type == SOCK_UDP ? "socket udp " : "socket icmp ");
    len = put_u64(b, len, cap, s->port);
    len = put_str(b, len, cap, " queued ");
    len = put_u64(b, len, cap, s->qlen);
    len = put_str(b, len, cap, " dropped ");
    len = put_u64(b, len, cap, s->drops);
    len = put_str(b, len, cap, "\n");
  }
  spin_unlock(&sock_lock);
  return len;
}

// Fills a page with "name value" lines: driver statistics, the stack's
// drop counters, buffer pool and ARP cache; copies at most n bytes out.
int64 sys_netstat(void) {
  uint64 uva = arg_addr(0);
  int n = arg_int(1);
  if (n < 0) return -1;
  char *b = page_alloc();
  if (!b) return -1;
  int len = 0, cap = PGSIZE;
  struct netdev_stats st;
  netdev_get_stats(&st);
  len = put_kv(b, len, cap, "dev_interrupts", st.interrupts);
  len = put_kv(b, len, cap, "dev_rx_frames", st.rx_frames);
  len = put_kv(b, len, cap, "dev_tx_frames", st.tx_frames);
  len = put_kv(b, len, cap, "dev_rx_bytes", st.rx_bytes);
  len = put_kv(b, len, cap, "dev_tx_bytes", st.tx_bytes);
  len = put_kv(b, len, cap, "dev_rx_errors", st.rx_errors);
  len = put_kv(b, len, cap, "dev_rx_no_buf", st.rx_no_buf);
  len = put_kv(b, len, cap, "dev_rx_missed", st.rx_missed);
  len = put_kv(b, len, cap, "dev_tx_ring_full", st.tx_ring_full);
  len = put_kv(b, len, cap, "dev_max_frames_per_wakeup", st.max_frames_per_irq);
  len = put_kv(b, len, cap, "dev_itr", st.itr);
  len = put_kv(b, len, cap, "dev_itr_class", st.itr_class);   // 0 lowest, 1 low, 2 bulk, 3 fixed
  len = put_kv(b, len, cap, "dev_itr_changes", st.itr_changes);
  len = put_kv(b, len, cap, "dev_itr_windows_lowest", st.itr_windows[NETDEV_ITR_LOWEST]);
  len = put_kv(b, len, cap, "dev_itr_windows_low", st.itr_windows[NETDEV_ITR_LOW]);
  len = put_kv(b, len, cap, "dev_itr_windows_bulk", st.itr_windows[NETDEV_ITR_BULK]);
  for (int i = 0; i < NC_COUNT; i++) len = put_kv(b, len, cap, net_counter_names[i], net_counters[i]);
  for (int i = 0; i < NB_COUNT; i++) len = put_kv(b, len, cap, netbuf_owner_names[i], netbuf_held(i));
  len = put_kv(b, len, cap, "sock_rcvq_burst_used", burst_used);
  len = sock_dump(b, len, cap);
  len += arp_dump(b + len, cap - len);
  if (len > n) len = n;
  int r = copy_out(current()->pagetable, uva, b, len) < 0 ? -1 : len;
  page_put((uint64)b);
  return r;
}

int64 sys_netinfo(void) {
  struct net_info ni;
  memset(&ni, 0, sizeof ni);
  ni.ip = netcfg.ip;
  ni.netmask = netcfg.netmask;
  memcpy(ni.mac, netcfg.mac, 6);
  ni.present = netdev_present();
  ni.link_up = netdev_link_up();
  return copy_out(current()->pagetable, arg_addr(0), &ni, sizeof ni);
}

int64 sys_arpwait(void) {
  uint32 ip = (uint32)arg_int(0);
  int timeout_ms = arg_int(2);
  uint8 mac[6];
  if (!netdev_present() || timeout_ms < 0) return -1;
  if (arp_resolve_wait(ip, mac, (uint64)timeout_ms * 1000000) < 0) return -2;
  return copy_out(current()->pagetable, arg_addr(1), mac, 6);
}
