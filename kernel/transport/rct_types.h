/*
 * rct_types.h: the public types of the transport core (rct.h declares the
 * functions that use them).
 *
 * Owns: constants, return codes, enums, work requests and completions, the
 * MR interface, frames, counters, device and QP attributes, and the
 * layouts a caller only allocates (WQEs, READ resources, the QP and its
 * role states; marked below): their fields are the core's, except a QP's
 * init, attr and cnt, which a caller may read. The CM's types are in kernel/cm/ibcm.h.
 *
 * Portable C99: includes only <stdint.h>, <stddef.h>, <stdbool.h>.
 */
#ifndef RCT_TYPES_H
#define RCT_TYPES_H

#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>


/* ------------------------------------------------------------------ */
/* Constants                                                           */
/* ------------------------------------------------------------------ */

#define RCT_NEVER          UINT64_MAX   /* "no deadline" */
#define RCT_ROCEV2_PORT    4791         /* IANA UDP port of RoCEv2 */
#define RCT_PSN_MASK       0xffffffu    /* PSNs are 24-bit */
#define RCT_QPN_MASK       0xffffffu
#define RCT_QPN_GSI        1u       /* QP1, the GSI QP: a UD QP's only QPN below 2 [SEC-RAND-4] */

#define RCT_MAX_SGE        4            /* scatter/gather entries per WR */
#define RCT_FRAME_MAX_SEGS 8            /* payload segments per frame */
/* Largest header block of a frame: a selective NAK with a full SACKH
 * (Ethernet 14, IPv4 20, UDP 8, BTH 12, AETH 4, then SR_WINDOW / 8 bytes,
 * [SR-WIRE-8]) or a request's (94 at most: RoCEv1 GRH, RETH, ImmDt, SRETH);
 * wire.h asserts both. */
#define RCT_HDR_MAX        (58 + RCT_SR_WINDOW / 8 > 94 ? 58 + RCT_SR_WINDOW / 8 : 94)
#define RCT_RETRY_INFINITE 7            /* rnr_retry value meaning "retry forever" */
#define RCT_SR_WINDOW      (RCT_MAX_RD_ATOMIC * RCT_READ_PIECE) /* proto-spec SR_WINDOW (1024): the reach of the READ credits */
#define RCT_ACK_REQ_INTERVAL 16         /* proto-spec ACK_REQ_INTERVAL */
#define RCT_READ_WINDOW    256          /* proto-spec READ_WINDOW: READ response PSNs outstanding, at most */
#define RCT_READ_PIECE     64           /* proto-spec READ_PIECE: response PSNs one READ request asks for, at most */
#define RCT_MAX_RD_ATOMIC  16           /* READ requests outstanding as requester, at most (max_rd_atomic) */
#define RCT_RD_REPLAYS     (RCT_READ_PIECE / 2) /* replay ranges one held READ queues behind the one being sent: the runs a piece can miss */
#define RCT_ACK_COALESCE_MAX 16         /* proto-spec ACK_COALESCE_MAX */
#define RCT_GBN_WINDOW_MIN RCT_ACK_REQ_INTERVAL /* proto-spec GBN_WINDOW_MIN [REQ-WIN-5] */
#define RCT_RESP_WINDOW    (1u << 16)   /* proto-spec RESP_AHEAD_WINDOW = RESP_DUP_WINDOW */


/* Return codes of the API (negative = error). */
enum rct_err {
  RCT_OK = 0,
  RCT_EINVAL = -1,      /* bad argument or attribute */
  RCT_ENOSPC = -2,      /* queue full */
  RCT_ESTATE = -3,      /* operation not allowed in this QP state */
  RCT_ENOTSUP = -4,     /* not supported (e.g. too many SGEs) */
  RCT_ETRUNC = -5,      /* buffer too short */
};

/* MR interface errors, returned (negative) by rct_mr_ops.translate. */
enum rct_mr_err {
  RCT_MR_EKEY = -1,     /* no MR with this key */
  RCT_MR_EBOUNDS = -2,  /* [va, va+len) not inside the MR */
  RCT_MR_EACCESS = -3,  /* MR lacks the requested access right */
  RCT_MR_EPD = -4,      /* MR belongs to another protection domain */
  RCT_MR_ESEGS = -5,    /* more segments needed than `max` */
};

/* Access flags (MR access and QP remote-access flags), IBV_ACCESS_* values. */
enum rct_access {
  RCT_ACCESS_LOCAL_WRITE = 1,
  RCT_ACCESS_REMOTE_WRITE = 2,
  RCT_ACCESS_REMOTE_READ = 4,
  RCT_ACCESS_REMOTE_ATOMIC = 8,
};
#define RCT_ACCESS_ALL (RCT_ACCESS_LOCAL_WRITE | RCT_ACCESS_REMOTE_WRITE | \
                        RCT_ACCESS_REMOTE_READ | RCT_ACCESS_REMOTE_ATOMIC)

/* Path MTU, IBTA enum values. */
enum rct_mtu {
  RCT_MTU_256 = 1, RCT_MTU_512 = 2, RCT_MTU_1024 = 3,
  RCT_MTU_2048 = 4, RCT_MTU_4096 = 5,
};

/* QP states (IBTA 10.3.1). */
enum rct_qp_state {
  RCT_QPS_RESET = 0, RCT_QPS_INIT, RCT_QPS_RTR, RCT_QPS_RTS,
  RCT_QPS_SQD, RCT_QPS_SQE, RCT_QPS_ERR,
  RCT_QPS_COUNT
};

