// fcntl.h: open() and its O_* flags (kernel/lib/uapi.h; declared in user/lib/c/user.h).
#include "user/lib/c/user.h"
