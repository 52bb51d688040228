/*
 * linkemu.c: a real-time lossy Ethernet relay between QEMU guests.
 *
 * Owns the relay loop: it receives a frame on a guest's port, asks that
 * port's impairment engine (netem/impair.c) for the frame's fate with the
 * real clock (CLOCK_MONOTONIC), and queues surviving copies in a timer heap
 * until their departure time, when the learning switch forwards them (known
 * unicast MAC: one port; broadcast, multicast or unknown: every other port).
 * It sleeps in ppoll() until the next frame or departure, so an idle relay
 * costs nothing.
 *
 * Guest side (QEMU 7.2+), guest i:
 *   -netdev dgram,id=n0,remote.type=inet,remote.host=127.0.0.1,remote.port=LISTEN_i,
 *           local.type=inet,local.host=127.0.0.1,local.port=GUEST_i
 *
 * Usage: linkemu --port LISTEN[:GUEST] --port ... [options]
 *   --a2b SPEC / --b2a SPEC  impairments of frames from guest 0 / guest 1
 *   --both SPEC              the same spec on every port (each its own stream)
 *   --in N SPEC              impairments of frames entering port N
 *   --pcap DIR               DIR/port<N>.pcap: what guest N sent and received
 *   --stats FILE             JSON counters, every second, on SIGUSR1, at exit
 *   --control PORT           UDP control socket on 127.0.0.1 (see linkemu_ctl.c)
 *   --duration SECONDS       exit after this long (default: until SIGTERM/SIGINT)
 *   --max-pending N          frames queued at most (default 65536)
 *   -v                       log each frame's fate to stderr
 * SPEC is tc-netem grammar plus `seed N`, `drop LIST`, `blackhole SCHEDULE`
 * (see impair.h). Blackhole times count from start (or from a control `set`).
 */
#include "linkemu.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t got_term, got_usr1;

static void on_signal(int sig)
{
  if (sig == SIGUSR1)
    got_usr1 = 1;
  else
    got_term = 1;
}

uint64_t le_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die(const char *msg)
{
  fprintf(stderr, "linkemu: %s\n", msg);
  exit(1);
}

/* ---- the departure heap (min by depart, then arrival order) ---- */

static int pend_less(const struct le_pending *a, const struct le_pending *b)
{
  return a->depart < b->depart || (a->depart == b->depart && a->seq < b->seq);
}

static void heap_push(struct linkemu *le, struct le_pending e)
{
  if (le->nheap == le->capheap) {
    uint32_t cap = le->capheap ? le->capheap * 2 : 256;
    struct le_pending *h = realloc(le->heap, sizeof *h * cap);
    if (!h)
      die("out of memory");
    le->heap = h;
    le->capheap = cap;
  }
  uint32_t i = le->nheap++;
  le->heap[i] = e;
  while (i && pend_less(&le->heap[i], &le->heap[(i - 1) / 2])) {
    struct le_pending t = le->heap[i];
    le->heap[i] = le->heap[(i - 1) / 2];
    le->heap[(i - 1) / 2] = t;
    i = (i - 1) / 2;
  }
}

static struct le_pending heap_pop(struct linkemu *le)
{
  struct le_pending top = le->heap[0];
  le->heap[0] = le->heap[--le->nheap];
  for (uint32_t i = 0;;) {
    uint32_t l = 2 * i + 1, m = i;
    if (l < le->nheap && pend_less(&le->heap[l], &le->heap[m])) m = l;
    if (l + 1 < le->nheap && pend_less(&le->heap[l + 1], &le->heap[m])) m = l + 1;
    if (m == i) break;
    struct le_pending t = le->heap[i]; le->heap[i] = le->heap[m]; le->heap[m] = t;
    i = m;
  }
  return top;
}

/* ---- the learning switch ---- */

