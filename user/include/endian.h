// endian.h: htobe16 .. le64toh (macros in user/user.h; the machine is little-endian).
#include "user/user.h"
