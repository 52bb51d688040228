/*
 * linkemu_ctl.c: linkemu's outputs and its control socket.
 *
 * pcap: DIR/port<N>.pcap per guest port, classic libpcap format (magic
 *   0xa1b2c3d4, microsecond timestamps from CLOCK_REALTIME, LINKTYPE_ETHERNET):
 *   every frame the guest sent (as sent, before impairment) and every frame
 *   it received (as delivered, after impairment).
 * stats: a JSON object, rewritten atomically (tmp + rename) every second, on
 *   SIGUSR1 and at exit; one entry per port i: rx/tx/tx_errors are frames
 *   received from / sent to guest i, the engine counters are for frames
 *   entering at port i (for two ports: entry 0 is a2b, entry 1 is b2a).
 * control: UDP datagrams of text on 127.0.0.1:PORT, one reply each:
 *     set a2b|b2a|both|N SPEC   replace the impairments now -> "ok" | "error: ..."
 *                               (blackhole times count from this moment)
 *     stats                     -> the stats JSON
 *     quit                      -> "ok", then linkemu exits
 */
#include "linkemu.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* ---- pcap ---- */

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }   /* host order, per magic */
static void put16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }

int le_pcap_open(struct linkemu *le, int port)
{
  char path[4096];
  snprintf(path, sizeof path, "%s/port%d.pcap", le->pcap_dir, port);
  FILE *f = fopen(path, "wb");
  if (!f) {
    fprintf(stderr, "linkemu: cannot create %s: %s\n", path, strerror(errno));
    return -1;
  }
  uint8_t h[24];
  put32(h, 0xa1b2c3d4u);
  put16(h + 4, 2);
  put16(h + 6, 4);
  put32(h + 8, 0);                    /* thiszone */
  put32(h + 12, 0);                   /* sigfigs */
  put32(h + 16, LE_MAX_FRAME);        /* snaplen */
  put32(h + 20, 1);                   /* LINKTYPE_ETHERNET */
  fwrite(h, 1, sizeof h, f);
  fflush(f);
  le->port[port].pcap = f;
  return 0;
}

void le_pcap_write(struct le_port *p, const uint8_t *frame, uint32_t len)
{
  if (!p->pcap)
    return;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint8_t h[16];
  put32(h, (uint32_t)ts.tv_sec);
  put32(h + 4, (uint32_t)(ts.tv_nsec / 1000));
  put32(h + 8, len);
  put32(h + 12, len);
  fwrite(h, 1, sizeof h, p->pcap);
  fwrite(frame, 1, len, p->pcap);
  fflush(p->pcap);
}

/* ---- stats ---- */

struct jbuf { char *b; size_t cap, n; };

static void jp(struct jbuf *j, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(j->n < j->cap ? j->b + j->n : NULL, j->n < j->cap ? j->cap - j->n : 0, fmt, ap);
  va_end(ap);
  if (k > 0)
    j->n += (size_t)k;
}

static void jstr(struct jbuf *j, const char *s)
{
  jp(j, "\"");
  for (; *s; s++) {
    if (*s == '"' || *s == '\\')
      jp(j, "\\%c", *s);
    else if ((unsigned char)*s < 0x20)
      jp(j, "\\u%04x", (unsigned char)*s);
    else
      jp(j, "%c", *s);
  }
  jp(j, "\"");
}

static const char *port_name(const struct linkemu *le, int i)
{
  if (le->nports == 2)
    return i == 0 ? "a2b" : "b2a";
  return "ingress";
}

