// rdma_ah.c: address handles, where a UD datagram goes (IBTA 10.2.2;
// libibverbs' ibv_create_ah).
//
// Owns the AH table. An AH is a destination (IPv4, from the IPv4-mapped
// GID; hop limit; traffic class) with its MAC resolved once, at create, as
// modify-to-RTR does for an RC QP (rdma_resolve_mac: our own address, the
// neighbour table, else ARP). A UD send copies the AH into its WQE
// (struct rct_ud_dest), so destroying an AH never touches posted work.
#include "lib/types.h"
#include "lib/param.h"
#include "lib/klib.h"
#include "rdma/rdma.h"

// Lock held. ah's slot if it is a live AH of o, else -1 (any pointer).
int rdma_ah_owned(struct kv_owner *o, const struct rdma_ah *ah) {
  if (ah < rdma_ahs || ah >= rdma_ahs + RDMA_MAX_AH) return -1;
  return (ah->used && ah->owner == o) ? (int)(ah - rdma_ahs) : -1;
}

// May sleep (ARP). An AH of o in pd to a's destination: 0 and *out, -1
// (bad argument, PD not o's), RDMA_NO_ROUTE (no ARP answer) or
// RDMA_NO_RESOURCES (no slot).
int kv_create_ah(struct kv_owner *o, struct rdma_pd *pd, const struct rdma_ah_attr *a, struct rdma_ah **out) {
  static const uint8 zero[6];
  struct rct_ud_dest d;
  memset(&d, 0, sizeof d);
  if (a->port_num != 1 || a->dipv4 == 0) return -1;
  spin_lock(&rdma.lock);
  int mine = rdma_pd_owned(o, pd) >= 0;    // a bad PD is -1 before any ARP wait
  spin_unlock(&rdma.lock);
  if (!mine) return -1;
  memcpy(d.dmac, a->dmac, 6);
  d.dipv4 = a->dipv4;
  d.ttl = a->hop_limit;
  d.dscp = a->traffic_class >> 2;
  if (memcmp(d.dmac, zero, 6) == 0 && rdma_resolve_mac(d.dipv4, d.dmac) < 0) return RDMA_NO_ROUTE;
  int rc = -1;
  spin_lock(&rdma.lock);
  int pdh = rdma_pd_owned(o, pd);         // again: it may have gone while we slept
  for (int i = 0; pdh >= 0 && i < RDMA_MAX_AH && rc == -1; i++) {
    if (rdma_ahs[i].used) continue;
    rdma_ahs[i] = (struct rdma_ah){ .used = 1, .owner = o, .pd = pdh, .dest = d };
    rdma_pds[pdh].refs++;
    *out = &rdma_ahs[i];
    rc = 0;
  }
  if (pdh >= 0 && rc == -1) rc = RDMA_NO_RESOURCES;
  spin_unlock(&rdma.lock);
  return rc;
}

// Lock held. Slot h's AH goes.
static void ah_free(int h) {
  rdma_pds[rdma_ahs[h].pd].refs--;
  rdma_ahs[h].used = 0;
}

int kv_destroy_ah(struct kv_owner *o, struct rdma_ah *ah) {
  spin_lock(&rdma.lock);
  int h = rdma_ah_owned(o, ah);
  if (h >= 0) ah_free(h);
  spin_unlock(&rdma.lock);
  return h >= 0 ? 0 : -1;
}

// Lock held. Every AH of o.
void rdma_ah_release_all(struct kv_owner *o) {
  for (int i = 0; i < RDMA_MAX_AH; i++)
    if (rdma_ahs[i].used && rdma_ahs[i].owner == o) ah_free(i);
}
