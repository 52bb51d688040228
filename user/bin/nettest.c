// nettest.c: the guest side of the network tests and benchmarks
// (tests/net/, bench/net/). Each mode prints one result line that the host
// parses; numbers are decimal, rates are integers or fixed-point.
//
//   nettest info                          our ip, mac, link
//   nettest arp IP [timeout_ms]           resolve IP: "arp IP is-at MAC"
//   nettest stat                          the kernel's network counters
//   nettest send IP PORT SIZE COUNT RATE  COUNT datagrams, RATE per second (0: no pacing)
//   nettest recv PORT IDLE_MS [FIRST_MS]  count datagrams until IDLE_MS of silence
//   nettest xfer IP PORT SIZE COUNT RATE IDLE_MS START_MS
//                                        both at once: bind PORT ("xfer: ready on port
//                                        PORT"), a child sends after START_MS while we
//                                        count (prints sent, then received); START_MS
//                                        "stdin": the child sends once a line is typed
//                                        (a start barrier a test drives across guests)
//   nettest sweep IP PORT MIN MAX [STEP] [zc]  echo every size MIN..MAX off `udpecho -s PORT`;
//                                        zc: send with sendzc (payload DMA'd from our pages)
//   nettest blast IP PORT SIZE SECONDS    send as fast as possible
//   nettest sink PORT IDLE_MS             receive a blast: frames/s, MB/s, interrupts/frame
//   nettest lat IP PORT SIZE COUNT        echo round trips: min/median/p90/avg RTT, one-way = RTT/2
//   nettest kblast IP PORT SIZE SECONDS [FPS]  kernel burst (netblast: no syscall per
//                                        datagram); FPS > 0 paces it to FPS datagrams/s
//   nettest kburst IP PORT SIZE COUNT     exactly COUNT datagrams in one netblast call
//                                        (to NET_ROCE_SINK_PORT both send a RoCEv2 frame
//                                        body: a BTH, then data, then the ICRC the kernel
//                                        computes for every copy)
//   nettest kcount IDLE_MS [FIRST_MS]     count a kernel burst sent to a port nobody holds
//                                        or to NET_ROCE_SINK_PORT (the kernel checks each
//                                        ICRC and copies the payload) from the driver/stack
//                                        counters (no recvfrom)
//   nettest pollecho PORT                 one poll() loop over a UDP socket and stdin: echo
//                                        each datagram to its sender, answer each typed line
//                                        ("pollecho: line TEXT"); "quit" or ^D ends it
//   nettest flood PORT NSOCK SIZE          bind NSOCK sockets at PORT.. and never read them
//                                        while sending SIZE-byte datagrams to them through
//                                        our own address (loopback) as fast as we can, until
//                                        killed: the neighbour the receive limits are for
#include "user.h"

#define NS 1000000000ul

static void print_ip(unsigned int ip) {
  printf("%d.%d.%d.%d", ip >> 24, ip >> 16 & 255, ip >> 8 & 255, ip & 255);
}

static void print_mac(const unsigned char *m) {
  for (int i = 0; i < 6; i++) printf("%s%x%x", i ? ":" : "", m[i] >> 4, m[i] & 15);
}

__attribute__((noreturn)) static void die(const char *msg) { fprintf(stderr, "nettest: %s\n", msg); exit(1); }

static int udp_socket(int port) {
  int s = socket(SOCK_UDP);
  if (s < 0 || bind(s, port) < 0) die("cannot open or bind the socket");
  return s;
}

static unsigned long stat_value(const char *name) { return netstat_value(netstat_text(), name); }

static int cmd_info(void) {
  struct net_info ni;
  if (netinfo(&ni) < 0 || !ni.present) { printf("no network device\n"); return 1; }
  printf("ip "); print_ip(ni.ip); printf(" mac "); print_mac(ni.mac);
  printf(" link %s\n", ni.link_up ? "up" : "down");
  return 0;
}

static int cmd_arp(unsigned int ip, int timeout_ms) {
  unsigned char mac[6];
  int r = arpwait(ip, mac, timeout_ms);
  printf("arp "); print_ip(ip);
  if (r < 0) { printf(" timeout\n"); return 1; }
  printf(" is-at "); print_mac(mac); printf("\n");
  return 0;
}

