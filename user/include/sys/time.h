// sys/time.h: struct timeval and gettimeofday (user/time.c; declared in user/user.h).
#include "user/user.h"
