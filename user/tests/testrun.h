// testrun.h: the runner every guest test program shares (usertests,
// rdmatest, rdmahostile).
//
// A program lists its cases in static tables of struct tr_case, each table
// ending with an entry whose name is NULL, and hands them to tr_main, which
// owns the command line and the output:
//
//   prog [-q] [-l] [-x name]... [name...]
//     -q       quick: skip the cases marked TR_SLOW
//     -l       list the case names (slow ones marked) and exit
//     -x name  leave out the case name (repeatable)
//     name     run only the cases with this name, or whose name starts
//              with "name_" (so "usertests fs" runs every fs case)
//
// Each case runs in a forked child, so a case may crash, leak or exit
// freely without taking the others with it; a watchdog child kills it past
// its timeout. The runner prints one line per case,
//   test <name>: OK        or        test <name>: FAILED (<why>)
// and at the end exactly "<passed> passed, <failed> failed" (the line the
// host harness in tests/ parses). The exit status is 0 only if nothing
// failed.
#ifndef TESTRUN_H
#define TESTRUN_H

#include "user/lib/c/user.h"

enum tr_speed { TR_QUICK, TR_SLOW };   // slow cases are skipped by -q

struct tr_case {
  const char *name;      // printed as "test <name>: ..."
  void (*run)(void);     // returning is passing; tr_fail or a crash fails
  enum tr_speed speed;
  int timeout_s;         // 0: the suite's default
};

struct tr_suite {
  const char *prog;                     // for the usage line
  const struct tr_case *const *tables;  // each ends with a { NULL } entry
  int ntables;
  int timeout_s;                        // default per-case timeout
  int check_pages;   // 1: a case whose process leaves free pages behind fails
  int (*setup)(void);   // optional, run once before the cases; < 0 aborts
};

// Runs the suite as the command line says; returns the exit status.
int tr_main(const struct tr_suite *suite, int argc, char **argv);

// Ends the current case as failed; the reason ("line N: ...") reaches the
// runner (from the case's process or any process it forked).
void tr_fail(int line, const char *fmt, ...) __attribute__((noreturn));
// The same with a reason the caller has already written.
void tr_failed(const char *why) __attribute__((noreturn));
#define TR_CHECK(cond, ...) \
  do { if (!(cond)) tr_fail(__LINE__, __VA_ARGS__); } while (0)
// TR_CHECK with the condition's own text as the reason.
#define TR_ASSERT(cond) TR_CHECK(cond, "%s", #cond)

#endif
