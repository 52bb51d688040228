// rdmatest: loopback self-test of the verbs layer and the transport.
//
// Two RC QPs in this process talk through the kernel's loopback path (no
// NIC). Every opcode at sizes 0, 1, MTU-1, MTU, MTU+1 and 1 MiB, then the
// error paths: bad rkey, out of bounds, missing access right, bad lkey,
// RNR retry exhaustion, flushes, busy objects, CQ overrun, completion
// channel, foreign handles, bad pointers to every verbs syscall, exit with
// work in flight, limits and async event queues; the atomic_* cases:
// CmpSwap and FetchAdd, their returned values and refusals. The ud_* cases: two UD
// QPs through an address handle to this guest's own address.
// Usage: rdmatest [-q] [-l] [-x name]... [name...]   (user/tests/testrun.h; -q
// skips the 1 MiB transfers). Each case runs in its own process; prints
// "test <name>: OK" or "test <name>: FAILED (<why>)" and "N passed, M failed".
#include "user.h"
#include "ibverbs.h"
#include "rdma_sys.h"
#include "rdma_util.h"
#include "testrun.h"

#define BIG (1024 * 1024)
static struct ibv_context *ctx;
static int mtu_bytes;
static enum ibv_mtu mtu;

// ---- a loopback pair: QP a <-> QP b, each with its own CQ and buffer ----
struct side { struct ibv_qp *qp; struct ibv_cq *cq; struct ibv_mr *mr; uint8_t *buf; void *raw; };
struct pair { struct ibv_pd *pd; struct side a, b; uint32_t len; };

// qp_access: the QPs' remote access flags and a's MR access; 0 = write and read.
struct pair_opts { int access_b; int rnr_retry; int cqe; int timeout; int qp_access; };

static int side_open_type(struct pair *p, struct side *s, uint32_t len, int access, int cqe,
                          enum ibv_qp_type type) {
  s->raw = malloc(len + 64);
  if (!s->raw) return -1;
  s->buf = (uint8_t *)s->raw + 3;          // deliberately not aligned
  s->cq = ibv_create_cq(ctx, cqe, NULL, NULL, 0);
  s->mr = ibv_reg_mr(p->pd, s->buf, len, access);
  struct ibv_qp_init_attr ia;
  memset(&ia, 0, sizeof ia);
  ia.send_cq = ia.recv_cq = s->cq;
  ia.cap.max_send_wr = 64;
  ia.cap.max_recv_wr = 64;
  ia.cap.max_send_sge = ia.cap.max_recv_sge = 4;
  ia.qp_type = type;
  ia.sq_sig_all = 1;
  s->qp = s->cq ? ibv_create_qp(p->pd, &ia) : NULL;
  return (s->cq && s->mr && s->qp) ? 0 : -1;
}

static int side_open(struct pair *p, struct side *s, uint32_t len, int access, int cqe) {
  return side_open_type(p, s, len, access, cqe, IBV_QPT_RC);
}

// Connects x and y to each other in this guest; x sends from psn_x, y from psn_y.
static int connect_both(struct ibv_qp *x, uint32_t psn_x, struct ibv_qp *y, uint32_t psn_y,
                        int access, int rnr_retry, int timeout) {
  uint32_t ip = rdmau_local_ipv4(ctx);
  struct rdma_peer to_y = { .qpn = y->qp_num, .psn = psn_y, .ipv4 = ip };
  struct rdma_peer to_x = { .qpn = x->qp_num, .psn = psn_x, .ipv4 = ip };
  if (rdmau_connect(x, &to_y, psn_x, mtu, access, rnr_retry, timeout)) return -1;
  return rdmau_connect(y, &to_x, psn_y, mtu, access, rnr_retry, timeout) ? -1 : 0;
}

// Resets `old` (one side of a pair) and connects it to the new QP q instead.
static int rewire(struct ibv_qp *old, struct ibv_qp *q, int access) {
  struct ibv_qp_attr a;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RESET;
  if (ibv_modify_qp(old, &a, IBV_QP_STATE)) return -1;
  return connect_both(q, rdmau_psn(), old, rdmau_psn(), access, 7, 14);
}

static int pair_open_opts(struct pair *p, uint32_t len, const struct pair_opts *o) {
  memset(p, 0, sizeof *p);
  p->len = len;
  p->pd = ibv_alloc_pd(ctx);
  if (!p->pd) return -1;
  int all = o->qp_access ? o->qp_access : IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  if (side_open(p, &p->a, len, all, o->cqe) < 0 || side_open(p, &p->b, len, o->access_b, o->cqe) < 0)
    return -1;
  return connect_both(p->a.qp, rdmau_psn(), p->b.qp, rdmau_psn(), all, o->rnr_retry, o->timeout);
}

static int pair_open(struct pair *p, uint32_t len) {
  struct pair_opts o = { IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, 7, 256, 14 };
  return pair_open_opts(p, len, &o);
}

static void side_close(struct side *s) {
  if (s->qp) ibv_destroy_qp(s->qp);
  if (s->mr) ibv_dereg_mr(s->mr);
  if (s->cq) ibv_destroy_cq(s->cq);
  free(s->raw);
}

static void pair_close(struct pair *p) {
  side_close(&p->a);
  side_close(&p->b);
  if (p->pd) ibv_dealloc_pd(p->pd);
}

static void fill(uint8_t *b, uint32_t n, uint32_t seed) {
  for (uint32_t i = 0; i < n; i++) b[i] = (uint8_t)(seed + i * 7 + (i >> 8));
}

// A signaled WR of op sending len bytes from s's buffer through *sge.
static void send_wr_init(struct ibv_send_wr *wr, struct ibv_sge *sge, struct side *s, enum ibv_wr_opcode op,
                         uint32_t len, uint32_t imm, uint64_t wr_id) {
  *sge = (struct ibv_sge){ (uint64_t)s->buf, len, s->mr->lkey };
  memset(wr, 0, sizeof *wr);
  wr->wr_id = wr_id;
  wr->sg_list = sge;
  wr->num_sge = len ? 1 : 0;
  wr->opcode = op;
  wr->send_flags = IBV_SEND_SIGNALED;
  wr->imm_data = htonl(imm);
}

static int post_send1(struct side *s, enum ibv_wr_opcode op, uint32_t len, uint64_t raddr,
                      uint32_t rkey, uint32_t imm, uint64_t wr_id) {
  struct ibv_sge sge;
  struct ibv_send_wr wr, *bad;
  send_wr_init(&wr, &sge, s, op, len, imm, wr_id);
  wr.wr.rdma.remote_addr = raddr;
  wr.wr.rdma.rkey = rkey;
  return ibv_post_send(s->qp, &wr, &bad);
}

// Waits (10 s at most) until s's QP has received an RNR NAK: 0, or -1.
static int wait_rnr_nak(struct side *s) {
  uint64 end = clock_ns() + 10000000000ULL;
  struct rdma_qp_stats st;
  while (rdma_qp_stats((int)s->qp->handle, &st) == 0 && st.rx_rnr_nak == 0) {
    if (clock_ns() > end) return -1;
    sleep(1);
  }
  return st.rx_rnr_nak > 0 ? 0 : -1;
}

static int post_recv1(struct side *s, uint32_t len, uint64_t wr_id) {
  struct ibv_sge sge = { (uint64_t)s->buf, len, s->mr->lkey };
  struct ibv_recv_wr wr, *bad;
  memset(&wr, 0, sizeof wr);
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  return ibv_post_recv(s->qp, &wr, &bad);
}

static int wait_ok(struct ibv_cq *cq, struct ibv_wc *wc) {
  int n = rdmau_wait(cq, wc, 10000);
  if (n != 1) { printf("  no completion (%d)\n", n); return -1; }
  if (wc->status != IBV_WC_SUCCESS) {
    printf("  completion status %s (%d) vendor_err 0x%x\n", ibv_wc_status_str(wc->status),
           wc->status, wc->vendor_err);
    return -1;
  }
  return 0;
}

// One message of `op` and `len` bytes from a to b; checks data and completions.
static void transfer(enum ibv_wr_opcode op, uint32_t len) {
  struct pair p;
  struct ibv_wc wc;
  uint32_t cap = len ? len : 1;
  TR_ASSERT(pair_open(&p, cap) == 0);
  int is_read = op == IBV_WR_RDMA_READ;
  int is_send = op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM;
  int has_imm = op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_WRITE_WITH_IMM;
  struct side *src = is_read ? &p.b : &p.a, *dst = is_read ? &p.a : &p.b;
  fill(src->buf, cap, 17 + len);
  memset(dst->buf, 0xee, cap);
  if (is_send || has_imm) TR_ASSERT(post_recv1(&p.b, is_send ? cap : 0, 77) == 0);
  TR_ASSERT(post_send1(&p.a, op, len, (uint64_t)p.b.buf, p.b.mr->rkey, 0x12345678 + len, 42) == 0);
  TR_ASSERT(wait_ok(p.a.cq, &wc) == 0);
  TR_ASSERT(wc.wr_id == 42);
  TR_ASSERT(wc.opcode == (is_read ? IBV_WC_RDMA_READ : is_send ? IBV_WC_SEND : IBV_WC_RDMA_WRITE));
  if (is_read) TR_ASSERT(wc.byte_len == len);
  if (is_send || has_imm) {
    TR_ASSERT(wait_ok(p.b.cq, &wc) == 0);
    TR_ASSERT(wc.wr_id == 77);
    TR_ASSERT(wc.opcode == (is_send ? IBV_WC_RECV : IBV_WC_RECV_RDMA_WITH_IMM));
    TR_ASSERT(wc.qp_num == p.b.qp->qp_num);
    TR_ASSERT(wc.src_qp == p.a.qp->qp_num);
    TR_ASSERT(wc.byte_len == len);                 // WRITE_WITH_IMM too [RESP-RECV-4]
    if (has_imm) {
      TR_ASSERT(wc.wc_flags & IBV_WC_WITH_IMM);
      TR_ASSERT(ntohl(wc.imm_data) == 0x12345678 + len);
    } else {
      TR_ASSERT(!(wc.wc_flags & IBV_WC_WITH_IMM));
    }
  }
  TR_ASSERT(memcmp(src->buf, dst->buf, len) == 0);
  if (len < cap || len == 0) TR_ASSERT(dst->buf[len] == 0xee || len == 0);
  pair_close(&p);
}

// The sizes every opcode is tried at, around the port's path MTU.
enum size_class { SZ_0, SZ_1, SZ_MTU_LESS, SZ_MTU, SZ_MTU_MORE, SZ_BIG };

static uint32_t size_of(enum size_class c) {
  static const int offset[] = { [SZ_MTU_LESS] = -1, [SZ_MTU] = 0, [SZ_MTU_MORE] = 1 };
  if (c == SZ_0) return 0;
  if (c == SZ_1) return 1;
  return c == SZ_BIG ? BIG : (uint32_t)(mtu_bytes + offset[c]);
}

// Six cases per opcode: name_0, name_1, name_mtu-1, name_mtu, name_mtu+1
// and name_1mib (slow).
#define OP_CASES(name, op) \
  static void name##_0(void) { transfer(op, size_of(SZ_0)); } \
  static void name##_1(void) { transfer(op, size_of(SZ_1)); } \
  static void name##_mtu_less(void) { transfer(op, size_of(SZ_MTU_LESS)); } \
  static void name##_mtu(void) { transfer(op, size_of(SZ_MTU)); } \
  static void name##_mtu_more(void) { transfer(op, size_of(SZ_MTU_MORE)); } \
  static void name##_big(void) { transfer(op, size_of(SZ_BIG)); }
