/*
 * scenario.h: one simulated transfer and its checks.
 *
 * A scenario posts `nmsgs` messages of `size` bytes of one opcode from
 * endpoint a to endpoint b over a link described in netem grammar, runs the
 * simulator to completion, and checks:
 *  - every byte: the destination region of each message equals the source
 *    (random data from the seed), and the guard bytes after it are untouched;
 *  - every completion exactly once, in order, with the right status, opcode
 *    and length, on a's send CQ and (SEND, WRITE_WITH_IMM) on b's receive CQ,
 *    with the right immediate; nothing completes after the end (a quiet
 *    period is simulated to catch late duplicates);
 *  - when the link outlasts the retry budget (expect = SC_EXPECT_RETRY_EXC):
 *    SUCCESS* then exactly one RETRY_EXC_ERR then WR_FLUSH_ERR for the rest,
 *    and a WR posted afterwards is flushed too;
 *  - the QPs end in RTS (the requester in ERR after RETRY_EXC_ERR);
 *  - with max_done_ns, that the last message completed by then.
 */
#ifndef SCENARIO_H
#define SCENARIO_H

#include <stdint.h>
#include <stdio.h>

#include "sim.h"

enum sc_expect { SC_EXPECT_SUCCESS, SC_EXPECT_RETRY_EXC };

struct scenario {
  char name[160];
  enum rct_wr_opcode op;
  uint32_t size, nmsgs;
  char link[256];               /* netem spec for both directions (seed appended) */
  char link_b2a[256];           /* if non-empty, b->a uses this instead */
  struct sim_params p;
  enum sc_expect expect;
  uint64_t seed;
  uint64_t limit_ns;            /* virtual-time budget */
  uint32_t regions;             /* buffer regions reused cyclically; 0 = nmsgs */
  uint64_t *latency_ns;         /* optional [nmsgs]: post -> completion time */
  int no_verify_data;           /* benchmarks: skip the byte comparison */
  int expect_clean;             /* a lossless link: the requester resends, times out, drops nothing */
  uint64_t max_done_ns;         /* if non-zero: every message completed by this virtual time (a goodput floor) */
};

struct scenario_result {
  int ok;
  char why[512];
  int sim_rc;
  uint64_t trace_hash, vtime_ns, done_ns;
  uint64_t frames[2];           /* handed to the link per direction */
  struct rct_qp_counters qa, qb;
  struct rct_dev_counters da, db;
  struct impair_counters la, lb;
  uint64_t cpu_ns[2], cpu_calls[2], copy_bytes;
  uint64_t tmo_cause[SIM_TMO_CAUSES];   /* a's timeouts by cause (sim.h) */
  double wall_s;
};

/* Run one scenario. trace: optional FILE for the per-frame trace;
 * measure_cpu: 0 or an enum sim_clock to time the core's calls. */
void scenario_run(const struct scenario *sc, struct scenario_result *res, FILE *trace,
                  int measure_cpu);

const char *sc_op_name(enum rct_wr_opcode op);

#endif
