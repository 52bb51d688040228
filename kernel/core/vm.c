// vm.c: page-table construction and user memory access (see vm.h).
#include "lib/types.h"
#include "lib/riscv.h"
#include "lib/memlayout.h"
#include "lib/param.h"
#include "core/printk.h"
#include "lib/klib.h"
#include "core/pmem.h"
#include "core/proc.h"
#include "core/vm.h"
#include "core/pager.h"

extern char kernel_text_end[];   // kernel.ld
extern char trampoline[];        // trampoline.S

pagetable_t kernel_pagetable;

// Returns the PTE for va at leaf_level (0 = 4 KiB, 1 = 2 MiB, 2 = 1 GiB),
// allocating intermediate tables if create. NULL if absent, out of
// memory, or a larger leaf already covers va.
static pte_t *pte_find(pagetable_t pt, uint64 va, int leaf_level, int create) {
  if (va >= MAXVA) panic("pte_find: va %p beyond MAXVA", va);
  for (int level = 2; level > leaf_level; level--) {
    pte_t *e = &pt[VPN_INDEX(va, level)];
    if (*e & PTE_V) {
      if (*e & PTE_LEAF_BITS) return NULL;
      pt = (pagetable_t)PTE_TO_PA(*e);
    } else {
      if (!create || (pt = page_alloc()) == NULL) return NULL;
      *e = PA_TO_PTE(pt) | PTE_V;
    }
  }
  return &pt[VPN_INDEX(va, leaf_level)];
}

pte_t *uvm_walk(pagetable_t pt, uint64 va) {
  return pte_find(pt, va, 0, 0);
}

// Maps [va, va+size) to [pa, ...) with pages of the given level. Returns
// -1 if a page table could not be allocated.
static int map_range(pagetable_t pt, uint64 va, uint64 size, uint64 pa, int perm, int level) {
  uint64 step = (uint64)PGSIZE << (9 * level);
  if (va % step || pa % step || size % step) panic("map_range: misaligned");
  for (uint64 off = 0; off < size; off += step) {
    pte_t *e = pte_find(pt, va + off, level, 1);
    if (e == NULL) return -1;
    if (*e & PTE_V) panic("map_range: %p already mapped", va + off);
    *e = PA_TO_PTE(pa + off) | perm | PTE_V | PTE_A | PTE_D;
  }
  return 0;
}

// Root entries the kernel owns: every user table shares them (vm.h).
static int kernel_root_index(int i) {
  return i != VPN_INDEX(0, 2) && i != VPN_INDEX(TRAMPOLINE, 2);
}

static int kernel_roots_shared;   // set once the first user table copied them

static void kmap(uint64 va, uint64 size, uint64 pa, int perm, int level) {
  // A new root entry made now would be missing from the user tables.
  if (kernel_roots_shared && !(kernel_pagetable[VPN_INDEX(va, 2)] & PTE_V))
    panic("kmap: %p needs a new root entry after user tables exist", va);
  if (map_range(kernel_pagetable, va, size, pa, perm, level) < 0)
    panic("kmap: out of memory building the kernel page table");
}

// Devices below 1 GiB are mapped at KDEV_ALIAS + pa (memlayout.h).
static void kmap_device(uint64 pa, uint64 size, int level) {
  kmap(KDEV_ALIAS + pa, size, pa, PTE_R | PTE_W, level);
}

unsigned long long kdev_offset;   // 0 until paging is on (memlayout.h)

void kvm_init(void) {
  kernel_pagetable = page_alloc();
  uint64 text_end = PG_ROUND_UP((uint64)kernel_text_end);
  kmap_device(TEST_FINISHER, PGSIZE, 0);
  kmap_device(UART0_BASE, PGSIZE, 0);
  kmap_device(CLINT_BASE, 0x10000, 0);  // msip, mtimecmp, mtime (prof.c)
  kmap_device(VIRTIO_MMIO_BASE, VIRTIO_MMIO_SLOTS * PGSIZE, 0);
  kmap_device(PLIC_BASE, PLIC_SIZE, 1);
  kmap_device(PCI_ECAM_BASE, PCI_ECAM_SIZE, 1);
  kmap(PCI_MMIO_BASE, PCI_MMIO_SIZE, PCI_MMIO_BASE, PTE_R | PTE_W, 2);
  kmap(RAM_BASE, text_end - RAM_BASE, RAM_BASE, PTE_R | PTE_X, 0);
  kmap(text_end, pmem_ram_end() - text_end, text_end, PTE_R | PTE_W, 0);
  kmap(TRAMPOLINE, PGSIZE, (uint64)trampoline, PTE_R | PTE_X, 0);
}