/* Work request opcodes, IBV_WR_* meanings and values. */
enum rct_wr_opcode {
  RCT_WR_RDMA_WRITE = 0,
  RCT_WR_RDMA_WRITE_WITH_IMM = 1,
  RCT_WR_SEND = 2,
  RCT_WR_SEND_WITH_IMM = 3,
  RCT_WR_RDMA_READ = 4,
  RCT_WR_ATOMIC_CMP_AND_SWP = 5,    /* one 8-byte SGE gets the original value [REQ-ATOM-1] */
  RCT_WR_ATOMIC_FETCH_AND_ADD = 6,
  RCT_WR_COUNT
};

/* send_flags, IBV_SEND_* values (the kernel passes a user's flags through);
 * other bits are ignored. */
#define RCT_SEND_FENCE     1u
#define RCT_SEND_SIGNALED  2u
#define RCT_SEND_SOLICITED 4u

/* Work completion status, IBV_WC_* meanings and values. */
enum rct_wc_status {
  RCT_WC_SUCCESS = 0,
  RCT_WC_LOC_LEN_ERR = 1,
  RCT_WC_LOC_QP_OP_ERR = 2,
  RCT_WC_LOC_EEC_OP_ERR = 3,
  RCT_WC_LOC_PROT_ERR = 4,
  RCT_WC_WR_FLUSH_ERR = 5,
  RCT_WC_MW_BIND_ERR = 6,
  RCT_WC_BAD_RESP_ERR = 7,
  RCT_WC_LOC_ACCESS_ERR = 8,
  RCT_WC_REM_INV_REQ_ERR = 9,
  RCT_WC_REM_ACCESS_ERR = 10,
  RCT_WC_REM_OP_ERR = 11,
  RCT_WC_RETRY_EXC_ERR = 12,
  RCT_WC_RNR_RETRY_EXC_ERR = 13,
  RCT_WC_LOC_RDD_VIOL_ERR = 14,
  RCT_WC_REM_INV_RD_REQ_ERR = 15,
  RCT_WC_REM_ABORT_ERR = 16,
  RCT_WC_INV_EECN_ERR = 17,
  RCT_WC_INV_EEC_STATE_ERR = 18,
  RCT_WC_FATAL_ERR = 19,
  RCT_WC_RESP_TIMEOUT_ERR = 20,
  RCT_WC_GENERAL_ERR = 21,
  RCT_WC_STATUS_COUNT
};

/* Work completion opcodes (IBV_WC_* values). */
enum rct_wc_opcode {
  RCT_WC_SEND = 0,
  RCT_WC_RDMA_WRITE = 1,
  RCT_WC_RDMA_READ = 2,
  RCT_WC_COMP_SWAP = 3,
  RCT_WC_FETCH_ADD = 4,
  RCT_WC_RECV = 128,
  RCT_WC_RECV_RDMA_WITH_IMM = 129,
};

#define RCT_WC_GRH      1u   /* rct_wc.wc_flags: the receive buffer's first 40 bytes hold a GRH (IBV_WC_GRH) [UD-RECV-2] */
#define RCT_WC_WITH_IMM 2u   /* rct_wc.wc_flags: imm_data is valid (IBV_WC_WITH_IMM); wc_flags
                              * carries libibverbs' meanings only (a solicited receive is
                              * rct_wc.solicited) */

/* ------------------------------------------------------------------ */
/* Memory: the caller's MR interface                                   */
/* ------------------------------------------------------------------ */

/* One contiguous host-addressable piece of memory. In the kernel: a
 * direct-mapped address of a pinned page; on the host: a plain pointer. */
struct rct_iov {
  uint8_t *base;
  uint32_t len;
};

struct rct_mr_ops {
  /*
   * Translate [va, va+len) of the MR named by `key` into at most `max`
   * segments written to `out`; return the number of segments (0 when
   * len == 0) or a negative enum rct_mr_err. `is_remote` says key is an
   * rkey (from the wire) rather than an lkey (from a local WR); `access`
   * is the set of RCT_ACCESS_* rights the operation needs; `pd` is the
   * protection domain of the QP. Must check key, bounds (without
   * overflow), access and PD. With max == 0 (out may be NULL) it only
   * validates the whole range and returns 0 on success. Called with the
   * caller's device lock held; must not call back into the core.
   */
  int (*translate)(void *ctx, uint32_t key, bool is_remote, uint32_t pd,
                   uint64_t va, uint32_t len, uint32_t access,
                   struct rct_iov *out, int max);
};

/* ------------------------------------------------------------------ */
/* Work requests and completions                                        */
/* ------------------------------------------------------------------ */

struct rct_sge {
  uint64_t addr;     /* VA inside the MR named by lkey */
  uint32_t length;
  uint32_t lkey;
};

struct rct_send_wr {
  uint64_t wr_id;
  enum rct_wr_opcode opcode;
  uint32_t send_flags;        /* RCT_SEND_* */
  const struct rct_sge *sg_list;
  int num_sge;                /* 0..RCT_MAX_SGE */
  uint32_t imm_data;          /* host order; WITH_IMM opcodes */
  uint64_t remote_addr;       /* RDMA WRITE / READ / atomic (8-byte aligned [RESP-ATOM-2]) */
  uint32_t rkey;
  uint32_t pad;
  uint64_t compare_add;       /* atomic: CMP_AND_SWP's compare, FETCH_AND_ADD's add (host order) */
  uint64_t swap;              /* atomic: CMP_AND_SWP's swap */
};

