// stdlib.h: the heap, numbers from text, rand, getenv, abort (declared in user/user.h).
#include "user/user.h"
