// udaddy.c: librdmacm's udaddy (rdmacm-utils), the RDMA CM datagram test:
// UD "connections" through rdma_cm's RDMA_PS_UDP (SIDR_REQ / SIDR_REP, the
// kernel's CM), then a ping-pong of UD datagrams, so that it runs against
// Linux's unmodified udaddy in either role. Owns the options, each
// connection's UD QP, buffers and address handle, and the exchange's order.
//
//   udaddy [-b bind_address] [-c connections] [-C message_count] [-S message_size] [-p port_space]
//   udaddy -s server_address [-b ...] [-c ...] [-C ...] [-S ...] [-t tos] [-p port_space]
//
// As Linux's (its man page, and tests/vectors/cm/udaddy.pcap between two
// Linux guests): the server listens on port 7174; each client id sends a
// SIDR_REQ, the server posts its receives and answers with its QP's number
// and Q_Key RDMA_UDP_QKEY; then the client sends -C datagrams of -S bytes
// (SEND with immediate: the sender's QPN), the server receives them and
// answers each sender with as many. Both print the same steps and end with
// "return status N" (0: success). Difference, named: a datagram that does
// not come within UDADDY_WAIT_MS ends the wait with an error (Linux's
// udaddy waits for ever, e.g. for one UD dropped before its receive was
// posted). -t (IP type of service) is accepted and ignored (rdma_cm here
// sets no TOS); -p takes only RDMA_PS_UDP (0x0111): there is no IPoIB.
#include "user.h"
#include "rdma_cm.h"
#include "rdma_cm_util.h"
#include "rdma_util.h"

#define UDADDY_PORT 7174              // udaddy's port
#define UDADDY_DEFAULT_COUNT 10       // -C (man page)
#define UDADDY_DEFAULT_SIZE 100       // -S (man page)
#define UDADDY_MAX_CONN 16            // -c: at most this many ids (a listener's backlog is the CM's)
#define UDADDY_WAIT_MS 10000          // the longest wait for a CM event or a datagram
#define UDADDY_MAX_COUNT 1024         // -C: receives posted at once (the QP's receive queue)
#define UDADDY_MAX_SIZE 4096          // -S: a UD message fits one packet (the largest path MTU);
                                      // above the port's MTU the send completes in error

struct opts {
  uint32_t server_ip, bind_ip;        // host order; server_ip 0: we are the server
  int conns, count, size;
};

// One UD "connection": its id (with its QP), buffers and the peer.
struct node {
  struct rdma_cm_id *id;
  struct ibv_mr *mr;
  uint8_t *buf;                       // count receive slots (GRH + size), then one send buffer
  struct ibv_ah *ah;
  uint32_t remote_qpn, remote_qkey;
  int connected;
};

static struct opts o;
static struct node nodes[UDADDY_MAX_CONN];
static struct rdma_event_channel *chan;

static int slot_len(void) { return RDMAU_GRH + o.size; }

// The node's QP (UD, on the id), its buffers and every receive posted: 0 or -1.
static int node_init(struct node *n) {
  struct ibv_qp_init_attr a;
  memset(&a, 0, sizeof a);
  a.qp_type = IBV_QPT_UD;
  a.cap.max_send_wr = (uint32_t)o.count;
  a.cap.max_recv_wr = (uint32_t)o.count;
  a.cap.max_send_sge = a.cap.max_recv_sge = 1;
  if (rdma_create_qp(n->id, NULL, &a)) {
    printf("udaddy: failed to create qp: %s\n", strerror(errno));
    return -1;
  }
  uint32_t len = (uint32_t)(slot_len() * o.count + o.size);
  n->buf = calloc(1, len);
  n->mr = n->buf ? ibv_reg_mr(n->id->pd, n->buf, len, IBV_ACCESS_LOCAL_WRITE) : NULL;
  if (!n->mr) {
    printf("udaddy: failed to register memory: %s\n", strerror(errno ? errno : ENOMEM));
    return -1;
  }
  for (int i = 0; i < o.count; i++) {
    struct ibv_sge sge = { (uint64_t)(n->buf + (uint64_t)i * slot_len()), (uint32_t)slot_len(), n->mr->lkey };
    struct ibv_recv_wr wr = { .wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1 }, *bad;
    int err = ibv_post_recv(n->id->qp, &wr, &bad);
    if (err) {
      printf("udaddy: failed to post receive: %s\n", strerror(err));
      return -1;
    }
  }
  return 0;
}

// The peer from a UD event (param.ud): its address handle, QPN and Q_Key.
static int node_peer(struct node *n, const struct rdma_ud_param *ud) {
  struct ibv_ah_attr aa = ud->ah_attr;
  n->ah = ibv_create_ah(n->id->pd, &aa);
  if (!n->ah) {
    printf("udaddy: failure creating address handle: %s\n", strerror(errno));
    return -1;
  }
  n->remote_qpn = ud->qp_num;
  n->remote_qkey = ud->qkey;
  return 0;
}

