// time.h: time, clock_gettime, nanosleep and struct timespec (user/time.c;
// declared in user/user.h). Times count from the boot: there is no
// calendar clock, so no localtime or strftime either.
#include "user/user.h"
