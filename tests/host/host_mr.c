/*
 * host_mr.c: the host-side MR table and the reference translate() of the
 * rct_mr_ops contract (see host_mr.h).
 */
#include "host_mr.h"

#include <stddef.h>
#include <string.h>

const struct rct_mr_ops host_mr_ops = { host_mr_translate };

void host_mr_table_init(struct host_mr_table *t)
{
  memset(t, 0, sizeof(*t));
}

static bool live(const struct host_mr *m)
{
  return m->lkey != 0;
}

/* Is key the lkey or the rkey of a live MR of t? */
static bool key_live(const struct host_mr_table *t, uint32_t key)
{
  for (int i = 0; i < HOST_MR_MAX; i++)
    if (live(&t->mr[i]) && (t->mr[i].lkey == key || t->mr[i].rkey == key))
      return true;
  return false;
}

struct host_mr *host_mr_reg(struct host_mr_table *t, uint32_t lkey, uint32_t rkey, uint32_t pd,
                            uint64_t va, uint64_t len, uint32_t access, uint8_t *buf)
{
  if (lkey == 0 || rkey == 0 || lkey == rkey || key_live(t, lkey) || key_live(t, rkey))
    return NULL;
  if (len == 0 || va + len < va || (access & ~(uint32_t)RCT_ACCESS_ALL))
    return NULL;
  for (int i = 0; i < HOST_MR_MAX; i++) {
    struct host_mr *m = &t->mr[i];
    if (live(m))
      continue;
    *m = (struct host_mr){ .lkey = lkey, .rkey = rkey, .pd = pd, .access = access,
                           .va = va, .len = len, .buf = buf };
    return m;
  }
  return NULL;
}

int host_mr_dereg(struct host_mr_table *t, struct host_mr *m)
{
  if (m < t->mr || m >= t->mr + HOST_MR_MAX || !live(m))
    return -1;
  memset(m, 0, sizeof(*m));
  return 0;
}

struct host_mr *host_mr_find(struct host_mr_table *t, uint32_t key, bool is_remote)
{
  if (key == 0)
    return NULL;
  for (int i = 0; i < HOST_MR_MAX; i++) {
    struct host_mr *m = &t->mr[i];
    if (live(m) && (is_remote ? m->rkey : m->lkey) == key)
      return m;
  }
  return NULL;
}

/* [va, va+len) of m as pieces that end at 4 KiB VA boundaries. */
static int split(const struct host_mr *m, uint64_t va, uint32_t len, struct rct_iov *out, int max)
{
  int n = 0;
  while (len > 0) {
    uint32_t chunk = HOST_MR_PAGE - (uint32_t)(va % HOST_MR_PAGE);
    if (chunk > len)
      chunk = len;
    if (n == max)
      return RCT_MR_ESEGS;
    out[n].base = m->buf + (va - m->va);
    out[n].len = chunk;
    n++;
    va += chunk;
    len -= chunk;
  }
  return n;
}

int host_mr_translate(void *ctx, uint32_t key, bool is_remote, uint32_t pd, uint64_t va, uint32_t len,
                      uint32_t access, struct rct_iov *out, int max)
{
  const struct host_mr *m = host_mr_find(ctx, key, is_remote);
  if (!m)
    return RCT_MR_EKEY;   /* also a live key of the other kind: an lkey sent as an R_Key */
  if (m->pd != pd)
    return RCT_MR_EPD;
  if (va < m->va || len > m->len || va - m->va > m->len - len)
    return RCT_MR_EBOUNDS;
  if ((m->access & access) != access)
    return RCT_MR_EACCESS;
  if (max == 0 || len == 0)
    return 0;
  return split(m, va, len, out, max);
}
