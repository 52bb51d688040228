// sys/socket.h: struct sockaddr, socklen_t and the AF_* values (user/lib/c/user.h).
// There is no TCP and no POSIX socket(): UDP sockets have xv6 calls of
// their own (socket(type), bind(s, port), ...; see user/lib/c/user.h).
#include "user/lib/c/user.h"
