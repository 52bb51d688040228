// sys/types.h: the POSIX types: ssize_t, pid_t, off_t, mode_t, time_t (user/user.h).
#include "user/user.h"
