// libgen.h: basename and dirname (user/string.c; declared in user/user.h).
#include "user/user.h"
