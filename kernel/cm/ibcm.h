/*
 * ibcm.h: the InfiniBand Communication Manager (IBTA vol 1 ch. 12) with
 * rdma_cm's IP mapping, sans-IO and table-driven (proto-spec ibcm.md).
 *
 * Owns: the CM MAD codec (ibcm_mad.c: the 24-byte MAD header and one table
 * of the CM attributes' fields driving ibcm_encode and ibcm_parse; rdma_cm's
 * service IDs, addressing header and IPv4-mapped GIDs) and the CM agent
 * (ibcm.c: the connection table, listeners by service ID, the active and
 * passive state machines, retransmissions, timewait, the QP attributes an
 * exchange yields). MADs and time in (ibcm_recv, ibcm_timeout); MADs, the
 * next deadline and events out (ibcm_poll_mad, ibcm_next_timeout,
 * ibcm_poll_event). It never touches a QP or a device: the caller (the
 * kernel's QP1 and rdma_cm) moves QPs on the events.
 *
 * Portable C99 like the transport core: no kernel header, no clock, no
 * allocator. Built into the kernel (kernel/kernel.mk) and on the host
 * (kernel/transport/transport.mk's librct.a, tests/unit/test_ibcm.c).
 */
#ifndef IBCM_H
#define IBCM_H

#include "../transport/rct_types.h"
#include "../lib/uapi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* The wire: MADs to and from QP1 [IBCM-MAD-*]                         */
/* ------------------------------------------------------------------ */

#define IBCM_MAD_LEN        256         /* every CM MAD [IBCM-MAD-1] */
#define IBCM_MAD_HDR_LEN    24          /* the common MAD header */
#define IBCM_DATA_LEN       (IBCM_MAD_LEN - IBCM_MAD_HDR_LEN)  /* an attribute's room: 232 */
#define IBCM_GSI_QPN        1
#define IBCM_GSI_QKEY       0x80010000u
#define IBCM_DEFAULT_PKEY   0xffff
#define IBCM_BASE_VERSION   1
#define IBCM_MGMT_CLASS     0x07        /* Communication Management */
#define IBCM_CLASS_VERSION  2
#define IBCM_METHOD_SEND    0x03        /* every CM message is a Send [IBCM-MAD-3] */

/* Attribute IDs [IBCM-MAD-4] */
enum ibcm_attr {
  IBCM_ATTR_REQ = 0x0010, IBCM_ATTR_MRA = 0x0011, IBCM_ATTR_REJ = 0x0012,
  IBCM_ATTR_REP = 0x0013, IBCM_ATTR_RTU = 0x0014, IBCM_ATTR_DREQ = 0x0015,
  IBCM_ATTR_DREP = 0x0016, IBCM_ATTR_SIDR_REQ = 0x0017, IBCM_ATTR_SIDR_REP = 0x0018,
};

/* REJ reasons (IBTA Table "Rejection Reason") [IBCM-REJ-1] */
enum ibcm_rej_reason {
  IBCM_REJ_NO_QP = 1, IBCM_REJ_NO_EEC = 2, IBCM_REJ_NO_RESOURCES = 3, IBCM_REJ_TIMEOUT = 4,
  IBCM_REJ_UNSUPPORTED_REQ = 5, IBCM_REJ_INVALID_COMM_ID = 6, IBCM_REJ_INVALID_COMM_INSTANCE = 7,
  IBCM_REJ_INVALID_SERVICE_ID = 8, IBCM_REJ_INVALID_TRANSPORT_TYPE = 9, IBCM_REJ_STALE_CONN = 10,
  IBCM_REJ_INVALID_PATH_MTU = 26, IBCM_REJ_INSUFFICIENT_RESP_RES = 27, IBCM_REJ_CONSUMER = 28,
  IBCM_REJ_INVALID_RNR_RETRY = 29, IBCM_REJ_DUPLICATE_LOCAL_COMM_ID = 30,
  IBCM_REJ_UNSUPPORTED_CLASS_VERSION = 31,
};

/* REJ's / MRA's "message rejected / MRAed" codes */
enum ibcm_msg_code { IBCM_MSG_REQ = 0, IBCM_MSG_REP = 1, IBCM_MSG_OTHER = 2 };

