// socket.h: the socket objects (net/socket.c) that the network system calls
// (sys/sysnet.c) and the benchmark paths (sys/sysbench.c) use.
#ifndef SOCKET_H
#define SOCKET_H
#include "lib/types.h"

#define NSOCK 32                // the table: sockets open at once, all processes

struct sock {
  int used;
  int type;                   // SOCK_UDP or SOCK_ICMP
  uint16 port;                // UDP: bound port (0 = none); ICMP: echo id
  struct netbuf *q, *qtail;   // received, oldest first
  int qlen;
  int readers;               // recvfrom/read calls asleep on this socket
  uint64 drops;              // datagrams dropped past the receive limits
};

// One open socket, as netstat shows it.
struct sock_stat { int type; uint16 port; int qlen; uint64 drops; };

void sock_init(void);           // boot: the table, the ICMP echo-reply sink
// A new socket of type (SOCK_UDP, SOCK_ICMP) behind a new descriptor:
// the descriptor, or -1 (bad type, table or descriptors full).
int sock_open(int type);
// The socket behind descriptor fd of the current process, or NULL.
struct sock *sock_fd(int fd);
// Caller must not hold the socket lock. Claims UDP port (0: a random free
// one of the ephemeral range); 0, or -1 (not UDP, bound, taken, reserved).
int sock_bind(struct sock *s, int port);
// The oldest datagram into buf (n bytes at most; the rest is lost), its
// source into from_uva (0: not wanted). Sleeps until one is queued or
// deadline (~0: none): -2 at the deadline; nonblock: -1 at once if none;
// -1 if killed or for a bad buffer. Returns the bytes copied.
int sock_recv(struct sock *s, int nonblock, uint64 buf, int n, uint64 from_uva, uint64 deadline);
// The open sockets, at most max of them, into out; returns how many.
int sock_stats(struct sock_stat *out, int max);
int sock_burst_used(void);      // datagrams queued past the sockets' minimums
#endif
