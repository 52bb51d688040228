/*
 * mr_contract.h: the cases of the rct_mr_ops.translate contract (rct_types.h),
 * run against both implementations: the host reference
 * (tests/host/host_mr.c, by tests/unit/test_mr_contract.c) and the kernel's
 * (rdma_mr.c, by kernel/rdma/rdma_mr_selftest.c at boot). Each side
 * registers the four MRs of mrc_mrs in one PD with its own keys, runs every
 * case through its translate and compares the return value, the segment
 * lengths and where each segment points (the MR's memory at the expected
 * offset).
 *
 * Owns the MRs, the cases and the one runner both sides call (mrc_run);
 * no host or kernel header. Include rct.h (the core's header, for
 * RCT_ACCESS_* and RCT_MR_E*) before this file. The kernel side backs each
 * MR with pages that are not physically adjacent, so its translate must
 * split where the host's does: at every 4 KiB VA boundary.
 */
#ifndef MR_CONTRACT_H
#define MR_CONTRACT_H

#define MRC_LW RCT_ACCESS_LOCAL_WRITE
#define MRC_RW RCT_ACCESS_REMOTE_WRITE
#define MRC_RR RCT_ACCESS_REMOTE_READ
#define MRC_RA RCT_ACCESS_REMOTE_ATOMIC

/* The MRs: where they sit in VA space, how long, what they allow. */
struct mrc_mr {
  uint64_t va, len;
  uint32_t access;
};

#define MRC_V0 0x200800ull              /* "rw": starts mid-page, spans 4 pages */
#define MRC_V1 0x400000ull              /* "ro": no access right at all */
#define MRC_V2 0x1000ull                /* "low": near VA 0, for sums that wrap */
#define MRC_V3 0xffffffffffffe000ull    /* "top": ends at the last byte of VA space */
#define MRC_NMR 4

static const struct mrc_mr mrc_mrs[MRC_NMR] = {
  { MRC_V0, 0x3000, MRC_LW | MRC_RW | MRC_RR },
  { MRC_V1, 0x2000, 0 },
  { MRC_V2, 0x2000, MRC_LW | MRC_RR },
  { MRC_V3, 0x1fff, MRC_RR },
};

/* Which key of the case's MR is passed; MRC_NOKEY passes 0, never a live key. */
enum mrc_key { MRC_LKEY, MRC_RKEY, MRC_NOKEY };

#define MRC_MAX_SEGS 4

struct mrc_case {
  const char *what;
  int mr;                       /* index in mrc_mrs */
  enum mrc_key key;
  int remote;                   /* is_remote */
  int other_pd;                 /* the QP's PD is not the MR's */
  uint64_t va;
  uint32_t len, access;
  int max;
  int expect;                   /* segment count or RCT_MR_E* */
  uint32_t seg[MRC_MAX_SEGS];   /* expected segment lengths when expect > 0 */
};

/* key and is_remote of a call that uses the right kind of key */
#define MRC_LOCAL MRC_LKEY, 0
#define MRC_REMOTE MRC_RKEY, 1

