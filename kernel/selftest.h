// selftest.h: boot-time kernel self-checks (selftest.c, selftest_kverbs.c,
// selftest_pager.c).
#ifndef SELFTEST_H
#define SELFTEST_H
void selftest_start(void);
// selftest_kverbs.c: after rdma_init; then (may be NULL) runs in its thread
// once the test is done (it counts only its own objects, so others may
// make theirs meanwhile).
void selftest_kverbs_start(void (*then)(void));
void selftest_pager_start(void);    // selftest_pager.c: boot argument pagertest=N only
#endif
