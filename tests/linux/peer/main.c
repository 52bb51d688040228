// main.c: xrpeer's command line. The Linux (libibverbs, rdma_rxe) peer of
// the project's xv6 RDMA tools, for interoperability tests:
//
//   xrpeer [--dev NAME] [--ip A.B.C.D] host_a --matrix [--big] [--mtu N] [-p port] [--timeout T]
//       rdmanet_test host_a --matrix's role: passive, the buffer's owner
//   xrpeer [...] host_b <ip> --matrix [--big] [--mtu N] [-p port] [--timeout T]
//       rdmanet_test host_b --matrix's role: active, runs the cases
//   xrpeer [...] bw-server [-p port] [--mtu N] [--srq]
//       rdma_bw's server (the client's REQ says what to run); --srq: its
//       receives through a shared receive queue (either role takes it)
//   xrpeer [...] bw-client <ip> [-t write|read|send] [-s size] [-n iters] [-a]
//                          [-d depth] [-Q cq_mod] [-p port] [--mtu N]
//       rdma_bw's client; perftest's columns
//   xrpeer [...] ud-server [--qkey Q] [-n count] [--idle S] [--raw]
//       a UD echo server: prints its QPN, answers every datagram to its source
//       (--raw: whatever its payload; else xrpeer's pattern is checked first)
//   xrpeer [...] ud-client <ip> --qpn N [--qkey Q] [-s size] [-n count] [--imm]
//                          [--oneway] [-w wait_ms] [-r retries]
//       UD ping-pong against ud-server's QPN N (--oneway: no echoes awaited)
//
// Connections (host_a/host_b, bw-server/bw-client) go through Linux's
// librdmacm: rdma_cm over the InfiniBand CM, port space TCP, the port given
// by -p (default 18515, perftest's) (cm_rdma.c).
// --dev picks the RDMA device (default: the first), --ip the GID entry
// (default: the first RoCEv2 IPv4-mapped one); --mtu caps the path MTU
// offered (256..4096); --timeout is the local ACK timeout code. Selective
// repeat is never offered: --sr is refused.
#include "peer.h"

#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void usage(void) {
  fprintf(stderr, "usage: xrpeer [--dev NAME] [--ip A.B.C.D] host_a --matrix [--big] [--mtu N] [-p port]\n"
                  "       xrpeer [...] host_b <ip> --matrix [--big] [--mtu N] [-p port]\n"
                  "       xrpeer [...] bw-server [-p port] [--mtu N] [--srq]\n"
                  "       xrpeer [...] bw-client <ip> [-t write|read|send] [-s size] [-n iters] [-a] [-d depth]"
                  " [-Q cq_mod] [-p port] [--mtu N]\n"
                  "       xrpeer [...] ud-server [--qkey Q] [-n count] [--idle S] [--raw]\n"
                  "       xrpeer [...] ud-client <ip> --qpn N [--qkey Q] [-s size] [-n count] [--imm] [--oneway]"
                  " [-w wait_ms] [-r retries]\n");
  exit(2);
}

// Options every role takes; 1 if argv[*i] was one (and *i advanced past it).
static int common_opt(int argc, char **argv, int *i, int *port, enum ibv_mtu *mtu, uint8_t *timeout) {
  const char *a = argv[*i];
  int has = *i + 1 < argc;
  if (strcmp(a, "--sr") == 0) { fprintf(stderr, "xrpeer: selective repeat is never used with rxe\n"); exit(2); }
  if (strcmp(a, "-p") == 0 && has) { *port = atoi(argv[++*i]); return 1; }
  if (strcmp(a, "--timeout") == 0 && has) { *timeout = (uint8_t)atoi(argv[++*i]); return 1; }
  if (strcmp(a, "--mtu") == 0 && has) {
    if (!(*mtu = pcm_mtu_enum(atoi(argv[++*i])))) usage();
    return 1;
  }
  return 0;
}

static int run_matrix(struct peer_dev *d, int is_b, uint32_t ip, int argc, char **argv, int i) {
  struct matrix_opts o = { .port = PCM_PORT };
  int matrix = 0;
  for (; i < argc; i++) {
    if (common_opt(argc, argv, &i, &o.port, &o.mtu_limit, &o.timeout)) continue;
    if (strcmp(argv[i], "--matrix") == 0) matrix = 1;
    else if (strcmp(argv[i], "--big") == 0) o.big = 1;
    else usage();
  }
  if (!matrix) usage();                  // the matrix is the only mode here
  return is_b ? matrix_host_b(d, ip, &o) : matrix_host_a(d, &o);
}