static int cmd_stat(void) {
  static char buf[4096];
  int n = netstat(buf, sizeof buf);
  if (n < 0) return 1;
  write(STDOUT, buf, n);
  return 0;
}

// Fills a payload: a 4-byte sequence number, then a pattern.
static void fill(char *p, int size, unsigned int seq) {
  for (int k = 0; k < size; k++) p[k] = (char)(seq + k * 13);
  if (size >= 4) memcpy(p, &seq, 4);
}

static int cmd_send(unsigned int ip, int port, int size, int count, int rate) {
  int s = udp_socket(0);
  char *buf = malloc(size + 1);
  struct net_addr to = { ip, (unsigned short)port, 0 };
  unsigned long t0 = clock_ns();
  for (int i = 0; i < count; i++) {
    if (rate > 0)                          // pace: never ahead of rate * elapsed
      while ((unsigned long)i * NS / rate > clock_ns() - t0) sleep(1);
    fill(buf, size, i);
    if (sendto(s, buf, size, &to) < 0) die("send failed");
  }
  unsigned long ms = (clock_ns() - t0) / 1000000;
  printf("sent %d datagrams of %d bytes in %lu ms\n", count, size, ms);
  return 0;
}

static int cmd_recv(int port, int idle_ms, int first_ms) {
  int s = udp_socket(port);
  char *buf = malloc(NET_MAX_UDP_PAYLOAD);
  unsigned long count = 0, bytes = 0;
  struct net_addr from;
  printf("recv: ready on port %d\n", port);
  for (;;) {
    int n = recvfrom(s, buf, NET_MAX_UDP_PAYLOAD, &from, count ? idle_ms : first_ms);
    if (n == -2) break;
    if (n < 0) die("receive failed");
    count++;
    bytes += n;
  }
  printf("received %lu datagrams %lu bytes\n", count, bytes);
  return 0;
}

static int zero_copy;          // sweep ... zc

#define XFER_ON_INPUT (-1)   // START_MS "stdin": start when a line arrives on fd 0
#define XFER_FIRST_WAIT_MS 120000

// The sender child's start: after start_ms, or once a line is typed.
static void xfer_wait_start(int start_ms) {
  if (start_ms == XFER_ON_INPUT) {
    char c = 0;
    while (read(0, &c, 1) == 1 && c != '\n')
      ;
    return;
  }
  unsigned long start = clock_ns() + (unsigned long)start_ms * 1000000;
  while (clock_ns() < start) sleep(1);
}

static int cmd_xfer(unsigned int ip, int port, int size, int count, int rate, int idle_ms,
                    int start_ms) {
  int s = udp_socket(port);                 // bound before any peer starts sending
  printf("xfer: ready on port %d\n", port);
  int pid = fork();
  if (pid < 0) die("fork failed");
  if (pid == 0) {
    xfer_wait_start(start_ms);
    exit(cmd_send(ip, port, size, count, rate));
  }
  int first_ms = start_ms == XFER_ON_INPUT ? XFER_FIRST_WAIT_MS : start_ms + XFER_FIRST_WAIT_MS;
  char *buf = malloc(NET_MAX_UDP_PAYLOAD);
  unsigned long got = 0, bytes = 0;
  struct net_addr from;
  for (;;) {
    int n = recvfrom(s, buf, NET_MAX_UDP_PAYLOAD, &from, got ? idle_ms : first_ms);
    if (n == -2) break;
    if (n < 0) die("receive failed");
    got++;
    bytes += n;
  }
  int status = 1;
  wait(&status);
  printf("received %lu datagrams %lu bytes\n", got, bytes);
  return status;
}

