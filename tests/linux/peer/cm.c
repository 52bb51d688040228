// cm.c: what xrpeer's connection code (cm_rdma.c, Linux's librdmacm) and
// its roles share: the device and its RoCEv2 GID, small helpers (MTU codes,
// the 16-byte MR advertisement, random numbers), a connection record's
// start and the QP's move to the error state.
#include "peer.h"

#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <unistd.h>

#define OWN_RESP_RES 16         // what we offer, capped by the device
#define OWN_INIT_DEPTH 8        // as the xv6 library's default

// ---------------------------------------------------------------- helpers

static void put32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (24 - 8 * i)); }
static uint32_t get32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

uint32_t pcm_random(void) {
  uint32_t v = 0;
  while (getrandom(&v, sizeof v, 0) != sizeof v) {}
  return v;
}

int pcm_mtu_bytes(enum ibv_mtu m) { return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? 128 << m : 0; }

enum ibv_mtu pcm_mtu_enum(int bytes) {
  for (int m = IBV_MTU_256; m <= IBV_MTU_4096; m++)
    if (128 << m == bytes) return (enum ibv_mtu)m;
  return (enum ibv_mtu)0;
}

int parse_ipv4(const char *s, uint32_t *ip) {
  struct in_addr a;
  if (inet_pton(AF_INET, s, &a) != 1) return -1;
  *ip = ntohl(a.s_addr);
  return 0;
}

void pcm_pack_mr(uint8_t out[16], uint64_t addr, uint32_t rkey, uint32_t len) {
  put32(out, (uint32_t)(addr >> 32));
  put32(out + 4, (uint32_t)addr);
  put32(out + 8, rkey);
  put32(out + 12, len);
}

void pcm_unpack_mr(const uint8_t in[16], uint64_t *addr, uint32_t *rkey, uint32_t *len) {
  *addr = (uint64_t)get32(in) << 32 | get32(in + 4);
  *rkey = get32(in + 8);
  *len = get32(in + 12);
}

// ---------------------------------------------------------------- device

int pcm_is_mapped_ipv4(const uint8_t *g) {
  static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
  return memcmp(g, prefix, 12) == 0;
}

static int ifindex_mac(uint32_t ifindex, uint8_t mac[6]) {
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  if (!if_indextoname(ifindex, ifr.ifr_name)) return -1;
  int s = socket(AF_INET, SOCK_DGRAM, 0);
  if (s < 0) return -1;
  int rc = ioctl(s, SIOCGIFHWADDR, &ifr);
  close(s);
  if (rc < 0) return -1;
  memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
  return 0;
}

// The RoCEv2 GID entry holding an IPv4-mapped address (want_ip if set).
static int find_gid(struct peer_dev *d, int tbl_len, uint32_t want_ip) {
  for (int i = 0; i < tbl_len; i++) {
    struct ibv_gid_entry e;
    if (ibv_query_gid_ex(d->ctx, d->port, (uint32_t)i, &e, 0)) continue;
    if (e.gid_type != IBV_GID_TYPE_ROCE_V2 || !pcm_is_mapped_ipv4(e.gid.raw)) continue;
    uint32_t ip = get32(e.gid.raw + 12);
    if (want_ip && ip != want_ip) continue;
    d->gid_index = i;
    d->gid = e.gid;
    d->ipv4 = ip;
    if (ifindex_mac(e.ndev_ifindex, d->mac)) {
      fprintf(stderr, "xrpeer: no MAC for the GID's netdev (ifindex %u)\n", e.ndev_ifindex);
      return -1;
    }
    return 0;
  }
  fprintf(stderr, "xrpeer: no RoCEv2 IPv4-mapped GID on port %d\n", d->port);
  return -1;
}

static struct ibv_context *open_named(const char *name) {
  int n = 0;
  struct ibv_device **list = ibv_get_device_list(&n);
  struct ibv_context *ctx = NULL;
  for (int i = 0; list && i < n && !ctx; i++)
    if (!name || strcmp(ibv_get_device_name(list[i]), name) == 0) ctx = ibv_open_device(list[i]);
  if (list) ibv_free_device_list(list);
  return ctx;
}

int pdev_open(struct peer_dev *d, const char *name, uint32_t want_ip) {
  memset(d, 0, sizeof *d);
  d->port = 1;
  d->ctx = open_named(name);
  if (!d->ctx) { fprintf(stderr, "xrpeer: no RDMA device %s\n", name ? name : ""); return -1; }
  struct ibv_port_attr pa;
  struct ibv_device_attr da;
  if (ibv_query_port(d->ctx, d->port, &pa) || ibv_query_device(d->ctx, &da)) {
    fprintf(stderr, "xrpeer: query port/device: %s\n", strerror(errno));
    return -1;
  }
  d->active_mtu = pa.active_mtu;
  d->resp_res = (uint8_t)(da.max_qp_rd_atom < OWN_RESP_RES ? da.max_qp_rd_atom : OWN_RESP_RES);
  d->init_depth = (uint8_t)(da.max_qp_init_rd_atom < OWN_INIT_DEPTH ? da.max_qp_init_rd_atom : OWN_INIT_DEPTH);
  return find_gid(d, pa.gid_tbl_len, want_ip);
}


// ---------------------------------------------------------------- QP

void pcm_qp_error(struct pconn *c) {                            // flushes its WRs [QP-ERR-2]
  struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
  ibv_modify_qp(c->qp, &a, IBV_QP_STATE);
}

// ---------------------------------------------------------------- a connection

void pcm_init(struct pconn *c, struct peer_dev *d, struct ibv_qp *qp) {
  memset(c, 0, sizeof *c);
  c->dev = d;
  c->qp = qp;
  c->state = PCM_IDLE;
}
