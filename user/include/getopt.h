// getopt.h: getopt, getopt_long and struct option (user/getopt.c; declared in user/user.h).
#include "user/user.h"
