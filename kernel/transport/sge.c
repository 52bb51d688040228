/*
 * sge.c: scatter/gather lists. rct_sge_translate walks a list of SGEs and
 * turns bytes [off, off+len) of the message it describes into memory
 * segments through the caller's MR interface; rct_segs_copy copies bytes
 * into such segments (placement of received payload).
 */
#include "core_int.h"

/* Translate bytes [off, off+len) of the message described by an SGE list
 * into at most `max` segments. Returns the segment count or a negative
 * rct_mr_err (RCT_MR_EBOUNDS when the list is shorter than off+len). */
int rct_sge_translate(struct rct_qp_base *b, const struct rct_sge *sge, int nsge, uint32_t off,
                      uint32_t len, uint32_t access, struct rct_iov *out, int max)
{
  const struct rct_mr_ops *ops = b->dev->attr.mr_ops;
  int n = 0;
  for (int i = 0; i < nsge && len; i++) {
    uint32_t take;
    int r;
    if (off >= sge[i].length) {
      off -= sge[i].length;
      continue;
    }
    take = sge[i].length - off;
    if (take > len)
      take = len;
    if (n >= max)
      return RCT_MR_ESEGS;
    r = ops->translate(b->dev->attr.mr_ctx, sge[i].lkey, false, b->init.pd,
                       sge[i].addr + off, take, access, out + n, max - n);
    if (r < 0)
      return r;
    n += r;
    len -= take;
    off = 0;
  }
  return len ? RCT_MR_EBOUNDS : n;
}

void rct_segs_copy(const struct rct_iov *seg, int nseg, const uint8_t *src, uint32_t len)
{
  for (int i = 0; i < nseg && len; i++) {
    uint32_t n = seg[i].len < len ? seg[i].len : len;
    RCT_MEMCPY(seg[i].base, src, n);
    src += n;
    len -= n;
  }
}