/* Transport service types of a REQ */
enum ibcm_qp_type { IBCM_QPT_RC = 0, IBCM_QPT_UC = 1, IBCM_QPT_RD = 2 };

/* Negative reasons of ibcm_parse / ibcm_encode; the agent counts each. */
enum ibcm_err {
  IBCM_E_SHORT = -1,           /* fewer than IBCM_MAD_LEN bytes [IBCM-MAD-1] */
  IBCM_E_BASE_VERSION = -2,    /* BaseVersion != 1 [IBCM-MAD-2] */
  IBCM_E_CLASS = -3,           /* MgmtClass != 0x07 [IBCM-MAD-2] */
  IBCM_E_CLASS_VERSION = -4,   /* ClassVersion != 2 [IBCM-MAD-2] */
  IBCM_E_METHOD = -5,          /* not Send [IBCM-MAD-3] */
  IBCM_E_ATTR = -6,            /* unknown attribute [IBCM-MAD-4] */
  IBCM_E_INVAL = -7,           /* encode: a field too wide or private data too long */
};

/* The private data of the largest attribute (RTU, DREP). */
#define IBCM_PRIVATE_MAX     224
#define IBCM_REQ_PRIVATE     92
#define IBCM_REP_PRIVATE     196
#define IBCM_REJ_PRIVATE     148
#define IBCM_ARI_MAX         72          /* REJ's ARI, SIDR_REP's additional information */

/* The project extension: xv6 capability bits (uapi.h's RDMA_XV6_CAP_*, e.g.
 * RDMA_XV6_CAP_SR) ride in reserved fields that a standard receiver ignores:
 * REQ bytes 24..27, REP byte 15 [IBCM-XV6-1]. The REP's room is 8 bits. */
#define IBCM_XV6_CAPS_MASK   0xffu

/* One path of a REQ (primary or alternate). */
struct ibcm_path {
  uint16_t local_lid, remote_lid;
  uint8_t local_gid[16], remote_gid[16];
  uint32_t flow_label;
  uint8_t packet_rate, traffic_class, hop_limit, sl, subnet_local, local_ack_timeout;
};

/* A decoded CM MAD: the header and the union of the attributes' fields,
 * named as in IBTA vol 1 12.6. The field table in ibcm_mad.c says which
 * attribute carries which field where. private_len: on parse, the room of
 * the attribute (the wire has no length); on encode, the bytes to copy (the
 * rest of the room is zeroed). */
struct ibcm_msg {
  /* MAD header */
  uint8_t base_version, mgmt_class, class_version, method;
  uint16_t status, class_specific;
  uint64_t tid;
  uint16_t attr_id;
  uint32_t attr_mod;
  /* REQ, REP, MRA, REJ, RTU, DREQ, DREP */
  uint32_t local_comm_id, remote_comm_id;
  uint64_t service_id;                    /* REQ, SIDR_REQ, SIDR_REP */
  uint64_t local_ca_guid;                 /* REQ, REP */
  uint32_t local_qkey;                    /* REQ, REP */
  uint32_t local_qpn, local_eecn, remote_eecn;
  uint8_t responder_resources, initiator_depth;
  uint8_t remote_cm_response_timeout, transport_service_type, end_to_end_flow_control;
  uint32_t starting_psn;
  uint8_t local_cm_response_timeout, retry_count;
  uint16_t partition_key;                 /* REQ, SIDR_REQ */
  uint8_t path_mtu, rdc_exists, rnr_retry_count, max_cm_retries, srq, extended_transport_type;
  struct ibcm_path primary, alternate;    /* REQ */
  uint8_t target_ack_delay, failover_accepted;            /* REP */
  uint8_t message_mraed, service_timeout;                 /* MRA */
  uint8_t message_rejected;                               /* REJ */
  uint8_t ari_len;                        /* REJ: Reject Info Length; SIDR_REP: Add. Info Length */
  uint16_t reason;                        /* REJ */
  uint8_t ari[IBCM_ARI_MAX];              /* REJ: ARI; SIDR_REP: Additional Information */
  uint32_t remote_qpn_eecn;               /* DREQ */
  uint32_t request_id;                    /* SIDR_REQ, SIDR_REP */
  uint8_t sidr_status;                    /* SIDR_REP */
  uint32_t sidr_qpn, sidr_qkey;           /* SIDR_REP */
  uint8_t private_len;
  uint8_t private_data[IBCM_PRIVATE_MAX];
  uint32_t xv6_caps;                      /* REQ, REP: the project extension [IBCM-XV6-1] */
};

