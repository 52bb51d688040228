// poll.h: the readiness generation that poll() sleeps on (core/poll.c).
//
// Every change that can make a file readable or writable (bytes in a pipe,
// a console line, a queued datagram, a completion event, a closed end)
// calls poll_notify() after the change is visible. A poller reads
// poll_generation(), checks its files, and if none is ready calls
// poll_wait_change() with the generation it read: a change in between is
// never lost, because it moved the generation.
#ifndef CORE_POLL_H
#define CORE_POLL_H
#include "lib/types.h"

// Any context (interrupts may be off; the caller may hold spin locks that
// are not the poll lock).
void   poll_notify(void);
uint64 poll_generation(void);
// Process context, no lock held. Sleeps until the generation is no longer
// seen, clock_ns() >= deadline_ns (~0: none) or the process is killed.
void   poll_wait_change(uint64 seen, uint64 deadline_ns);
#endif
