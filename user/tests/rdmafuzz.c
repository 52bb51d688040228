// rdmafuzz: a syscall fuzzer of the RDMA verbs in the guest.
//
// Owns a deterministic random walk over the raw SYS_rdma_* calls
// (user/lib/ibverbs/rdma_sys.h) and the kernel rdma_cm's SYS_ucma_* calls
// (user/lib/rdmacm/ucma_sys.h: channels, ids bound, listening, resolving
// and connecting to this guest's own listeners with random parameters):
// handles it created mixed with destroyed, foreign and
// out-of-range ones, pointers into its own arena mixed with bad ones
// (null, unmapped, kernel, past MAXVA, wrapping), random and boundary
// sizes, attributes and masks, shared receive queues (QPs created on
// them, their limits, receives posted to them), QPs walked to RTS and connected to each
// other in loopback so that WRs move data, CQ, send and receive rings
// mapped into the arena and scribbled on, doorbells, and forks: a child inherits the
// parent's handles (foreign to it), makes objects of its own, then exits,
// blocks in a waiting call and is killed, or is killed while it runs.
//
// Every choice is drawn from one xorshift64* generator seeded by -s, so a
// fresh guest replays the same calls for the same seed; -v prints each
// call before it is made (the last line before a panic names it).
// A worker process does the walk; the top process compares the free pages
// before the worker starts and after it (and all its children) exited.
// Usage: rdmafuzz [-s SEED] [-t SECONDS | -n CALLS] [-v]
// -n counts operations drawn from the table (each one system call, a few
// for "connect" and "query"), so that it does not depend on results.
// Prints "rdmafuzz: seed S calls N forks F kills K digest D ... free pages
// X -> Y cm ids A -> B: ok|LEAK" (D: the generator's final state, equal
// for replays; A, B: the kernel CM's live ids before and after).
#include "user.h"
#include "ibverbs.h"
#include "rdma_sys.h"
#include "ucma_sys.h"
#include "rdma_util.h"
#include "rdma_hostile.h"

#define PG HOSTILE_PG
#define ARENA (16 * PG)                   // registered and posted memory
#define POOL 48                           // live handles kept per kind
#define DEAD 8                            // destroyed handles remembered per kind
#define MAX_WRS 6                         // WRs per post (more than the queue of a small QP)
#define PROGRESS_NS 5000000000UL          // a progress line every 5 s
#define CHILD_CALLS 120                   // at most this many calls in a forked child

static unsigned char arena[ARENA] __attribute__((aligned(4096)));
static struct rdma_device_info dev;
static struct rdma_port_info port;
static int verbose;
static unsigned long calls;               // system calls made by this process
static unsigned long steps;               // operations drawn from the table (-n counts these)

// ---- the generator: xorshift64* ----
static unsigned long rng;
static unsigned long next(void) {
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return rng * 0x2545f4914f6cdd1dUL;
}
static unsigned below(unsigned n) { return n ? (unsigned)(next() >> 33) % n : 0; }
static int chance(unsigned pct) { return below(100) < pct; }

// ---- handles ----
enum { K_PD, K_MR, K_CHAN, K_CQ, K_QP, K_AH, K_CMCH, K_CMID, K_SRQ, NKIND };
#define CM_PORT_BASE 7100                 // the walk's rdma_cm ports: CM_PORT_BASE .. + CM_PORTS - 1
#define CM_PORTS 4
struct pool { int live[POOL], n, dead[DEAD], nd; };
static struct pool pools[NKIND];
static struct rdma_mr_keys mr_keys[1024];   // by MR handle (max_mr is checked against it)
static unsigned qp_nums[1024];              // by QP handle

static void keep(int kind, int h) {
  struct pool *p = &pools[kind];
  if (h >= 0 && p->n < POOL) p->live[p->n++] = h;
}

static void forget(int kind, int h) {
  struct pool *p = &pools[kind];
  for (int i = 0; i < p->n; i++) {
    if (p->live[i] != h) continue;
    p->live[i] = p->live[--p->n];
    p->dead[p->nd++ % DEAD] = h;
    return;
  }
}

static int limit_of(int kind) {
  int l[NKIND] = { dev.max_pd, dev.max_mr, dev.max_cq, dev.max_cq, dev.max_qp, RDMA_MAX_AH, OPEN_MAX,
                   dev.max_qp, dev.max_srq };
  return l[kind];
}

// One of the pool's live handles into *out (0 if the pool is empty). The
// index is drawn either way: the draws never depend on what the kernel
// answered, so a seed replays the same choices even where results differ.
static int any(const struct pool *p, int *out) {
  unsigned idx = (unsigned)(next() >> 33);
  if (p->n == 0) return 0;
  *out = p->live[idx % (unsigned)p->n];
  return 1;
}

