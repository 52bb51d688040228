// badptr.c: every system call that takes a pointer must fail with -1 when
// the pointer is not the caller's memory, and the kernel must survive.
//
// The bad addresses (bad_addresses) cover: null, the unmapped page just
// past the break, the kernel's RAM, devices and stacks (mapped in every
// process's table without PTE_U), the top of the user address space
// (where the kernel keeps its trampoline and trap frame, not user pages),
// MAXVA itself and beyond, and addresses whose range wraps past 2^64.
#include "ut.h"

#define NBAD 15

static int bad_addresses(unsigned long *out)
{
  unsigned long brk = PGROUNDUP((unsigned long)sbrk(0));
  unsigned long list[NBAD] = {
    0, 8, brk, brk + 16 * PGSIZE, KERNBASE, KERNBASE + 0x201000,
    KPCI_MMIO, KDEV_UART, KSTACK_TOP_PAGE, MAXVA - PGSIZE, MAXVA - 2 * PGSIZE, MAXVA - 8, MAXVA,
    1UL << 63, 0xfffffffffffff000UL,
  };
  memcpy(out, list, sizeof list);
  return NBAD;
}

static int open_scratch(const char *name, int with_data)
{
  int fd = open(name, O_CREATE | O_RDWR | O_TRUNC);
  TR_CHECK(fd >= 0, "cannot create %s", name);
  if (with_data) {
    TR_CHECK(write(fd, "0123456789abcdef", 16) == 16, "write");
    close(fd);
    fd = open(name, O_RDONLY);
  }
  return fd;
}

static void test_badptr_read_fails(void)
{
  unsigned long bad[NBAD];
  int n = bad_addresses(bad);
  for (int i = 0; i < n; i++) {
    int fd = open_scratch("ut_badread", 1);
    int r = read(fd, (void *)bad[i], 16);
    close(fd);
    TR_CHECK(r == -1, "read into %p returned %d", (void *)bad[i], r);
  }
  for (int i = 0; i < n; i++) {
    int p[2];
    TR_CHECK(pipe(p) == 0, "pipe");
    write(p[1], "xy", 2);
    int r = read(p[0], (void *)bad[i], 2);
    close(p[0]);
    close(p[1]);
    TR_CHECK(r == -1, "pipe read into %p returned %d", (void *)bad[i], r);
  }
  unlink("ut_badread");
}

static void test_badptr_write_fails(void)
{
  unsigned long bad[NBAD];
  int n = bad_addresses(bad);
  int fd = open_scratch("ut_badwrite", 0);
  int p[2];
  TR_CHECK(pipe(p) == 0, "pipe");
  for (int i = 0; i < n; i++) {
    int r = write(fd, (void *)bad[i], 16);
    TR_CHECK(r == -1, "file write from %p returned %d", (void *)bad[i], r);
    r = write(p[1], (void *)bad[i], 16);
    TR_CHECK(r == -1, "pipe write from %p returned %d", (void *)bad[i], r);
    r = write(STDOUT, (void *)bad[i], 16);
    TR_CHECK(r == -1, "console write from %p returned %d", (void *)bad[i], r);
  }
  struct stat st;
  TR_CHECK(fstat(fd, &st) == 0 && st.size == 0, "file grew to %lu bytes",
           st.size);
  close(fd);
  unlink("ut_badwrite");
}

// Every syscall taking a path, at every bad address.
static void test_badptr_paths_fail(void)
{
  unsigned long bad[NBAD];
  int n = bad_addresses(bad);
  char *argv[] = { "x", NULL };
  ut_write_file("ut_badpath", "x", 1);
  for (int i = 0; i < n; i++) {
    const char *p = (const char *)bad[i];
    TR_CHECK(open(p, O_RDONLY) == -1, "open(%p)", p);
    TR_CHECK(open(p, O_CREATE | O_RDWR) == -1, "open(%p, O_CREATE)", p);
    TR_CHECK(mkdir(p) == -1, "mkdir(%p)", p);
    TR_CHECK(mknod(p, DEV_CONSOLE, 0) == -1, "mknod(%p)", p);
    TR_CHECK(unlink(p) == -1, "unlink(%p)", p);
    TR_CHECK(chdir(p) == -1, "chdir(%p)", p);
    TR_CHECK(link(p, "ut_badlink") == -1, "link(%p, name)", p);
    TR_CHECK(link("ut_badpath", p) == -1, "link(name, %p)", p);
    TR_CHECK(ut_exec_status(p, argv) == UT_EXEC_REFUSED, "exec(%p)", p);
  }
  unlink("ut_badpath");
  unlink("ut_badlink");
}

