// ctype.h: ASCII character classes (user/lib/c/ctype.c; declared in user/lib/c/user.h).
#include "user/lib/c/user.h"