static void node_destroy(struct node *n) {
  if (n->ah) ibv_destroy_ah(n->ah);
  if (n->mr) ibv_dereg_mr(n->mr);
  free(n->buf);
  if (n->id) rdma_destroy_ep(n->id);
  memset(n, 0, sizeof *n);
}

// count SENDs with immediate (our QPN, as Linux's udaddy) to the node's peer: 0 or -1.
static int post_sends(struct node *n) {
  uint8_t *tx = n->buf + (uint64_t)slot_len() * o.count;
  for (int i = 0; i < o.count; i++) {
    struct ibv_sge sge = { (uint64_t)tx, (uint32_t)o.size, n->mr->lkey };
    struct ibv_send_wr wr, *bad;
    memset(&wr, 0, sizeof wr);
    wr.wr_id = (uint64_t)i;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND_WITH_IMM;
    wr.imm_data = htonl(n->id->qp->qp_num);
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.ud.ah = n->ah;
    wr.wr.ud.remote_qpn = n->remote_qpn;
    wr.wr.ud.remote_qkey = n->remote_qkey;
    int err = ibv_post_send(n->id->qp, &wr, &bad);
    if (err) {
      printf("udaddy: failed to post send: %s\n", strerror(err));
      return -1;
    }
  }
  return 0;
}

// want completions on each connected node's CQ (recv: its receive CQ,
// else its send CQ), each successful; a receive names its sender (the
// server answers it): 0 or -1.
static int poll_cqs(int recv) {
  for (int c = 0; c < o.conns; c++) {
    struct node *n = &nodes[c];
    if (!n->connected) continue;
    for (int got = 0; got < o.count; got++) {
      struct ibv_wc wc;
      int r = rdmau_wait(recv ? n->id->recv_cq : n->id->send_cq, &wc, UDADDY_WAIT_MS);
      if (r <= 0) {
        printf("udaddy: no %s completion within %d ms (%d of %d on connection %d)\n",
               recv ? "receive" : "send", UDADDY_WAIT_MS, got, o.count, c);
        return -1;
      }
      if (wc.status != IBV_WC_SUCCESS) {
        printf("udaddy: %s completion error: %s\n", recv ? "receive" : "send",
               ibv_wc_status_str(wc.status));
        return -1;
      }
      if (recv && !n->remote_qpn) {
        n->remote_qpn = wc.src_qp;
        n->remote_qkey = RDMA_UDP_QKEY;
      }
    }
  }
  return 0;
}

// The next CM event within UDADDY_WAIT_MS (server: for ever), or NULL.
static struct rdma_cm_event *next_event(int forever) {
  struct rdma_cm_event *e;
  if (rdmax_get_cm_event_timeout(chan, &e, forever ? -1 : UDADDY_WAIT_MS) == 0) return e;
  printf("udaddy: no rdma_cm event within %d ms: %s\n", UDADDY_WAIT_MS, strerror(errno));
  return NULL;
}

static int event_error(const struct rdma_cm_event *e) {
  printf("udaddy: event: %s, error: %d\n", rdma_event_str(e->event), e->status);
  return -1;
}

// Server: o.conns SIDR_REQs, each answered after its receives are posted.
static int serve_connections(struct rdma_cm_id *listen) {
  for (int c = 0; c < o.conns;) {
    struct rdma_cm_event *e = next_event(1);
    if (!e) return -1;
    if (e->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
      int r = e->event == RDMA_CM_EVENT_ESTABLISHED ? 0 : event_error(e);
      rdma_ack_cm_event(e);
      if (r) return -1;
      continue;
    }
    struct node *n = &nodes[c];
    n->id = e->id;
    struct rdma_ud_param ud = e->param.ud;
    rdma_ack_cm_event(e);
    if (node_init(n) || node_peer(n, &ud)) {
      rdma_reject(n->id, NULL, 0);
      return -1;
    }
    struct rdma_conn_param cp;
    memset(&cp, 0, sizeof cp);
    if (rdma_accept(n->id, &cp)) {
      printf("udaddy: failure accepting: %s\n", strerror(errno));
      return -1;
    }
    n->connected = 1;
    c++;
  }
  (void)listen;
  return 0;
}

static int run_server(void) {
  struct rdma_cm_id *listen;
  if (rdma_create_id(chan, &listen, NULL, RDMA_PS_UDP)) {
    printf("udaddy: listen request failed: %s\n", strerror(errno));
    return -1;
  }
  struct sockaddr_in sin;
  rdmax_sockaddr(&sin, o.bind_ip, UDADDY_PORT);
  if (rdma_bind_addr(listen, (struct sockaddr *)&sin) || rdma_listen(listen, 0)) {
    printf("udaddy: bind or listen on port %d failed: %s\n", UDADDY_PORT, strerror(errno));
    rdma_destroy_id(listen);
    return -1;
  }
  printf("udaddy: starting server\n");           // listening: a client may come
  int r = serve_connections(listen);
  if (r == 0 && o.count) {
    printf("receiving data transfers\n");
    r = poll_cqs(1);
    if (r == 0) {
      printf("sending replies\n");
      for (int c = 0; c < o.conns && r == 0; c++) r = post_sends(&nodes[c]);
      if (r == 0) r = poll_cqs(0);
    }
    if (r == 0) printf("data transfers complete\n");
  }
  rdma_destroy_id(listen);
  return r;
}