void kvm_map_kstack(int slot) {
  for (int i = 0; i < KSTACK_PAGES; i++) {
    void *page = page_alloc();
    if (!page) panic("kvm_map_kstack: out of memory");
    kmap(KSTACK_BASE(slot) + i * PGSIZE, PGSIZE, (uint64)page, PTE_R | PTE_W, 0);
  }
}

// The first call (hart 0, at boot) also moves device access to the alias.
void kvm_hart_init(void) {
  vm_load(kernel_pagetable, 0);
  kdev_offset = KDEV_ALIAS;
}

// Loads pt into satp unless this hart already runs on it at generation
// gen (see vm_user_changed). Caller has interrupts off.
void vm_load(pagetable_t pt, uint64 gen) {
  struct cpu *c = this_cpu();
  if (c->vm_root == pt && c->vm_gen == gen) return;
  csr_write(satp, MAKE_SATP(pt));
  sfence_vma();   // one ASID for all tables: drop the old translations
  c->vm_root = pt;
  c->vm_gen = gen;
}

// p's user mappings changed while it runs on this hart: drop this hart's
// stale translations now, and make every other hart drop its own before
// it next runs p (the scheduler compares generations in vm_load).
void vm_user_changed(struct proc *p) {
  intr_push();
  p->vm_gen++;
  sfence_vma();
  this_cpu()->vm_gen = p->vm_gen;
  intr_pop();
}

// A root table holding the kernel's shared root entries, nothing else.
pagetable_t uvm_create_root(void) {
  pagetable_t pt = page_alloc();
  if (!pt) return NULL;
  for (int i = 0; i < 512; i++)
    if (kernel_root_index(i)) pt[i] = kernel_pagetable[i];
  kernel_roots_shared = 1;
  return pt;
}

int uvm_attach(pagetable_t pt, uint64 trapframe_pa) {
  if (map_range(pt, TRAMPOLINE, PGSIZE, (uint64)trampoline, PTE_R | PTE_X, 0) < 0 ||
      map_range(pt, TRAPFRAME, PGSIZE, trapframe_pa, PTE_R | PTE_W, 0) < 0) {
    uvm_release(pt, 0);
    return -1;
  }
  return 0;
}

pagetable_t uvm_create(uint64 trapframe_pa) {
  pagetable_t pt = uvm_create_root();
  if (pt && uvm_attach(pt, trapframe_pa) < 0) {
    page_put((uint64)pt);
    return NULL;
  }
  return pt;
}

// Unmaps npages from va. User pages (put_pages) go through the pager,
// which frees the page or its store slot; else the entry is just cleared.
// Missing mappings are skipped. Caller holds pager_lock.
static void unmap_locked(pagetable_t pt, uint64 va, uint64 npages, int put_pages) {
  for (uint64 i = 0; i < npages; i++, va += PGSIZE) {
    pte_t *e = pte_find(pt, va, 0, 0);
    if (e == NULL || *e == 0) continue;
    if (put_pages) pager_unmap(e);
    else *e = 0;
  }
}

static void unmap_pages(pagetable_t pt, uint64 va, uint64 npages, int put_pages) {
  pager_lock();
  unmap_locked(pt, va, npages, put_pages);
  pager_unlock();
}

// Maps a fresh user page (pager_alloc: may evict, so no lock held) at va.
static int map_user_page(pagetable_t pt, uint64 va, int perm) {
  void *page = pager_alloc();
  if (!page) return -1;
  pager_lock();
  int r = map_range(pt, va, PGSIZE, (uint64)page, perm, 0);
  if (r == 0) pager_mapped();
  pager_unlock();
  if (r < 0) page_put((uint64)page);
  return r;
}

int uvm_grow(pagetable_t pt, uint64 old_end, uint64 new_end, int perm) {
  if (new_end > USER_TOP) return -1;
  for (uint64 va = PG_ROUND_UP(old_end); va < new_end; va += PGSIZE) {
    if (map_user_page(pt, va, perm | PTE_R | PTE_U) < 0) {
      unmap_pages(pt, PG_ROUND_UP(old_end), (va - PG_ROUND_UP(old_end)) / PGSIZE, 1);
      return -1;
    }
  }
  return 0;
}

uint64 uvm_shrink(pagetable_t pt, uint64 old_end, uint64 new_end) {
  if (new_end >= old_end) return old_end;
  uint64 from = PG_ROUND_UP(new_end), to = PG_ROUND_UP(old_end);
  unmap_pages(pt, from, (to - from) / PGSIZE, 1);
  return new_end;
}