#define OP_ENTRIES(name) \
  { #name "_0", name##_0, TR_QUICK, 0 }, { #name "_1", name##_1, TR_QUICK, 0 }, \
  { #name "_mtu-1", name##_mtu_less, TR_QUICK, 0 }, { #name "_mtu", name##_mtu, TR_QUICK, 0 }, \
  { #name "_mtu+1", name##_mtu_more, TR_QUICK, 0 }, { #name "_1mib", name##_big, TR_SLOW, 0 }

OP_CASES(send, IBV_WR_SEND)
OP_CASES(send_imm, IBV_WR_SEND_WITH_IMM)
OP_CASES(write, IBV_WR_RDMA_WRITE)
OP_CASES(write_imm, IBV_WR_RDMA_WRITE_WITH_IMM)
OP_CASES(read, IBV_WR_RDMA_READ)

// ---- tests ----

static void t_device(void) {
  struct ibv_device_attr da;
  struct ibv_port_attr pa;
  union ibv_gid gid;
  int n = 0;
  struct ibv_device **list = ibv_get_device_list(&n);
  TR_ASSERT(list && n == 1 && list[0] && list[1] == NULL);
  TR_ASSERT(strcmp(ibv_get_device_name(list[0]), "rxe0") == 0);
  ibv_free_device_list(list);
  TR_ASSERT(ibv_query_device(ctx, &da) == 0);
  TR_ASSERT(da.max_qp >= 16 && da.max_qp_wr >= 64 && da.max_sge >= 1 && da.max_cqe >= 256);
  TR_ASSERT(da.max_mr >= 16 && da.max_pd >= 16 && da.max_qp_rd_atom >= 1 && da.max_mr_size >= BIG);
  TR_ASSERT(da.phys_port_cnt == 1);
  TR_ASSERT(ibv_query_port(ctx, 1, &pa) == 0);
  TR_ASSERT(pa.state == IBV_PORT_ACTIVE && pa.active_mtu >= IBV_MTU_256 && pa.active_mtu <= pa.max_mtu);
  TR_ASSERT(pa.link_layer == IBV_LINK_LAYER_ETHERNET && pa.gid_tbl_len >= 1);
  TR_ASSERT(ibv_query_port(ctx, 2, &pa) != 0);
  TR_ASSERT(ibv_query_gid(ctx, 1, 0, &gid) == 0);
  TR_ASSERT(gid.raw[10] == 0xff && gid.raw[11] == 0xff && ibvx_gid_to_ipv4(&gid) != 0);
  printf("  max_qp %d max_qp_wr %d max_sge %d max_cqe %d max_mr %d max_pd %d rd_atom %d mtu %d gid ::ffff:%d.%d.%d.%d\n",
         da.max_qp, da.max_qp_wr, da.max_sge, da.max_cqe, da.max_mr, da.max_pd, da.max_qp_rd_atom,
         ibv_mtu_to_num(pa.active_mtu), gid.raw[12], gid.raw[13], gid.raw[14], gid.raw[15]);
}

static void t_mr(void) {
  struct ibv_pd *pd = ibv_alloc_pd(ctx);
  TR_ASSERT(pd);
  uint8_t *b = malloc(3 * 4096 + 100);
  struct ibv_mr *m1 = ibv_reg_mr(pd, b + 1, 3 * 4096, IBV_ACCESS_LOCAL_WRITE);
  struct ibv_mr *m2 = ibv_reg_mr(pd, b + 1, 3 * 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
  TR_ASSERT(m1 && m2 && m1->lkey != m2->lkey && m1->rkey != m2->rkey && m1->lkey != m1->rkey);
  TR_ASSERT(ibv_reg_mr(pd, b, 0, IBV_ACCESS_LOCAL_WRITE) == NULL);
  TR_ASSERT(ibv_reg_mr(pd, b, 100, IBV_ACCESS_REMOTE_WRITE) == NULL);   // needs LOCAL_WRITE
  TR_ASSERT(ibv_reg_mr(pd, (void *)0x10, 100, 0) == NULL);             // page 0 unmapped
  TR_ASSERT(ibv_reg_mr(pd, (void *)(uint64_t)t_mr, 100, IBV_ACCESS_LOCAL_WRITE) == NULL); // text
  TR_ASSERT(ibv_dealloc_pd(pd) == EBUSY);
  TR_ASSERT(ibv_dereg_mr(m1) == 0 && ibv_dereg_mr(m2) == 0);
  TR_ASSERT(ibv_dealloc_pd(pd) == 0);
  free(b);
}

static void t_qp_states(void) {
  struct pair p;
  struct ibv_qp_attr a;
  struct ibv_qp_init_attr ia;
  TR_ASSERT(pair_open(&p, 64) == 0);
  TR_ASSERT(ibv_query_qp(p.a.qp, &a, IBV_QP_STATE, &ia) == 0);
  TR_ASSERT(a.qp_state == IBV_QPS_RTS && a.dest_qp_num == p.b.qp->qp_num && a.path_mtu == mtu);
  TR_ASSERT(ia.cap.max_send_wr >= 64 && ia.send_cq == p.a.cq);
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_ERR;
  TR_ASSERT(ibv_modify_qp(p.a.qp, &a, IBV_QP_STATE) == 0);
  TR_ASSERT(ibv_query_qp(p.a.qp, &a, IBV_QP_STATE, NULL) == 0 && a.qp_state == IBV_QPS_ERR);
  a.qp_state = IBV_QPS_RTS;                          // ERR -> RTS is not a transition
  TR_ASSERT(ibv_modify_qp(p.a.qp, &a, IBV_QP_STATE) != 0);
  a.qp_state = IBV_QPS_RESET;
  TR_ASSERT(ibv_modify_qp(p.a.qp, &a, IBV_QP_STATE) == 0);
  a.qp_state = IBV_QPS_RTR;                          // RESET -> RTR is not either
  TR_ASSERT(ibv_modify_qp(p.a.qp, &a, IBV_QP_STATE) != 0);
  a.qp_state = IBV_QPS_INIT;                         // INIT needs the access flags...
  a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
  a.port_num = 1;
  TR_ASSERT(ibv_modify_qp(p.a.qp, &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_PORT) == 0);
  TR_ASSERT(ibv_query_qp(p.a.qp, &a, IBV_QP_STATE, NULL) == 0 && a.qp_state == IBV_QPS_INIT);
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTR;                          // ...and RTR an AV etc.
  TR_ASSERT(ibv_modify_qp(p.a.qp, &a, IBV_QP_STATE) != 0);
  pair_close(&p);
}

// Every path MTU (256 .. 4096) with SEND, WRITE_WITH_IMM and READ of a
// few MTUs plus a remainder.
static void t_mtus(void) {
  for (enum ibv_mtu m = IBV_MTU_256; m <= IBV_MTU_4096; m++) {
    mtu = m;                 // this case's process only
    uint32_t len = (uint32_t)ibv_mtu_to_num(m) * 3 + 77;
    transfer(IBV_WR_SEND, len);
    transfer(IBV_WR_RDMA_WRITE_WITH_IMM, len);
    transfer(IBV_WR_RDMA_READ, len);
  }
}

// RoCE v1 encapsulation (EtherType 0x8915 + GRH) for the AV.
static void t_roce_v1(void) {
  rdmau_roce_v1 = 1;         // this case's process only
  transfer(IBV_WR_SEND_WITH_IMM, 3000);
  transfer(IBV_WR_RDMA_WRITE, 5000);
  transfer(IBV_WR_RDMA_READ, 5000);
}

// Scatter/gather: 3 SGEs out, 2 SGEs in, and many WRs in one post.
static void t_sgl(void) {
  struct pair p;
  struct ibv_wc wc;
  TR_ASSERT(pair_open(&p, 8192) == 0);
  fill(p.a.buf, 8192, 5);
  memset(p.b.buf, 0, 8192);
  struct ibv_sge s[3] = { { (uint64_t)p.a.buf, 100, p.a.mr->lkey },
                          { (uint64_t)p.a.buf + 1000, 2000, p.a.mr->lkey },
                          { (uint64_t)p.a.buf + 5000, 1, p.a.mr->lkey } };
  struct ibv_sge r[2] = { { (uint64_t)p.b.buf, 1500, p.b.mr->lkey },
                          { (uint64_t)p.b.buf + 4000, 4000, p.b.mr->lkey } };
  struct ibv_recv_wr rw = { .wr_id = 9, .sg_list = r, .num_sge = 2 }, *rbad;
  TR_ASSERT(ibv_post_recv(p.b.qp, &rw, &rbad) == 0);
  struct ibv_send_wr w[5], *bad;
  memset(w, 0, sizeof w);
  w[0].wr_id = 1; w[0].sg_list = s; w[0].num_sge = 3; w[0].opcode = IBV_WR_SEND;
  for (int i = 1; i < 5; i++) {     // four WRITEs of 16 bytes to 6000 + 16 i
    w[i].wr_id = 1 + i; w[i].sg_list = &s[1]; w[i].num_sge = 1; w[i].opcode = IBV_WR_RDMA_WRITE;
    w[i].wr.rdma.remote_addr = (uint64_t)p.b.buf + 6000 + 16 * i; w[i].wr.rdma.rkey = p.b.mr->rkey;
  }
  for (int i = 0; i < 4; i++) w[i].next = &w[i + 1];
  s[1].length = 2000;
  TR_ASSERT(ibv_post_send(p.a.qp, w, &bad) == 0);
  for (int i = 0; i < 5; i++) { TR_ASSERT(wait_ok(p.a.cq, &wc) == 0); TR_ASSERT(wc.wr_id == (uint64_t)(i + 1)); }
  TR_ASSERT(wait_ok(p.b.cq, &wc) == 0 && wc.byte_len == 2101 && wc.wr_id == 9);
  TR_ASSERT(memcmp(p.b.buf, p.a.buf, 100) == 0);
  TR_ASSERT(memcmp(p.b.buf + 100, p.a.buf + 1000, 1400) == 0);
  TR_ASSERT(memcmp(p.b.buf + 4000, p.a.buf + 2400, 600) == 0);
  TR_ASSERT(p.b.buf[4600] == p.a.buf[5000]);
  pair_close(&p);
}

// ibvx_wait_write: a bad address is EINVAL, an unchanged byte times out
// (after the timeout, not before), a changed one returns at once.
static void t_wait_write(void) {
  struct pair p;
  struct ibv_wc wc;
  TR_ASSERT(pair_open(&p, 4096) == 0);
  TR_ASSERT(ibvx_wait_write((void *)0x10, 0, 10) == EINVAL);
  TR_ASSERT(ibvx_wait_write((void *)0x80001000ULL, 0, 10) == EINVAL);   // kernel memory
  p.b.buf[100] = 7;
  uint64 t0 = clock_ns();
  TR_ASSERT(ibvx_wait_write(p.b.buf + 100, 7, 30) == ETIMEDOUT);
  TR_ASSERT(clock_ns() - t0 >= 30000000ULL);
  p.a.buf[100] = 0x5a;
  TR_ASSERT(post_send1(&p.a, IBV_WR_RDMA_WRITE, 101, (uint64_t)p.b.buf, p.b.mr->rkey, 0, 5) == 0);
  TR_ASSERT(ibvx_wait_write(p.b.buf + 100, 7, 5000) == 0);
  TR_ASSERT(p.b.buf[100] == 0x5a);
  TR_ASSERT(wait_ok(p.a.cq, &wc) == 0);
  pair_close(&p);
}

// ibvx_wait_cq: an empty CQ times out (after the timeout, not before), a
// completion ends the wait and stays in the CQ for ibv_poll_cq, and a CQ
// handle that is not the caller's is EINVAL.
static void t_wait_cq(void) {
  struct pair p;
  struct ibv_wc wc;
  TR_ASSERT(pair_open(&p, 4096) == 0);
  uint64 t0 = clock_ns();
  TR_ASSERT(ibvx_wait_cq(p.a.cq, 30) == ETIMEDOUT);
  TR_ASSERT(clock_ns() - t0 >= 30000000ULL);
  TR_ASSERT(post_send1(&p.a, IBV_WR_RDMA_WRITE, 64, (uint64_t)p.b.buf, p.b.mr->rkey, 0, 77) == 0);
  TR_ASSERT(ibvx_wait_cq(p.a.cq, 5000) == 0);
  TR_ASSERT(ibv_poll_cq(p.a.cq, 1, &wc) == 1 && wc.wr_id == 77 && wc.status == IBV_WC_SUCCESS);
  struct ibv_cq foreign = *p.a.cq;
  foreign.handle = 9999;
  TR_ASSERT(ibvx_wait_cq(&foreign, 10) == EINVAL);
  foreign.handle = (uint32_t)-1;
  TR_ASSERT(ibvx_wait_cq(&foreign, 10) == EINVAL);
  pair_close(&p);
}

// Unsignaled WRs (sq_sig_all = 0) complete silently; a signaled one after
// them completes alone, and every byte arrived.
static void t_unsignaled(void) {
  struct pair p;
  struct ibv_wc wc;
  TR_ASSERT(pair_open(&p, 4096) == 0);
  struct ibv_qp_init_attr ia;
  memset(&ia, 0, sizeof ia);
  ia.send_cq = ia.recv_cq = p.a.cq;
  ia.cap.max_send_wr = ia.cap.max_recv_wr = 16;
  ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
  ia.qp_type = IBV_QPT_RC;
  ia.sq_sig_all = 0;
  struct ibv_qp *q = ibv_create_qp(p.pd, &ia);
  TR_ASSERT(q);
  int all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  TR_ASSERT(rewire(p.b.qp, q, all) == 0);
  fill(p.a.buf, 4096, 3);
  memset(p.b.buf, 0, 4096);
  struct ibv_sge sge = { (uint64_t)p.a.buf, 100, p.a.mr->lkey };
  struct ibv_send_wr wr, *bad;
  for (int i = 0; i < 3; i++) {
    memset(&wr, 0, sizeof wr);
    wr.wr_id = 300 + i; wr.sg_list = &sge; wr.num_sge = 1; wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = i == 2 ? IBV_SEND_SIGNALED : 0;
    wr.wr.rdma.remote_addr = (uint64_t)p.b.buf + 100 * i; wr.wr.rdma.rkey = p.b.mr->rkey;
    TR_ASSERT(ibv_post_send(q, &wr, &bad) == 0);
  }
  TR_ASSERT(wait_ok(p.a.cq, &wc) == 0 && wc.wr_id == 302);
  TR_ASSERT(ibv_poll_cq(p.a.cq, 1, &wc) == 0);
  for (int i = 0; i < 3; i++) TR_ASSERT(memcmp(p.b.buf + 100 * i, p.a.buf, 100) == 0);
  TR_ASSERT(ibv_destroy_qp(q) == 0);
  pair_close(&p);
}

// IBV_SEND_INLINE: the payload is taken at post time from any memory,
// with no lkey; changing the buffer right after the post changes nothing.
static void t_inline(void) {
  struct pair p;
  struct ibv_wc wc;
  TR_ASSERT(pair_open(&p, 4096) == 0);
  struct ibv_qp_init_attr ia;
  memset(&ia, 0, sizeof ia);
  ia.send_cq = ia.recv_cq = p.a.cq;
  ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
  ia.cap.max_send_sge = ia.cap.max_recv_sge = 2;
  ia.cap.max_inline_data = 64;
  ia.qp_type = IBV_QPT_RC;
  ia.sq_sig_all = 1;
  struct ibv_qp *q = ibv_create_qp(p.pd, &ia);
  TR_ASSERT(q && ia.cap.max_inline_data >= 64);
  int all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  TR_ASSERT(rewire(p.b.qp, q, all) == 0);
  memset(p.b.buf, 0, 4096);
  for (int round = 0; round < 12; round++) {   // more posts than slots: the ring wraps
    char msg[40], part2[8];
    snprintf(msg, sizeof msg, "inline message %d", round);
    strcpy(part2, "+tail");
    struct ibv_sge sg[2] = { { (uint64_t)msg, (uint32_t)strlen(msg), 0 }, { (uint64_t)part2, 6, 0 } };
    TR_ASSERT(post_recv1(&p.b, 64, 50 + round) == 0);
    struct ibv_send_wr wr, *bad;
    memset(&wr, 0, sizeof wr);
    wr.wr_id = 60 + round; wr.sg_list = sg; wr.num_sge = 2; wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
    TR_ASSERT(ibv_post_send(q, &wr, &bad) == 0);
    memset(msg, 'X', sizeof msg);
    TR_ASSERT(wait_ok(p.a.cq, &wc) == 0 && wc.wr_id == (uint64_t)(60 + round));
    TR_ASSERT(wait_ok(p.b.cq, &wc) == 0 && wc.wr_id == (uint64_t)(50 + round));
    char want[48];
    snprintf(want, sizeof want, "inline message %d+tail", round);
    TR_ASSERT(wc.byte_len == strlen(want) + 1 && memcmp(p.b.buf, want, wc.byte_len) == 0);
  }
  char big[200];
  struct ibv_sge sg = { (uint64_t)big, sizeof big, 0 };
  struct ibv_send_wr wr = { .sg_list = &sg, .num_sge = 1, .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_INLINE }, *bad;
  TR_ASSERT(ibv_post_send(q, &wr, &bad) == EINVAL && bad == &wr);   // more than max_inline_data
  TR_ASSERT(ibv_destroy_qp(q) == 0);
  pair_close(&p);
}

// The requester sees `want`; the QP goes to ERR and the next WR is flushed.
static int expect_error(struct pair *p, enum ibv_wr_opcode op, uint64_t raddr, uint32_t rkey,
                        uint32_t len, enum ibv_wc_status want) {
  struct ibv_wc wc;
  struct ibv_qp_attr a;
  TR_ASSERT(post_send1(&p->a, op, len, raddr, rkey, 0, 100) == 0);
  TR_ASSERT(post_send1(&p->a, IBV_WR_RDMA_WRITE, 8, (uint64_t)p->b.buf, p->b.mr->rkey, 0, 101) == 0);
  TR_ASSERT(rdmau_wait(p->a.cq, &wc, 10000) == 1);
  if (wc.status != want)
    printf("  got %s, want %s\n", ibv_wc_status_str(wc.status), ibv_wc_status_str(want));
  TR_ASSERT(wc.wr_id == 100 && wc.status == want);
  TR_ASSERT(rdmau_wait(p->a.cq, &wc, 10000) == 1);
  TR_ASSERT(wc.wr_id == 101 && wc.status == IBV_WC_WR_FLUSH_ERR);
  TR_ASSERT(ibv_query_qp(p->a.qp, &a, IBV_QP_STATE, NULL) == 0 && a.qp_state == IBV_QPS_ERR);
  // Posting in ERR completes at once with a flush.
  TR_ASSERT(post_send1(&p->a, IBV_WR_SEND, 4, 0, 0, 0, 102) == 0);
  TR_ASSERT(rdmau_wait(p->a.cq, &wc, 10000) == 1 && wc.wr_id == 102 && wc.status == IBV_WC_WR_FLUSH_ERR);
  return 0;
}

static void t_bad_rkey(void) {
  struct pair p;
  TR_ASSERT(pair_open(&p, 4096) == 0);
  TR_ASSERT(expect_error(&p, IBV_WR_RDMA_WRITE, (uint64_t)p.b.buf, p.b.mr->rkey ^ 0x100, 64, IBV_WC_REM_ACCESS_ERR) == 0);
  pair_close(&p);
}

static void t_out_of_bounds(void) {
  struct pair p;
  TR_ASSERT(pair_open(&p, 4096) == 0);
  TR_ASSERT(expect_error(&p, IBV_WR_RDMA_WRITE, (uint64_t)p.b.buf + 4000, p.b.mr->rkey, 200, IBV_WC_REM_ACCESS_ERR) == 0);
  pair_close(&p);
  TR_ASSERT(pair_open(&p, 4096) == 0);
  TR_ASSERT(expect_error(&p, IBV_WR_RDMA_READ, (uint64_t)p.b.buf - 1, p.b.mr->rkey, 16, IBV_WC_REM_ACCESS_ERR) == 0);
  pair_close(&p);
}

static void t_no_access(void) {
  struct pair p;
  struct pair_opts o = { IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ, 7, 256, 14 };
  TR_ASSERT(pair_open_opts(&p, 4096, &o) == 0);      // b's MR: no REMOTE_WRITE
  TR_ASSERT(expect_error(&p, IBV_WR_RDMA_WRITE, (uint64_t)p.b.buf, p.b.mr->rkey, 64, IBV_WC_REM_ACCESS_ERR) == 0);
  pair_close(&p);
  o.access_b = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  TR_ASSERT(pair_open_opts(&p, 4096, &o) == 0);      // b's MR: no REMOTE_READ
  TR_ASSERT(expect_error(&p, IBV_WR_RDMA_READ, (uint64_t)p.b.buf, p.b.mr->rkey, 64, IBV_WC_REM_ACCESS_ERR) == 0);
  pair_close(&p);
}

static void t_bad_lkey(void) {
  struct pair p;
  struct ibv_wc wc;
  TR_ASSERT(pair_open(&p, 4096) == 0);
  struct ibv_sge sge = { (uint64_t)p.a.buf, 64, p.a.mr->lkey + 0x100 };
  struct ibv_send_wr wr, *bad;
  memset(&wr, 0, sizeof wr);
  wr.wr_id = 5; wr.sg_list = &sge; wr.num_sge = 1; wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = (uint64_t)p.b.buf; wr.wr.rdma.rkey = p.b.mr->rkey;
  TR_ASSERT(ibv_post_send(p.a.qp, &wr, &bad) == 0);
  TR_ASSERT(rdmau_wait(p.a.cq, &wc, 10000) == 1);
  printf("  bad lkey -> %s\n", ibv_wc_status_str(wc.status));
  TR_ASSERT(wc.wr_id == 5 && wc.status == IBV_WC_LOC_PROT_ERR);
  pair_close(&p);
}

static void t_rnr(void) {
  struct pair p;
  struct ibv_wc wc;
  struct pair_opts o = { IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, 2, 256, 14 };
  TR_ASSERT(pair_open_opts(&p, 4096, &o) == 0);
  uint64 t0 = clock_ns();
  TR_ASSERT(post_send1(&p.a, IBV_WR_SEND, 32, 0, 0, 0, 7) == 0);   // b has no receive posted
  TR_ASSERT(rdmau_wait(p.a.cq, &wc, 10000) == 1);
  TR_ASSERT(wc.wr_id == 7 && wc.status == IBV_WC_RNR_RETRY_EXC_ERR);
  printf("  RNR retries exhausted after %d us\n", (int)((clock_ns() - t0) / 1000));
  pair_close(&p);
  // With a receive posted late the SEND gets through (infinite RNR retry).
  o.rnr_retry = 7;
  TR_ASSERT(pair_open_opts(&p, 4096, &o) == 0);
  TR_ASSERT(post_send1(&p.a, IBV_WR_SEND, 32, 0, 0, 0, 8) == 0);
  TR_ASSERT(wait_rnr_nak(&p.a) == 0);          // the receive is posted after an RNR NAK, not by luck
  TR_ASSERT(post_recv1(&p.b, 64, 9) == 0);
  TR_ASSERT(wait_ok(p.a.cq, &wc) == 0 && wc.wr_id == 8);
  TR_ASSERT(wait_ok(p.b.cq, &wc) == 0 && wc.wr_id == 9 && wc.byte_len == 32);
  pair_close(&p);
}

// The peer goes silent (ERR drops every frame): the send queue fills
// (ENOMEM), the first WR ends with RETRY_EXC_ERR after retry_cnt
// retransmissions, and the rest are flushed.
static void t_retry_exceeded(void) {
  struct pair p;
  struct ibv_wc wc;
  struct ibv_qp_attr a;
  struct pair_opts o = { IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, 7, 256, 14 };  // 67 ms ACK timeout
  TR_ASSERT(pair_open_opts(&p, 4096, &o) == 0);
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_ERR;
  TR_ASSERT(ibv_modify_qp(p.b.qp, &a, IBV_QP_STATE) == 0);
  while (ibv_poll_cq(p.b.cq, 1, &wc) == 1)
    ;
  int posted = 0, rc = 0;
  while (posted < 100 &&
         (rc = post_send1(&p.a, IBV_WR_RDMA_WRITE, 64, (uint64_t)p.b.buf, p.b.mr->rkey, 0, 1000 + posted)) == 0)
    posted++;
  TR_ASSERT(rc == ENOMEM && posted >= 64);
  uint64 t0 = clock_ns();
  TR_ASSERT(rdmau_wait(p.a.cq, &wc, 20000) == 1);
  printf("  %d WRs queued; first completion %s after %d ms\n", posted, ibv_wc_status_str(wc.status),
         (int)((clock_ns() - t0) / 1000000));
  TR_ASSERT(wc.wr_id == 1000 && wc.status == IBV_WC_RETRY_EXC_ERR);
  for (int i = 1; i < posted; i++) {
    TR_ASSERT(rdmau_wait(p.a.cq, &wc, 10000) == 1);
    TR_ASSERT(wc.wr_id == (uint64_t)(1000 + i) && wc.status == IBV_WC_WR_FLUSH_ERR);
  }
  pair_close(&p);
}

static void t_flush_recv(void) {
  struct pair p;
  struct ibv_wc wc;
  struct ibv_qp_attr a;
  TR_ASSERT(pair_open(&p, 4096) == 0);
  for (int i = 0; i < 3; i++) TR_ASSERT(post_recv1(&p.b, 64, 20 + i) == 0);
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_ERR;
  TR_ASSERT(ibv_modify_qp(p.b.qp, &a, IBV_QP_STATE) == 0);
  for (int i = 0; i < 3; i++) {
    TR_ASSERT(rdmau_wait(p.b.cq, &wc, 10000) == 1);
    TR_ASSERT(wc.wr_id == (uint64_t)(20 + i) && wc.status == IBV_WC_WR_FLUSH_ERR);
  }
  pair_close(&p);
}

static void t_busy(void) {
  struct pair p;
  TR_ASSERT(pair_open(&p, 4096) == 0);
  TR_ASSERT(post_recv1(&p.b, 64, 1) == 0);
  TR_ASSERT(ibv_dereg_mr(p.b.mr) == EBUSY);        // a posted receive uses it
  TR_ASSERT(ibv_destroy_cq(p.b.cq) == EBUSY);      // a QP uses it
  TR_ASSERT(ibv_dealloc_pd(p.pd) == EBUSY);
  TR_ASSERT(ibv_destroy_qp(p.b.qp) == 0);
  p.b.qp = NULL;
  TR_ASSERT(ibv_dereg_mr(p.b.mr) == 0);
  p.b.mr = NULL;
  pair_close(&p);
}

static void t_cq_overrun(void) {
  struct pair p;
  struct ibv_wc wc;
  struct ibv_async_event ev;
  struct rdma_async_event stale;
  struct pair_opts o = { IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, 7, 2, 14 };
  while (rdma_get_async(&stale, 0) == 0)       // QP_FATAL events of earlier tests
    ;
  TR_ASSERT(pair_open_opts(&p, 4096, &o) == 0);
  for (int i = 0; i < 4; i++)
    TR_ASSERT(post_send1(&p.a, IBV_WR_RDMA_WRITE, 8, (uint64_t)p.b.buf, p.b.mr->rkey, 0, i) == 0);
  TR_ASSERT(ibv_get_async_event(ctx, &ev) == 0);
  TR_ASSERT(ev.event_type == IBV_EVENT_CQ_ERR && ev.element.cq == p.a.cq);
  ibv_ack_async_event(&ev);
  TR_ASSERT(ibv_poll_cq(p.a.cq, 1, &wc) < 0);      // the CQ is in error
  pair_close(&p);
}

// ---- the CQ ring mapped into the process (uapi.h struct rdma_cq_ring) ----

#define RING_POLLS 1000   // polls of an empty CQ counted
#define RING_WRITES 32    // completions polled one by one, counted

// Waits (10 s at most) until cq's mapped ring holds n unread completions,
// reading only the ring: 0, or -1.
static int ring_wait_unread(struct ibv_cq *cq, uint32_t n) {
  uint64 end = clock_ns() + 10000000000ULL;
  while (cq->ring->prod - cq->ring->cons < n)
    if (clock_ns() > end) return -1;
  return 0;
}

// ibv_poll_cq makes no system call, on an empty CQ and on a non-empty one
// (syscount counts the process's calls; the second syscount is the only
// call between the two readings).
static void t_cq_poll_no_syscall(void) {
  struct pair p;
  struct ibv_wc wc;
  TR_ASSERT(pair_open(&p, 64) == 0);
  TR_ASSERT(p.a.cq->ring != NULL);
  long before = syscount();
  for (int i = 0; i < RING_POLLS; i++) TR_ASSERT(ibv_poll_cq(p.a.cq, 1, &wc) == 0);
  long empty = syscount() - before;
  for (int i = 0; i < RING_WRITES; i++)
    TR_ASSERT(post_send1(&p.a, IBV_WR_RDMA_WRITE, 64, (uint64_t)p.b.buf, p.b.mr->rkey, 0, i) == 0);
  TR_ASSERT(ring_wait_unread(p.a.cq, RING_WRITES) == 0);
  before = syscount();
  int ok = 1;
  for (int i = 0; i < RING_WRITES; i++)
    ok &= ibv_poll_cq(p.a.cq, 1, &wc) == 1 && wc.wr_id == (uint64_t)i && wc.status == IBV_WC_SUCCESS;
  long full = syscount() - before;
  printf("  system calls: %ld around %d empty polls, %ld around %d completions\n", empty - 1, RING_POLLS,
         full - 1, RING_WRITES);
  TR_ASSERT(ok && empty == 1 && full == 1);
  pair_close(&p);
}

// Garbage in a CQ's consumer index while traffic runs: that CQ overruns
// (IBV_EVENT_CQ_ERR, polls fail), another pair's traffic is untouched.
static void t_cq_ring_garbage(void) {
  struct pair p, q;
  struct ibv_wc wc;
  struct ibv_async_event ev;
  struct rdma_async_event stale;
  while (rdma_get_async(&stale, 0) == 0)       // events of earlier tests
    ;
  TR_ASSERT(pair_open(&p, 64) == 0 && pair_open(&q, 64) == 0);
  TR_ASSERT(post_send1(&p.a, IBV_WR_RDMA_WRITE, 8, (uint64_t)p.b.buf, p.b.mr->rkey, 0, 1) == 0);
  p.a.cq->ring->cons = 0xdeadbeef;
  for (int i = 0; i < 4; i++)
    TR_ASSERT(post_send1(&p.a, IBV_WR_RDMA_WRITE, 8, (uint64_t)p.b.buf, p.b.mr->rkey, 0, i) == 0);
  TR_ASSERT(ibv_get_async_event(ctx, &ev) == 0);
  TR_ASSERT(ev.event_type == IBV_EVENT_CQ_ERR && ev.element.cq == p.a.cq);
  ibv_ack_async_event(&ev);
  TR_ASSERT(ibv_poll_cq(p.a.cq, 1, &wc) < 0);
  TR_ASSERT(post_send1(&q.a, IBV_WR_RDMA_WRITE, 8, (uint64_t)q.b.buf, q.b.mr->rkey, 0, 9) == 0);
  TR_ASSERT(wait_ok(q.a.cq, &wc) == 0 && wc.wr_id == 9);
  pair_close(&q);
  pair_close(&p);
}

// A fork's child scribbles on its copy of the parent's ring: the kernel
// writes only the parent's pages, whose completions still arrive.
static void t_cq_ring_fork(void) {
  struct pair p;
  struct ibv_wc wc;
  TR_ASSERT(pair_open(&p, 64) == 0);
  int pid = fork();
  if (pid == 0) {
    memset((void *)p.a.cq->ring, 0xa5, RDMA_CQ_RING_BYTES(p.a.cq->cqe));
    exit(0);
  }
  int st = -1;
  TR_ASSERT(pid > 0 && wait(&st) == pid && st == 0);
  TR_ASSERT(post_send1(&p.a, IBV_WR_RDMA_WRITE, 8, (uint64_t)p.b.buf, p.b.mr->rkey, 0, 5) == 0);
  TR_ASSERT(wait_ok(p.a.cq, &wc) == 0 && wc.wr_id == 5);
  pair_close(&p);
}

// ---- the send and receive rings mapped into the process (uapi.h struct rdma_wq_ring) ----

// The free pages come back to what *before counted (8 pages of slack),
// within 20 s: pages the other side still used are freed as it finishes.
static void pages_come_back(const struct sysinfo *before) {
  struct sysinfo after;
  uint64 settle_end = clock_ns() + 20000000000ULL;
  do {
    TR_ASSERT(sysinfo(&after) == 0);
  } while (after.freepages + 8 < before->freepages && clock_ns() < settle_end && sleep(1) == 0);
  printf("  free pages before %d after %d\n", (int)before->freepages, (int)after.freepages);
  TR_ASSERT(after.freepages + 8 >= before->freepages);
}

#define RING_LIST 32      // WRs of the list posted with one doorbell (the system calls take 16 a call)

// A list of n signaled WRITEs of 8 bytes from s to t, wr_id base + i.
static void write_list(struct ibv_send_wr *wr, struct ibv_sge *sge, struct side *s, struct side *t, int n,
                       uint64_t base) {
  for (int i = 0; i < n; i++) {
    send_wr_init(&wr[i], &sge[i], s, IBV_WR_RDMA_WRITE, 8, 0, base + (uint64_t)i);
    wr[i].wr.rdma.remote_addr = (uint64_t)t->buf;
    wr[i].wr.rdma.rkey = t->mr->rkey;
    wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
  }
}

// n successful completions in cq, wr_ids base, base + 1, ... in order: 0, or -1.
static int wait_in_order(struct ibv_cq *cq, int n, uint64_t base) {
  struct ibv_wc wc;
  for (int i = 0; i < n; i++)
    if (wait_ok(cq, &wc) < 0 || wc.wr_id != base + (uint64_t)i) return -1;
  return 0;
}

// The system calls stmt makes (syscount counts itself: one is taken off).
#define SYSCALLS_IN(stmt) ({ long before_ = syscount(); stmt; syscount() - before_ - 1; })

// A pair whose QPs post through mapped send and receive rings.
static void ring_pair_open(struct pair *p) {
  TR_ASSERT(pair_open(p, 64) == 0);
  TR_ASSERT(p->a.qp->sq_ring && p->a.qp->rq_ring && p->b.qp->sq_ring && p->b.qp->rq_ring);
}

// A post of a list and of one WR made one system call each.
static void one_call_each(long list, long one, const char *what) {
  printf("  system calls: %ld for a list of %d %s, %ld for one\n", list, RING_LIST, what, one);
  TR_ASSERT(list == 1 && one == 1);
}

#define SCRIBBLES 50      // garbage rounds of sq_ring_garbage, each with a WRITE on the other pair

// Takes the queued async events: 1 if one is QP_FATAL of QP handle h, -1
// if one names a QP of pair q (which must stay untouched), else 0.
static int async_fatal_of(uint32_t h, const struct pair *q) {
  struct rdma_async_event e;
  int found = 0;
  while (rdma_get_async(&e, 0) == 0) {
    if (e.handle == (int)q->a.qp->handle || e.handle == (int)q->b.qp->handle) return -1;
    if (e.event_type == IBV_EVENT_QP_FATAL && e.handle == (int)h) found = 1;
  }
  return found;
}

// Waits (10 s at most) until the kernel has s's send ring armed (want 1)
// or not (0): 0, or -1.
static int wait_armed(struct side *s, unsigned want) {
  uint64 end = clock_ns() + 10000000000ULL;
  while (s->qp->sq_ring->h.armed != want)
    if (clock_ns() > end) return -1;
  return 0;
}

// ibv_post_send of a list of RING_LIST WRs and of a single WR each make
// exactly one system call (the doorbell) while nothing is in flight, and
// every WR completes.
static void t_sq_post_one_syscall(void) {
  struct pair p;
  struct ibv_send_wr wr[RING_LIST], *bad;
  struct ibv_sge sge[RING_LIST];
  ring_pair_open(&p);
  write_list(wr, sge, &p.a, &p.b, RING_LIST, 0);
  long list = SYSCALLS_IN(TR_ASSERT(ibv_post_send(p.a.qp, wr, &bad) == 0));
  TR_ASSERT(wait_in_order(p.a.cq, RING_LIST, 0) == 0);
  TR_ASSERT(wait_armed(&p.a, 0) == 0);         // the queue is empty: the next post rings
  write_list(wr, sge, &p.a, &p.b, 1, RING_LIST);
  one_call_each(list, SYSCALLS_IN(TR_ASSERT(ibv_post_send(p.a.qp, wr, &bad) == 0)), "WRs");
  TR_ASSERT(wait_in_order(p.a.cq, 1, RING_LIST) == 0);
  pair_close(&p);
}

// p's a with a SEND (wr_id 0) stuck in its send queue: b has no receive,
// so every try meets an RNR NAK (rnr_retry 7 retries for ever) and the
// kernel keeps a's send ring armed.
static void sq_stuck_send(struct pair *p) {
  ring_pair_open(p);
  TR_ASSERT(post_send1(&p->a, IBV_WR_SEND, 8, 0, 0, 0, 0) == 0);
  TR_ASSERT(wait_rnr_nak(&p->a) == 0);
  TR_ASSERT(wait_armed(&p->a, 1) == 0);
}

// With a WR in flight the send ring is armed: IBVX_WQ_ELIDE_MAX - 1 posts
// of one WR make no system call (the engine takes them in at the stuck
// SEND's retries, or later), a list of IBVX_WQ_ELIDE_MAX rings the
// doorbell, and all complete in order behind the SEND once b posts its
// receive. When the queue has emptied the ring is disarmed and a post
// rings again.
static void t_sq_post_elided(void) {
  struct pair p;
  struct ibv_send_wr wr[IBVX_WQ_ELIDE_MAX], *bad;
  struct ibv_sge sge[IBVX_WQ_ELIDE_MAX];
  sq_stuck_send(&p);
  long elided = 0;
  for (int i = 0; i + 1 < IBVX_WQ_ELIDE_MAX; i++) {
    write_list(wr, sge, &p.a, &p.b, 1, 1 + (uint64_t)i);
    elided += SYSCALLS_IN(TR_ASSERT(ibv_post_send(p.a.qp, wr, &bad) == 0));
  }
  write_list(wr, sge, &p.a, &p.b, IBVX_WQ_ELIDE_MAX, IBVX_WQ_ELIDE_MAX);
  long list = SYSCALLS_IN(TR_ASSERT(ibv_post_send(p.a.qp, wr, &bad) == 0));
  printf("  system calls: %ld for %d posts with a WR in flight, %ld for a list of %d\n", elided,
         IBVX_WQ_ELIDE_MAX - 1, list, IBVX_WQ_ELIDE_MAX);
  TR_ASSERT(elided == 0 && list == 1);
  TR_ASSERT(post_recv1(&p.b, 8, 77) == 0);
  TR_ASSERT(wait_in_order(p.a.cq, 2 * IBVX_WQ_ELIDE_MAX, 0) == 0);
  TR_ASSERT(wait_armed(&p.a, 0) == 0);
  write_list(wr, sge, &p.a, &p.b, 1, 100);
  long after = SYSCALLS_IN(TR_ASSERT(ibv_post_send(p.a.qp, wr, &bad) == 0));
  printf("  system calls: %ld for a post with nothing in flight\n", after);
  TR_ASSERT(after == 1 && wait_in_order(p.a.cq, 1, 100) == 0);
  pair_close(&p);
}

// WRs posted without a doorbell are not lost when the QP leaves RTS: a
// modify to ERR takes them in first, and each completes, flushed, in
// order behind the stuck SEND.
static void t_sq_elided_flush(void) {
  struct pair p;
  struct ibv_send_wr wr[3], *bad;
  struct ibv_sge sge[3];
  struct ibv_wc wc;
  sq_stuck_send(&p);
  write_list(wr, sge, &p.a, &p.b, 3, 1);
  wr[0].next = NULL;
  long calls = 0;
  for (int i = 0; i < 3; i++) calls += SYSCALLS_IN(TR_ASSERT(ibv_post_send(p.a.qp, &wr[i], &bad) == 0));
  TR_ASSERT(calls == 0);
  struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
  TR_ASSERT(ibv_modify_qp(p.a.qp, &a, IBV_QP_STATE) == 0);
  for (uint64_t i = 0; i < 4; i++) {
    TR_ASSERT(rdmau_wait(p.a.cq, &wc, 10000) == 1);
    TR_CHECK(wc.wr_id == i && wc.status == IBV_WC_WR_FLUSH_ERR, "completion %d: wr_id %d status %s",
             (int)i, (int)wc.wr_id, ibv_wc_status_str(wc.status));
  }
  TR_ASSERT(wait_armed(&p.a, 0) == 0);
  pair_close(&p);
}

// Hostile: an entry the process writes into its armed send ring without
// the library (an opcode no QP takes) is taken in by the engine with no
// doorbell, at the stuck SEND's next RNR retry: the QP goes to ERR with
// IBV_EVENT_QP_FATAL, the stuck SEND flushes, and another pair's WRITEs
// go on untouched.
static void t_sq_elided_garbage(void) {
  struct pair p, q;
  struct ibv_wc wc;
  sq_stuck_send(&p);
  TR_ASSERT(pair_open(&q, 64) == 0);
  struct rdma_sq_ring *r = p.a.qp->sq_ring;
  uint32_t h = p.a.qp->handle, size = 64;       // ring_pair_open's max_send_wr
  struct rdma_sq_entry *e = &r->e[r->h.prod % size];
  memset(e, 0, sizeof *e);
  e->wr.opcode = 99;
  e->wr.wr_id = 1;
  __sync_synchronize();
  r->h.prod++;
  uint64 end = clock_ns() + 10000000000ULL;
  int fatal = 0;
  while (fatal == 0 && clock_ns() < end) fatal = async_fatal_of(h, &q);
  TR_ASSERT(fatal == 1);
  TR_ASSERT(rdmau_wait(p.a.cq, &wc, 10000) == 1 && wc.wr_id == 0 && wc.status == IBV_WC_WR_FLUSH_ERR);
  struct ibv_qp_attr qa;
  struct ibv_qp_init_attr qia;
  TR_ASSERT(ibv_query_qp(p.a.qp, &qa, IBV_QP_STATE, &qia) == 0 && qa.qp_state == IBV_QPS_ERR);
  TR_ASSERT(post_send1(&q.a, IBV_WR_RDMA_WRITE, 8, (uint64_t)q.b.buf, q.b.mr->rkey, 0, 9) == 0);
  TR_ASSERT(wait_ok(q.a.cq, &wc) == 0 && wc.wr_id == 9);
  pair_close(&p);
  pair_close(&q);
}

// ibv_post_recv of a list of RING_LIST receives and of a single one each
// make one system call; SENDs then complete every receive, in order.
static void t_rq_post_one_syscall(void) {
  struct pair p;
  struct ibv_recv_wr rw[RING_LIST], *rbad;
  struct ibv_sge rsge[RING_LIST];
  ring_pair_open(&p);
  for (int i = 0; i < RING_LIST; i++) {
    rsge[i] = (struct ibv_sge){ (uint64_t)p.b.buf, 64, p.b.mr->lkey };
    rw[i] = (struct ibv_recv_wr){ .wr_id = 100 + (uint64_t)i, .sg_list = &rsge[i], .num_sge = 1,
                                  .next = i + 1 < RING_LIST ? &rw[i + 1] : NULL };
  }
  long list = SYSCALLS_IN(TR_ASSERT(ibv_post_recv(p.b.qp, rw, &rbad) == 0));
  rw[0].wr_id = 100 + RING_LIST;
  rw[0].next = NULL;
  one_call_each(list, SYSCALLS_IN(TR_ASSERT(ibv_post_recv(p.b.qp, rw, &rbad) == 0)), "receives");
  for (int i = 0; i <= RING_LIST; i++)
    TR_ASSERT(post_send1(&p.a, IBV_WR_SEND, 8, 0, 0, 0, (uint64_t)i) == 0);
  TR_ASSERT(wait_in_order(p.a.cq, RING_LIST + 1, 0) == 0);
  TR_ASSERT(wait_in_order(p.b.cq, RING_LIST + 1, 100) == 0);
  pair_close(&p);
}

// The child of t_sq_ring_garbage: garbage in a QP's mapped send ring, and
// doorbells, while another pair's WRITEs run: garbage entries are copied
// and refused or fail that QP only; a producer index past the ring takes
// nothing and puts the QP in ERR with IBV_EVENT_QP_FATAL; the other pair
// completes every WRITE.
static int sq_ring_garbage_child(void) {
  struct pair p, q;
  struct ibv_wc wc;
  TR_ASSERT(pair_open(&p, 64) == 0 && pair_open(&q, 64) == 0);
  struct rdma_sq_ring *r = p.a.qp->sq_ring;
  int h = (int)p.a.qp->handle;
  TR_ASSERT(r != NULL);
  TR_ASSERT(post_send1(&p.a, IBV_WR_RDMA_WRITE, 8, (uint64_t)p.b.buf, p.b.mr->rkey, 0, 1) == 0);
  TR_ASSERT(wait_ok(p.a.cq, &wc) == 0);
  uint32_t size = 64, x = 2463534242u;        // pair_open's max_send_wr
  unsigned *words = (unsigned *)r->e, nwords = (unsigned)(size * sizeof r->e[0] / sizeof *words);
  for (unsigned i = 0; i < nwords; i++) words[i] = x = x * 1103515245u + 12345u;
  r->h.prod = r->h.cons + 4;                   // four garbage entries: each copied, then checked
  int took = rdma_doorbell(h, RDMA_WQ_SEND);
  TR_ASSERT(took >= 0 && took <= 4);
  r->h.prod = r->h.cons + size + 1 + x % 1000; // past the ring: nothing taken, the QP fails
  TR_ASSERT(rdma_doorbell(h, RDMA_WQ_SEND) == -1);
  TR_ASSERT(async_fatal_of((uint32_t)h, &q) == 1);
  struct ibv_qp_attr qa;
  struct ibv_qp_init_attr qia;
  TR_ASSERT(ibv_query_qp(p.a.qp, &qa, IBV_QP_STATE, &qia) == 0 && qa.qp_state == IBV_QPS_ERR);
  for (int i = 0; i < SCRIBBLES; i++) {
    x = x * 1103515245u + 12345u;
    ((unsigned *)r)[x % (32 + nwords)] = x;     // anywhere: indices, err, entries
    rdma_doorbell(h, RDMA_WQ_SEND);
    TR_ASSERT(post_send1(&q.a, IBV_WR_RDMA_WRITE, 8, (uint64_t)q.b.buf, q.b.mr->rkey, 0, 9) == 0);
    TR_ASSERT(wait_ok(q.a.cq, &wc) == 0 && wc.wr_id == 9);
  }
  TR_ASSERT(async_fatal_of(~0u, &q) == 0);
  pair_close(&p);
  pair_close(&q);
  return 0;
}

// sq_ring_garbage_child in a child; then its pinned pages come back (its
// heap goes at exit, so the count is taken around it).
static void t_sq_ring_garbage(void) {
  struct sysinfo before;
  TR_ASSERT(sysinfo(&before) == 0);
  int pid = fork();
  if (pid == 0) exit(sq_ring_garbage_child());
  int st = -1;
  TR_ASSERT(pid > 0 && wait(&st) == pid && st == 0);
  pages_come_back(&before);
}

// A fork's child scribbles on its copy of the parent's send ring and rings
// the doorbell with the parent's handle (not its QP: -1); the kernel reads
// only the parent's pages, whose next post still goes.
static void t_sq_ring_fork(void) {
  struct pair p;
  struct ibv_wc wc;
  TR_ASSERT(pair_open(&p, 64) == 0 && p.a.qp->sq_ring != NULL);
  int pid = fork();
  if (pid == 0) {
    memset((void *)p.a.qp->sq_ring, 0xa5, RDMA_WQ_RING_BYTES(RDMA_WQ_SEND, 64));
    exit(rdma_doorbell((int)p.a.qp->handle, RDMA_WQ_SEND) == -1 ? 0 : 1);
  }
  int st = -1;
  TR_ASSERT(pid > 0 && wait(&st) == pid && st == 0);
  TR_ASSERT(post_send1(&p.a, IBV_WR_RDMA_WRITE, 8, (uint64_t)p.b.buf, p.b.mr->rkey, 0, 5) == 0);
  TR_ASSERT(wait_ok(p.a.cq, &wc) == 0 && wc.wr_id == 5);
  pair_close(&p);
}

// A CQ on channel ch (context 0x1234) and a QP whose receive CQ it is,
// connected to p->a, with one receive (wr_id 55) posted and the CQ armed.
static struct ibv_cq *channel_cq_open(struct pair *p, struct ibv_comp_channel *ch,
                                      struct ibv_qp **qp) {
  TR_ASSERT(pair_open(p, 4096) == 0);
  struct ibv_cq *cq = ibv_create_cq(ctx, 16, (void *)0x1234, ch, 0);
  TR_ASSERT(cq);
  struct ibv_qp_init_attr ia;
  memset(&ia, 0, sizeof ia);
  ia.send_cq = p->b.cq; ia.recv_cq = cq; ia.qp_type = IBV_QPT_RC;
  ia.cap.max_send_wr = ia.cap.max_recv_wr = 8; ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
  TR_ASSERT((*qp = ibv_create_qp(p->pd, &ia)) != NULL);
  TR_ASSERT(rewire(p->a.qp, *qp, IBV_ACCESS_REMOTE_WRITE) == 0);
  struct ibv_sge sge = { (uint64_t)p->b.buf, 64, p->b.mr->lkey };
  struct ibv_recv_wr rw = { .wr_id = 55, .sg_list = &sge, .num_sge = 1 }, *rbad;
  TR_ASSERT(ibv_post_recv(*qp, &rw, &rbad) == 0);
  TR_ASSERT(ibv_req_notify_cq(cq, 0) == 0);
  return cq;
}

// Takes channel ch's event, which must be cq's; polls cq's receive (55);
// the channel is busy until the QP and CQ go, then it goes too.
static void channel_event_close(struct pair *p, struct ibv_comp_channel *ch, struct ibv_cq *cq,
                                struct ibv_qp *qp) {
  struct ibv_wc wc;
  struct ibv_cq *ev_cq;
  void *ev_ctx;
  TR_ASSERT(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == 0);
  TR_ASSERT(ev_cq == cq && ev_ctx == (void *)0x1234);
  ibv_ack_cq_events(ev_cq, 1);
  TR_ASSERT(ibv_poll_cq(cq, 1, &wc) == 1 && wc.wr_id == 55 && wc.status == IBV_WC_SUCCESS);
  TR_ASSERT(ibv_destroy_comp_channel(ch) == EBUSY);
  TR_ASSERT(ibv_destroy_qp(qp) == 0 && ibv_destroy_cq(cq) == 0 && ibv_destroy_comp_channel(ch) == 0);
  pair_close(p);
}

static void t_channel(void) {
  struct pair p;
  struct ibv_qp *qp;
  struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
  TR_ASSERT(ch);
  struct ibv_cq *cq = channel_cq_open(&p, ch, &qp);
  int pid = fork();
  if (pid == 0) {        // the child cannot use our objects, and posts nothing
    struct rdma_wc w;
    exit(rdma_poll_cq((int)cq->handle, 1, &w) == -1 ? 0 : 1);
  }
  int st = -1;
  wait(&st);
  TR_ASSERT(st == 0);
  TR_ASSERT(post_send1(&p.a, IBV_WR_SEND, 16, 0, 0, 0, 56) == 0);
  channel_event_close(&p, ch, cq, qp);    // get_cq_event sleeps in the kernel
}

// The channel's fd polls: not ready while the armed CQ has no completion
// (a non-blocking get_cq_event says EAGAIN at once), POLLIN once a
// loopback SEND completed the receive, not ready again once it is taken.
static void t_channel_poll(void) {
  struct pair p;
  struct ibv_qp *qp;
  struct ibv_cq *ev_cq;
  void *ev_ctx;
  struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
  TR_ASSERT(ch && ch->fd > 2);
  struct ibv_cq *cq = channel_cq_open(&p, ch, &qp);
  struct pollfd pf = { ch->fd, POLLIN, 0 };
  TR_CHECK(poll(&pf, 1, 0) == 0 && pf.revents == 0, "armed, no completion: revents 0x%x", pf.revents);
  TR_ASSERT(fcntl(ch->fd, F_SETFL, O_NONBLOCK) == 0);
  errno = 0;
  TR_CHECK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == -1 && errno == EAGAIN,
           "non-blocking get_cq_event with no event: errno %d", errno);
  TR_ASSERT(post_send1(&p.a, IBV_WR_SEND, 16, 0, 0, 0, 56) == 0);
  int r = poll(&pf, 1, 10000);
  TR_CHECK(r == 1 && pf.revents == POLLIN, "after the completion: poll %d, revents 0x%x", r, pf.revents);
  struct pollfd again = { ch->fd, POLLIN, 0 };
  TR_ASSERT(poll(&again, 1, 0) == 1);              // still there until taken
  channel_event_close(&p, ch, cq, qp);
}

// A process asleep in ibv_get_cq_event can be killed; its objects go.
// The child says (through a pipe) when it is about to block, so the kill
// finds it in the call, not still setting up.
static void t_kill_blocked(void) {
  int ready[2];
  TR_ASSERT(pipe(ready) == 0);
  int pid = fork();
  if (pid == 0) {
    close(ready[0]);
    struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
    struct ibv_cq *cq = ch ? ibv_create_cq(ctx, 4, NULL, ch, 0) : NULL;
    struct ibv_cq *ev;
    void *evctx;
    if (!cq || ibv_req_notify_cq(cq, 0)) exit(2);
    write(ready[1], "r", 1);
    ibv_get_cq_event(ch, &ev, &evctx);      // nothing will ever complete
    exit(3);
  }
  close(ready[1]);
  char r = 0;
  TR_ASSERT(read(ready[0], &r, 1) == 1 && r == 'r');
  close(ready[0]);
  TR_ASSERT(kill(pid) == 0);
  int st = 0;
  TR_ASSERT(wait(&st) == pid);
  printf("  child exit status %d\n", st);
  TR_ASSERT(st != 2 && st != 3);
  struct rdma_qp_stats s;
  for (int i = 0; rdma_qp_stats(i, &s) >= 0; i++)   // no QP of that pid is left
    TR_ASSERT(rdma_qp_stats(i, &s) != 0 || s.owner_pid != pid);
}

// Another process's handles are refused.
static void t_foreign(void) {
  struct pair p;
  TR_ASSERT(pair_open(&p, 4096) == 0);
  int pid = fork();
  if (pid == 0) {
    struct rdma_qp_attr a;
    struct rdma_recv_wr rw;
    struct rdma_mr_keys k;
    memset(&rw, 0, sizeof rw);
    int bad = 0;
    bad += rdma_query_qp((int)p.a.qp->handle, &a) != -1;
    bad += sys_rdma_post_recv((int)p.b.qp->handle, &rw, 1, 0) != -1;
    bad += sys_rdma_destroy_qp((int)p.a.qp->handle) != -1;
    bad += sys_rdma_dereg_mr((int)p.a.mr->handle) != -1;
    bad += rdma_destroy_cq((int)p.a.cq->handle) != -1;
    bad += rdma_reg_mr((int)p.pd->handle, p.a.buf, 16, 0, &k) != -1;
    bad += rdma_dealloc_pd((int)p.pd->handle) != -1;
    exit(bad);
  }
  int st = -1;
  wait(&st);
  TR_ASSERT(st == 0);
  pair_close(&p);
}

// Every verbs syscall refuses bad pointers and bad handles with -1.
static void t_bad_pointers(void) {
  void *bads[] = { (void *)0, (void *)0x10, (void *)0x80000000UL, (void *)0x3fffffffffUL,
                   (void *)-1UL };
  struct pair p;
  TR_ASSERT(pair_open(&p, 4096) == 0);
  int qp = (int)p.a.qp->handle, cq = (int)p.a.cq->handle, pd = (int)p.pd->handle;
  int ch = rdma_create_chan();
  TR_ASSERT(ch >= 0);
  for (unsigned i = 0; i < sizeof bads / sizeof bads[0]; i++) {
    void *b = bads[i];
    TR_ASSERT(rdma_query_device(b) == -1);
    TR_ASSERT(rdma_query_port(1, b) == -1);
    TR_ASSERT(rdma_reg_mr(pd, b, 4096, 0, b) == -1);
    TR_ASSERT(rdma_reg_mr(pd, p.a.buf, 16, 0, b) == -1);
    TR_ASSERT(sys_rdma_create_qp(b) == -1);
    TR_ASSERT(rdma_modify_qp(qp, b, 1) == -1);
    TR_ASSERT(rdma_query_qp(qp, b) == -1);
    TR_ASSERT(sys_rdma_post_send(qp, b, 1, 0) == -1);
    TR_ASSERT(sys_rdma_post_recv(qp, b, 1, 0) == -1);
    TR_ASSERT(rdma_qp_stats(qp, b) == -1);        // its own slot: listed (QP1, slot 0, is not)
    TR_ASSERT(rdma_set_neigh(0x0a000063, b) == -1);
    TR_ASSERT(rdma_get_async(b, 0) == -1);
  }
  // poll_cq into a bad buffer, a completion there: the CQ's ring is mapped,
  // so the system call copies nothing (0) and the completion stays in the
  // ring (rdmahostile tries bad buffers on CQs polled by system call).
  TR_ASSERT(post_send1(&p.a, IBV_WR_RDMA_WRITE, 8, (uint64_t)p.b.buf, p.b.mr->rkey, 0, 1) == 0);
  TR_ASSERT(rdma_wait_cq(cq, 10000) == 0);      // the completion is there, not consumed
  TR_ASSERT(p.a.cq->ring && rdma_poll_cq(cq, 1, (struct rdma_wc *)0x10) == 0);
  struct ibv_wc iwc;
  TR_ASSERT(ibv_poll_cq(p.a.cq, 1, &iwc) == 1 && iwc.wr_id == 1);
  int hs[] = { -1, 99999, 1 << 30 };
  struct rdma_wc wc;
  struct rdma_qp_attr a;
  memset(&a, 0, sizeof a);
  for (unsigned i = 0; i < 3; i++) {
    int h = hs[i];
    TR_ASSERT(rdma_dealloc_pd(h) == -1 && sys_rdma_dereg_mr(h) == -1 && rdma_destroy_cq(h) == -1);
    TR_ASSERT(rdma_destroy_chan(h) == -1 && rdma_poll_cq(h, 1, &wc) == -1 && rdma_req_notify(h, 0) == -1);
    TR_ASSERT(rdma_get_cq_event(h, (unsigned long long *)&wc) == -1 && rdma_modify_qp(h, &a, 1) == -1);
    TR_ASSERT(rdma_query_qp(h, &a) == -1 && sys_rdma_destroy_qp(h) == -1);
    TR_ASSERT(sys_rdma_post_send(h, (struct rdma_send_wr *)&a, 1, 0) == -1 && sys_rdma_post_recv(h, (struct rdma_recv_wr *)&a, 1, 0) == -1);
    TR_ASSERT(rdma_create_cq(16, h, 0) == -1 || h == -1);
    TR_ASSERT(rdma_qp_stats(h, (struct rdma_qp_stats *)&a) == -1 || h == 1);
  }
  TR_ASSERT(rdma_create_cq(0, -1, 0) == -1 && rdma_create_cq(1 << 20, -1, 0) == -1);
  TR_ASSERT(rdma_destroy_chan(ch) == 0);
  pair_close(&p);
}

// A child exits with a 1 MiB WRITE and receives in flight; everything is
// released (free pages come back) and the parent can use the device.
static void t_exit_in_flight(void) {
  struct sysinfo before;
  TR_ASSERT(sysinfo(&before) == 0);
  for (int round = 0; round < 3; round++) {
    int pid = fork();
    if (pid == 0) {
      struct pair p;
      if (pair_open(&p, BIG) != 0) exit(1);
      post_recv1(&p.b, 64, 1);
      post_send1(&p.a, IBV_WR_RDMA_WRITE, BIG, (uint64_t)p.b.buf, p.b.mr->rkey, 0, 2);
      post_send1(&p.b, IBV_WR_RDMA_READ, BIG, (uint64_t)p.a.buf, p.a.mr->rkey, 0, 3);
      exit(0);                      // no cleanup: the exit hook does it
    }
    int st = -1;
    wait(&st);
    TR_ASSERT(st == 0);
  }
  // The exit hook ran before wait() returned; give pages that were still
  // in use by the other side a deadline to come back, polling.
  pages_come_back(&before);
  transfer(IBV_WR_RDMA_WRITE, 5000);
}

// ---- limits, async event queues, statuses (issue 18) ----

// Resets qp and connects it to itself (loopback), every access right.
static int self_connect(struct ibv_qp *qp) {
  struct ibv_qp_attr a;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RESET;
  if (ibv_modify_qp(qp, &a, IBV_QP_STATE)) return -1;
  uint32_t psn = rdmau_psn();
  struct rdma_peer me = { .qpn = qp->qp_num, .psn = psn, .ipv4 = rdmau_local_ipv4(ctx) };
  int all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  return rdmau_connect(qp, &me, psn, mtu, all, 7, 14) ? -1 : 0;
}

// One 16-byte op on a self-connected QP; waits for its successful completion.
static int self_op(struct side *s, enum ibv_wr_opcode op, uint8_t *local, uint8_t *remote) {
  struct ibv_sge sge = { (uint64_t)local, 16, s->mr->lkey };
  struct ibv_send_wr wr, *bad;
  struct ibv_wc wc;
  memset(&wr, 0, sizeof wr);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = op;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = (uint64_t)remote;
  wr.wr.rdma.rkey = s->mr->rkey;
  if (ibv_post_send(s->qp, &wr, &bad)) return -1;
  return wait_ok(s->cq, &wc);
}

// The child of t_mr_max: a max_mr_size region one byte past a page boundary
// (one page more than its length: the page directory's last entry).
static int mr_max_child(void) {
  struct ibv_device_attr da;
  struct sysinfo before, after;
  struct pair p;
  memset(&p, 0, sizeof p);
  TR_ASSERT(ibv_query_device(ctx, &da) == 0 && da.max_mr_size == 64ULL << 20);
  uint64_t len = da.max_mr_size;
  char *raw = sbrk((int)(len + 2 * 4096));
  TR_ASSERT(raw != (char *)-1);
  uint8_t *buf = (uint8_t *)((((uint64_t)raw + 4095) & ~4095ULL) + 1);
  p.pd = ibv_alloc_pd(ctx);
  p.a.cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
  TR_ASSERT(p.pd && p.a.cq);
  struct ibv_qp_init_attr ia = { .send_cq = p.a.cq, .recv_cq = p.a.cq, .qp_type = IBV_QPT_RC,
                                 .cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 } };
  p.a.qp = ibv_create_qp(p.pd, &ia);
  TR_ASSERT(p.a.qp && self_connect(p.a.qp) == 0);
  TR_ASSERT(sysinfo(&before) == 0);
  p.a.mr = ibv_reg_mr(p.pd, buf, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
  TR_ASSERT(p.a.mr != NULL);
  uint8_t *last = buf + len - 16;
  fill(buf, 16, 1);
  TR_ASSERT(self_op(&p.a, IBV_WR_RDMA_WRITE, buf, last) == 0);        // remote WRITE into the last page
  TR_ASSERT(memcmp(last, buf, 16) == 0);
  memset(buf + 16, 0, 16);
  TR_ASSERT(self_op(&p.a, IBV_WR_RDMA_READ, buf + 16, last) == 0);    // remote READ of the last page
  TR_ASSERT(memcmp(buf + 16, buf, 16) == 0);
  fill(last, 16, 2);
  TR_ASSERT(self_op(&p.a, IBV_WR_RDMA_WRITE, last, buf + 32) == 0);   // local read of the last page
  TR_ASSERT(memcmp(buf + 32, last, 16) == 0);
  TR_ASSERT(ibv_destroy_qp(p.a.qp) == 0 && ibv_dereg_mr(p.a.mr) == 0);
  TR_ASSERT(sysinfo(&after) == 0);
  printf("  free pages around reg_mr: before %d after %d\n", (int)before.freepages, (int)after.freepages);
  TR_ASSERT(after.freepages == before.freepages);
  return 0;
}

// max_mr_size at an unaligned address: registration, remote WRITE and READ
// and a local read of its last page, and no page leaked (in a child, whose
// 64 MiB heap goes back at exit).
static void t_mr_max(void) {
  int pid = fork();
  if (pid == 0) exit(mr_max_child());
  int st = -1;
  TR_ASSERT(pid > 0 && wait(&st) == pid);
  TR_ASSERT(st == 0);
}

// Moves s's QP to ERR on its own: a WRITE with an lkey nobody has fails
// with a local protection error, and the QP raises IBV_EVENT_QP_FATAL.
static int qp_fatal(struct side *s) {
  struct ibv_wc wc;
  if (self_connect(s->qp) < 0) return -1;
  struct ibv_sge sge = { (uint64_t)s->buf, 16, s->mr->lkey ^ 0x100 };
  struct ibv_send_wr wr, *bad;
  memset(&wr, 0, sizeof wr);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = (uint64_t)s->buf;
  wr.wr.rdma.rkey = s->mr->rkey;
  if (ibv_post_send(s->qp, &wr, &bad)) return -1;
  return rdmau_wait(s->cq, &wc, 10000) == 1 && wc.status == IBV_WC_LOC_PROT_ERR ? 0 : -1;
}

static void drain_async(void) {
  struct rdma_async_event e;
  while (rdma_get_async(&e, 0) == 0)
    ;
}

// The documented capacity of a process's async event queue: one event per
// QP and CQ it may own.
static int async_capacity(void) {
  struct ibv_device_attr da;
  return ibv_query_device(ctx, &da) == 0 ? da.max_qp + da.max_cq : -1;
}

static int open_sides(struct pair *p, int n) {
  int all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  memset(p, 0, sizeof *p);
  p->pd = ibv_alloc_pd(ctx);
  if (!p->pd || side_open(p, &p->a, 64, all, 16) < 0) return -1;
  return n < 2 ? 0 : side_open(p, &p->b, 64, all, 16);
}

// A child raises more QP errors than its event queue holds and never reads
// them; the parent's own QP_FATAL still arrives (and the child's do not).
static void t_async_isolation(void) {
  int cap = async_capacity(), c2p[2], p2c[2];
  char c = 0;
  TR_ASSERT(cap > 0 && pipe(c2p) == 0 && pipe(p2c) == 0);
  drain_async();
  int pid = fork();
  if (pid == 0) {
    struct pair p;
    int bad = open_sides(&p, 1) < 0;
    for (int i = 0; i < cap + 8 && !bad; i++) bad = qp_fatal(&p.a) < 0;
    write(c2p[1], "x", 1);
    read(p2c[0], &c, 1);           // keep the events queued until the parent is done
    exit(bad);
  }
  close(c2p[1]);
  close(p2c[0]);
  TR_ASSERT(pid > 0 && read(c2p[0], &c, 1) == 1);
  struct pair p;
  TR_ASSERT(open_sides(&p, 1) == 0 && qp_fatal(&p.a) == 0);
  struct rdma_async_event e;
  int got = -1;
  uint64 deadline = clock_ns() + 5000000000ULL;
  while (got < 0 && clock_ns() < deadline) {
    if (rdma_get_async(&e, 0) < 0) { sleep(1); continue; }
    got = e.event_type == IBV_EVENT_QP_FATAL && e.handle == (int)p.a.qp->handle;
  }
  write(p2c[1], "x", 1);
  int st = -1;
  wait(&st);
  close(c2p[0]);
  close(p2c[1]);
  TR_ASSERT(st == 0);
  TR_ASSERT(got == 1);
  TR_ASSERT(rdma_get_async(&e, 0) < 0);          // nothing of the child's
  pair_close(&p);
}

// A full queue drops its owner's oldest events: after cap + 9 errors, the
// cap events left end with the newest (b's), and async_dropped counts 9.
static void t_async_overflow(void) {
  int cap = async_capacity(), n = 0;
  struct rdma_dev_stats s0, s1;
  struct rdma_async_event first = { 0 }, e = { 0 };
  struct pair p;
  TR_ASSERT(cap > 0);
  drain_async();
  TR_ASSERT(open_sides(&p, 2) == 0);
  TR_ASSERT(rdma_dev_stats(&s0) == 0);
  for (int i = 0; i < cap + 8; i++) TR_ASSERT(qp_fatal(&p.a) == 0);
  TR_ASSERT(qp_fatal(&p.b) == 0);
  TR_ASSERT(rdma_dev_stats(&s1) == 0);
  while (rdma_get_async(&e, 0) == 0)
    if (n++ == 0) first = e;
  printf("  %d events of %d kept, %d dropped\n", n, cap + 9, (int)(s1.async_dropped - s0.async_dropped));
  TR_ASSERT(n == cap && s1.async_dropped - s0.async_dropped == 9);
  TR_ASSERT(first.event_type == IBV_EVENT_QP_FATAL && first.handle == (int)p.a.qp->handle);
  TR_ASSERT(e.event_type == IBV_EVENT_QP_FATAL && e.handle == (int)p.b.qp->handle);
  pair_close(&p);
}

// The device's live-object counts (rdma_dev_stats, what make soak compares):
// a PD, two CQs, two MRs and two QPs more while a pair is open, the same as
// before once it is closed; the ring pool gives back every page it lent.
static void t_live_counts(void) {
  struct rdma_dev_stats s0, s1, s2;
  struct pair p;
  TR_ASSERT(rdma_dev_stats(&s0) == 0);
  TR_ASSERT(open_sides(&p, 2) == 0);
  TR_ASSERT(rdma_dev_stats(&s1) == 0);
  pair_close(&p);
  TR_ASSERT(rdma_dev_stats(&s2) == 0);
  printf("  live pds %lu->%lu mrs %lu->%lu cqs %lu->%lu qps %lu->%lu pool_free %lu->%lu\n", s0.live_pds,
         s1.live_pds, s0.live_mrs, s1.live_mrs, s0.live_cqs, s1.live_cqs, s0.live_qps, s1.live_qps,
         s0.pool_free_pages, s1.pool_free_pages);
  TR_ASSERT(s1.live_pds == s0.live_pds + 1 && s1.live_mrs == s0.live_mrs + 2);
  TR_ASSERT(s1.live_cqs == s0.live_cqs + 2 && s1.live_qps == s0.live_qps + 2);
  TR_ASSERT(s1.pool_free_pages < s0.pool_free_pages);
  TR_ASSERT(s2.live_pds == s0.live_pds && s2.live_mrs == s0.live_mrs && s2.live_cqs == s0.live_cqs);
  TR_ASSERT(s2.live_qps == s0.live_qps && s2.pool_free_pages == s0.pool_free_pages);
}

// The errno values libibverbs callers expect from post and modify.
static void t_statuses(void) {
  struct pair p;
  struct ibv_qp_attr a;
  struct ibv_sge sge[2];
  struct ibv_send_wr wr, *bad;
  struct ibv_recv_wr rw, *rbad;
  TR_ASSERT(open_sides(&p, 1) == 0);
  struct ibv_qp_init_attr ia = { .send_cq = p.a.cq, .recv_cq = p.a.cq, .qp_type = IBV_QPT_RC,
                                 .cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 } };
  struct ibv_qp *q = ibv_create_qp(p.pd, &ia);
  TR_ASSERT(q && ia.cap.max_send_sge == 1 && ia.cap.max_recv_sge == 1);
  for (int i = 0; i < 2; i++) sge[i] = (struct ibv_sge){ (uint64_t)p.a.buf, 8, p.a.mr->lkey };
  memset(&wr, 0, sizeof wr);
  wr.sg_list = sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.wr.rdma.remote_addr = (uint64_t)p.a.buf;
  wr.wr.rdma.rkey = p.a.mr->rkey;
  TR_ASSERT(ibv_post_send(q, &wr, &bad) == EINVAL && bad == &wr);      // RESET [QP-STATE-4]
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
  TR_ASSERT(ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS) == EINVAL);      // no P_Key index, port
  TR_ASSERT(ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX) == EINVAL);
  TR_ASSERT(ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PORT) == EINVAL);
  a.port_num = 2;
  TR_ASSERT(ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_PORT) == EINVAL);
  a.port_num = 1;
  a.qp_access_flags = 0xffff;                                       // bits reg_mr refuses
  TR_ASSERT(ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_PORT) == EINVAL);
  TR_ASSERT(ibv_query_qp(q, &a, IBV_QP_STATE, NULL) == 0 && a.qp_state == IBV_QPS_RESET);
  TR_ASSERT(ibv_post_send(q, &wr, &bad) == EINVAL);
  TR_ASSERT(self_connect(q) == 0);
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTS;
  a.qp_access_flags = 0x10;
  TR_ASSERT(ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS) == EINVAL);   // RTS -> RTS too
  wr.num_sge = 2;                                                   // above the QP's 1
  TR_ASSERT(ibv_post_send(q, &wr, &bad) == EINVAL && bad == &wr);
  memset(&rw, 0, sizeof rw);
  rw.sg_list = sge;
  rw.num_sge = 2;
  TR_ASSERT(ibv_post_recv(q, &rw, &rbad) == EINVAL && rbad == &rw);
  struct ibv_send_wr chain[8];                                      // more than the queue holds:
  for (int i = 0; i < 8; i++) {                                     // ENOMEM at the first that
    chain[i] = wr;                                                  // does not fit
    chain[i].num_sge = 1;
    chain[i].next = i < 7 ? &chain[i + 1] : NULL;
  }
  TR_ASSERT(ibv_post_send(q, chain, &bad) == ENOMEM && bad == &chain[ia.cap.max_send_wr]);
  TR_ASSERT(ibv_destroy_qp(q) == 0);
  pair_close(&p);
}

