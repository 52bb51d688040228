/*
 * sim.h: the host simulator: two RC transport endpoints (kernel/transport,
 * rct.h) wired through the virtual-time lossy link (sim_link.h).
 *
 * Each endpoint is an rct device with one QP, a send and a receive CQ, and a
 * small table of host-buffer MRs. The event loop (sim_run) owns the clock: it
 * drains both endpoints' transmit queues into the link, lets the caller's
 * step function post work and poll completions, then jumps the clock to the
 * next event (a frame departure or either endpoint's next timeout), delivers
 * due frames and runs expired timers. It never sleeps; virtual time is free.
 * Each endpoint has a bounded NIC transmit ring (tx_ring_bytes of
 * serialization backlog on its direction of the link): the core is polled
 * for its next frame only when the ring has room, as a driver would, so a
 * responder cannot bury the link under an unbounded queue of responses.
 *
 * Endpoint 0 ("a") sends on SIM_A2B, endpoint 1 ("b") on SIM_B2A.
 */
#ifndef SIM_H
#define SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "rct.h"
#include "host_mr.h"
#include "sim_link.h"

#define SIM_FRAME_MAX 16384
#define SIM_RD_ATOMIC RCT_MAX_RD_ATOMIC   /* READ resources per QP, and the default READ credit */
#define SIM_TX_RING_DEFAULT (256u << 10)   /* bytes of serialization backlog per NIC */

struct sim_ep {
  struct rct_dev dev;
  struct rct_qp qp;
  struct rct_send_wqe *sq;
  struct rct_recv_wqe *rq;
  struct rct_rd_res *rd;
  struct rct_wc *scq_ring, *rcq_ring;
  struct rct_cq scq, rcq;
  struct host_mr_table mrs;     /* the device's mr_ctx (tests/host/host_mr.h) */
  int nmr;                      /* MRs registered (their VAs and keys derive from it) */
  uint32_t pd;
  uint64_t cpu_ns;              /* time inside the core (when measuring) */
  uint64_t cpu_calls;           /* timed calls (to subtract the clock's own cost) */
  uint64_t copy_bytes;          /* payload bytes the core placed or sent */
  uint64_t frames_tx, frames_rx;
  uint8_t staged[SIM_FRAME_MAX];  /* a polled frame waiting for ring space */
  uint32_t staged_len;            /* 0 = none */
};

/* QP parameters both endpoints share. */
struct sim_params {
  enum rct_mtu mtu;
  uint8_t timeout;              /* IBTA local ACK timeout code */
  uint8_t retry_cnt, rnr_retry, min_rnr_timer;
  bool sr;                      /* selective repeat on both ends */
  bool adaptive_rto;
  uint64_t min_rto_ns;
  uint64_t probe_slack_ns;      /* early probe slack [REQ-TMO-10]; 0 = core default */
  uint32_t max_inflight;        /* 0 = core default */
  uint32_t psn_a, psn_b;        /* starting PSNs of a's and b's send queues */
  uint32_t dev_flags;           /* RCT_DEV_* (ICRC offload) */
  uint32_t sq_size, rq_size;    /* powers of 2 */
  uint64_t seed;                /* QPNs and keys are derived from it */
  uint64_t tx_ring_bytes;       /* NIC ring: link backlog limit per direction; 0 = unbounded */
  uint8_t rd_atomic;            /* max_rd_atomic = max_dest_rd_atomic on both ends; 0 = SIM_RD_ATOMIC */
};

/* Why a retransmission timeout of endpoint a fired, judged from the first
 * PSN it still missed news of (the first unacknowledged, unsacked one) and
 * the link's fate of that PSN's last copy: its only copy was lost (lost
 * tail data), its last resend was lost, or it arrived and an ACK or
 * selective NAK from b after it was lost, or it arrived and nothing from b
 * after it was lost (no answer was due). */
enum { SIM_TMO_TAIL = 0, SIM_TMO_RESEND, SIM_TMO_ACK, SIM_TMO_UNANSWERED, SIM_TMO_CAUSES };
extern const char *const sim_tmo_cause_name[SIM_TMO_CAUSES];

/* The fate of the last copy of a request PSN a sent (indexed PSN % size). */
#define SIM_TXLOG 4096
struct sim_txlog {
  uint32_t psn;
  uint32_t sends;               /* copies sent */
  uint8_t lost;                 /* the last copy was dropped */
  uint64_t at;                  /* when the last copy was sent */
};

struct sim {
  struct sim_ep ep[2];
  struct sim_txlog txlog[SIM_TXLOG];
  uint64_t b2a_lost_at;         /* when the link last dropped a frame from b */
  uint64_t tmo_cause[SIM_TMO_CAUSES];   /* a's timeouts by cause */
  struct sim_link link;
  uint64_t now;
  uint64_t iterations;
  uint64_t tx_ring_bytes;
  int measure_cpu;              /* 0, or the clock timing each core call (sim_clock) */
  struct rct_frame frame;
};

/* Clocks for measure_cpu: wall time (cheap to read, counts preemption) or
 * the thread's CPU time (a system call per read, ignores preemption). */
enum sim_clock { SIM_CLOCK_NONE = 0, SIM_CLOCK_WALL, SIM_CLOCK_THREAD };
uint64_t sim_clock_ns(int clock);

/* Results of sim_run. */
enum { SIM_DONE = 0, SIM_STALL = -1, SIM_TIMELIMIT = -2, SIM_STEPFAIL = -3, SIM_LIVELOCK = -4 };
extern const char *const sim_result_name[5];   /* index: -result */

void sim_default_params(struct sim_params *p);

/* Create both endpoints (QPs in RTS) and the link. Returns 0 or -1 + err. */
int sim_init(struct sim *s, const struct sim_params *p, const char *a2b, const char *b2a,
             char *err, size_t errlen);
void sim_free(struct sim *s);

/* Register host memory on an endpoint at a fixed VA (not the host pointer,
 * so that traces do not depend on malloc's addresses); returns the MR
 * (lkey and rkey set). */
const struct host_mr *sim_mr_reg(struct sim_ep *ep, uint8_t *base, uint64_t len, uint32_t access);

/* The step callback: post work, poll CQs. Returns 0 to continue, 1 when the
 * scenario is complete, -1 on a failed check (sim_run stops). */
typedef int (*sim_step_fn)(struct sim *s, void *ctx);

/* Run until step says done, nothing can happen any more (stall), or the
 * clock would pass `limit_ns`. Returns SIM_DONE / SIM_STALL / SIM_TIMELIMIT /
 * SIM_STEPFAIL, or SIM_LIVELOCK if the clock stops advancing (a deadline in
 * the past that handle_timeout never moves). */
int sim_run(struct sim *s, sim_step_fn step, void *ctx, uint64_t limit_ns);

#endif