static unsigned mac_hash(const uint8_t *m)
{
  unsigned h = 2166136261u;
  for (int i = 0; i < 6; i++)
    h = (h ^ m[i]) * 16777619u;
  return h % LE_MAC_TABLE;
}

static void mac_learn(struct linkemu *le, const uint8_t *src, int port)
{
  if (src[0] & 1)
    return;                              /* never learn a group address */
  for (unsigned k = 0, h = mac_hash(src); k < LE_MAC_TABLE; k++, h = (h + 1) % LE_MAC_TABLE) {
    struct le_mac *e = &le->mac[h];
    if (!e->used || memcmp(e->mac, src, 6) == 0) {
      e->used = 1;
      memcpy(e->mac, src, 6);
      e->port = port;
      return;
    }
  }
}

static int mac_lookup(const struct linkemu *le, const uint8_t *dst)
{
  if (dst[0] & 1)
    return -1;                           /* broadcast / multicast: flood */
  for (unsigned k = 0, h = mac_hash(dst); k < LE_MAC_TABLE; k++, h = (h + 1) % LE_MAC_TABLE) {
    const struct le_mac *e = &le->mac[h];
    if (!e->used)
      return -1;
    if (memcmp(e->mac, dst, 6) == 0)
      return e->port;
  }
  return -1;
}

/* ---- forwarding ---- */

static void send_to(struct le_port *p, const uint8_t *data, uint32_t len)
{
  if (!p->guest_known)
    return;
  if (sendto(p->fd, data, len, 0, (const struct sockaddr *)&p->guest, sizeof p->guest) < 0) {
    p->tx_errors++;
    return;
  }
  p->tx++;
  le_pcap_write(p, data, len);
}

static void depart(struct linkemu *le, struct le_pending *e)
{
  int out = e->len >= 14 ? mac_lookup(le, e->data) : -1;
  if (out >= 0) {
    if (out != e->ingress)
      send_to(&le->port[out], e->data, e->len);
  } else {
    le->port[e->ingress].flooded++;
    for (int i = 0; i < le->nports; i++)
      if (i != e->ingress)
        send_to(&le->port[i], e->data, e->len);
  }
  free(e->data);
}

static void enqueue(struct linkemu *le, int ingress, uint64_t when, const uint8_t *data,
                    uint32_t len)
{
  if (le->nheap >= le->pending_max) {
    le->overflow++;
    return;
  }
  struct le_pending e = {when, le->seq++, ingress, len, malloc(len ? len : 1)};
  if (!e.data)
    die("out of memory");
  memcpy(e.data, data, len);
  heap_push(le, e);
}

static void receive(struct linkemu *le, int i)
{
  static uint8_t buf[LE_MAX_FRAME];
  struct le_port *p = &le->port[i];
  struct sockaddr_in from;
  socklen_t flen = sizeof from;
  ssize_t n = recvfrom(p->fd, buf, sizeof buf, MSG_DONTWAIT, (struct sockaddr *)&from, &flen);
  if (n < 0)
    return;
  uint64_t now = le_now();
  if (!p->guest_known) {
    p->guest = from;                    /* learn where the guest listens */
    p->guest_known = 1;
  }
  p->rx++;
  le_pcap_write(p, buf, (uint32_t)n);
  if (n >= 14)
    mac_learn(le, buf + 6, i);

  struct impair_verdict v;
  impair_decide(&p->im, p->index++, now, (uint32_t)n, &v);
  if (le->verbose)
    fprintf(stderr, "linkemu: port %d frame %llu len %zd %s%s%s\n", i,
            (unsigned long long)v.index, n, impair_cause_name[v.drop], v.dup ? " dup" : "",
            v.corrupt ? " corrupt" : "");
  if (v.drop != IMPAIR_KEEP)
    return;
  if (v.dup)
    enqueue(le, i, v.dup_depart_ns, buf, (uint32_t)n);   /* the clean copy */
  impair_apply_corrupt(&v, buf, (uint32_t)n);
  enqueue(le, i, v.depart_ns, buf, (uint32_t)n);
}