// ---- libibverbs' exact semantics ----

// Every IBV_* value the ABI carries is rdma-core's: a program built against
// <infiniband/verbs.h> and this library agree bit for bit.
static void t_verbs_abi_values(void) {
  static const struct { const char *name; long got, want; } v[] = {
#define V(x, w) { #x, (long)(x), (long)(w) }
    V(IBV_QP_STATE, 1 << 0), V(IBV_QP_CUR_STATE, 1 << 1), V(IBV_QP_EN_SQD_ASYNC_NOTIFY, 1 << 2),
    V(IBV_QP_ACCESS_FLAGS, 1 << 3), V(IBV_QP_PKEY_INDEX, 1 << 4), V(IBV_QP_PORT, 1 << 5),
    V(IBV_QP_QKEY, 1 << 6), V(IBV_QP_AV, 1 << 7), V(IBV_QP_PATH_MTU, 1 << 8),
    V(IBV_QP_TIMEOUT, 1 << 9), V(IBV_QP_RETRY_CNT, 1 << 10), V(IBV_QP_RNR_RETRY, 1 << 11),
    V(IBV_QP_RQ_PSN, 1 << 12), V(IBV_QP_MAX_QP_RD_ATOMIC, 1 << 13), V(IBV_QP_ALT_PATH, 1 << 14),
    V(IBV_QP_MIN_RNR_TIMER, 1 << 15), V(IBV_QP_SQ_PSN, 1 << 16), V(IBV_QP_MAX_DEST_RD_ATOMIC, 1 << 17),
    V(IBV_QP_PATH_MIG_STATE, 1 << 18), V(IBV_QP_CAP, 1 << 19), V(IBV_QP_DEST_QPN, 1 << 20),
    V(IBV_SEND_FENCE, 1), V(IBV_SEND_SIGNALED, 2), V(IBV_SEND_SOLICITED, 4), V(IBV_SEND_INLINE, 8),
    V(IBV_SEND_IP_CSUM, 16),
    V(IBV_WC_GRH, 1), V(IBV_WC_WITH_IMM, 2), V(IBV_WC_IP_CSUM_OK, 4), V(IBV_WC_WITH_INV, 8),
    V(IBV_ACCESS_LOCAL_WRITE, 1), V(IBV_ACCESS_REMOTE_WRITE, 2), V(IBV_ACCESS_REMOTE_READ, 4),
    V(IBV_ACCESS_REMOTE_ATOMIC, 8), V(IBV_ACCESS_MW_BIND, 16),
    V(IBV_WR_RDMA_WRITE, 0), V(IBV_WR_RDMA_WRITE_WITH_IMM, 1), V(IBV_WR_SEND, 2),
    V(IBV_WR_SEND_WITH_IMM, 3), V(IBV_WR_RDMA_READ, 4), V(IBV_WR_ATOMIC_CMP_AND_SWP, 5),
    V(IBV_WR_ATOMIC_FETCH_AND_ADD, 6), V(IBV_WR_LOCAL_INV, 7), V(IBV_WR_BIND_MW, 8),
    V(IBV_WR_SEND_WITH_INV, 9), V(IBV_WR_TSO, 10),
    V(IBV_WC_SEND, 0), V(IBV_WC_RDMA_WRITE, 1), V(IBV_WC_RDMA_READ, 2), V(IBV_WC_COMP_SWAP, 3),
    V(IBV_WC_FETCH_ADD, 4), V(IBV_WC_BIND_MW, 5), V(IBV_WC_LOCAL_INV, 6), V(IBV_WC_TSO, 7),
    V(IBV_WC_RECV, 128), V(IBV_WC_RECV_RDMA_WITH_IMM, 129),
    V(IBV_WC_SUCCESS, 0), V(IBV_WC_WR_FLUSH_ERR, 5), V(IBV_WC_REM_ACCESS_ERR, 10),
    V(IBV_WC_RETRY_EXC_ERR, 12), V(IBV_WC_RNR_RETRY_EXC_ERR, 13), V(IBV_WC_GENERAL_ERR, 21),
    V(IBV_EVENT_CQ_ERR, 0), V(IBV_EVENT_QP_FATAL, 1), V(IBV_EVENT_COMM_EST, 4),
    V(IBV_EVENT_PORT_ACTIVE, 9), V(IBV_EVENT_GID_CHANGE, 18), V(IBV_EVENT_WQ_FATAL, 19),
    V(IBV_PORT_NOP, 0), V(IBV_PORT_DOWN, 1), V(IBV_PORT_INIT, 2), V(IBV_PORT_ARMED, 3),
    V(IBV_PORT_ACTIVE, 4), V(IBV_PORT_ACTIVE_DEFER, 5),
    V(IBV_PORT_CM_SUP, 1 << 16), V(IBV_PORT_IP_BASED_GIDS, 1 << 26),
    V(IBV_QPS_RESET, 0), V(IBV_QPS_RTS, 3), V(IBV_QPS_ERR, 6), V(IBV_MTU_256, 1), V(IBV_MTU_4096, 5),
#undef V
  };
  for (int i = 0; i < (int)(sizeof v / sizeof v[0]); i++)
    TR_CHECK(v[i].got == v[i].want, "%s is %ld, libibverbs' is %ld", v[i].name, v[i].got, v[i].want);
}

