// ibverbs.c: the verbs library (see ibverbs.h) over the SYS_rdma_* calls.
//
// Each verbs object is a malloc'd struct with the libibverbs fields; its
// `handle` is the kernel's handle. A CQ's completions and a QP's send and
// receive WRs go through rings mapped into the process (uapi.h struct
// rdma_cq_ring, struct rdma_wq_ring): polls make no system call, a post
// writes the list into the ring with its SGEs and rings the doorbell once,
// or not at all while the kernel has the send ring armed (it takes the
// ring in at its next engine pass, which is bound to come).
// Where the kernel did not map a ring, the library turns linked WR lists
// into arrays for one system call (the SGE lists stay in the caller's
// memory: the kernel reads them there). It converts between libibverbs'
// structs and the kernel ABI (kernel/lib/uapi.h), and maps kernel handles
// back to the caller's objects for events.
#include "user.h"
#include "ibverbs.h"
#include "rdma_sys.h"

// The QP of each handle, for async events (which name the QP by handle);
// every handle the kernel gives is below RDMA_MAX_QP (uapi.h).
static struct ibv_qp *qp_by_handle[RDMA_MAX_QP];
static struct ibv_srq *srq_by_handle[RDMA_MAX_SRQ];   // the same, for SRQ_LIMIT_REACHED

// IBV_SEND_INLINE: the library copies the payload into a registered ring
// of its own at post time, so the caller's buffer and lkey do not matter.
// The ring has 2 * max_send_wr slots: a slot is reused only after that
// many later posts succeeded, and at most max_send_wr WRs are outstanding,
// so the WR that used it has completed.
#define MAX_INLINE 128
struct qp_priv {
  struct ibv_qp qp;             // first: a struct ibv_qp * points here
  uint8_t *inl;                 // slots of MAX_INLINE bytes
  struct ibv_mr *inl_mr;
  uint32_t inl_slots, inl_next;
  uint32_t sq_size, rq_size;    // the mapped rings' entries: the granted max_send_wr / max_recv_wr
  uint32_t sq_prod, rq_prod;    // their producer indices: the library's own copies
  uint32_t max_send_sge, max_recv_sge;   // as granted
};

static struct ibv_device rxe0 = {
  .node_type = IBV_NODE_CA, .transport_type = IBV_TRANSPORT_IB,
  .name = "rxe0", .dev_name = "rxe0",
};

static void *fail_null(int e) { errno = e; return NULL; }

struct ibv_device **ibv_get_device_list(int *num_devices) {
  struct rdma_device_info info;
  int n = rdma_query_device(&info) == 0 ? 1 : 0;
  struct ibv_device **list = malloc(2 * sizeof *list);
  if (!list) return fail_null(ENOMEM);
  list[0] = n ? &rxe0 : NULL;
  list[1] = NULL;
  if (num_devices) *num_devices = n;
  return list;
}

void ibv_free_device_list(struct ibv_device **list) { free(list); }

const char *ibv_get_device_name(struct ibv_device *device) { return device ? device->name : NULL; }

struct ibv_context *ibv_open_device(struct ibv_device *device) {
  if (device != &rxe0) return fail_null(ENODEV);
  struct ibv_context *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return fail_null(ENOMEM);
  ctx->device = device;
  ctx->cmd_fd = ctx->async_fd = -1;
  ctx->num_comp_vectors = 1;
  return ctx;
}

int ibv_close_device(struct ibv_context *context) {
  free(context);
  return 0;
}

int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *a) {
  struct rdma_device_info d;
  if (!context || !a || rdma_query_device(&d) < 0) return EINVAL;
  memset(a, 0, sizeof *a);
  strcpy(a->fw_ver, "xv6-rdma 1.0");
  a->node_guid = a->sys_image_guid = htobe64(d.node_guid);
  a->max_mr_size = d.max_mr_size;
  a->page_size_cap = d.page_size_cap;
  a->vendor_id = d.vendor_id;
  a->vendor_part_id = d.vendor_part_id;
  a->hw_ver = d.hw_ver;
  a->max_qp = d.max_qp;
  a->max_qp_wr = d.max_qp_wr;
  a->max_sge = a->max_sge_rd = d.max_sge;
  a->max_cq = d.max_cq;
  a->max_cqe = d.max_cqe;
  a->max_mr = d.max_mr;
  a->max_pd = d.max_pd;
  a->max_qp_rd_atom = d.max_qp_rd_atom;
  a->max_qp_init_rd_atom = d.max_qp_init_rd_atom;
  a->max_res_rd_atom = d.max_res_rd_atom;
  a->atomic_cap = (enum ibv_atomic_cap)d.atomic_cap;
  a->max_pkeys = 1;
  a->local_ca_ack_delay = 15;
  a->phys_port_cnt = (uint8_t)d.phys_port_cnt;
  a->max_srq = d.max_srq;
  a->max_srq_wr = d.max_srq_wr;
  a->max_srq_sge = d.max_srq_sge;
  return 0;
}

int ibv_query_port(struct ibv_context *context, uint8_t port_num, struct ibv_port_attr *a) {
  struct rdma_port_info p;
  if (!context || !a || rdma_query_port(port_num, &p) < 0) return EINVAL;
  memset(a, 0, sizeof *a);
  a->state = (enum ibv_port_state)p.state;
  a->max_mtu = (enum ibv_mtu)p.max_mtu;
  a->active_mtu = (enum ibv_mtu)p.active_mtu;
  a->gid_tbl_len = p.gid_tbl_len;
  a->max_msg_sz = p.max_msg_sz;
  a->pkey_tbl_len = 1;
  a->port_cap_flags = IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS;   // GID 0 is the IPv4 address
  a->max_vl_num = IBVX_VL0;
  a->active_width = IBVX_WIDTH_1X;    // the link: ibverbs.h, "IBTA PortInfo encodings"
  a->active_speed = IBVX_SPEED_SDR;
  a->phys_state = IBVX_PHYS_LINK_UP;
  a->link_layer = IBV_LINK_LAYER_ETHERNET;
  return 0;
}

