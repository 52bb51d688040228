// fs.c: file system tests: names, links, directories, sizes, big files.
//
// Every test works in names starting with "ut_" and removes them first, so
// a run interrupted half-way does not break the next one.
#include "ut.h"

static int file_size(const char *path)
{
  struct stat st;
  return stat(path, &st) < 0 ? -1 : (int)st.size;
}

static void test_fs_create_write_read(void)
{
  unlink("ut_basic");
  int fd = open("ut_basic", O_RDONLY);
  TR_CHECK(fd == -1, "opened a file that does not exist");
  ut_write_file("ut_basic", "hello, file", 11);
  char buf[32];
  int n = ut_read_file("ut_basic", buf, sizeof buf);
  TR_CHECK(n == 11 && memcmp(buf, "hello, file", 11) == 0, "read back %d", n);
  struct stat st;
  TR_CHECK(stat("ut_basic", &st) == 0, "stat");
  TR_CHECK(st.type == T_FILE && st.size == 11 && st.nlink == 1,
           "stat type %d size %lu nlink %d", st.type, st.size, st.nlink);
  TR_CHECK(unlink("ut_basic") == 0, "unlink");
  TR_CHECK(open("ut_basic", O_RDONLY) == -1, "file survived unlink");
  TR_CHECK(unlink("ut_basic") == -1, "second unlink succeeded");
}

// Reads and writes that straddle block boundaries at odd offsets.
static void test_fs_odd_offsets(void)
{
  static unsigned char data[5000], back[5000];
  ut_fill_pattern(data, sizeof data, 3);
  int fd = open("ut_odd", O_CREATE | O_TRUNC | O_RDWR);
  TR_CHECK(fd >= 0, "create");
  for (int off = 0; off < 5000; off += 777) {
    int n = 5000 - off < 777 ? 5000 - off : 777;
    TR_CHECK(write(fd, data + off, n) == n, "write at %d", off);
  }
  close(fd);
  fd = open("ut_odd", O_RDONLY);
  int got = 0, n;
  while ((n = read(fd, back + got, 513)) > 0)
    got += n;
  close(fd);
  unlink("ut_odd");
  TR_CHECK(got == 5000, "read back %d bytes", got);
  TR_CHECK(memcmp(data, back, 5000) == 0, "data differs");
}

static void test_fs_link_and_unlink(void)
{
  unlink("ut_la");
  unlink("ut_lb");
  ut_write_file("ut_la", "shared", 6);
  TR_CHECK(link("ut_la", "ut_lb") == 0, "link");
  TR_CHECK(link("ut_la", "ut_lb") == -1, "link over an existing name");
  TR_CHECK(link("ut_nonexistent", "ut_lc") == -1, "link to a missing file");
  struct stat a, b;
  TR_CHECK(stat("ut_la", &a) == 0 && stat("ut_lb", &b) == 0, "stat");
  TR_CHECK(a.ino == b.ino && a.nlink == 2, "ino %u/%u nlink %d",
           a.ino, b.ino, a.nlink);
  TR_CHECK(unlink("ut_la") == 0, "unlink first name");
  char buf[8];
  TR_CHECK(ut_read_file("ut_lb", buf, 8) == 6 && memcmp(buf, "shared", 6) == 0,
           "second name lost the data");
  TR_CHECK(stat("ut_lb", &b) == 0 && b.nlink == 1, "nlink %d after unlink",
           b.nlink);
  TR_CHECK(link("ut_lb", "ut_la") == 0, "relink");
  TR_CHECK(unlink("ut_lb") == 0 && unlink("ut_la") == 0, "final unlinks");
}

// An unlinked file stays readable and writable while it is open.
static void test_fs_unlink_open_file(void)
{
  ut_write_file("ut_ghost", "still here", 10);
  int fd = open("ut_ghost", O_RDWR);
  TR_CHECK(fd >= 0, "open");
  TR_CHECK(unlink("ut_ghost") == 0, "unlink");
  TR_CHECK(open("ut_ghost", O_RDONLY) == -1, "name still visible");
  char buf[16];
  TR_CHECK(read(fd, buf, sizeof buf) == 10 && memcmp(buf, "still here", 10) == 0,
           "data gone after unlink");
  TR_CHECK(write(fd, "!", 1) == 1, "write after unlink");
  struct stat st;
  TR_CHECK(fstat(fd, &st) == 0 && st.nlink == 0 && st.size == 11,
           "fstat nlink %d size %lu", st.nlink, st.size);
  close(fd);
}