// A solicited receive sets no wc_flags bit beyond libibverbs' meanings
// (bit 4 is IBV_WC_IP_CSUM_OK): plain SEND 0, SEND_WITH_IMM WITH_IMM only.
// [RESP-RECV-4] [HDR-BTH-3]
static void t_verbs_wc_flags_solicited(void) {
  struct pair p;
  struct ibv_wc wc;
  TR_ASSERT(pair_open(&p, 64) == 0);
  for (int imm = 0; imm < 2; imm++) {
    struct ibv_sge sge = { (uint64_t)p.a.buf, 16, p.a.mr->lkey };
    struct ibv_send_wr wr, *bad;
    memset(&wr, 0, sizeof wr);
    wr.wr_id = 5 + imm; wr.sg_list = &sge; wr.num_sge = 1;
    wr.opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED;
    wr.imm_data = htonl(0xabcd);
    TR_ASSERT(post_recv1(&p.b, 64, 70 + imm) == 0);
    TR_ASSERT(ibv_post_send(p.a.qp, &wr, &bad) == 0);
    TR_ASSERT(wait_ok(p.a.cq, &wc) == 0 && wc.wr_id == (uint64_t)(5 + imm));
    TR_ASSERT(wait_ok(p.b.cq, &wc) == 0 && wc.wr_id == (uint64_t)(70 + imm));
    TR_CHECK(wc.wc_flags == (imm ? (unsigned)IBV_WC_WITH_IMM : 0u), "wc_flags 0x%x", wc.wc_flags);
  }
  pair_close(&p);
}