#define RCT_ATOMIC_LEN 8      /* bytes an atomic operates on, and its one SGE's length [REQ-ATOM-1] */

/* The destination of a UD send (what an address handle fills): Ethernet and
 * IPv4 addressing, the destination QP and its Q_Key [UD-WIRE-2]. */
struct rct_ud_dest {
  uint8_t dmac[6];
  uint8_t dscp, ttl;          /* ttl 0 = 64 */
  uint32_t dipv4;             /* host order */
  uint32_t dqpn;              /* 24-bit */
  uint32_t qkey;              /* the destination's Q_Key; bit 31 set = the sending QP's own [UD-QKEY-2] */
  uint16_t udp_sport;         /* 0 = derive from the QPNs (rct_udp_sport) [ENC-UDP-2] */
};
#define RCT_QKEY_CONTROLLED 0x80000000u   /* [UD-QKEY-2] */

struct rct_recv_wr {
  uint64_t wr_id;
  const struct rct_sge *sg_list;
  int num_sge;                /* 0..RCT_MAX_SGE */
};

struct rct_wc {
  uint64_t wr_id;
  enum rct_wc_status status;
  enum rct_wc_opcode opcode;
  uint32_t byte_len;          /* receive: bytes placed; READ: bytes read; atomic: 8 */
  uint32_t imm_data;          /* host order; valid if wc_flags & RCT_WC_WITH_IMM */
  uint32_t wc_flags;
  uint32_t qp_num;
  uint32_t src_qp;
  uint32_t vendor_err;        /* AETH syndrome for NAK-caused errors, else 0 */
  uint8_t solicited;          /* receive of SEND / WRITE with immediate whose last packet had BTH.SE [HDR-BTH-3] */
};

/* ---- Events, part 1 of 2 (event.c): the intrusive pending-list node ---- */

struct rct_dev;

/* Embedded in every QP and CQ: while an event of the object is waiting to be
 * reported (rct_dev_next_event) the object sits on its device's pending list.
 * Private; zeroed by rct_qp_init / rct_cq_init. */
struct rct_ev_node {
  struct rct_ev_node *next;   /* dev pending list */
  struct rct_dev *dev;        /* the device whose list holds it; NULL = not queued */
  uint8_t pending;            /* 1 << enum rct_event_type, not yet reported */
  uint8_t kind;               /* a QP's or a CQ's node (event.c) */
  uint8_t info;               /* QP: enum rct_qp_err_cause; CQ: RCT_EV_SOLICITED */
};

/* ---- end of events, part 1 ---- */

/* A completion queue over a caller array of `size` entries. Completions
 * that do not fit are dropped and counted in `overflow` (size the CQ for
 * sq_size + rq_size of every QP that uses it). */
struct rct_cq {
  struct rct_wc *ring;
  uint32_t size;
  uint32_t head;              /* next to pop (free-running) */
  uint32_t tail;              /* next to push (free-running) */
  uint32_t head_slot;         /* ring index of head: the counters wrap at 2^32, which
                               * a size that is not a power of two does not divide */
  uint32_t overflow;
  struct rct_ev_node ev;      /* private: events (event.c) */
};

/* The completion counted i, head <= i < tail (free-running). */
static inline struct rct_wc *rct_cq_at(const struct rct_cq *cq, uint32_t i)
{
  return &cq->ring[(cq->head_slot + (i - cq->head)) % cq->size];
}

/* ------------------------------------------------------------------ */
/* Frames out                                                           */
/* ------------------------------------------------------------------ */

/* A frame to transmit: hdr[0..hdr_len) ++ seg[0..nseg) ++ trailer[0..trailer_len).
 * The payload segments point into MR memory (valid while the MR stays
 * registered); hdr and trailer live in the struct, which the caller owns.
 * With RCT_DEV_ICRC_OFFLOAD the trailer holds zeroed ICRC bytes for the NIC. */
struct rct_frame {
  uint8_t hdr[RCT_HDR_MAX];
  uint16_t hdr_len;
  uint8_t trailer_len;        /* pad (0..3) + ICRC (4) */
  uint8_t nseg;
  uint8_t trailer[8];
  struct rct_iov seg[RCT_FRAME_MAX_SEGS];
  uint32_t len;               /* total length, hdr + payload + trailer */
  uint32_t qpn;               /* local QP that produced it (tracing) */
  uint32_t psn;               /* its BTH PSN (tracing) */
  uint8_t opcode;             /* its BTH opcode (tracing) */
  uint32_t dipv4;             /* destination IPv4 (host order), v1 and v2: routing without reading hdr */
};


/* ------------------------------------------------------------------ */
/* Counters                                                             */
/* ------------------------------------------------------------------ */

/* Per-QP counters; all monotonically increasing. Names follow proto-spec
 * (rx_* = frames received and dropped/classified, tx_* = sent). */
