/*
 * sim_link.c: the virtual-time lossy link (see sim_link.h).
 */
#include "sim_link.h"

#include <stdlib.h>
#include <string.h>

/* FNV-1a-style over 8-byte words (fast enough to hash every frame). */
uint64_t sim_hash(const void *data, size_t len)
{
  const uint8_t *p = data;
  uint64_t h = 0xcbf29ce484222325ULL ^ len;
  size_t i = 0;
  for (; i + 8 <= len; i += 8) {
    uint64_t w;
    memcpy(&w, p + i, 8);
    h = (h ^ w) * 0x100000001b3ULL;
    h ^= h >> 29;
  }
  for (; i < len; i++)
    h = (h ^ p[i]) * 0x100000001b3ULL;
  return h;
}

int sim_link_init(struct sim_link *l, const char *a2b, const char *b2a, char *err, size_t errlen)
{
  memset(l, 0, sizeof *l);
  l->trace_hash = 0xcbf29ce484222325ULL;
  if (impair_parse(&l->dir[SIM_A2B], a2b, SIM_A2B, err, errlen) < 0)
    return -1;
  if (impair_parse(&l->dir[SIM_B2A], b2a, SIM_B2A, err, errlen) < 0) {
    impair_free(&l->dir[SIM_A2B]);
    return -1;
  }
  return 0;
}

void sim_link_free(struct sim_link *l)
{
  for (uint32_t i = 0; i < l->n; i++)
    free(l->heap[i].data);
  free(l->heap);
  impair_free(&l->dir[0]);
  impair_free(&l->dir[1]);
}

static int pkt_less(const struct sim_pkt *a, const struct sim_pkt *b)
{
  return a->depart < b->depart || (a->depart == b->depart && a->seq < b->seq);
}

/* Queue a copy; returns the copy's bytes (owned by the link). */
static uint8_t *push(struct sim_link *l, int dir, uint64_t when, const uint8_t *data, uint32_t len)
{
  if (l->n == l->cap) {
    l->cap = l->cap ? l->cap * 2 : 1024;
    l->heap = realloc(l->heap, sizeof *l->heap * l->cap);
    if (!l->heap) {
      fprintf(stderr, "sim_link: out of memory\n");
      exit(1);
    }
  }
  struct sim_pkt p = {when, l->seq++, dir, len, malloc(len ? len : 1)};
  if (!p.data) {
    fprintf(stderr, "sim_link: out of memory\n");
    exit(1);
  }
  memcpy(p.data, data, len);
  uint32_t i = l->n++;
  l->heap[i] = p;
  while (i && pkt_less(&l->heap[i], &l->heap[(i - 1) / 2])) {
    struct sim_pkt t = l->heap[i];
    l->heap[i] = l->heap[(i - 1) / 2];
    l->heap[(i - 1) / 2] = t;
    i = (i - 1) / 2;
  }
  return p.data;
}

int sim_bth_of(const uint8_t *f, uint32_t len, unsigned *op, unsigned *psn)
{
  *op = *psn = 0;
  if (len < 54)
    return 0;
  *op = f[42];
  *psn = (unsigned)f[51] << 16 | (unsigned)f[52] << 8 | f[53];
  return 1;
}

static void trace(struct sim_link *l, uint64_t now, int dir, const struct impair_verdict *v,
                  const uint8_t *data, uint32_t len, uint64_t h)
{
  uint64_t rec[8] = {now, (uint64_t)dir, v->index, (uint64_t)v->drop, len, h,
                     v->drop ? 0 : v->depart_ns, v->dup ? v->dup_depart_ns : 0};
  rec[4] |= (uint64_t)v->corrupt << 32 | (uint64_t)v->corrupt_byte << 40;
  for (size_t i = 0; i < sizeof rec; i++)
    l->trace_hash = (l->trace_hash ^ ((const uint8_t *)rec)[i]) * 0x100000001b3ULL;
  if (l->trace) {
    unsigned op, psn;
    sim_bth_of(data, len, &op, &psn);
    char extra[64] = "";
    if ((op == 0x0c && len >= 70) || (op == 0xcc && len >= 78)) {   /* READ request: RETH */
      const uint8_t *reth = data + (op == 0xcc ? 62 : 54);
      uint32_t dmalen = (uint32_t)reth[12] << 24 | (uint32_t)reth[13] << 16 | (uint32_t)reth[14] << 8 | reth[15];
      uint32_t off = op == 0xcc ? (uint32_t)data[54] << 24 | (uint32_t)data[55] << 16 |
                                  (uint32_t)data[56] << 8 | data[57] : 0;
      snprintf(extra, sizeof extra, " read_off=%u read_len=%u", off, dmalen);
    }
    fprintf(l->trace, "%llu %s %llu %s%s%s len=%u op=0x%02x psn=%u%s hash=%016llx depart=%llu\n",
            (unsigned long long)now, dir == SIM_A2B ? "a2b" : "b2a",
            (unsigned long long)v->index, impair_cause_name[v->drop], v->dup ? "+dup" : "",
            v->corrupt ? "+corrupt" : "", len, op, psn, extra, (unsigned long long)h,
            (unsigned long long)rec[6]);
  }
}

int sim_link_send(struct sim_link *l, int dir, uint64_t now, const uint8_t *data, uint32_t len)
{
  struct impair_verdict v;
  impair_decide(&l->dir[dir], l->index[dir]++, now, len, &v);
  trace(l, now, dir, &v, data, len, sim_hash(data, len));
  if (v.drop != IMPAIR_KEEP)
    return v.drop;
  if (v.dup)
    push(l, dir, v.dup_depart_ns, data, len);
  uint8_t *copy = push(l, dir, v.depart_ns, data, len);
  impair_apply_corrupt(&v, copy, len);     /* only the original is corrupted */
  return IMPAIR_KEEP;
}

uint64_t sim_link_next(const struct sim_link *l)
{
  return l->n ? l->heap[0].depart : IMPAIR_NEVER;
}

int sim_link_pop(struct sim_link *l, uint64_t now, struct sim_pkt *out)
{
  if (!l->n || l->heap[0].depart > now)
    return 0;
  *out = l->heap[0];
  l->heap[0] = l->heap[--l->n];
  for (uint32_t i = 0;;) {
    uint32_t a = 2 * i + 1, m = i;
    if (a < l->n && pkt_less(&l->heap[a], &l->heap[m])) m = a;
    if (a + 1 < l->n && pkt_less(&l->heap[a + 1], &l->heap[m])) m = a + 1;
    if (m == i) break;
    struct sim_pkt t = l->heap[i]; l->heap[i] = l->heap[m]; l->heap[m] = t;
    i = m;
  }
  l->delivered[out->dir]++;
  return 1;
}