// max_inline_data: create writes back what it granted and query_qp
// reports the same, in attr->cap and init_attr->cap.
static void t_verbs_query_qp_inline(void) {
  struct pair p;
  TR_ASSERT(open_sides(&p, 1) == 0);
  for (uint32_t want = 0; want <= 128; want += 128) {
    struct ibv_qp_init_attr ia = { .send_cq = p.a.cq, .recv_cq = p.a.cq, .qp_type = IBV_QPT_RC,
                                   .cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
                                            .max_recv_sge = 1, .max_inline_data = want } };
    struct ibv_qp *q = ibv_create_qp(p.pd, &ia);
    TR_ASSERT(q);
    TR_CHECK(ia.cap.max_inline_data == want, "create granted %u inline bytes for %u", ia.cap.max_inline_data, want);
    struct ibv_qp_attr a;
    struct ibv_qp_init_attr qa;
    TR_ASSERT(ibv_query_qp(q, &a, IBV_QP_CAP, &qa) == 0);
    TR_CHECK(a.cap.max_inline_data == want && qa.cap.max_inline_data == want,
             "query_qp: max_inline_data %u / %u, created with %u", a.cap.max_inline_data,
             qa.cap.max_inline_data, want);
    TR_ASSERT(a.cap.max_send_wr == ia.cap.max_send_wr && a.cap.max_recv_wr == ia.cap.max_recv_wr);
    TR_ASSERT(ibv_destroy_qp(q) == 0);
  }
  {                                                // more than the library's inline slots
    struct ibv_qp_init_attr ia = { .send_cq = p.a.cq, .recv_cq = p.a.cq, .qp_type = IBV_QPT_RC,
                                   .cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_inline_data = 129 } };
    TR_ASSERT(ibv_create_qp(p.pd, &ia) == NULL && errno == EINVAL);
  }
  pair_close(&p);
}

// The *_str functions return libibverbs' strings; "unknown" past the enum.
static void t_verbs_names(void) {
  static const char *const port[] = { "no state change (NOP)", "down", "init", "armed", "active",
                                       "active deferred" };
  for (int s = IBV_PORT_NOP; s <= IBV_PORT_ACTIVE_DEFER; s++)
    TR_CHECK(strcmp(ibv_port_state_str((enum ibv_port_state)s), port[s]) == 0,
             "ibv_port_state_str(%d) is \"%s\"", s, ibv_port_state_str((enum ibv_port_state)s));
  TR_ASSERT(strcmp(ibv_port_state_str((enum ibv_port_state)6), "unknown") == 0);
  static const struct { int v; const char *want; } ev[] = {
    { IBV_EVENT_CQ_ERR, "CQ error" }, { IBV_EVENT_QP_FATAL, "local work queue catastrophic error" },
    { IBV_EVENT_COMM_EST, "communication established" }, { IBV_EVENT_PORT_ACTIVE, "port active" },
    { IBV_EVENT_GID_CHANGE, "GID table change" }, { 99, "unknown" },
  };
  for (int i = 0; i < (int)(sizeof ev / sizeof ev[0]); i++)
    TR_CHECK(strcmp(ibv_event_type_str((enum ibv_event_type)ev[i].v), ev[i].want) == 0,
             "ibv_event_type_str(%d) is \"%s\"", ev[i].v, ibv_event_type_str((enum ibv_event_type)ev[i].v));
  TR_ASSERT(strcmp(ibv_wc_status_str(IBV_WC_SUCCESS), "success") == 0);
  TR_ASSERT(strcmp(ibv_wc_status_str(IBV_WC_RETRY_EXC_ERR), "transport retry counter exceeded") == 0);
  TR_ASSERT(strcmp(ibv_wc_status_str(IBV_WC_WR_FLUSH_ERR), "Work Request Flushed Error") == 0);
  TR_ASSERT(strcmp(ibv_wc_status_str((enum ibv_wc_status)99), "unknown") == 0);
  TR_ASSERT(strcmp(ibv_node_type_str(IBV_NODE_CA), "InfiniBand channel adapter") == 0);
}

