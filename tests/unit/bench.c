/*
 * bench.c: frames per second per core through the transport core
 * (`make bench-core`). Receive: a responder executes in-sequence RDMA WRITE
 * packets (parse, ICRC check, QP lookup, PSN/opcode/length/R_Key checks,
 * placement, coalesced ACKs out). Transmit: a requester produces WRITE
 * packets (headers, zero-copy payload segments, ICRC) and consumes their
 * ACKs. Each at several payload sizes, with software ICRC and with the
 * ICRC offloaded to the NIC (RCT_DEV_ICRC_OFFLOAD). Single thread.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "rct.h"
#include "rct_int.h"
#include "host_mr.h"

struct bep {
  struct rct_dev dev;
  struct rct_qp qp;
  struct rct_send_wqe sq[1024];
  struct rct_recv_wqe rq[16];
  struct rct_rd_res rd[16];
  struct rct_cq scq, rcq;
  struct rct_wc swc[4096], rwc[64];
  struct host_mr_table mrs;          /* the device's mr_ctx */
  struct host_mr *mr;                /* one 16 MiB MR */
};

static struct rct_qp *lookup(void *ctx, uint32_t qpn) { struct bep *e = ctx; return qpn == e->qp.base.init.qpn ? &e->qp : NULL; }

static const uint8_t MA[6] = { 2, 0, 0, 0, 0, 1 }, MB[6] = { 2, 0, 0, 0, 0, 2 };

static void ep(struct bep *e, const uint8_t *mac, uint32_t ip, uint32_t qpn, const uint8_t *pmac, uint32_t pip,
               uint32_t pqpn, uint32_t flags, enum rct_mtu mtu)
{
  struct rct_dev_attr da = { .ipv4 = ip, .flags = flags, .mr_ops = &host_mr_ops, .mr_ctx = &e->mrs,
                             .qp_lookup = lookup, .lookup_ctx = e };
  struct rct_qp_init_attr ia = { .qpn = qpn, .pd = 1, .sq = e->sq, .sq_size = 1024, .rq = e->rq, .rq_size = 16,
                                 .rd = e->rd, .rd_size = 16, .send_cq = &e->scq, .recv_cq = &e->rcq };
  struct rct_qp_attr a;
  memset(e, 0, sizeof(*e));
  memcpy(da.mac, mac, 6);
  rct_dev_init(&e->dev, &da);
  rct_cq_init(&e->scq, e->swc, 4096);
  rct_cq_init(&e->rcq, e->rwc, 64);
  rct_qp_init(&e->dev, &e->qp, &ia);
  memset(&a, 0, sizeof(a));
  a.qp_state = RCT_QPS_INIT;
  a.qp_access_flags = RCT_ACCESS_REMOTE_WRITE;
  a.port_num = RCT_PORT_NUM;
  rct_qp_modify(&e->qp, &a, RCT_QP_STATE | RCT_QP_ACCESS_FLAGS | RCT_QP_PKEY_INDEX | RCT_QP_PORT);
  a.qp_state = RCT_QPS_RTR;
  memcpy(a.ah.dmac, pmac, 6);
  a.ah.dipv4 = pip;
  a.path_mtu = mtu;
  a.dest_qp_num = pqpn;
  a.rq_psn = 0;
  a.max_dest_rd_atomic = 1;
  rct_qp_modify(&e->qp, &a, RCT_QP_STATE | RCT_QP_AV | RCT_QP_PATH_MTU | RCT_QP_DEST_QPN | RCT_QP_RQ_PSN |
                RCT_QP_MAX_DEST_RD_ATOMIC | RCT_QP_MIN_RNR_TIMER);
  a.qp_state = RCT_QPS_RTS;
  a.sq_psn = 0;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 1;
  a.max_inflight = 1u << 20;
  rct_qp_modify(&e->qp, &a, RCT_QP_STATE | RCT_QP_SQ_PSN | RCT_QP_TIMEOUT | RCT_QP_RETRY_CNT | RCT_QP_RNR_RETRY |
                RCT_QP_MAX_QP_RD_ATOMIC | RCT_QP_MAX_INFLIGHT);
  e->mr = host_mr_reg(&e->mrs, 0x42, 0x43, 1, 0x100000, 1 << 24,
                      RCT_ACCESS_LOCAL_WRITE | RCT_ACCESS_REMOTE_WRITE, calloc(1, 1 << 24));
}

static double secs(void)
{
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);   /* CPU time: the machine may be shared */
  return t.tv_sec + t.tv_nsec * 1e-9;
}

#define K 4096                 /* packets per replayed message */

