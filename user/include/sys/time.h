// sys/time.h: struct timeval and gettimeofday (user/lib/c/time.c; declared in user/lib/c/user.h).
#include "user/lib/c/user.h"