static const struct mrc_case mrc_cases[] = {
  /* the key: lkey for local access, rkey for remote, never the other way */
  { "lkey, local", 0, MRC_LOCAL, 0, MRC_V0 + 0x100, 0x100, MRC_LW, 4, 1, { 0x100 } },
  { "rkey, remote", 0, MRC_REMOTE, 0, MRC_V0, 0x800, MRC_RW, 4, 1, { 0x800 } },
  { "rkey used as an lkey", 0, MRC_RKEY, 0, 0, MRC_V0, 0x10, 0, 4, RCT_MR_EKEY, { 0 } },
  { "lkey used as an rkey", 0, MRC_LKEY, 1, 0, MRC_V0, 0x10, MRC_RR, 4, RCT_MR_EKEY, { 0 } },
  { "key 0, local", 0, MRC_NOKEY, 0, 0, MRC_V0, 0x10, 0, 4, RCT_MR_EKEY, { 0 } },
  { "key 0, remote", 0, MRC_NOKEY, 1, 0, MRC_V0, 0x10, MRC_RR, 4, RCT_MR_EKEY, { 0 } },
  { "wrong key kind before PD", 0, MRC_RKEY, 0, 1, MRC_V0, 0x10, 0, 4, RCT_MR_EKEY, { 0 } },
  /* the PD, checked before the range */
  { "other PD", 0, MRC_LOCAL, 1, MRC_V0, 0x10, 0, 4, RCT_MR_EPD, { 0 } },
  { "other PD before bounds", 0, MRC_REMOTE, 1, MRC_V0 - 1, 0x10, MRC_RR, 4, RCT_MR_EPD, { 0 } },
  /* bounds, without overflow */
  { "one byte before the MR", 0, MRC_LOCAL, 0, MRC_V0 - 1, 1, 0, 4, RCT_MR_EBOUNDS, { 0 } },
  { "starts before, ends inside", 0, MRC_LOCAL, 0, MRC_V0 - 1, 2, 0, 4, RCT_MR_EBOUNDS, { 0 } },
  { "one byte past the end", 0, MRC_LOCAL, 0, MRC_V0, 0x3001, 0, 4, RCT_MR_EBOUNDS, { 0 } },
  { "the last byte", 0, MRC_LOCAL, 0, MRC_V0 + 0x2fff, 1, 0, 4, 1, { 1 } },
  { "len 0 at the start", 0, MRC_LOCAL, 0, MRC_V0, 0, 0, 4, 0, { 0 } },
  { "len 0 at the end", 0, MRC_LOCAL, 0, MRC_V0 + 0x3000, 0, 0, 4, 0, { 0 } },
  { "len 0 past the end", 0, MRC_LOCAL, 0, MRC_V0 + 0x3001, 0, 0, 4, RCT_MR_EBOUNDS, { 0 } },
  { "len 0 before the start", 0, MRC_LOCAL, 0, MRC_V0 - 1, 0, 0, 4, RCT_MR_EBOUNDS, { 0 } },
  { "len 2^32 - 1", 0, MRC_LOCAL, 0, MRC_V0, 0xffffffffu, 0, 4, RCT_MR_EBOUNDS, { 0 } },
  { "va 4 GiB above", 0, MRC_LOCAL, 0, MRC_V0 + 0x100000000ull, 0x10, 0, 4, RCT_MR_EBOUNDS, { 0 } },
  { "another MR's key", 1, MRC_LOCAL, 0, MRC_V0, 0x10, 0, 4, RCT_MR_EBOUNDS, { 0 } },
  { "low: va - start + len wraps", 2, MRC_LOCAL, 0, 0xfffffffffffff000ull, 0x2000, 0, 4, RCT_MR_EBOUNDS, { 0 } },
  { "low: va + len wraps", 2, MRC_LOCAL, 0, 0xffffffffffffffffull, 2, 0, 4, RCT_MR_EBOUNDS, { 0 } },
  { "top: va + len wraps to 0x7ff", 3, MRC_REMOTE, 0, MRC_V3 + 0x1800, 0x1000, MRC_RR, 4, RCT_MR_EBOUNDS, { 0 } },
  { "top: one past the end", 3, MRC_REMOTE, 0, MRC_V3 + 0x1fff, 1, MRC_RR, 4, RCT_MR_EBOUNDS, { 0 } },
  { "top: len 0 at the end", 3, MRC_REMOTE, 0, MRC_V3 + 0x1fff, 0, MRC_RR, 4, 0, { 0 } },
  { "top: the MR's last byte", 3, MRC_REMOTE, 0, 0xfffffffffffffffeull, 1, MRC_RR, 4, 1, { 1 } },
  { "top: whole MR", 3, MRC_REMOTE, 0, MRC_V3, 0x1fff, MRC_RR, 2, 2, { 0x1000, 0xfff } },
  /* access, checked after the range */
  { "bounds before access", 0, MRC_REMOTE, 0, MRC_V0 + 0x3000, 1, MRC_RA, 4, RCT_MR_EBOUNDS, { 0 } },
  { "atomic not granted", 0, MRC_REMOTE, 0, MRC_V0, 8, MRC_RA, 4, RCT_MR_EACCESS, { 0 } },
  { "one right of three missing", 0, MRC_REMOTE, 0, MRC_V0, 8, MRC_RW | MRC_RR | MRC_RA, 4, RCT_MR_EACCESS, { 0 } },
  { "every right granted", 0, MRC_LOCAL, 0, MRC_V0, 8, MRC_LW | MRC_RW | MRC_RR, 4, 1, { 8 } },
  { "ro: local read", 1, MRC_LOCAL, 0, MRC_V1, 0x2000, 0, 2, 2, { 0x1000, 0x1000 } },
  { "ro: local write", 1, MRC_LOCAL, 0, MRC_V1, 8, MRC_LW, 4, RCT_MR_EACCESS, { 0 } },
  { "ro: remote read", 1, MRC_REMOTE, 0, MRC_V1, 8, MRC_RR, 4, RCT_MR_EACCESS, { 0 } },
  { "low: remote read", 2, MRC_REMOTE, 0, MRC_V2, 0x2000, MRC_RR, 2, 2, { 0x1000, 0x1000 } },
  /* segments: split at every 4 KiB VA boundary, at most max */
  { "whole MR, max 4", 0, MRC_LOCAL, 0, MRC_V0, 0x3000, 0, 4, 4, { 0x800, 0x1000, 0x1000, 0x800 } },
  { "whole MR, max 3", 0, MRC_LOCAL, 0, MRC_V0, 0x3000, 0, 3, RCT_MR_ESEGS, { 0 } },
  { "up to a page boundary", 0, MRC_LOCAL, 0, MRC_V0, 0x800, 0, 1, 1, { 0x800 } },
  { "one byte over a page boundary", 0, MRC_LOCAL, 0, MRC_V0, 0x801, 0, 2, 2, { 0x800, 1 } },
  { "one byte over, max 1", 0, MRC_LOCAL, 0, MRC_V0, 0x801, 0, 1, RCT_MR_ESEGS, { 0 } },
  { "one aligned page", 0, MRC_LOCAL, 0, MRC_V0 + 0x800, 0x1000, 0, 1, 1, { 0x1000 } },
  /* validate-only (max 0): 0 on success, every check still made */
  { "validate-only, whole MR", 0, MRC_LOCAL, 0, MRC_V0, 0x3000, 0, 0, 0, { 0 } },
  { "validate-only, len 0", 0, MRC_LOCAL, 0, MRC_V0, 0, 0, 0, 0, { 0 } },
  { "validate-only, wrong key kind", 0, MRC_LKEY, 1, 0, MRC_V0, 8, 0, 0, RCT_MR_EKEY, { 0 } },
  { "validate-only, other PD", 0, MRC_REMOTE, 1, MRC_V0, 8, MRC_RR, 0, RCT_MR_EPD, { 0 } },
  { "validate-only, bounds", 0, MRC_LOCAL, 0, MRC_V0, 0x3001, 0, 0, RCT_MR_EBOUNDS, { 0 } },
  { "validate-only, access", 0, MRC_REMOTE, 0, MRC_V0, 8, MRC_RA, 0, RCT_MR_EACCESS, { 0 } },
};