/* Encode m (method, versions, class set by the codec) into buf. Returns
 * IBCM_MAD_LEN or a negative enum ibcm_err. */
int ibcm_encode(const struct ibcm_msg *m, uint8_t buf[IBCM_MAD_LEN]);
/* Parse a MAD. Returns 0 or a negative enum ibcm_err (m then holds what
 * was read of the header). */
int ibcm_parse(struct ibcm_msg *m, const uint8_t *buf, size_t len);
/* The private data room of an attribute (0 for an unknown one). */
uint8_t ibcm_private_room(uint16_t attr_id);
/* Field-table introspection for tests: number of fields, and the i-th's
 * attribute, name, byte offset (in the attribute), bit offset (from the
 * byte's most significant bit) and width in bits. Returns 0, or -1 past the end. */
int ibcm_field_count(void);
int ibcm_field_info(int i, uint16_t *attr_id, const char **name, uint16_t *byte,
                    uint8_t *bit, uint16_t *width);

/* ------------------------------------------------------------------ */
/* rdma_cm's IP mapping [IBCM-CMA-*]                                   */
/* ------------------------------------------------------------------ */

#define IBCM_PS_TCP         0x0106      /* rdma_cm port spaces (RDMA_PS_*) */
#define IBCM_PS_UDP         0x0111
#define IBCM_CMA_HDR_LEN    36          /* rdma_cm's addressing header in REQ private data */
#define IBCM_CMA_VERSION    0x00        /* the header's version byte [IBCM-CMA-2] */
/* The consumer's private data room behind the header in a REQ: 92 - 36 */
#define IBCM_CMA_REQ_PRIVATE (IBCM_REQ_PRIVATE - IBCM_CMA_HDR_LEN)

/* 0x0000000001 PS(16) port(16) [IBCM-CMA-1] */
uint64_t ibcm_service_id(uint16_t port_space, uint16_t port);
int ibcm_cma_hdr_encode(uint8_t out[IBCM_CMA_HDR_LEN], uint32_t src_ip, uint32_t dst_ip,
                        uint16_t src_port);                    /* IPs and port host order; 0 */
int ibcm_cma_hdr_parse(const uint8_t *priv, size_t len, uint32_t *src_ip, uint32_t *dst_ip,
                       uint16_t *src_port);                    /* 0 or -1 */
void ibcm_gid_from_ipv4(uint8_t gid[16], uint32_t ip);         /* ::ffff:a.b.c.d */
int ibcm_gid_to_ipv4(const uint8_t gid[16], uint32_t *ip);     /* 0, or -1 if not IPv4-mapped */

/* ------------------------------------------------------------------ */
/* The agent (ibcm.c) [IBCM-STATE-*] [IBCM-TMO-*]                      */
/* ------------------------------------------------------------------ */

/* Where a MAD comes from / goes to: the peer's QP1 over RoCEv2. */
struct ibcm_peer {
  uint8_t gid[16];                      /* the peer's GID (IPv4-mapped ::ffff:a.b.c.d) */
  uint32_t qpn;                         /* its GSI QP (1) -- from the received wc's src_qp */
  uint16_t pkey_index;                  /* 0 */
};

