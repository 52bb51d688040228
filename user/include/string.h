// string.h: strings and memory (user/string.c; declared in user/user.h).
#include "user/user.h"