// A live handle mostly; else a destroyed one, a boundary value or noise.
static int pick(int kind) {
  struct pool *p = &pools[kind];
  unsigned r = below(20), dead = (unsigned)(next() >> 33), edge = (unsigned)(next() >> 33);
  int noise = (int)next(), h;
  int edges[] = { -1, 0, 1, limit_of(kind) - 1, limit_of(kind), limit_of(kind) + 1,
                  1 << 30, (int)0x80000000, 0x7fffffff };
  if (r < 14 && any(p, &h)) return h;
  if (r < 16 && p->nd) return p->dead[dead % (p->nd < DEAD ? (unsigned)p->nd : DEAD)];
  if (r < 19) return edges[edge % (sizeof edges / sizeof edges[0])];
  return noise;
}

// ---- pointers and sizes ----
static unsigned long bad_addrs[HOSTILE_NBAD];

// One of rdma_hostile.h's bad addresses, an address somewhere in the
// kernel's RAM, or noise.
static unsigned long bad_ptr(void) {
  unsigned r = below(10), i = below(HOSTILE_NBAD), ram = below(1 << 27);
  unsigned long noise = next();
  return r < 8 ? bad_addrs[i] : r < 9 ? 0x80000000UL + ram : noise;
}

// A pointer for size bytes: mostly inside the arena (sometimes unaligned),
// else a bad one.
static void *ptr(unsigned long size) {
  int good = chance(88);
  unsigned off = size <= ARENA ? below((unsigned)(ARENA - size + 1)) : 0;
  unsigned long bad = bad_ptr();
  return good && size <= ARENA ? (void *)(arena + off) : (void *)bad;
}

// A length: boundaries of the arena and of max_mr_size, or random.
static unsigned long length(void) {
  unsigned long l[] = { 0, 1, 7, PG - 1, PG, PG + 1, ARENA, ARENA + 1, dev.max_mr_size,
                        dev.max_mr_size + 1, ~0UL, below(ARENA) + 1, next() };
  return l[below(sizeof l / sizeof l[0])];
}

// A count argument: small mostly, else a boundary.
static int count(int limit) {
  int c[] = { -1, 0, 1, 2, limit - 1, limit, limit + 1, 0x7fffffff, (int)0x80000000 };
  return chance(70) ? (int)below(4) + 1 : c[below(sizeof c / sizeof c[0])];
}

// ---- QP walks ----
static const unsigned walk_masks[] = { IBV_QP_STATE, RDMAU_MASK_INIT, RDMAU_MASK_RTR, RDMAU_MASK_RTS,
                                       IBV_QP_STATE };
// A UD QP's walk (proto-spec/ud.md [UD-STATE-1]): RESET, INIT with the Q_Key, RTR, RTS.
static const unsigned ud_walk_masks[] = { IBV_QP_STATE, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY,
                                          IBV_QP_STATE, IBV_QP_STATE | IBV_QP_SQ_PSN };

// Plausible attributes with random fields, some out of range.
static void rand_attr(struct rdma_qp_attr *a, unsigned state, unsigned dest) {
  memset(a, 0, sizeof *a);
  a->qp_state = state;
  a->qp_access_flags = chance(90) ? below(16) : (unsigned)next();
  a->path_mtu = chance(90) ? 1 + below(5) : below(8);
  a->dest_qp_num = chance(90) ? dest : (unsigned)next();
  a->rq_psn = a->sq_psn = chance(90) ? 0 : (unsigned)next();
  a->timeout = chance(90) ? 4 + below(10) : below(40);
  a->retry_cnt = below(9);
  a->rnr_retry = below(9);
  a->min_rnr_timer = below(33);
  a->max_rd_atomic = a->max_dest_rd_atomic = below((unsigned)dev.max_qp_rd_atom + 2);
  a->dipv4 = chance(95) ? port.ipv4 : (unsigned)next();
  memcpy(a->dmac, port.mac, 6);
  if (chance(3)) memset(a->dmac, 0, 6);
  a->hop_limit = 64;
  a->pkey_index = chance(90) ? 0 : below(4);
  a->port_num = chance(90) ? 1 : below(4);
  a->sr_enable = below(2);
  a->adaptive_rto = below(2);
  a->max_inflight = below(300);
  a->min_rto_ns = next() % 100000000UL;
  a->qkey = chance(80) ? RDMAU_UD_QKEY : (unsigned)next();
}

// Walks qp from RESET to RTS towards dest with valid attributes (an RC
// QP's masks, or with ud a UD QP's).
static void walk_to_rts(int qp, unsigned dest, int ud) {
  static const unsigned states[] = { IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS };
  for (int i = 0; i < 4; i++) {
    struct rdma_qp_attr a;
    memset(&a, 0, sizeof a);
    a.qp_state = states[i];
    a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                        IBV_ACCESS_REMOTE_ATOMIC;
    a.path_mtu = IBV_MTU_1024;
    a.dest_qp_num = dest;
    a.timeout = 10;
    a.retry_cnt = a.rnr_retry = 3;
    a.min_rnr_timer = 1;
    a.max_rd_atomic = a.max_dest_rd_atomic = 4;
    a.port_num = 1;
    a.dipv4 = port.ipv4;
    memcpy(a.dmac, port.mac, 6);
    a.hop_limit = 64;
    a.qkey = RDMAU_UD_QKEY;
    calls++;
    rdma_modify_qp(qp, &a, ud ? ud_walk_masks[i] : walk_masks[i]);   // after a refusal the next steps fail too
  }
}

