// devsw.h: the character device switch. A device file's major number
// selects the entry; its driver fills read/write at init (console.c for
// DEV_CONSOLE) and the file layer (fs/file.c) calls through it.
#ifndef DEVSW_H
#define DEVSW_H
#include "lib/types.h"
#define NDEV 10
// Device operations; user_addr says whether addr is a user address.
// poll returns the POLL* bits (uapi.h) true now (NULL: always ready); a
// driver whose readiness changes calls poll_notify() (core/poll.h).
struct devsw {
  int (*read)(int user_addr, uint64 addr, int n);
  int (*write)(int user_addr, uint64 addr, int n);
  int (*poll)(void);
};
extern struct devsw devsw[NDEV];
#endif