// Client: each id through address and route resolution to its SIDR_REP.
static int connect_all(void) {
  struct sockaddr_in dst, src;
  rdmax_sockaddr(&dst, o.server_ip, UDADDY_PORT);
  rdmax_sockaddr(&src, o.bind_ip, 0);
  for (int c = 0; c < o.conns; c++) {
    if (rdma_create_id(chan, &nodes[c].id, &nodes[c], RDMA_PS_UDP) ||
        rdma_resolve_addr(nodes[c].id, o.bind_ip ? (struct sockaddr *)&src : NULL,
                          (struct sockaddr *)&dst, RDMAU_RESOLVE_MS)) {
      printf("udaddy: failure getting addr: %s\n", strerror(errno));
      return -1;
    }
  }
  for (int done = 0; done < o.conns;) {
    struct rdma_cm_event *e = next_event(0);
    if (!e) return -1;
    struct node *n = e->id->context;
    int r = 0;
    switch (e->event) {
    case RDMA_CM_EVENT_ADDR_RESOLVED:
      r = node_init(n) || rdma_resolve_route(n->id, RDMAU_RESOLVE_MS) ? -1 : 0;
      break;
    case RDMA_CM_EVENT_ROUTE_RESOLVED:
      if ((r = rdma_connect(n->id, NULL))) printf("udaddy: failure connecting: %s\n", strerror(errno));
      break;
    case RDMA_CM_EVENT_ESTABLISHED:
      r = node_peer(n, &e->param.ud);
      n->connected = r == 0;
      done++;
      break;
    default:
      r = event_error(e);
    }
    rdma_ack_cm_event(e);
    if (r) return -1;
  }
  return 0;
}

static int run_client(void) {
  printf("udaddy: starting client\n");
  printf("udaddy: connecting\n");
  int r = connect_all();
  if (r == 0 && o.count) {
    printf("initiating data transfers\n");
    for (int c = 0; c < o.conns && r == 0; c++) r = post_sends(&nodes[c]);
    if (r == 0) r = poll_cqs(0);
    if (r == 0) {
      printf("receiving data transfers\n");
      r = poll_cqs(1);
    }
    if (r == 0) printf("data transfers complete\n");
  }
  return r;
}

static void usage(void) {
  printf("usage: udaddy [-s server_address] [-b bind_address] [-c connections] [-C message_count]\n"
         "              [-S message_size] [-t tos] [-p port_space (0x0111: RDMA_PS_UDP)]\n");
  exit(1);
}

static uint32_t ip_arg(const char *s) {
  uint32_t ip;
  if (inet_pton(AF_INET, s, &ip) != 1) {
    printf("udaddy: %s: not an IPv4 address (numeric addresses only)\n", s);
    exit(1);
  }
  return ntohl(ip);
}

// n within [lo, hi], or exit with the range.
static int int_arg(int opt, const char *s, int lo, int hi) {
  char *end;
  long v = strtol(s, &end, 0);
  if (!*s || *end || v < lo || v > hi) {
    printf("udaddy: -%c %s: must be %d..%d\n", opt, s, lo, hi);
    exit(1);
  }
  return (int)v;
}

int main(int argc, char *argv[]) {
  int c;
  o = (struct opts){ .conns = 1, .count = UDADDY_DEFAULT_COUNT, .size = UDADDY_DEFAULT_SIZE };
  while ((c = getopt(argc, argv, "s:b:c:C:S:t:p:")) != -1) {
    switch (c) {
    case 's': o.server_ip = ip_arg(optarg); break;
    case 'b': o.bind_ip = ip_arg(optarg); break;
    case 'c': o.conns = int_arg(c, optarg, 1, UDADDY_MAX_CONN); break;
    case 'C': o.count = int_arg(c, optarg, 0, UDADDY_MAX_COUNT); break;
    case 'S': o.size = int_arg(c, optarg, 1, UDADDY_MAX_SIZE); break;
    case 't': int_arg(c, optarg, 0, 255); break;
    case 'p':
      if (int_arg(c, optarg, 0, 0xffff) != RDMA_PS_UDP) {
        printf("udaddy: -p %s: only RDMA_PS_UDP (0x0111) exists here\n", optarg);
        exit(1);
      }
      break;
    default: usage();
    }
  }
  if (optind != argc) usage();
  if (!(chan = rdma_create_event_channel())) {
    printf("udaddy: failed to create event channel: %s\n", strerror(errno));
    exit(1);
  }
  int r = o.server_ip ? run_client() : run_server();
  for (int i = 0; i < o.conns; i++) node_destroy(&nodes[i]);
  rdma_destroy_event_channel(chan);
  printf("test complete\n");
  printf("return status %d\n", r);
  exit(r ? 1 : 0);
}
