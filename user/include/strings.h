// strings.h: strcasecmp and strncasecmp (user/string.c; declared in user/user.h).
#include "user/user.h"
