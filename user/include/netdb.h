// netdb.h: numeric getaddrinfo, freeaddrinfo, gai_strerror (user/inet.c; declared in user/user.h).
#include "user/user.h"
