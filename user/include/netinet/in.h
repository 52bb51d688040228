// netinet/in.h: struct sockaddr_in, in_addr, INADDR_* and the byte-order macros (user/lib/c/user.h).
#include "user/lib/c/user.h"
