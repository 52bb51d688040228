// mem.c: tests of sbrk, running out of memory, the heap and page protection.
#include "ut.h"

static void test_mem_sbrk_grow_shrink(void)
{
  char *start = sbrk(0);
  char *p = sbrk(3 * PGSIZE + 100);
  TR_CHECK(p == start, "sbrk returned %p, the old break was %p", p, start);
  TR_CHECK(sbrk(0) == start + 3 * PGSIZE + 100, "break did not move");
  memset(p, 0x5a, 3 * PGSIZE + 100);
  TR_CHECK(p[3 * PGSIZE + 99] == 0x5a, "new memory not writable");
  TR_CHECK(sbrk(-(3 * PGSIZE + 100)) == start + 3 * PGSIZE + 100,
           "shrinking sbrk must return the old break");
  TR_CHECK(sbrk(0) == start, "break did not come back");
  // Pages that were released and come back must be zero; only the part of
  // the old break's page that stayed mapped may keep our bytes.
  char *again = sbrk(2 * PGSIZE);
  TR_CHECK(again == start, "regrow at %p", again);
  char *fresh = (char *)PGROUNDUP((unsigned long)start);
  for (char *c = fresh; c < fresh + PGSIZE; c++)
    TR_CHECK(*c == 0, "regrown page not zeroed at %p", c);
}

// After shrinking, touching the released memory kills the process.
static void test_mem_sbrk_shrink_unmaps(void)
{
  char *p = sbrk(0);
  p = sbrk((int)(PGROUNDUP((unsigned long)p) - (unsigned long)p) + 4 * PGSIZE);
  char *released = (char *)PGROUNDUP((unsigned long)p);
  released[0] = 1;
  sbrk(-4 * (int)PGSIZE);
  int pid = ut_fork();
  if (pid == 0) {
    *(volatile char *)(released + PGSIZE) = 2;
    exit(0);
  }
  TR_CHECK(ut_wait_for(pid) != 0, "wrote to memory released by sbrk");
}

// Grows until the kernel says no, in the child; then frees everything.
static void test_mem_out_of_memory(void)
{
  unsigned long before = ut_freepages();
  int p[2];
  TR_CHECK(pipe(p) == 0, "pipe");
  int pid = ut_fork();
  if (pid == 0) {
    long got = 0;
    char *q;
    while ((q = sbrk(1 << 20)) != (char *)-1) {
      for (long off = 0; off < (1 << 20); off += PGSIZE)
        q[off] = 1;   // make sure the pages are real
      got += 1 << 20;
    }
    unsigned long at_limit = ut_freepages();
    sbrk(-(int)got);   // release it again while still alive
    unsigned long released = ut_freepages();
    write(p[1], &got, sizeof got);
    write(p[1], &at_limit, sizeof at_limit);
    write(p[1], &released, sizeof released);
    exit(0);
  }
  close(p[1]);
  long got = 0;
  unsigned long at_limit = 0, released = 0;
  read(p[0], &got, sizeof got);
  read(p[0], &at_limit, sizeof at_limit);
  read(p[0], &released, sizeof released);
  close(p[0]);
  TR_CHECK(ut_wait_for(pid) == 0, "child died while exhausting memory");
  unsigned long after = ut_settle_freepages(before);
  TR_CHECK(got >= (8 << 20), "only %ld bytes before sbrk failed", got);
  TR_CHECK(at_limit < 1024, "%lu pages still free when sbrk failed", at_limit);
  // Page-table pages may stay until exit; everything else comes back.
  TR_CHECK(released + before / 128 >= before,
           "shrinking returned only to %lu of %lu", released, before);
  TR_CHECK(after >= before, "%lu pages lost after exit", before - after);
}

static void test_mem_sbrk_hostile_sizes(void)
{
  char *start = sbrk(0);
  TR_CHECK(sbrk(0x7fffffff) == (char *)-1, "sbrk(2 GiB) succeeded");
  TR_CHECK(sbrk(-0x7fffffff) == (char *)-1, "sbrk(-2 GiB) succeeded");
  TR_CHECK(sbrk(0) == start, "failed sbrk moved the break");
  char *p = malloc(100);
  TR_CHECK(p != NULL, "heap unusable after failed sbrk");
}

