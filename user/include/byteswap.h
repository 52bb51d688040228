// byteswap.h: bswap_16, bswap_32, bswap_64 (inline, in user/user.h).
#include "user/user.h"
