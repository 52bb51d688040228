// rc_client: the active side of the event-driven example (see rc_server.c),
// written as one writes it for librdmacm: resolve the address and the
// route, make a PD, a completion channel, a CQ and a QP (rdma_create_qp;
// the receive for the server's answer is posted before connecting), connect,
// and on ESTABLISHED take the server's buffer from the private data:
// WRITE_WITH_IMM EX_SIZE bytes into its first half, wait for the server's
// SEND, READ its second half, then disconnect.
//
//   rc_client <server-ip> [port]
// Prints "rc_client: write <n> bytes imm <imm> sum <sum>", "rc_client:
// reply '<text>'", "rc_client: read <n> bytes sum <sum>" and "rc_client: OK".
#include "example.h"

#define IMM 0x5eed

static struct rdma_cm_id *id;
static struct ibv_pd *pd;
static struct ibv_comp_channel *comp;
static struct ibv_cq *cq;
static struct ibv_mr *buf_mr, *msg_mr;
static uint8_t buf[2 * EX_SIZE];   // [0, EX_SIZE): written; [EX_SIZE, 2 EX_SIZE): read into
static char msg[64];
static int done, failed;

static int on_addr_resolved(struct rdma_cm_event *ev) {
  (void)ev;
  return rdma_resolve_route(id, 2000);
}

static int on_route_resolved(struct rdma_cm_event *ev) {
  (void)ev;
  pd = ibv_alloc_pd(id->verbs);
  comp = ibv_create_comp_channel(id->verbs);
  cq = ibv_create_cq(id->verbs, 16, NULL, comp, 0);
  if (!pd || !comp || !cq) return -1;
  struct ibv_qp_init_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.send_cq = attr.recv_cq = cq;
  attr.qp_type = IBV_QPT_RC;
  attr.cap.max_send_wr = attr.cap.max_recv_wr = 8;
  attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
  if (rdma_create_qp(id, pd, &attr)) return -1;
  buf_mr = ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
  msg_mr = ibv_reg_mr(pd, msg, sizeof msg, IBV_ACCESS_LOCAL_WRITE);
  if (!buf_mr || !msg_mr) return -1;
  struct ibv_sge sge = { (uint64_t)msg, sizeof msg, msg_mr->lkey };
  struct ibv_recv_wr rwr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 }, *bad;
  if (ibv_post_recv(id->qp, &rwr, &bad)) return -1;        // before connecting: the QP is in INIT
  struct rdma_conn_param param;
  memset(&param, 0, sizeof param);
  param.responder_resources = 1;
  param.initiator_depth = 1;
  param.retry_count = 7;
  param.rnr_retry_count = 7;
  return rdma_connect(id, &param);
}

// One signaled WRITE_WITH_IMM or READ of EX_SIZE bytes at `local`.
static int post_rdma(enum ibv_wr_opcode op, uint8_t *local, uint64_t raddr, uint32_t rkey) {
  struct ibv_sge sge = { (uint64_t)local, EX_SIZE, buf_mr->lkey };
  struct ibv_send_wr wr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1, .opcode = op,
                            .send_flags = IBV_SEND_SIGNALED }, *bad;
  wr.imm_data = htonl(IMM);
  wr.wr.rdma.remote_addr = raddr;
  wr.wr.rdma.rkey = rkey;
  return ibv_post_send(id->qp, &wr, &bad);
}

static int on_established(struct rdma_cm_event *ev) {
  struct ex_pdata server;
  struct ibv_wc wc;
  if (ev->param.conn.private_data_len < sizeof server) return -1;
  memcpy(&server, ev->param.conn.private_data, sizeof server);
  uint64_t raddr = be64toh(server.buf_va);
  uint32_t rkey = ntohl(server.buf_rkey);
  ex_pattern(buf, EX_SIZE, 1);
  if (post_rdma(IBV_WR_RDMA_WRITE_WITH_IMM, buf, raddr, rkey)) return -1;
  printf("rc_client: write %d bytes imm 0x%x sum %x\n", EX_SIZE, IMM, ex_sum(buf, EX_SIZE));
  // Two completions in either order: our WRITE's and the server's SEND.
  for (int i = 0; i < 2; i++)
    if (ex_wait_comp(comp, cq, &wc)) return -1;
  printf("rc_client: reply '%s'\n", msg);
  if (post_rdma(IBV_WR_RDMA_READ, buf + EX_SIZE, raddr + EX_SIZE, rkey) || ex_wait_comp(comp, cq, &wc))
    return -1;
  uint8_t want[EX_SIZE];
  ex_pattern(want, EX_SIZE, 2);
  printf("rc_client: read %d bytes sum %x\n", (int)wc.byte_len, ex_sum(buf + EX_SIZE, EX_SIZE));
  if (memcmp(want, buf + EX_SIZE, EX_SIZE) != 0) { printf("rc_client: the read bytes differ\n"); failed = 1; }
  return rdma_disconnect(id);
}

static int on_disconnected(struct rdma_cm_event *ev) {
  (void)ev;
  done = 1;
  return 0;
}

static int on_error(struct rdma_cm_event *ev) {
  printf("rc_client: %s (status %d)\n", rdma_event_str(ev->event), ev->status);
  return -1;
}

static int (*const handlers[])(struct rdma_cm_event *) = {
  [RDMA_CM_EVENT_ADDR_RESOLVED] = on_addr_resolved,
  [RDMA_CM_EVENT_ROUTE_RESOLVED] = on_route_resolved,
  [RDMA_CM_EVENT_ESTABLISHED] = on_established,
  [RDMA_CM_EVENT_DISCONNECTED] = on_disconnected,
  [RDMA_CM_EVENT_ADDR_ERROR] = on_error,
  [RDMA_CM_EVENT_ROUTE_ERROR] = on_error,
  [RDMA_CM_EVENT_CONNECT_ERROR] = on_error,
  [RDMA_CM_EVENT_REJECTED] = on_error,
  [RDMA_CM_EVENT_UNREACHABLE] = on_error,
};

int main(int argc, char **argv) {
  struct rdma_addrinfo *res;
  if (argc < 2) { printf("usage: rc_client <server-ip> [port]\n"); exit(1); }
  struct rdma_event_channel *ch = rdma_create_event_channel();
  if (!ch || rdma_getaddrinfo(argv[1], argc > 2 ? argv[2] : EX_PORT, NULL, &res) ||
      rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) || rdma_resolve_addr(id, NULL, res->ai_dst_addr, 2000)) {
    printf("rc_client: cannot resolve %s (errno %d)\n", argv[1], errno);
    exit(1);
  }
  rdma_freeaddrinfo(res);
  while (!done && !failed) {
    struct rdma_cm_event *ev;
    if (rdma_get_cm_event(ch, &ev)) break;
    int (*h)(struct rdma_cm_event *) = (unsigned)ev->event < sizeof handlers / sizeof handlers[0]
                                       ? handlers[ev->event] : 0;
    if (h && h(ev)) failed = 1;
    rdma_ack_cm_event(ev);
  }
  rdma_destroy_qp(id);
  ibv_dereg_mr(buf_mr);
  ibv_dereg_mr(msg_mr);
  ibv_destroy_cq(cq);
  ibv_destroy_comp_channel(comp);
  ibv_dealloc_pd(pd);
  rdma_destroy_id(id);
  rdma_destroy_event_channel(ch);
  printf(failed ? "rc_client: FAILED\n" : "rc_client: OK\n");
  exit(failed);
}
