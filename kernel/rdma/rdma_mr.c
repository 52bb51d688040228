// rdma_mr.c: protection domains and memory regions.
//
// A PD is a name that QPs and MRs share; the core hands a QP's PD to
// translate() so an rkey or lkey only works inside its own PD. An MR pins
// every user page behind [addr, addr+length) (uvm_pin, page by page in
// chunks of 512 pages, so neither alignment nor physical contiguity is
// needed) and keeps their physical addresses, which the kernel maps 1:1.
// translate() turns (key, va, len) into direct-mapped segments, merging
// pages that happen to be physically adjacent.
//
// Keys: all 32 bits random and never 0; the lkey and rkey of every live MR
// are distinct from each other and from every other live key, and carry no
// trace of the table slot ([SEC-RAND-1]). mr_keys (rdma_idtab.c) maps each
// live key to its slot for translate(). Deregistration fails (-1) while a
// posted WR or the responder still uses the MR, so the core never sees
// pages vanish. Functions here take kernel values; the system calls are
// kernel/sys/sysrdma.c.
#include "lib/types.h"
#include "lib/param.h"
#include "lib/riscv.h"
#include "core/proc.h"
#include "core/printk.h"
#include "core/pmem.h"
#include "core/vm.h"
#include "lib/klib.h"
#include "rdma/rdma.h"

// Lock held. A PD handle of the calling process, or -1.
int rdma_pd_get(int h) {
  if (h < 0 || h >= RDMA_MAX_PD) return -1;
  struct rdma_pd *pd = &rdma_pds[h];
  return (pd->used && pd->owner == rdma_cur_pid()) ? h : -1;
}

// Lock NOT held (for every function below that takes a handle from a
// system call). A PD: its handle, or -1.
int rdma_alloc_pd(void) {
  int pid = rdma_cur_pid(), h = -1;
  spin_lock(&rdma.lock);
  for (int i = 0; i < RDMA_MAX_PD && h < 0; i++) {
    if (!rdma_pds[i].used) {
      rdma_pds[i] = (struct rdma_pd){ .used = 1, .owner = pid };
      h = i;
    }
  }
  spin_unlock(&rdma.lock);
  return h;
}

// The caller's PD h, unless an MR or QP uses it: 0, or -1.
int rdma_dealloc_pd(int h) {
  int r = -1;
  spin_lock(&rdma.lock);
  if (rdma_pd_get(h) >= 0 && rdma_pds[h].refs == 0) {
    rdma_pds[h].used = 0;
    r = 0;
  }
  spin_unlock(&rdma.lock);
  return r;
}

static uint64 mr_pa(const struct rdma_mr *mr, int page) {
  return mr->pas[page / RDMA_PAS_PER_PAGE][page % RDMA_PAS_PER_PAGE];
}

// Unpin and free the page lists. Safe with the lock held (page_put only).
static void mr_unpin(struct rdma_mr *mr) {
  for (int d = 0; d < RDMA_MR_DIR && mr->pas[d]; d++) {
    int n = mr->npages - d * RDMA_PAS_PER_PAGE;
    if (n > RDMA_PAS_PER_PAGE) n = RDMA_PAS_PER_PAGE;
    if (n > 0) uvm_unpin(mr->pas[d], n);
    page_put((uint64)mr->pas[d]);
    mr->pas[d] = NULL;
  }
  mr->npages = 0;
}

