// rdma_idtab.c: random identifiers and their id -> table slot index.
//
// MR keys ([SEC-RAND-1]) and QPNs ([SEC-RAND-4]) are drawn at random, so
// nothing in an identifier says which table slot holds its object. An
// idtab maps each live identifier to its slot: open addressing with linear
// probing over a power-of-two array that the owner sizes at least twice
// its number of live identifiers, so a probe run stays a few entries long
// and a search always meets an empty entry. Id 0 marks an empty entry (no
// key or QPN is ever 0). Deletion shifts the rest of the run back instead
// of leaving tombstones, so lookups never slow down as objects come and go.
// Used by rdma_mr.c (lkeys and rkeys) and rdma_qp.c (QPNs); the receive
// path looks up every incoming frame's QPN and R_Key here.
//
// Every function: caller holds rdma.lock.
#include "lib/types.h"
#include "core/printk.h"
#include "rdma/rdma.h"

// The home entry of an id: Fibonacci hashing, so even ids from a weak
// generator spread over the table.
static uint32 home(const struct rdma_idtab *t, uint32 id) {
  return (id * 0x9e3779b1u) >> (32 - t->bits);
}

static uint32 mask(const struct rdma_idtab *t) {
  return (1u << t->bits) - 1;
}

// The entry holding id, or else the empty entry where a search for it ends.
static struct rdma_id_ent *probe(const struct rdma_idtab *t, uint32 id) {
  uint32 i = home(t, id);
  for (uint32 n = 0; n <= mask(t); n++, i = (i + 1) & mask(t)) {
    struct rdma_id_ent *e = &t->ent[i];
    if (e->id == id || e->id == 0) return e;
  }
  panic("rdma_idtab: table full (sized below twice its live ids?)");
  return NULL;
}

// The slot of a live id, or -1 (also for id 0).
int rdma_idtab_find(const struct rdma_idtab *t, uint32 id) {
  if (id == 0) return -1;
  const struct rdma_id_ent *e = probe(t, id);
  return e->id == id ? e->slot : -1;
}

// A new id: uniformly random in [min, mask], not live in t, and entered
// for slot. min >= 1, so 0 is never drawn. [SEC-RAND-1] [SEC-RAND-4]
uint32 rdma_idtab_add(struct rdma_idtab *t, uint32 min, uint32 id_mask, int slot) {
  for (;;) {
    uint32 id = rdma_random() & id_mask;
    if (id < min) continue;                   // redraw: keeps the draw uniform
    struct rdma_id_ent *e = probe(t, id);
    if (e->id == id) continue;                // live already: redraw
    e->id = id;
    e->slot = slot;
    return id;
  }
}

// Enter a chosen id (not 0) for slot: 0, or -1 if it is live already
// (the GSI QP's fixed QPN 1, which the random draw never yields).
int rdma_idtab_put(struct rdma_idtab *t, uint32 id, int slot) {
  struct rdma_id_ent *e = probe(t, id);
  if (id == 0 || e->id == id) return -1;
  e->id = id;
  e->slot = slot;
  return 0;
}

// Forget a live id. Entries after it in its probe run move back into the
// hole when their home lies cyclically at or before the hole, so every
// remaining id stays reachable from its home without crossing an empty entry.
void rdma_idtab_del(struct rdma_idtab *t, uint32 id) {
  struct rdma_id_ent *hole = probe(t, id);
  ASSERT(id != 0 && hole->id == id, "rdma_idtab_del: the id is live");
  uint32 h = (uint32)(hole - t->ent);
  for (uint32 j = (h + 1) & mask(t); t->ent[j].id != 0; j = (j + 1) & mask(t)) {
    uint32 from_home = (j - home(t, t->ent[j].id)) & mask(t);
    if (from_home >= ((j - h) & mask(t))) {
      t->ent[h] = t->ent[j];
      h = j;
    }
  }
  t->ent[h].id = 0;
}