static void test_fs_nested_dirs(void)
{
  unlink("ut_d1/d2/d3/f");
  unlink("ut_d1/d2/d3");
  unlink("ut_d1/d2");
  unlink("ut_d1");
  TR_CHECK(mkdir("ut_d1") == 0 && mkdir("ut_d1/d2") == 0 &&
           mkdir("ut_d1/d2/d3") == 0, "mkdir chain");
  TR_CHECK(mkdir("ut_d1") == -1, "mkdir over an existing name");
  TR_CHECK(mkdir("ut_nodir/x") == -1, "mkdir in a missing directory");
  ut_write_file("ut_d1/d2/d3/f", "deep", 4);
  TR_CHECK(chdir("ut_d1/d2") == 0, "chdir");
  char buf[8];
  TR_CHECK(ut_read_file("d3/f", buf, 8) == 4, "relative path after chdir");
  TR_CHECK(chdir("d3/../../d2/./d3") == 0, "chdir through . and ..");
  TR_CHECK(ut_read_file("f", buf, 8) == 4, "file via dot-dot path");
  TR_CHECK(chdir("../../..") == 0, "chdir up");
  struct stat st;
  TR_CHECK(stat("ut_d1/d2", &st) == 0 && st.type == T_DIR, "type of a dir");
  TR_CHECK(unlink("ut_d1/d2/d3/f") == 0 && unlink("ut_d1/d2/d3") == 0 &&
           unlink("ut_d1/d2") == 0 && unlink("ut_d1") == 0, "cleanup");
}

static void test_fs_unlink_nonempty_dir_fails(void)
{
  unlink("ut_full/f");
  unlink("ut_full");
  TR_CHECK(mkdir("ut_full") == 0, "mkdir");
  ut_write_file("ut_full/f", "x", 1);
  TR_CHECK(unlink("ut_full") == -1, "removed a non-empty directory");
  TR_CHECK(file_size("ut_full/f") == 1, "contents damaged");
  TR_CHECK(unlink("ut_full/f") == 0, "unlink the file");
  TR_CHECK(unlink("ut_full") == 0, "empty directory not removable");
}

static void test_fs_dot_entries(void)
{
  struct stat root, dot, dotdot;
  TR_CHECK(stat("/", &root) == 0 && stat("/.", &dot) == 0 &&
           stat("/..", &dotdot) == 0, "stat of / . ..");
  TR_CHECK(root.ino == dot.ino && root.ino == dotdot.ino,
           "/, /. and /.. differ: %u %u %u", root.ino, dot.ino, dotdot.ino);
  TR_CHECK(unlink(".") == -1 && unlink("..") == -1, "unlinked . or ..");
  TR_CHECK(mkdir(".") == -1, "mkdir .");
  TR_CHECK(open(".", O_RDWR) == -1 && open(".", O_WRONLY) == -1,
           "opened a directory for writing");
  int fd = open(".", O_RDONLY);
  TR_CHECK(fd >= 0, "open . for reading");
  struct dirent de;
  TR_CHECK(read(fd, &de, sizeof de) == sizeof de, "read a dirent");
  TR_CHECK(write(fd, &de, sizeof de) == -1, "wrote into a directory");
  close(fd);
  TR_CHECK(mkdir("ut_dots") == 0 || stat("ut_dots", &dot) == 0, "mkdir");
  TR_CHECK(stat("ut_dots/..", &dotdot) == 0 && dotdot.ino == root.ino,
           "ut_dots/.. is not /");
  TR_CHECK(unlink("ut_dots/.") == -1, "unlinked ut_dots/.");
  TR_CHECK(unlink("ut_dots") == 0, "rmdir");
}

static void test_fs_link_to_dir_fails(void)
{
  unlink("ut_ldir");
  unlink("ut_ldir2");
  TR_CHECK(mkdir("ut_ldir") == 0, "mkdir");
  TR_CHECK(link("ut_ldir", "ut_ldir2") == -1, "hard link to a directory");
  TR_CHECK(link("/", "ut_ldir2") == -1, "hard link to /");
  TR_CHECK(unlink("ut_ldir") == 0, "rmdir");
}

