// ep_client: the active side of the synchronous example (see ep_server.c),
// written as one writes it for librdmacm with rdma_getaddrinfo,
// rdma_create_ep and the rdma_verbs.h helpers: an active endpoint with its
// QP, a receive posted before rdma_connect, a message sent, the answer
// received, the server's disconnect.
//
//   ep_client <server-ip> [port]
// Prints "ep_client: sent <n> bytes sum <sum>", "ep_client: received <n>
// bytes sum <sum>" and "ep_client: OK" (tests/rdma/run_examples.py).
#include "example.h"

static uint8_t send_msg[EX_SIZE], recv_msg[EX_SIZE];

static void fail(const char *what) { ex_fail("ep_client", what); }

int main(int argc, char **argv) {
  struct rdma_addrinfo hints, *res;
  struct ibv_qp_init_attr attr;
  struct rdma_cm_id *id;
  struct ibv_wc wc;
  if (argc < 2) { printf("usage: ep_client <server-ip> [port]\n"); exit(1); }
  memset(&hints, 0, sizeof hints);
  hints.ai_port_space = RDMA_PS_TCP;
  if (rdma_getaddrinfo(argv[1], argc > 2 ? argv[2] : EX_PORT, &hints, &res)) fail("rdma_getaddrinfo");
  ex_ep_attr(&attr);
  if (rdma_create_ep(&id, res, NULL, &attr)) fail("rdma_create_ep");
  rdma_freeaddrinfo(res);
  struct ibv_mr *recv_mr = rdma_reg_msgs(id, recv_msg, sizeof recv_msg);
  struct ibv_mr *send_mr = rdma_reg_msgs(id, send_msg, sizeof send_msg);
  if (!recv_mr || !send_mr) fail("rdma_reg_msgs");
  if (rdma_post_recv(id, NULL, recv_msg, sizeof recv_msg, recv_mr)) fail("rdma_post_recv");
  if (rdma_connect(id, NULL)) fail("rdma_connect");
  ex_pattern(send_msg, EX_SIZE, 3);
  if (rdma_post_send(id, NULL, send_msg, sizeof send_msg, send_mr, 0)) fail("rdma_post_send");
  if (ex_comp_ok("ep_client", rdma_get_send_comp(id, &wc), &wc)) fail("rdma_get_send_comp");
  printf("ep_client: sent %d bytes sum %x\n", EX_SIZE, ex_sum(send_msg, EX_SIZE));
  if (ex_comp_ok("ep_client", rdma_get_recv_comp(id, &wc), &wc)) fail("rdma_get_recv_comp");
  printf("ep_client: received %d bytes sum %x\n", (int)wc.byte_len, ex_sum(recv_msg, (int)wc.byte_len));
  uint8_t want[EX_SIZE];
  ex_pattern(want, EX_SIZE, 4);
  int same = wc.byte_len == EX_SIZE && memcmp(want, recv_msg, EX_SIZE) == 0;
  // The server disconnects once our ACK of its answer reached it; leaving
  // first could flush that answer on its side. Wait for its DREQ.
  struct rdma_cm_event *ev;
  if (rdma_get_cm_event(id->channel, &ev)) fail("rdma_get_cm_event");
  int disconnected = ev->event == RDMA_CM_EVENT_DISCONNECTED;
  rdma_ack_cm_event(ev);
  if (!disconnected) fail("waiting for the disconnect");
  rdma_dereg_mr(recv_mr);
  rdma_dereg_mr(send_mr);
  rdma_destroy_ep(id);
  if (!same) fail("comparing the answer");
  printf("ep_client: OK\n");
  exit(0);
}