// ---- the operations ----
static void op_alloc_pd(void) { calls++; keep(K_PD, rdma_alloc_pd()); }
static void op_dealloc_pd(void) { int h = pick(K_PD); calls++; if (rdma_dealloc_pd(h) == 0) forget(K_PD, h); }

static void op_reg_mr(void) {
  int pd = pick(K_PD);
  unsigned long len = length();
  void *addr = chance(80) ? (void *)(arena + below(ARENA)) : (void *)bad_ptr();
  if (chance(50) && len <= ARENA) addr = arena + below((unsigned)(ARENA - len + 1));
  int access = chance(85) ? (int)below(16) : (int)next();
  struct rdma_mr_keys *out = ptr(sizeof *out);
  calls++;
  int h = rdma_reg_mr(pd, addr, len, access, out);
  if (h >= 0 && h < 1024 && (unsigned char *)out >= arena && (unsigned char *)out < arena + ARENA) {
    memcpy(&mr_keys[h], out, sizeof *out);
    keep(K_MR, h);
  } else if (h >= 0) {
    keep(K_MR, h);
  }
}

static void op_dereg_mr(void) { int h = pick(K_MR); calls++; if (sys_rdma_dereg_mr(h) == 0) forget(K_MR, h); }
static void op_create_chan(void) { calls++; keep(K_CHAN, rdma_create_chan()); }
static void op_destroy_chan(void) {
  int h = pick(K_CHAN);
  calls++;
  if (rdma_destroy_chan(h) == 0) forget(K_CHAN, h);
}

static void op_create_cq(void) {
  int cqe = chance(80) ? (int)below(64) + 1 : count(dev.max_cqe);
  int ch = chance(50) ? -1 : pick(K_CHAN);
  calls++;
  keep(K_CQ, rdma_create_cq(cqe, ch, (void *)next()));
}

static void op_destroy_cq(void) { int h = pick(K_CQ); calls++; if (rdma_destroy_cq(h) == 0) forget(K_CQ, h); }

static void op_poll_cq(void) {
  int n = count(64);
  struct rdma_wc *wc = ptr(sizeof *wc * (n > 0 && n < 64 ? (unsigned)n : 1));
  int h = pick(K_CQ);
  calls++;
  rdma_poll_cq(h, n, wc);
}

// A CQ's ring mapped at a page of the arena (where posts, WRITEs and
// op_scribble write too) or at a bad address.
static void op_map_cq(void) {
  int h = pick(K_CQ);
  void *ring = chance(80) ? (void *)(arena + below(ARENA / PG) * PG) : (void *)bad_ptr();
  calls++;
  rdma_map_cq(h, ring);
}

// Garbage in a word of the arena, maybe a mapped ring's consumer index.
static void op_scribble(void) { ((unsigned *)arena)[below(ARENA / sizeof(unsigned))] = (unsigned)next(); }

static void op_req_notify(void) { int h = pick(K_CQ); calls++; rdma_req_notify(h, (int)below(3) - 1); }

static void op_create_qp(void) {
  struct rdma_qp_create *c = ptr(sizeof *c);
  if ((unsigned char *)c < arena || (unsigned char *)c >= arena + ARENA) { calls++; sys_rdma_create_qp(c); return; }
  c->pd = pick(K_PD);
  c->send_cq = pick(K_CQ);
  c->recv_cq = chance(70) ? c->send_cq : pick(K_CQ);
  c->sq_sig_all = (int)below(2);
  c->max_send_wr = chance(80) ? below(32) : (unsigned)count(dev.max_qp_wr);
  c->max_recv_wr = chance(80) ? below(32) : (unsigned)count(dev.max_qp_wr);
  c->max_send_sge = chance(90) ? below((unsigned)dev.max_sge + 1) : (unsigned)next();
  c->max_recv_sge = chance(90) ? below((unsigned)dev.max_sge + 1) : (unsigned)next();
  unsigned r = below(10);
  c->qp_type = r < 6 ? RDMA_QPT_RC : r < 9 ? RDMA_QPT_UD : (int)next();
  int srq = pick(K_SRQ);
  c->srq = chance(25) ? srq + 1 : 0;        // on an SRQ (own, destroyed, boundary, noise)
  calls++;
  int h = sys_rdma_create_qp(c);
  if (h >= 0 && h < 1024) qp_nums[h] = c->qp_num;
  keep(K_QP, h);
}

static void op_destroy_qp(void) { int h = pick(K_QP); calls++; if (sys_rdma_destroy_qp(h) == 0) forget(K_QP, h); }

// A send or receive queue's number (RDMA_WQ_*), or now and then garbage.
static int pick_wq(void) { return chance(90) ? (int)below(2) : (int)next(); }

// A QP's send or receive ring mapped at a page of the arena (where posts,
// WRITEs, op_scribble and op_doorbell write too) or at a bad address.
static void op_map_qp(void) {
  int h = pick(K_QP), which = pick_wq();
  void *ring = chance(80) ? (void *)(arena + below(ARENA / PG) * PG) : (void *)bad_ptr();
  calls++;
  rdma_map_qp(h, which, ring);
}