// The port's GID table: index 0 is the IPv4-mapped GID, the other entries
// below gid_tbl_len are empty (all zero); an index past it is EINVAL.
int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index, union ibv_gid *gid) {
  struct rdma_port_info p;
  if (!context || !gid || rdma_query_port(port_num, &p) < 0 || index < 0 || index >= p.gid_tbl_len) {
    errno = EINVAL;
    return -1;
  }
  memset(gid->raw, 0, 16);
  if (index == 0) memcpy(gid->raw, p.gid, 16);
  return 0;
}

int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event) {
  struct rdma_async_event e;
  if (!context || !event || rdma_get_async(&e, 1) < 0) return -1;
  event->event_type = (enum ibv_event_type)e.event_type;
  if (e.event_type == IBV_EVENT_CQ_ERR) event->element.cq = (struct ibv_cq *)(uint64_t)e.cookie;
  else if (e.event_type == IBV_EVENT_SRQ_LIMIT_REACHED)
    event->element.srq = (e.handle >= 0 && e.handle < RDMA_MAX_SRQ) ? srq_by_handle[e.handle] : NULL;
  else event->element.qp = (e.handle >= 0 && e.handle < RDMA_MAX_QP) ? qp_by_handle[e.handle] : NULL;
  return 0;
}

void ibv_ack_async_event(struct ibv_async_event *event) {
  if (event && event->event_type == IBV_EVENT_CQ_ERR && event->element.cq)
    event->element.cq->async_events_completed++;
}

struct ibv_pd *ibv_alloc_pd(struct ibv_context *context) {
  if (!context) return fail_null(EINVAL);
  struct ibv_pd *pd = malloc(sizeof *pd);
  if (!pd) return fail_null(ENOMEM);
  int h = rdma_alloc_pd();
  if (h < 0) { free(pd); return fail_null(ENOMEM); }
  pd->context = context;
  pd->handle = (uint32_t)h;
  return pd;
}

int ibv_dealloc_pd(struct ibv_pd *pd) {
  if (!pd) return EINVAL;
  if (rdma_dealloc_pd((int)pd->handle) < 0) return EBUSY;
  free(pd);
  return 0;
}

struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr) {
  if (!pd || !attr || !attr->is_global || attr->port_num != 1) return fail_null(EINVAL);
  struct rdma_ah_attr k = {
    .pd = (int)pd->handle, .dipv4 = ibvx_gid_to_ipv4(&attr->grh.dgid), .port_num = attr->port_num,
    .hop_limit = attr->grh.hop_limit, .traffic_class = attr->grh.traffic_class,
  };
  if (k.dipv4 == 0) return fail_null(EINVAL);
  struct ibv_ah *ah = malloc(sizeof *ah);
  if (!ah) return fail_null(ENOMEM);
  int h = rdma_create_ah(&k);
  if (h < 0) {
    free(ah);
    return fail_null(h == RDMA_NO_ROUTE ? EHOSTUNREACH : h == RDMA_NO_RESOURCES ? ENOMEM : EINVAL);
  }
  *ah = (struct ibv_ah){ .context = pd->context, .pd = pd, .handle = (uint32_t)h };
  return ah;
}

int ibv_destroy_ah(struct ibv_ah *ah) {
  if (!ah || rdma_destroy_ah((int)ah->handle) < 0) return EINVAL;
  free(ah);
  return 0;
}

struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access) {
  if (!pd) return fail_null(EINVAL);
  struct ibv_mr *mr = malloc(sizeof *mr);
  if (!mr) return fail_null(ENOMEM);
  struct rdma_mr_keys k;
  int h = rdma_reg_mr((int)pd->handle, addr, length, access, &k);
  if (h < 0) { free(mr); return fail_null(EINVAL); }
  mr->context = pd->context;
  mr->pd = pd;
  mr->addr = addr;
  mr->length = length;
  mr->handle = (uint32_t)h;
  mr->lkey = k.lkey;
  mr->rkey = k.rkey;
  return mr;
}

int ibv_dereg_mr(struct ibv_mr *mr) {
  if (!mr) return EINVAL;
  if (sys_rdma_dereg_mr((int)mr->handle) < 0) return EBUSY;
  free(mr);
  return 0;
}

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context) {
  if (!context) return fail_null(EINVAL);
  struct ibv_comp_channel *ch = malloc(sizeof *ch);
  if (!ch) return fail_null(ENOMEM);
  ch->fd = rdma_create_chan();
  if (ch->fd < 0) { free(ch); return fail_null(ENOMEM); }
  ch->context = context;
  ch->refcnt = 0;
  return ch;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *channel) {
  if (!channel) return EINVAL;
  if (rdma_destroy_chan(channel->fd) < 0) return EBUSY;
  free(channel);
  return 0;
}

// Zeroed page-aligned memory of whole pages for a ring of bytes, or NULL.
static void *ring_alloc(unsigned long bytes) {
  unsigned long page = (unsigned long)getpagesize();
  bytes = (bytes + page - 1) / page * page;
  void *ring = memalign(page, bytes);
  if (ring) memset(ring, 0, bytes);
  return ring;
}

// CQ h's ring (uapi.h struct rdma_cq_ring) the kernel then writes: the
// ring, or NULL (the CQ then polls by system call, as before the rings).
static struct rdma_cq_ring *ring_map(int h, int cqe) {
  struct rdma_cq_ring *ring = ring_alloc(RDMA_CQ_RING_BYTES(cqe));
  if (ring && rdma_map_cq(h, ring) == 0) return ring;
  free(ring);
  return NULL;
}

// QP h's send or receive ring (RDMA_WQ_*) of size entries, which the
// kernel then reads at each doorbell: the ring, or NULL (none for a
// queue of size 0; posts to it are then system calls).
static struct rdma_wq_ring *wq_map(int h, int which, uint32_t size) {
  struct rdma_wq_ring *ring = size > 0 ? ring_alloc(RDMA_WQ_RING_BYTES(which, size)) : NULL;
  if (ring && rdma_map_qp(h, which, ring) == 0) return ring;
  free(ring);
  return NULL;
}

struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
                             struct ibv_comp_channel *channel, int comp_vector) {
  if (!context || cqe < 1) return fail_null(EINVAL);
  struct ibv_cq *cq = calloc(1, sizeof *cq);
  if (!cq) return fail_null(ENOMEM);
  int h = rdma_create_cq(cqe, channel ? channel->fd : -1, cq);
  if (h < 0) { free(cq); return fail_null(h == RDMA_NO_RESOURCES ? ENOMEM : EINVAL); }
  cq->context = context;
  cq->channel = channel;
  cq->cq_context = cq_context;
  cq->handle = (uint32_t)h;
  cq->cqe = cqe;
  cq->ring = ring_map(h, cqe);
  if (channel) channel->refcnt++;
  return cq;
}

int ibv_destroy_cq(struct ibv_cq *cq) {
  if (!cq) return EINVAL;
  if (rdma_destroy_cq((int)cq->handle) < 0) return EBUSY;
  if (cq->channel) cq->channel->refcnt--;
  free(cq->ring);      // the kernel unpinned it at destroy
  free(cq);
  return 0;
}

// The kernel's completion k as libibverbs' w.
static void wc_from_kernel(struct ibv_wc *w, const struct rdma_wc *k) {
  memset(w, 0, sizeof *w);
  w->wr_id = k->wr_id;
  w->status = (enum ibv_wc_status)k->status;
  w->opcode = (enum ibv_wc_opcode)k->opcode;
  w->vendor_err = k->vendor_err;
  w->byte_len = k->byte_len;
  w->imm_data = htonl(k->imm_data);      // the kernel's is host order
  w->qp_num = k->qp_num;
  w->src_qp = k->src_qp;
  w->wc_flags = k->wc_flags;
}

// Up to n completions from cq's mapped ring, with no system call: the
// entries below prod are complete (the kernel fences before advancing
// it), and cons moves only after they are read.
static int ring_poll(struct ibv_cq *cq, int n, struct ibv_wc *wc) {
  struct rdma_cq_ring *r = cq->ring;
  uint32_t cons = r->cons, prod = r->prod;
  int got = 0;
  __sync_synchronize();
  for (; got < n && cons != prod; got++, cons++)
    wc_from_kernel(&wc[got], &r->wc[cons % (uint32_t)cq->cqe]);
  __sync_synchronize();
  r->cons = cons;
  return got;
}

// A mapped CQ: the ring, and a system call only when the kernel held
// completions back from a full ring (it moves them, then the ring has them).
static int poll_mapped(struct ibv_cq *cq, int n, struct ibv_wc *wc) {
  if (cq->ring->error) return -1;
  int got = ring_poll(cq, n, wc);
  if (got < n && cq->ring->held) {
    if (rdma_poll_cq((int)cq->handle, 0, NULL) < 0) return got > 0 ? got : -1;
    got += ring_poll(cq, n - got, wc + got);
  }
  return got;
}

int ibv_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc) {
  struct rdma_wc kw[16];
  int total = 0;
  if (!cq || num_entries < 0) return -1;
  if (cq->ring) return poll_mapped(cq, num_entries, wc);
  while (total < num_entries) {
    int want = num_entries - total > 16 ? 16 : num_entries - total;
    int got = rdma_poll_cq((int)cq->handle, want, kw);
    if (got < 0) return total > 0 ? total : -1;
    for (int i = 0; i < got; i++) wc_from_kernel(&wc[total + i], &kw[i]);
    total += got;
    if (got < want) break;
  }
  return total;
}

int ibv_req_notify_cq(struct ibv_cq *cq, int solicited_only) {
  if (!cq || rdma_req_notify((int)cq->handle, solicited_only) < 0) return EINVAL;
  return 0;
}

int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context) {
  unsigned long long cookie;
  if (!channel || !cq || !cq_context) return -1;
  if (rdma_get_cq_event(channel->fd, &cookie) < 0) {
    int fl = fcntl(channel->fd, F_GETFL);      // -1 from an O_NONBLOCK channel: no event yet
    errno = fl >= 0 && (fl & O_NONBLOCK) ? EAGAIN : EINVAL;
    return -1;
  }
  *cq = (struct ibv_cq *)(uint64_t)cookie;
  *cq_context = (*cq)->cq_context;
  return 0;
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents) {
  if (cq) cq->comp_events_completed += nevents;
}

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *ia) {
  if (!pd || !ia || !ia->send_cq || !ia->recv_cq) return fail_null(EINVAL);
  if (ia->qp_type != IBV_QPT_RC && ia->qp_type != IBV_QPT_UD) return fail_null(ENOSYS);
  if (ia->cap.max_inline_data > MAX_INLINE) return fail_null(EINVAL);
  struct qp_priv *priv = calloc(1, sizeof *priv);
  if (!priv) return fail_null(ENOMEM);
  struct ibv_qp *qp = &priv->qp;
  struct rdma_qp_create c = {
    .pd = (int)pd->handle, .send_cq = (int)ia->send_cq->handle, .recv_cq = (int)ia->recv_cq->handle,
    .sq_sig_all = ia->sq_sig_all, .qp_type = ia->qp_type,
    .max_send_wr = ia->cap.max_send_wr, .max_recv_wr = ia->cap.max_recv_wr,
    .max_send_sge = ia->cap.max_send_sge, .max_recv_sge = ia->cap.max_recv_sge,
    .srq = ia->srq ? (int)ia->srq->handle + 1 : 0,
  };
  int h = sys_rdma_create_qp(&c);
  if (h < 0) { free(priv); return fail_null(h == RDMA_NO_RESOURCES ? ENOMEM : EINVAL); }
  if (ia->cap.max_inline_data > 0) {
    priv->inl_slots = 2 * c.max_send_wr;
    priv->inl = malloc((size_t)priv->inl_slots * MAX_INLINE);
    priv->inl_mr = priv->inl ? ibv_reg_mr(pd, priv->inl, (size_t)priv->inl_slots * MAX_INLINE, 0) : NULL;
    if (!priv->inl_mr) {
      sys_rdma_destroy_qp(h);
      free(priv->inl);
      free(priv);
      return fail_null(ENOMEM);
    }
  }
  ia->cap.max_send_wr = c.max_send_wr;
  ia->cap.max_recv_wr = c.max_recv_wr;
  ia->cap.max_send_sge = c.max_send_sge;
  ia->cap.max_recv_sge = c.max_recv_sge;
  ia->cap.max_inline_data = priv->inl ? MAX_INLINE : 0;
  priv->max_send_sge = c.max_send_sge;
  priv->max_recv_sge = c.max_recv_sge;
  priv->sq_size = c.max_send_wr;
  priv->rq_size = c.max_recv_wr;
  qp->sq_ring = (struct rdma_sq_ring *)wq_map(h, RDMA_WQ_SEND, c.max_send_wr);
  qp->rq_ring = (struct rdma_rq_ring *)wq_map(h, RDMA_WQ_RECV, c.max_recv_wr);
  qp->context = pd->context;
  qp->qp_context = ia->qp_context;
  qp->pd = pd;
  qp->send_cq = ia->send_cq;
  qp->recv_cq = ia->recv_cq;
  qp->srq = ia->srq;
  qp->handle = (uint32_t)h;
  qp->qp_num = c.qp_num;
  qp->state = IBV_QPS_RESET;
  qp->qp_type = ia->qp_type;
  if (h < RDMA_MAX_QP) qp_by_handle[h] = qp;
  return qp;
}

