// byteswap.h: bswap_16, bswap_32, bswap_64 (inline, in user/lib/c/user.h).
#include "user/lib/c/user.h"
