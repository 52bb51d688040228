// sys/stat.h: struct stat, stat and fstat (kernel/lib/uapi.h; declared in user/user.h).
#include "user/user.h"
