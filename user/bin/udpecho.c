// udpecho.c: UDP echo server and client.
//
//   udpecho -s port                      serve: send every datagram back
//   udpecho host port size count         send count datagrams of size bytes,
//                                        check each echo, print RTTs
//
// The client prints "echo: N/N ok, rtt avg X ms" and exits 0 when every
// datagram came back intact (a lost one is retried up to 3 times).
#include "user.h"

static int serve(int port) {
  int s = socket(SOCK_UDP);
  if (s < 0 || bind(s, port) < 0) { fprintf(stderr, "udpecho: cannot bind port %d\n", port); return 1; }
  char *buf = malloc(NET_MAX_UDP_PAYLOAD);
  printf("udpecho: serving port %d\n", port);
  for (unsigned long n = 0;; n++) {
    struct net_addr from;
    int len = recvfrom(s, buf, NET_MAX_UDP_PAYLOAD, &from, -1);
    if (len < 0) { fprintf(stderr, "udpecho: receive failed\n"); return 1; }
    if (sendto(s, buf, len, &from) < 0) fprintf(stderr, "udpecho: send failed\n");
  }
}

static int client(unsigned int ip, int port, int size, int count) {
  int s = socket(SOCK_UDP);
  if (s < 0) { fprintf(stderr, "udpecho: no socket\n"); return 1; }
  char *out = malloc(size + 1), *in = malloc(NET_MAX_UDP_PAYLOAD);
  struct net_addr to = { ip, (unsigned short)port, 0 }, from;
  int ok = 0;
  unsigned long rtt_sum = 0;
  for (int i = 0; i < count; i++) {
    for (int k = 0; k < size; k++) out[k] = (char)(i * 7 + k);
    for (int attempt = 0; attempt < 4; attempt++) {
      unsigned long t0 = clock_ns();
      if (sendto(s, out, size, &to) < 0) { fprintf(stderr, "udpecho: send failed\n"); return 1; }
      int n = recvfrom(s, in, NET_MAX_UDP_PAYLOAD, &from, 1000);
      if (n == -2) continue;
      if (n == size && !memcmp(in, out, size)) { ok++; rtt_sum += clock_ns() - t0; }
      else printf("udpecho: datagram %d: got %d bytes, want %d (or content differs)\n", i, n, size);
      break;
    }
  }
  unsigned long avg = ok ? rtt_sum / ok : 0;
  printf("echo: %d/%d ok, size %d, rtt avg %lu.%03lu ms\n", ok, count, size, avg / 1000000, avg / 1000 % 1000);
  return ok == count ? 0 : 1;
}

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "-s")) exit(serve(atoi(argv[2])));
  unsigned int ip = argc == 5 ? inet_parse(argv[1]) : 0;
  int size = argc == 5 ? atoi(argv[3]) : -1;
  if (!ip || size < 0 || size > NET_MAX_UDP_PAYLOAD) {
    fprintf(stderr, "usage: udpecho -s port | udpecho a.b.c.d port size count\n");
    exit(2);
  }
  exit(client(ip, atoi(argv[2]), size, atoi(argv[4])));
}
