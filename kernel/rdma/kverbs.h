// kverbs.h: the kernel's verbs API, the one header a kernel consumer of
// RDMA includes (the role of Linux's ib_core verbs).
//
// It knows no process. Every object (PD, MR, CQ, QP, SRQ, AH) is a kernel pointer
// and belongs to an owner, a struct kv_owner the caller supplies and keeps
// alive while it owns objects: the per-process front end (uverbs.c) has
// one per process, a kernel consumer its own. Each call names the owner
// and fails (-1, nothing changed) for an object that is not live or not
// that owner's; the API never panics on a bad argument.
//
// Unless a comment says otherwise, a call takes rdma.lock itself: the
// caller holds no RDMA lock, and it may be any kernel thread or a system
// call. Work requests and completions are the transport core's structs
// (struct rct_send_wr / rct_recv_wr with their SGEs in kernel memory,
// struct rct_wc); addresses in them are the MR's addresses (its `addr`
// at registration), translated through the MR's pages.
//
// Completion handler: a CQ may carry fn(cq, ctx, flags). The engine calls
// it after it has added completions to the CQ (at least once per batch:
// several completions may share one call; KV_COMP_SOLICITED if one of
// them is a solicited receive or an error), and once when the CQ overruns
// (KV_COMP_OVERRUN; the CQ is then in error and kv_poll_cq fails). It
// runs with rdma.lock held and interrupts off, on whatever thread moved
// the work: the "rdma" engine thread, the NIC's receive thread, or a
// caller of kv_post_send / kv_post_recv / kv_modify_qp on the same
// device (or a verb of the front end that runs the engine). So the
// handler must be short and must not sleep, must not call any kv_*
// function (it would take rdma.lock again), and may take only locks that
// are never held while calling into kv_*; it may record what it needs,
// proc_wakeup() a thread that polls, and poll_notify(). The owner's async handler follows the same rules.
#ifndef KVERBS_H
#define KVERBS_H
#include "lib/types.h"
#include "lib/riscv.h"
#include "lib/uapi.h"
#include "transport/rct.h"

struct rdma_pd;
struct rdma_mr;
struct rdma_cq;
struct rdma_qp;
struct rdma_ah;
struct rdma_srq;
struct kv_owner;

// An async event of one of the owner's objects: a CQ that overran
// (IBV_EVENT_CQ_ERR, cq set), a QP that entered ERR on a transport error
// (IBV_EVENT_QP_FATAL, qp set), a QP on an SRQ that entered ERR
// (IBV_EVENT_QP_LAST_WQE_REACHED, qp set, after its QP_FATAL), or an SRQ
// below its limit (IBV_EVENT_SRQ_LIMIT_REACHED, srq set) [SRQ-ERR-2]
// [SRQ-LIMIT-2].
struct kv_async_event {
  int type;                  // IBV_EVENT_*
  struct rdma_qp *qp;
  struct rdma_cq *cq;
  struct rdma_srq *srq;
};

// Who owns objects. async may be NULL (events dropped); it runs under
// rdma.lock with the completion handler's rules (above).
struct kv_owner {
  void (*async)(struct kv_owner *o, const struct kv_async_event *ev);
};

#define KV_COMP_SOLICITED 1u   // the batch holds a solicited receive or an error completion
#define KV_COMP_OVERRUN   2u   // a completion did not fit: the CQ is in error [IBTA 11.4.2.1]
typedef void (*kv_comp_fn)(struct rdma_cq *cq, void *ctx, uint32 flags);

// QP types (libibverbs' enum ibv_qp_type values, lib/uapi.h's RDMA_QPT_*).
#define KV_QPT_RC RDMA_QPT_RC
#define KV_QPT_UD RDMA_QPT_UD

