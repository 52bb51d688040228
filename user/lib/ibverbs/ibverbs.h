// ibverbs.h: the RDMA verbs library for xv6-rdma user programs.
//
// Mirrors the names, fields, constants and meanings of libibverbs'
// <infiniband/verbs.h> for the subset this system implements (one RoCEv2
// device "rxe0" with one port, RC and UD QPs, SEND / SEND_WITH_IMM / RDMA WRITE /
// WRITE_WITH_IMM / READ, shared receive queues), so a program written for libibverbs builds with
// few changes; <infiniband/verbs.h> (user/include) names this header.
// Functions libibverbs makes static inline (ibv_poll_cq, ibv_post_send,
// ibv_post_recv, ibv_req_notify_cq) are ordinary functions here. Errors:
// functions returning int return 0 or an errno value; functions returning
// a pointer return NULL and set errno. Implementation: user/lib/ibverbs/ibverbs.c over
// the SYS_rdma_* system calls (kernel/lib/uapi.h). The constants the
// kernel sees (IBV_QP_*, IBV_SEND_*, IBV_WR_*, IBV_WC_*, IBV_EVENT_*,
// IBV_PORT_*, IBV_ACCESS_*, IBV_QPS_*, IBV_MTU_*) and struct ibv_sge are
// defined once, in uapi.h, with libibverbs' names and values.
//
// Extensions (not in libibverbs) carry the prefix ibvx_.
#ifndef IBVERBS_H
#define IBVERBS_H

#include "user.h"

// uint*_t, errno and its E* values, and the byte-order macros come from
// user.h (the C library's <stdint.h>, <errno.h>, <endian.h>).
typedef unsigned int       __be32;
typedef unsigned long long __be64;

union ibv_gid {
  uint8_t raw[16];
  struct { __be64 subnet_prefix; __be64 interface_id; } global;
};

enum ibv_node_type { IBV_NODE_UNKNOWN = -1, IBV_NODE_CA = 1 };
enum ibv_transport_type { IBV_TRANSPORT_UNKNOWN = -1, IBV_TRANSPORT_IB = 0 };

struct ibv_device {
  enum ibv_node_type node_type;
  enum ibv_transport_type transport_type;
  char name[64];
  char dev_name[64];
};

struct ibv_context {
  struct ibv_device *device;
  int cmd_fd, async_fd, num_comp_vectors;
};


struct ibv_device_attr {
  char fw_ver[64];
  __be64 node_guid;
  __be64 sys_image_guid;
  uint64_t max_mr_size;
  uint64_t page_size_cap;
  uint32_t vendor_id;
  uint32_t vendor_part_id;
  uint32_t hw_ver;
  int max_qp;
  int max_qp_wr;
  unsigned int device_cap_flags;
  int max_sge;
  int max_sge_rd;
  int max_cq;
  int max_cqe;
  int max_mr;
  int max_pd;
  int max_qp_rd_atom;
  int max_ee_rd_atom;
  int max_res_rd_atom;
  int max_qp_init_rd_atom;
  int max_ee_init_rd_atom;
  enum ibv_atomic_cap atomic_cap;
  int max_ee, max_rdd, max_mw, max_raw_ipv6_qp, max_raw_ethy_qp;
  int max_mcast_grp, max_mcast_qp_attach, max_total_mcast_qp_attach;
  int max_ah, max_fmr, max_map_per_fmr, max_srq, max_srq_wr, max_srq_sge;
  uint16_t max_pkeys;
  uint8_t local_ca_ack_delay;
  uint8_t phys_port_cnt;
};

enum { IBV_LINK_LAYER_UNSPECIFIED, IBV_LINK_LAYER_INFINIBAND, IBV_LINK_LAYER_ETHERNET };

// libibverbs' port capability bits that this port has.
enum ibv_port_cap_flags { IBV_PORT_CM_SUP = 1 << 16, IBV_PORT_IP_BASED_GIDS = 1 << 26 };