// Caller has already unmapped every leaf page.
static void free_tables(pagetable_t pt, int level) {
  for (int i = 0; i < 512; i++) {
    pte_t e = pt[i];
    if (!(e & PTE_V)) continue;
    if (e & PTE_LEAF_BITS) panic("free_tables: leaf still mapped at level %d", level);
    free_tables((pagetable_t)PTE_TO_PA(e), level - 1);
  }
  page_put((uint64)pt);
}

// May run under a process's lock (proc_release_slot): never sleeps.
void uvm_release(pagetable_t pt, uint64 end) {
  pager_lock();
  unmap_locked(pt, TRAMPOLINE, 1, 0);
  unmap_locked(pt, TRAPFRAME, 1, 0);
  unmap_locked(pt, 0, PG_ROUND_UP(end) / PGSIZE, 1);
  for (int i = 0; i < 512; i++) {
    if (kernel_root_index(i) || !(pt[i] & PTE_V)) continue;
    free_tables((pagetable_t)PTE_TO_PA(pt[i]), 1);
    pt[i] = 0;
  }
  pager_unlock();
}

void uvm_destroy(pagetable_t pt, uint64 end) {
  uvm_release(pt, end);
  page_put((uint64)pt);
}

void uvm_swap_user(pagetable_t a, pagetable_t b) {
  pager_lock();
  for (int i = 0; i < 512; i++) {
    if (kernel_root_index(i)) continue;
    pte_t t = a[i];
    a[i] = b[i];
    b[i] = t;
  }
  pager_unlock();
}

// Copies from's entry at va into to (pager_lock held; page: a fresh page
// or NULL). A resident page is copied into page, a paged-out one shares
// its store slot. Returns 1 if page was used, 0 if not, -1 if out of
// memory, 2 after waiting for a busy entry (the lock was dropped: look
// again), 3 if a resident page needs a page.
static int clone_entry(pagetable_t from, pagetable_t to, uint64 va, void *page) {
  pte_t *e = pte_find(from, va, 0, 0);
  pte_t old = e ? *e : 0;
  if (old & PTE_BUSY) return pager_wait_busy() < 0 ? -1 : 2;
  if (old & PTE_V) {
    if (!page) return 3;
    memmove(page, (void *)PTE_TO_PA(old), PGSIZE);
    if (map_range(to, va, PGSIZE, (uint64)page, PTE_FLAGS(old) & PTE_PERM_BITS, 0) < 0) return -1;
    pager_mapped();
    return 1;
  }
  if (!(old & PTE_PAGED)) return 0;
  pte_t *c = pte_find(to, va, 0, 1);
  if (c == NULL) return -1;
  *c = pager_share(old);
  return 0;
}

// Process context (the parent), no lock held: may evict and sleep.
int uvm_clone(pagetable_t from, pagetable_t to, uint64 end) {
  for (uint64 va = 0; va < end; va += PGSIZE) {
    void *page = NULL;
    int r;
    pager_lock();
    while ((r = clone_entry(from, to, va, page)) >= 2) {
      if (r == 3) {
        pager_unlock();
        page = pager_alloc();
        pager_lock();
        if (!page) { r = -1; break; }
      }
    }
    pager_unlock();
    if (r != 1 && page) page_put((uint64)page);
    if (r < 0) {
      unmap_pages(to, 0, va / PGSIZE, 1);
      return -1;
    }
  }
  return 0;
}

void uvm_guard(pagetable_t pt, uint64 va) {
  pte_t *e = pte_find(pt, va, 0, 0);
  if (e == NULL) panic("uvm_guard: no page at %p", va);
  *e &= ~PTE_U;
}

// The resident page behind user va if the process may read it (and
// write it, if want_write): marks it accessed (and dirty), returns its
// physical address; 0 otherwise. Caller holds pager_lock when paging.
static uint64 user_pa_now(pagetable_t pt, uint64 va, int want_write) {
  if (va >= MAXVA) return 0;
  pte_t *e = pte_find(pt, va, 0, 0);
  if (e == NULL) return 0;
  pte_t need = PTE_V | PTE_U | PTE_R | (want_write ? PTE_W : 0);
  if ((*e & need) != need) return 0;
  pte_t mark = PTE_A | (want_write ? PTE_D : 0);     // the store's copy goes stale
  if ((*e & mark) != mark) __atomic_fetch_or(e, mark, __ATOMIC_RELAXED);
  return PTE_TO_PA(*e) + (va % PGSIZE);
}