uint32_t ibvx_gid_to_ipv4(const union ibv_gid *g) {
  for (int i = 0; i < 10; i++)
    if (g->raw[i] != 0) return 0;
  if (g->raw[10] != 0xff || g->raw[11] != 0xff) return 0;
  return ((uint32_t)g->raw[12] << 24) | ((uint32_t)g->raw[13] << 16) |
         ((uint32_t)g->raw[14] << 8) | g->raw[15];
}

void ibvx_gid_from_ipv4(union ibv_gid *g, uint32_t ip) {
  memset(g, 0, sizeof *g);
  g->raw[10] = g->raw[11] = 0xff;
  g->raw[12] = ip >> 24;
  g->raw[13] = ip >> 16;
  g->raw[14] = ip >> 8;
  g->raw[15] = ip;
}

int ibvx_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
                   const struct ibvx_qp_ext *ext, int ext_mask) {
  if (!qp || !attr) return EINVAL;
  struct rdma_qp_attr k;
  memset(&k, 0, sizeof k);
  k.qp_state = attr->qp_state;
  k.cur_qp_state = attr->cur_qp_state;
  k.path_mtu = attr->path_mtu;
  k.qp_access_flags = attr->qp_access_flags;
  k.pkey_index = attr->pkey_index;
  k.port_num = attr->port_num;
  k.rq_psn = attr->rq_psn;
  k.sq_psn = attr->sq_psn;
  k.dest_qp_num = attr->dest_qp_num;
  k.timeout = attr->timeout;
  k.retry_cnt = attr->retry_cnt;
  k.rnr_retry = attr->rnr_retry;
  k.min_rnr_timer = attr->min_rnr_timer;
  k.max_rd_atomic = attr->max_rd_atomic;
  k.max_dest_rd_atomic = attr->max_dest_rd_atomic;
  k.qkey = attr->qkey;
  if (attr_mask & IBV_QP_AV) {
    // RoCE: the AV names the peer by its GID, which carries its IPv4.
    if (!attr->ah_attr.is_global) return EINVAL;
    k.dipv4 = ibvx_gid_to_ipv4(&attr->ah_attr.grh.dgid);
    if (k.dipv4 == 0) return EINVAL;
    k.hop_limit = attr->ah_attr.grh.hop_limit;
    k.traffic_class = attr->ah_attr.grh.traffic_class;
  }
  if (ext) {
    k.sr_enable = ext->sr_enable;
    k.adaptive_rto = ext->adaptive_rto;
    k.min_rto_ns = ext->min_rto_ns;
    k.max_inflight = ext->max_inflight;
    memcpy(k.dmac, ext->dmac, 6);
  }
  unsigned int mask = (unsigned int)attr_mask | (ext ? (unsigned int)ext_mask : 0);
  if (ext && ext->roce_v1 && (attr_mask & IBV_QP_AV)) mask |= RDMA_QP_ROCE_V1;
  if (rdma_modify_qp((int)qp->handle, &k, mask) < 0) return EINVAL;
  if (attr_mask & IBV_QP_STATE) qp->state = attr->qp_state;
  return 0;
}

int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask) {
  return ibvx_modify_qp(qp, attr, attr_mask, NULL, 0);
}

