// poll.h: poll() and struct pollfd, POLLIN and the other bits (kernel/lib/uapi.h;
// declared in user/lib/c/user.h).
#include "user/lib/c/user.h"
