/*
 * host_mr.h: the host-side memory-registration backend of the transport
 * core (struct rct_mr_ops in rct_types.h), shared by every host build: the
 * Check harness (tests/unit), the fuzz targets (tests/fuzz), the simulator
 * (tests/sim, and through it bench/sim) and the core bench
 * (tests/unit/bench.c).
 *
 * Owns: a table of MRs (lkey/rkey pair, PD, VA range, access, host buffer),
 * their registration and deregistration, and the reference translate(),
 * which implements the rct_mr_ops contract the way the kernel's
 * (kernel rdma_mr.c) does: the key is looked up as an lkey or an rkey by
 * is_remote, then PD, bounds (without overflow) and access are checked in
 * that order; max == 0 only validates; [va, va+len) is split at 4 KiB VA
 * boundaries as the kernel's pinned pages split it, never merged (a host
 * buffer is contiguous, the kernel's pages need not be), RCT_MR_ESEGS when
 * more than max pieces are needed. kernel/transport/mr_contract.h holds the cases
 * both implementations must agree on.
 */
#ifndef HOST_MR_H
#define HOST_MR_H

#include <stdint.h>
#include <stdbool.h>
#include "rct.h"

#define HOST_MR_PAGE 4096u      /* the kernel's page size: where translate splits */
#define HOST_MR_MAX 16          /* MRs per table */

struct host_mr {
  uint32_t lkey, rkey;          /* both 0: a free entry */
  uint32_t pd, access;          /* access: RCT_ACCESS_* */
  uint64_t va, len;             /* the registered range [va, va+len) */
  uint8_t *buf;                 /* len bytes behind it, owned by the caller */
};

/* Zero-initialized (or host_mr_table_init) = empty. mr_ctx of a device. */
struct host_mr_table {
  struct host_mr mr[HOST_MR_MAX];
};

extern const struct rct_mr_ops host_mr_ops;   /* mr_ctx: a struct host_mr_table * */

void host_mr_table_init(struct host_mr_table *t);

/*
 * Register buf as [va, va+len) in pd with the caller's keys. Returns the
 * entry, or NULL when the table is full, a key is 0, lkey == rkey, a key
 * is already live in t, len is 0, va + len overflows or access has bits
 * outside RCT_ACCESS_ALL (the kernel refuses the same registrations).
 */
struct host_mr *host_mr_reg(struct host_mr_table *t, uint32_t lkey, uint32_t rkey, uint32_t pd,
                            uint64_t va, uint64_t len, uint32_t access, uint8_t *buf);

/* Free m's entry (its buffer stays the caller's). 0, or -1 if m is not live in t. */
int host_mr_dereg(struct host_mr_table *t, struct host_mr *m);

/* The live MR whose rkey (is_remote) or lkey is key, or NULL. */
struct host_mr *host_mr_find(struct host_mr_table *t, uint32_t key, bool is_remote);

/* The reference rct_mr_ops.translate; ctx is a struct host_mr_table *. */
int host_mr_translate(void *ctx, uint32_t key, bool is_remote, uint32_t pd, uint64_t va, uint32_t len,
                      uint32_t access, struct rct_iov *out, int max);

#endif
