// sys/types.h: the POSIX types: ssize_t, pid_t, off_t, mode_t, time_t (user/lib/c/user.h).
#include "user/lib/c/user.h"
