// malloc.h: memalign and the heap (user/malloc.c; declared in user/user.h).
#include "user/user.h"