int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
                 struct ibv_qp_init_attr *init_attr) {
  struct rdma_qp_attr k;
  if (!qp || !attr || rdma_query_qp((int)qp->handle, &k) < 0) return EINVAL;
  memset(attr, 0, sizeof *attr);
  attr->qp_state = attr->cur_qp_state = (enum ibv_qp_state)k.qp_state;
  attr->path_mtu = (enum ibv_mtu)k.path_mtu;
  attr->qp_access_flags = k.qp_access_flags;
  attr->rq_psn = k.rq_psn;
  attr->sq_psn = k.sq_psn;
  attr->dest_qp_num = k.dest_qp_num;
  attr->timeout = (uint8_t)k.timeout;
  attr->retry_cnt = (uint8_t)k.retry_cnt;
  attr->rnr_retry = (uint8_t)k.rnr_retry;
  attr->min_rnr_timer = (uint8_t)k.min_rnr_timer;
  attr->max_rd_atomic = (uint8_t)k.max_rd_atomic;
  attr->max_dest_rd_atomic = (uint8_t)k.max_dest_rd_atomic;
  attr->qkey = k.qkey;
  attr->port_num = 1;
  attr->cap.max_send_wr = k.max_send_wr;
  attr->cap.max_recv_wr = k.max_recv_wr;
  attr->cap.max_send_sge = k.max_send_sge;
  attr->cap.max_recv_sge = k.max_recv_sge;
  attr->cap.max_inline_data = ((struct qp_priv *)qp)->inl ? MAX_INLINE : 0;   // as create granted
  attr->ah_attr.is_global = 1;
  attr->ah_attr.port_num = 1;
  attr->ah_attr.grh.hop_limit = k.hop_limit;
  attr->ah_attr.grh.traffic_class = k.traffic_class;
  ibvx_gid_from_ipv4(&attr->ah_attr.grh.dgid, k.dipv4);
  qp->state = attr->qp_state;
  if (init_attr) {
    memset(init_attr, 0, sizeof *init_attr);
    init_attr->qp_context = qp->qp_context;
    init_attr->send_cq = qp->send_cq;
    init_attr->recv_cq = qp->recv_cq;
    init_attr->cap = attr->cap;
    init_attr->qp_type = qp->qp_type;
  }
  return 0;
}

int ibv_destroy_qp(struct ibv_qp *qp) {
  if (!qp || sys_rdma_destroy_qp((int)qp->handle) < 0) return EINVAL;
  if (qp->handle < RDMA_MAX_QP) qp_by_handle[qp->handle] = NULL;
  struct qp_priv *priv = (struct qp_priv *)qp;
  if (priv->inl_mr) ibv_dereg_mr(priv->inl_mr);
  free(priv->inl);
  free(qp->sq_ring);   // the kernel unpinned them at destroy
  free(qp->rq_ring);
  free(priv);
  return 0;
}

#define POST_BATCH 16

// A WR's SGE list as the kernel reads it (struct ibv_sge is uapi.h's):
// -1 for a count the kernel would not take from a library caller.
static int sges_ok(const struct ibv_sge *sg, int n) {
  return n < 0 || n > RDMA_MAX_SGE || (n > 0 && !sg) ? -1 : 0;
}

// Gather the WR's SGEs into the next inline slot; *one replaces them.
static int inline_copy(struct qp_priv *priv, const struct ibv_send_wr *wr, struct rdma_send_wr *k,
                       struct ibv_sge *one, uint32_t ahead) {
  uint32_t total = 0;
  for (int i = 0; i < wr->num_sge; i++) total += wr->sg_list[i].length;
  if (!priv->inl || total > MAX_INLINE) return -1;
  uint8_t *slot = priv->inl + (size_t)((priv->inl_next + ahead) % priv->inl_slots) * MAX_INLINE;
  uint32_t off = 0;
  for (int i = 0; i < wr->num_sge; i++) {
    memcpy(slot + off, (const void *)wr->sg_list[i].addr, wr->sg_list[i].length);
    off += wr->sg_list[i].length;
  }
  *one = (struct ibv_sge){ .addr = (uint64_t)slot, .length = total, .lkey = priv->inl_mr->lkey };
  k->num_sge = total ? 1 : 0;
  k->sg_list = (unsigned long long)one;
  return 0;
}

static int is_inline(const struct ibv_send_wr *wr) {
  return (wr->send_flags & IBV_SEND_INLINE) && wr->opcode <= IBV_WR_SEND_WITH_IMM;   // SENDs and WRITEs only
}

// The kernel's form of a libibverbs send WR: the list becomes an array
// entry, the SGEs stay where the caller keeps them, imm_data host order;
// a UD QP's WR carries wr.ud (its AH by handle; none: -1, which the
// kernel refuses).
static void send_wr_out(const struct ibv_qp *qp, const struct ibv_send_wr *wr, struct rdma_send_wr *k) {
  *k = (struct rdma_send_wr){
    .wr_id = wr->wr_id, .opcode = wr->opcode, .send_flags = wr->send_flags & ~IBV_SEND_INLINE,
    .sg_list = (unsigned long long)wr->sg_list, .num_sge = wr->num_sge,
    .imm_data = ntohl(wr->imm_data), .remote_addr = wr->wr.rdma.remote_addr, .rkey = wr->wr.rdma.rkey,
  };
  if (wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP || wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
    k->remote_addr = wr->wr.atomic.remote_addr;
    k->rkey = wr->wr.atomic.rkey;
    k->compare_add = wr->wr.atomic.compare_add;
    k->swap = wr->wr.atomic.swap;
  }
  if (qp->qp_type != IBV_QPT_UD) return;
  k->ud_ah = wr->wr.ud.ah ? (int)wr->wr.ud.ah->handle : -1;
  k->ud_remote_qpn = wr->wr.ud.remote_qpn;
  k->ud_remote_qkey = wr->wr.ud.remote_qkey;
  k->ud_pad = 0;
}

// Publishes n new entries of a mapped ring of size entries (fence, then
// prod). A send ring the kernel armed, whose queue has room for all its
// entries (prod - retired <= size), with fewer than IBVX_WQ_ELIDE_MAX
// entries not yet taken, takes them with no system call
// (uapi.h struct rdma_wq_ring: the fence between prod and armed pairs
// with the kernel's between armed and prod). Otherwise it rings the
// doorbell: then *err is why the kernel refused the entry at err_at, if
// one of these. Returns the entries posted. A doorbell that failed (-1)
// took nothing of them: prod goes back to what the kernel took.
static int wq_ring_doorbell(struct ibv_qp *qp, int which, struct rdma_wq_ring *r, uint32_t *prod,
                            uint32_t n, uint32_t size, int *err) {
  if (n == 0) return 0;
  uint32_t start = *prod;
  __sync_synchronize();
  r->prod = *prod += n;
  __sync_synchronize();
  if (which == RDMA_WQ_SEND && r->armed && *prod - r->retired <= size && *prod - r->cons < IBVX_WQ_ELIDE_MAX)
    return (int)n;
  int done = rdma_doorbell((int)qp->handle, which);
  if (done < 0) {
    *err = EINVAL;
    *prod = r->cons;
    return 0;
  }
  uint32_t at = r->err_at - start;
  if (r->err == 0 || at >= n) return (int)n;
  *err = (int)r->err;
  return (int)at;
}

