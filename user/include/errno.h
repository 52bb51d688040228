// errno.h: errno and the E* values, Linux's numbers (user/errno.c; declared in user/user.h).
#include "user/user.h"