// The port's GID table has 16 entries: 0 the IPv4-mapped GID, 1..15 empty
// (0 and an all-zero GID), 16 and beyond EINVAL.
static void t_verbs_query_gid_table(void) {
  struct ibv_port_attr pa;
  union ibv_gid gid;
  TR_ASSERT(ibv_query_port(ctx, 1, &pa) == 0);
  TR_CHECK(pa.gid_tbl_len == 16, "gid_tbl_len %d", pa.gid_tbl_len);
  TR_ASSERT(ibv_query_gid(ctx, 1, 0, &gid) == 0 && ibvx_gid_to_ipv4(&gid) != 0);
  for (int i = 1; i < pa.gid_tbl_len; i++) {
    memset(&gid, 0x5a, sizeof gid);
    TR_CHECK(ibv_query_gid(ctx, 1, i, &gid) == 0, "query_gid(%d) failed", i);
    for (int b = 0; b < 16; b++) TR_CHECK(gid.raw[b] == 0, "GID %d byte %d is 0x%x", i, b, gid.raw[b]);
  }
  errno = 0;
  TR_ASSERT(ibv_query_gid(ctx, 1, pa.gid_tbl_len, &gid) == -1 && errno == EINVAL);
  errno = 0;
  TR_ASSERT(ibv_query_gid(ctx, 1, -1, &gid) == -1 && errno == EINVAL);
  TR_ASSERT(ibv_query_gid(ctx, 2, 0, &gid) == -1);
}

// ibv_devinfo's port fields hold values libibverbs' users decode: width 1X
// (1) at SDR (1, 2.5 Gbps) for the 1 Gb/s emulated link, one data VL
// (max_vl_num 1), LinkUp (5), CM support and IP-based GIDs, RoCE's zero
// LIDs; and ibv_devinfo's texts for them.
static void t_verbs_query_port_attrs(void) {
  struct ibv_port_attr pa;
  memset(&pa, 0xa5, sizeof pa);
  TR_ASSERT(ibv_query_port(ctx, 1, &pa) == 0);
  TR_CHECK(pa.state == IBV_PORT_ACTIVE && pa.active_width == 1 && pa.active_speed == 1 &&
           pa.max_vl_num == 1 && pa.phys_state == 5, "state %d width %d speed %d max_vl_num %d phys %d",
           pa.state, pa.active_width, pa.active_speed, pa.max_vl_num, pa.phys_state);
  TR_CHECK(pa.port_cap_flags == (IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS) &&
           pa.link_layer == IBV_LINK_LAYER_ETHERNET && pa.lid == 0 && pa.sm_lid == 0 && pa.lmc == 0 &&
           pa.pkey_tbl_len == 1, "cap 0x%x link_layer %d lid %d", pa.port_cap_flags, pa.link_layer, pa.lid);
  TR_CHECK(strcmp(ibvx_width_str(pa.active_width), "1X") == 0 &&
           strcmp(ibvx_speed_str(pa.active_speed), "2.5 Gbps") == 0 &&
           strcmp(ibvx_phys_state_str(pa.phys_state), "LINK_UP") == 0, "port texts");
  TR_CHECK(strcmp(ibvx_width_str(IBVX_WIDTH_12X), "12X") == 0 && strcmp(ibvx_speed_str(32), "25.0 Gbps") == 0 &&
           strcmp(ibvx_width_str(3), "invalid width") == 0 && strcmp(ibvx_speed_str(0), "invalid speed") == 0,
           "code texts");
}

// rc_pingpong's defaults fit: a receive queue of 500 (max_qp_wr is 512), a
// CQ of rx_depth + 1; query_device reports limits create accepts exactly.
static void t_verbs_max_qp_wr(void) {
  struct ibv_device_attr da;
  struct ibv_pd *pd = ibv_alloc_pd(ctx);
  TR_ASSERT(pd && ibv_query_device(ctx, &da) == 0);
  TR_CHECK(da.max_qp_wr >= 512 && da.max_cqe >= 1024, "max_qp_wr %d max_cqe %d", da.max_qp_wr, da.max_cqe);
  struct ibv_cq *cq = ibv_create_cq(ctx, 501, NULL, NULL, 0);
  TR_ASSERT(cq);
  struct ibv_qp_init_attr ia = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
                                 .cap = { .max_send_wr = 1, .max_recv_wr = 500, .max_send_sge = 1, .max_recv_sge = 1 } };
  struct ibv_qp *q = ibv_create_qp(pd, &ia);
  TR_CHECK(q != NULL, "create_qp with max_recv_wr 500");
  TR_ASSERT(ia.cap.max_recv_wr >= 500 && ia.cap.max_recv_wr <= (uint32_t)da.max_qp_wr);
  TR_ASSERT(ibv_destroy_qp(q) == 0);
  ia.cap.max_send_wr = ia.cap.max_recv_wr = (uint32_t)da.max_qp_wr;
  q = ibv_create_qp(pd, &ia);
  TR_ASSERT(q && ia.cap.max_send_wr == (uint32_t)da.max_qp_wr && ibv_destroy_qp(q) == 0);
  ia.cap.max_send_wr = ia.cap.max_recv_wr = (uint32_t)da.max_qp_wr + 1;
  TR_ASSERT(ibv_create_qp(pd, &ia) == NULL);
  struct ibv_cq *big = ibv_create_cq(ctx, da.max_cqe, NULL, NULL, 0);
  TR_ASSERT(big && ibv_destroy_cq(big) == 0);
  TR_ASSERT(ibv_create_cq(ctx, da.max_cqe + 1, NULL, NULL, 0) == NULL);
  TR_ASSERT(ibv_destroy_cq(cq) == 0 && ibv_dealloc_pd(pd) == 0);
}

// ---- device limits: creating past max_qp / max_cq / the ring pool ----

static struct ibv_qp *lim_qp[1024];   // max_qp + 1 must fit: one past the limit is tried
static struct ibv_cq *lim_cq[1024];

// QPs of wr WRs each way on cq until create fails (at most max): how many,
// *err the errno of the failure (0 if none failed).
static int create_qps(struct ibv_pd *pd, struct ibv_cq *cq, uint32_t wr, int max, int *err) {
  struct ibv_qp_init_attr ia = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
    .cap = { .max_send_wr = wr, .max_recv_wr = wr, .max_send_sge = 1, .max_recv_sge = 1 } };
  int n = 0;
  *err = 0;
  errno = 0;
  while (n < max && (lim_qp[n] = ibv_create_qp(pd, &ia)) != NULL) n++;
  if (n < max) *err = errno;
  return n;
}

static int destroy_qps(int n) {
  int bad = 0;
  for (int i = 0; i < n; i++) bad |= ibv_destroy_qp(lim_qp[i]) != 0;
  return bad ? -1 : 0;
}

// Live QPs of the device (every process's, and the kernel's QP1), from
// the device counters (the QP list shows processes' QPs only).
static int live_qps(void) {
  struct rdma_dev_stats d;
  return rdma_dev_stats(&d) == 0 ? (int)d.live_qps : -1;
}

// max_qp QPs exist at once; the next create fails with ENOMEM (nothing
// else changes: a bad argument still gets EINVAL); once all are destroyed
// as many can be created again.
static void t_verbs_qp_limit_enomem(void) {
  struct ibv_device_attr da;
  struct ibv_pd *pd = ibv_alloc_pd(ctx);
  struct ibv_cq *cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
  TR_ASSERT(pd && cq && ibv_query_device(ctx, &da) == 0);
  TR_CHECK(da.max_qp >= 512 && da.max_qp < (int)(sizeof lim_qp / sizeof lim_qp[0]), "max_qp %d", da.max_qp);
  int room = da.max_qp - live_qps(), err;
  int n = create_qps(pd, cq, 1, da.max_qp + 1, &err);
  TR_CHECK(n == room && err == ENOMEM, "created %d of %d, errno %d", n, room, err);
  TR_ASSERT(live_qps() == da.max_qp);
  struct ibv_qp_init_attr bad = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
    .cap = { .max_send_wr = (uint32_t)da.max_qp_wr + 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 } };
  errno = 0;
  TR_ASSERT(ibv_create_qp(pd, &bad) == NULL && errno == EINVAL);
  TR_ASSERT(destroy_qps(n) == 0);
  int again = create_qps(pd, cq, 1, da.max_qp + 1, &err);
  TR_CHECK(again == n && err == ENOMEM, "created %d the second time, errno %d", again, err);
  TR_ASSERT(destroy_qps(again) == 0);
  TR_ASSERT(ibv_destroy_cq(cq) == 0 && ibv_dealloc_pd(pd) == 0);
}

// An async event names its QP whatever the QP's handle: with more than 64
// QPs open (the library's handle table once had 64 entries, the kernel
// allows RDMA_MAX_QP), the QP_FATAL of a QP whose handle is 64 or more
// arrives with element.qp equal to that QP.
static void t_async_event_high_qp_handle(void) {
  struct pair p;
  struct ibv_async_event ev;
  int err;
  drain_async();
  TR_ASSERT(open_sides(&p, 1) == 0);
  int n = create_qps(p.pd, p.a.cq, 1, 65, &err);
  TR_CHECK(n == 65, "created %d of 65 QPs, errno %d", n, err);
  struct side hi = p.a;              // a's CQ, MR and buffer, a QP of handle >= 64
  hi.qp = NULL;
  for (int i = 0; i < n && !hi.qp; i++)
    if (lim_qp[i]->handle >= 64) hi.qp = lim_qp[i];
  TR_ASSERT(hi.qp != NULL);          // 65 distinct handles: one is 64 or more
  TR_ASSERT(qp_fatal(&hi) == 0);
  TR_ASSERT(ibv_get_async_event(ctx, &ev) == 0);
  TR_CHECK(ev.event_type == IBV_EVENT_QP_FATAL && ev.element.qp == hi.qp,
           "event %d names QP handle %d, want QP_FATAL naming handle %u",
           (int)ev.event_type, ev.element.qp ? (int)ev.element.qp->handle : -1, hi.qp->handle);
  ibv_ack_async_event(&ev);
  TR_ASSERT(destroy_qps(n) == 0);
  pair_close(&p);
}

// max_cq CQs exist at once (this process's and others'); the next create
// fails with ENOMEM, and after destroying them as many can be made again.
static void t_verbs_cq_limit_enomem(void) {
  struct ibv_device_attr da;
  TR_ASSERT(ibv_query_device(ctx, &da) == 0);
  TR_CHECK(da.max_cq >= 512 && da.max_cq <= (int)(sizeof lim_cq / sizeof lim_cq[0]), "max_cq %d", da.max_cq);
  int counts[2];
  for (int round = 0; round < 2; round++) {
    int n = 0;
    errno = 0;
    while (n < da.max_cq && (lim_cq[n] = ibv_create_cq(ctx, 1, NULL, NULL, 0)) != NULL) n++;
    TR_CHECK(n < da.max_cq ? errno == ENOMEM : 1, "CQ %d: errno %d", n, errno);
    TR_ASSERT(ibv_create_cq(ctx, 1, NULL, NULL, 0) == NULL && errno == ENOMEM);
    for (int i = 0; i < n; i++) TR_ASSERT(ibv_destroy_cq(lim_cq[i]) == 0);
    counts[round] = n;
  }
  TR_CHECK(counts[0] == counts[1] && counts[0] >= da.max_cq - 16, "created %d then %d of %d",
           counts[0], counts[1], da.max_cq);
}

// QPs at max_qp_wr each take so many ring pages that the pool runs out
// before max_qp: create fails with ENOMEM, the destroyed QPs' pages come
// back (as many again).
static void t_verbs_ring_pool_enomem(void) {
  struct ibv_device_attr da;
  struct ibv_pd *pd = ibv_alloc_pd(ctx);
  struct ibv_cq *cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
  TR_ASSERT(pd && cq && ibv_query_device(ctx, &da) == 0);
  int err, n = create_qps(pd, cq, (uint32_t)da.max_qp_wr, da.max_qp, &err);
  TR_CHECK(n > 0 && n < da.max_qp && err == ENOMEM, "%d QPs of %d WRs, errno %d", n, da.max_qp_wr, err);
  TR_ASSERT(destroy_qps(n) == 0);
  int again = create_qps(pd, cq, (uint32_t)da.max_qp_wr, da.max_qp, &err);
  TR_CHECK(again == n && err == ENOMEM, "%d then %d QPs", n, again);
  TR_ASSERT(destroy_qps(again) == 0);
  TR_ASSERT(ibv_destroy_cq(cq) == 0 && ibv_dealloc_pd(pd) == 0);
}

// ---- UD: two UD QPs in this process, a -> b through an AH to our own address ----

static struct ibv_ah *ud_ah;
static uint32_t ud_len;                 // the QPs' UD MTU (ibv_query_qp's path_mtu)

// A UD pair with buffers of len bytes, both at RTS with Q_Key qkey_b for b
// (a: RDMAU_UD_QKEY), and the AH a sends through.
static int ud_open(struct pair *p, uint32_t len, uint32_t qkey_b) {
  struct ibv_qp_attr qa;
  struct ibv_qp_init_attr ia;
  memset(p, 0, sizeof *p);
  p->len = len;
  if (!(p->pd = ibv_alloc_pd(ctx))) return -1;
  if (side_open_type(p, &p->a, len, IBV_ACCESS_LOCAL_WRITE, 64, IBV_QPT_UD) < 0 ||
      side_open_type(p, &p->b, len, IBV_ACCESS_LOCAL_WRITE, 64, IBV_QPT_UD) < 0) return -1;
  if (rdmau_ud_ready(p->a.qp, RDMAU_UD_QKEY) || rdmau_ud_ready(p->b.qp, qkey_b)) return -1;
  if (ibv_query_qp(p->a.qp, &qa, IBV_QP_PATH_MTU, &ia)) return -1;
  ud_len = (uint32_t)ibv_mtu_to_num(qa.path_mtu);
  ud_ah = rdmau_ud_ah(p->pd, rdmau_local_ipv4(ctx));
  return ud_ah ? 0 : -1;
}

static void ud_close(struct pair *p) {
  if (ud_ah) ibv_destroy_ah(ud_ah);
  ud_ah = NULL;
  pair_close(p);
}

// A UD send of len bytes of a's buffer through ah to b's QPN with qkey: ibv_post_send's answer.
static int ud_send(struct pair *p, struct ibv_ah *ah, enum ibv_wr_opcode op, uint32_t len, uint32_t qkey,
                   uint32_t imm) {
  struct ibv_sge sge;
  struct ibv_send_wr wr, *bad;
  send_wr_init(&wr, &sge, &p->a, op, len, imm, 42);
  wr.wr.ud.ah = ah;
  wr.wr.ud.remote_qpn = p->b.qp->qp_num;
  wr.wr.ud.remote_qkey = qkey;
  return ibv_post_send(p->a.qp, &wr, &bad);
}

// One datagram of len bytes a -> b, received whole: the receive completion
// in *wc, b's buffer holding the GRH area and the payload.
static int ud_roundtrip(struct pair *p, enum ibv_wr_opcode op, uint32_t len, uint32_t qkey, struct ibv_wc *wc) {
  struct ibv_wc swc;
  fill(p->a.buf, len, 5 + len);
  memset(p->b.buf, 0xee, RDMAU_GRH + len + 1);
  if (post_recv1(&p->b, RDMAU_GRH + len, 77) || ud_send(p, ud_ah, op, len, qkey, 0xfeed0000 + len)) return -1;
  if (wait_ok(p->a.cq, &swc) || swc.opcode != IBV_WC_SEND || swc.wr_id != 42) return -1;
  return wait_ok(p->b.cq, wc);
}

// The receive of ud_roundtrip: length, flags, source QPN, payload bytes.
static int ud_received(struct pair *p, const struct ibv_wc *wc, uint32_t len, int imm) {
  int bad = wc->opcode != IBV_WC_RECV || wc->wr_id != 77 || wc->byte_len != RDMAU_GRH + len;
  bad |= !(wc->wc_flags & IBV_WC_GRH) || !(wc->wc_flags & IBV_WC_WITH_IMM) != !imm;
  bad |= imm && ntohl(wc->imm_data) != 0xfeed0000 + len;
  bad |= wc->src_qp != p->a.qp->qp_num || wc->qp_num != p->b.qp->qp_num;
  bad |= memcmp(p->b.buf + RDMAU_GRH, p->a.buf, len) != 0 || p->b.buf[RDMAU_GRH + len] != 0xee;
  return bad ? -1 : 0;
}

static void t_ud_send(void) {
  struct pair p;
  struct ibv_wc wc;
  TR_ASSERT(ud_open(&p, 8192, RDMAU_UD_QKEY) == 0);
  uint32_t sizes[] = { 0, 1, 100, ud_len - 1, ud_len };
  for (int i = 0; i < 5; i++) {
    TR_ASSERT(ud_roundtrip(&p, IBV_WR_SEND, sizes[i], RDMAU_UD_QKEY, &wc) == 0);
    TR_ASSERT(ud_received(&p, &wc, sizes[i], 0) == 0);
  }
  struct rdma_qp_stats st;
  TR_ASSERT(rdma_qp_stats((int)p.a.qp->handle, &st) == 0 && st.qp_type == RDMA_QPT_UD);
  TR_ASSERT(st.tx_frames == 5 && st.qp_num == p.a.qp->qp_num);
  ud_close(&p);
}

static void t_ud_send_imm(void) {
  struct pair p;
  struct ibv_wc wc;
  TR_ASSERT(ud_open(&p, 8192, RDMAU_UD_QKEY) == 0);
  TR_ASSERT(ud_roundtrip(&p, IBV_WR_SEND_WITH_IMM, 333, RDMAU_UD_QKEY, &wc) == 0);
  TR_ASSERT(ud_received(&p, &wc, 333, 1) == 0);
  ud_close(&p);
}

// The GRH area of a RoCEv2 datagram: 20 zero bytes, then the IPv4 header
// as received (version 4, IHL 5, protocol UDP, our address both ways).
static void t_ud_grh_area(void) {
  struct pair p;
  struct ibv_wc wc;
  static const uint8_t zero[20];
  TR_ASSERT(ud_open(&p, 8192, RDMAU_UD_QKEY) == 0);
  TR_ASSERT(ud_roundtrip(&p, IBV_WR_SEND, 64, RDMAU_UD_QKEY, &wc) == 0);
  const uint8_t *ip = p.b.buf + 20;
  uint32_t me = rdmau_local_ipv4(ctx);
  uint32_t src = (uint32_t)ip[12] << 24 | (uint32_t)ip[13] << 16 | (uint32_t)ip[14] << 8 | ip[15];
  uint32_t dst = (uint32_t)ip[16] << 24 | (uint32_t)ip[17] << 16 | (uint32_t)ip[18] << 8 | ip[19];
  TR_ASSERT(memcmp(p.b.buf, zero, 20) == 0 && ip[0] == 0x45 && ip[9] == 17);
  TR_ASSERT(src == me && dst == me);
  ud_close(&p);
}

