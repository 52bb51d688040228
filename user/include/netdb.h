// netdb.h: numeric getaddrinfo, freeaddrinfo, gai_strerror (user/lib/c/inet.c; declared in user/lib/c/user.h).
#include "user/lib/c/user.h"