static int echo_once(int s, struct net_addr *to, char *out, char *in, int size) {
  struct net_addr from;
  for (int attempt = 0; attempt < 4; attempt++) {
    if ((zero_copy ? sendzc(s, out, size, to) : sendto(s, out, size, to)) < 0) return -1;
    int n;
    do n = recvfrom(s, in, NET_MAX_UDP_PAYLOAD, &from, 1000);
    while (n >= 4 && size >= 4 && memcmp(in, out, 4) != 0);   // a stale echo
    if (n == -2) continue;
    return n == size && !memcmp(in, out, size) ? 0 : -1;
  }
  return -1;
}

static int cmd_sweep(unsigned int ip, int port, int min, int max, int step) {
  int s = udp_socket(0);
  char *out = malloc(NET_MAX_UDP_PAYLOAD), *in = malloc(NET_MAX_UDP_PAYLOAD);
  struct net_addr to = { ip, (unsigned short)port, 0 };
  int n = 0;
  unsigned long t0 = clock_ns();
  for (int size = min; size <= max; size += step, n++) {
    fill(out, size, 0x5a000000u | size);
    if (echo_once(s, &to, out, in, size) < 0) { printf("sweep FAIL at size %d\n", size); return 1; }
  }
  printf("sweep ok sizes %d..%d step %d%s: %d echoes in %lu ms\n", min, max, step,
         zero_copy ? " zero-copy" : "", n,
         (clock_ns() - t0) / 1000000);
  return 0;
}

// Echoes every datagram queued on the O_NONBLOCK socket s back to its
// sender, until recvfrom says none is left (-1); returns how many.
static unsigned long echo_queued(int s, char *buf) {
  struct net_addr from;
  unsigned long n = 0;
  int len;
  while ((len = recvfrom(s, buf, NET_MAX_UDP_PAYLOAD, &from, -1)) >= 0) {
    if (sendto(s, buf, len, &from) != len) die("echo failed");
    n++;
  }
  return n;
}

// The event loop of a Linux program: poll() with no timeout over a
// non-blocking socket and the console, each served when it is ready.
static int cmd_pollecho(int port) {
  int s = udp_socket(port);
  char *buf = malloc(NET_MAX_UDP_PAYLOAD), line[128];
  unsigned long echoed = 0, lines = 0;
  if (fcntl(s, F_SETFL, O_NONBLOCK) < 0) die("fcntl failed");
  printf("pollecho: ready on port %d\n", port);
  for (;;) {
    struct pollfd pf[2] = { { s, POLLIN, 0 }, { 0, POLLIN, 0 } };
    if (poll(pf, 2, -1) < 1) die("poll failed");
    if (pf[0].revents & POLLIN) echoed += echo_queued(s, buf);
    if (!(pf[1].revents & (POLLIN | POLLHUP))) continue;
    int n = read(0, line, sizeof line - 1);
    if (n <= 0) break;
    line[n] = 0;
    if (line[n - 1] == '\n') line[n - 1] = 0;
    if (!strcmp(line, "quit")) break;
    printf("pollecho: line %s\n", line);
    lines++;
  }
  printf("pollecho: echoed %lu datagrams, %lu lines\n", echoed, lines);
  return close(s) == 0 ? 0 : 1;
}

static void print_rate(const char *what, unsigned long frames, unsigned long bytes, unsigned long ns) {
  unsigned long us = ns / 1000 ? ns / 1000 : 1;
  unsigned long fps = frames * 1000000ul / us, mbps_milli = bytes * 1000ul / us;
  printf("%s %lu frames %lu bytes in %lu us: %lu frames/s %lu.%03lu MB/s\n", what, frames, bytes,
         us, fps, mbps_milli / 1000, mbps_milli % 1000);
}

static int cmd_blast(unsigned int ip, int port, int size, int seconds) {
  int s = udp_socket(0);
  char *buf = malloc(size + 1);
  struct net_addr to = { ip, (unsigned short)port, 0 };
  unsigned long t0 = clock_ns(), end = t0 + (unsigned long)seconds * NS, n = 0;
  while (n % 32 || clock_ns() < end) {     // read the clock every 32 frames
    fill(buf, size, n);
    if (sendto(s, buf, size, &to) < 0) die("send failed");
    n++;
  }
  print_rate("blast sent", n, n * size, clock_ns() - t0);
  return 0;
}

