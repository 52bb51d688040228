// stdio.h: streams, printf and scanf (user/stdio.c, printf.c, scanf.c; declared in user/user.h).
#include "user/user.h"
