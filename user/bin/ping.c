// ping.c: ICMP echo to a host, one request at a time.
//
//   ping [-c count] [-s size] [-i interval_ms] [-W timeout_ms] host
//
// Prints one line per reply with the round-trip time measured with
// clock_ns(), then "N transmitted, M received" and min/avg/max. Exits 0 if
// every request was answered.
#include "user.h"

static void print_ms(unsigned long ns) {
  printf("%lu.%03lu ms", ns / 1000000, ns / 1000 % 1000);
}

int main(int argc, char **argv) {
  int count = 4, size = 56, interval_ms = 1000, timeout_ms = 1000;
  const char *host = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-c") && i + 1 < argc) count = atoi(argv[++i]);
    else if (!strcmp(argv[i], "-s") && i + 1 < argc) size = atoi(argv[++i]);
    else if (!strcmp(argv[i], "-i") && i + 1 < argc) interval_ms = atoi(argv[++i]);
    else if (!strcmp(argv[i], "-W") && i + 1 < argc) timeout_ms = atoi(argv[++i]);
    else host = argv[i];
  }
  unsigned int ip = host ? inet_parse(host) : 0;
  if (!ip || size < 0 || size > 8000) {
    fprintf(stderr, "usage: ping [-c count] [-s size] [-i interval_ms] [-W timeout_ms] a.b.c.d\n");
    exit(2);
  }
  int s = socket(SOCK_ICMP);
  if (s < 0) { fprintf(stderr, "ping: no socket (no network device?)\n"); exit(1); }
  char *out = malloc(size + 1), *in = malloc(size + 64);
  for (int k = 0; k < size; k++) out[k] = 'a' + k % 26;
  int received = 0;
  unsigned long min = ~0ul, max = 0, sum = 0;
  printf("PING %s: %d data bytes\n", host, size);
  for (int seq = 1; seq <= count; seq++) {
    struct net_addr to = { ip, (unsigned short)seq, 0 }, from;
    unsigned long t0 = clock_ns();
    if (sendto(s, out, size, &to) < 0) { printf("ping: send failed\n"); break; }
    for (;;) {
      long left = timeout_ms - (long)((clock_ns() - t0) / 1000000);
      int n = left > 0 ? recvfrom(s, in, size + 64, &from, left) : -2;
      if (n == -2) { printf("seq=%d timeout\n", seq); break; }
      if (n < 0) { printf("ping: receive failed\n"); exit(1); }
      if (from.port != seq) continue;           // a late reply to an earlier request
      unsigned long rtt = clock_ns() - t0;
      received++;
      sum += rtt;
      if (rtt < min) min = rtt;
      if (rtt > max) max = rtt;
      printf("%d bytes from %s: seq=%d time=", n, host, seq);
      print_ms(rtt);
      printf("%s\n", n == size && !memcmp(in, out, size) ? "" : " (payload differs)");
      break;
    }
    if (seq < count && interval_ms > 0) {
      unsigned long next = t0 + (unsigned long)interval_ms * 1000000;
      while (clock_ns() < next) sleep(1);
    }
  }
  printf("%d transmitted, %d received", count, received);
  if (received) {
    printf(", rtt min/avg/max ");
    print_ms(min); printf(" / "); print_ms(sum / received); printf(" / "); print_ms(max);
  }
  printf("\n");
  sockclose(s);
  exit(received == count ? 0 : 1);
}