// The WR n places after wr in its list.
#define LIST_NTH(wr, n) ({ __typeof__(wr) w_ = (wr); for (uint32_t i_ = 0; i_ < (n); i_++) w_ = w_->next; w_; })

// A send WR the library can hand over: an opcode the QP's type takes and
// an SGE list within the QP's max_send_sge, an atomic's one 8-byte SGE
// (libibverbs reports these synchronously, EINVAL; the kernel refuses
// nothing else of an RC QP's WR in RTS, so a WR this passes can be posted
// with no doorbell); an inline WR's list becomes one SGE, as
// SYS_rdma_post_send's path takes it.
static int send_wr_ok(const struct qp_priv *priv, const struct ibv_send_wr *wr) {
  int ud = priv->qp.qp_type == IBV_QPT_UD;
  int atomic = wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP || wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD;
  if (ud ? wr->opcode != IBV_WR_SEND && wr->opcode != IBV_WR_SEND_WITH_IMM
         : (unsigned)wr->opcode > IBV_WR_ATOMIC_FETCH_AND_ADD) return 0;
  if (atomic && (wr->num_sge != 1 || !wr->sg_list || wr->sg_list[0].length != sizeof(uint64_t))) return 0;
  return sges_ok(wr->sg_list, wr->num_sge) == 0 && (is_inline(wr) || (uint32_t)wr->num_sge <= priv->max_send_sge);
}

// The end of a post through a mapped ring of n entries written for the
// list from start: done of them posted (err: why the kernel refused the
// next), then the first WR not written, wr (NULL: none), which failed the
// library's check (bad_arg) or found the ring full (libibverbs' ENOMEM:
// the ring holds the queue's max_*_wr, with the entries the kernel has
// not yet taken in: with those in its queue they are at most that many).
// 0, or the errno with *bad_wr the first WR not posted.
#define RING_POST_END(bad_wr, start, n, done, err, wr, bad_arg) ({ \
  int e_ = (done) < (n) ? ((err) ? (err) : EINVAL) : !(wr) ? 0 : (bad_arg) ? EINVAL : ENOMEM; \
  if (e_ && (bad_wr)) *(bad_wr) = (done) < (n) ? LIST_NTH(start, done) : (wr); \
  e_; })

// Sends through qp's mapped send ring: each WR checked, written into the
// next entry with its SGEs (or its inline slot's one SGE), then one
// doorbell for the list.
static int post_send_ring(struct qp_priv *priv, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr) {
  struct ibv_qp *qp = &priv->qp;
  struct ibv_send_wr *start = wr;
  uint32_t n = 0, inl_in_batch = 0;
  int bad_arg = 0, err = 0;
  uint32_t room = priv->sq_size - (priv->sq_prod - qp->sq_ring->h.cons);   // entries not yet taken stay
  for (; wr && n < room; wr = wr->next, n++) {
    struct rdma_sq_entry *e = &qp->sq_ring->e[(priv->sq_prod + n) % priv->sq_size];
    if (!send_wr_ok(priv, wr)) { bad_arg = 1; break; }
    send_wr_out(qp, wr, &e->wr);
    if (!is_inline(wr)) memcpy(e->sge, wr->sg_list, (size_t)wr->num_sge * sizeof *e->sge);
    else if (inline_copy(priv, wr, &e->wr, &e->sge[0], inl_in_batch++) < 0) { bad_arg = 1; break; }
  }
  uint32_t done = (uint32_t)wq_ring_doorbell(qp, RDMA_WQ_SEND, &qp->sq_ring->h, &priv->sq_prod, n, priv->sq_size, &err);
  struct ibv_send_wr *w = start;
  for (uint32_t i = 0; i < done; i++, w = w->next)   // the slots of accepted inline WRs are taken
    if (is_inline(w)) priv->inl_next++;
  return RING_POST_END(bad_wr, start, n, done, err, wr, bad_arg);
}

int ibv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr) {
  struct rdma_send_wr k[POST_BATCH];
  struct ibv_sge inl[POST_BATCH];
  struct ibv_send_wr *first[POST_BATCH];
  if (!qp) { if (bad_wr) *bad_wr = wr; return EINVAL; }
  if (qp->sq_ring) return post_send_ring((struct qp_priv *)qp, wr, bad_wr);
  while (wr) {
    int n = 0, bad_arg = 0;
    uint32_t inl_in_batch = 0;
    for (; wr && n < POST_BATCH; wr = wr->next, n++) {
      first[n] = wr;
      if ((unsigned)wr->opcode > IBV_WR_ATOMIC_FETCH_AND_ADD || sges_ok(wr->sg_list, wr->num_sge) < 0) {
        bad_arg = 1;
        break;
      }
      send_wr_out(qp, wr, &k[n]);
      if (is_inline(wr) && inline_copy((struct qp_priv *)qp, wr, &k[n], &inl[n], inl_in_batch++) < 0) {
        bad_arg = 1;
        break;
      }
    }
    int err = 0;
    int done = n > 0 ? sys_rdma_post_send((int)qp->handle, k, n, &err) : 0;
    if (done < 0) { done = 0; err = EINVAL; }
    for (int i = 0; i < done; i++)              // the slots of accepted inline WRs are taken
      if (is_inline(first[i])) ((struct qp_priv *)qp)->inl_next++;
    if (done < n || bad_arg) {
      if (bad_wr) *bad_wr = done < n ? first[done] : wr;
      return (done < n && err) ? err : EINVAL;
    }
  }
  return 0;
}

