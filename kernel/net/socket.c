// socket.c: the socket objects behind the network system calls (sysnet.c):
// the table, each socket's receive queue and its limits, delivery from UDP
// and ICMP, the file ops of a socket descriptor, and port binding.
//
// A socket is a slot in a small table behind a file descriptor: fork and
// dup share it, and it is released when its last descriptor closes (close,
// sockclose, exit), so the number a process may hold is bounded by its
// descriptor table. Two kinds:
//   SOCK_UDP   sock_bind(port) claims a UDP port through udp_register_port();
//              a send picks an ephemeral port if none is bound.
//   SOCK_ICMP  sends are echo requests (to->port is the sequence number);
//              receives are echo replies carrying this socket's id
//              (from->port = their sequence number).
// Received datagrams wait in the socket's queue, within the receive limits
// below (more are dropped and counted: sock_rcvq_drop, and per socket in
// netstat's `socket` lines). read() is a receive without the source
// address; write() fails (no connected UDP). poll() reports POLLIN while a
// datagram is queued and POLLOUT always (sends do not wait for a reader).
#include "lib/types.h"
#include "lib/param.h"
#include "core/lock.h"
#include "core/proc.h"
#include "lib/klib.h"
#include "core/timer.h"
#include "core/poll.h"
#include "fs/file.h"
#include "core/vm.h"
#include "lib/uapi.h"
#include "net/net.h"
#include "net/socket.h"
#include "dev/random.h"

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

static struct sock socks[NSOCK];
static struct spinlock sock_lock;
static int burst_used;        // queued past SOCK_RCVQ_MIN, over all sockets (sock_lock)

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

void sock_init(void) {
  icmp_set_echo_reply_sink(sock_icmp_deliver);
  spin_init(&sock_lock, "sock");
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

int sock_open(int type) {
  if (type != SOCK_UDP && type != SOCK_ICMP) return -1;
  struct sock *s = sock_alloc(type);
  if (!s) return -1;
  int fd = fd_open_obj(&sock_ops, s);
  if (fd < 0) sock_release(s);
  return fd;
}

struct sock *sock_fd(int fd) { return fd_obj(fd, &sock_ops); }

// Caller must not hold sock_lock. Claims port (0: a random free one in
// the ephemeral range, so a stranger cannot guess a CM reply port
// [SEC-RAND-8]; a port someone holds is never taken twice: the
// registration refuses it and we draw again).
int sock_bind(struct sock *s, int port) {
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

// Takes the oldest datagram of s into buf (at most n bytes; the rest of
// it is lost) and its source into from_uva (0: not wanted). Sleeps until
// one is queued or deadline (~0: none) passes: -2; nonblock: -1 at once if
// none is queued; -1 if killed or for a bad buffer.
int sock_recv(struct sock *s, int nonblock, uint64 buf, int n, uint64 from_uva,
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

int sock_stats(struct sock_stat *out, int max) {
  int n = 0;
  spin_lock(&sock_lock);
  for (int i = 0; i < NSOCK && n < max; i++) {
    struct sock *s = &socks[i];
    if (s->used) out[n++] = (struct sock_stat){ s->type, s->port, s->qlen, s->drops };
  }
  spin_unlock(&sock_lock);
  return n;
}

int sock_burst_used(void) { return burst_used; }
