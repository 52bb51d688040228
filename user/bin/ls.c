// ls.c: list files with their type, inode number and size.
// Usage: ls [path...]   A directory lists its entries; a file lists itself.
// Each line: name (padded to DIRSIZ), type (dir/file/dev), inode, size.
#include "user.h"

static const char *type_name(short type)
{
  switch (type) {
  case T_DIR:    return "dir";
  case T_FILE:   return "file";
  case T_DEVICE: return "dev";
  default:       return "?";
  }
}

static void print_entry(const char *name, const struct stat *st)
{
  printf("%-14s %-4s %4u %lu\n", name, type_name(st->type), st->ino, st->size);
}

// Reads dirents from an open directory and stats each entry by full path.
static int list_dir(int fd, const char *dir)
{
  struct dirent de;
  char path[256], name[DIRSIZ + 1];
  struct stat st;
  if (strlen(dir) + 1 + DIRSIZ + 1 > sizeof path) {
    fprintf(stderr, "ls: path too long: %s\n", dir);
    return -1;
  }
  while (read(fd, &de, sizeof de) == sizeof de) {
    if (de.inum == 0)
      continue;
    memcpy(name, de.name, DIRSIZ);
    name[DIRSIZ] = 0;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (stat(path, &st) < 0) {
      fprintf(stderr, "ls: cannot stat %s\n", path);
      continue;
    }
    print_entry(name, &st);
  }
  return 0;
}

static int list(const char *path)
{
  struct stat st;
  int fd = open(path, O_RDONLY);
  if (fd < 0 || fstat(fd, &st) < 0) {
    fprintf(stderr, "ls: cannot open %s\n", path);
    if (fd >= 0)
      close(fd);
    return -1;
  }
  int r = 0;
  if (st.type == T_DIR)
    r = list_dir(fd, path);
  else
    print_entry(path, &st);
  close(fd);
  return r;
}

int main(int argc, char **argv)
{
  if (argc < 2)
    return list(".") < 0;
  int status = 0;
  for (int i = 1; i < argc; i++) {
    if (list(argv[i]) < 0)
      status = 1;
  }
  return status;
}