// Receives through qp's mapped receive ring, as post_send_ring.
static int post_recv_ring(struct qp_priv *priv, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr) {
  struct ibv_qp *qp = &priv->qp;
  struct ibv_recv_wr *start = wr;
  uint32_t n = 0;
  int bad_arg = 0, err = 0;
  for (; wr && n < priv->rq_size; wr = wr->next, n++) {
    struct rdma_rq_entry *e = &qp->rq_ring->e[(priv->rq_prod + n) % priv->rq_size];
    if (sges_ok(wr->sg_list, wr->num_sge) < 0 || (uint32_t)wr->num_sge > priv->max_recv_sge) {
      bad_arg = 1;
      break;
    }
    e->wr = (struct rdma_recv_wr){ .wr_id = wr->wr_id, .num_sge = wr->num_sge };
    memcpy(e->sge, wr->sg_list, (size_t)wr->num_sge * sizeof *e->sge);
  }
  uint32_t done = (uint32_t)wq_ring_doorbell(qp, RDMA_WQ_RECV, &qp->rq_ring->h, &priv->rq_prod, n, priv->rq_size, &err);
  return RING_POST_END(bad_wr, start, n, done, err, wr, bad_arg);
}

// Receive WRs to the QP or SRQ with handle h through post (the system
// call of one or the other): 0, or the errno of the first refused WR,
// *bad_wr pointing at it.
static int post_recv_list(int (*post)(int, struct rdma_recv_wr *, int, int *), int h,
                          struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr) {
  struct rdma_recv_wr k[POST_BATCH];
  struct ibv_recv_wr *first[POST_BATCH];
  while (wr) {
    int n = 0, bad_arg = 0;
    for (; wr && n < POST_BATCH; wr = wr->next, n++) {
      first[n] = wr;
      if (sges_ok(wr->sg_list, wr->num_sge) < 0) { bad_arg = 1; break; }
      k[n] = (struct rdma_recv_wr){ .wr_id = wr->wr_id, .sg_list = (unsigned long long)wr->sg_list,
                                    .num_sge = wr->num_sge };
    }
    int err = 0;
    int done = n > 0 ? post(h, k, n, &err) : 0;
    if (done < 0) { done = 0; err = EINVAL; }
    if (done < n || bad_arg) {
      if (bad_wr) *bad_wr = done < n ? first[done] : wr;
      return (done < n && err) ? err : EINVAL;
    }
  }
  return 0;
}

// A QP created with an SRQ takes no receive WR of its own [SRQ-TAKE-2]:
// the kernel refuses it (EINVAL).
int ibv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr) {
  if (!qp) { if (bad_wr) *bad_wr = wr; return EINVAL; }
  if (qp->rq_ring) return post_recv_ring((struct qp_priv *)qp, wr, bad_wr);
  return post_recv_list(sys_rdma_post_recv, (int)qp->handle, wr, bad_wr);
}

int ibv_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr) {
  if (!srq) { if (bad_wr) *bad_wr = wr; return EINVAL; }
  return post_recv_list(rdma_post_srq_recv, (int)srq->handle, wr, bad_wr);
}

// ---- shared receive queues (proto-spec srq.md) ----

struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *ia) {
  if (!pd || !ia) return fail_null(EINVAL);
  struct ibv_srq *srq = calloc(1, sizeof *srq);
  if (!srq) return fail_null(ENOMEM);
  struct rdma_srq_create c = { .pd = (int)pd->handle, .max_wr = ia->attr.max_wr, .max_sge = ia->attr.max_sge };
  int h = sys_rdma_create_srq(&c);
  if (h < 0) { free(srq); return fail_null(h == RDMA_NO_RESOURCES ? ENOMEM : EINVAL); }
  ia->attr.max_wr = c.max_wr;                   // [SRQ-VERB-1]
  ia->attr.max_sge = c.max_sge;
  srq->context = pd->context;
  srq->srq_context = ia->srq_context;
  srq->pd = pd;
  srq->handle = (uint32_t)h;
  if (h < RDMA_MAX_SRQ) srq_by_handle[h] = srq;
  return srq;
}

int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask) {
  struct rdma_srq_attr k;
  if (!srq || !attr) return EINVAL;
  k = (struct rdma_srq_attr){ attr->max_wr, attr->max_sge, attr->srq_limit };
  return rdma_modify_srq((int)srq->handle, &k, (unsigned)mask) < 0 ? EINVAL : 0;
}

int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr) {
  struct rdma_srq_attr k;
  if (!srq || !attr || rdma_query_srq((int)srq->handle, &k) < 0) return EINVAL;
  *attr = (struct ibv_srq_attr){ k.max_wr, k.max_sge, k.srq_limit };
  return 0;
}

int ibv_destroy_srq(struct ibv_srq *srq) {
  if (!srq) return EINVAL;
  int r = sys_rdma_destroy_srq((int)srq->handle);
  if (r < 0) return r == RDMA_BUSY ? EBUSY : EINVAL;       // [SRQ-VERB-4]
  if (srq->handle < RDMA_MAX_SRQ) srq_by_handle[srq->handle] = NULL;
  free(srq);
  return 0;
}

int ibvx_wait_write(const volatile void *addr, unsigned char old, int timeout_ms) {
  int r = rdma_wait_write(addr, old, timeout_ms);
  return r == 0 ? 0 : r == -2 ? ETIMEDOUT : EINVAL;
}

int ibvx_wait_cq(struct ibv_cq *cq, int timeout_ms) {
  int r = cq ? rdma_wait_cq((int)cq->handle, timeout_ms) : -1;
  return r == 0 ? 0 : r == -2 ? ETIMEDOUT : EINVAL;
}

int ibvx_set_neighbor(uint32_t ipv4, const uint8_t mac[6]) {
  return rdma_set_neigh(ipv4, mac) < 0 ? EINVAL : 0;
}

// libibverbs' strings for the enum values (ibv_wc_status_str(3),
// ibv_event_type_str(3)); "unknown" for a value outside the table.
#define NAME_OF(table, v) ((unsigned)(v) < sizeof(table) / sizeof((table)[0]) ? (table)[v] : "unknown")

