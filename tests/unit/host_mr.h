/*
 * host_mr.h: the range step of a host-memory MR backend, shared by the Check
 * harness (harness.c) and the fuzz targets (tests/fuzz/fuzz_common.h).
 *
 * After the caller has found the MR by key and checked its PD, this checks
 * the range and the access rights and splits [va, va+len) at 4 KiB
 * boundaries of the VA, the way the kernel's pinned pages split it, so the
 * core's segment handling is exercised on the host too. max == 0 validates
 * only. Returns the segment count or a negative RCT_MR_E* code.
 */
#ifndef HOST_MR_H
#define HOST_MR_H

#include <stdint.h>
#include "rct.h"

#define HOST_MR_PAGE 4096u

static inline int host_mr_segments(uint8_t *buf, uint64_t mr_va, uint32_t mr_len, uint32_t mr_access,
                                   uint64_t va, uint32_t len, uint32_t access,
                                   struct rct_iov *out, int max)
{
  int n = 0;
  if (va < mr_va || len > mr_len || va - mr_va > mr_len - len)
    return RCT_MR_EBOUNDS;
  if ((access & mr_access) != access)
    return RCT_MR_EACCESS;
  if (max == 0)
    return 0;
  while (len) {
    uint32_t chunk = HOST_MR_PAGE - (uint32_t)(va % HOST_MR_PAGE);
    if (chunk > len)
      chunk = len;
    if (n >= max)
      return RCT_MR_ESEGS;
    out[n].base = buf + (va - mr_va);
    out[n].len = chunk;
    n++;
    va += chunk;
    len -= chunk;
  }
  return n;
}

#endif