static int cmd_sink(int port, int idle_ms) {
  int s = udp_socket(port);
  char *buf = malloc(NET_MAX_UDP_PAYLOAD);
  struct net_addr from;
  unsigned long n = 0, bytes = 0, first = 0, last = 0, irq0 = 0, rx0 = 0;
  printf("sink: ready on port %d\n", port);
  for (;;) {
    int len = recvfrom(s, buf, NET_MAX_UDP_PAYLOAD, &from, n ? idle_ms : 60000);
    if (len == -2) break;
    if (len < 0) die("receive failed");
    last = clock_ns();
    if (n++ == 0) { first = last; irq0 = stat_value("dev_interrupts"); rx0 = stat_value("dev_rx_frames"); }
    else bytes += len;                      // the first datagram starts the clock
  }
  unsigned long irqs = stat_value("dev_interrupts") - irq0, frames = stat_value("dev_rx_frames") - rx0;
  if (n < 2) { printf("sink got %lu datagrams\n", n); return 1; }
  print_rate("sink received", n - 1, bytes, last - first);
  printf("sink interrupts %lu for %lu frames: %lu.%03lu interrupts/frame\n", irqs, frames,
         frames ? irqs / frames : 0, frames ? irqs * 1000 / frames % 1000 : 0);
  return 0;
}

// Kernel burst: netblast in calls of KBLAST_CALL datagrams until SECONDS
// have passed (at most fps a second when fps > 0), or (seconds 0) exactly
// count datagrams in one call.
#define KBLAST_CALL 512

// The BTH of an RC RDMA WRITE middle packet to QP 0x11, PSN 0x22, pad 0
// (big-endian fields): what a RoCE blast's frames begin with.
static const unsigned char blast_bth[12] = { 0x07, 0x00, 0xff, 0xff, 0, 0, 0, 0x11, 0, 0, 0, 0x22 };

static int cmd_kblast(unsigned int ip, int port, int size, int seconds, int count, int fps) {
  int s = udp_socket(0);
  char *buf = malloc(size + 1);
  struct net_addr to = { ip, (unsigned short)port, 0 };
  fill(buf, size, 0x6b000000u);
  if (port == NET_ROCE_SINK_PORT && size >= (int)sizeof blast_bth)
    memcpy(buf, blast_bth, sizeof blast_bth);
  unsigned long t0 = clock_ns(), end = t0 + (unsigned long)seconds * NS, n = 0;
  do {
    // Paced (fps > 0): only the datagrams due by now, else a tick's sleep;
    // a burst the receiver cannot take is lost in the host, and the
    // sender's CPU it costs comes off the receiver's on a small host.
    unsigned long due = fps ? (clock_ns() - t0) / 1000 * (unsigned long)fps / 1000000 : n + KBLAST_CALL;
    if (due <= n) { sleep(1); continue; }
    int want = seconds ? (due - n < KBLAST_CALL ? (int)(due - n) : KBLAST_CALL) : count;
    int r = netblast(s, buf, size, &to, want);
    if (r < 0) die("netblast failed");
    n += r;
  } while (seconds && clock_ns() < end);
  print_rate(seconds ? "kblast sent" : "kburst sent", n, n * size, clock_ns() - t0);
  return 0;
}

// What the receiver's counters say at one moment.
struct rx_sample { unsigned long t, datagrams, frames, bytes, irqs, no_buf, missed; };

static void rx_sample(struct rx_sample *x) {
  const char *st = netstat_text();
  x->t = clock_ns();
  x->datagrams = netstat_value(st, "udp_no_port") +    // went through eth/ip/udp demux
                 netstat_value(st, "roce_sink_ok") + netstat_value(st, "roce_sink_bad_icrc");
  x->frames = netstat_value(st, "dev_rx_frames");
  x->bytes = netstat_value(st, "dev_rx_bytes");
  x->irqs = netstat_value(st, "dev_interrupts");
  x->no_buf = netstat_value(st, "dev_rx_no_buf");
  x->missed = netstat_value(st, "dev_rx_missed");
}

