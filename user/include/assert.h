// assert.h: assert(e) prints the failed expression and where, then ends the
// process as abort() does (user/lib/c/stdio.c's assert_fail). NDEBUG turns it off.
// Not guarded: C lets a program include it again after changing NDEBUG.
#include "user/lib/c/user.h"
#undef assert
#ifdef NDEBUG
#define assert(e) ((void)0)
#else
#define assert(e) ((e) ? (void)0 : assert_fail(#e, __FILE__, __LINE__, __func__))
#endif
