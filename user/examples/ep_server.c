// ep_server: the passive side of the synchronous example (see ep_client.c),
// written as one writes it for librdmacm with rdma_create_ep and the
// rdma_verbs.h helpers: a passive endpoint whose connections get a QP each
// (rdma_get_request makes it), a receive posted before rdma_accept, the
// client's message received, an answer sent, then rdma_disconnect.
//
//   ep_server [port]
// Prints "ep_server: received <n> bytes sum <sum>", "ep_server: sent <n>
// bytes sum <sum>" and "ep_server: OK" (tests/rdma/run_examples.py).
#include "example.h"

static uint8_t recv_msg[EX_SIZE], send_msg[EX_SIZE];

static void fail(const char *what) { ex_fail("ep_server", what); }

int main(int argc, char **argv) {
  struct rdma_addrinfo hints, *res;
  struct ibv_qp_init_attr attr;
  struct rdma_cm_id *listen_id, *id;
  struct ibv_wc wc;
  memset(&hints, 0, sizeof hints);
  hints.ai_flags = RAI_PASSIVE;
  hints.ai_port_space = RDMA_PS_TCP;
  if (rdma_getaddrinfo(NULL, argc > 1 ? argv[1] : EX_PORT, &hints, &res)) fail("rdma_getaddrinfo");
  ex_ep_attr(&attr);
  if (rdma_create_ep(&listen_id, res, NULL, &attr)) fail("rdma_create_ep");
  rdma_freeaddrinfo(res);
  if (rdma_listen(listen_id, 0)) fail("rdma_listen");
  printf("ep_server: listening on port %d\n", ntohs(rdma_get_src_port(listen_id)));
  if (rdma_get_request(listen_id, &id)) fail("rdma_get_request");
  struct ibv_mr *recv_mr = rdma_reg_msgs(id, recv_msg, sizeof recv_msg);
  struct ibv_mr *send_mr = rdma_reg_msgs(id, send_msg, sizeof send_msg);
  if (!recv_mr || !send_mr) fail("rdma_reg_msgs");
  if (rdma_post_recv(id, NULL, recv_msg, sizeof recv_msg, recv_mr)) fail("rdma_post_recv");
  if (rdma_accept(id, NULL)) fail("rdma_accept");
  if (ex_comp_ok("ep_server", rdma_get_recv_comp(id, &wc), &wc)) fail("rdma_get_recv_comp");
  printf("ep_server: received %d bytes sum %x\n", (int)wc.byte_len, ex_sum(recv_msg, (int)wc.byte_len));
  ex_pattern(send_msg, EX_SIZE, 4);
  if (rdma_post_send(id, NULL, send_msg, sizeof send_msg, send_mr, 0)) fail("rdma_post_send");
  if (ex_comp_ok("ep_server", rdma_get_send_comp(id, &wc), &wc)) fail("rdma_get_send_comp");
  printf("ep_server: sent %d bytes sum %x\n", EX_SIZE, ex_sum(send_msg, EX_SIZE));
  // Our answer is acknowledged, so nothing of ours is in flight: we end
  // the connection (the client waits for that).
  if (rdma_disconnect(id)) fail("rdma_disconnect");
  rdma_dereg_mr(recv_mr);
  rdma_dereg_mr(send_mr);
  rdma_destroy_ep(id);
  rdma_destroy_ep(listen_id);
  printf("ep_server: OK\n");
  exit(0);
}