/* What the consumer supplies for a REQ (connect) and a REP (accept). */
struct ibcm_req_param {
  uint64_t service_id;
  uint32_t qpn, starting_psn;
  uint8_t qp_type;                      /* enum ibcm_qp_type: RC (UC later) */
  uint8_t responder_resources, initiator_depth;
  uint8_t path_mtu;                     /* IBTA encoding: 1=256 ... 5=4096 */
  uint8_t retry_count, rnr_retry_count;
  uint8_t local_cm_response_timeout, remote_cm_response_timeout;   /* 4.096us * 2^x */
  uint8_t max_cm_retries;               /* 0..15 */
  uint8_t local_ack_timeout;
  uint8_t srq;
  uint8_t sgid[16], dgid[16];           /* the path: our GID, the peer's */
  uint32_t xv6_caps;                    /* RDMA_XV6_CAP_SR etc., ridden in a reserved field */
  uint8_t private_len; uint8_t private_data[IBCM_REQ_PRIVATE];
};
struct ibcm_rep_param {
  uint32_t qpn, starting_psn;
  uint8_t responder_resources, initiator_depth;
  uint8_t rnr_retry_count, target_ack_delay, srq;
  uint32_t xv6_caps;
  uint8_t private_len; uint8_t private_data[IBCM_REP_PRIVATE];
};

enum ibcm_event_type {
  IBCM_EV_REQ = 1,        /* passive: a new connection on a listener; conn is new; msg = the REQ */
  IBCM_EV_REP,            /* active: REP arrived; consumer moves its QP to RTR/RTS, then ibcm_send_rtu */
  IBCM_EV_ESTABLISHED,    /* passive: RTU arrived (or ibcm_established) */
  IBCM_EV_REJ,            /* REJ arrived (msg: reason, ARI, private data) */
  IBCM_EV_TIMEOUT,        /* REQ or REP retries exhausted (active: like Linux's UNREACHABLE/ETIMEDOUT) */
  IBCM_EV_DREQ,           /* peer disconnects: consumer moves QP to ERR, then ibcm_disconnect sends DREP */
  IBCM_EV_DISCONNECTED,   /* our DREQ got a DREP, or its retries ran out */
  IBCM_EV_TIMEWAIT_EXIT,  /* the connection's IDs may be reused; ibcm_release may follow */
  IBCM_EV_SIDR_REQ, IBCM_EV_SIDR_REP,
};
struct ibcm_event {
  enum ibcm_event_type type;
  int conn;               /* connection handle */
  void *ctx;              /* the consumer's pointer given at connect / listen / ibcm_set_ctx */
  struct ibcm_msg msg;    /* the message that caused it (zeroed for timeouts) */
  struct ibcm_peer peer;
};

/* States of a connection (IBTA 12.9) [IBCM-STATE-1] */
enum ibcm_state {
  IBCM_FREE = 0, IBCM_IDLE, IBCM_REQ_SENT, IBCM_REQ_RCVD, IBCM_MRA_REQ_RCVD,
  IBCM_REP_SENT, IBCM_REP_RCVD, IBCM_MRA_REP_RCVD, IBCM_ESTABLISHED,
  IBCM_DREQ_SENT, IBCM_DREQ_RCVD, IBCM_TIMEWAIT,
  IBCM_SIDR_REQ_SENT, IBCM_SIDR_REQ_RCVD,          /* a SIDR exchange (UD services) [IBCM-SIDR-1] */
};

/* SIDR_REP status [IBCM-SIDR-2] */
enum ibcm_sidr_status {
  IBCM_SIDR_SUCCESS = 0, IBCM_SIDR_UNSUPPORTED = 1, IBCM_SIDR_REJECT = 2, IBCM_SIDR_NO_QP = 3,
  IBCM_SIDR_REDIRECT = 4, IBCM_SIDR_UNSUPPORTED_VERSION = 5,
};
/* A SIDR_REQ carries no timeouts: its sender waits this (code, [IBCM-TMO-1]) plus two packet
 * lifetimes per try, for this many retries [IBCM-SIDR-3]. */
#define IBCM_SIDR_RESPONSE_TIMEOUT 18
#define IBCM_SIDR_MAX_RETRIES      15

/* Capacities. Every RC QP has at most one connection, so the table holds as
 * many as the device has QPs (uapi.h's RDMA_MAX_QP). Listeners: rdma_cm ids
 * listening, all processes together. The queues hold what one ibcm_recv /
 * ibcm_timeout produces before the caller polls; when full, the agent stops
 * (timeouts stay due) or drops the MAD (the peer retransmits) and counts. */
