// rc_server: the passive side of the event-driven example, written as one
// writes it for librdmacm. One event channel; the listening id and every
// connection's id report there; the main loop takes each event and hands
// it to its handler (a table by event type). On a connect request it makes
// a PD, a completion channel and a CQ, a QP with rdma_create_qp (in INIT,
// so the first receive is posted before accepting), and accepts with a
// buffer's address and rkey as private data. The client WRITE_WITH_IMMs
// EX_SIZE bytes into the buffer's first half and READs its second half;
// the server checks the write by the immediate's arrival, answers with a
// SEND, and waits for the client to disconnect.
//
//   rc_server [port]
// Prints "rc_server: write <n> bytes imm <imm> sum <sum>", "rc_server: read
// region sum <sum>" and "rc_server: OK" (tests/rdma/run_examples.py).
#include "example.h"

struct conn {
  struct ibv_pd *pd;
  struct ibv_comp_channel *comp;
  struct ibv_cq *cq;
  struct ibv_mr *buf_mr, *msg_mr;
  uint8_t *buf;                 // [0, EX_SIZE): written by the client; [EX_SIZE, 2 EX_SIZE): read
  char msg[64];                 // the receive the immediate consumes, then the SEND
};

static int done, failed;

static int on_connect_request(struct rdma_cm_event *ev) {
  struct rdma_cm_id *id = ev->id;
  struct conn *c = calloc(1, sizeof *c);
  c->buf = malloc(2 * EX_SIZE);
  if (!c->buf) return -1;
  c->pd = ibv_alloc_pd(id->verbs);
  c->comp = ibv_create_comp_channel(id->verbs);
  c->cq = ibv_create_cq(id->verbs, 16, c, c->comp, 0);
  if (!c->pd || !c->comp || !c->cq) return -1;
  struct ibv_qp_init_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.send_cq = attr.recv_cq = c->cq;
  attr.qp_type = IBV_QPT_RC;
  attr.cap.max_send_wr = attr.cap.max_recv_wr = 8;
  attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
  if (rdma_create_qp(id, c->pd, &attr)) { printf("rc_server: rdma_create_qp failed\n"); return -1; }
  id->context = c;
  memset(c->buf, 0, EX_SIZE);
  ex_pattern(c->buf + EX_SIZE, EX_SIZE, 2);
  c->buf_mr = ibv_reg_mr(c->pd, c->buf, 2 * EX_SIZE,
                         IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
  c->msg_mr = ibv_reg_mr(c->pd, c->msg, sizeof c->msg, IBV_ACCESS_LOCAL_WRITE);
  if (!c->buf_mr || !c->msg_mr) return -1;
  // The QP is in INIT: the receive the WRITE_WITH_IMM consumes goes in now.
  struct ibv_sge sge = { (uint64_t)c->msg, sizeof c->msg, c->msg_mr->lkey };
  struct ibv_recv_wr rwr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 }, *bad_rwr;
  if (ibv_post_recv(id->qp, &rwr, &bad_rwr)) {
    printf("rc_server: post_recv before accept failed\n");
    return -1;
  }
  struct ex_pdata pd = { htobe64((uint64_t)c->buf), htonl(c->buf_mr->rkey), htonl(2 * EX_SIZE) };
  struct rdma_conn_param param;
  memset(&param, 0, sizeof param);
  param.private_data = &pd;
  param.private_data_len = sizeof pd;
  param.responder_resources = 1;
  param.initiator_depth = 1;
  param.rnr_retry_count = 7;
  return rdma_accept(id, &param);
}