// What kv_create_qp is asked for; it writes back what was granted.
struct kv_qp_init {
  int qp_type;                          // KV_QPT_*
  struct rdma_pd *pd;
  struct rdma_cq *send_cq, *recv_cq;    // the owner's
  uint32 max_send_wr, max_recv_wr;      // in: wanted (0 = 1); out: granted (a power of two)
  uint32 max_send_sge, max_recv_sge;    // in: wanted (0 = 1); out: granted
  int sq_sig_all;
  int gsi;                              // UD only: take QPN 1, the GSI's (IBTA 13.5.1; one at a time)
  struct rdma_srq *srq;                 // NULL, or the owner's SRQ in pd: receives come from it
                                        // (max_recv_wr, max_recv_sge ignored; granted 0)
  uint32 qp_num;                        // out: the QPN
};

// The device (one per kernel) and its counters.
void kv_query_device(struct rdma_device_info *out);
int  kv_query_port(int port, struct rdma_port_info *out);         // 0, or -1 (port 1 only)
void kv_dev_stats(struct rdma_dev_stats *s);                       // live_chans, async_dropped: 0

// One owner's live objects and the pool pages their rings hold, and at the
// same instant the ring pool's balance over every owner: pool_lost, the
// pages neither free nor held by a live ring (0 unless a destroy kept its
// pages).
struct kv_owner_stats {
  int pds, mrs, cqs, qps, ahs, srqs;
  int ring_pages, pool_lost;
};
void kv_owner_stats(const struct kv_owner *o, struct kv_owner_stats *s);

// Protection domains.
struct rdma_pd *kv_alloc_pd(struct kv_owner *o);                   // NULL: none left
int  kv_dealloc_pd(struct kv_owner *o, struct rdma_pd *pd);        // -1 while an MR or QP uses it

// Memory regions: [addr, addr + length) of a user page table (pinned page
// by page; writable pages if access allows writes), or of kernel pages
// pa[0..] (one per page the range touches, need not be adjacent; each
// gets a reference until deregistration). access: IBV_ACCESS_*. NULL for
// a bad argument, a PD that is not o's, or no slot; *keys on success.
struct rdma_mr *kv_reg_user_mr(struct kv_owner *o, struct rdma_pd *pd, pagetable_t pt,
                               uint64 addr, uint64 length, uint32 access,
                               struct rdma_mr_keys *keys);
struct rdma_mr *kv_reg_kernel_mr(struct kv_owner *o, struct rdma_pd *pd, uint64 addr,
                                 uint64 length, const uint64 *pa, uint32 access,
                                 struct rdma_mr_keys *keys);
int  kv_dereg_mr(struct kv_owner *o, struct rdma_mr *mr);          // -1 while a WR or the responder uses it

// Completion queues of cqe (1..max_cqe) entries, fn (may be NULL) called
// as described above. 0 and *out, -1 for a bad argument, or
// RDMA_NO_RESOURCES (no slot, or no pool pages for the ring).
int  kv_create_cq(struct kv_owner *o, int cqe, kv_comp_fn fn, void *ctx, struct rdma_cq **out);
int  kv_destroy_cq(struct kv_owner *o, struct rdma_cq *cq);        // -1 while a QP uses it
int  kv_poll_cq(struct kv_owner *o, struct rdma_cq *cq, struct rct_wc *wc, int n);   // taken, or -1 (overrun)

// Queue pairs. kv_create_qp: 0 and *out, -1, or RDMA_NO_RESOURCES.
// kv_modify_qp may sleep (resolving the peer's MAC when a->dmac is zero);
// mask is IBV_QP_* | RDMA_QP_* (lib/uapi.h), the state machine is IBTA
// 10.3.1's. Posting: how many WRs were accepted, *err the RDMA_E* reason
// the first refused one was refused for (0: none), or -1 for a QP that is
// not o's.
int  kv_create_qp(struct kv_owner *o, struct kv_qp_init *init, struct rdma_qp **out);
int  kv_destroy_qp(struct kv_owner *o, struct rdma_qp *qp);
int  kv_modify_qp(struct kv_owner *o, struct rdma_qp *qp, struct rdma_qp_attr *a, uint32 mask);
int  kv_query_qp(struct kv_owner *o, struct rdma_qp *qp, struct rdma_qp_attr *a);
int  kv_post_send(struct kv_owner *o, struct rdma_qp *qp, const struct rct_send_wr *wr, int n, int *err);
int  kv_post_recv(struct kv_owner *o, struct rdma_qp *qp, const struct rct_recv_wr *wr, int n, int *err);