#define IBCM_MAX_CONN      RDMA_MAX_QP
#define IBCM_MAX_LISTEN    32
#define IBCM_EV_QUEUE      16
#define IBCM_OUT_QUEUE     16
#define IBCM_CONN_BITS     9             /* 2^9 >= IBCM_MAX_CONN: the index part of a comm ID */
#define IBCM_PKT_LIFETIME  14            /* packet lifetime code, 4.096us * 2^14 = 67 ms [IBCM-TMO-1] */
#define IBCM_HOP_LIMIT     64            /* a REQ's primary path hop limit (RoCEv2: the IP TTL) */

struct ibcm_conn {
  uint8_t state;                        /* enum ibcm_state */
  uint8_t active, released, retries;
  uint32_t local_id, remote_id;         /* communication IDs [IBCM-STATE-2] */
  uint64_t remote_guid;
  uint64_t tid;                         /* TID of the REQ/REP/RTU exchange [IBCM-MAD-5] */
  uint64_t dreq_tid;                    /* TID of the DREQ/DREP exchange */
  uint64_t service_id;
  void *ctx;
  struct ibcm_peer peer;
  uint64_t deadline;                    /* RCT_NEVER if none */
  uint64_t rto;                         /* this exchange's retransmission interval, ns */
  int16_t heap_pos, listener;
  int16_t hnext;                        /* chain of the (remote_id, remote_guid) hash */
  int16_t qnext;                        /* chain of the (remote_qpn, remote_guid) hash */
  uint8_t qhashed;                      /* in that hash: the peer's QP is ours until time wait */
  uint8_t max_cm_retries, hashed, sidr;
  /* negotiated (REQ and REP fields both sides keep) */
  uint32_t local_qpn, remote_qpn;
  uint32_t local_psn, remote_psn;       /* Starting PSNs: ours = our rq_psn, the peer's = our sq_psn */
  uint8_t path_mtu, qp_type, local_rres, local_idepth, remote_rres, remote_idepth;
  uint8_t retry_count, rnr_retry_count, local_ack_timeout, target_ack_delay;
  uint8_t local_cm_tmo;                 /* how long the peer waits for us (code) */
  uint8_t remote_cm_tmo;                /* how long we wait for the peer (code) [IBCM-TMO-2] */
  uint8_t sgid[16], dgid[16];
  uint32_t local_caps, remote_caps;
  uint16_t last_len;                    /* last_mad holds the last message sent (0: none) */
  uint8_t last_mad[IBCM_MAD_LEN];       /* resent on timeouts and duplicates [IBCM-TMO-3] */
};

struct ibcm_counters { uint64_t rx, tx, retransmits, dropped_malformed, dropped_version,
                       dropped_unknown_attr, dropped_unknown_conn, duplicates, rej_no_listener,
                       rej_sent, stale, dropped_queue_full, dropped_class, dropped_method; };

struct ibcm_listener { uint64_t service_id; void *ctx; uint8_t used; };

struct ibcm_out { uint8_t mad[IBCM_MAD_LEN]; struct ibcm_peer to; };

/* Fixed-size, caller-allocated; touch only through the calls below. */
struct ibcm_agent {
  uint64_t local_guid;
  uint32_t rng;
  uint64_t next_tid;
  struct ibcm_conn conn[IBCM_MAX_CONN];
  int16_t free_head;                    /* free list through hnext */
  int16_t hash[IBCM_MAX_CONN];          /* (remote_id, remote_guid) -> conn */
  int16_t qhash[IBCM_MAX_CONN];         /* (remote_qpn, remote_guid) -> live conn [IBCM-STATE-15] */
  int16_t heap[IBCM_MAX_CONN];          /* timers: conns by deadline */
  int16_t heap_n;
  struct ibcm_listener listen[IBCM_MAX_LISTEN];
  struct ibcm_out out[IBCM_OUT_QUEUE];
  uint8_t out_head, out_n;
  struct ibcm_event ev[IBCM_EV_QUEUE];
  uint8_t ev_head, ev_n;
  struct ibcm_msg rx, tx;               /* scratch: the MAD being handled, the one being built */
  struct ibcm_counters cnt;
};

