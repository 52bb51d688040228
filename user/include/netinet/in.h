// netinet/in.h: struct sockaddr_in, in_addr, INADDR_* and the byte-order macros (user/user.h).
#include "user/user.h"
