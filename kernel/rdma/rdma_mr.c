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
// pages vanish.
//
// The owner of a PD or MR is a struct kv_owner (kverbs.h): the front end's
// for a process (uverbs.c), a kernel consumer's own for kernel pages
// (kv_reg_kernel_mr: the boot self-tests, rdma_mr_selftest.c and
// kernel/selftest_kverbs.c), through the same checks, slots and keys.
#include "lib/types.h"
#include "lib/param.h"
#include "lib/riscv.h"
#include "core/printk.h"
#include "core/pmem.h"
#include "core/vm.h"
#include "lib/klib.h"
#include "rdma/rdma.h"

// Lock held. pd's slot if it is a live PD of o, else -1.
int rdma_pd_owned(struct kv_owner *o, const struct rdma_pd *pd) {
  if (pd < rdma_pds || pd >= rdma_pds + RDMA_MAX_PD) return -1;
  return (pd->used && pd->owner == o) ? (int)(pd - rdma_pds) : -1;
}

// A new PD of o, or NULL.
struct rdma_pd *kv_alloc_pd(struct kv_owner *o) {
  struct rdma_pd *pd = NULL;
  spin_lock(&rdma.lock);
  for (int i = 0; i < RDMA_MAX_PD && !pd; i++) {
    if (!rdma_pds[i].used) {
      rdma_pds[i] = (struct rdma_pd){ .used = 1, .owner = o };
      pd = &rdma_pds[i];
    }
  }
  spin_unlock(&rdma.lock);
  return pd;
}

// 0, or -1 if pd is no PD of o or still has MRs or QPs.
int kv_dealloc_pd(struct kv_owner *o, struct rdma_pd *pd) {
  int r = -1;
  spin_lock(&rdma.lock);
  if (rdma_pd_owned(o, pd) >= 0 && pd->refs == 0) {
    pd->used = 0;
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

// Pin [addr, addr+length) in chunks of one page list each: the user pages
// of pt (checks write permission when the MR may be written) or, if kpa is
// not NULL, the kernel pages kpa[0..] (one per page, each held). Lock NOT
// held (walks page tables, allocates). Returns 0, or -1 with nothing pinned.
static int mr_pin(struct rdma_mr *mr, pagetable_t pt, const uint64 *kpa) {
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
    if (want_write && !kpa) {
      for (int i = 0; i < n; i++)
        if (uvm_user_pa(pt, va + (uint64)i * PGSIZE, 1) == 0) goto fail;
    }
    mr->pas[d] = page_alloc();
    if (!mr->pas[d]) goto fail;
    if (kpa) {
      for (int i = 0; i < n; i++) {
        mr->pas[d][i] = kpa[mr->npages + i];
        page_hold(mr->pas[d][i]);
      }
    } else if (uvm_pin(pt, va, (uint64)n * PGSIZE, mr->pas[d], n) != n) {
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

// May [addr, addr+length) be registered with these access rights?
static int mr_args_ok(uint64 addr, uint64 length, uint32 access) {
  if (length == 0 || length > RDMA_MAX_MR_SIZE || addr + length < addr) return 0;
  if (access & ~RCT_ACCESS_ALL) return 0;
  // IBTA: remote write (and atomic) access needs local write access.
  return !(access & (RCT_ACCESS_REMOTE_WRITE | RCT_ACCESS_REMOTE_ATOMIC)) ||
         (access & RCT_ACCESS_LOCAL_WRITE);
}

// Lock NOT held. Register [addr, addr+length) of pt, or of the kernel
// pages kpa (see mr_pin), as an MR of o in o's PD pd. The MR with *keys
// set, or NULL with nothing pinned.
static struct rdma_mr *mr_reg(struct kv_owner *o, struct rdma_pd *pd, uint64 addr, uint64 length,
                              uint32 access, pagetable_t pt, const uint64 *kpa,
                              struct rdma_mr_keys *keys) {
  if (!mr_args_ok(addr, length, access)) return NULL;
  struct rdma_mr tmp;
  memset(&tmp, 0, sizeof tmp);
  tmp.addr = addr;
  tmp.length = length;
  tmp.access = access;
  if (mr_pin(&tmp, pt, kpa) < 0) return NULL;

  struct rdma_mr *mr = NULL;
  spin_lock(&rdma.lock);
  int pdh = rdma_pd_owned(o, pd);
  for (int i = 0; pdh >= 0 && i < RDMA_MAX_MR && !mr; i++) {
    if (rdma_mrs[i].used) continue;
    mr = &rdma_mrs[i];
    tmp.used = 1;
    tmp.owner = o;
    tmp.pd = pdh;
    mr_add_keys(&tmp, i);
    *mr = tmp;
    pd->refs++;
  }
  spin_unlock(&rdma.lock);
  if (!mr) { mr_unpin(&tmp); return NULL; }
  *keys = (struct rdma_mr_keys){ tmp.lkey, tmp.rkey };
  return mr;
}

struct rdma_mr *kv_reg_user_mr(struct kv_owner *o, struct rdma_pd *pd, pagetable_t pt,
                               uint64 addr, uint64 length, uint32 access,
                               struct rdma_mr_keys *keys) {
  return pt ? mr_reg(o, pd, addr, length, access, pt, NULL, keys) : NULL;
}

struct rdma_mr *kv_reg_kernel_mr(struct kv_owner *o, struct rdma_pd *pd, uint64 addr,
                                 uint64 length, const uint64 *pa, uint32 access,
                                 struct rdma_mr_keys *keys) {
  return pa ? mr_reg(o, pd, addr, length, access, NULL, pa, keys) : NULL;
}

// Lock held. Does a posted WR, the responder's current WRITE or a pending
// READ response still reach this MR? The core walks its own rings.
int rdma_mr_busy(const struct rdma_mr *mr) {
  return rct_key_in_use(&rdma.dev, mr->lkey) || rct_key_in_use(&rdma.dev, mr->rkey);
}

// 0, or -1 if mr is no MR of o or is still in use.
int kv_dereg_mr(struct kv_owner *o, struct rdma_mr *mr) {
  int r = -1;
  spin_lock(&rdma.lock);
  if (mr >= rdma_mrs && mr < rdma_mrs + RDMA_MAX_MR && mr->used && mr->owner == o &&
      !rdma_mr_busy(mr)) {
    mr_free((int)(mr - rdma_mrs));
    r = 0;
  }
  spin_unlock(&rdma.lock);
  return r;
}

// Lock held; the owner's QPs are already gone.
void rdma_mr_release_all(struct kv_owner *o) {
  for (int i = 0; i < RDMA_MAX_MR; i++)
    if (rdma_mrs[i].used && rdma_mrs[i].owner == o) mr_free(i);
  for (int i = 0; i < RDMA_MAX_PD; i++)
    if (rdma_pds[i].used && rdma_pds[i].owner == o) rdma_pds[i].used = 0;
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