struct rct_qp_counters {
  uint64_t tx_frames, tx_bytes;       /* every frame handed out, incl. retransmissions */
  uint64_t rx_frames, rx_bytes;       /* every frame delivered to this QP */
  uint64_t tx_payload_bytes, rx_payload_bytes;
  uint64_t tx_retransmits;            /* request packets sent again */
  uint64_t timeouts;                  /* retransmission-timer expiries */
  uint64_t early_probes;              /* early probe timer expiries [REQ-TMO-8] */
  uint64_t window_cuts;               /* go-back-N loss window halvings [REQ-WIN-5] */
  uint64_t late_probes;               /* early probes that fired late and waited [REQ-TMO-11] */
  uint64_t rnr_timeouts;              /* RNR timer expiries (retries after RNR NAK) */
  uint64_t tx_ack, rx_ack;            /* positive ACK frames (rx: inside the window) */
  uint64_t tx_nak_seq, rx_nak_seq;    /* NAK PSN sequence error */
  uint64_t tx_rnr_nak, rx_rnr_nak;    /* RNR NAK */
  uint64_t tx_nak_inv, rx_nak_inv;    /* NAK invalid request */
  uint64_t tx_nak_acc, rx_nak_acc;    /* NAK remote access error */
  uint64_t tx_nak_op, rx_nak_op;      /* NAK remote operational error */
  uint64_t tx_sack, rx_sack;          /* SR selective NAKs */
  uint64_t tx_read_resp, rx_read_resp;/* READ response packets */
  uint64_t rx_dup;                    /* duplicate requests / responses */
  uint64_t rx_stale_ack;              /* ACK/NAK for already acknowledged PSNs */
  uint64_t rx_out_of_seq;             /* requests ahead of ePSN / responses ahead */
  uint64_t rx_out_of_window;          /* outside the PSN window, dropped */
  uint64_t rx_bad_state;              /* frame for a QP in a state that ignores it */
  uint64_t rx_bad_opcode;             /* opcode not valid here */
  uint64_t rx_bad_length;             /* payload on a header-only packet etc. */
  uint64_t rx_truncated;              /* shorter than its headers */
  uint64_t rx_wrong_encap;            /* RoCE v1 frame for a v2 QP or vice versa */
  uint64_t rx_wrong_peer;             /* source IP is not the QP's peer [RX-ORDER-1] step 9 */
  uint64_t rnr_waits;                 /* the requester armed the RNR timer */
  uint64_t rx_bad_aeth;               /* invalid AETH syndrome */
  uint64_t rx_unexpected;             /* responses matching nothing outstanding */
  uint64_t read_replays;              /* duplicate READs and atomics answered again */
  uint64_t sr_placed_ooo;             /* SR: packets placed out of order */
  uint64_t completions, error_completions, flushed;
  uint64_t cq_overflow;
  uint64_t rx_bad_qkey;               /* UD: DETH Q_Key is not the QP's [UD-QKEY-1] */
  uint64_t rx_no_recv;                /* UD: no receive WR posted [UD-RECV-1] */
};

/* Device counters: frames dropped before a QP is known. */
struct rct_dev_counters {
  uint64_t rx_frames;
  uint64_t rx_not_roce;       /* not Ethernet/IPv4/UDP 4791 (or v1): handed back */
  uint64_t rx_truncated;      /* shorter than its headers say */
  uint64_t rx_bad_header;     /* IPv4/UDP header invalid, fragment, not our address, bad TVer/P_Key */
  uint64_t rx_icrc_err;       /* ICRC mismatch */
  uint64_t rx_bad_opcode;     /* opcode not RC / SR */
  uint64_t rx_unknown_qp;     /* no QP with this QPN */
  uint64_t tx_frames;
};

/* ------------------------------------------------------------------ */
/* Device                                                               */
/* ------------------------------------------------------------------ */

struct rct_qp;
struct rct_qp_base;

/* dev flags */
#define RCT_DEV_ICRC_OFFLOAD 1u  /* NIC generates and verifies the ICRC */
#define RCT_DEV_ROCE_V1      2u  /* accept RoCE v1 (EtherType 0x8915, GRH) frames too */

struct rct_dev_attr {
  uint8_t mac[6];             /* local MAC */
  uint32_t ipv4;              /* local IPv4, host order (10.0.0.1 = 0x0a000001) */
  uint32_t flags;             /* RCT_DEV_* */
  uint32_t ip_mtu;            /* interface IP MTU (1500 on plain Ethernet); 0 = no limit [ENC-IP-3] */
  uint64_t ack_delay_ns;      /* hold a plain ACK this long for a request to go first [RESP-ACK-5]; 0 = at once */
  uint32_t sack_every;        /* SR: one selective NAK per this many out-of-order packets [SR-RESP-11]; 0, 1 = each */
  const struct rct_mr_ops *mr_ops;
  void *mr_ctx;
  /* Find the QP with this 24-bit QPN, or NULL. Should be O(1) (a table). */
  struct rct_qp *(*qp_lookup)(void *ctx, uint32_t qpn);
  void *lookup_ctx;
  /* The same for QPs of every type (RC and UD), with lookup_ctx; when set,
   * the core uses it instead of qp_lookup. */
  struct rct_qp_base *(*qp_lookup_any)(void *ctx, uint32_t qpn);
  /* The interface's IPv4 Identification counter [ENC-IP-2]: the next ID for
   * an IPv4 frame this device sends. An OS answers from the counter its own
   * IPv4 output uses, so the interface has one; NULL = the core's
   * rct_dev.ip_id (host tests and the simulator). */
  uint16_t (*next_ip_id)(void *ctx);
  void *ip_id_ctx;
};

struct rct_dev {
  struct rct_dev_attr attr;
  struct rct_dev_counters cnt;
  struct rct_qp_base *qps;    /* list of initialized QPs of every type (rct_dev_* helpers) */
  struct rct_qp_base *ready_head; /* private: QPs that may have frames to send */
  struct rct_qp_base *ready_tail;
  uint16_t ip_id;             /* the IPv4 Identification counter when attr.next_ip_id is NULL [ENC-IP-2] */
  struct rct_ev_node *ev_head;    /* private: objects with events to report (event.c) */
  struct rct_ev_node *ev_tail;
  struct rct_key_watch *watches;  /* private: keys whose last use is awaited (event.c) */
};

