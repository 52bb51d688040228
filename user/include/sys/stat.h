// sys/stat.h: struct stat, stat and fstat (kernel/lib/uapi.h; declared in
// user/lib/c/user.h), and POSIX's st_mode tests and permission bits. The S_IF*
// file-type bits are the kernel's (uapi.h); xv6 has no permission checks,
// so st_mode's permission bits are always 0777 (S_STAT_PERMS).
#ifndef SYS_STAT_H
#define SYS_STAT_H
#include "user/lib/c/user.h"

#define S_ISDIR(m)  (((m) & S_IFMT) == S_IFDIR)
#define S_ISREG(m)  (((m) & S_IFMT) == S_IFREG)
#define S_ISCHR(m)  (((m) & S_IFMT) == S_IFCHR)
#define S_ISBLK(m)  (((m) & S_IFMT) == S_IFBLK)
#define S_ISFIFO(m) (((m) & S_IFMT) == S_IFIFO)
#define S_ISLNK(m)  (((m) & S_IFMT) == S_IFLNK)
#define S_ISSOCK(m) (((m) & S_IFMT) == S_IFSOCK)

#define S_ISUID 04000
#define S_ISGID 02000
#define S_ISVTX 01000
#define S_IRUSR 0400
#define S_IWUSR 0200
#define S_IXUSR 0100
#define S_IRWXU (S_IRUSR | S_IWUSR | S_IXUSR)
#define S_IRGRP 040
#define S_IWGRP 020
#define S_IXGRP 010
#define S_IRWXG (S_IRGRP | S_IWGRP | S_IXGRP)
#define S_IROTH 04
#define S_IWOTH 02
#define S_IXOTH 01
#define S_IRWXO (S_IROTH | S_IWOTH | S_IXOTH)
#endif
