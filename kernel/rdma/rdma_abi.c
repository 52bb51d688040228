// rdma_abi.c: where the verbs ABI (lib/uapi.h) meets the transport core.
//
// Owns the proof that the two agree and the one translation left. The
// static assertions below fail the build if a libibverbs value in uapi.h
// (IBV_WR_*, IBV_SEND_*, IBV_WC_*, IBV_ACCESS_*, IBV_QPS_*, IBV_MTU_*)
// differs from the core's, or if a work request, SGE or completion of the
// ABI is laid out other than the core's struct: so system calls copy WRs
// and completions in and out as they are, and pass values straight
// through. What does differ is the attribute mask of modify_qp (the core
// numbers its bits densely) and struct rdma_qp_attr (libibverbs fields the
// core has no use for, the AV flattened): rdma_qp_attr_in/out translate.
#include "lib/types.h"
#include "lib/klib.h"
#include "rdma/rdma.h"

#define SAME(a, b) _Static_assert((int)(a) == (int)(b), #a " == " #b)
#define SAME_FIELD(abi, core, f) \
  _Static_assert(offsetof(struct abi, f) == offsetof(struct core, f) && \
                 sizeof(((struct abi *)0)->f) == sizeof(((struct core *)0)->f), \
                 "struct " #abi "." #f " is struct " #core "." #f)

// Values: each IBV_ name of uapi.h has the value of the core's RCT_ name.
#define IS_CORE_WR(x) SAME(IBV_WR_##x, RCT_WR_##x)
IS_CORE_WR(RDMA_WRITE); IS_CORE_WR(RDMA_WRITE_WITH_IMM); IS_CORE_WR(SEND);
IS_CORE_WR(SEND_WITH_IMM); IS_CORE_WR(RDMA_READ);
#define IS_CORE_SEND(x) SAME(IBV_SEND_##x, RCT_SEND_##x)
IS_CORE_SEND(FENCE); IS_CORE_SEND(SIGNALED); IS_CORE_SEND(SOLICITED);
#define IS_CORE_WC(x) SAME(IBV_WC_##x, RCT_WC_##x)
IS_CORE_WC(SUCCESS); IS_CORE_WC(LOC_LEN_ERR); IS_CORE_WC(LOC_QP_OP_ERR);
IS_CORE_WC(LOC_EEC_OP_ERR); IS_CORE_WC(LOC_PROT_ERR); IS_CORE_WC(WR_FLUSH_ERR);
IS_CORE_WC(MW_BIND_ERR); IS_CORE_WC(BAD_RESP_ERR); IS_CORE_WC(LOC_ACCESS_ERR);
IS_CORE_WC(REM_INV_REQ_ERR); IS_CORE_WC(REM_ACCESS_ERR); IS_CORE_WC(REM_OP_ERR);
IS_CORE_WC(RETRY_EXC_ERR); IS_CORE_WC(RNR_RETRY_EXC_ERR); IS_CORE_WC(LOC_RDD_VIOL_ERR);
IS_CORE_WC(REM_INV_RD_REQ_ERR); IS_CORE_WC(REM_ABORT_ERR); IS_CORE_WC(INV_EECN_ERR);
IS_CORE_WC(INV_EEC_STATE_ERR); IS_CORE_WC(FATAL_ERR); IS_CORE_WC(RESP_TIMEOUT_ERR);
IS_CORE_WC(GENERAL_ERR); IS_CORE_WC(SEND); IS_CORE_WC(RDMA_WRITE); IS_CORE_WC(RDMA_READ);
IS_CORE_WC(RECV); IS_CORE_WC(RECV_RDMA_WITH_IMM); IS_CORE_WC(WITH_IMM);
#define IS_CORE_ACCESS(x) SAME(IBV_ACCESS_##x, RCT_ACCESS_##x)
IS_CORE_ACCESS(LOCAL_WRITE); IS_CORE_ACCESS(REMOTE_WRITE); IS_CORE_ACCESS(REMOTE_READ);
IS_CORE_ACCESS(REMOTE_ATOMIC);
#define IS_CORE_QPS(x) SAME(IBV_QPS_##x, RCT_QPS_##x)
IS_CORE_QPS(RESET); IS_CORE_QPS(INIT); IS_CORE_QPS(RTR); IS_CORE_QPS(RTS); IS_CORE_QPS(SQD);
IS_CORE_QPS(SQE); IS_CORE_QPS(ERR);
#define IS_CORE_MTU(x) SAME(IBV_MTU_##x, RCT_MTU_##x)
IS_CORE_MTU(256); IS_CORE_MTU(512); IS_CORE_MTU(1024); IS_CORE_MTU(2048); IS_CORE_MTU(4096);
#define IS_CORE_WR(x) SAME(IBV_WR_##x, RCT_WR_##x)
IS_CORE_WR(RDMA_WRITE); IS_CORE_WR(RDMA_WRITE_WITH_IMM); IS_CORE_WR(SEND); IS_CORE_WR(SEND_WITH_IMM);
IS_CORE_WR(RDMA_READ); IS_CORE_WR(ATOMIC_CMP_AND_SWP); IS_CORE_WR(ATOMIC_FETCH_AND_ADD);
SAME(IBV_WR_ATOMIC_FETCH_AND_ADD + 1, RCT_WR_COUNT);   // the core takes every opcode up to the atomics
IS_CORE_WC(COMP_SWAP); IS_CORE_WC(FETCH_ADD);
SAME(IBV_WC_GENERAL_ERR + 1, RCT_WC_STATUS_COUNT);

SAME(RDMA_MAX_SGE, RCT_MAX_SGE);

// Layouts: the ABI struct is the core's, field for field. For WRs,
// sg_list is the user's address going in; the kernel's copy of the SGEs
// replaces it before the core sees the WR.
#define SGE(f) SAME_FIELD(ibv_sge, rct_sge, f)
#define SEND(f) SAME_FIELD(rdma_send_wr, rct_send_wr, f)
#define RECV(f) SAME_FIELD(rdma_recv_wr, rct_recv_wr, f)
#define WC(f) SAME_FIELD(rdma_wc, rct_wc, f)
_Static_assert(sizeof(struct ibv_sge) == sizeof(struct rct_sge), "SGE size");
SGE(addr); SGE(length); SGE(lkey);
_Static_assert(sizeof(struct rdma_send_wr) == sizeof(struct rct_send_wr), "send WR size");
SEND(wr_id); SEND(opcode); SEND(send_flags); SEND(sg_list); SEND(num_sge); SEND(imm_data);
SEND(remote_addr); SEND(rkey); SEND(compare_add); SEND(swap);
// A UD WR's ud_* fields share remote_addr, rkey and pad's bytes: the front
// end (uverbs.c) reads them from its copy of the WR as struct rdma_send_wr.
_Static_assert(offsetof(struct rdma_send_wr, ud_ah) == offsetof(struct rct_send_wr, remote_addr) &&
               offsetof(struct rdma_send_wr, ud_pad) + 4 == offsetof(struct rct_send_wr, compare_add),
               "UD WR fields");
SAME(RDMA_QKEY_CONTROLLED, RCT_QKEY_CONTROLLED);
SAME(RDMA_GSI_QPN, RCT_QPN_GSI);
_Static_assert(sizeof(struct rdma_recv_wr) == sizeof(struct rct_recv_wr), "recv WR size");
RECV(wr_id); RECV(sg_list); RECV(num_sge);
_Static_assert(sizeof(struct rdma_wc) == sizeof(struct rct_wc), "WC size");
WC(wr_id); WC(status); WC(opcode); WC(byte_len); WC(imm_data); WC(wc_flags); WC(qp_num);
WC(src_qp); WC(vendor_err); WC(solicited);
// A mapped CQ ring (uverbs.c ring_move): the kernel's indices and the
// process's consumer index in cache lines of their own, entries 8-aligned.
_Static_assert(offsetof(struct rdma_cq_ring, cons) == 64 && offsetof(struct rdma_cq_ring, wc) == 128,
               "CQ ring layout");
// Mapped send and receive rings (uverbs.c uv_doorbell): the same, and the
// entries' inline SGEs are the core's SGEs (the kernel copies them as they are).
_Static_assert(offsetof(struct rdma_wq_ring, prod) == 64 && sizeof(struct rdma_wq_ring) == 128 &&
               offsetof(struct rdma_sq_ring, e) == 128 && offsetof(struct rdma_rq_ring, e) == 128,
               "send/receive ring layout");

// modify_qp's mask: IBV_QP_* (and RDMA_QP_*) bit -> the core's bit.
static const struct { uint32 ibv, rct; } mask_map[] = {
  { IBV_QP_STATE, RCT_QP_STATE }, { IBV_QP_CUR_STATE, RCT_QP_CUR_STATE },
  { IBV_QP_ACCESS_FLAGS, RCT_QP_ACCESS_FLAGS }, { IBV_QP_PKEY_INDEX, RCT_QP_PKEY_INDEX },
  { IBV_QP_AV, RCT_QP_AV }, { IBV_QP_PATH_MTU, RCT_QP_PATH_MTU },
  { IBV_QP_TIMEOUT, RCT_QP_TIMEOUT }, { IBV_QP_RETRY_CNT, RCT_QP_RETRY_CNT },
  { IBV_QP_RNR_RETRY, RCT_QP_RNR_RETRY }, { IBV_QP_RQ_PSN, RCT_QP_RQ_PSN },
  { IBV_QP_MAX_QP_RD_ATOMIC, RCT_QP_MAX_QP_RD_ATOMIC }, { IBV_QP_MIN_RNR_TIMER, RCT_QP_MIN_RNR_TIMER },
  { IBV_QP_SQ_PSN, RCT_QP_SQ_PSN }, { IBV_QP_MAX_DEST_RD_ATOMIC, RCT_QP_MAX_DEST_RD_ATOMIC },
  { IBV_QP_DEST_QPN, RCT_QP_DEST_QPN }, { RDMA_QP_SR, RCT_QP_SR },
  { RDMA_QP_ADAPTIVE_RTO, RCT_QP_ADAPTIVE_RTO }, { RDMA_QP_MAX_INFLIGHT, RCT_QP_MAX_INFLIGHT },
  { IBV_QP_PORT, RCT_QP_PORT }, { IBV_QP_QKEY, RCT_QP_QKEY },
};
// Not in the map, so refused (EINVAL) like every other unlisted bit
// ([QP-STATE-2]): IBV_QP_EN_SQD_ASYNC_NOTIFY (no SQ-drained event is
// raised; errors.md). IBV_QP_QKEY is a UD QP's; the core refuses it for RC.

// The core's mask for an ABI mask, or -1 for a bit it does not take.
static int64 mask_in(uint32 ibv_mask) {
  uint32 known = RDMA_QP_ROCE_V1, rct_mask = 0;
  for (int i = 0; i < (int)ARRAY_LEN(mask_map); i++) {
    known |= mask_map[i].ibv;
    if (ibv_mask & mask_map[i].ibv) rct_mask |= mask_map[i].rct;
  }
  if (ibv_mask & ~known) return -1;              // ALT_PATH, CAP, ...: not supported
  if ((ibv_mask & RDMA_QP_ROCE_V1) && !(ibv_mask & IBV_QP_AV)) return -1;  // qualifies the AV only
  return rct_mask;
}

// The ABI's mask (IBV_QP_* | RDMA_QP_*) for the core's.
uint32 rdma_qp_mask_out(uint32 rct_mask) {
  uint32 m = 0;
  for (int i = 0; i < (int)ARRAY_LEN(mask_map); i++)
    if (rct_mask & mask_map[i].rct) m |= mask_map[i].ibv;
  return m;
}

// Caller holds rdma.lock (the neighbour table). The core's attributes
// and mask for modify_qp's; -1 for an unknown mask bit, a READ depth
// past RDMA_MAX_RD or an AV whose peer MAC is unknown.
int rdma_qp_attr_in(const struct rdma_qp_attr *a, uint32 ibv_mask,
                    struct rct_qp_attr *r, uint32 *rct_mask) {
  int64 m = mask_in(ibv_mask);
  if (m < 0 || a->max_dest_rd_atomic > RDMA_MAX_RD || a->max_rd_atomic > RDMA_MAX_RD) return -1;
  *rct_mask = (uint32)m;
  memset(r, 0, sizeof *r);
  r->qp_state = (enum rct_qp_state)a->qp_state;
  r->cur_qp_state = (enum rct_qp_state)a->cur_qp_state;
  r->qp_access_flags = a->qp_access_flags;
  r->pkey_index = a->pkey_index > 0xffff ? 0xffff : (uint16)a->pkey_index;
  r->port_num = a->port_num > 0xff ? 0xff : (uint8)a->port_num;
  r->path_mtu = (enum rct_mtu)a->path_mtu;
  r->timeout = (uint8)a->timeout;
  r->retry_cnt = (uint8)a->retry_cnt;
  r->rnr_retry = (uint8)a->rnr_retry;
  r->min_rnr_timer = (uint8)a->min_rnr_timer;
  r->rq_psn = a->rq_psn;
  r->sq_psn = a->sq_psn;
  r->max_rd_atomic = (uint8)a->max_rd_atomic;
  r->max_dest_rd_atomic = (uint8)a->max_dest_rd_atomic;
  r->dest_qp_num = a->dest_qp_num;
  r->sr_enable = a->sr_enable != 0;
  r->adaptive_rto = a->adaptive_rto != 0;
  r->min_rto_ns = a->min_rto_ns;
  r->max_inflight = a->max_inflight;
  r->qkey = a->qkey;
  if (!(ibv_mask & IBV_QP_AV)) return 0;
  static const uint8 zero[6];
  r->ah.dipv4 = a->dipv4;
  r->ah.ttl = a->hop_limit;
  r->ah.dscp = a->traffic_class >> 2;
  r->ah.roce_v1 = (ibv_mask & RDMA_QP_ROCE_V1) != 0;
  if (memcmp(a->dmac, zero, 6) != 0) memcpy(r->ah.dmac, a->dmac, 6);
  else if (rdma_neigh_lookup(a->dipv4, r->ah.dmac) < 0) return -1;
  return 0;
}

// query_qp's answer from the core's attributes (the caller fills the
// queue sizes, which are the slot's).
void rdma_qp_attr_out(const struct rct_qp_attr *r, struct rdma_qp_attr *a) {
  a->qp_state = r->qp_state;
  a->cur_qp_state = r->qp_state;
  a->path_mtu = r->path_mtu;
  a->qp_access_flags = r->qp_access_flags;
  a->rq_psn = r->rq_psn;
  a->sq_psn = r->sq_psn;
  a->dest_qp_num = r->dest_qp_num;
  a->timeout = r->timeout;
  a->retry_cnt = r->retry_cnt;
  a->rnr_retry = r->rnr_retry;
  a->min_rnr_timer = r->min_rnr_timer;
  a->max_rd_atomic = r->max_rd_atomic;
  a->max_dest_rd_atomic = r->max_dest_rd_atomic;
  a->dipv4 = r->ah.dipv4;
  memcpy(a->dmac, r->ah.dmac, 6);
  a->hop_limit = r->ah.ttl;
  a->traffic_class = (uint8)(r->ah.dscp << 2);
  a->sr_enable = r->sr_enable;
  a->adaptive_rto = r->adaptive_rto;
  a->min_rto_ns = r->min_rto_ns;
  a->max_inflight = r->max_inflight;
  a->qkey = r->qkey;
}