/* ------------------------------------------------------------------ */
/* QP                                                                   */
/* ------------------------------------------------------------------ */

/* Address vector of the peer. */
struct rct_ah {
  uint8_t dmac[6];
  uint32_t dipv4;             /* host order */
  uint16_t udp_sport;         /* 0 = derive from the QPNs (rct_udp_sport) [ENC-UDP-2] */
  uint8_t dscp, ttl;          /* ttl 0 = 64 */
  bool roce_v1;               /* RoCE v1 encapsulation (device needs RCT_DEV_ROCE_V1) */
};

/* rct_qp_modify attr_mask bits (IBV_QP_* shape). */
enum rct_qp_attr_mask {
  RCT_QP_STATE = 1u << 0,
  RCT_QP_CUR_STATE = 1u << 1,
  RCT_QP_ACCESS_FLAGS = 1u << 2,
  RCT_QP_PKEY_INDEX = 1u << 3,
  RCT_QP_AV = 1u << 4,
  RCT_QP_PATH_MTU = 1u << 5,
  RCT_QP_TIMEOUT = 1u << 6,
  RCT_QP_RETRY_CNT = 1u << 7,
  RCT_QP_RNR_RETRY = 1u << 8,
  RCT_QP_RQ_PSN = 1u << 9,
  RCT_QP_MAX_QP_RD_ATOMIC = 1u << 10,
  RCT_QP_MIN_RNR_TIMER = 1u << 11,
  RCT_QP_SQ_PSN = 1u << 12,
  RCT_QP_MAX_DEST_RD_ATOMIC = 1u << 13,
  RCT_QP_DEST_QPN = 1u << 14,
  RCT_QP_SR = 1u << 15,           /* sr_enable (both ends advertised SR in the CM exchange) */
  RCT_QP_ADAPTIVE_RTO = 1u << 16, /* adaptive_rto, min_rto_ns */
  RCT_QP_MAX_INFLIGHT = 1u << 17, /* max_inflight */
  RCT_QP_PORT = 1u << 18,         /* port_num */
  RCT_QP_PROBE_SLACK = 1u << 19,  /* probe_slack_ns */
  RCT_QP_QKEY = 1u << 20,         /* qkey (UD) */
};

struct rct_qp_attr {
  enum rct_qp_state qp_state;
  enum rct_qp_state cur_qp_state;
  uint32_t qp_access_flags;   /* RCT_ACCESS_REMOTE_* the responder allows */
  uint16_t pkey_index;        /* RCT_PKEY_INDEX: the one P_Key [HDR-BTH-2] */
  uint8_t port_num;           /* RCT_PORT_NUM: the device's one port */
  struct rct_ah ah;
  enum rct_mtu path_mtu;
  uint8_t timeout;            /* local ACK timeout 4.096us * 2^timeout; 0 = infinite */
  uint8_t retry_cnt;          /* 0..7 */
  uint8_t rnr_retry;          /* 0..7, 7 = infinite */
  uint8_t min_rnr_timer;      /* IBTA RNR timer code 0..31 */
  uint32_t rq_psn;            /* first PSN expected by the responder */
  uint32_t sq_psn;            /* first PSN sent by the requester */
  uint8_t max_rd_atomic;      /* outstanding READ requests as requester, 1..RCT_MAX_RD_ATOMIC */
  uint8_t max_dest_rd_atomic; /* READs held as responder, 1..rd_size */
  uint32_t dest_qp_num;
  bool sr_enable;             /* selective repeat (proto-spec SR) */
  bool adaptive_rto;          /* RFC 6298-style RTO, clamped to [min_rto_ns, IBTA value] */
  uint64_t min_rto_ns;        /* 0 = default (RCT_MIN_RTO_DEFAULT_NS) */
  uint32_t max_inflight;      /* request packets in flight; 0 = default */
  uint32_t qkey;              /* UD: the Q_Key frames to this QP must carry [UD-QKEY-1] */
  uint64_t probe_slack_ns;    /* early probe at 2 SRTT + this; 0 = default (RCT_PROBE_SLACK_DEFAULT_NS,
                                 adaptive RTO only); set: in SR also under the IBTA RTO [REQ-TMO-10] */
};

#define RCT_PKEY_INDEX 0     /* the P_Key table holds one entry */
#define RCT_PORT_NUM   1     /* a device has one port */

#define RCT_MIN_RTO_DEFAULT_NS 1000000ull   /* 1 ms */
#define RCT_PROBE_SLACK_DEFAULT_NS 1000000ull  /* 1 ms: guests' pauses on an emulated host [REQ-TMO-8] */
#define RCT_INITIAL_RTO_FACTOR 4            /* adaptive RTO before the first sample: 4 x min_rto [REQ-TMO-4] */
#define RCT_MAX_INFLIGHT_DEFAULT 1024u

/* Storage and fixed parameters of a QP, given at rct_qp_init. */
struct rct_send_wqe;
struct rct_recv_wqe;
struct rct_rd_res;
struct rct_qp_init_attr {
  uint32_t qpn;               /* 24-bit, unique on the device */
  uint32_t pd;                /* protection domain handed to translate() */
  struct rct_send_wqe *sq;    /* sq_size entries; sq_size a power of 2 */
  uint32_t sq_size;
  struct rct_recv_wqe *rq;    /* rq_size entries; rq_size a power of 2 */
  uint32_t rq_size;
  struct rct_rd_res *rd;      /* rd_size responder READ resources; power of 2 */
  uint32_t rd_size;
  struct rct_cq *send_cq, *recv_cq;
  bool sq_sig_all;            /* every successful send WR produces a completion */
};