// Connected: wait for the client's WRITE_WITH_IMM, check it, answer.
static int on_established(struct rdma_cm_event *ev) {
  struct conn *c = ev->id->context;
  struct ibv_wc wc;
  if (ex_wait_comp(c->comp, c->cq, &wc) || wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM) return -1;
  uint8_t want[EX_SIZE];
  ex_pattern(want, EX_SIZE, 1);
  printf("rc_server: write %d bytes imm 0x%x sum %x\n", (int)wc.byte_len, ntohl(wc.imm_data),
         ex_sum(c->buf, EX_SIZE));
  printf("rc_server: read region sum %x\n", ex_sum(c->buf + EX_SIZE, EX_SIZE));
  if (memcmp(want, c->buf, EX_SIZE) != 0) { printf("rc_server: the written bytes differ\n"); failed = 1; }
  snprintf(c->msg, sizeof c->msg, "write of %d bytes received", (int)wc.byte_len);
  struct ibv_sge sge = { (uint64_t)c->msg, (uint32_t)strlen(c->msg) + 1, c->msg_mr->lkey };
  struct ibv_send_wr swr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
                             .send_flags = IBV_SEND_SIGNALED }, *bad;
  // Not waited for: the client disconnects once it has the answer and its
  // READ, and the ACK of our SEND may still be on its way then (the
  // disconnect flushes the SEND); the client's "reply" line shows it came.
  return ibv_post_send(ev->id->qp, &swr, &bad);
}

static int on_disconnected(struct rdma_cm_event *ev) {
  struct conn *c = ev->id->context;
  rdma_destroy_qp(ev->id);
  ibv_dereg_mr(c->buf_mr);
  ibv_dereg_mr(c->msg_mr);
  ibv_destroy_cq(c->cq);
  ibv_destroy_comp_channel(c->comp);
  rdma_destroy_id(ev->id);
  done = 1;                     // one connection, then exit
  return 0;
}

static int on_error(struct rdma_cm_event *ev) {
  printf("rc_server: %s (status %d)\n", rdma_event_str(ev->event), ev->status);
  return -1;
}

static int (*const handlers[])(struct rdma_cm_event *) = {
  [RDMA_CM_EVENT_CONNECT_REQUEST] = on_connect_request,
  [RDMA_CM_EVENT_ESTABLISHED] = on_established,
  [RDMA_CM_EVENT_DISCONNECTED] = on_disconnected,
  [RDMA_CM_EVENT_CONNECT_ERROR] = on_error,
  [RDMA_CM_EVENT_REJECTED] = on_error,
  [RDMA_CM_EVENT_UNREACHABLE] = on_error,
};

int main(int argc, char **argv) {
  struct rdma_addrinfo hints, *res;
  struct rdma_event_channel *ch = rdma_create_event_channel();
  struct rdma_cm_id *listen_id;
  memset(&hints, 0, sizeof hints);
  hints.ai_flags = RAI_PASSIVE;
  if (!ch || rdma_getaddrinfo(NULL, argc > 1 ? argv[1] : EX_PORT, &hints, &res)) {
    printf("rc_server: no channel or address\n");
    exit(1);
  }
  if (rdma_create_id(ch, &listen_id, NULL, RDMA_PS_TCP) || rdma_bind_addr(listen_id, res->ai_src_addr) ||
      rdma_listen(listen_id, 1)) {
    printf("rc_server: listen failed (errno %d)\n", errno);
    exit(1);
  }
  rdma_freeaddrinfo(res);
  printf("rc_server: listening on port %d\n", ntohs(rdma_get_src_port(listen_id)));
  // A non-blocking channel waited on with poll(), as a program that watches
  // other descriptors too does. xv6: the library's timers (retransmissions)
  // run only inside its calls, so poll() gets a timeout.
  if (fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK) < 0) failed = 1;
  while (!done && !failed) {
    struct rdma_cm_event *ev, copy;
    struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
    if (poll(&pfd, 1, 250) < 0) break;
    if (rdma_get_cm_event(ch, &ev)) {
      if (errno == EAGAIN) continue;
      break;
    }
    copy = *ev;                 // the handlers may destroy the id: ack first
    uint8_t pdata[RDMA_CM_PRIVATE_MAX];
    if (ev->param.conn.private_data_len)
      memcpy(pdata, ev->param.conn.private_data, ev->param.conn.private_data_len);
    copy.param.conn.private_data = pdata;
    rdma_ack_cm_event(ev);
    int (*h)(struct rdma_cm_event *) = (unsigned)copy.event < sizeof handlers / sizeof handlers[0]
                                       ? handlers[copy.event] : 0;
    if (h && h(&copy)) failed = 1;
  }
  rdma_destroy_id(listen_id);
  rdma_destroy_event_channel(ch);
  printf(failed ? "rc_server: FAILED\n" : "rc_server: OK\n");
  exit(failed);
}
