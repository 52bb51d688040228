// arpa/inet.h: inet_pton, inet_ntop, inet_addr, inet_ntoa (user/inet.c; declared in user/user.h).
#include "user/user.h"
