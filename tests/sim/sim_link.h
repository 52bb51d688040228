/*
 * sim_link.h: the simulator's lossy link in virtual time.
 *
 * Two directions (SIM_A2B, SIM_B2A), each an impairment engine
 * (netem/impair.h) fed with a netem-grammar spec. A frame handed to the link
 * at `now` gets its fate from the engine; surviving copies wait in a heap
 * ordered by departure time (ties: hand-over order) until the event loop
 * pops them. The link owns the copies it queues.
 *
 * Every frame handed over is traced: time, direction, per-direction index,
 * fate, length and a 64-bit hash of its bytes. The trace is folded into a
 * running hash (sim_link.trace_hash) and, if a FILE is attached, written as
 * one line per event, so two runs can be compared byte for byte.
 */
#ifndef SIM_LINK_H
#define SIM_LINK_H

#include <stdint.h>
#include <stdio.h>

#include "../../netem/impair.h"

enum { SIM_A2B = 0, SIM_B2A = 1 };

struct sim_pkt {
  uint64_t depart, seq;
  int dir;
  uint32_t len;
  uint8_t *data;
};

struct sim_link {
  struct impair dir[2];
  uint64_t index[2];           /* next frame index per direction */
  struct sim_pkt *heap;
  uint32_t n, cap;
  uint64_t seq;
  uint64_t trace_hash;         /* FNV-1a over every trace record */
  uint64_t delivered[2];
  FILE *trace;                 /* optional text trace */
};

uint64_t sim_hash(const void *data, size_t len);

/* BTH opcode and PSN of a RoCEv2 frame (Ethernet 14 + IPv4 20 + UDP 8);
 * returns 0 (and zeros) for a frame too short to hold them. */
int sim_bth_of(const uint8_t *f, uint32_t len, unsigned *op, unsigned *psn);

/* Build a link from two specs ("" = perfect). Returns 0 or -1 with err. */
int sim_link_init(struct sim_link *l, const char *a2b, const char *b2a, char *err, size_t errlen);
void sim_link_free(struct sim_link *l);

/* Hand a frame (copied) to direction `dir` at `now`. Returns its fate:
 * IMPAIR_KEEP (0) or the cause that dropped it. */
int sim_link_send(struct sim_link *l, int dir, uint64_t now, const uint8_t *data, uint32_t len);

/* Earliest departure, or IMPAIR_NEVER if nothing is in flight. */
uint64_t sim_link_next(const struct sim_link *l);

/* Pop the next frame due at or before `now`: returns 1 and *out (the caller
 * frees out->data), or 0. */
int sim_link_pop(struct sim_link *l, uint64_t now, struct sim_pkt *out);

#endif