static void run(uint32_t payload, bool offload)
{
  static struct bep a, b;
  static uint8_t *frames[K];
  static int flen[K];
  enum rct_mtu mtu = payload <= 256 ? RCT_MTU_256 : payload <= 1024 ? RCT_MTU_1024 : RCT_MTU_4096;
  uint32_t mtub = rct_mtu_bytes(mtu), flags = offload ? RCT_DEV_ICRC_OFFLOAD : 0;
  struct rct_frame f;
  struct rct_sge sge;
  struct rct_send_wr wr;
  double t0, rx_rate, tx_rate;
  long rounds, n = 0;
  if (payload > mtub)
    payload = mtub;
  ep(&a, MA, 0x0a000001, 0x11, MB, 0x0a000002, 0x12, flags, mtu);
  ep(&b, MB, 0x0a000002, 0x12, MA, 0x0a000001, 0x11, flags, mtu);
  /* One WRITE of K packets; for payloads below the MTU the LAST is the only short one,
   * so use K ONLY-writes instead. */
  sge.addr = a.mr->va;
  sge.lkey = a.mr->lkey;
  memset(&wr, 0, sizeof(wr));
  wr.opcode = RCT_WR_RDMA_WRITE;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.rkey = b.mr->rkey;
  /* --- transmit: build K packets, ACK them, repeat --- */
  rounds = 0;
  t0 = secs();
  do {
    for (int i = 0; i < K / 16; i++) {
      sge.length = payload == mtub ? 16 * mtub : payload;
      wr.remote_addr = b.mr->va;
      rct_post_send(&a.qp, &wr);
      if (payload != mtub)
        for (int j = 1; j < 16; j++)
          rct_post_send(&a.qp, &wr);
    }
    while (rct_poll_transmit(&a.qp, 0, &f)) {
      if (rounds == 0 && n < K) {
        frames[n] = malloc(f.len);
        flen[n] = rct_frame_linearize(&f, frames[n], f.len);
      }
      n++;
    }
    {
      /* one ACK for everything outstanding */
      struct rct_hdr h;
      static uint8_t ack[128];
      struct rct_iov none = { 0, 0 };
      uint32_t hl;
      memset(&h, 0, sizeof(h));
      memcpy(h.dmac, MA, 6); memcpy(h.smac, MB, 6);
      h.sip = 0x0a000002; h.dip = 0x0a000001; h.sport = 0xc000;
      h.bth.opcode = OP_ACK; h.bth.pkey = 0xffff; h.bth.dqpn = 0x11;
      h.bth.psn = psn_prev(a.qp.req.next_psn);
      h.aeth.syndrome = 0x1f;
      hl = rct_wire_build(ack, &h, 0);
      rct_wire_icrc_store(ack + hl, rct_icrc_compute(ack, hl, 14, RCT_ENCAP_V2, &none, 0, 0, 0));
      rct_handle_frame(&a.dev, 0, ack, hl + 4);
      a.scq.head = a.scq.tail;
    }
    rounds++;
  } while (secs() - t0 < 0.5);
  tx_rate = n / (secs() - t0);
  /* --- receive: replay the K captured packets into a fresh responder --- */
  n = 0;
  t0 = secs();
  do {
    b.qp.resp.epsn = 0;
    b.qp.resp.state = RCT_RESP_IDLE;
    for (int i = 0; i < K; i++) {
      rct_handle_frame(&b.dev, 0, frames[i], (size_t)flen[i]);
      while (rct_poll_transmit(&b.qp, 0, &f))
        ;
    }
    n += K;
  } while (secs() - t0 < 0.5);
  rx_rate = n / (secs() - t0);
  if (b.qp.base.cnt.rx_out_of_seq || b.qp.base.attr.qp_state != RCT_QPS_RTS || b.qp.base.cnt.tx_ack == 0)
    printf("  (warning: responder state %s, out_of_seq %llu)\n", rct_qp_state_name(b.qp.base.attr.qp_state),
           (unsigned long long)b.qp.base.cnt.rx_out_of_seq);
  printf("  payload %5u B  frame %5d B  ICRC %-8s  rx %6.2f Mframes/s  tx %6.2f Mframes/s\n", payload,
         flen[0], offload ? "offload" : "software", rx_rate / 1e6, tx_rate / 1e6);
  for (int i = 0; i < K; i++)
    free(frames[i]);
  free(a.mr->buf);
  free(b.mr->buf);
  rct_qp_destroy(&a.qp);
  rct_qp_destroy(&b.qp);
}

int main(void)
{
  static const uint32_t sizes[] = { 0, 64, 256, 1024, 4096 };
  printf("rct-bench: single core, RC WRITE packets (rx = responder incl. payload placement, "
         "tx = requester, zero-copy payload)\n");
  for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
    run(sizes[i], false);
    run(sizes[i], true);
  }
  return 0;
}
