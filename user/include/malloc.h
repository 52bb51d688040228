// malloc.h: memalign and the heap (user/lib/c/malloc.c; declared in user/lib/c/user.h).
#include "user/lib/c/user.h"