#define MRC_NCASES ((int)(sizeof(mrc_cases) / sizeof(mrc_cases[0])))

/* One implementation under test, with the four MRs registered in one PD. */
struct mrc_side {
  const struct rct_mr_ops *ops;
  void *ctx;                            /* the ops' mr_ctx */
  uint32_t pd;                          /* the MRs' PD; pd + 1 is "another PD" */
  uint32_t lkey[MRC_NMR], rkey[MRC_NMR];
  /* Where byte off of MR mr is, as translate should point at it. */
  uint8_t *(*addr)(const struct mrc_side *s, int mr, uint64_t off);
};

/* Run case c through s. NULL when the answer is the expected one, else
 * what differs; *got is translate's return value. */
static inline const char *mrc_run(const struct mrc_side *s, const struct mrc_case *c, int *got)
{
  uint32_t key = c->key == MRC_LKEY ? s->lkey[c->mr] : c->key == MRC_RKEY ? s->rkey[c->mr] : 0;
  struct rct_iov out[MRC_MAX_SEGS];
  uint64_t off = c->va - mrc_mrs[c->mr].va;
  *got = 0;
  if (c->max > MRC_MAX_SEGS)
    return "case asks for more than MRC_MAX_SEGS segments";
  for (int i = 0; i < MRC_MAX_SEGS; i++)
    out[i] = (struct rct_iov){ 0, 0 };
  *got = s->ops->translate(s->ctx, key, c->remote != 0, s->pd + (c->other_pd ? 1u : 0u), c->va, c->len,
                           c->access, c->max ? out : 0, c->max);
  if (*got != c->expect)
    return "return value";
  for (int i = 0; i < *got; i++) {
    if (out[i].len != c->seg[i])
      return "segment length";
    if (out[i].base != s->addr(s, c->mr, off))
      return "segment address";
    off += out[i].len;
  }
  return 0;
}

#endif
