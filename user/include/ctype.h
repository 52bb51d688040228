// ctype.h: ASCII character classes (user/ctype.c; declared in user/user.h).
#include "user/user.h"