static void run(struct linkemu *le, uint64_t end)
{
  struct pollfd pfd[LE_MAX_PORTS + 1];
  uint64_t next_stats = le_now() + 1000000000ull;
  for (int i = 0; i < le->nports; i++)
    pfd[i] = (struct pollfd){.fd = le->port[i].fd, .events = POLLIN};
  pfd[le->nports] = (struct pollfd){.fd = le->ctl_fd, .events = POLLIN};
  int nfds = le->nports + (le->ctl_fd >= 0);

  while (!got_term) {
    uint64_t now = le_now();
    while (le->nheap && le->heap[0].depart <= now) {
      struct le_pending e = heap_pop(le);
      depart(le, &e);
    }
    if (now >= end)
      break;
    if (got_usr1 || now >= next_stats) {
      got_usr1 = 0;
      le_stats_write(le);
      next_stats = now + 1000000000ull;
    }
    uint64_t wake = next_stats < end ? next_stats : end;
    if (le->nheap && le->heap[0].depart < wake)
      wake = le->heap[0].depart;
    uint64_t dt = wake > now ? wake - now : 0;
    struct timespec ts = {(time_t)(dt / 1000000000ull), (long)(dt % 1000000000ull)};
    int rc = ppoll(pfd, (nfds_t)nfds, &ts, NULL);
    if (rc < 0 && errno != EINTR)
      die("ppoll failed");
    for (int i = 0; rc > 0 && i < le->nports; i++)
      if (pfd[i].revents & POLLIN)
        for (int k = 0; k < 64; k++) {   /* drain a burst, bounded */
          uint64_t before = le->port[i].rx;
          receive(le, i);
          if (le->port[i].rx == before)
            break;
        }
    if (rc > 0 && le->ctl_fd >= 0 && (pfd[le->nports].revents & POLLIN))
      le_ctl_handle(le);
  }
}

/* ---- setup ---- */

/* Socket buffers big enough for a guest's whole burst while we are not
 * scheduled: a kernel burst of 5000 1-KiB frames arrives in ~40 ms, and a
 * frame that finds the receive buffer full is lost before we see it
 * (uncounted). Root may exceed net.core.rmem_max / wmem_max (the FORCE
 * options); others get up to that maximum. */
static void set_socket_buffers(int fd)
{
  int big = 16 << 20, plain = 4 << 20;
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big) < 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &plain, sizeof plain);
  if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof big) < 0)
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &plain, sizeof plain);
}

static int open_port(struct le_port *p, const char *arg)
{
  char *end;
  unsigned long listen = strtoul(arg, &end, 10), guest = 0;
  if (end == arg || listen == 0 || listen > 65535)
    return -1;
  if (*end == ':') {
    const char *g = end + 1;
    guest = strtoul(g, &end, 10);
    if (end == g || guest == 0 || guest > 65535)
      return -1;
  }
  if (*end)
    return -1;
  p->listen = (uint16_t)listen;
  p->fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (p->fd < 0)
    return -1;
  set_socket_buffers(p->fd);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(p->listen)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(p->fd, (struct sockaddr *)&a, sizeof a) < 0) {
    fprintf(stderr, "linkemu: bind 127.0.0.1:%u: %s\n", p->listen, strerror(errno));
    exit(1);
  }
  if (guest) {
    p->guest = a;
    p->guest.sin_port = htons((uint16_t)guest);
    p->guest_known = 1;
  }
  return 0;
}

static void usage(void)
{
  fprintf(stderr,
          "usage: linkemu --port LISTEN[:GUEST] --port LISTEN[:GUEST] [...]\n"
          "       [--a2b SPEC] [--b2a SPEC] [--both SPEC] [--in N SPEC]\n"
          "       [--pcap DIR] [--stats FILE] [--control PORT] [--duration SEC]\n"
          "       [--max-pending N] [-v]\n"
          "SPEC: tc-netem grammar, e.g. \"delay 1ms 100us loss 1%% seed 7 drop 3,7 blackhole 2s-4s\"\n");
  exit(2);
}

