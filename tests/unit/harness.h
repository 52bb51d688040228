/*
 * harness.h: the unit-test harness of the transport core.
 *
 * Owns: fake memory regions (with guard bytes checked at teardown), test
 * endpoints (a device + one QP + rings + CQs), a two-endpoint link pumped in
 * virtual time with a drop filter, and a scripted peer that injects
 * hand-built frames and parses what the endpoint sends ("inject this at t,
 * expect that at t', expect nothing until t''"). Every suite includes it.
 */
#ifndef HARNESS_H
#define HARNESS_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rct.h"
#include "rct_int.h"
#include "host_mr.h"

#define EP_SQ 64
#define EP_RQ 64
#define EP_RD 16
#define EP_CQ 512
#define GUARD 64
#define PAGE 4096

struct ep {
  struct rct_dev dev;
  struct rct_qp qp;
  struct rct_send_wqe sq[EP_SQ];
  struct rct_recv_wqe rq[EP_RQ];
  struct rct_rd_res rd[EP_RD];
  struct rct_cq scq, rcq;
  struct rct_wc swc[EP_CQ], rwc[EP_CQ];
  struct host_mr_table mrs;  /* the device's mr_ctx; each buf has GUARD bytes either side */
  int nmr;                   /* MRs registered so far (they pick the default keys) */
  uint32_t pd;
  bool allow_bad_frames;     /* the test injects malformed frames on purpose */
};

/* Connection options. */
struct conn_opts {
  enum rct_mtu mtu;
  uint32_t a_psn, b_psn;     /* sq_psn of A and of B */
  uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
  uint8_t rd_atomic;
  bool sr, adaptive;
  uint32_t access;
  uint32_t max_inflight;
  uint64_t probe_slack_ns;   /* early probe slack [REQ-TMO-10]; 0 = the default */
};

extern const uint8_t MAC_A[6], MAC_B[6];
#define IP_A 0x0a000001u
#define IP_B 0x0a000002u
#define QPN_A 0x11u
#define QPN_B 0x12u

void ep_init(struct ep *e, const uint8_t mac[6], uint32_t ip, uint32_t qpn, uint32_t flags);
void ep_free(struct ep *e);               /* checks guards; frees MRs */
/* An MR in e's PD, filled with a pattern; keys 0x1000 + 0x111 * n (lkey), 0x8000 + 0x111 * n (rkey). */
struct host_mr *ep_reg_mr(struct ep *e, uint64_t va, uint32_t len, uint32_t access);
struct host_mr *ep_reg_mr_keys(struct ep *e, uint32_t lkey, uint32_t rkey, uint64_t va, uint32_t len,
                               uint32_t access);
void conn_defaults(struct conn_opts *o);
/* Bring e to RTS connected to the peer (mac/ip/qpn). */
void ep_connect(struct ep *e, const uint8_t pmac[6], uint32_t pip, uint32_t pqpn,
                uint32_t rq_psn, uint32_t sq_psn, const struct conn_opts *o);
void pair_connect(struct ep *a, struct ep *b, const struct conn_opts *o);

/* Posting helpers. */
int post_send(struct ep *e, uint64_t wr_id, enum rct_wr_opcode op, struct host_mr *mr, uint32_t off,
              uint32_t len, uint64_t raddr, uint32_t rkey, uint32_t imm);
int post_recv(struct ep *e, uint64_t wr_id, struct host_mr *mr, uint32_t off, uint32_t len);

/* Link: deliver frames both ways until quiet, firing timers up to `until`.
 * drop(ctx, from_a, frame_no_from_that_side, pkt) returns true to drop. */
typedef bool (*drop_fn)(void *ctx, bool from_a, unsigned n, const struct rct_pkt *p);
struct link {
  drop_fn drop;
  void *ctx;
  unsigned sent_a, sent_b, dropped;
  uint64_t now;
  uint64_t latency;          /* ns per hop */
};
void link_init(struct link *l);
/* Run until nothing happens before `until`; returns the final virtual time. */
uint64_t link_run(struct link *l, struct ep *a, struct ep *b, uint64_t until);

/* Scripted peer. */
struct peer {
  uint8_t mac[6];
  uint32_t ip, qpn;
  uint16_t sport;
  uint16_t ip_id;
};
void peer_for(struct peer *p, const struct ep *e);   /* the peer e is connected to */
/* Build and inject one frame (h: opcode, psn, ackreq, reth, aeth, imm set by caller). */
enum rct_rx_result inject(struct ep *e, const struct peer *pr, uint64_t now, struct rct_hdr *h,
                          const void *payload, uint32_t len);
/* Build only; returns the length in buf. */
uint32_t build_frame(uint8_t *buf, const struct ep *e, const struct peer *pr, struct rct_hdr *h,
                     const void *payload, uint32_t len);
/* Poll one frame from e and parse it (ICRC checked). Returns 1 or 0. */
int expect_frame(struct ep *e, uint64_t now, struct rct_pkt *p, uint8_t *buf);
/* Assert that e sends nothing now. */
void expect_nothing_(struct ep *e, uint64_t now, const char *file, int line);
#define expect_nothing(e, now) expect_nothing_((e), (now), __FILE__, __LINE__)

int cq_pop(struct rct_cq *cq, struct rct_wc *wc);   /* 1 or 0 */

/* Suites. */
Suite *suite_psn(void);
Suite *suite_wire(void);
Suite *suite_vectors(void);
Suite *suite_opcode(void);
Suite *suite_qp(void);
Suite *suite_req(void);
Suite *suite_resp(void);
Suite *suite_comp(void);
Suite *suite_sr(void);
Suite *suite_ibcm(void);
Suite *suite_ibcm_linux(void);

/* The captures' directory: RCT_VECTORS, or tests/vectors (the top Makefile's VECTORS_DIR). */
const char *vectors_dir(void);
Suite *suite_rx(void);
Suite *suite_mr_contract(void);
Suite *suite_event(void);
Suite *suite_ud(void);
Suite *suite_atomic(void);
Suite *suite_rmem_wire(void);

#endif

/* Scripted-peer shorthands. */
enum rct_rx_result inject_ack(struct ep *e, const struct peer *pr, uint64_t now, uint8_t syn, uint32_t psn,
                              uint32_t msn);
/* A request packet: opcode, psn, ackreq, payload (len bytes of pattern byte `fill`). */
enum rct_rx_result inject_req(struct ep *e, const struct peer *pr, uint64_t now, uint8_t opcode, uint32_t psn,
                              bool ackreq, uint32_t len, uint8_t fill, const struct rct_reth *reth, uint32_t imm);
/* Standard one-endpoint fixture: A connected to a scripted peer. */
struct ep *fx_a(void);
struct peer *fx_peer(void);
void fx_setup_opts(const struct conn_opts *o);
void fx_setup(void);
void fx_teardown(void);
/* Pop one completion and check status/wr_id. */
void expect_wc_(struct rct_cq *cq, uint64_t wr_id, enum rct_wc_status st, const char *file, int line);
#define expect_wc(cq, id, st) expect_wc_((cq), (id), (st), __FILE__, __LINE__)
void expect_no_wc_(struct rct_cq *cq, const char *file, int line);
#define expect_no_wc(cq) expect_no_wc_((cq), __FILE__, __LINE__)
/* frame_icrc.c: the ICRC of a whole frame (RCT_OK / RCT_EINVAL), and storing it. */
int frame_icrc(const uint8_t *buf, size_t len, uint32_t *icrc);
int frame_set_icrc(uint8_t *buf, size_t len);