// A producer index written where a ring mapped at a page of the arena
// keeps it (a few entries past its consumer index, or garbage), then a
// doorbell: the kernel copies whatever the entries hold, then checks it.
static void op_doorbell(void) {
  unsigned *ring = (unsigned *)(arena + below(ARENA / PG) * PG);
  ring[16] = chance(50) ? ring[0] + below(8) : (unsigned)next();   // prod; cons is word 0
  int h = pick(K_QP), which = pick_wq();
  calls++;
  rdma_doorbell(h, which);
}

static void op_modify_qp(void) {
  int h = pick(K_QP), peer = 0;
  unsigned dest = any(&pools[K_QP], &peer) ? qp_nums[peer & 1023] : 0;
  struct rdma_qp_attr *a = ptr(sizeof *a);
  unsigned state = chance(90) ? below(7) : (unsigned)next();
  unsigned mask = chance(60) ? walk_masks[below(5)] : (unsigned)next() & (chance(50) ? 0x1fffff : ~0u);
  if (chance(15)) mask = ud_walk_masks[below(4)];
  if (chance(30)) mask ^= 1u << below(32);
  if ((unsigned char *)a >= arena && (unsigned char *)a < arena + ARENA) rand_attr(a, state, dest);
  calls++;
  rdma_modify_qp(h, a, mask);
}

// Two live QPs (or one with itself) walked to RTS towards each other.
static void op_connect(void) {
  int x, y;
  int have = any(&pools[K_QP], &x);
  if (!any(&pools[K_QP], &y) || !have) return;
  int ud = chance(30);                      // the QPs may be UD (an RC walk then fails, and the reverse)
  walk_to_rts(x, qp_nums[y & 1023], ud);
  if (y != x) walk_to_rts(y, qp_nums[x & 1023], ud);
}

static void op_query_qp(void) {
  int h = pick(K_QP);
  void *out = ptr(sizeof(struct rdma_qp_attr));
  calls++;
  rdma_query_qp(h, out);
}

// An SGE: an own MR's lkey over part of the arena mostly, else noise.
static void rand_sge(struct ibv_sge *s) {
  int mr = 0;
  any(&pools[K_MR], &mr);
  s->addr = chance(85) ? (unsigned long)(arena + below(ARENA)) : bad_ptr();
  s->length = chance(85) ? below(2 * (unsigned)PG) : (unsigned)next();
  s->lkey = chance(85) ? mr_keys[mr & 1023].lkey : (unsigned)next();
}

// A WR's SGE list: RDMA_MAX_SGE entries somewhere in the arena, or noise.
static unsigned long rand_sges(void) {
  struct ibv_sge *s = ptr(sizeof *s * RDMA_MAX_SGE);
  for (int j = 0; (unsigned char *)s >= arena && (unsigned char *)s < arena + ARENA && j < RDMA_MAX_SGE; j++)
    rand_sge(&s[j]);
  return (unsigned long)s;
}

// An atomic WR mostly in the shape the verbs accept: one 8-byte SGE, a
// target mostly 8-byte aligned, random operands.
static void atomic_shape(struct rdma_send_wr *w) {
  struct ibv_sge *s = (struct ibv_sge *)w->sg_list;
  w->compare_add = next();
  w->swap = next();
  if (chance(80)) w->remote_addr &= ~7UL;
  if (!chance(70) || (unsigned char *)s < arena || (unsigned char *)s >= arena + ARENA) return;
  w->num_sge = 1;
  s->length = 8;
}

static void op_post_send(void) {
  int n = count(MAX_WRS);
  struct rdma_send_wr *w = ptr(sizeof *w * MAX_WRS);
  for (int i = 0; (unsigned char *)w >= arena && (unsigned char *)w < arena + ARENA && i < MAX_WRS; i++) {
    int mr = 0;
    any(&pools[K_MR], &mr);
    memset(&w[i], 0, sizeof w[i]);
    w[i].wr_id = next();
    w[i].opcode = chance(90) ? below(IBV_WR_ATOMIC_FETCH_AND_ADD + 1) : (unsigned)next();
    w[i].send_flags = below(16);
    w[i].num_sge = chance(90) ? below((unsigned)dev.max_sge + 1) : (unsigned)next();
    w[i].imm_data = (unsigned)next();
    w[i].remote_addr = chance(85) ? (unsigned long)(arena + below(ARENA)) : next();
    w[i].rkey = chance(85) ? mr_keys[mr & 1023].rkey : (unsigned)next();
    int peer = 0, to_ud = chance(30), ah = pick(K_AH);
    unsigned qkey = chance(80) ? RDMAU_UD_QKEY : chance(50) ? RDMA_QKEY_CONTROLLED : (unsigned)next();
    unsigned qpn = any(&pools[K_QP], &peer) ? qp_nums[peer & 1023] : (unsigned)next();
    if (to_ud) {                              // UD: an AH (own, destroyed, boundary, noise), QPN, Q_Key
      w[i].ud_ah = ah;
      w[i].ud_remote_qpn = qpn;
      w[i].ud_remote_qkey = qkey;
    }
    w[i].sg_list = rand_sges();
    if (w[i].opcode >= IBV_WR_ATOMIC_CMP_AND_SWP && w[i].opcode <= IBV_WR_ATOMIC_FETCH_AND_ADD)
      atomic_shape(&w[i]);
  }
  int h = pick(K_QP);
  int *err = chance(50) ? 0 : ptr(sizeof(int));       // where the refusal's reason goes
  calls++;
  sys_rdma_post_send(h, w, n > MAX_WRS ? (chance(50) ? MAX_WRS : n) : n, err);
}

