// sys/param.h: MIN, MAX and the page size under their BSD names.
#ifndef SYS_PARAM_H
#define SYS_PARAM_H
#include "user/lib/c/user.h"
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define EXEC_PAGESIZE 4096
#endif
