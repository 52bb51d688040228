// poll.h: poll() and struct pollfd, POLLIN and the other bits (kernel/lib/uapi.h;
// declared in user/user.h).
#include "user/user.h"
