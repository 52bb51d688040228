// vm.h: Sv39 page tables (vm.c). The kernel page table maps RAM
// one-to-one, the devices, the trampoline and the kernel stacks (layout in
// memlayout.h). A user page table maps the process's memory [0, heap_end)
// with PTE_U, the trampoline and the process's trap frame at the top (no
// PTE_U), and shares the kernel's root entries, so the kernel runs on
// whichever table satp holds: system calls and interrupts do not switch.
//
// Which table a hart runs on: the scheduler loads a process's table
// before running it (vm_load) and leaves it loaded afterwards, also for
// kernel threads, which run on any table. A table may therefore stay in
// satp of a hart after its process slept, exited or exec'd, so a slot's
// root table is never freed (struct proc's root, made at boot): only its
// user part is. Each change to a process's user mappings bumps p->vm_gen;
// vm_load flushes when the generation differs from the one the hart last
// loaded, so no hart runs a process on stale translations.
//
// User-pointer access: copy_out/copy_in/copy_in_str return -1 for any
// pointer the process may not use (NULL page, unmapped, guard page, kernel
// address, at or beyond MAXVA, or a range that wraps); they never panic.
// With a paging store (pager.h) they fault paged-out pages in, so they
// may sleep, and translate and copy each page under pager_lock.
// User pages come from pager_alloc; every change to a user leaf entry is
// made under pager_lock (pager.h lists the entry states).
//
// Pinning (for RDMA memory registration): uvm_pin takes one reference on
// each physical page behind [va, va+len) and writes their addresses to
// pa_out; it returns the page count, or -1 with nothing pinned if any page
// is not user-accessible or the range needs more than max pages. A pinned
// page stays allocated after the process shrinks or exits, until
// uvm_unpin drops the reference. The caller must still translate offsets
// itself: pa_out[i] backs PG_ROUND_DOWN(va) + i * PGSIZE.
#ifndef VM_H
#define VM_H
#include "lib/types.h"

void kvm_init(void);
void kvm_hart_init(void);
void kvm_map_kstack(int slot);
extern pagetable_t kernel_pagetable;
struct proc;
void vm_load(pagetable_t pt, uint64 gen);     // caller has interrupts off
void vm_user_changed(struct proc *p);         // p runs on this hart

// Tables: a root with the kernel's entries (uvm_create_root); the
// trampoline and a trap frame added (uvm_attach, -1 if out of memory);
// both at once (uvm_create). uvm_release frees the user part and keeps
// the root; uvm_destroy frees both. uvm_swap_user exchanges two tables'
// user parts (exec).
pagetable_t uvm_create_root(void);
int    uvm_attach(pagetable_t pt, uint64 trapframe_pa);
pagetable_t uvm_create(uint64 trapframe_pa);
void   uvm_release(pagetable_t pt, uint64 end);
void   uvm_swap_user(pagetable_t a, pagetable_t b);
int    uvm_grow(pagetable_t pt, uint64 old_end, uint64 new_end, int perm);
uint64 uvm_shrink(pagetable_t pt, uint64 old_end, uint64 new_end);
void   uvm_destroy(pagetable_t pt, uint64 end);
int    uvm_clone(pagetable_t from, pagetable_t to, uint64 end);
void   uvm_guard(pagetable_t pt, uint64 va);
uint64 uvm_user_pa(pagetable_t pt, uint64 va, int want_write);
// The leaf entry for va, NULL if no table reaches it (for pager.c, which
// holds pager_lock while it looks).
pte_t *uvm_walk(pagetable_t pt, uint64 va);

int copy_out(pagetable_t pt, uint64 dst_uva, const void *src, uint64 len);
int copy_in(pagetable_t pt, void *dst, uint64 src_uva, uint64 len);
int copy_in_str(pagetable_t pt, char *dst, uint64 src_uva, uint64 max);
// Copy to/from either user memory of the current process or the kernel.
int copy_to(int to_user, uint64 dst, const void *src, uint64 len);
int copy_from(int from_user, void *dst, uint64 src, uint64 len);

int  uvm_pin(pagetable_t pt, uint64 va, uint64 len, uint64 *pa_out, int max);
void uvm_unpin(uint64 *pa, int n);

#endif
