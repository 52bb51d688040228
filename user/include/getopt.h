// getopt.h: getopt, getopt_long and struct option (user/lib/c/getopt.c; declared in user/lib/c/user.h).
#include "user/lib/c/user.h"
