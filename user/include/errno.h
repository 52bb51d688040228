// errno.h: errno and the E* values, Linux's numbers (user/lib/c/errno.c; declared in user/lib/c/user.h).
#include "user/lib/c/user.h"
