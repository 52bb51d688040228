// stdlib.h: the heap, numbers from text, rand, getenv, abort (declared in user/lib/c/user.h).
#include "user/lib/c/user.h"