/* --- layouts callers need only to allocate: their fields are the core's (a QP's init,
 * attr and cnt excepted, which callers may read) --- */

enum rct_wqe_state { RCT_WQE_FREE = 0, RCT_WQE_POSTED, RCT_WQE_DONE };

struct rct_send_wqe {
  struct rct_send_wr wr;      /* wr.sg_list is not kept; see sge[] */
  struct rct_sge sge[RCT_MAX_SGE];
  uint32_t length;            /* total bytes (sum of the SGEs) */
  uint32_t first_psn, last_psn; /* PSNs it occupies (READ: its response PSNs) */
  uint32_t npkts;
  uint32_t read_pkts;         /* READ (go-back-N): response packets placed, in order */
  uint32_t read_piece;        /* READ: response PSNs per READ request, from first_psn on [REQ-READ-6] */
  uint32_t rsn;               /* SR: receive sequence number of its message */
  uint8_t state;              /* enum rct_wqe_state */
  uint8_t started;            /* first packet sent at least once (PSNs assigned) */
  uint8_t checked;            /* local keys validated */
  uint8_t after_reads;        /* SR READ: only READs were before it when it started (SRXH_AFTER_READS) */
  enum rct_wc_status status;  /* preset error (post-time checks) or final status */
  uint32_t vendor_err;
  struct rct_ud_dest ud;      /* UD: where it goes (rct_ud_post_send) */
};

struct rct_recv_wqe {
  uint64_t wr_id;
  struct rct_sge sge[RCT_MAX_SGE];
  int num_sge;
  uint32_t length;
};

/* A responder resource: a READ held for its responses and replays, or an
 * executed atomic with its saved result [RESP-ATOM-3]. */
struct rct_rd_res {
  uint8_t valid;
  uint8_t atomic;             /* an atomic: its one response is an ATOMIC_ACK carrying orig */
  uint64_t orig;              /* atomic: the value the target held before it ran */
  uint8_t pending;            /* responses still to send */
  uint8_t replay;             /* pending for a duplicate request [RESP-DUP-2], not the first time */
  uint32_t first_psn;         /* PSN of the (original) READ request */
  uint32_t npkts;             /* its response count */
  uint64_t va;
  uint32_t rkey;
  uint32_t length;
  uint32_t next_psn;          /* next response PSN to send */
  uint32_t start_psn;         /* PSN the current response sequence started at [REQ-READ-3] */
  uint32_t stop_psn;          /* one past the last response of the current sequence [RESP-DUP-5] */
  uint8_t saved;              /* a replay interrupted the first sequence; it resumes after [RESP-DUP-5] */
  uint32_t saved_next, saved_start, saved_stop;
  uint8_t nqueued;            /* replays waiting behind the current sequence, in arrival order */
  uint32_t queued_psn[RCT_RD_REPLAYS], queued_stop[RCT_RD_REPLAYS];
};

/* Timers of a QP, a small table indexed by this enum. */
enum rct_timer { RCT_TIMER_RETRANS = 0, RCT_TIMER_RNR, RCT_TIMER_ACK, RCT_TIMER_PROBE, RCT_TIMER_COUNT };

/* Role states (name tables: rct_req_state_name etc.). The responder's
 * drives its code and is kept in struct rct_resp; the requester's and the
 * completer's are derived from their state when asked (rct_qp_req_state,
 * rct_qp_comp_state). */
enum rct_req_state { RCT_REQ_IDLE = 0, RCT_REQ_SENDING, RCT_REQ_WAIT_RNR, RCT_REQ_ERROR, RCT_REQ_STATE_COUNT };
enum rct_resp_state { RCT_RESP_IDLE = 0, RCT_RESP_IN_SEND, RCT_RESP_IN_WRITE, RCT_RESP_ERROR, RCT_RESP_STATE_COUNT };
enum rct_comp_state { RCT_COMP_IDLE = 0, RCT_COMP_WAIT_ACK, RCT_COMP_WAIT_RNR, RCT_COMP_ERROR, RCT_COMP_STATE_COUNT };

#define RCT_SR_WORDS (RCT_SR_WINDOW / 32)
#define RCT_PROBE_EARLY 2           /* rct_req.rto_probe: the early probe's copy */
#define RCT_PROBE_EARLY_LAST 3      /* ... of an SR READ with no loss seen: its run's last response alone */

/* The requester's state: req.c writes it, the other files call req.c. */
struct rct_req {
  uint32_t sq_next;           /* WQE the requester sends from */
  uint32_t psn;               /* PSN of the next packet the requester sends */
  uint32_t next_psn;          /* next never-sent PSN (high-water mark) */
  uint32_t rd_end[RCT_MAX_RD_ATOMIC]; /* last response PSN of each READ request outstanding, oldest first [REQ-WIN-2] */
  uint32_t rd_first, rd_count;        /* the ring's oldest entry and its length */
  uint32_t rsn_next;          /* SR: RSN of the next receive-consuming message */
  uint8_t rto_probe;          /* a timeout owes one more copy of the packet at una [REQ-TMO-6];
                                 RCT_PROBE_EARLY(_LAST): the early probe does [REQ-TMO-8] */
  uint32_t sr_retxd[RCT_SR_WORDS];  /* SR: bit i = PSN una + i resent since the last round */
  uint32_t sr_scan, sr_scan_end;    /* SR: PSNs [sr_scan, sr_scan_end) to resend if missing */
  uint32_t sr_hole_end;             /* SR: from here to sr_scan_end only READ requests [SR-REQ-12] */
  uint32_t sr_resend_mark[RCT_SR_WINDOW]; /* SR: next_psn when PSN (index PSN % window) was resent [SR-REQ-15] */
  uint32_t sr_rereq_seq;                  /* SR: READ re-requests sent, a running count */
  uint32_t sr_rereq_order[RCT_SR_WINDOW]; /* SR: its value when a READ response PSN was re-requested [SR-REQ-16] */
};