// ibv_port_attr's active_width, active_speed, max_vl_num and phys_state
// carry the IBTA PortInfo encodings (vol. 1, 14.2.5.6), which libibverbs
// passes through and ibv_devinfo prints; libibverbs names none of them, so
// the names here are extensions. The port is an emulated E1000 (1 Gb/s):
// 1X at SDR (2.5 Gb/s signalling), as Linux reports an Ethernet port of
// 1 Gb/s or less (rxe), one data VL, physical state LinkUp.
enum { IBVX_WIDTH_1X = 1, IBVX_WIDTH_4X = 2, IBVX_WIDTH_8X = 4, IBVX_WIDTH_12X = 8, IBVX_WIDTH_2X = 16 };
enum {
  IBVX_SPEED_SDR = 1, IBVX_SPEED_DDR = 2, IBVX_SPEED_QDR = 4, IBVX_SPEED_FDR10 = 8,
  IBVX_SPEED_FDR = 16, IBVX_SPEED_EDR = 32, IBVX_SPEED_HDR = 64, IBVX_SPEED_NDR = 128,
};
enum { IBVX_VL0 = 1, IBVX_VL0_1 = 2, IBVX_VL0_3 = 3, IBVX_VL0_7 = 4, IBVX_VL0_14 = 5 };
enum { IBVX_PHYS_SLEEP = 1, IBVX_PHYS_POLLING = 2, IBVX_PHYS_DISABLED = 3,
       IBVX_PHYS_TRAINING = 4, IBVX_PHYS_LINK_UP = 5, IBVX_PHYS_ERROR_RECOVERY = 6 };

struct ibv_port_attr {
  enum ibv_port_state state;
  enum ibv_mtu max_mtu;
  enum ibv_mtu active_mtu;
  int gid_tbl_len;
  uint32_t port_cap_flags;
  uint32_t max_msg_sz;
  uint32_t bad_pkey_cntr;
  uint32_t qkey_viol_cntr;
  uint16_t pkey_tbl_len;
  uint16_t lid;
  uint16_t sm_lid;
  uint8_t lmc;
  uint8_t max_vl_num;
  uint8_t sm_sl;
  uint8_t subnet_timeout;
  uint8_t init_type_reply;
  uint8_t active_width;
  uint8_t active_speed;
  uint8_t phys_state;
  uint8_t link_layer;
  uint8_t flags;
};

struct ibv_pd {
  struct ibv_context *context;
  uint32_t handle;
};

struct ibv_mr {
  struct ibv_context *context;
  struct ibv_pd *pd;
  void *addr;
  size_t length;
  uint32_t handle;
  uint32_t lkey;
  uint32_t rkey;
};

struct ibv_comp_channel {
  struct ibv_context *context;
  int fd;               // a file descriptor: poll() (POLLIN: an event waits), fcntl(O_NONBLOCK)
  int refcnt;
};

struct ibv_cq {
  struct ibv_context *context;
  struct ibv_comp_channel *channel;
  void *cq_context;
  uint32_t handle;
  int cqe;
  uint32_t comp_events_completed;
  uint32_t async_events_completed;
  struct rdma_cq_ring *ring;   // the CQ's ring mapped into the process (NULL: polls are system calls)
};

const char *ibv_wc_status_str(enum ibv_wc_status status);

struct ibv_wc {
  uint64_t wr_id;
  enum ibv_wc_status status;
  enum ibv_wc_opcode opcode;
  uint32_t vendor_err;
  uint32_t byte_len;
  union { __be32 imm_data; uint32_t invalidated_rkey; };
  uint32_t qp_num;
  uint32_t src_qp;
  unsigned int wc_flags;
  uint16_t pkey_index;
  uint16_t slid;
  uint8_t sl;
  uint8_t dlid_path_bits;
};

enum ibv_qp_type { IBV_QPT_RC = 2, IBV_QPT_UC, IBV_QPT_UD };

struct ibv_qp_cap {
  uint32_t max_send_wr;
  uint32_t max_recv_wr;
  uint32_t max_send_sge;
  uint32_t max_recv_sge;
  uint32_t max_inline_data;
};

// Shared receive queues (ibv_create_srq(3), ibv_modify_srq(3),
// ibv_query_srq(3), proto-spec srq.md). IBV_SRQ_MAX_WR and IBV_SRQ_LIMIT
// (ibv_modify_srq's mask) are uapi.h's.
struct ibv_srq_attr {
  uint32_t max_wr;
  uint32_t max_sge;
  uint32_t srq_limit;
};

struct ibv_srq_init_attr {
  void *srq_context;
  struct ibv_srq_attr attr;
};

struct ibv_srq {
  struct ibv_context *context;
  void *srq_context;
  struct ibv_pd *pd;
  uint32_t handle;
  uint32_t events_completed;
};

struct ibv_qp_init_attr {
  void *qp_context;
  struct ibv_cq *send_cq;
  struct ibv_cq *recv_cq;
  struct ibv_srq *srq;
  struct ibv_qp_cap cap;
  enum ibv_qp_type qp_type;
  int sq_sig_all;
};

enum ibv_mig_state { IBV_MIG_MIGRATED, IBV_MIG_REARM, IBV_MIG_ARMED };