// Receive WRs to a QP (to_srq 0) or an SRQ.
static void post_recvs(int to_srq) {
  int n = count(MAX_WRS);
  struct rdma_recv_wr *w = ptr(sizeof *w * MAX_WRS);
  for (int i = 0; (unsigned char *)w >= arena && (unsigned char *)w < arena + ARENA && i < MAX_WRS; i++) {
    w[i].wr_id = next();
    w[i].num_sge = chance(90) ? below((unsigned)dev.max_sge + 1) : (unsigned)next();
    w[i].sg_list = rand_sges();
  }
  int h = pick(to_srq ? K_SRQ : K_QP);
  int *err = chance(50) ? 0 : ptr(sizeof(int));       // where the refusal's reason goes
  int k = n > MAX_WRS ? (chance(50) ? MAX_WRS : n) : n;
  calls++;
  if (to_srq) rdma_post_srq_recv(h, w, k, err);
  else sys_rdma_post_recv(h, w, k, err);
}

static void op_post_recv(void) { post_recvs(0); }
static void op_post_srq_recv(void) { post_recvs(1); }

// ---- shared receive queues: sizes at and past the limits, limits above max_wr, every mask ----
static void op_create_srq(void) {
  struct rdma_srq_create *c = ptr(sizeof *c);
  int pd = pick(K_PD);
  unsigned wr = chance(80) ? below(64) : (unsigned)count(dev.max_srq_wr);
  unsigned sge = chance(90) ? below((unsigned)dev.max_srq_sge + 1) : (unsigned)next();
  if ((unsigned char *)c >= arena && (unsigned char *)c < arena + ARENA)
    *c = (struct rdma_srq_create){ .pd = pd, .max_wr = wr, .max_sge = sge };
  calls++;
  keep(K_SRQ, sys_rdma_create_srq(c));
}

static void op_destroy_srq(void) { int h = pick(K_SRQ); calls++; if (sys_rdma_destroy_srq(h) == 0) forget(K_SRQ, h); }

static void op_modify_srq(void) {
  int h = pick(K_SRQ);
  struct rdma_srq_attr *a = ptr(sizeof *a);
  unsigned limit = chance(80) ? below(80) : (unsigned)next(), wr = below(128);
  unsigned mask = chance(70) ? IBV_SRQ_LIMIT : chance(50) ? IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT : (unsigned)next();
  if ((unsigned char *)a >= arena && (unsigned char *)a < arena + ARENA)
    *a = (struct rdma_srq_attr){ .max_wr = wr, .max_sge = 1, .srq_limit = limit };
  calls++;
  rdma_modify_srq(h, a, mask);
}

static void op_query_srq(void) {
  int h = pick(K_SRQ);
  struct rdma_srq_attr *a = ptr(sizeof *a);
  calls++;
  rdma_query_srq(h, a);
}

// An AH in a PD (own, destroyed, boundary, noise) to this port's address
// mostly, else to an address with no answer (EHOSTUNREACH after 2 s without
// a NIC at once) or noise; sometimes a bad pointer.
static void op_create_ah(void) {
  struct rdma_ah_attr *a = ptr(sizeof *a);
  int pd = pick(K_PD);
  unsigned r = below(20);
  unsigned ip = r < 17 ? port.ipv4 : r < 19 ? 0 : (unsigned)next();
  unsigned hop = below(256), tc = below(256), pnum = chance(90) ? 1 : below(4);
  if ((unsigned char *)a >= arena && (unsigned char *)a < arena + ARENA) {
    *a = (struct rdma_ah_attr){ .pd = pd, .dipv4 = ip, .hop_limit = (unsigned char)hop,
                                .traffic_class = (unsigned char)tc, .port_num = pnum };
  }
  calls++;
  keep(K_AH, rdma_create_ah(a));
}

static void op_destroy_ah(void) { int h = pick(K_AH); calls++; if (rdma_destroy_ah(h) == 0) forget(K_AH, h); }