// Pointers to results: pipe's fd array, fstat's stat, sysinfo, wait's
// status (0 is allowed for wait: it means "don't care").
static void test_badptr_out_params_fail(void)
{
  unsigned long bad[NBAD];
  int n = bad_addresses(bad);
  int fd = open("/", O_RDONLY);
  TR_CHECK(fd >= 0, "open /");
  for (int i = 0; i < n; i++) {
    void *p = (void *)bad[i];
    TR_CHECK(pipe(p) == -1, "pipe(%p)", p);
    TR_CHECK(fstat(fd, p) == -1, "fstat(fd, %p)", p);
    TR_CHECK(sysinfo(p) == -1, "sysinfo(%p)", p);
    if (bad[i] == 0)
      continue;
    int pid = ut_fork();
    if (pid == 0)
      exit(0);
    TR_CHECK(wait(p) == -1, "wait(%p) succeeded", p);
    int again = wait(NULL);   // the kernel may or may not have reaped it
    TR_CHECK(again == pid || again == -1, "wait after a failed wait(%p) "
             "returned %d", p, again);
  }
  close(fd);
  int probe = open("/", O_RDONLY);
  TR_CHECK(probe == fd, "pipe() with a bad array leaked fds (next fd %d)",
           probe);
  close(probe);
}

// exec argv arrays that are, or point to, bad memory.
static void test_badptr_exec_argv_fails(void)
{
  unsigned long bad[NBAD];
  int n = bad_addresses(bad);
  for (int i = 1; i < n; i++) {   // argv == 0 may mean "no arguments"
    TR_CHECK(ut_exec_status("/echo", (char **)bad[i]) == UT_EXEC_REFUSED,
             "exec argv=%p", (void *)bad[i]);
    char *argv[] = { "/echo", (char *)bad[i], NULL };
    TR_CHECK(ut_exec_status("/echo", argv) == UT_EXEC_REFUSED,
             "exec argv[1]=%p", (void *)bad[i]);
  }
  // An argv array that runs into unmapped memory with no terminator.
  TR_CHECK(sbrk(PGSIZE) != (char *)-1, "sbrk");
  char **end = (char **)PGROUNDUP((unsigned long)sbrk(0));
  char **argv = end - 64;
  for (char **a = argv; a < end; a++)
    *a = "x";
  TR_CHECK(ut_exec_status("/echo", argv) == UT_EXEC_REFUSED,
           "exec of an unterminated argv");
}

// Strings that run off the end of mapped memory without a NUL.
static void test_badptr_unterminated_path_fails(void)
{
  char *mem = sbrk(PGSIZE);
  TR_CHECK(mem != (char *)-1, "sbrk");
  char *end = (char *)PGROUNDUP((unsigned long)sbrk(0));
  char *path = end - 64;
  memset(path, 'a', 64);   // no terminator before the unmapped page
  TR_CHECK(open(path, O_CREATE | O_RDWR) == -1, "open of an unterminated path");
  TR_CHECK(mkdir(path) == -1, "mkdir of an unterminated path");
  TR_CHECK(unlink(path) == -1, "unlink of an unterminated path");
}