// A name of exactly DIRSIZ bytes round-trips; longer names are either
// refused or consistently treated as the same file.
static void test_fs_dirsiz_names(void)
{
  char name[DIRSIZ + 1], longer[DIRSIZ + 8];
  memset(name, 'n', DIRSIZ);
  name[DIRSIZ] = 0;
  unlink(name);
  ut_write_file(name, "fits", 4);
  TR_CHECK(file_size(name) == 4, "name of DIRSIZ bytes");
  int fd = open(".", O_RDONLY), found = 0;
  struct dirent de;
  while (read(fd, &de, sizeof de) == sizeof de)
    found |= de.inum != 0 && memcmp(de.name, name, DIRSIZ) == 0;
  close(fd);
  TR_CHECK(found, "DIRSIZ name not in the directory");
  TR_CHECK(unlink(name) == 0, "unlink");
  memset(longer, 'm', sizeof longer - 1);
  longer[sizeof longer - 1] = 0;
  fd = open(longer, O_CREATE | O_RDWR);
  if (fd >= 0) {
    write(fd, "xy", 2);
    close(fd);
    TR_CHECK(file_size(longer) == 2, "a long name does not find its file");
    TR_CHECK(unlink(longer) == 0, "unlink long name");
  }
}

static void test_fs_path_too_long_fails(void)
{
  static char path[4200];
  memset(path, 'a', sizeof path - 1);
  path[sizeof path - 1] = 0;
  TR_CHECK(open(path, O_CREATE | O_RDWR) == -1, "open of a 4 KiB name");
  for (int i = 0; i + 2 < (int)sizeof path; i += 2) {
    path[i] = 'd';
    path[i + 1] = '/';
  }
  TR_CHECK(open(path, O_RDONLY) == -1, "open of a 4 KiB path");
  TR_CHECK(mkdir(path) == -1, "mkdir of a 4 KiB path");
  TR_CHECK(chdir(path) == -1, "chdir to a 4 KiB path");
  TR_CHECK(unlink(path) == -1, "unlink of a 4 KiB path");
}

static void test_fs_many_files_in_dir(void)
{
  enum { N = 120 };
  char path[32];
  mkdir("ut_many");
  for (int i = 0; i < N; i++) {
    snprintf(path, sizeof path, "ut_many/f%d", i);
    ut_write_file(path, path, strlen(path));
  }
  int fd = open("ut_many", O_RDONLY), count = 0;
  struct dirent de;
  while (read(fd, &de, sizeof de) == sizeof de)
    count += de.inum != 0 && de.name[0] == 'f';
  close(fd);
  TR_CHECK(count == N, "directory lists %d of %d files", count, N);
  for (int i = 0; i < N; i++) {
    char buf[32];
    snprintf(path, sizeof path, "ut_many/f%d", i);
    int n = ut_read_file(path, buf, sizeof buf);
    TR_CHECK(n == (int)strlen(path) && memcmp(buf, path, n) == 0,
             "%s has the wrong contents", path);
    TR_CHECK(unlink(path) == 0, "unlink %s", path);
  }
  TR_CHECK(unlink("ut_many") == 0, "directory not empty after unlinks");
}

// 16 MiB written in 64 KiB pieces, read back and compared.
static void test_fs_big_file_16mib(void)
{
  enum { PIECE = 64 * 1024, TOTAL = 16 << 20 };
  unsigned char *buf = malloc(PIECE);
  TR_CHECK(buf != NULL, "malloc");
  int fd = open("ut_big", O_CREATE | O_TRUNC | O_WRONLY);
  TR_CHECK(fd >= 0, "create");
  for (int k = 0; k < TOTAL / PIECE; k++) {
    ut_fill_pattern(buf, PIECE, k);
    int n = write(fd, buf, PIECE);
    TR_CHECK(n == PIECE, "write %d returned %d (at %d KiB)", k, n,
             k * (PIECE / 1024));
  }
  close(fd);
  TR_CHECK(file_size("ut_big") == TOTAL, "size %d", file_size("ut_big"));
  fd = open("ut_big", O_RDONLY);
  for (int k = 0; k < TOTAL / PIECE; k++) {
    int got = 0, n;
    while (got < PIECE && (n = read(fd, buf + got, PIECE - got)) > 0)
      got += n;
    TR_CHECK(got == PIECE, "short read in piece %d", k);
    int bad = ut_check_pattern(buf, PIECE, k);
    TR_CHECK(bad < 0, "wrong byte at %d", k * PIECE + bad);
  }
  char c;
  TR_CHECK(read(fd, &c, 1) == 0, "data past the end");
  close(fd);
  TR_CHECK(unlink("ut_big") == 0, "unlink");
}

