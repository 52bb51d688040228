// stdio.h: streams, printf and scanf (user/lib/c/stdio.c, printf.c, scanf.c; declared in user/lib/c/user.h).
#include "user/lib/c/user.h"
