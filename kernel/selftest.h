// selftest.h: boot-time kernel self-checks (selftest.c).
#ifndef SELFTEST_H
#define SELFTEST_H
void selftest_start(void);
#endif