// Pin [addr, addr+length) in chunks of one page list each. Checks write
// permission when the MR may be written. Lock NOT held (walks page tables,
// allocates). Returns 0, or -1 with nothing pinned.
static int mr_pin(struct rdma_mr *mr, pagetable_t pt) {
  uint64 first = PG_ROUND_DOWN(mr->addr), end = PG_ROUND_UP(mr->addr + mr->length);
  int total = (int)((end - first) / PGSIZE);
  int want_write = (mr->access & (RCT_ACCESS_LOCAL_WRITE | RCT_ACCESS_REMOTE_WRITE)) != 0;
  mr->page0 = first;
  mr->npages = 0;
  if (total > RDMA_MR_PAGES) return -1;     // rdma_reg_mr's length check keeps it in
  for (int d = 0; mr->npages < total; d++) {
    int n = total - mr->npages;
    if (n > RDMA_PAS_PER_PAGE) n = RDMA_PAS_PER_PAGE;
    uint64 va = first + (uint64)mr->npages * PGSIZE;
    if (want_write) {
      for (int i = 0; i < n; i++)
        if (uvm_user_pa(pt, va + (uint64)i * PGSIZE, 1) == 0) goto fail;
    }
    mr->pas[d] = page_alloc();
    if (!mr->pas[d]) goto fail;
    if (uvm_pin(pt, va, (uint64)n * PGSIZE, mr->pas[d], n) != n) {
      page_put((uint64)mr->pas[d]);
      mr->pas[d] = NULL;
      goto fail;
    }
    mr->npages += n;
  }
  return 0;
fail:
  mr_unpin(mr);
  return -1;
}

// Every live lkey and rkey -> its MR's slot: 2 keys per MR, table at
// least twice that.
#define MR_KEY_BITS 10
_Static_assert((1 << MR_KEY_BITS) >= 2 * 2 * RDMA_MAX_MR, "mr_keys too small");
static struct rdma_id_ent mr_key_ents[1 << MR_KEY_BITS];
static struct rdma_idtab mr_keys = { mr_key_ents, MR_KEY_BITS };

// Caller holds rdma.lock. Draws slot h's lkey and rkey: random 32-bit,
// non-zero, unequal to each other and to every live key. [SEC-RAND-1]
static void mr_add_keys(struct rdma_mr *mr, int h) {
  mr->lkey = rdma_idtab_add(&mr_keys, 1, 0xffffffffu, h);
  mr->rkey = rdma_idtab_add(&mr_keys, 1, 0xffffffffu, h);
}

// Caller holds rdma.lock.
static void mr_free(int h) {
  struct rdma_mr *mr = &rdma_mrs[h];
  rdma_idtab_del(&mr_keys, mr->lkey);
  rdma_idtab_del(&mr_keys, mr->rkey);
  rdma_pds[mr->pd].refs--;
  mr_unpin(mr);
  mr->used = 0;
}

// Registers the caller's [addr, addr+length) in its PD pdh with access
// (IBV_ACCESS_*): the MR's handle and *keys, or -1.
int rdma_reg_mr(int pdh, uint64 addr, uint64 length, uint32 access, struct rdma_mr_keys *keys) {
  struct proc *p = current();
  if (length == 0 || length > RDMA_MAX_MR_SIZE || addr + length < addr) return -1;
  if (access & ~RCT_ACCESS_ALL) return -1;
  // IBTA: remote write (and atomic) access needs local write access.
  if ((access & (RCT_ACCESS_REMOTE_WRITE | RCT_ACCESS_REMOTE_ATOMIC)) &&
      !(access & RCT_ACCESS_LOCAL_WRITE)) return -1;
  struct rdma_mr tmp;
  memset(&tmp, 0, sizeof tmp);
  tmp.addr = addr;
  tmp.length = length;
  tmp.access = access;
  if (mr_pin(&tmp, p->pagetable) < 0) return -1;

  int h = -1;
  spin_lock(&rdma.lock);
  if (rdma_pd_get(pdh) >= 0) {
    for (int i = 0; i < RDMA_MAX_MR && h < 0; i++) {
      if (rdma_mrs[i].used) continue;
      h = i;
      tmp.used = 1;
      tmp.owner = p->pid;
      tmp.pd = pdh;
      mr_add_keys(&tmp, i);
      rdma_mrs[i] = tmp;
      rdma_pds[pdh].refs++;
    }
  }
  spin_unlock(&rdma.lock);
  if (h < 0) mr_unpin(&tmp);
  *keys = (struct rdma_mr_keys){ tmp.lkey, tmp.rkey };
  return h;
}

static int sges_use(const struct rct_sge *s, int n, uint32 lkey) {
  for (int i = 0; i < n; i++)
    if (s[i].lkey == lkey && s[i].length > 0) return 1;
  return 0;
}