struct ibv_qp {
  struct ibv_context *context;
  void *qp_context;
  struct ibv_pd *pd;
  struct ibv_cq *send_cq;
  struct ibv_cq *recv_cq;
  struct ibv_srq *srq;
  uint32_t handle;
  uint32_t qp_num;
  enum ibv_qp_state state;
  enum ibv_qp_type qp_type;
  uint32_t events_completed;
  struct rdma_sq_ring *sq_ring;  // the send ring mapped into the process (NULL: posts are system calls)
  struct rdma_rq_ring *rq_ring;  // the receive ring (NULL: none, or an SRQ's QP)
};

struct ibv_global_route {
  union ibv_gid dgid;
  uint32_t flow_label;
  uint8_t sgid_index;
  uint8_t hop_limit;
  uint8_t traffic_class;
};

struct ibv_ah_attr {
  struct ibv_global_route grh;
  uint16_t dlid;
  uint8_t sl;
  uint8_t src_path_bits;
  uint8_t static_rate;
  uint8_t is_global;
  uint8_t port_num;
};

struct ibv_qp_attr {
  enum ibv_qp_state qp_state;
  enum ibv_qp_state cur_qp_state;
  enum ibv_mtu path_mtu;
  enum ibv_mig_state path_mig_state;
  uint32_t qkey;
  uint32_t rq_psn;
  uint32_t sq_psn;
  uint32_t dest_qp_num;
  unsigned int qp_access_flags;
  struct ibv_qp_cap cap;
  struct ibv_ah_attr ah_attr;
  struct ibv_ah_attr alt_ah_attr;
  uint16_t pkey_index;
  uint16_t alt_pkey_index;
  uint8_t en_sqd_async_notify;
  uint8_t sq_draining;
  uint8_t max_rd_atomic;
  uint8_t max_dest_rd_atomic;
  uint8_t min_rnr_timer;
  uint8_t port_num;
  uint8_t timeout;
  uint8_t retry_cnt;
  uint8_t rnr_retry;
  uint8_t alt_port_num;
  uint8_t alt_timeout;
  uint32_t rate_limit;
};

// An address handle: where a UD send goes (ibv_create_ah).
struct ibv_ah {
  struct ibv_context *context;
  struct ibv_pd *pd;
  uint32_t handle;
};

struct ibv_send_wr {
  uint64_t wr_id;
  struct ibv_send_wr *next;
  struct ibv_sge *sg_list;
  int num_sge;
  enum ibv_wr_opcode opcode;
  unsigned int send_flags;
  union { __be32 imm_data; uint32_t invalidate_rkey; };
  union {
    struct { uint64_t remote_addr; uint32_t rkey; } rdma;
    struct { uint64_t remote_addr; uint64_t compare_add; uint64_t swap; uint32_t rkey; } atomic;
    struct { struct ibv_ah *ah; uint32_t remote_qpn; uint32_t remote_qkey; } ud;
  } wr;
};

struct ibv_recv_wr {
  uint64_t wr_id;
  struct ibv_recv_wr *next;
  struct ibv_sge *sg_list;
  int num_sge;
};

struct ibv_async_event {
  union { struct ibv_cq *cq; struct ibv_qp *qp; struct ibv_srq *srq; int port_num; } element;
  enum ibv_event_type event_type;
};

// Devices and contexts.
struct ibv_device **ibv_get_device_list(int *num_devices);
void ibv_free_device_list(struct ibv_device **list);
const char *ibv_get_device_name(struct ibv_device *device);
struct ibv_context *ibv_open_device(struct ibv_device *device);
int ibv_close_device(struct ibv_context *context);
int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *device_attr);
int ibv_query_port(struct ibv_context *context, uint8_t port_num, struct ibv_port_attr *port_attr);
int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index, union ibv_gid *gid);
int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event);
void ibv_ack_async_event(struct ibv_async_event *event);

// Protection domains and memory regions.
struct ibv_pd *ibv_alloc_pd(struct ibv_context *context);
int ibv_dealloc_pd(struct ibv_pd *pd);
struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access);
int ibv_dereg_mr(struct ibv_mr *mr);

// Address handles (UD). RoCE: attr->is_global with grh.dgid an IPv4-mapped
// GID, port_num 1; the destination's MAC is resolved here (ARP): NULL with
// errno EHOSTUNREACH when it does not answer.
struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr);
int ibv_destroy_ah(struct ibv_ah *ah);