/* The completer's state: comp.c writes it. */
struct rct_comp {
  uint32_t una;               /* oldest unacknowledged PSN */
  uint8_t retry_left, rnr_left;
  uint32_t rnr_psn;           /* PSN of the last RNR NAK */
  uint32_t last_msn;          /* last MSN received [REQ-ACK-4] */
  uint64_t srtt, rttvar, rto; /* adaptive RTO state (ns); rto 0 = not sampled */
  uint32_t rtt_psn;           /* PSN being timed, valid if rtt_armed */
  uint64_t rtt_start;
  uint8_t rtt_armed;
  uint8_t early_probed;       /* the early probe went out since una last moved [REQ-TMO-8] */
  uint8_t probe_deferred;     /* a late probe waited once since una last moved [REQ-TMO-11] */
  uint64_t probe_due;         /* the probe timer's deadline when it was armed */
  uint32_t retx_psn;          /* start of the last resend asked for */
  uint8_t retx_valid;         /* retx_psn valid until una advances [REQ-GBN-2] */
  uint32_t rd_hint;           /* SQ index at or before the oldest incomplete READ */
  uint32_t cwnd;              /* go-back-N loss window in packets, 0 = unlimited [REQ-WIN-5] */
  uint32_t cwnd_credit;       /* PSNs acknowledged toward the next growth step */
  uint32_t cwnd_recover;      /* next_psn at the last cut, valid if cwnd_recovering */
  uint8_t cwnd_recovering;    /* una has not reached cwnd_recover: no cut, no credit */
  uint32_t sr_sacked[RCT_SR_WORDS]; /* SR: bit i = PSN una + i received/sacked */
};

/* The responder's ACK hold [RESP-ACK-5]: whether an ACK (for psn) is owed
 * and when it may go. OWED: it goes at the next poll, or, with an ACK
 * delay, is held from then on; HELD: until `until`, or until a request of
 * this QP goes out; SEND_NOW: at the next poll. When the QP leaves RTR,
 * RTS or SQD for ERR or RESET [RESP-ACK-6]: PARTING, the parting ACK (psn,
 * msn) goes at the next poll whatever the QP's state; PARTED, it went (or
 * none was owed) and a duplicate request in ERR sends it again. */
enum rct_ack_state {
  RCT_ACK_IDLE = 0, RCT_ACK_OWED, RCT_ACK_HELD, RCT_ACK_SEND_NOW, RCT_ACK_PARTING, RCT_ACK_PARTED
};
struct rct_ack_hold {
  uint8_t state;              /* enum rct_ack_state */
  uint32_t psn;               /* the ACK acknowledges up to here */
  uint32_t msn;               /* PARTING, PARTED: the MSN the parting ACK carries */
  uint64_t until;             /* HELD: it goes by then */
};

/* The responder's state: resp.c and sr_resp.c write it. */
struct rct_resp {
  enum rct_resp_state state;
  uint32_t epsn;              /* expected PSN */
  uint32_t msn;               /* message sequence number (24-bit) */
  uint32_t msg_offset;        /* bytes of the current SEND placed */
  uint64_t wr_va;             /* current WRITE: next VA */
  uint32_t wr_rkey;
  uint32_t wr_left;           /* current WRITE: bytes still expected */
  uint32_t wr_len;            /* current WRITE: its DMA length (WRITE_WITH_IMM's byte_len) */
  uint8_t nak_latch;          /* [RESP-OOS-1] */
  struct rct_ack_hold ack;
  uint8_t nak_pending;        /* a NAK (nak_syndrome at nak_psn) should be sent */
  uint8_t nak_syndrome;
  uint8_t err_after_nak;      /* move the QP to ERR once the NAK is out */
  uint8_t sack_pending;       /* SR: a selective NAK should be sent */
  uint8_t sack_gap;           /* SR: ... because a packet beyond epsn was not placed [SR-RESP-10] */
  uint32_t sack_skipped;      /* SR: out-of-order packets not answered since the last selective NAK */
  uint32_t sack_epsn;         /* SR: epsn when the last selective NAK went out [SR-RESP-11] */
  uint32_t nak_psn;
  uint32_t unacked;           /* executed packets not yet covered by an ACK */
  uint32_t rd_head, rd_tail;  /* responder READ resources (free-running) */
  uint32_t sr_rcvd[RCT_SR_WORDS]; /* SR: bit i = PSN epsn + i placed */
  uint32_t sr_read[RCT_SR_WORDS]; /* SR: bit i = PSN epsn + i a response PSN of a READ run ahead of epsn */
  uint32_t rsn_done;          /* SR: receive-consuming messages completed */
  /* SR: what each placed PSN ends, indexed by PSN % RCT_SR_WINDOW */
  uint8_t sr_slot_kind[RCT_SR_WINDOW];   /* 0 nothing, else message end (see resp.c) */
  uint32_t sr_slot_len[RCT_SR_WINDOW];
  uint32_t sr_slot_imm[RCT_SR_WINDOW];
};