// Receiver of a kernel burst to a port nobody holds: the stack drops each
// datagram after the UDP demux (it sends no ICMP port-unreachable), so the
// receiver's work per frame is the driver plus eth/ip/udp, as for RoCEv2
// frames. Samples the counters every tick; the rate runs from the first
// sample that saw the burst to the last one that saw it grow.
static int cmd_kcount(int idle_ms, int first_ms) {
  struct rx_sample base, first, last, now;
  rx_sample(&base);
  first = last = base;
  printf("kcount: ready\n");
  for (;;) {
    sleep(1);
    rx_sample(&now);
    int started = first.t != base.t;
    if (now.datagrams != last.datagrams) {
      if (!started) first = now;
      last = now;
      continue;
    }
    unsigned long quiet_ms = (now.t - (started ? last.t : base.t)) / 1000000;
    if (quiet_ms > (unsigned long)(started ? idle_ms : first_ms)) break;
  }
  if (last.datagrams - first.datagrams < 1) {
    printf("kcount got %lu datagrams\n", last.datagrams - base.datagrams);
    return 1;
  }
  unsigned long n = last.datagrams - first.datagrams, frames = last.frames - first.frames;
  unsigned long bytes = last.bytes - first.bytes, headers = frames * 42;   // Eth + IPv4 + UDP
  print_rate("kcount received", n, bytes > headers ? bytes - headers : 0, last.t - first.t);
  unsigned long irqs = last.irqs - first.irqs;
  printf("kcount interrupts %lu for %lu frames: %lu.%03lu interrupts/frame\n", irqs, frames,
         frames ? irqs / frames : 0, frames ? irqs * 1000 / frames % 1000 : 0);
  printf("kcount total %lu datagrams %lu frames, rx_no_buf %lu rx_missed %lu\n",
         last.datagrams - base.datagrams, last.frames - base.frames, last.no_buf - base.no_buf,
         last.missed - base.missed);
  return 0;
}

static int cmd_lat(unsigned int ip, int port, int size, int count) {
  int s = udp_socket(0);
  char *out = malloc(NET_MAX_UDP_PAYLOAD), *in = malloc(NET_MAX_UDP_PAYLOAD);
  unsigned long *rtt = malloc(sizeof(unsigned long) * (count > 0 ? count : 1));
  struct net_addr to = { ip, (unsigned short)port, 0 };
  unsigned long sum = 0;
  int ok = 0;
  for (int i = 0; i < count; i++) {
    fill(out, size, 0x1a000000u | i);
    unsigned long t0 = clock_ns();
    if (echo_once(s, &to, out, in, size) < 0) continue;
    unsigned long r = clock_ns() - t0;
    int k = ok++;                            // insertion sort: count is small
    for (; k > 0 && rtt[k - 1] > r; k--) rtt[k] = rtt[k - 1];
    rtt[k] = r;
    sum += r;
  }
  if (!ok) { printf("lat: no echoes\n"); return 1; }
  unsigned long avg = sum / ok, med = rtt[ok / 2], p90 = rtt[ok * 9 / 10];
  printf("lat %d echoes of %d bytes: rtt min %lu us median %lu us p90 %lu us avg %lu us, "
         "one-way min %lu us median %lu us avg %lu us\n", ok, size, rtt[0] / 1000, med / 1000,
         p90 / 1000, avg / 1000, rtt[0] / 2000, med / 2000, avg / 2000);
  return 0;
}

#define FLOOD_MAX_SOCKS (OPEN_MAX - 4)   // descriptors left beside stdio and the sending socket

static int cmd_flood(int port, int nsock, int size) {
  struct net_info ni;
  if (nsock < 1 || nsock > FLOOD_MAX_SOCKS || size < 0 || size > NET_MAX_UDP_PAYLOAD) {
    fprintf(stderr, "nettest: flood: NSOCK must be 1..%d and SIZE 0..%d\n", FLOOD_MAX_SOCKS,
            NET_MAX_UDP_PAYLOAD);
    exit(2);
  }
  if (netinfo(&ni) < 0 || !ni.ip) die("flood: no address to send to ourselves");
  for (int i = 0; i < nsock; i++) udp_socket(port + i);   // held open, never read
  int s = socket(SOCK_UDP);
  char *buf = malloc(size + 1);
  if (s < 0 || !buf) die("flood: no sending socket");
  memset(buf, 0x5a, size + 1);
  printf("flood: pid %d flooding %d unread sockets on ports %d..%d\n", getpid(), nsock, port,
         port + nsock - 1);
  for (unsigned long n = 0;; n++) {
    struct net_addr to = { ni.ip, (unsigned short)(port + n % nsock), 0 };
    if (sendto(s, buf, size, &to) < 0) die("flood: sendto failed");
  }
}