static void op_get_async(void) { void *out = ptr(sizeof(struct rdma_async_event)); calls++; rdma_get_async(out, 0); }
static void op_qp_stats(void) {
  int i = chance(80) ? (int)below((unsigned)dev.max_qp) : count(dev.max_qp);
  void *out = ptr(sizeof(struct rdma_qp_stats));
  calls++;
  rdma_qp_stats(i, out);
}
static void op_query(void) {
  void *out = ptr(sizeof(struct rdma_device_info));
  int p = chance(80) ? 1 : (int)below(4) - 1;
  calls += 2;
  rdma_query_device(out);
  rdma_query_port(p, ptr(sizeof(struct rdma_port_info)));
}
static void op_set_neigh(void) {
  unsigned ip = chance(90) ? 0x0a000000u | below(256) : (unsigned)next();
  void *mac = ptr(6);
  calls++;
  rdma_set_neigh(ip, mac);
}
static void op_wait_write(void) {
  unsigned char *b = ptr(1);
  int old = (int)below(3);
  calls++;
  rdma_wait_write(b, old, (int)below(3));
}
static void op_wait_cq(void) { int h = pick(K_CQ); calls++; rdma_wait_cq(h, (int)below(3)); }

// ---- the kernel rdma_cm (SYS_ucma_*) ----
// Channels are made non-blocking, so get_event never sleeps in the walk;
// a CM channel is closed only from the live pool (never a picked number).
static void op_cm_chan(void) {
  int fd = ucma_create_chan();
  calls++;
  if (fd >= 0) { fcntl(fd, F_SETFL, O_NONBLOCK); calls++; }
  keep(K_CMCH, fd);
}
static void op_cm_close(void) {   // one channel stays: completion channels may hold every other fd
  int fd;
  if (any(&pools[K_CMCH], &fd) && pools[K_CMCH].n > 1) { calls++; close(fd); forget(K_CMCH, fd); }
}
static int cm_ps(void) { int ps[] = { RDMA_PS_TCP, RDMA_PS_UDP, RDMA_PS_IB, 0, (int)next() }; return ps[below(5)]; }
static int cm_port(void) { return chance(90) ? CM_PORT_BASE + (int)below(CM_PORTS) : (int)next(); }
static unsigned cm_ip(void) { return chance(90) ? (chance(80) ? port.ipv4 : 0) : (unsigned)next(); }
static void op_cm_create_id(void) {
  int ch = pick(K_CMCH), ps = cm_ps();
  calls++;
  keep(K_CMID, ucma_create_id(ch, ps, next()));
}
static void op_cm_destroy_id(void) { int h = pick(K_CMID); calls++; if (ucma_destroy_id(h) == 0) forget(K_CMID, h); }
static void op_cm_bind(void) { int h = pick(K_CMID); unsigned ip = cm_ip(); int pt = cm_port(); calls++; ucma_bind(h, ip, pt); }
static void op_cm_listen(void) { int h = pick(K_CMID), b = count(8); calls++; ucma_listen(h, b); }
static void op_cm_resolve(void) {
  int h = pick(K_CMID), pt = cm_port(), ms = (int)below(60) - 5;
  unsigned src = chance(90) ? 0 : cm_ip(), dst = cm_ip();
  calls++;
  ucma_resolve_addr(h, src, dst, pt, ms);
}
static void op_cm_route(void) { int h = pick(K_CMID), ms = (int)below(100); calls++; ucma_resolve_route(h, ms); }
// Connection parameters: mostly plausible (a live QP's number, small
// counts, private data up to past its room), else a pointer into the
// arena's random bytes or a bad one.
static void *cm_param(void) {
  static struct ucma_conn_param p;
  int qp;
  if (chance(15)) return ptr(sizeof p);
  memset(&p, 0, sizeof p);
  p.qp_num = any(&pools[K_QP], &qp) ? qp_nums[qp] : (unsigned)next() & 0xffffff;
  p.responder_resources = (unsigned char)below(20);
  p.initiator_depth = (unsigned char)below(20);
  p.retry_count = (unsigned char)below(9);
  p.rnr_retry_count = (unsigned char)below(9);
  p.private_data_len = (unsigned char)below(64);
  p.ack_timeout = (unsigned char)below(32);
  p.xv6_caps = (unsigned)below(4);
  return &p;
}

static void op_cm_connect(void) {
  int h = pick(K_CMID), which = (int)below(3);
  void *p = cm_param();
  calls++;
  if (which == 0) ucma_connect(h, p);
  else ucma_accept(h, which == 1 ? p : NULL);
}
static void op_cm_reject(void) { int h = pick(K_CMID), n = count(UCMA_PRIVATE_MAX); void *p = ptr(UCMA_PRIVATE_MAX); calls++; ucma_reject(h, p, n); }
static void op_cm_disconnect(void) { int h = pick(K_CMID); calls++; if (chance(50)) ucma_disconnect(h); else ucma_established(h); }
static void op_cm_qp_attr(void) {
  int h = pick(K_CMID), st = (int)below(8);
  void *p = ptr(sizeof(struct rdma_qp_attr));
  calls++;
  ucma_init_qp_attr(h, st, p);
}
static void op_cm_get_event(void) { int ch = pick(K_CMCH); void *p = ptr(sizeof(struct ucma_event)); calls++; ucma_get_event(ch, p); }
static void op_cm_migrate(void) { int h = pick(K_CMID), ch = pick(K_CMCH); calls++; ucma_migrate_id(h, ch); }