struct spec_opt { int port; const char *spec; };

int main(int argc, char **argv)
{
  static struct linkemu le;
  struct spec_opt specs[64];
  int nspecs = 0;
  double duration = 0;
  long ctl_port = 0;
  le.ctl_fd = -1;
  le.pending_max = 65536;

  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "-v")) { le.verbose = 1; continue; }
    if (!v || nspecs >= 63) usage();
    i++;
    if (!strcmp(a, "--port")) {
      if (le.nports == LE_MAX_PORTS || open_port(&le.port[le.nports], v) < 0) {
        fprintf(stderr, "linkemu: bad --port '%s' (want LISTEN or LISTEN:GUEST)\n", v);
        exit(2);
      }
      le.nports++;
    } else if (!strcmp(a, "--a2b")) specs[nspecs++] = (struct spec_opt){0, v};
    else if (!strcmp(a, "--b2a")) specs[nspecs++] = (struct spec_opt){1, v};
    else if (!strcmp(a, "--both")) specs[nspecs++] = (struct spec_opt){-1, v};
    else if (!strcmp(a, "--in")) {
      char *end;
      long port = strtol(v, &end, 10);
      if (i + 1 >= argc || end == v || *end || port < 0) usage();
      specs[nspecs++] = (struct spec_opt){(int)port, argv[++i]};
    } else if (!strcmp(a, "--pcap")) le.pcap_dir = v;
    else if (!strcmp(a, "--stats")) le.stats_path = v;
    else if (!strcmp(a, "--control")) ctl_port = strtol(v, NULL, 10);
    else if (!strcmp(a, "--duration")) duration = strtod(v, NULL);
    else if (!strcmp(a, "--max-pending")) le.pending_max = strtoull(v, NULL, 10);
    else usage();
  }
  if (le.nports < 2)
    usage();

  le.start_ns = le_now();
  char err[256];
  for (int i = 0; i < le.nports; i++)
    if (impair_parse(&le.port[i].im, "", i, err, sizeof err) < 0)
      die(err);
  for (int k = 0; k < nspecs; k++) {
    if (specs[k].port >= le.nports) {
      fprintf(stderr, "linkemu: no port %d for its spec (have %d ports)\n", specs[k].port, le.nports);
      exit(2);
    }
    if (le_set_spec(&le, specs[k].port, specs[k].spec, err, sizeof err) < 0) {
      fprintf(stderr, "linkemu: bad spec \"%s\": %s\n", specs[k].spec, err);
      exit(2);
    }
  }
  for (int i = 0; i < le.nports; i++)
    if (le.pcap_dir && le_pcap_open(&le, i) < 0)
      exit(1);
  if (ctl_port && le_ctl_open(&le, (uint16_t)ctl_port) < 0)
    exit(1);

  struct sigaction sa = {.sa_handler = on_signal};
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGUSR1, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);

  uint64_t end = duration > 0 ? le.start_ns + (uint64_t)(duration * 1e9) : UINT64_MAX;
  fprintf(stderr, "linkemu: relaying %d ports", le.nports);
  for (int i = 0; i < le.nports; i++)
    fprintf(stderr, " %u[%s]", le.port[i].listen, le.port[i].spec);
  fprintf(stderr, "\n");
  run(&le, end);
  le_stats_write(&le);
  for (int i = 0; i < le.nports; i++) {
    if (le.port[i].pcap)
      fclose(le.port[i].pcap);
    impair_free(&le.port[i].im);
  }
  while (le.nheap) {
    struct le_pending e = heap_pop(&le);
    free(e.data);
  }
  free(le.heap);
  return 0;
}
