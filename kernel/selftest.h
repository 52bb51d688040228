// selftest.h: boot-time kernel self-checks (selftest.c, selftest_kverbs.c,
// selftest_pager.c).
#ifndef SELFTEST_H
#define SELFTEST_H
void selftest_start(void);
void selftest_kverbs_start(void);   // selftest_kverbs.c: after rdma_init
void selftest_pager_start(void);    // selftest_pager.c: boot argument pagertest=N only
#endif
