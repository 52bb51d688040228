// prof.h: the sampling profiler (prof.c, machinevec.S); off unless booted with prof=N.
#ifndef PROF_H
#define PROF_H
#include "lib/types.h"
void prof_init(uint64 timebase_hz);       // boot, hart 0
void prof_dump(void);                     // halt: the hottest kernel pcs
uint64 prof_samples_within(uint64 ns);    // samples one hart takes in ns, at most (0: off)
#endif