static const char *const wc_status_names[] = {
  [IBV_WC_SUCCESS] = "success",
  [IBV_WC_LOC_LEN_ERR] = "local length error",
  [IBV_WC_LOC_QP_OP_ERR] = "local QP operation error",
  [IBV_WC_LOC_EEC_OP_ERR] = "local EE context operation error",
  [IBV_WC_LOC_PROT_ERR] = "local protection error",
  [IBV_WC_WR_FLUSH_ERR] = "Work Request Flushed Error",
  [IBV_WC_MW_BIND_ERR] = "memory management operation error",
  [IBV_WC_BAD_RESP_ERR] = "bad response error",
  [IBV_WC_LOC_ACCESS_ERR] = "local access error",
  [IBV_WC_REM_INV_REQ_ERR] = "remote invalid request error",
  [IBV_WC_REM_ACCESS_ERR] = "remote access error",
  [IBV_WC_REM_OP_ERR] = "remote operation error",
  [IBV_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
  [IBV_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
  [IBV_WC_LOC_RDD_VIOL_ERR] = "local RDD violation error",
  [IBV_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
  [IBV_WC_REM_ABORT_ERR] = "aborted error",
  [IBV_WC_INV_EECN_ERR] = "invalid EE context number",
  [IBV_WC_INV_EEC_STATE_ERR] = "invalid EE context state",
  [IBV_WC_FATAL_ERR] = "fatal error",
  [IBV_WC_RESP_TIMEOUT_ERR] = "response timeout error",
  [IBV_WC_GENERAL_ERR] = "general error",
};

const char *ibv_wc_status_str(enum ibv_wc_status status) {
  return NAME_OF(wc_status_names, status);
}

const char *ibv_node_type_str(enum ibv_node_type t) { return t == IBV_NODE_CA ? "InfiniBand channel adapter" : "unknown"; }

const char *ibv_port_state_str(enum ibv_port_state s) {
  static const char *const names[] = {
    [IBV_PORT_NOP] = "no state change (NOP)", [IBV_PORT_DOWN] = "down", [IBV_PORT_INIT] = "init",
    [IBV_PORT_ARMED] = "armed", [IBV_PORT_ACTIVE] = "active", [IBV_PORT_ACTIVE_DEFER] = "active deferred",
  };
  return NAME_OF(names, s);
}

const char *ibv_event_type_str(enum ibv_event_type e) {
  static const char *const names[] = {
    [IBV_EVENT_CQ_ERR] = "CQ error",
    [IBV_EVENT_QP_FATAL] = "local work queue catastrophic error",
    [IBV_EVENT_QP_REQ_ERR] = "invalid request local work queue error",
    [IBV_EVENT_QP_ACCESS_ERR] = "local access violation work queue error",
    [IBV_EVENT_COMM_EST] = "communication established",
    [IBV_EVENT_SQ_DRAINED] = "send queue drained",
    [IBV_EVENT_PATH_MIG] = "path migrated",
    [IBV_EVENT_PATH_MIG_ERR] = "path migration request error",
    [IBV_EVENT_DEVICE_FATAL] = "local catastrophic error",
    [IBV_EVENT_PORT_ACTIVE] = "port active",
    [IBV_EVENT_PORT_ERR] = "port error",
    [IBV_EVENT_LID_CHANGE] = "LID change",
    [IBV_EVENT_PKEY_CHANGE] = "P_Key change",
    [IBV_EVENT_SM_CHANGE] = "SM change",
    [IBV_EVENT_SRQ_ERR] = "SRQ catastrophic error",
    [IBV_EVENT_SRQ_LIMIT_REACHED] = "SRQ limit reached",
    [IBV_EVENT_QP_LAST_WQE_REACHED] = "last WQE reached",
    [IBV_EVENT_CLIENT_REREGISTER] = "client reregistration",
    [IBV_EVENT_GID_CHANGE] = "GID table change",
    [IBV_EVENT_WQ_FATAL] = "WQ fatal",
  };
  return NAME_OF(names, e);
}

const char *ibvx_qp_state_str(enum ibv_qp_state s) {
  static const char *const names[] = { "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR", "UNKNOWN" };
  return (unsigned)s < 8 ? names[s] : "UNKNOWN";
}

// The name of bit `code` in a one-bit-per-value encoding, else "invalid".
static const char *bit_name(const char *const *names, int n, unsigned code, const char *invalid) {
  for (int i = 0; i < n; i++)
    if (code == 1u << i) return names[i];
  return invalid;
}

const char *ibvx_width_str(uint8_t width) {
  static const char *const names[] = { "1X", "4X", "8X", "12X", "2X" };
  return bit_name(names, 5, width, "invalid width");
}

const char *ibvx_speed_str(uint8_t speed) {
  static const char *const names[] = { "2.5 Gbps", "5.0 Gbps", "10.0 Gbps", "10.0 Gbps",
                                       "14.0 Gbps", "25.0 Gbps", "50.0 Gbps", "100.0 Gbps" };
  return bit_name(names, 8, speed, "invalid speed");
}

const char *ibvx_phys_state_str(uint8_t s) {
  static const char *const names[] = { "invalid physical state", "SLEEP", "POLLING", "DISABLED",
                                       "PORT_CONFIGURATION TRAINING", "LINK_UP",
                                       "LINK_ERROR_RECOVERY" };
  return s < 7 ? names[s] : names[0];
}

const char *ibvx_wr_opcode_str(enum ibv_wr_opcode op) {
  static const char *const names[] = { "RDMA_WRITE", "RDMA_WRITE_WITH_IMM", "SEND",
                                       "SEND_WITH_IMM", "RDMA_READ", "ATOMIC_CMP_AND_SWP",
                                       "ATOMIC_FETCH_AND_ADD" };
  return (unsigned)op < sizeof names / sizeof names[0] ? names[op] : "unknown";
}

int ibv_mtu_to_num(enum ibv_mtu mtu) {
  return (mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096) ? 128 << mtu : -1;
}
