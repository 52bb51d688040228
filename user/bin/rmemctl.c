// rmemctl.c: the kernel's client of a memory node (kernel/rmem/rmem_client.c).
// Usage: rmemctl [status]            the node, the connection, the counters
//        rmemctl connect IP[:PORT]   a node, if no rmem= boot argument set one
//        rmemctl test [PAGES [FIRST]]  the client's self-test: PAGES pages (1..128,
//                                    default 64) written to slots FIRST.. (default 0)
//                                    and read back
//        rmemctl lat [reset]         io() read calls' latency: calls, pages, median,
//                                    p99, max (reset: then start again)
//        rmemctl read PAGES FIRST    only read those slots (a slot whose content
//                                    went with an earlier connection: read -1)
// Output lines are "key: value" for tests; a failure says why and exits 1.
#include "user.h"
#include "kernel/rmem/rmem_wire.h"

#define TEST_PAGES_DEFAULT 64

static int fail(const char *what, long r) {
  fprintf(stderr, "rmemctl: %s: %s\n", what, strerror((int)-r));
  return 1;
}

static void ip_print(const char *key, unsigned int ip, unsigned int port) {
  printf("%s: %u.%u.%u.%u:%u\n", key, ip >> 24, ip >> 16 & 255, ip >> 8 & 255, ip & 255, port);
}

static int status(void) {
  struct rmemctl_status s;
  long r = rmemctl(RMEMCTL_STATUS, (unsigned long)&s, 0);
  if (r < 0) return fail("status", r);
  if (!s.configured) {
    printf("node: none\n");
    return 0;
  }
  ip_print("node", s.node_ip, s.node_port);
  printf("connected: %s\n", s.connected ? "yes" : "no");
  printf("transport: %s\n", s.sr ? "selective repeat" : "go-back-N");
  printf("slots: %llu\nregions: %u\n", s.nslots, s.regions);
  printf("bytes_read: %llu\nbytes_written: %llu\n", s.bytes_read, s.bytes_written);
  printf("pages_read: %llu\npages_written: %llu\n", s.pages_read, s.pages_written);
  printf("io_calls: %llu\nio_failed: %llu\nretries: %llu\n", s.io_calls, s.io_failed, s.retries);
  printf("connects: %llu\nreconnects: %llu\nconnect_failures: %llu\n", s.connects, s.reconnects,
         s.connect_failures);
  printf("lost_reads: %llu\n", s.lost_reads);
  return 0;
}

// "IP[:PORT]" -> host-order ip and port; 0 or -1.
static int parse_node(const char *arg, unsigned int *ip, unsigned int *port) {
  char buf[24];
  const char *colon = strchr(arg, ':');
  int n = colon ? (int)(colon - arg) : (int)strlen(arg);
  if (n <= 0 || n >= (int)sizeof buf) return -1;
  memcpy(buf, arg, (unsigned long)n);
  buf[n] = 0;
  struct in_addr a;
  if (!inet_aton(buf, &a)) return -1;
  *ip = ntohl(a.s_addr);
  *port = colon ? (unsigned int)atoi(colon + 1) : RMEM_PORT;
  return *port > 0 && *port <= 0xffff ? 0 : -1;
}

static int connect_node(const char *arg) {
  unsigned int ip, port;
  if (parse_node(arg, &ip, &port) < 0) {
    fprintf(stderr, "rmemctl: connect: '%s' is not IP[:PORT]\n", arg);
    return 1;
  }
  long r = rmemctl(RMEMCTL_CONNECT, ip, port);
  if (r < 0) return fail(r == -EBUSY ? "connect: a memory node is configured already" : "connect", r);
  ip_print("connecting", ip, port);
  return 0;
}

static int lat(int reset) {
  struct rmemctl_lat l;
  long r = rmemctl(RMEMCTL_LAT, (unsigned long)&l, (unsigned long)reset);
  if (r < 0) return fail("lat", r);
  printf("read_calls: %llu\nread_pages: %llu\n", l.calls, l.pages);
  printf("read_median_us: %u\nread_p99_us: %u\nread_max_us: %u\n", l.median_us, l.p99_us, l.max_us);
  printf("read_total_us: %llu\nreg_us: %llu\n", l.total_us, l.reg_us);
  return 0;
}

static int test(int pages, unsigned int first, int read_only) {
  struct rmemctl_test t = { .pages = (unsigned int)pages, .first_slot = first, .read_only = (unsigned)read_only };
  unsigned long t0 = clock_ns();
  long r = rmemctl(RMEMCTL_TEST, (unsigned long)&t, 0);
  unsigned long ms = (clock_ns() - t0) / 1000000;
  if (r < 0) return fail(r == -EAGAIN ? "test: never connected to a memory node" : "test", r);
  printf("first_slot: %u\npages: %u\n", t.first_slot, t.pages);
  printf("write: %d (%lu us)\nread: %d (%lu us)\n", t.write_rc, (unsigned long)(t.write_ns / 1000), t.read_rc,
         (unsigned long)(t.read_ns / 1000));
  printf("mismatches: %u\nelapsed_ms: %lu\n", t.mismatches, ms);
  int ok = t.write_rc == 0 && t.read_rc == 0 && t.mismatches == 0;
  printf("rmemctl %s: %s\n", read_only ? "read" : "test", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}

int main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "status") == 0) return status();
  if (strcmp(argv[1], "connect") == 0 && argc == 3) return connect_node(argv[2]);
  if (strcmp(argv[1], "test") == 0 && argc <= 4)
    return test(argc >= 3 ? atoi(argv[2]) : TEST_PAGES_DEFAULT, argc == 4 ? (unsigned int)atoi(argv[3]) : 0, 0);
  if (strcmp(argv[1], "lat") == 0 && argc <= 3) return lat(argc == 3 && strcmp(argv[2], "reset") == 0);
  if (strcmp(argv[1], "read") == 0 && argc == 4) return test(atoi(argv[2]), (unsigned int)atoi(argv[3]), 1);
  fprintf(stderr, "usage: rmemctl [status] | connect IP[:PORT] | test [PAGES [FIRST]] | read PAGES FIRST | lat [reset]\n");
  return 1;
}
