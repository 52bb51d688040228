// prof.h: the sampling profiler (prof.c, machinevec.S); off unless booted with prof=N.
#ifndef PROF_H
#define PROF_H
#include "lib/types.h"
void prof_init(uint64 timebase_hz);       // boot, hart 0
void prof_dump(void);                     // halt: the hottest kernel pcs
#endif