static void op_fork(void);

struct op { const char *name; int weight; void (*fn)(void); };
static const struct op ops[] = {
  { "alloc_pd", 4, op_alloc_pd }, { "dealloc_pd", 2, op_dealloc_pd },
  { "reg_mr", 8, op_reg_mr }, { "dereg_mr", 3, op_dereg_mr },
  { "create_chan", 2, op_create_chan }, { "destroy_chan", 1, op_destroy_chan },
  { "create_cq", 5, op_create_cq }, { "destroy_cq", 2, op_destroy_cq },
  { "poll_cq", 8, op_poll_cq }, { "req_notify", 3, op_req_notify },
  { "map_cq", 3, op_map_cq }, { "scribble", 4, op_scribble },
  { "create_qp", 6, op_create_qp }, { "destroy_qp", 2, op_destroy_qp },
  { "map_qp", 3, op_map_qp }, { "doorbell", 6, op_doorbell },
  { "modify_qp", 10, op_modify_qp }, { "connect", 4, op_connect }, { "query_qp", 3, op_query_qp },
  { "post_send", 12, op_post_send }, { "post_recv", 8, op_post_recv },
  { "get_async", 2, op_get_async }, { "qp_stats", 2, op_qp_stats }, { "query", 1, op_query },
  { "set_neigh", 1, op_set_neigh }, { "wait_write", 2, op_wait_write }, { "wait_cq", 2, op_wait_cq },
  { "create_ah", 3, op_create_ah }, { "destroy_ah", 2, op_destroy_ah },
  { "cm_chan", 1, op_cm_chan }, { "cm_close", 1, op_cm_close }, { "cm_create_id", 3, op_cm_create_id },
  { "cm_destroy_id", 1, op_cm_destroy_id }, { "cm_bind", 2, op_cm_bind }, { "cm_listen", 2, op_cm_listen },
  { "cm_resolve", 2, op_cm_resolve }, { "cm_route", 1, op_cm_route }, { "cm_connect", 2, op_cm_connect },
  { "cm_reject", 1, op_cm_reject }, { "cm_disconnect", 1, op_cm_disconnect },
  { "cm_qp_attr", 1, op_cm_qp_attr }, { "cm_get_event", 3, op_cm_get_event },
  { "cm_migrate", 1, op_cm_migrate },
  { "create_srq", 2, op_create_srq }, { "destroy_srq", 1, op_destroy_srq },
  { "modify_srq", 2, op_modify_srq }, { "query_srq", 1, op_query_srq },
  { "post_srq_recv", 4, op_post_srq_recv },
  { "fork", 1, op_fork },
};
#define NOPS ((int)(sizeof ops / sizeof ops[0]))

static int in_child;

static void step(void) {
  int total = 0;
  for (int i = 0; i < NOPS; i++) total += ops[i].weight;
  int r = (int)below((unsigned)total), i = 0;
  while (r >= ops[i].weight) r -= ops[i++].weight;
  if (in_child && ops[i].fn == op_fork) return;     // one level of children
  steps++;
  if (verbose) printf("rdmafuzz: step %lu call %lu %s\n", steps, calls, ops[i].name);
  ops[i].fn();
}

// ---- children ----
// How a child ends: exit holding its objects, block in a waiting call and
// be killed, or be killed while it still runs.
enum { END_EXIT, END_BLOCK, END_KILL_RUNNING, NEND };
static int forks, kills;

static void child_block(void) {
  unsigned long long cookie;
  struct rdma_async_event ev;
  static volatile unsigned char never;
  struct ucma_event cev;
  int cq = pools[K_CQ].n ? pools[K_CQ].live[0] : -1, ch = pools[K_CHAN].n ? pools[K_CHAN].live[0] : -1;
  int cm = -1;
  switch (below(5)) {
  case 0: if (ch >= 0) rdma_get_cq_event(ch, &cookie); break;
  case 1: rdma_get_async(&ev, 1); break;
  case 2: rdma_wait_write(&never, 0, -1); break;
  case 3: if ((cm = ucma_create_chan()) >= 0) ucma_get_event(cm, &cev); break;   // a blocking channel
  default: if (cq >= 0) rdma_wait_cq(cq, -1); break;
  }
  // Not every blocking call had an object to wait on: block here instead.
  rdma_wait_write(&never, 0, -1);
}

static void op_fork(void) {
  int end = (int)below(NEND), n = (int)below(CHILD_CALLS);
  unsigned long child_seed = next();
  int fds[2];
  if (pipe(fds) < 0) return;
  forks++;
  int pid = fork();
  if (pid < 0) { close(fds[0]); close(fds[1]); return; }
  if (pid == 0) {
    close(fds[0]);
    in_child = 1;
    rng = child_seed;
    // The parent's handles stay in the pools: foreign to this process.
    if (end == END_KILL_RUNNING) write(fds[1], "r", 1);
    for (int i = 0; i < n; i++) step();
    if (end == END_EXIT) exit(0);
    if (end == END_BLOCK) { write(fds[1], "b", 1); child_block(); }
    for (;;) step();                                 // until killed
  }
  close(fds[1]);
  char c;
  int got = read(fds[0], &c, 1);
  close(fds[0]);
  if (end != END_EXIT && got == 1) { kill(pid); kills++; }
  int st;
  wait(&st);
}

