// endian.h: htobe16 .. le64toh (macros in user/lib/c/user.h; the machine is little-endian).
#include "user/lib/c/user.h"