// Ranges that start in valid memory and run into invalid memory, or whose
// end wraps past 2^64 or crosses MAXVA.
static void test_badptr_ranges_fail(void)
{
  int fd = open_scratch("ut_badrange", 1);
  TR_CHECK(read(fd, (void *)0xfffffffffffff000UL, 0x2000) == -1,
           "read range wrapping past 2^64");
  TR_CHECK(read(fd, (void *)(MAXVA - 0x800), 0x1000) == -1,
           "read range crossing MAXVA");
  close(fd);
  fd = open_scratch("ut_badrange", 0);
  char *brk = sbrk(0);
  char *start = (char *)PGROUNDUP((unsigned long)brk) - 64;
  int r = write(fd, start, 0x10000);   // 64 valid bytes, then unmapped
  struct stat st;
  TR_CHECK(fstat(fd, &st) == 0, "fstat");
  TR_CHECK(r == -1 || (r >= 0 && r <= 64), "write across the break gave %d",
           r);
  TR_CHECK(st.size == (unsigned long)(r < 0 ? st.size : r),
           "write returned %d but the file has %lu bytes", r, st.size);
  char stackbuf[16];
  r = write(fd, stackbuf, 0x7fffffff);   // runs off the top of the stack
  TR_CHECK(r == -1 || (r >= 0 && r < 0x7fffffff), "huge write returned %d", r);
  close(fd);
  unlink("ut_badrange");
}

// Finds the guard page under the stack: mapped by the kernel but not
// user-accessible. Walks down from the current stack page until read()
// into a page fails; returns 0 if no page within 8 fails.
static unsigned long find_stack_guard(int fd)
{
  volatile char here = 0;
  unsigned long page = (unsigned long)&here & ~(PGSIZE - 1);
  for (int i = 1; i <= 8; i++) {
    unsigned long below = page - i * PGSIZE;
    if (read(fd, (void *)below, 1) < 0)
      return below;
  }
  return 0;
}

static void test_badptr_stack_guard_page_fails(void)
{
  int fd = open_scratch("ut_badguard", 1);
  unsigned long guard = find_stack_guard(fd);
  close(fd);
  TR_CHECK(guard != 0, "no inaccessible page within 8 pages under the stack");
  fd = open_scratch("ut_badguard", 0);
  char *g = (char *)guard;
  TR_CHECK(write(fd, g, 16) == -1, "write from the guard page %p", g);
  TR_CHECK(open(g, O_RDONLY) == -1, "open with a path in the guard page");
  TR_CHECK(pipe((int *)g) == -1, "pipe() into the guard page");
  close(fd);
  unlink("ut_badguard");
  int pid = ut_fork();
  if (pid == 0) {
    *(volatile char *)(guard + 100) = 1;   // user access must fault
    exit(0);
  }
  TR_CHECK(ut_wait_for(pid) != 0, "user write to the guard page succeeded");
}

// read() into our own read-only text must fail and leave it unchanged.
static void test_badptr_read_into_text_fails(void)
{
  unsigned char before[32];
  unsigned char *text = (unsigned char *)test_badptr_ranges_fail;
  memcpy(before, text, sizeof before);
  int fd = open_scratch("ut_badtext", 1);
  int r = read(fd, text, 16);
  close(fd);
  unlink("ut_badtext");
  TR_CHECK(r == -1, "read into text returned %d", r);
  TR_CHECK(memcmp(before, text, sizeof before) == 0, "text was modified");
}

const struct tr_case ut_badptr_tests[] = {
  { "badptr_read_fails", test_badptr_read_fails, TR_QUICK, 0 },
  { "badptr_write_fails", test_badptr_write_fails, TR_QUICK, 0 },
  { "badptr_paths_fail", test_badptr_paths_fail, TR_QUICK, 0 },
  { "badptr_out_params_fail", test_badptr_out_params_fail, TR_QUICK, 0 },
  { "badptr_exec_argv_fails", test_badptr_exec_argv_fails, TR_QUICK, 0 },
  { "badptr_unterminated_path_fails", test_badptr_unterminated_path_fails, TR_QUICK, 0 },
  { "badptr_ranges_fail", test_badptr_ranges_fail, TR_QUICK, 0 },
  { "badptr_read_into_text_fails", test_badptr_read_into_text_fails, TR_QUICK, 0 },
  { "badptr_stack_guard_page_fails", test_badptr_stack_guard_page_fails, TR_QUICK, 0 },
  { NULL },
};