// ---- main ----
static unsigned long long cm_live_ids(void) {
  struct rdma_dev_stats d;
  return rdma_dev_stats(&d) == 0 ? d.cm_live_ids : ~0ull;
}

static unsigned long free_pages(void) {
  struct sysinfo si;
  return sysinfo(&si) == 0 ? si.freepages : 0;
}

// The worker: the walk, then destroy what it holds (QPs first: they hold
// CQs and PDs), report the call count through fd.
static void worker(unsigned long ncalls, unsigned long end_ns, int fd) {
  unsigned long next_note = clock_ns() + PROGRESS_NS, t0 = clock_ns();
  // Two CM channels before the walk: completion channels may take every
  // other descriptor (OPEN_MAX) later.
  for (int i = 0; i < 2; i++) op_cm_chan();
  while ((ncalls && steps < ncalls) || (!ncalls && clock_ns() < end_ns)) {
    step();
    if (clock_ns() >= next_note) {
      next_note += PROGRESS_NS;
      printf("rdmafuzz: %lu calls, %lu s, live pd %d mr %d cq %d qp %d, forks %d\n", calls,
             (clock_ns() - t0) / 1000000000UL, pools[K_PD].n, pools[K_MR].n, pools[K_CQ].n,
             pools[K_QP].n, forks);
    }
  }
  static const int order[] = { K_CMID, K_CMCH, K_QP, K_SRQ, K_AH, K_MR, K_CQ, K_CHAN, K_PD };
  int (*destroy[NKIND])(int) = { rdma_dealloc_pd, sys_rdma_dereg_mr, rdma_destroy_chan, rdma_destroy_cq,
                                 sys_rdma_destroy_qp, rdma_destroy_ah, close, ucma_destroy_id,
                                 sys_rdma_destroy_srq };
  for (int i = 0; i < NKIND; i++)
    for (struct pool *p = &pools[order[i]]; p->n > 0; p->n--, calls++)
      destroy[order[i]](p->live[p->n - 1]);     // MRs still busy are released at exit
  // The generator's state at the end: the same for two runs of -s S -n N
  // that made the same choices.
  unsigned long stats[4] = { calls, (unsigned long)forks, (unsigned long)kills, rng };
  write(fd, stats, sizeof stats);
  exit(0);
}

int main(int argc, char **argv) {
  unsigned long seed = 1, ncalls = 0, seconds = 10;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-s") == 0 && i + 1 < argc) seed = (unsigned long)atoi(argv[++i]);
    else if (strcmp(argv[i], "-t") == 0 && i + 1 < argc) seconds = (unsigned long)atoi(argv[++i]);
    else if (strcmp(argv[i], "-n") == 0 && i + 1 < argc) ncalls = (unsigned long)atoi(argv[++i]);
    else if (strcmp(argv[i], "-v") == 0) verbose = 1;
    else { printf("usage: rdmafuzz [-s SEED] [-t SECONDS | -n CALLS] [-v]\n"); exit(2); }
  }
  if (rdma_query_device(&dev) < 0 || rdma_query_port(1, &port) < 0 || dev.max_mr > 1024 ||
      dev.max_qp > 1024) {
    printf("rdmafuzz: no usable RDMA device\n");
    exit(1);
  }
  rng = seed * 0x9e3779b97f4a7c15UL + 1;     // never 0: xorshift would stay there
  hostile_bad_addrs(bad_addrs);
  printf("rdmafuzz: seed %lu, %s %lu\n", seed, ncalls ? "calls" : "seconds", ncalls ? ncalls : seconds);
  int fds[2];
  if (pipe(fds) < 0) exit(1);
  unsigned long before = free_pages();
  unsigned long long ids_before = cm_live_ids();
  int pid = fork();
  if (pid == 0) {
    close(fds[0]);
    worker(ncalls, clock_ns() + seconds * 1000000000UL, fds[1]);
  }
  close(fds[1]);
  unsigned long stats[4] = { 0, 0, 0, 0 };
  int got = pid > 0 ? read(fds[0], stats, sizeof stats) : 0;
  int st = -1;
  if (pid > 0) wait(&st);
  unsigned long after = free_pages();
  unsigned long long ids_after = cm_live_ids();
  close(fds[0]);
  int ok = got == sizeof stats && st == 0 && after == before && ids_after == ids_before;
  printf("rdmafuzz: seed %lu calls %lu forks %lu kills %lu digest %lx worker status %d "
         "free pages %lu -> %lu cm ids %lu -> %lu: %s\n", seed, stats[0], stats[1], stats[2], stats[3], st,
         before, after, ids_before, ids_after,
         ok ? "ok" : after != before || ids_after != ids_before ? "LEAK" : "FAILED");
  exit(ok ? 0 : 1);
}