static void test_fs_truncate_on_open(void)
{
  ut_write_file("ut_trunc", "a long first version", 20);
  int fd = open("ut_trunc", O_WRONLY | O_TRUNC);
  TR_CHECK(fd >= 0, "open O_TRUNC");
  struct stat st;
  TR_CHECK(fstat(fd, &st) == 0 && st.size == 0, "size %lu after O_TRUNC",
           st.size);
  write(fd, "v2", 2);
  close(fd);
  fd = open("ut_trunc", O_CREATE | O_RDWR);   // O_CREATE alone keeps data
  TR_CHECK(fd >= 0 && fstat(fd, &st) == 0 && st.size == 2,
           "O_CREATE on an existing file changed its size to %lu", st.size);
  close(fd);
  TR_CHECK(unlink("ut_trunc") == 0, "unlink");
}

// Append by reading to the end, then writing; reopen and check.
static void test_fs_append_by_reopen(void)
{
  char buf[64];
  unlink("ut_append");
  for (int i = 0; i < 5; i++) {
    int fd = open("ut_append", O_CREATE | O_RDWR);
    TR_CHECK(fd >= 0, "open %d", i);
    while (read(fd, buf, sizeof buf) > 0)
      ;
    char line[4] = { 'L', (char)('0' + i), '\n', 0 };
    TR_CHECK(write(fd, line, 3) == 3, "append %d", i);
    close(fd);
  }
  int n = ut_read_file("ut_append", buf, sizeof buf);
  TR_CHECK(n == 15 && memcmp(buf, "L0\nL1\nL2\nL3\nL4\n", 15) == 0,
           "appended file has %d bytes", n);
  unlink("ut_append");
}

static void test_fs_open_edge_cases(void)
{
  ut_write_file("ut_plain", "x", 1);
  TR_CHECK(open("ut_plain/child", O_RDONLY) == -1, "file used as a directory");
  TR_CHECK(open("ut_plain/child", O_CREATE | O_RDWR) == -1,
           "created inside a file");
  TR_CHECK(open("ut_nodir/f", O_CREATE | O_RDWR) == -1,
           "created in a missing directory");
  TR_CHECK(chdir("ut_plain") == -1, "chdir into a file");
  TR_CHECK(chdir("ut_nodir") == -1, "chdir into nothing");
  TR_CHECK(mkdir("ut_plain") == -1, "mkdir over a file");
  TR_CHECK(unlink("ut_plain") == 0, "unlink");
}

static void test_fs_mknod_console(void)
{
  unlink("ut_cons");
  TR_CHECK(mknod("ut_cons", DEV_CONSOLE, 0) == 0, "mknod");
  TR_CHECK(mknod("ut_cons", DEV_CONSOLE, 0) == -1, "mknod over a name");
  int fd = open("ut_cons", O_WRONLY);
  struct stat st;
  TR_CHECK(fd >= 0 && fstat(fd, &st) == 0 && st.type == T_DEVICE,
           "device node type %d", st.type);
  TR_CHECK(write(fd, "", 0) == 0, "zero-length console write");
  close(fd);
  TR_CHECK(unlink("ut_cons") == 0, "unlink");
}

const struct tr_case ut_fs_tests[] = {
  { "fs_create_write_read", test_fs_create_write_read, TR_QUICK, 0 },
  { "fs_odd_offsets", test_fs_odd_offsets, TR_QUICK, 0 },
  { "fs_link_and_unlink", test_fs_link_and_unlink, TR_QUICK, 0 },
  { "fs_unlink_open_file", test_fs_unlink_open_file, TR_QUICK, 0 },
  { "fs_nested_dirs", test_fs_nested_dirs, TR_QUICK, 0 },
  { "fs_unlink_nonempty_dir_fails", test_fs_unlink_nonempty_dir_fails, TR_QUICK, 0 },
  { "fs_dot_entries", test_fs_dot_entries, TR_QUICK, 0 },
  { "fs_link_to_dir_fails", test_fs_link_to_dir_fails, TR_QUICK, 0 },
  { "fs_dirsiz_names", test_fs_dirsiz_names, TR_QUICK, 0 },
  { "fs_path_too_long_fails", test_fs_path_too_long_fails, TR_QUICK, 0 },
  { "fs_many_files_in_dir", test_fs_many_files_in_dir, TR_QUICK, 0 },
  { "fs_big_file_16mib", test_fs_big_file_16mib, TR_SLOW, 300 },
  { "fs_truncate_on_open", test_fs_truncate_on_open, TR_QUICK, 0 },
  { "fs_append_by_reopen", test_fs_append_by_reopen, TR_QUICK, 0 },
  { "fs_open_edge_cases", test_fs_open_edge_cases, TR_QUICK, 0 },
  { "fs_mknod_console", test_fs_mknod_console, TR_QUICK, 0 },
  { NULL },
};