static void test_mem_write_to_text_faults(void)
{
  int pid = ut_fork();
  if (pid == 0) {
    *(volatile unsigned char *)test_mem_sbrk_hostile_sizes = 0;
    exit(0);
  }
  TR_CHECK(ut_wait_for(pid) != 0, "wrote into the text segment");
}

static void test_mem_null_deref_faults(void)
{
  int pid = ut_fork();
  if (pid == 0) {
    // Through a volatile variable: a literal null dereference would be
    // compiled into a trap instruction and prove nothing.
    volatile unsigned long zero = 0;
    exit(*(volatile int *)zero == 12345 ? 0 : 0);
  }
  TR_CHECK(ut_wait_for(pid) != 0, "read from address 0 did not fault");
}

static void test_mem_kernel_address_faults(void)
{
  int pid = ut_fork();
  if (pid == 0) {
    *(volatile int *)KERNBASE = 1;
    exit(0);
  }
  TR_CHECK(ut_wait_for(pid) != 0, "wrote to the kernel's memory");
}

// The kernel maps its RAM, PCI memory, devices and stacks into every
// process's own page table (without PTE_U): reading or writing any of
// them from user mode must still kill the process.
static void test_mem_kernel_regions_fault(void)
{
  unsigned long regions[] = { KERNBASE + 0x201000, KPCI_MMIO, KDEV_UART, KSTACK_TOP_PAGE };
  for (int i = 0; i < (int)(sizeof regions / sizeof regions[0]); i++) {
    for (int write = 0; write < 2; write++) {
      int pid = ut_fork();
      if (pid == 0) {
        volatile unsigned char *k = (volatile unsigned char *)regions[i];
        if (write) *k = 0x55;
        exit(write ? 0 : *k == 0x12 ? 0 : 0);
      }
      TR_CHECK(ut_wait_for(pid) != 0, "%s %p from user mode did not fault",
               write ? "wrote" : "read", (void *)regions[i]);
    }
  }
}

static int hart_now(void)
{
  struct sysinfo si;
  TR_CHECK(sysinfo(&si) == 0, "sysinfo");
  return (int)si.hart;
}

// One page of its own above the break, touched on whichever harts the
// process visits while it sleeps now and then, so their TLBs hold it.
// Returns the page; *harts (if not NULL) gets a bit per hart that touched it.
static volatile char *touch_while_moving(int rounds, unsigned *harts)
{
  char *brk = sbrk(0);
  sbrk((int)(PGROUNDUP((unsigned long)brk) - (unsigned long)brk) + PGSIZE);
  volatile char *page = (volatile char *)PGROUNDUP((unsigned long)brk);
  unsigned seen = 0;
  for (int i = 0; i < rounds; i++) {
    seen |= 1u << hart_now();
    page[i] = (char)i;
    sleep(1);
  }
  if (harts) *harts = seen;
  return page;
}

// sbrk's release must reach every hart: a hart that ran the process
// before may not keep a translation of the page when it runs it again
// (the scheduler flushes when a table's generation moved). The child
// shrinks, then waits until it runs on a hart that touched the page
// earlier and is not the one that shrank it, and writes there.
static void test_mem_shrink_unmaps_on_every_hart(void)
{
  struct sysinfo si;
  TR_CHECK(sysinfo(&si) == 0, "sysinfo");
  if (si.ncpu < 2) return;       // one hart: test_mem_sbrk_shrink_unmaps covers it
  enum { NEVER_MOVED = 3 };
  int moved = 0;
  for (int round = 0; round < 8; round++) {
    int pid = ut_fork();
    if (pid == 0) {
      unsigned harts;
      volatile char *page = touch_while_moving(20, &harts);
      sbrk(-(int)PGSIZE);
      int shrank_on = hart_now();
      for (int i = 0; i < 300; i++) {
        sleep(1);
        int h = hart_now();
        if (h != shrank_on && (harts & (1u << h))) {
          page[0] = 1;           // must fault
          exit(0);
        }
      }
      exit(NEVER_MOVED);
    }
    int status = ut_wait_for(pid);
    TR_CHECK(status != 0, "round %d: wrote to a page sbrk released, on another hart", round);
    moved += status != NEVER_MOVED;
  }
  TR_CHECK(moved > 0, "the process never moved to another hart: nothing was tested");
}

