// sysnet.c: the network system calls (numbers in uapi.h): socket, bind,
// sendto, recvfrom, sockclose over the socket objects (net/socket.c), and
// netstat, netinfo, arpwait. The benchmark-only sends (sendzc, netblast)
// are sysbench.c's.
//
// recvfrom() sleeps up to timeout_ms (< 0: no limit) and returns -2 on
// timeout; with O_NONBLOCK it returns -1 at once if nothing is queued.
#include "lib/types.h"
#include "lib/param.h"
#include "core/proc.h"
#include "lib/klib.h"
#include "core/timer.h"
#include "fs/file.h"
#include "core/vm.h"
#include "core/pmem.h"
#include "lib/riscv.h"
#include "proc/args.h"
#include "sys/syscall.h"
#include "lib/uapi.h"
#include "net/net.h"
#include "net/netdev.h"
#include "net/socket.h"

void sysnet_init(void) {
  sock_init();
  sysbench_init();
}

int64 sys_socket(void) { return sock_open(arg_int(0)); }

int64 sys_bind(void) {
  struct sock *s = sock_fd(arg_int(0));
  return s ? sock_bind(s, arg_int(1)) : -1;
}

int64 sys_sendto(void) {
  struct sock *s = sock_fd(arg_int(0));
  uint64 buf = arg_addr(1);
  int n = arg_int(2);
  struct net_addr to;
  if (!s || n < 0 || copy_in(current()->pagetable, &to, arg_addr(3), sizeof to) < 0) return -1;
  int max = NETDEV_MTU - IP_HLEN - (s->type == SOCK_UDP ? UDP_HLEN : 8);
  if (n > max || !netdev_present() || !netcfg.ip) return -1;
  if (s->type == SOCK_UDP && !s->port && sock_bind(s, 0) < 0) return -1;
  struct netbuf *nb = netbuf_alloc_wait();
  if (!nb) return -1;
  if (copy_in(current()->pagetable, nb->data, buf, n) < 0) { netbuf_free(nb); return -1; }
  nb->len = n;
  netdev_tx_wait(1);                       // do not drop our own frame on a full ring
  if (s->type == SOCK_UDP) udp_output(nb, s->port, to.ip, to.port);
  else icmp_echo_send(to.ip, s->port, to.port, nb);
  return n;
}

int64 sys_recvfrom(void) {
  int fd = arg_int(0), timeout_ms = arg_int(4);
  struct sock *s = sock_fd(fd);
  if (!s) return -1;
  uint64 deadline = timeout_ms < 0 ? ~0ull : clock_ns() + (uint64)timeout_ms * 1000000;
  return sock_recv(s, file_nonblock(fd_file(fd)), arg_addr(1), arg_int(2), arg_addr(3), deadline);
}

int64 sys_sockclose(void) { return sock_fd(arg_int(0)) ? fd_close(arg_int(0)) : -1; }

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
  struct sock_stat st[NSOCK];
  int n = sock_stats(st, NSOCK);
  for (int i = 0; i < n; i++) {
    len = put_str(b, len, cap, st[i].type == SOCK_UDP ? "socket udp " : "socket icmp ");
    len = put_u64(b, len, cap, st[i].port);
    len = put_str(b, len, cap, " queued ");
    len = put_u64(b, len, cap, st[i].qlen);
    len = put_str(b, len, cap, " dropped ");
    len = put_u64(b, len, cap, st[i].drops);
    len = put_str(b, len, cap, "\n");
  }
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
  len = put_kv(b, len, cap, "dev_tx_doorbells", st.tx_doorbells);
  len = put_kv(b, len, cap, "dev_max_frames_per_wakeup", st.max_frames_per_irq);
  len = put_kv(b, len, cap, "dev_itr", st.itr);
  len = put_kv(b, len, cap, "dev_itr_class", st.itr_class);   // 0 lowest, 1 low, 2 bulk, 3 fixed
  len = put_kv(b, len, cap, "dev_itr_changes", st.itr_changes);
  len = put_kv(b, len, cap, "dev_itr_windows_lowest", st.itr_windows[NETDEV_ITR_LOWEST]);
  len = put_kv(b, len, cap, "dev_itr_windows_low", st.itr_windows[NETDEV_ITR_LOW]);
  len = put_kv(b, len, cap, "dev_itr_windows_bulk", st.itr_windows[NETDEV_ITR_BULK]);
  for (int i = 0; i < NC_COUNT; i++) len = put_kv(b, len, cap, net_counter_names[i], net_counters[i]);
  int held[NB_COUNT];
  netbuf_held_all(held);
  for (int i = 0; i < NB_COUNT; i++) len = put_kv(b, len, cap, netbuf_owner_names[i], held[i]);
  len = put_kv(b, len, cap, "sock_rcvq_burst_used", sock_burst_used());
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