__attribute__((noreturn)) static void usage(void) {
  fprintf(stderr, "usage: nettest info | arp IP [ms] | stat | send IP PORT SIZE COUNT RATE |\n"
                  "  recv PORT IDLE_MS [FIRST_MS] | xfer IP PORT SIZE COUNT RATE IDLE_MS START_MS |\n"
                  "  sweep IP PORT MIN MAX [STEP] [zc] |\n"
                  "  blast IP PORT SIZE SECONDS | sink PORT IDLE_MS | lat IP PORT SIZE COUNT |\n"
                  "  kblast IP PORT SIZE SECONDS [FPS] | kburst IP PORT SIZE COUNT |\n"
                  "  kcount IDLE_MS [FIRST_MS] | pollecho PORT | flood PORT NSOCK SIZE\n");
  exit(2);
}

int main(int argc, char **argv) {
  if (argc < 2) usage();
  const char *m = argv[1];
  int a[6] = {0};
  for (int i = 3; i < argc && i < 9; i++) a[i - 3] = atoi(argv[i]);
  unsigned int ip = argc > 2 ? inet_parse(argv[2]) : 0;
  if (!strcmp(m, "info")) exit(cmd_info());
  if (!strcmp(m, "stat")) exit(cmd_stat());
  if (!strcmp(m, "arp") && ip) exit(cmd_arp(ip, argc > 3 ? a[0] : 3000));
  if (!strcmp(m, "send") && ip && argc == 7) exit(cmd_send(ip, a[0], a[1], a[2], a[3]));
  if (!strcmp(m, "recv") && argc >= 4) exit(cmd_recv(atoi(argv[2]), a[0], argc > 4 ? a[1] : 60000));
  if (!strcmp(m, "xfer") && ip && argc == 9)
    exit(cmd_xfer(ip, a[0], a[1], a[2], a[3], a[4], strcmp(argv[8], "stdin") ? a[5] : XFER_ON_INPUT));
  if (!strcmp(m, "sweep") && ip && argc >= 6) {
    zero_copy = !strcmp(argv[argc - 1], "zc");
    exit(cmd_sweep(ip, a[0], a[1], a[2], argc > 6 && a[3] > 0 ? a[3] : 1));
  }
  if (!strcmp(m, "blast") && ip && argc == 6) exit(cmd_blast(ip, a[0], a[1], a[2]));
  if (!strcmp(m, "sink") && argc == 4) exit(cmd_sink(atoi(argv[2]), a[0]));
  if (!strcmp(m, "lat") && ip && argc == 6) exit(cmd_lat(ip, a[0], a[1], a[2]));
  if (!strcmp(m, "kblast") && ip && (argc == 6 || argc == 7) && a[2] > 0 && a[3] >= 0)
    exit(cmd_kblast(ip, a[0], a[1], a[2], 0, a[3]));
  if (!strcmp(m, "kburst") && ip && argc == 6 && a[2] > 0) exit(cmd_kblast(ip, a[0], a[1], 0, a[2], 0));
  if (!strcmp(m, "flood") && argc == 5) exit(cmd_flood(atoi(argv[2]), atoi(argv[3]), atoi(argv[4])));
  if (!strcmp(m, "pollecho") && argc == 3) exit(cmd_pollecho(atoi(argv[2])));
  if (!strcmp(m, "kcount") && argc >= 3)
    exit(cmd_kcount(atoi(argv[2]), argc > 3 ? atoi(argv[3]) : 60000));
  usage();
}