// user_pa_now after faulting the page in if it is in the store. With a
// store, returns with pager_lock held (*locked) so the page stays until
// user_access_end, unless it returns 0. Process context.
static uint64 user_access_begin(pagetable_t pt, uint64 va, int want_write, int *locked) {
  *locked = pager_active();
  if (!*locked) return user_pa_now(pt, va, want_write);
  for (;;) {
    pager_lock();
    uint64 pa = user_pa_now(pt, va, want_write);
    if (pa) return pa;
    pager_unlock();
    if (va >= MAXVA || pager_fault(pt, va, want_write) < 0) return 0;
  }
}

static void user_access_end(int locked) {
  if (locked) pager_unlock();
}

// Physical address behind user va if the process may read it (and write
// it, if want_write), faulted in from the store if need be; 0 otherwise.
// The page may be evicted once the caller sleeps: callers that keep pa
// pin the page (uvm_pin).
uint64 uvm_user_pa(pagetable_t pt, uint64 va, int want_write) {
  int locked;
  uint64 pa = user_access_begin(pt, va, want_write, &locked);
  if (pa) user_access_end(locked);
  return pa;
}

int copy_out(pagetable_t pt, uint64 dst, const void *src, uint64 len) {
  if (dst + len < dst) return -1;
  while (len > 0) {
    int locked;
    uint64 pa = user_access_begin(pt, dst, 1, &locked);
    if (pa == 0) return -1;
    uint64 n = PGSIZE - dst % PGSIZE;
    if (n > len) n = len;
    memmove((void *)pa, src, n);
    user_access_end(locked);
    len -= n; src = (const char *)src + n; dst += n;
  }
  return 0;
}

int copy_in(pagetable_t pt, void *dst, uint64 src, uint64 len) {
  if (src + len < src) return -1;
  while (len > 0) {
    int locked;
    uint64 pa = user_access_begin(pt, src, 0, &locked);
    if (pa == 0) return -1;
    uint64 n = PGSIZE - src % PGSIZE;
    if (n > len) n = len;
    memmove(dst, (void *)pa, n);
    user_access_end(locked);
    len -= n; dst = (char *)dst + n; src += n;
  }
  return 0;
}

// Copies a NUL-terminated string of at most max bytes (NUL included).
// Returns its length, or -1 if it is unreadable or too long.
int copy_in_str(pagetable_t pt, char *dst, uint64 src, uint64 max) {
  for (uint64 i = 0; i < max; ) {
    int locked;
    uint64 pa = user_access_begin(pt, src + i, 0, &locked);
    if (pa == 0) return -1;
    uint64 n = PGSIZE - (src + i) % PGSIZE;
    for (const char *p = (const char *)pa; n > 0 && i < max; n--, i++, p++) {
      dst[i] = *p;
      if (*p == 0) {
        user_access_end(locked);
        return (int)i;
      }
    }
    user_access_end(locked);
  }
  return -1;
}

int copy_to(int to_user, uint64 dst, const void *src, uint64 len) {
  if (to_user) return copy_out(current()->pagetable, dst, src, len);
  memmove((void *)dst, src, len);
  return 0;
}

int copy_from(int from_user, void *dst, uint64 src, uint64 len) {
  if (from_user) return copy_in(current()->pagetable, dst, src, len);
  memmove(dst, (void *)src, len);
  return 0;
}

// A pinned page is marked dirty: whoever pinned it (an RDMA MR) may write
// it behind the page table's back, so the store's copy is stale.
int uvm_pin(pagetable_t pt, uint64 va, uint64 len, uint64 *pa_out, int max) {
  if (len == 0 || va + len < va || va + len > MAXVA) return -1;
  uint64 first = PG_ROUND_DOWN(va), last = PG_ROUND_UP(va + len);
  uint64 n = (last - first) / PGSIZE;
  if (n > (uint64)max) return -1;
  for (uint64 i = 0; i < n; i++) {
    int locked;
    pa_out[i] = user_access_begin(pt, first + i * PGSIZE, 1, &locked);
    if (pa_out[i] == 0)
      pa_out[i] = user_access_begin(pt, first + i * PGSIZE, 0, &locked);   // read-only memory
    if (pa_out[i] == 0) {
      uvm_unpin(pa_out, (int)i);
      return -1;
    }
    page_hold(pa_out[i]);
    user_access_end(locked);
  }
  return (int)n;
}

void uvm_unpin(uint64 *pa, int n) {
  for (int i = 0; i < n; i++)
    page_put(PG_ROUND_DOWN(pa[i]));
}
