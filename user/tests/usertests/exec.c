// exec.c: tests of exec: arguments, and files that are not valid programs.
//
// Hostile images are made by copying /echo and damaging one field of its
// ELF headers; exec must refuse each with -1, leave the caller running,
// and not leak pages.
#include "ut.h"

// ELF64 layout facts used to damage headers (offsets in bytes).
#define ELF_PHOFF       32   // e_phoff: 8 bytes
#define ELF_PHNUM       56   // e_phnum: 2 bytes
#define PH_OFFSET       8    // p_offset within a program header
#define PH_VADDR        16
#define PH_FILESZ       32
#define PH_MEMSZ        40

#define IMAGE_MAX (64 * 1024)

static void test_exec_many_args(void)
{
  enum { N = 24 };
  char *argv[N + 2], words[N][4], expect[N * 4 + 2], out[256];
  int len, pos = 0;
  argv[0] = "/echo";
  for (int i = 0; i < N; i++) {
    snprintf(words[i], sizeof words[i], "a%d", i);
    argv[i + 1] = words[i];
    pos += snprintf(expect + pos, sizeof expect - pos, "%s%s", words[i],
                    i + 1 < N ? " " : "\n");
  }
  argv[N + 1] = NULL;
  TR_CHECK(ut_run_capture(argv, out, sizeof out, &len) == 0, "echo failed");
  TR_CHECK(len == pos && memcmp(out, expect, len) == 0,
           "echo printed %d bytes, expected %d", len, pos);
}

// Far more arguments than any sane limit: exec fails, or runs them all.
static void test_exec_too_many_args(void)
{
  enum { N = 2000 };
  char **argv = malloc((N + 2) * sizeof(char *));
  TR_CHECK(argv != NULL, "malloc");
  argv[0] = "/echo";
  for (int i = 1; i <= N; i++)
    argv[i] = "x";
  argv[N + 1] = NULL;
  int pid = ut_fork();
  if (pid == 0) {
    close(STDOUT);   // if exec succeeds, echo's writes simply fail
    exec(argv[0], argv);
    exit(42);
  }
  int status = ut_wait_for(pid);
  TR_CHECK(status == 42 || status == 0, "exec with %d args: status %d",
           N, status);
}

static int load_echo(unsigned char *image)
{
  int n = ut_read_file("/echo", image, IMAGE_MAX);
  TR_CHECK(n > 64 && n < IMAGE_MAX, "cannot read /echo (%d bytes)", n);
  TR_CHECK(image[0] == 0x7f && image[1] == 'E', "/echo is not ELF");
  return n;
}

// Writes image to path and checks that exec refuses it without leaking.
static void check_exec_refuses(const char *path, const unsigned char *image,
                               int n, const char *what)
{
  char *argv[] = { (char *)path, "x", NULL };
  ut_write_file(path, image, n);
  ut_exec_status(path, argv);   // warm up whatever the kernel caches
  unsigned long before = ut_freepages();
  int status = ut_exec_status(path, argv);
  unsigned long after = ut_settle_freepages(before);
  unlink(path);
  TR_CHECK(status == UT_EXEC_REFUSED, "exec of %s was not refused (status %d)",
           what, status);
  TR_CHECK(after >= before, "exec of %s leaked %lu pages", what,
           before - after);
}

// One argument of 3 KiB fits on the new stack; one of 64 KiB cannot.
static void test_exec_argument_sizes(void)
{
  enum { FITS = 3000, TOO_BIG = 64 * 1024 };
  char *arg = malloc(TOO_BIG + 1), *out = malloc(FITS + 16);
  TR_CHECK(arg && out, "malloc");
  memset(arg, 'q', FITS);
  arg[FITS] = 0;
  char *argv[] = { "/echo", arg, NULL };
  int len;
  TR_CHECK(ut_run_capture(argv, out, FITS + 16, &len) == 0, "echo failed");
  TR_CHECK(len == FITS + 1 && out[0] == 'q' && out[FITS] == '\n',
           "echo of a %d-byte argument printed %d bytes", FITS, len);
  memset(arg, 'q', TOO_BIG);
  arg[TOO_BIG] = 0;
  TR_CHECK(ut_exec_status("/echo", argv) == UT_EXEC_REFUSED,
           "exec with a %d-byte argument", TOO_BIG);
}

static void test_exec_missing_file_fails(void)
{
  char *argv[] = { "nope", NULL };
  TR_CHECK(exec("/no/such/program", argv) == -1, "exec of a missing path");
  TR_CHECK(ut_exec_status("", argv) == UT_EXEC_REFUSED, "exec of an empty path");
  TR_CHECK(ut_exec_status("/", argv) == UT_EXEC_REFUSED, "exec of a directory");
}

