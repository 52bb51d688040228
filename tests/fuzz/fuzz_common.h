/*
 * fuzz_common.h: shared pieces of the libFuzzer targets: an MR table whose
 * buffers are separate exact-size heap blocks (so AddressSanitizer flags any
 * access outside an MR) with canaries around them, and an endpoint factory.
 */
#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include "rct.h"
#include "rct_int.h"
#include "host_mr.h"

#define FZ_PD 1
#define FZ_LKEY(i) (0x200u + (uint32_t)(i))   /* MR i's lkey */
#define FZ_RKEY(i) (0x100u + (uint32_t)(i))   /* MR i's rkey: what the corpus' frames carry */
struct fz_ep {
  struct rct_dev dev;
  struct rct_qp qp;
  struct rct_send_wqe sq[16];
  struct rct_recv_wqe rq[16];
  struct rct_rd_res rd[4];
  struct rct_cq scq, rcq;
  struct rct_wc swc[64], rwc[64];
  struct host_mr_table mrs;    /* the device's mr_ctx */
};

static struct rct_qp *fz_lookup(void *ctx, uint32_t qpn)
{
  struct fz_ep *e = ctx;
  return qpn == e->qp.base.init.qpn ? &e->qp : NULL;
}

static const uint8_t FZ_MAC_A[6] = { 0x52, 0x54, 0, 0, 0, 0x0a }, FZ_MAC_B[6] = { 0x52, 0x54, 0, 0, 0, 0x0b };

/* Endpoint A (10.0.0.1, QPN 0x11) connected to B (10.0.0.2, QPN 0x11), in RTS. */
static void fz_ep_init(struct fz_ep *e, bool sr, enum rct_mtu mtu, uint32_t psn)
{
  struct rct_dev_attr da;
  struct rct_qp_init_attr ia;
  struct rct_qp_attr a;
  memset(e, 0, sizeof(*e));
  memset(&da, 0, sizeof(da));
  memcpy(da.mac, FZ_MAC_A, 6);
  da.ipv4 = 0x0a000001;
  da.mr_ops = &host_mr_ops;
  da.mr_ctx = &e->mrs;
  da.qp_lookup = fz_lookup;
  da.lookup_ctx = e;
  rct_dev_init(&e->dev, &da);
  rct_cq_init(&e->scq, e->swc, 64);
  rct_cq_init(&e->rcq, e->rwc, 64);
  memset(&ia, 0, sizeof(ia));
  ia.qpn = 0x11; ia.pd = FZ_PD;
  ia.sq = e->sq; ia.sq_size = 16; ia.rq = e->rq; ia.rq_size = 16; ia.rd = e->rd; ia.rd_size = 4;
  ia.send_cq = &e->scq; ia.recv_cq = &e->rcq;
  rct_qp_init(&e->dev, &e->qp, &ia);
  memset(&a, 0, sizeof(a));
  a.qp_state = RCT_QPS_INIT;
  a.qp_access_flags = RCT_ACCESS_REMOTE_WRITE | RCT_ACCESS_REMOTE_READ | RCT_ACCESS_REMOTE_ATOMIC;
  a.port_num = RCT_PORT_NUM;
  rct_qp_modify(&e->qp, &a, RCT_QP_STATE | RCT_QP_ACCESS_FLAGS | RCT_QP_PKEY_INDEX | RCT_QP_PORT);
  a.qp_state = RCT_QPS_RTR;
  memcpy(a.ah.dmac, FZ_MAC_B, 6);
  a.ah.dipv4 = 0x0a000002;
  a.path_mtu = mtu;
  a.dest_qp_num = 0x11;
  a.rq_psn = psn;
  a.max_dest_rd_atomic = 4;
  a.min_rnr_timer = 1;
  a.sr_enable = sr;
  rct_qp_modify(&e->qp, &a, RCT_QP_STATE | RCT_QP_AV | RCT_QP_PATH_MTU | RCT_QP_DEST_QPN | RCT_QP_RQ_PSN |
                RCT_QP_MAX_DEST_RD_ATOMIC | RCT_QP_MIN_RNR_TIMER | RCT_QP_SR);
  a.qp_state = RCT_QPS_RTS;
  a.sq_psn = psn;
  a.timeout = 10;
  a.retry_cnt = 3;
  a.rnr_retry = 3;
  a.max_rd_atomic = 4;
  rct_qp_modify(&e->qp, &a, RCT_QP_STATE | RCT_QP_SQ_PSN | RCT_QP_TIMEOUT | RCT_QP_RETRY_CNT |
                RCT_QP_RNR_RETRY | RCT_QP_MAX_QP_RD_ATOMIC);
}

/* MR number i (keys FZ_LKEY(i), FZ_RKEY(i)) in the QP's PD. */
static struct host_mr *fz_mr(struct fz_ep *e, int i, uint64_t va, uint32_t len, uint32_t access)
{
  uint8_t *buf = malloc(len);
  struct host_mr *m = host_mr_reg(&e->mrs, FZ_LKEY(i), FZ_RKEY(i), FZ_PD, va, len, access, buf);
  if (!m)
    abort();
  memset(buf, 0x3c, len);
  return m;
}

static void fz_ep_free(struct fz_ep *e)
{
  for (int i = 0; i < HOST_MR_MAX; i++)
    free(e->mrs.mr[i].buf);
  rct_qp_destroy(&e->qp);
}

#endif
