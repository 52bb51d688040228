// main.c: the usertests program: the list of module tables, handed to the
// shared runner (user/tests/testrun.c).
//
// Usage: usertests [-q] [-l] [-x name]... [name...]   (see user/tests/testrun.h)
//   "usertests fs" runs every fs test, "usertests -q" skips the slow ones.
// Prints "test <name>: OK" or "test <name>: FAILED (<why>)" per test and
// "<passed> passed, <failed> failed" at the end.
#include "ut.h"

static const struct tr_case *const modules[] = {
  ut_sys_tests, ut_proc_tests, ut_exec_tests, ut_mem_tests, ut_badptr_tests,
  ut_badptr_ext_tests, ut_net_tests, ut_fd_tests,
  ut_pipe_tests, ut_poll_tests, ut_fs_tests, ut_time_tests, ut_smp_tests, ut_libc_tests,
  ut_fpu_tests, ut_libc_posix_tests,
};

// The tests create and look up files relative to the root.
static int go_to_root(void)
{
  return chdir("/");
}

static const struct tr_suite suite = {
  .prog = "usertests",
  .tables = modules,
  .ntables = (int)(sizeof modules / sizeof modules[0]),
  .timeout_s = 60,
  .setup = go_to_root,
};

int main(int argc, char **argv)
{
  return tr_main(&suite, argc, argv);
}
