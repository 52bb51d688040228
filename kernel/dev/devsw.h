// devsw.h: the character device switch. A device file's major number
// selects the entry; its driver fills read/write at init (console.c for
// DEV_CONSOLE) and the file layer (fs/file.c) calls through it.
#ifndef DEVSW_H
#define DEVSW_H
#include "lib/types.h"
#define NDEV 10
// Device operations; user_addr says whether addr is a user address.
struct devsw { int (*read)(int user_addr, uint64 addr, int n); int (*write)(int user_addr, uint64 addr, int n); };
extern struct devsw devsw[NDEV];
#endif