size_t le_stats_json(const struct linkemu *le, char *buf, size_t cap)
{
  struct jbuf j = {buf, cap, 0};
  if (cap)
    buf[0] = 0;
  jp(&j, "{\"uptime_ns\": %llu, \"pending\": %u, \"overflow\": %llu, \"directions\": [",
     (unsigned long long)(le_now() - le->start_ns), le->nheap, (unsigned long long)le->overflow);
  for (int i = 0; i < le->nports; i++) {
    const struct le_port *p = &le->port[i];
    const struct impair_counters *n = &p->im.n;
    jp(&j, "%s\n  {\"port\": %d, \"name\": \"%s\", \"listen\": %u, \"spec\": ", i ? "," : "", i,
       port_name(le, i), p->listen);
    jstr(&j, p->spec);
    jp(&j, ", \"rx\": %llu, \"tx\": %llu, \"tx_errors\": %llu, \"flooded\": %llu",
       (unsigned long long)p->rx, (unsigned long long)p->tx, (unsigned long long)p->tx_errors,
       (unsigned long long)p->flooded);
    jp(&j, ", \"frames_in\": %llu, \"frames_out\": %llu, \"bytes_in\": %llu, \"bytes_out\": %llu",
       (unsigned long long)n->frames_in, (unsigned long long)n->frames_out,
       (unsigned long long)n->bytes_in, (unsigned long long)n->bytes_out);
    jp(&j, ", \"dropped\": {");
    uint64_t total = 0;
    for (int c = 1; c < IMPAIR_NCAUSES; c++) {
      jp(&j, "%s\"%s\": %llu", c > 1 ? ", " : "", impair_cause_name[c], (unsigned long long)n->dropped[c]);
      total += n->dropped[c];
    }
    jp(&j, ", \"total\": %llu}", (unsigned long long)total);
    jp(&j, ", \"duplicated\": %llu, \"corrupted\": %llu, \"reordered\": %llu, \"delayed_bytes\": %llu}",
       (unsigned long long)n->duplicated, (unsigned long long)n->corrupted,
       (unsigned long long)n->reordered, (unsigned long long)n->delayed_bytes);
  }
  jp(&j, "\n]}\n");
  return j.n < cap ? j.n : (cap ? cap - 1 : 0);
}

int le_stats_write(const struct linkemu *le)
{
  if (!le->stats_path)
    return 0;
  static char buf[1 << 16];
  size_t n = le_stats_json(le, buf, sizeof buf);
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", le->stats_path);
  FILE *f = fopen(tmp, "w");
  if (!f)
    return -1;
  fwrite(buf, 1, n, f);
  if (fclose(f) != 0 || rename(tmp, le->stats_path) != 0)
    return -1;
  return 0;
}

/* ---- impairment specs ---- */

int le_set_spec(struct linkemu *le, int port, const char *spec, char *err, size_t errlen)
{
  uint64_t now = le_now();
  for (int i = 0; i < le->nports; i++) {
    if (port >= 0 && i != port)
      continue;
    struct le_port *p = &le->port[i];
    if (impair_reload(&p->im, spec, now, err, errlen) < 0)
      return -1;
    snprintf(p->spec, sizeof p->spec, "%s", spec);
  }
  return 0;
}

/* ---- control socket ---- */

int le_ctl_open(struct linkemu *le, uint16_t port)
{
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0) {
    fprintf(stderr, "linkemu: control socket 127.0.0.1:%u: %s\n", port, strerror(errno));
    return -1;
  }
  le->ctl_fd = fd;
  return 0;
}

static int parse_target(const struct linkemu *le, const char *w, int *port)
{
  char *end;
  if (!strcmp(w, "a2b")) *port = 0;
  else if (!strcmp(w, "b2a")) *port = 1;
  else if (!strcmp(w, "both") || !strcmp(w, "all")) *port = -1;
  else {
    long v = strtol(w, &end, 10);
    if (end == w || *end || v < 0 || v >= le->nports)
      return -1;
    *port = (int)v;
  }
  return *port < le->nports ? 0 : -1;
}

void le_ctl_handle(struct linkemu *le)
{
  static char msg[4096], reply[1 << 16];
  struct sockaddr_in from;
  socklen_t flen = sizeof from;
  ssize_t n = recvfrom(le->ctl_fd, msg, sizeof msg - 1, MSG_DONTWAIT, (struct sockaddr *)&from, &flen);
  if (n < 0)
    return;
  msg[n] = 0;
  while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
    msg[--n] = 0;
  size_t rlen;
  char err[256];
  if (!strncmp(msg, "set ", 4)) {
    char target[32];
    int port, used = 0;
    if (sscanf(msg + 4, "%31s %n", target, &used) < 1 || parse_target(le, target, &port) < 0)
      rlen = (size_t)snprintf(reply, sizeof reply, "error: want 'set a2b|b2a|both|N SPEC'");
    else if (le_set_spec(le, port, msg + 4 + used, err, sizeof err) < 0)
      rlen = (size_t)snprintf(reply, sizeof reply, "error: %s", err);
    else
      rlen = (size_t)snprintf(reply, sizeof reply, "ok");
  } else if (!strcmp(msg, "stats"))
    rlen = le_stats_json(le, reply, sizeof reply);
  else if (!strcmp(msg, "quit")) {
    rlen = (size_t)snprintf(reply, sizeof reply, "ok");
    raise(SIGTERM);
  } else
    rlen = (size_t)snprintf(reply, sizeof reply, "error: unknown command (set, stats, quit)");
  sendto(le->ctl_fd, reply, rlen, 0, (struct sockaddr *)&from, flen);
}
