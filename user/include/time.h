// time.h: time, clock_gettime, nanosleep and struct timespec (user/lib/c/time.c;
// declared in user/lib/c/user.h). Times count from the boot: there is no
// calendar clock, so no localtime or strftime either.
#include "user/lib/c/user.h"
