// arpa/inet.h: inet_pton, inet_ntop, inet_addr, inet_ntoa (user/lib/c/inet.c; declared in user/lib/c/user.h).
#include "user/lib/c/user.h"