static void test_exec_non_elf_fails(void)
{
  const char *script = "#!/sh\necho this is not a program\n";
  check_exec_refuses("ut_notelf", (const unsigned char *)script,
                     strlen(script), "a text file");
  unsigned char zeros[4096];
  memset(zeros, 0, sizeof zeros);
  check_exec_refuses("ut_zeros", zeros, sizeof zeros, "a file of zeros");
  check_exec_refuses("ut_empty", zeros, 0, "an empty file");
}

static void test_exec_truncated_elf_fails(void)
{
  static unsigned char image[IMAGE_MAX];
  int n = load_echo(image);
  check_exec_refuses("ut_trunc", image, 40, "half an ELF header");
  check_exec_refuses("ut_trunc", image, 64, "only the ELF header");
  // Cut the file in the middle of the first loadable segment's bytes.
  unsigned long phoff, seg_off, seg_filesz;
  memcpy(&phoff, image + ELF_PHOFF, 8);
  memcpy(&seg_off, image + phoff + PH_OFFSET, 8);
  memcpy(&seg_filesz, image + phoff + PH_FILESZ, 8);
  TR_CHECK(seg_off + seg_filesz <= (unsigned long)n && seg_filesz > 2,
           "unexpected /echo layout");
  check_exec_refuses("ut_trunc", image, seg_off + seg_filesz / 2,
                     "/echo cut inside its text");
}

static void put64(unsigned char *p, unsigned long v)
{
  memcpy(p, &v, 8);   // RISC-V and ELF64LE agree on byte order
}

// Damages field `off` of the first program header and tries it.
static void damage_phdr(const unsigned char *orig, int n, int field,
                        unsigned long value, const char *what)
{
  static unsigned char image[IMAGE_MAX];
  unsigned long phoff;
  memcpy(image, orig, n);
  memcpy(&phoff, image + ELF_PHOFF, 8);
  TR_CHECK(phoff + 56 <= (unsigned long)n, "bad /echo phoff");
  put64(image + phoff + field, value);
  check_exec_refuses("ut_badelf", image, n, what);
}

static void test_exec_corrupt_headers_fail(void)
{
  static unsigned char orig[IMAGE_MAX];
  int n = load_echo(orig);
  damage_phdr(orig, n, PH_MEMSZ, 0xfffffffffffff000UL, "memsz near 2^64");
  damage_phdr(orig, n, PH_MEMSZ, 1UL << 40, "memsz 1 TiB");
  damage_phdr(orig, n, PH_VADDR, MAXVA - PGSIZE, "vaddr at MAXVA");
  damage_phdr(orig, n, PH_FILESZ, 1UL << 30, "filesz past the file");
  damage_phdr(orig, n, PH_OFFSET, 1UL << 32, "offset past the file");
  static unsigned char image[IMAGE_MAX];
  memcpy(image, orig, n);
  put64(image + ELF_PHOFF, 0xffffffffffffff00UL);
  check_exec_refuses("ut_badelf", image, n, "phoff near 2^64");
  memcpy(image, orig, n);
  image[ELF_PHNUM] = 0xff;
  image[ELF_PHNUM + 1] = 0xff;
  check_exec_refuses("ut_badelf", image, n, "65535 program headers");
}

// exec replaces the image but keeps open file descriptors.
static void test_exec_keeps_fds(void)
{
  char *argv[] = { "/cat", NULL };
  const char *text = "through an inherited fd\n";
  int p[2], len;
  char out[64];
  ut_write_file("ut_execfd", text, strlen(text));
  TR_CHECK(pipe(p) == 0, "pipe");
  int pid = ut_fork();
  if (pid == 0) {
    close(STDIN);
    if (open("ut_execfd", O_RDONLY) != STDIN)
      exit(3);
    close(STDOUT);
    dup(p[1]);
    close(p[0]);
    close(p[1]);
    exec(argv[0], argv);
    exit(4);
  }
  close(p[1]);
  len = read(p[0], out, sizeof out);
  close(p[0]);
  TR_CHECK(ut_wait_for(pid) == 0, "cat failed");
  unlink("ut_execfd");
  TR_CHECK(len == (int)strlen(text) && memcmp(out, text, len) == 0,
           "cat through inherited fds printed %d bytes", len);
}

const struct tr_case ut_exec_tests[] = {
  { "exec_many_args", test_exec_many_args, TR_QUICK, 0 },
  { "exec_too_many_args", test_exec_too_many_args, TR_QUICK, 0 },
  { "exec_argument_sizes", test_exec_argument_sizes, TR_QUICK, 0 },
  { "exec_missing_file_fails", test_exec_missing_file_fails, TR_QUICK, 0 },
  { "exec_non_elf_fails", test_exec_non_elf_fails, TR_QUICK, 0 },
  { "exec_truncated_elf_fails", test_exec_truncated_elf_fails, TR_QUICK, 0 },
  { "exec_corrupt_headers_fail", test_exec_corrupt_headers_fail, TR_QUICK, 0 },
  { "exec_keeps_fds", test_exec_keeps_fds, TR_QUICK, 0 },
  { NULL },
};