// Waits (10 s at most) until QP q has dropped more than `than` frames: its count, or -1.
static long long wait_dropped(struct ibv_qp *q, uint64 than) {
  uint64 end = clock_ns() + 10000000000ULL;
  struct rdma_qp_stats st;
  while (rdma_qp_stats((int)q->handle, &st) == 0 && st.rx_dropped <= than) {
    if (clock_ns() > end) return -1;
    sleep(1);
  }
  return st.rx_dropped > than ? (long long)st.rx_dropped : -1;
}

// A datagram with another Q_Key is dropped and counted, and its receive
// WR stays posted for the next good one [UD-QKEY-1].
static void t_ud_qkey_mismatch(void) {
  struct pair p;
  struct ibv_wc wc;
  struct rdma_qp_stats st;
  TR_ASSERT(ud_open(&p, 8192, RDMAU_UD_QKEY) == 0);
  TR_ASSERT(rdma_qp_stats((int)p.b.qp->handle, &st) == 0);
  TR_ASSERT(post_recv1(&p.b, 8192, 77) == 0);
  TR_ASSERT(ud_send(&p, ud_ah, IBV_WR_SEND, 100, 0x22222222, 0) == 0);
  TR_ASSERT(wait_ok(p.a.cq, &wc) == 0);              // sent: UD completes as it leaves
  TR_ASSERT(wait_dropped(p.b.qp, st.rx_dropped) == (long long)st.rx_dropped + 1);
  TR_ASSERT(ibv_poll_cq(p.b.cq, 1, &wc) == 0);
  fill(p.a.buf, 50, 9);
  TR_ASSERT(ud_send(&p, ud_ah, IBV_WR_SEND, 50, RDMAU_UD_QKEY, 0) == 0);
  TR_ASSERT(wait_ok(p.a.cq, &wc) == 0 && wait_ok(p.b.cq, &wc) == 0);
  TR_ASSERT(wc.wr_id == 77 && wc.byte_len == RDMAU_GRH + 50);
  ud_close(&p);
}

// remote_qkey with its high bit set sends the QP's own Q_Key (IBTA
// 10.2.5): delivered to a receiver with a's Q_Key, and with b's Q_Key
// changed away from it, dropped.
static void t_ud_qkey_controlled(void) {
  struct pair p;
  struct ibv_wc wc;
  struct ibv_qp_attr qa;
  struct ibv_qp_init_attr ia;
  TR_ASSERT(ud_open(&p, 8192, RDMAU_UD_QKEY) == 0);
  TR_ASSERT(ud_roundtrip(&p, IBV_WR_SEND, 10, RDMA_QKEY_CONTROLLED, &wc) == 0);
  TR_ASSERT(ud_received(&p, &wc, 10, 0) == 0);
  memset(&qa, 0, sizeof qa);
  qa.qp_state = IBV_QPS_RTS;
  qa.qkey = 0x33333333;
  TR_ASSERT(ibv_modify_qp(p.b.qp, &qa, IBV_QP_STATE | IBV_QP_QKEY) == 0);
  TR_ASSERT(ibv_query_qp(p.b.qp, &qa, IBV_QP_QKEY, &ia) == 0 && qa.qkey == 0x33333333);
  TR_ASSERT(ia.qp_type == IBV_QPT_UD);
  struct rdma_qp_stats st;
  TR_ASSERT(rdma_qp_stats((int)p.b.qp->handle, &st) == 0);
  TR_ASSERT(post_recv1(&p.b, 8192, 78) == 0);
  TR_ASSERT(ud_send(&p, ud_ah, IBV_WR_SEND, 10, RDMA_QKEY_CONTROLLED, 0) == 0);
  TR_ASSERT(wait_ok(p.a.cq, &wc) == 0);
  TR_ASSERT(wait_dropped(p.b.qp, st.rx_dropped) == (long long)st.rx_dropped + 1);
  TR_ASSERT(ibv_poll_cq(p.b.cq, 1, &wc) == 0);
  ud_close(&p);
}

// A SEND longer than the MTU: LOC_LEN_ERR, and the QP goes to SQE [UD-MTU-1].
static void t_ud_oversize(void) {
  struct pair p;
  struct ibv_wc wc;
  struct ibv_qp_attr qa;
  struct ibv_qp_init_attr ia;
  TR_ASSERT(ud_open(&p, 8192, RDMAU_UD_QKEY) == 0);
  TR_ASSERT(ud_send(&p, ud_ah, IBV_WR_SEND, ud_len + 1, RDMAU_UD_QKEY, 0) == 0);
  TR_ASSERT(rdmau_wait(p.a.cq, &wc, 10000) == 1 && wc.status == IBV_WC_LOC_LEN_ERR);
  TR_ASSERT(ibv_query_qp(p.a.qp, &qa, IBV_QP_STATE, &ia) == 0 && qa.qp_state == IBV_QPS_SQE);
  ud_close(&p);
}

// A WR naming no AH, a handle past the table or a destroyed AH is refused
// with EINVAL, and nothing leaves the QP.
static void t_ud_bad_ah(void) {
  struct pair p;
  struct rdma_qp_stats s0, s1;
  int err = 0;
  TR_ASSERT(ud_open(&p, 8192, RDMAU_UD_QKEY) == 0);
  TR_ASSERT(rdma_qp_stats((int)p.a.qp->handle, &s0) == 0);
  TR_ASSERT(ud_send(&p, NULL, IBV_WR_SEND, 10, RDMAU_UD_QKEY, 0) == EINVAL);
  struct ibv_sge sge = { (uint64_t)p.a.buf, 10, p.a.mr->lkey };
  int bad_handles[] = { -1, RDMA_MAX_AH, 1 << 30, (int)ud_ah->handle + 1 };
  for (int i = 0; i < 4; i++) {
    struct rdma_send_wr k = { .wr_id = 1, .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
                              .sg_list = (unsigned long long)&sge, .num_sge = 1, .ud_ah = bad_handles[i],
                              .ud_remote_qpn = p.b.qp->qp_num, .ud_remote_qkey = RDMAU_UD_QKEY };
    TR_ASSERT(sys_rdma_post_send((int)p.a.qp->handle, &k, 1, &err) == 0 && err == EINVAL);
  }
  struct ibv_ah *gone = rdmau_ud_ah(p.pd, rdmau_local_ipv4(ctx));
  TR_ASSERT(gone && ibv_destroy_ah(gone) == 0);
  struct ibv_ah stale = { .context = ctx, .pd = p.pd, .handle = (uint32_t)-1 };
  TR_ASSERT(ud_send(&p, &stale, IBV_WR_SEND, 10, RDMAU_UD_QKEY, 0) == EINVAL);
  struct ibv_wc wc;
  TR_ASSERT(ibv_poll_cq(p.a.cq, 1, &wc) == 0);
  TR_ASSERT(rdma_qp_stats((int)p.a.qp->handle, &s1) == 0 && s1.tx_frames == s0.tx_frames);
  TR_ASSERT(rdma_destroy_ah(RDMA_MAX_AH) == -1 && rdma_destroy_ah(-1) == -1);
  ud_close(&p);
}

// Another process's AH: refused in its WRs, and it can't destroy it.
static void t_ud_foreign_ah(void) {
  struct pair p;
  TR_ASSERT(ud_open(&p, 8192, RDMAU_UD_QKEY) == 0);
  int h = (int)ud_ah->handle;
  int pid = fork();
  if (pid == 0) {
    struct pair c;
    int bad = ud_open(&c, 4096, RDMAU_UD_QKEY) != 0;
    struct ibv_sge sge = { (uint64_t)c.a.buf, 10, c.a.mr->lkey };
    struct rdma_send_wr k = { .wr_id = 1, .opcode = IBV_WR_SEND, .sg_list = (unsigned long long)&sge,
                              .num_sge = 1, .ud_ah = h, .ud_remote_qpn = c.b.qp->qp_num,
                              .ud_remote_qkey = RDMAU_UD_QKEY };
    int err = 0;
    if ((int)ud_ah->handle != h)   // the child's own AH took another slot: the parent's is foreign
      bad += sys_rdma_post_send((int)c.a.qp->handle, &k, 1, &err) != 0 || err != EINVAL;
    bad += rdma_destroy_ah(h) != -1;
    exit(bad);
  }
  int st = -1;
  wait(&st);
  TR_ASSERT(st == 0);
  struct ibv_wc wc;
  TR_ASSERT(ud_roundtrip(&p, IBV_WR_SEND, 20, RDMAU_UD_QKEY, &wc) == 0);   // ours still works
  ud_close(&p);
}

// An AH destroyed with sends posted through it: they still go (each WR
// took the destination when posted); a new WR naming it is refused.
static void t_ud_destroy_in_use(void) {
  struct pair p;
  struct ibv_wc wc;
  TR_ASSERT(ud_open(&p, 8192, RDMAU_UD_QKEY) == 0);
  struct ibv_ah *ah = rdmau_ud_ah(p.pd, rdmau_local_ipv4(ctx));
  TR_ASSERT(ah != NULL);
  fill(p.a.buf, 100, 3);
  for (int i = 0; i < 4; i++) TR_ASSERT(post_recv1(&p.b, 8192, 80 + i) == 0);
  for (int i = 0; i < 4; i++) TR_ASSERT(ud_send(&p, ah, IBV_WR_SEND, 100, RDMAU_UD_QKEY, 0) == 0);
  struct ibv_ah copy = *ah;
  TR_ASSERT(ibv_destroy_ah(ah) == 0);
  for (int i = 0; i < 4; i++) {
    TR_ASSERT(wait_ok(p.a.cq, &wc) == 0 && wait_ok(p.b.cq, &wc) == 0);
    TR_ASSERT(wc.byte_len == RDMAU_GRH + 100 && memcmp(p.b.buf + RDMAU_GRH, p.a.buf, 100) == 0);
  }
  TR_ASSERT(ud_send(&p, &copy, IBV_WR_SEND, 100, RDMAU_UD_QKEY, 0) == EINVAL);
  TR_ASSERT(ibv_dealloc_pd(p.pd) == EBUSY);          // the pair's AH still holds the PD
  ud_close(&p);
}

// An AH to an address nobody answers: NULL, errno EHOSTUNREACH. A PD with
// an AH can't go; the live AH count follows create and destroy; an RC QP
// takes no Q_Key and an RC send WR no UD fields' meaning.
static void t_ud_ah_errors(void) {
  struct rdma_dev_stats d0, d1, d2;
  struct ibv_pd *pd = ibv_alloc_pd(ctx);
  TR_ASSERT(pd != NULL && rdma_dev_stats(&d0) == 0);
  uint32_t nobody = (rdmau_local_ipv4(ctx) & ~0xffu) | 0xfd;
  errno = 0;
  TR_ASSERT(rdmau_ud_ah(pd, nobody) == NULL && errno == EHOSTUNREACH);
  struct ibv_ah *ah = rdmau_ud_ah(pd, rdmau_local_ipv4(ctx));
  TR_ASSERT(ah != NULL && rdma_dev_stats(&d1) == 0 && d1.live_ahs == d0.live_ahs + 1);
  TR_ASSERT(ibv_dealloc_pd(pd) == EBUSY);
  struct ibv_ah_attr aa;
  memset(&aa, 0, sizeof aa);
  aa.port_num = 1;                                   // not global: RoCE needs the GID
  errno = 0;
  TR_ASSERT(ibv_create_ah(pd, &aa) == NULL && errno == EINVAL);
  TR_ASSERT(ibv_destroy_ah(ah) == 0 && rdma_dev_stats(&d2) == 0 && d2.live_ahs == d0.live_ahs);
  TR_ASSERT(ibv_dealloc_pd(pd) == 0);
  struct pair p;
  TR_ASSERT(pair_open(&p, 64) == 0);
  struct ibv_qp_attr qa;
  memset(&qa, 0, sizeof qa);
  qa.qp_state = IBV_QPS_RTS;
  qa.qkey = 1;
  TR_ASSERT(ibv_modify_qp(p.a.qp, &qa, IBV_QP_STATE | IBV_QP_QKEY) == EINVAL);
  struct rdma_qp_stats st;
  TR_ASSERT(rdma_qp_stats((int)p.a.qp->handle, &st) == 0 && st.qp_type == RDMA_QPT_RC);
  pair_close(&p);
}

// A process that exits with AHs and UD QPs leaves nothing behind.
static void t_ud_exit_cleanup(void) {
  struct rdma_dev_stats d0, d1;
  TR_ASSERT(rdma_dev_stats(&d0) == 0);
  int pid = fork();
  if (pid == 0) {
    struct pair c;
    exit(ud_open(&c, 4096, RDMAU_UD_QKEY) != 0 || rdmau_ud_ah(c.pd, rdmau_local_ipv4(ctx)) == NULL);
  }
  int st = -1;
  wait(&st);
  TR_ASSERT(st == 0 && rdma_dev_stats(&d1) == 0);
  TR_ASSERT(d1.live_ahs == d0.live_ahs && d1.live_qps == d0.live_qps && d1.live_pds == d0.live_pds);
  TR_ASSERT(d1.pool_free_pages == d0.pool_free_pages);
}

// ---- QP1, the kernel's GSI QP (kernel/rdma/gsi.c) ----

// Waits (10 s at most) until the device counter at field offset off
// (struct rdma_dev_stats) exceeds than: its value, or -1.
static long long wait_dev_counter(uint64 off, uint64 than) {
  uint64 end = clock_ns() + 10000000000ULL;
  struct rdma_dev_stats d;
  for (;;) {
    if (rdma_dev_stats(&d) != 0) return -1;
    uint64 v = *(const uint64 *)((const char *)&d + off);
    if (v > than) return (long long)v;
    if (clock_ns() > end) return -1;
    sleep(1);
  }
}
#define DEV_AT(f) offsetof(struct rdma_dev_stats, f)

// a's Q_Key becomes qkey; then len bytes of a's buffer (a MAD of the CM's
// class with an attribute no CM message has) go to QPN 1 at our address.
static int gsi_send_mad(struct pair *p, uint32_t qkey, uint32_t len) {
  struct ibv_qp_attr qa;
  struct ibv_sge sge;
  struct ibv_send_wr wr, *bad;
  struct ibv_wc wc;
  memset(&qa, 0, sizeof qa);
  qa.qp_state = IBV_QPS_RTS;
  qa.qkey = qkey;
  if (ibv_modify_qp(p->a.qp, &qa, IBV_QP_STATE | IBV_QP_QKEY)) return -1;
  memset(p->a.buf, 0, len);
  uint8_t *m = p->a.buf;
  m[0] = 1; m[1] = 0x07; m[2] = 2; m[3] = 0x03;     // base version, CM class, class version 2, Send
  m[16] = 0x7f; m[17] = 0xee;                        // attribute 0x7fee: none of the CM's
  send_wr_init(&wr, &sge, &p->a, IBV_WR_SEND, len, 0, 42);
  wr.wr.ud.ah = ud_ah;
  wr.wr.ud.remote_qpn = RDMA_GSI_QPN;
  wr.wr.ud.remote_qkey = RDMA_QKEY_CONTROLLED;       // a's own: the controlled Q_Key of QP1
  if (ibv_post_send(p->a.qp, &wr, &bad)) return -1;
  return wait_ok(p->a.cq, &wc);
}

// A 256-byte MAD with QP1's Q_Key reaches the GSI and its CM: gsi_rx_mads
// and cm_rx count it, nothing is dropped; the unknown attribute is the
// CM's to drop (cm_dropped).
static void t_gsi_mad_counted(void) {
  struct pair p;
  struct rdma_dev_stats d0, d1;
  TR_ASSERT(ud_open(&p, 4096, RDMAU_UD_QKEY) == 0 && rdma_dev_stats(&d0) == 0);
  TR_ASSERT(gsi_send_mad(&p, RDMA_GSI_QKEY, RDMA_MAD_LEN) == 0);
  TR_ASSERT(wait_dev_counter(DEV_AT(gsi_rx_mads), d0.gsi_rx_mads) == (long long)d0.gsi_rx_mads + 1);
  TR_ASSERT(wait_dev_counter(DEV_AT(cm_rx), d0.cm_rx) == (long long)d0.cm_rx + 1);
  TR_ASSERT(rdma_dev_stats(&d1) == 0);
  TR_CHECK(d1.gsi_rx_dropped == d0.gsi_rx_dropped && d1.gsi_rx_bad_qkey == d0.gsi_rx_bad_qkey,
           "dropped %lu -> %lu, bad qkey %lu -> %lu", d0.gsi_rx_dropped, d1.gsi_rx_dropped,
           d0.gsi_rx_bad_qkey, d1.gsi_rx_bad_qkey);
  ud_close(&p);
}

// Another Q_Key than QP1's: the UD core drops the datagram before the GSI
// sees it and counts it (gsi_rx_bad_qkey) [UD-QKEY-1].
static void t_gsi_wrong_qkey_dropped(void) {
  struct pair p;
  struct rdma_dev_stats d0, d1;
  TR_ASSERT(ud_open(&p, 4096, RDMAU_UD_QKEY) == 0 && rdma_dev_stats(&d0) == 0);
  TR_ASSERT(gsi_send_mad(&p, RDMAU_UD_QKEY, RDMA_MAD_LEN) == 0);
  TR_ASSERT(wait_dev_counter(DEV_AT(gsi_rx_bad_qkey), d0.gsi_rx_bad_qkey) == (long long)d0.gsi_rx_bad_qkey + 1);
  TR_ASSERT(rdma_dev_stats(&d1) == 0 && d1.gsi_rx_mads == d0.gsi_rx_mads && d1.cm_rx == d0.cm_rx);
  ud_close(&p);
}

// A datagram of another size than a MAD's: dropped and counted by the GSI
// (gsi_rx_dropped), never handed to the CM; QP1 keeps its receives.
static void t_gsi_wrong_length_dropped(void) {
  struct pair p;
  struct rdma_dev_stats d0, d1;
  TR_ASSERT(ud_open(&p, 4096, RDMAU_UD_QKEY) == 0 && rdma_dev_stats(&d0) == 0);
  TR_ASSERT(gsi_send_mad(&p, RDMA_GSI_QKEY, 100) == 0);
  TR_ASSERT(wait_dev_counter(DEV_AT(gsi_rx_dropped), d0.gsi_rx_dropped) == (long long)d0.gsi_rx_dropped + 1);
  TR_ASSERT(rdma_dev_stats(&d1) == 0 && d1.gsi_rx_mads == d0.gsi_rx_mads && d1.cm_rx == d0.cm_rx);
  TR_ASSERT(gsi_send_mad(&p, RDMA_GSI_QKEY, RDMA_MAD_LEN) == 0);     // the next good one still lands
  TR_ASSERT(wait_dev_counter(DEV_AT(gsi_rx_mads), d0.gsi_rx_mads) == (long long)d0.gsi_rx_mads + 1);
  ud_close(&p);
}

// QP1 is the kernel's: no process lists it or may use QPN 1's slot; it
// stays when every process's QPs are gone (listed QPs never show QPN 1).
static void t_gsi_not_listed(void) {
  struct rdma_qp_stats st;
  int r;
  for (int i = 0; (r = rdma_qp_stats(i, &st)) >= 0; i++)
    TR_CHECK(r != 0 || st.qp_num != RDMA_GSI_QPN, "slot %d lists QPN 1", i);
}