/* Negative results of the agent's calls. */
#define IBCM_ERR_STATE  (-20)           /* call not valid in the connection's state */
#define IBCM_ERR_HANDLE (-21)           /* no such connection / listener */
#define IBCM_ERR_FULL   (-22)           /* table or queue full */
#define IBCM_ERR_INUSE  (-23)           /* service ID already listened on (EADDRINUSE) */
#define IBCM_ERR_PARAM  (-24)           /* a parameter out of its range */

void ibcm_agent_init(struct ibcm_agent *a, uint64_t local_ca_guid, uint32_t seed);
int  ibcm_listen(struct ibcm_agent *a, uint64_t service_id, void *ctx);   /* listener handle or <0 (EADDRINUSE-like) */
void ibcm_unlisten(struct ibcm_agent *a, int listener);
int  ibcm_connect(struct ibcm_agent *a, uint64_t now, const struct ibcm_peer *to,
                  const struct ibcm_req_param *p, void *ctx);             /* conn handle or <0 */
int  ibcm_set_ctx(struct ibcm_agent *a, int conn, void *ctx);
int  ibcm_accept(struct ibcm_agent *a, uint64_t now, int conn, const struct ibcm_rep_param *p);
int  ibcm_reject(struct ibcm_agent *a, uint64_t now, int conn, uint16_t reason,
                 const void *priv, uint8_t len);
int  ibcm_send_rtu(struct ibcm_agent *a, uint64_t now, int conn, const void *priv, uint8_t len);
int  ibcm_established(struct ibcm_agent *a, int conn);  /* passive: first RC frame came before RTU */
int  ibcm_disconnect(struct ibcm_agent *a, uint64_t now, int conn);   /* DREQ, or DREP if DREQ came */
void ibcm_release(struct ibcm_agent *a, uint64_t now, int conn);  /* the consumer forgets conn (destroy id) */
void ibcm_recv(struct ibcm_agent *a, uint64_t now, const struct ibcm_peer *from,
               const uint8_t *mad, size_t len);
void ibcm_timeout(struct ibcm_agent *a, uint64_t now);
uint64_t ibcm_next_timeout(const struct ibcm_agent *a); /* RCT_NEVER if none */
int  ibcm_poll_mad(struct ibcm_agent *a, uint8_t buf[IBCM_MAD_LEN], struct ibcm_peer *to); /* len or 0 */
int  ibcm_poll_event(struct ibcm_agent *a, struct ibcm_event *ev);   /* 1 or 0 */
/* SIDR (UD services) [IBCM-SIDR-*]. Active: a SIDR_REQ to `to` (private data: rdma_cm's
 * addressing header first); IBCM_EV_SIDR_REP (msg: sidr_status, sidr_qpn, sidr_qkey) or
 * IBCM_EV_TIMEOUT follows; then ibcm_release. Passive: IBCM_EV_SIDR_REQ on a listener's
 * service ID; answer with ibcm_sidr_rep, then ibcm_release. Returns a handle / 0, or <0. */
int  ibcm_sidr_req(struct ibcm_agent *a, uint64_t now, const struct ibcm_peer *to,
                   uint64_t service_id, const void *priv, uint8_t len, void *ctx);
int  ibcm_sidr_rep(struct ibcm_agent *a, uint64_t now, int conn, uint8_t status, uint32_t qpn,
                   uint32_t qkey, const void *priv, uint8_t len);
/* The state of conn (IBCM_FREE for a bad handle), and its name. */
enum ibcm_state ibcm_conn_state(const struct ibcm_agent *a, int conn);
const char *ibcm_state_name(enum ibcm_state s);
/* The QP attributes a finished exchange yields (for rdma_init_qp_attr): RTR
 * and RTS. Valid from IBCM_EV_REQ on (passive: after ibcm_accept for the
 * REP's values) and from IBCM_EV_REP (active). The caller fills ah.dmac (ARP). */
int  ibcm_qp_attr(const struct ibcm_agent *a, int conn, struct rct_qp_attr *attr,
                  uint32_t *rtr_mask, uint32_t *rts_mask);
const struct ibcm_counters *ibcm_counters(const struct ibcm_agent *a);

#ifdef __cplusplus
}
#endif
#endif /* IBCM_H */
