// fcntl.h: open() and its O_* flags (kernel/lib/uapi.h; declared in user/user.h).
#include "user/user.h"