// ---- atomics: a's 8-byte results, b's 8-byte target, both aligned ----

#define ATOMIC_ALL (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
                    IBV_ACCESS_REMOTE_ATOMIC)

// A pair whose QPs allow atomics; b's MR has access_b.
static int atomic_pair_open(struct pair *p, int access_b) {
  struct pair_opts o = { access_b, 7, 256, 14, ATOMIC_ALL };
  return pair_open_opts(p, 4096, &o);
}

static uint64_t *aligned8(uint8_t *b) {
  return (uint64_t *)(((uint64_t)b + 7) & ~7ULL);
}

// An atomic from a's aligned result slot `slot` to raddr of b.
static int post_atomic1(struct pair *p, enum ibv_wr_opcode op, int slot, uint64_t raddr, uint32_t rkey,
                        uint64_t compare_add, uint64_t swap, uint64_t wr_id) {
  struct ibv_sge sge = { (uint64_t)(aligned8(p->a.buf) + slot), 8, p->a.mr->lkey };
  struct ibv_send_wr wr, *bad;
  memset(&wr, 0, sizeof wr);
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = op;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.atomic.remote_addr = raddr;
  wr.wr.atomic.rkey = rkey;
  wr.wr.atomic.compare_add = compare_add;
  wr.wr.atomic.swap = swap;
  return ibv_post_send(p->a.qp, &wr, &bad);
}

// One successful atomic's completion: wr_id, opcode, 8 bytes.
static int wait_atomic(struct pair *p, uint64_t wr_id, enum ibv_wc_opcode op) {
  struct ibv_wc wc;
  TR_ASSERT(wait_ok(p->a.cq, &wc) == 0);
  TR_CHECK(wc.wr_id == wr_id && wc.opcode == op && wc.byte_len == 8, "wr_id %llu opcode %d byte_len %u",
           (unsigned long long)wc.wr_id, wc.opcode, wc.byte_len);
  return 0;
}

// CAS that succeeds, CAS that fails, FAA (wrapping), each returning exactly
// the value the target held; ibv_query_device says IBV_ATOMIC_HCA.
static void t_atomic_cas_faa(void) {
  struct pair p;
  struct ibv_device_attr da;
  TR_ASSERT(ibv_query_device(ctx, &da) == 0 && da.atomic_cap == IBV_ATOMIC_HCA);
  TR_ASSERT(atomic_pair_open(&p, ATOMIC_ALL) == 0);
  uint64_t *t = aligned8(p.b.buf), *r = aligned8(p.a.buf);
  *t = 0x1122334455667788ULL;
  r[0] = r[1] = r[2] = r[3] = 0xeeeeeeeeeeeeeeeeULL;
  TR_ASSERT(post_atomic1(&p, IBV_WR_ATOMIC_CMP_AND_SWP, 0, (uint64_t)t, p.b.mr->rkey, 0x1122334455667788ULL, 5, 1) == 0);
  TR_ASSERT(wait_atomic(&p, 1, IBV_WC_COMP_SWAP) == 0);
  TR_CHECK(r[0] == 0x1122334455667788ULL && *t == 5, "cas: got %llx, target %llx",
           (unsigned long long)r[0], (unsigned long long)*t);
  TR_ASSERT(post_atomic1(&p, IBV_WR_ATOMIC_CMP_AND_SWP, 1, (uint64_t)t, p.b.mr->rkey, 4, 9, 2) == 0);
  TR_ASSERT(wait_atomic(&p, 2, IBV_WC_COMP_SWAP) == 0);
  TR_CHECK(r[1] == 5 && *t == 5, "failed cas: got %llx, target %llx", (unsigned long long)r[1], (unsigned long long)*t);
  TR_ASSERT(post_atomic1(&p, IBV_WR_ATOMIC_FETCH_AND_ADD, 2, (uint64_t)t, p.b.mr->rkey, ~0ULL, 0, 3) == 0);
  TR_ASSERT(wait_atomic(&p, 3, IBV_WC_FETCH_ADD) == 0);
  TR_CHECK(r[2] == 5 && *t == 4, "faa: got %llx, target %llx", (unsigned long long)r[2], (unsigned long long)*t);
  TR_CHECK(r[3] == 0xeeeeeeeeeeeeeeeeULL, "a byte past the result changed");
  pair_close(&p);
}

// 200 FAAs posted back to back (more than max_rd_atomic outstanding): every
// one runs once and sees a distinct value; the target ends at exactly 200.
static void t_atomic_faa_many(void) {
  struct pair p;
  struct ibv_wc wc;
  enum { N = 200, SLOTS = 32 };
  static uint8_t seen[N];
  TR_ASSERT(atomic_pair_open(&p, ATOMIC_ALL) == 0);
  uint64_t *t = aligned8(p.b.buf), *r = aligned8(p.a.buf);
  *t = 0;
  memset(seen, 0, sizeof seen);
  for (int i = 0; i < N; i++) {
    TR_ASSERT(post_atomic1(&p, IBV_WR_ATOMIC_FETCH_AND_ADD, i % SLOTS, (uint64_t)t, p.b.mr->rkey, 1, 0, (uint64_t)i) == 0);
    if (i % SLOTS != SLOTS - 1 && i != N - 1) continue;
    for (int k = i - i % SLOTS; k <= i; k++) {           // this batch's completions, in order
      TR_ASSERT(wait_ok(p.a.cq, &wc) == 0 && wc.wr_id == (uint64_t)k && wc.opcode == IBV_WC_FETCH_ADD);
      uint64_t v = r[k % SLOTS];
      TR_CHECK(v < N && !seen[v], "faa %d returned %llu twice or out of range", k, (unsigned long long)v);
      seen[v] = 1;
    }
  }
  TR_CHECK(*t == N, "target %llu after %d FAAs", (unsigned long long)*t, N);
  pair_close(&p);
}

// Two connections of one PD, both FETCH_AND_ADD on one counter, batches
// posted on both before either is waited for: the two responder QPs run
// them against each other, and each atomic is atomic with respect to the
// other QP's [RESP-ATOM-4]: 2 x 200 distinct values, the counter at 400.
static void t_atomic_two_qps(void) {
  enum { N = 200, BATCH = 50 };
  struct pair p, q;
  static uint8_t seen[2 * N];
  TR_ASSERT(atomic_pair_open(&p, ATOMIC_ALL) == 0);
  memset(&q, 0, sizeof q);
  q.pd = p.pd;                                        // the same PD: p.b's MR serves q.b too
  TR_ASSERT(side_open(&q, &q.a, 4096, ATOMIC_ALL, 256) == 0 && side_open(&q, &q.b, 64, ATOMIC_ALL, 256) == 0);
  TR_ASSERT(connect_both(q.a.qp, rdmau_psn(), q.b.qp, rdmau_psn(), ATOMIC_ALL, 7, 14) == 0);
  uint64_t *t = aligned8(p.b.buf), *rp = aligned8(p.a.buf), *rq = aligned8(q.a.buf);
  *t = 0;
  memset(seen, 0, sizeof seen);
  for (int k = 0; k < N; k += BATCH) {
    struct pair *first = (k / BATCH) % 2 ? &q : &p, *second = first == &p ? &q : &p;
    for (int i = k; i < k + BATCH; i++) {             // both QPs' batches in flight together
      TR_ASSERT(post_atomic1(first, IBV_WR_ATOMIC_FETCH_AND_ADD, i, (uint64_t)t, p.b.mr->rkey, 1, 0, (uint64_t)i) == 0);
      TR_ASSERT(post_atomic1(second, IBV_WR_ATOMIC_FETCH_AND_ADD, i, (uint64_t)t, p.b.mr->rkey, 1, 0, (uint64_t)i) == 0);
    }
    for (int s = 0; s < 2; s++) {
      struct ibv_wc wc;
      struct pair *x = s ? &q : &p;
      for (int i = k; i < k + BATCH; i++)
        TR_ASSERT(wait_ok(x->a.cq, &wc) == 0 && wc.wr_id == (uint64_t)i && wc.opcode == IBV_WC_FETCH_ADD);
    }
  }
  for (int i = 0; i < 2 * N; i++) {
    uint64_t v = i < N ? rp[i] : rq[i - N];
    TR_CHECK(v < 2 * N && !seen[v], "FAA %d returned %llu twice or out of range", i, (unsigned long long)v);
    seen[v] = 1;
  }
  TR_CHECK(*t == 2 * N, "counter %llu after %d FAAs on two QPs", (unsigned long long)*t, 2 * N);
  q.pd = NULL;                                        // p's to free
  pair_close(&q);
  pair_close(&p);
}

// An atomic b refuses: a's completion has `want`, the target is unchanged.
static int atomic_refused(int access_b, uint64_t off, uint32_t rkey_xor, enum ibv_wc_status want) {
  struct pair p;
  struct ibv_wc wc;
  TR_ASSERT(atomic_pair_open(&p, access_b) == 0);
  uint64_t *t = aligned8(p.b.buf), *r = aligned8(p.a.buf);
  *t = 77;
  *r = 0xeeeeeeeeeeeeeeeeULL;
  TR_ASSERT(post_atomic1(&p, IBV_WR_ATOMIC_FETCH_AND_ADD, 0, (uint64_t)t + off, p.b.mr->rkey ^ rkey_xor, 1, 0, 9) == 0);
  TR_ASSERT(rdmau_wait(p.a.cq, &wc, 10000) == 1);
  TR_CHECK(wc.wr_id == 9 && wc.status == want, "got %s, want %s", ibv_wc_status_str(wc.status), ibv_wc_status_str(want));
  TR_CHECK(*t == 77 && *r == 0xeeeeeeeeeeeeeeeeULL, "target %llu result %llx", (unsigned long long)*t,
           (unsigned long long)*r);
  pair_close(&p);
  return 0;
}

static void t_atomic_misaligned(void) {
  TR_ASSERT(atomic_refused(ATOMIC_ALL, 4, 0, IBV_WC_REM_INV_REQ_ERR) == 0);
}

static void t_atomic_out_of_range(void) {
  TR_ASSERT(atomic_refused(ATOMIC_ALL, 8 * 1024, 0, IBV_WC_REM_ACCESS_ERR) == 0);
  TR_ASSERT(atomic_refused(ATOMIC_ALL, 0, 0x100, IBV_WC_REM_ACCESS_ERR) == 0);   // bad rkey
}

static void t_atomic_no_permission(void) {
  TR_ASSERT(atomic_refused(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, 0, 0,
                           IBV_WC_REM_ACCESS_ERR) == 0);
}

// ibv_post_send refuses an atomic without exactly one 8-byte SGE and
// queues nothing: the next atomic's completion is the first.
static void t_atomic_bad_sgl(void) {
  struct pair p;
  TR_ASSERT(atomic_pair_open(&p, ATOMIC_ALL) == 0);
  uint64_t t = (uint64_t)aligned8(p.b.buf);
  struct ibv_sge sge[2] = { { (uint64_t)p.a.buf, 4, p.a.mr->lkey }, { (uint64_t)p.a.buf + 4, 4, p.a.mr->lkey } };
  struct ibv_send_wr wr, *bad;
  memset(&wr, 0, sizeof wr);
  wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
  wr.sg_list = sge;
  wr.num_sge = 2;
  wr.wr.atomic.remote_addr = t;
  wr.wr.atomic.rkey = p.b.mr->rkey;
  TR_ASSERT(ibv_post_send(p.a.qp, &wr, &bad) == EINVAL && bad == &wr);
  wr.num_sge = 1;
  TR_ASSERT(ibv_post_send(p.a.qp, &wr, &bad) == EINVAL);
  wr.num_sge = 0;
  TR_ASSERT(ibv_post_send(p.a.qp, &wr, &bad) == EINVAL);
  TR_ASSERT(post_atomic1(&p, IBV_WR_ATOMIC_FETCH_AND_ADD, 0, t, p.b.mr->rkey, 1, 0, 5) == 0);
  TR_ASSERT(wait_atomic(&p, 5, IBV_WC_FETCH_ADD) == 0);
  pair_close(&p);
}

// ---- the case table ----

static const struct tr_case cases[] = {
  { "device", t_device, TR_QUICK, 0 },
  { "mr", t_mr, TR_QUICK, 0 },
  { "qp_states", t_qp_states, TR_QUICK, 0 },
  OP_ENTRIES(send),
  OP_ENTRIES(send_imm),
  OP_ENTRIES(write),
  OP_ENTRIES(write_imm),
  OP_ENTRIES(read),
  { "atomic_cas_faa", t_atomic_cas_faa, TR_QUICK, 0 },
  { "atomic_faa_many", t_atomic_faa_many, TR_QUICK, 0 },
  { "atomic_two_qps", t_atomic_two_qps, TR_QUICK, 0 },
  { "atomic_misaligned", t_atomic_misaligned, TR_QUICK, 0 },
  { "atomic_out_of_range", t_atomic_out_of_range, TR_QUICK, 0 },
  { "atomic_no_permission", t_atomic_no_permission, TR_QUICK, 0 },
  { "atomic_bad_sgl", t_atomic_bad_sgl, TR_QUICK, 0 },
  { "mtus", t_mtus, TR_QUICK, 0 },
  { "roce_v1", t_roce_v1, TR_QUICK, 0 },
  { "sgl", t_sgl, TR_QUICK, 0 },
  { "wait_write", t_wait_write, TR_QUICK, 0 },
  { "wait_cq", t_wait_cq, TR_QUICK, 0 },
  { "unsignaled", t_unsignaled, TR_QUICK, 0 },
  { "inline", t_inline, TR_QUICK, 0 },
  { "bad_rkey", t_bad_rkey, TR_QUICK, 0 },
  { "out_of_bounds", t_out_of_bounds, TR_QUICK, 0 },
  { "no_access", t_no_access, TR_QUICK, 0 },
  { "bad_lkey", t_bad_lkey, TR_QUICK, 0 },
  { "rnr", t_rnr, TR_QUICK, 0 },
  { "retry_exceeded", t_retry_exceeded, TR_QUICK, 0 },
  { "flush_recv", t_flush_recv, TR_QUICK, 0 },
  { "busy", t_busy, TR_QUICK, 0 },
  { "cq_overrun", t_cq_overrun, TR_QUICK, 0 },
  { "cq_poll_no_syscall", t_cq_poll_no_syscall, TR_QUICK, 0 },
  { "cq_ring_garbage", t_cq_ring_garbage, TR_QUICK, 0 },
  { "cq_ring_fork", t_cq_ring_fork, TR_QUICK, 0 },
  { "sq_post_one_syscall", t_sq_post_one_syscall, TR_QUICK, 0 },
  { "rq_post_one_syscall", t_rq_post_one_syscall, TR_QUICK, 0 },
  { "sq_ring_garbage", t_sq_ring_garbage, TR_QUICK, 0 },
  { "sq_ring_fork", t_sq_ring_fork, TR_QUICK, 0 },
  { "sq_post_elided", t_sq_post_elided, TR_QUICK, 0 },
  { "sq_elided_flush", t_sq_elided_flush, TR_QUICK, 0 },
  { "sq_elided_garbage", t_sq_elided_garbage, TR_QUICK, 0 },
  { "channel", t_channel, TR_QUICK, 0 },
  { "channel_poll", t_channel_poll, TR_QUICK, 0 },
  { "kill_blocked", t_kill_blocked, TR_QUICK, 0 },
  { "foreign_handles", t_foreign, TR_QUICK, 0 },
  { "bad_pointers", t_bad_pointers, TR_QUICK, 0 },
  { "exit_in_flight", t_exit_in_flight, TR_QUICK, 0 },
  { "mr_max_unaligned", t_mr_max, TR_QUICK, 0 },
  { "async_isolation", t_async_isolation, TR_QUICK, 0 },
  { "async_overflow", t_async_overflow, TR_QUICK, 0 },
  { "async_event_high_qp_handle", t_async_event_high_qp_handle, TR_QUICK, 0 },
  { "live_counts", t_live_counts, TR_QUICK, 0 },
  { "statuses", t_statuses, TR_QUICK, 0 },
  { "verbs_abi_values", t_verbs_abi_values, TR_QUICK, 0 },
  { "verbs_wc_flags_solicited", t_verbs_wc_flags_solicited, TR_QUICK, 0 },
  { "verbs_query_qp_inline", t_verbs_query_qp_inline, TR_QUICK, 0 },
  { "verbs_names", t_verbs_names, TR_QUICK, 0 },
  { "verbs_query_gid_table", t_verbs_query_gid_table, TR_QUICK, 0 },
  { "verbs_query_port_attrs", t_verbs_query_port_attrs, TR_QUICK, 0 },
  { "verbs_max_qp_wr", t_verbs_max_qp_wr, TR_QUICK, 0 },
  { "verbs_qp_limit_enomem", t_verbs_qp_limit_enomem, TR_QUICK, 0 },
  { "verbs_cq_limit_enomem", t_verbs_cq_limit_enomem, TR_QUICK, 0 },
  { "verbs_ring_pool_enomem", t_verbs_ring_pool_enomem, TR_QUICK, 0 },
  { "ud_send", t_ud_send, TR_QUICK, 0 },
  { "ud_send_imm", t_ud_send_imm, TR_QUICK, 0 },
  { "ud_grh_area", t_ud_grh_area, TR_QUICK, 0 },
  { "ud_qkey_mismatch", t_ud_qkey_mismatch, TR_QUICK, 0 },
  { "ud_qkey_controlled", t_ud_qkey_controlled, TR_QUICK, 0 },
  { "ud_oversize", t_ud_oversize, TR_QUICK, 0 },
  { "ud_bad_ah", t_ud_bad_ah, TR_QUICK, 0 },
  { "ud_foreign_ah", t_ud_foreign_ah, TR_QUICK, 0 },
  { "ud_destroy_in_use", t_ud_destroy_in_use, TR_QUICK, 0 },
  { "ud_ah_errors", t_ud_ah_errors, TR_QUICK, 0 },
  { "ud_exit_cleanup", t_ud_exit_cleanup, TR_QUICK, 0 },
  { "gsi_mad_counted", t_gsi_mad_counted, TR_QUICK, 0 },
  { "gsi_wrong_qkey_dropped", t_gsi_wrong_qkey_dropped, TR_QUICK, 0 },
  { "gsi_wrong_length_dropped", t_gsi_wrong_length_dropped, TR_QUICK, 0 },
  { "gsi_not_listed", t_gsi_not_listed, TR_QUICK, 0 },
  { NULL },
};
static const struct tr_case *const tables[] = { cases };

// Opens the device every case uses and reads the port's path MTU.
static int open_device(void) {
  ctx = rdmau_open_port("rdmatest", &mtu);
  mtu_bytes = ibv_mtu_to_num(mtu);
  return ctx ? 0 : -1;
}

// No free-page check: exit_in_flight and mr_max_unaligned check their own.
static const struct tr_suite suite = {
  .prog = "rdmatest", .tables = tables, .ntables = 1,
  .timeout_s = 120, .setup = open_device,
};

int main(int argc, char **argv) {
  return tr_main(&suite, argc, argv);
}