// A process slot's page-table root outlives its process (kernel/core/vm.h): the
// next process in the slot must not reach its predecessor's pages.
static void test_mem_next_process_in_slot_sees_nothing(void)
{
  unsigned long page = PGROUNDUP((unsigned long)sbrk(0));
  for (int round = 0; round < 6; round++) {
    int pid = ut_fork();
    if (pid == 0) {
      touch_while_moving(4, NULL)[0] = 0x5a;
      exit(0);
    }
    TR_CHECK(ut_wait_for(pid) == 0, "round %d: toucher failed", round);
    pid = ut_fork();             // most likely in the slot just freed
    if (pid == 0)
      exit(*(volatile char *)page == 0x5a ? 0 : 0);
    TR_CHECK(ut_wait_for(pid) != 0, "round %d: read the exited process's page", round);
  }
}

// Random malloc/free/realloc; every block keeps its own pattern.
static void test_mem_malloc_stress(void)
{
  enum { SLOTS = 64 };
  unsigned char *blocks[SLOTS] = { 0 };
  int sizes[SLOTS] = { 0 };
  unsigned x = 12345;
  for (int round = 0; round < 2000; round++) {
    x = x * 1103515245u + 12345u;
    int i = (x >> 8) % SLOTS;
    if (blocks[i]) {
      TR_CHECK(blocks[i][0] == (unsigned char)sizes[i] &&
               blocks[i][sizes[i] - 1] == (unsigned char)i,
               "block %d (%d bytes) corrupted", i, sizes[i]);
      if (x & 1) {
        free(blocks[i]);
        blocks[i] = NULL;
        continue;
      }
      int grown = sizes[i] * 2;
      blocks[i] = realloc(blocks[i], grown);
      TR_CHECK(blocks[i] && blocks[i][0] == (unsigned char)sizes[i],
               "realloc lost the contents");
      sizes[i] = grown;
    } else {
      sizes[i] = 1 + (x >> 16) % 3000;
      blocks[i] = malloc(sizes[i]);
      TR_CHECK(blocks[i] != NULL, "malloc(%d) failed", sizes[i]);
    }
    memset(blocks[i], 0xee, sizes[i]);
    blocks[i][0] = (unsigned char)sizes[i];
    blocks[i][sizes[i] - 1] = (unsigned char)i;
  }
  unsigned char *z = calloc(100, 40);
  TR_CHECK(z != NULL, "calloc");
  for (int i = 0; i < 4000; i++)
    TR_CHECK(z[i] == 0, "calloc memory not zero at %d", i);
}

const struct tr_case ut_mem_tests[] = {
  { "mem_sbrk_grow_shrink", test_mem_sbrk_grow_shrink, TR_QUICK, 0 },
  { "mem_sbrk_shrink_unmaps", test_mem_sbrk_shrink_unmaps, TR_QUICK, 0 },
  { "mem_out_of_memory", test_mem_out_of_memory, TR_QUICK, 120 },
  { "mem_sbrk_hostile_sizes", test_mem_sbrk_hostile_sizes, TR_QUICK, 0 },
  { "mem_write_to_text_faults", test_mem_write_to_text_faults, TR_QUICK, 0 },
  { "mem_null_deref_faults", test_mem_null_deref_faults, TR_QUICK, 0 },
  { "mem_kernel_address_faults", test_mem_kernel_address_faults, TR_QUICK, 0 },
  { "mem_kernel_regions_fault", test_mem_kernel_regions_fault, TR_QUICK, 0 },
  { "mem_shrink_unmaps_on_every_hart", test_mem_shrink_unmaps_on_every_hart, TR_QUICK, 0 },
  { "mem_next_process_in_slot_sees_nothing", test_mem_next_process_in_slot_sees_nothing, TR_QUICK, 0 },
  { "mem_malloc_stress", test_mem_malloc_stress, TR_QUICK, 0 },
  { NULL },
};
