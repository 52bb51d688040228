// libgen.h: basename and dirname (user/lib/c/string.c; declared in user/lib/c/user.h).
#include "user/lib/c/user.h"