static int run_bw(struct peer_dev *d, uint32_t ip, int argc, char **argv, int i) {
  struct bw_opts o = { .op = 0, .size = 65536, .iters = 1000, .tx_depth = 64, .cq_mod = 16, .port = PCM_PORT,
                       .server_ip = ip };
  int size_set = 0;
  for (; i < argc; i++) {
    const char *a = argv[i];
    int has = i + 1 < argc;
    if (common_opt(argc, argv, &i, &o.port, &o.mtu_limit, &o.timeout)) continue;
    if (strcmp(a, "-t") == 0 && has) {
      const char *t = argv[++i];
      o.op = strcmp(t, "write") == 0 ? 0 : strcmp(t, "read") == 0 ? 1 : strcmp(t, "send") == 0 ? 2 : -1;
      if (o.op < 0) usage();
    } else if (strcmp(a, "-s") == 0 && has) { o.size = (uint32_t)atoi(argv[++i]); size_set = 1; }
    else if (strcmp(a, "-n") == 0 && has) o.iters = (uint32_t)atoi(argv[++i]);
    else if (strcmp(a, "-d") == 0 && has) o.tx_depth = atoi(argv[++i]);
    else if (strcmp(a, "-Q") == 0 && has) o.cq_mod = atoi(argv[++i]);
    else if (strcmp(a, "-a") == 0) o.all = 1;
    else if (strcmp(a, "--srq") == 0) o.srq = 1;
    else usage();
  }
  if (o.all && !size_set) o.size = 1u << 23;
  if (o.size < 1 || o.size > (1u << 23) || o.iters < 1 || o.tx_depth < 1 || o.tx_depth > 128 || o.cq_mod < 1) usage();
  if (o.cq_mod > o.tx_depth) o.cq_mod = o.tx_depth;
  return ip ? bw_client(d, &o) : bw_server(d, &o);
}

// A whole unsigned number (decimal or 0x hex) up to max, or usage().
static uint32_t number(const char *s, uint32_t max) {
  char *end;
  errno = 0;
  unsigned long v = strtoul(s, &end, 0);
  if (errno || end == s || *end || s[0] == '-' || v > max) usage();
  return (uint32_t)v;
}

static int run_ud(struct peer_dev *d, uint32_t ip, int argc, char **argv, int i) {
  struct ud_opts o = { .qkey = UD_DEFAULT_QKEY, .size = 64, .count = ip ? 10 : 0, .wait_ms = 500, .retries = 3,
                       .peer_ip = ip };
  int qpn_set = 0;
  for (; i < argc; i++) {
    const char *a = argv[i];
    int has = i + 1 < argc;
    if (strcmp(a, "--qkey") == 0 && has) o.qkey = number(argv[++i], 0xffffffffu);
    else if (strcmp(a, "-n") == 0 && has) o.count = number(argv[++i], 1u << 30);
    else if (ip && strcmp(a, "--qpn") == 0 && has) { o.peer_qpn = number(argv[++i], 0xffffff); qpn_set = 1; }
    else if (ip && strcmp(a, "-s") == 0 && has) o.size = number(argv[++i], UD_MAX_SIZE);
    else if (ip && strcmp(a, "-w") == 0 && has) o.wait_ms = (int)number(argv[++i], 600000);
    else if (ip && strcmp(a, "-r") == 0 && has) o.retries = (int)number(argv[++i], 1000);
    else if (ip && strcmp(a, "--imm") == 0) o.imm = 1;
    else if (ip && strcmp(a, "--oneway") == 0) o.oneway = 1;
    else if (!ip && strcmp(a, "--idle") == 0 && has) o.idle_s = (int)number(argv[++i], 86400);
    else if (!ip && strcmp(a, "--raw") == 0) o.raw = 1;
    else usage();
  }
  if (!ip) return ud_server(d, &o);
  if (!qpn_set || o.size < UD_SEQ_LEN || o.count < 1 || o.wait_ms < 1) usage();
  return ud_client(d, &o);
}

int main(int argc, char **argv) {
  const char *dev = NULL;
  uint32_t want_ip = 0, ip = 0;
  int i = 1;
  setvbuf(stdout, NULL, _IOLBF, 0);
  for (; i + 1 < argc && argv[i][0] == '-'; i++) {
    if (strcmp(argv[i], "--dev") == 0) dev = argv[++i];
    else if (strcmp(argv[i], "--ip") == 0 && parse_ipv4(argv[i + 1], &want_ip) == 0) i++;
    else usage();
  }
  if (i >= argc) usage();
  const char *role = argv[i++];
  int needs_ip = strcmp(role, "host_b") == 0 || strcmp(role, "bw-client") == 0 || strcmp(role, "ud-client") == 0;
  if (needs_ip && (i >= argc || parse_ipv4(argv[i++], &ip) < 0)) usage();
  struct peer_dev d;
  if (pdev_open(&d, dev, want_ip)) return 1;
  printf("xrpeer: %s port %d gid index %d ip %u.%u.%u.%u active mtu %d\n", ibv_get_device_name(d.ctx->device),
         d.port, d.gid_index, d.ipv4 >> 24, d.ipv4 >> 16 & 255, d.ipv4 >> 8 & 255, d.ipv4 & 255,
         pcm_mtu_bytes(d.active_mtu));
  if (strcmp(role, "host_a") == 0 || strcmp(role, "host_b") == 0)
    return run_matrix(&d, needs_ip, ip, argc, argv, i);
  if (strcmp(role, "bw-server") == 0 || strcmp(role, "bw-client") == 0)
    return run_bw(&d, ip, argc, argv, i);
  if (strcmp(role, "ud-server") == 0 || strcmp(role, "ud-client") == 0)
    return run_ud(&d, ip, argc, argv, i);
  usage();
  return 2;
}