/* QP types (IBV_QPT_* values). */
enum rct_qp_type { RCT_QPT_RC = 2, RCT_QPT_UD = 4 };

struct rct_qp_ops;            /* a type's operations (rct_int.h; private) */

/* What every QP type has: the base. The generic files (qp.c, post.c, rx.c,
 * tx.c, dev.c, timer.c, cq.c, event.c) work on it; each type embeds it
 * first and keeps its own state after it. */
struct rct_qp_base {
  /* configuration */
  struct rct_dev *dev;
  const struct rct_qp_ops *ops;   /* private: the type's operations */
  uint8_t type;               /* enum rct_qp_type */
  struct rct_qp_init_attr init;
  struct rct_qp_attr attr;
  uint32_t mtu;               /* path MTU in bytes (UD: the port's) */
  uint8_t mtu_shift;          /* log2(mtu) */
  uint8_t encap;              /* enum rct_encap, fixed at RTR [ENC-V1-3] */
  struct rct_qp_counters cnt;
  struct rct_qp_base *next;   /* dev->qps list */
  struct rct_qp_base *ready_next; /* dev ready list */
  uint8_t on_ready;
  uint64_t timer[RCT_TIMER_COUNT];  /* written only through rct_timer_set/stop (timer.c) */
  uint16_t sport;             /* UDP source port [ENC-UDP-2] */

  /* the rings: posting moves the tails, the completer sq_head, the responder rq_head */
  uint32_t sq_head;           /* oldest not completed (free-running index) */
  uint32_t sq_tail;           /* next free slot */
  uint32_t rq_head, rq_tail;  /* receive ring (free-running) */

  struct rct_ev_node ev;      /* events (event.c) */
};

/* An RC QP: the base and the three roles with their selective-repeat windows. */
struct rct_qp {
  struct rct_qp_base base;
  uint8_t sr;                 /* SR mode fixed at RTR [SR-NEG-2] */

  /* the roles, each written only by its own files */
  struct rct_req req;         /* requester (req.c) */
  struct rct_comp comp;       /* completer (comp.c) */
  struct rct_resp resp;       /* responder (resp.c, sr_resp.c) */
};

/* A UD QP: the base alone (no connection, no windows); the send PSN is
 * base.attr.sq_psn, the Q_Key base.attr.qkey. */
struct rct_ud_qp {
  struct rct_qp_base base;
};

/* ---- Events, part 2 of 2 (event.c): what rct_dev_next_event reports ---- */

/* The core records what happened to its objects; after driving the core
 * (frames, timeouts, posting) the caller drains the records with
 * rct_dev_next_event instead of comparing objects against copies. Memory is
 * the node in each QP and CQ (no ring to overflow): one pending entry per
 * object, each kind reported once however often it happened since the last
 * drain. Objects come out in the order of their first pending event; one
 * object's kinds in enum order. The cost is per event, never per object. */
enum rct_event_type {
  RCT_EV_QP_ERR = 0,          /* ev.qp entered ERR; ev.info = enum rct_qp_err_cause */
  RCT_EV_CQ_OVERFLOW,         /* ev.cq dropped a completion (rct_cq_overflow counts them) */
  RCT_EV_CQ_COMP,             /* ev.cq got completions; ev.info has RCT_EV_SOLICITED if one
                               * of them is a solicited receive or an error */
  RCT_EV_KEY_IDLE,            /* the last use of a watched key (ev.key) ended */
  RCT_EV_COUNT
};

enum rct_qp_err_cause {
  RCT_QP_ERR_TRANSPORT = 0,   /* the transport found a fatal error [QP-ERR-1] */
  RCT_QP_ERR_MODIFY = 1,      /* the caller's rct_qp_modify to ERR */
};

#define RCT_EV_SOLICITED 1u

struct rct_event {
  enum rct_event_type type;
  struct rct_qp *qp;          /* QP_ERR of an RC QP (NULL for other types) */
  struct rct_qp_base *qp_base;/* QP_ERR, every type */
  struct rct_cq *cq;          /* CQ_OVERFLOW, CQ_COMP */
  uint32_t key;               /* KEY_IDLE */
  uint32_t info;
};

/* A caller-provided record for waiting on a key's last use (rct_key_watch). */
struct rct_key_watch {
  struct rct_key_watch *next; /* private */
  uint32_t key;
  uint8_t linked;             /* private */
};

/* ---- end of events, part 2 ---- */

/* rct_handle_frame_ex flags. */
#define RCT_RX_TRUSTED 1u    /* the frame never left memory (loopback): skip the ICRC check */
/* The caller's IP stack already took the frame in: version 4, header
 * checksum, Total Length within the frame, not a fragment. The core skips
 * those and keeps the RoCE-only ones (IHL 5, destination = the device's own
 * address, UDP port and length) and every bound on its own reads. */
#define RCT_RX_IP_CHECKED 2u

/* What rct_handle_frame did with a frame. */
enum rct_rx_result {
  RCT_RX_OK = 0,              /* processed */
  RCT_RX_NOT_ROCE,            /* not for the transport (caller may pass it on) */
  RCT_RX_DROPPED,             /* dropped and counted (malformed, bad ICRC, ...) */
};

#endif /* RCT_TYPES_H */