// Completion channels and queues.
struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context);
int ibv_destroy_comp_channel(struct ibv_comp_channel *channel);
struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
                             struct ibv_comp_channel *channel, int comp_vector);
int ibv_destroy_cq(struct ibv_cq *cq);
int ibv_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
int ibv_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context);
void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents);

// Queue pairs.
struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr);
int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask);
int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
                 struct ibv_qp_init_attr *init_attr);
int ibv_destroy_qp(struct ibv_qp *qp);
int ibv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
int ibv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);

// Shared receive queues. ibv_modify_srq: IBV_SRQ_LIMIT arms the limit
// event (IBV_EVENT_SRQ_LIMIT_REACHED, element.srq); IBV_SRQ_MAX_WR
// (resizing) is EINVAL: the device does not resize SRQs. ibv_destroy_srq
// is EBUSY while a QP uses the SRQ.
struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *srq_init_attr);
int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr, int srq_attr_mask);
int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr);
int ibv_destroy_srq(struct ibv_srq *srq);
int ibv_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *recv_wr, struct ibv_recv_wr **bad_recv_wr);

// Names.
const char *ibv_node_type_str(enum ibv_node_type node_type);
const char *ibv_port_state_str(enum ibv_port_state port_state);
const char *ibv_event_type_str(enum ibv_event_type event_type);
const char *ibvx_qp_state_str(enum ibv_qp_state state);
const char *ibvx_wr_opcode_str(enum ibv_wr_opcode op);
// ibv_devinfo's texts for a port's width ("1X"), speed ("2.5 Gbps") and
// physical state ("LINK_UP"); "invalid ..." for values outside the codes.
const char *ibvx_width_str(uint8_t width);
const char *ibvx_speed_str(uint8_t speed);
const char *ibvx_phys_state_str(uint8_t phys_state);
int ibv_mtu_to_num(enum ibv_mtu mtu);

// Doorbells elided (xv6-rdma): while the kernel has an RC QP's send ring
// armed (it has WRs in flight, so an ACK or a timer is due and its engine
// takes the ring in then, kernel/lib/uapi.h struct rdma_wq_ring),
// ibv_post_send writes the ring and makes no system call while fewer than
// this many entries wait untaken; the post that makes this many rings the
// doorbell, so a burst goes out without waiting for the next ACK (with no
// limit, 64 B SEND polling fell to a third). 4, 8, 16 and 32 measured within each
// other's spread for 64 B WRITE and SEND at 128 outstanding; 8 is kept
// (bench/results/msgrate-elide.md).
#define IBVX_WQ_ELIDE_MAX 8

// Extensions (xv6-rdma): transport options beyond libibverbs, applied with
// ibvx_modify_qp's extra mask bits (RDMA_QP_SR etc. in kernel/lib/uapi.h).
struct ibvx_qp_ext {
  int sr_enable;                 // selective repeat (both ends agreed in the CM)
  int adaptive_rto;              // RFC 6298-style retransmission timeout
  unsigned long long min_rto_ns;
  unsigned int max_inflight;     // request packets in flight (0 = default)
  unsigned char dmac[6];         // peer MAC for IBV_QP_AV; zero = kernel resolves
  int roce_v1;                   // with IBV_QP_AV: RoCE v1 (EtherType 0x8915) instead of v2
};
int ibvx_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
                   const struct ibvx_qp_ext *ext, int ext_mask);
// Sleep until the byte at addr (inside a registered MR) no longer equals
// old: a peer's RDMA WRITE changed it. A WRITE makes no completion at its
// target, so this is the sleeping form of polling the buffer. timeout_ms
// < 0 waits for ever. 0 = changed, ETIMEDOUT, EINVAL (bad address).
int ibvx_wait_write(const volatile void *addr, unsigned char old, int timeout_ms);
// Sleep until the CQ holds a completion (which stays there for
// ibv_poll_cq) or has overrun: the sleeping form of a poll loop for a CQ
// without a completion channel. timeout_ms < 0 waits for ever.
// 0 = a completion waits, ETIMEDOUT, EINVAL (not one of our CQs).
int ibvx_wait_cq(struct ibv_cq *cq, int timeout_ms);
// Tell the kernel the MAC of a peer IPv4 address (host order) for AVs.
int ibvx_set_neighbor(uint32_t ipv4, const uint8_t mac[6]);
// The IPv4 address (host order) inside an IPv4-mapped GID, 0 if not mapped.
uint32_t ibvx_gid_to_ipv4(const union ibv_gid *gid);
void ibvx_gid_from_ipv4(union ibv_gid *gid, uint32_t ipv4);

#endif