// Lock held. Does a posted WR, the responder's current WRITE or a pending
// READ response still reach this MR?
int rdma_mr_busy(const struct rdma_mr *mr) {
  rdma_for_each_live(i, rdma.qp_live) {
    const struct rdma_qp *q = &rdma_qps[i];
    const struct rct_qp *c = &q->qp;
    for (uint32 j = c->sq_head; j != c->sq_tail; j++) {
      const struct rct_send_wqe *w = &q->sq[j & (c->init.sq_size - 1)];
      if (w->state == RCT_WQE_POSTED && sges_use(w->sge, w->wr.num_sge, mr->lkey)) return 1;
    }
    for (uint32 j = c->rq_head; j != c->rq_tail; j++) {
      const struct rct_recv_wqe *w = &q->rq[j & (c->init.rq_size - 1)];
      if (sges_use(w->sge, w->num_sge, mr->lkey)) return 1;
    }
    if (c->resp.wr_left > 0 && c->resp.wr_rkey == mr->rkey) return 1;
    for (uint32 j = c->resp.rd_head; j != c->resp.rd_tail; j++) {
      const struct rct_rd_res *r = &q->rd[j & (c->init.rd_size - 1)];
      if (r->valid && r->pending && r->rkey == mr->rkey) return 1;
    }
  }
  return 0;
}

// The caller's MR h, unless a posted WR or the responder uses it: 0, or -1.
int rdma_dereg_mr(int h) {
  int r = -1;
  spin_lock(&rdma.lock);
  if (h >= 0 && h < RDMA_MAX_MR && rdma_mrs[h].used &&
      rdma_mrs[h].owner == rdma_cur_pid() && !rdma_mr_busy(&rdma_mrs[h])) {
    mr_free(h);
    r = 0;
  }
  spin_unlock(&rdma.lock);
  return r;
}

// Lock held; the process's QPs are already gone.
void rdma_mr_release_all(int pid) {
  for (int i = 0; i < RDMA_MAX_MR; i++)
    if (rdma_mrs[i].used && rdma_mrs[i].owner == pid) mr_free(i);
  for (int i = 0; i < RDMA_MAX_PD; i++)
    if (rdma_pds[i].used && rdma_pds[i].owner == pid) rdma_pds[i].used = 0;
}

// The core's MR interface (rct.h struct rct_mr_ops). Lock held.
static int translate(void *ctx, uint32 key, bool is_remote, uint32 pd,
                     uint64 va, uint32 len, uint32 access,
                     struct rct_iov *out, int max) {
  int h = rdma_idtab_find(&mr_keys, key);
  if (h < 0) return RCT_MR_EKEY;
  struct rdma_mr *mr = &rdma_mrs[h];
  // A live key of the wrong kind: an lkey sent as an R_Key, or the reverse.
  if ((is_remote ? mr->rkey : mr->lkey) != key) return RCT_MR_EKEY;
  if ((uint32)mr->pd != pd) return RCT_MR_EPD;
  if (va < mr->addr || len > mr->length || va - mr->addr > mr->length - len) return RCT_MR_EBOUNDS;
  if ((mr->access & access) != access) return RCT_MR_EACCESS;
  if (max == 0 || len == 0) return 0;
  int n = 0;
  uint64 off = va - mr->page0;
  while (len > 0) {
    int page = (int)(off / PGSIZE);
    uint32 in_page = PGSIZE - (uint32)(off % PGSIZE);
    uint32 chunk = len < in_page ? len : in_page;
    uint8 *base = (uint8 *)(mr_pa(mr, page) + off % PGSIZE);
    if (n > 0 && out[n - 1].base + out[n - 1].len == base) {
      out[n - 1].len += chunk;            // physically adjacent: merge
    } else {
      if (n == max) return RCT_MR_ESEGS;
      out[n].base = base;
      out[n].len = chunk;
      n++;
    }
    off += chunk;
    len -= chunk;
  }
  return n;
}

const struct rct_mr_ops rdma_mr_ops = { .translate = translate };
