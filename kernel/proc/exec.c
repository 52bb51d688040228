// exec.c: loads an ELF64 RISC-V executable (field layout from the ELF
// specification) into a fresh address space, builds the argument stack,
// and only then swaps it in for the old one.
//
// Resulting user layout: PT_LOAD segments from their vaddr up, then one
// guard page (no PTE_U), then USTACK_PAGES of stack; heap_end is the top
// of the stack, so sbrk grows memory above it.
#include "lib/types.h"
#include "lib/riscv.h"
#include "lib/memlayout.h"
#include "lib/param.h"
#include "core/proc.h"
#include "core/fpu.h"
#include "core/printk.h"
#include "lib/klib.h"
#include "core/vm.h"
#include "fs/fs.h"
#include "fs/log.h"
#include "proc/exec.h"

#define ELF_MAGIC 0x464c457fu        // "\x7fELF" little-endian
#define EM_RISCV 243
#define PT_LOAD 1
#define PF_X 1
#define PF_W 2

struct elf64_header {
  uint32 magic;
  uint8 ident_rest[12];
  uint16 type, machine;
  uint32 version;
  uint64 entry, phoff, shoff;
  uint32 flags;
  uint16 ehsize, phentsize, phnum, shentsize, shnum, shstrndx;
};

struct elf64_phdr {
  uint32 type, flags;
  uint64 offset, vaddr, paddr, filesz, memsz, align;
};

// Copies filesz bytes at file offset off into the mapped range at va.
static int load_segment(pagetable_t pt, uint64 va, struct inode *ip, uint64 off, uint64 filesz) {
  for (uint64 done = 0; done < filesz; ) {
    uint64 pa = uvm_user_pa(pt, va + done, 0);
    if (pa == 0) panic("load_segment: segment page not mapped");
    uint64 n = PGSIZE - (va + done) % PGSIZE;
    if (n > filesz - done) n = filesz - done;
    if (inode_read(ip, 0, pa, off + done, n) != (int)n) return -1;
    done += n;
  }
  return 0;
}

// Maps and fills every PT_LOAD segment, advancing *end (the top of what
// is mapped so far, so a failure can be undone). Returns 0 or -1.
static int load_image(pagetable_t pt, struct inode *ip, struct elf64_header *eh, uint64 *end) {
  for (int i = 0; i < eh->phnum; i++) {
    struct elf64_phdr ph;
    uint64 at = eh->phoff + (uint64)i * sizeof ph;
    if (at + sizeof ph < at || at + sizeof ph > ip->size) return -1;
    if (inode_read(ip, 0, (uint64)&ph, at, sizeof ph) != sizeof ph) return -1;
    if (ph.type != PT_LOAD) continue;
    if (ph.memsz < ph.filesz || ph.vaddr + ph.memsz < ph.vaddr || ph.vaddr % PGSIZE) return -1;
    if (ph.offset + ph.filesz < ph.offset || ph.offset + ph.filesz > ip->size) return -1;
    if (ph.vaddr < *end || ph.vaddr + ph.memsz > USER_TOP) return -1;
    int perm = (ph.flags & PF_X ? PTE_X : 0) | (ph.flags & PF_W ? PTE_W : 0);
    // Map from vaddr, not from *end: gaps (page 0 above all) stay unmapped.
    if (uvm_grow(pt, ph.vaddr, ph.vaddr + ph.memsz, perm) < 0) return -1;
    *end = ph.vaddr + ph.memsz;
    if (load_segment(pt, ph.vaddr, ip, ph.offset, ph.filesz) < 0) return -1;
  }
  return *end ? 0 : -1;
}

// Pushes the argument strings and the argv array; returns sp or 0.
static uint64 push_args(pagetable_t pt, uint64 sp, uint64 stack_low, char **argv, int *argc_out) {
  uint64 ptrs[MAXARG + 1];
  int argc;
  for (argc = 0; argv[argc]; argc++) {
    if (argc >= MAXARG) return 0;
    uint64 len = strlen(argv[argc]) + 1;
    sp = (sp - len) & ~15ULL;                // keep sp 16-byte aligned
    if (sp < stack_low || copy_out(pt, sp, argv[argc], len) < 0) return 0;
    ptrs[argc] = sp;
  }
  ptrs[argc] = 0;
  sp = (sp - (argc + 1) * sizeof(uint64)) & ~15ULL;
  if (sp < stack_low || copy_out(pt, sp, ptrs, (argc + 1) * sizeof(uint64)) < 0) return 0;
  *argc_out = argc;
  return sp;
}

// The new image moves into the process's own root (which harts may hold
// in satp, see vm.h); pt leaves with the old one and is freed.
static void commit_image(struct proc *p, pagetable_t pt, uint64 end, uint64 entry, uint64 sp, const char *path) {
  uint64 old_end = p->heap_end;
  uvm_swap_user(p->pagetable, pt);
  vm_user_changed(p);
  p->heap_end = end;
  p->tf->user_pc = entry;
  p->tf->regs[REG_SP] = sp;
  p->tf->regs[REG_A1] = sp;                  // argv
  fpu_exec_reset(p);
  const char *last = path;
  for (const char *s = path; *s; s++) if (*s == '/') last = s + 1;
  str_copy(p->name, last, sizeof p->name);
  uvm_destroy(pt, old_end);
}

int exec_program(const char *path, char **argv) {
  struct proc *p = current();
  struct elf64_header eh;
  pagetable_t pt = NULL;
  uint64 end = 0;
  fs_tx_begin();
  struct inode *ip = path_lookup(path);
  if (!ip) { fs_tx_end(); return -1; }
  inode_lock(ip);
  if (inode_read(ip, 0, (uint64)&eh, 0, sizeof eh) != sizeof eh || eh.magic != ELF_MAGIC ||
      eh.machine != EM_RISCV || (pt = uvm_create((uint64)p->tf)) == NULL)
    goto fail;
  if (load_image(pt, ip, &eh, &end) < 0) goto fail;
  inode_unlock_put(ip);
  fs_tx_end();
  ip = NULL;
  end = PG_ROUND_UP(end);
  uint64 stack_top = end + (USTACK_PAGES + 1) * PGSIZE;
  if (uvm_grow(pt, end, stack_top, PTE_W) < 0) goto fail;
  uvm_guard(pt, end);
  end = stack_top;
  int argc;
  uint64 sp = push_args(pt, stack_top, stack_top - USTACK_PAGES * PGSIZE, argv, &argc);
  if (sp == 0) goto fail;
  commit_image(p, pt, stack_top, eh.entry, sp, path);
  return argc;                               // lands in a0
fail:
  if (pt) uvm_destroy(pt, end);
  if (ip) { inode_unlock_put(ip); fs_tx_end(); }
  return -1;
}
