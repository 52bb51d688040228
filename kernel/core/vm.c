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

// Unmaps npages from va; drops a reference on each page if put_pages.
// Missing mappings are skipped.
static void unmap_pages(pagetable_t pt, uint64 va, uint64 npages, int put_pages) {
  for (uint64 i = 0; i < npages; i++, va += PGSIZE) {
    pte_t *e = pte_find(pt, va, 0, 0);
    if (e == NULL || (*e & PTE_V) == 0) continue;
    if (put_pages) page_put(PTE_TO_PA(*e));
    *e = 0;
  }
}

int uvm_grow(pagetable_t pt, uint64 old_end, uint64 new_end, int perm) {
  if (new_end > USER_TOP) return -1;
  for (uint64 va = PG_ROUND_UP(old_end); va < new_end; va += PGSIZE) {
    void *page = page_alloc();
    if (!page || map_range(pt, va, PGSIZE, (uint64)page, perm | PTE_R | PTE_U, 0) < 0) {
      if (page) page_put((uint64)page);
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

void uvm_release(pagetable_t pt, uint64 end) {
  unmap_pages(pt, TRAMPOLINE, 1, 0);
  unmap_pages(pt, TRAPFRAME, 1, 0);
  unmap_pages(pt, 0, PG_ROUND_UP(end) / PGSIZE, 1);
  for (int i = 0; i < 512; i++) {
    if (kernel_root_index(i) || !(pt[i] & PTE_V)) continue;
    free_tables((pagetable_t)PTE_TO_PA(pt[i]), 1);
    pt[i] = 0;
  }
}

void uvm_destroy(pagetable_t pt, uint64 end) {
  uvm_release(pt, end);
  page_put((uint64)pt);
}

void uvm_swap_user(pagetable_t a, pagetable_t b) {
  for (int i = 0; i < 512; i++) {
    if (kernel_root_index(i)) continue;
    pte_t t = a[i];
    a[i] = b[i];
    b[i] = t;
  }
}

int uvm_clone(pagetable_t from, pagetable_t to, uint64 end) {
  for (uint64 va = 0; va < end; va += PGSIZE) {
    pte_t *e = pte_find(from, va, 0, 0);
    if (e == NULL || (*e & PTE_V) == 0) continue;
    void *page = page_alloc();
    if (!page) goto fail;
    memmove(page, (void *)PTE_TO_PA(*e), PGSIZE);
    if (map_range(to, va, PGSIZE, (uint64)page, PTE_FLAGS(*e) & ~(PTE_V | PTE_A | PTE_D), 0) < 0) {
      page_put((uint64)page);
      goto fail;
    }
    continue;
  fail:
    unmap_pages(to, 0, va / PGSIZE, 1);
    return -1;
  }
  return 0;
}

void uvm_guard(pagetable_t pt, uint64 va) {
  pte_t *e = pte_find(pt, va, 0, 0);
  if (e == NULL) panic("uvm_guard: no page at %p", va);
  *e &= ~PTE_U;
}

// Physical address behind user va if the process may read it (and write
// it, if want_write); 0 otherwise.
uint64 uvm_user_pa(pagetable_t pt, uint64 va, int want_write) {
  if (va >= MAXVA) return 0;
  pte_t *e = pte_find(pt, va, 0, 0);
  if (e == NULL) return 0;
  int need = PTE_V | PTE_U | PTE_R | (want_write ? PTE_W : 0);
  if ((*e & need) != need) return 0;
  return PTE_TO_PA(*e) + (va % PGSIZE);
}

int copy_out(pagetable_t pt, uint64 dst, const void *src, uint64 len) {
  if (dst + len < dst) return -1;
  while (len > 0) {
    uint64 pa = uvm_user_pa(pt, dst, 1);
    if (pa == 0) return -1;
    uint64 n = PGSIZE - dst % PGSIZE;
    if (n > len) n = len;
    memmove((void *)pa, src, n);
    len -= n; src = (const char *)src + n; dst += n;
  }
  return 0;
}

int copy_in(pagetable_t pt, void *dst, uint64 src, uint64 len) {
  if (src + len < src) return -1;
  while (len > 0) {
    uint64 pa = uvm_user_pa(pt, src, 0);
    if (pa == 0) return -1;
    uint64 n = PGSIZE - src % PGSIZE;
    if (n > len) n = len;
    memmove(dst, (void *)pa, n);
    len -= n; dst = (char *)dst + n; src += n;
  }
  return 0;
}

// Copies a NUL-terminated string of at most max bytes (NUL included).
// Returns its length, or -1 if it is unreadable or too long.
int copy_in_str(pagetable_t pt, char *dst, uint64 src, uint64 max) {
  for (uint64 i = 0; i < max; ) {
    uint64 pa = uvm_user_pa(pt, src + i, 0);
    if (pa == 0) return -1;
    uint64 n = PGSIZE - (src + i) % PGSIZE;
    for (const char *p = (const char *)pa; n > 0 && i < max; n--, i++, p++) {
      dst[i] = *p;
      if (*p == 0) return (int)i;
    }
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

int uvm_pin(pagetable_t pt, uint64 va, uint64 len, uint64 *pa_out, int max) {
  if (len == 0 || va + len < va || va + len > MAXVA) return -1;
  uint64 first = PG_ROUND_DOWN(va), last = PG_ROUND_UP(va + len);
  uint64 n = (last - first) / PGSIZE;
  if (n > (uint64)max) return -1;
  for (uint64 i = 0; i < n; i++) {          // check everything before pinning
    pa_out[i] = uvm_user_pa(pt, first + i * PGSIZE, 0);
    if (pa_out[i] == 0) return -1;
  }
  for (uint64 i = 0; i < n; i++)
    page_hold(pa_out[i]);
  return (int)n;
}

void uvm_unpin(uint64 *pa, int n) {
  for (int i = 0; i < n; i++)
    page_put(PG_ROUND_DOWN(pa[i]));
}