// UD (proto-spec ud.md). A UD QP: kv_create_qp with KV_QPT_UD (no READ
// resources; its MTU is the port's). Its transitions: RESET->INIT with
// IBV_QP_STATE | PKEY_INDEX | PORT | QKEY, ->RTR with STATE, ->RTS with
// STATE | SQ_PSN. Its receives get the 40-byte GRH area first
// (RCT_WC_GRH, src_qp set). kv_post_send refuses its WRs: each UD send
// names an address handle (an AH of o's, else RDMA_EINVAL and nothing of
// it is sent), the remote QPN and Q_Key (RDMA_QKEY_CONTROLLED: the QP's
// own), and goes through kv_post_send_ud, which answers as kv_post_send.
struct kv_ud_send_wr {
  struct rct_send_wr wr;                // SEND or SEND_WITH_IMM
  struct rdma_ah *ah;
  uint32 remote_qpn, remote_qkey;
};
int  kv_post_send_ud(struct kv_owner *o, struct rdma_qp *qp, const struct kv_ud_send_wr *wr, int n, int *err);

// Address handles: a->pd is ignored (pd names the PD); a->dmac all zero
// is resolved (our own address, the neighbour table, else ARP: may
// sleep). *out and 0, -1 for a bad argument or a PD not o's, RDMA_NO_ROUTE
// for a destination that does not answer ARP, RDMA_NO_RESOURCES for no slot.
int  kv_create_ah(struct kv_owner *o, struct rdma_pd *pd, const struct rdma_ah_attr *a, struct rdma_ah **out);
int  kv_destroy_ah(struct kv_owner *o, struct rdma_ah *ah);   // 0, or -1; posted sends still go

// Shared receive queues (proto-spec srq.md). kv_create_srq: an SRQ of o's
// in its PD c->pd of c->max_wr WRs (rounded up to a power of two, at most
// max_srq_wr; 0 = 1) of c->max_sge SGEs (at most RDMA_MAX_SGE; 0 = 1),
// granted sizes written back: 0 and *out, -1, or RDMA_NO_RESOURCES.
// kv_modify_srq: mask IBV_SRQ_LIMIT sets a->srq_limit (0 disarms, more
// than max_wr is -1); IBV_SRQ_MAX_WR (resizing) is not supported (-1); the
// limit event comes to o's async handler. kv_destroy_srq: 0, -1, or
// RDMA_BUSY while a QP uses it. kv_post_srq_recv answers as kv_post_recv.
struct kv_srq_init {
  struct rdma_pd *pd;
  uint32 max_wr, max_sge;               // in: wanted; out: granted
};
int  kv_create_srq(struct kv_owner *o, struct kv_srq_init *c, struct rdma_srq **out);
int  kv_modify_srq(struct kv_owner *o, struct rdma_srq *srq, const struct rdma_srq_attr *a, uint32 mask);
int  kv_query_srq(struct kv_owner *o, struct rdma_srq *srq, struct rdma_srq_attr *a);
int  kv_destroy_srq(struct kv_owner *o, struct rdma_srq *srq);
int  kv_post_srq_recv(struct kv_owner *o, struct rdma_srq *srq, const struct rct_recv_wr *wr, int n, int *err);

// Every object of o goes (QPs first, then SRQs, AHs, CQs, MRs, PDs): an owner that
// ends (a process's exit, a kernel consumer that gives up).
void kv_release_owner(struct kv_owner *o);

#endif
