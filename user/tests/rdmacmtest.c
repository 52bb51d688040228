// rdmacmtest: the connection library (user/lib/rdmacm/rdma_cm.c, a client
// of the kernel's rdma_cm over the InfiniBand CM: kernel/rdma/cma.c) inside
// one guest: the CM MADs go from QP1 to QP1 of the same device, the RC
// frames through the RDMA loopback. Each connecting case forks a passive
// process (listens on PASSIVE_PORT, accepts, then SENDs one message); the
// case's own process is the active side, which connects and then waits for
// the passive side's message, never in an rdma_* call (the kernel's CM
// answers the peer whatever the application does):
//   connect_wait_cq       the active side waits in ibvx_wait_cq (rdmau_wait),
//   connect_cq_event      in a completion channel's ibv_get_cq_event,
//   connect_busy_poll     or in an ibv_poll_cq loop; then the passive side
//                         exits without rdma_disconnect: its exit DREQs the
//                         connection and the active side gets DISCONNECTED;
//                         the kernel's live ids are back where they were.
//   disconnect_active     rdma_disconnect by the active side: DISCONNECTED on
//                         both sides (the passive one waits for it).
//   sr_negotiation        selective repeat offered by both, by the active side
//                         only, by the passive side only: the QPs of both get
//                         it in the first case only [SR-NEG-1].
//   poll_queued_event     poll() on a CM event channel's fd: rdma_resolve_addr
//                         queues ADDR_RESOLVED in the kernel; poll(fd, POLLIN,
//                         10 s) must say POLLIN at once, and poll(fd, 0)
//                         nothing once it is taken.
//   connect_no_listener   an rdma_connect to a port nobody listens on: the
//                         peer's CM answers REJ at once; REJECTED with the
//                         IBTA reason 8 (invalid service ID, what Linux's
//                         rdma_cm reports), well inside one CM timeout.
//   ud_sidr               RDMA_PS_UDP: SIDR_REQ to a port nobody listens on
//                         (UNREACHABLE 1), rejected (UNREACHABLE 2), accepted
//                         (ESTABLISHED, param.ud's QPN and RDMA_UDP_QKEY), a
//                         datagram through param.ud's AH (rdma_post_ud_send) arrives.
// librdmacm's semantics that its own examples (rdma_server.c,
// rdma_client.c; docs/rdma.md) rely on, between two processes:
//   ep_getaddrinfo_passive_wildcard  RAI_PASSIVE with "0.0.0.0" or NULL is the
//                         wildcard; QP type RC and RDMA_PS_TCP by default;
//                         what rdma_cm cannot do is EINVAL.
//   ep_create_takes_ai_qp_type  rdma_create_ep on both sides with a zeroed
//                         qp_init_attr: the QPs take ai_qp_type (RC), the
//                         granted inline size is written back, an inline SEND
//                         each way; RDMA_OPTION_ID_ACK_TIMEOUT reaches the QP;
//                         rdma_notify(COMM_EST) once connected is EISCONN.
//   ep_get_request_bad_attr_einval  a listener's qp_init_attr the device
//                         refuses: rdma_get_request fails with EINVAL (not
//                         ENOMEM) and the active side is refused.
//   cm_options_devices_notify  rdma_set_option's librdmacm options,
//                         rdma_get_devices / rdma_free_devices, rdma_notify's
//                         errors.
// Usage: rdmacmtest [-q] [-l] [-x name]... [name...]   (user/tests/testrun.h)
#include "user.h"
#include "ibverbs.h"
#include "rdma_cm.h"
#include "rdma_verbs.h"
#include "rdma_util.h"
#include "rdma_sys.h"
#include "rdma_cm_util.h"
#include "testrun.h"

#define PASSIVE_PORT 18600
#define MSG "hello from the passive side"
#define MSG_LEN ((int)sizeof MSG)
#define WAIT_MS 10000            // far above a CM exchange on the loopback

enum wait_mode { WAIT_CQ, WAIT_EVENT, WAIT_BUSY };

static uint32_t own_ip;

// ---- the passive side: accept, then SEND MSG ----

static int passive_waits_disconnect;   // the passive side's rdma_disconnect is the peer's turn
static int passive_sr, active_sr;      // each side's offer of selective repeat (rdmax_transport.sr)

// The id's offer of selective repeat (the project's option), and whether
// its QP got it: the connection's QP statistics.
static int offer_sr(struct rdma_cm_id *id, int sr) {
  struct rdmax_transport xt = { .sr = (uint8_t)sr };
  return rdma_set_option(id, RDMAX_OPTION_XV6, RDMAX_OPTION_TRANSPORT, &xt, sizeof xt);
}

static int qp_sr(struct ibv_qp *qp) {
  struct rdma_qp_stats st;
  return rdma_qp_stats((int)qp->handle, &st) == 0 ? (int)st.sr : -1;
}

static void passive(int ready) {
  struct rdma_cm_id *listen, *id;
  if (rdmau_cm_listen(&listen, PASSIVE_PORT) < 0) exit(10);
  write(ready, "p", 1);
  if (rdma_get_request(listen, &id) < 0) exit(11);
  struct ibv_qp_init_attr attr = { .qp_type = IBV_QPT_RC,
                                   .cap = { .max_send_wr = 4, .max_recv_wr = 4,
                                            .max_send_sge = 1, .max_recv_sge = 1 } };
  if (rdma_create_qp(id, NULL, &attr) < 0) exit(12);
  static char msg[MSG_LEN] = MSG;
  struct ibv_mr *mr = ibv_reg_mr(id->pd, msg, MSG_LEN, IBV_ACCESS_LOCAL_WRITE);
  if (!mr) exit(13);
  if (offer_sr(id, passive_sr) < 0 || rdma_accept(id, NULL) < 0) exit(14);
  if (qp_sr(id->qp) != (passive_sr && active_sr)) exit(18);   // [SR-NEG-1]
  struct ibv_sge sge = { (uint64_t)msg, MSG_LEN, mr->lkey };
  struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
                            .send_flags = IBV_SEND_SIGNALED }, *bad;
  struct ibv_wc wc;
  if (ibv_post_send(id->qp, &wr, &bad)) exit(15);
  if (rdmau_wait(id->send_cq, &wc, WAIT_MS) != 1 || wc.status != IBV_WC_SUCCESS) exit(16);
  if (passive_waits_disconnect && rdmau_cm_wait_disconnect(id, WAIT_MS) < 0) exit(17);
  exit(0);                         // with the id still connected: the exit DREQs it
}

// ---- the active side ----

// One receive completion on cq as the mode waits for it; 1 if it came.
static int wait_recv(enum wait_mode mode, struct ibv_cq *cq, struct ibv_comp_channel *ch,
                     struct ibv_wc *wc) {
  if (mode == WAIT_CQ) return rdmau_wait(cq, wc, WAIT_MS);
  if (mode == WAIT_EVENT) {
    struct ibv_cq *ev_cq;
    void *ev_ctx;
    if (ibv_get_cq_event(ch, &ev_cq, &ev_ctx)) return 0;   // blocks: the runner's watchdog bounds it
    ibv_ack_cq_events(ev_cq, 1);
    return ibv_poll_cq(cq, 1, wc);
  }
  uint64_t end = clock_ns() + (uint64_t)WAIT_MS * 1000000ull;
  int n;
  while ((n = ibv_poll_cq(cq, 1, wc)) == 0 && clock_ns() < end)
    ;
  return n;
}

// Forks fn's process and waits for it to say it is ready.
static int start(void (*fn)(int ready)) {
  int ready[2], pid;
  if (pipe(ready) < 0 || (pid = fork()) < 0) tr_fail(__LINE__, "pipe or fork");
  if (pid == 0) {
    close(ready[0]);
    fn(ready[1]);
  }
  close(ready[1]);
  char c;
  if (read(ready[0], &c, 1) != 1) tr_fail(__LINE__, "child %d did not start", pid);
  close(ready[0]);
  return pid;
}

static void own_address(void);

// The passive process ppid ends with status 0 (codes: what its others mean).
static void passive_done(int ppid, const char *codes) {
  int pstatus = -1;
  TR_ASSERT(wait(&pstatus) == ppid);
  TR_CHECK(pstatus == 0, "passive side exited %d (%s)", pstatus, codes);
}

static unsigned long long live_ids(void) {
  struct rdma_dev_stats d;
  return rdma_dev_stats(&d) == 0 ? d.cm_live_ids : ~0ull;
}

// Connect, receive the passive side's message as mode waits for it; then
// the connection ends: the passive side's exit (active_disconnects 0) or
// our rdma_disconnect, and DISCONNECTED reaches the side that did not.
static void run_case(enum wait_mode mode, int active_disconnects) {
  own_address();
  unsigned long long ids0 = live_ids();
  passive_waits_disconnect = active_disconnects;
  int ppid = start(passive);

  struct rdma_cm_id *id;
  TR_CHECK(rdmau_cm_resolve(&id, own_ip, PASSIVE_PORT) == 0, "resolve: errno %d", errno);
  struct ibv_pd *pd = ibv_alloc_pd(id->verbs);
  struct ibv_comp_channel *ch = mode == WAIT_EVENT ? ibv_create_comp_channel(id->verbs) : NULL;
  struct ibv_cq *cq = ibv_create_cq(id->verbs, 8, NULL, ch, 0);
  TR_ASSERT(pd && cq && (mode != WAIT_EVENT || ch));
  struct ibv_qp_init_attr attr = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
                                   .cap = { .max_send_wr = 4, .max_recv_wr = 4,
                                            .max_send_sge = 1, .max_recv_sge = 1 } };
  TR_ASSERT(rdma_create_qp(id, pd, &attr) == 0);
  static char got[MSG_LEN];
  struct ibv_mr *mr = ibv_reg_mr(pd, got, MSG_LEN, IBV_ACCESS_LOCAL_WRITE);
  struct ibv_sge sge = { (uint64_t)got, MSG_LEN, mr ? mr->lkey : 0 };
  struct ibv_recv_wr rwr = { .sg_list = &sge, .num_sge = 1 }, *bad;
  TR_ASSERT(mr && ibv_post_recv(id->qp, &rwr, &bad) == 0);
  if (ch) TR_ASSERT(ibv_req_notify_cq(cq, 0) == 0);
  TR_ASSERT(offer_sr(id, active_sr) == 0);
  TR_CHECK(rdma_connect(id, NULL) == 0, "rdma_connect: errno %d", errno);
  TR_CHECK(id->event && id->event->event == RDMA_CM_EVENT_ESTABLISHED, "no ESTABLISHED");
  TR_CHECK(qp_sr(id->qp) == (active_sr && passive_sr), "active QP sr %d, offers: active %d passive %d",
           qp_sr(id->qp), active_sr, passive_sr);

  struct ibv_wc wc;
  int n = wait_recv(mode, cq, ch, &wc);
  TR_CHECK(n == 1 && wc.status == IBV_WC_SUCCESS && memcmp(got, MSG, MSG_LEN) == 0,
           "no message: %d completions, status %d", n, n == 1 ? wc.status : -1);
  if (active_disconnects) TR_CHECK(rdma_disconnect(id) == 0, "rdma_disconnect: errno %d", errno);
  else TR_CHECK(rdmau_cm_wait_disconnect(id, WAIT_MS) == 0, "no DISCONNECTED after the peer's exit");
  passive_done(ppid, "14: rdma_accept, 17: no DISCONNECTED, 18: its QP's SR is not what both offered");
  ibv_dereg_mr(mr);
  rdma_destroy_qp(id);
  rdma_destroy_id(id);
  ibv_destroy_cq(cq);
  if (ch) ibv_destroy_comp_channel(ch);
  ibv_dealloc_pd(pd);
  TR_CHECK(live_ids() == ids0, "the kernel's live CM ids %lu, before %lu", live_ids(), ids0);
}

// ---- private data: each message's whole room ----

#define PD_PORT 18612
static void pd_fill(uint8_t *b, int n, int seed) { for (int i = 0; i < n; i++) b[i] = (uint8_t)(seed + 7 * i); }

// Two requests: the first accepted with a REP's whole private data, the
// second rejected with a REJ's; the request's own must arrive whole.
static void pd_passive(int ready) {
  struct rdma_cm_id *listen, *id;
  static uint8_t want[RDMA_CM_PRIVATE_MAX], rep[RDMA_CM_REP_PRIVATE_MAX], rej[RDMA_CM_REJ_PRIVATE_MAX];
  pd_fill(want, sizeof want, 1);
  pd_fill(rep, sizeof rep, 2);
  pd_fill(rej, sizeof rej, 3);
  if (rdmau_cm_listen(&listen, PD_PORT) < 0) exit(10);
  write(ready, "p", 1);
  for (int k = 0; k < 2; k++) {
    if (rdma_get_request(listen, &id) < 0) exit(11);
    const struct rdma_conn_param *got = &id->event->param.conn;
    if (got->private_data_len < sizeof want || memcmp(got->private_data, want, sizeof want)) exit(12);
    struct ibv_qp_init_attr attr = { .qp_type = IBV_QPT_RC,
                                     .cap = { .max_send_wr = 1, .max_recv_wr = 1,
                                              .max_send_sge = 1, .max_recv_sge = 1 } };
    struct rdma_conn_param cp = { .private_data = rep, .private_data_len = sizeof rep };
    if (k == 0 && (rdma_create_qp(id, NULL, &attr) < 0 || rdma_accept(id, &cp) < 0)) exit(13);
    if (k == 1 && rdma_reject(id, rej, sizeof rej) < 0) exit(14);
    if (k == 0 && rdmau_cm_wait_disconnect(id, WAIT_MS) < 0) exit(15);
  }
  exit(0);
}

// One connect with a REQ's whole private data: 0 and the REP's, or -1 and
// the REJ's, in *got (id->event's).
static int pd_connect(struct rdma_cm_id **id, const struct rdma_conn_param **got) {
  static uint8_t req[RDMA_CM_PRIVATE_MAX];
  pd_fill(req, sizeof req, 1);
  if (rdmau_cm_resolve(id, own_ip, PD_PORT) < 0) return -2;
  struct ibv_qp_init_attr attr = { .qp_type = IBV_QPT_RC,
                                   .cap = { .max_send_wr = 1, .max_recv_wr = 1,
                                            .max_send_sge = 1, .max_recv_sge = 1 } };
  if (rdma_create_qp(*id, NULL, &attr) < 0) return -2;
  struct rdma_conn_param cp = { .private_data = req, .private_data_len = sizeof req };
  int r = rdma_connect(*id, &cp);
  *got = (*id)->event ? &(*id)->event->param.conn : NULL;
  return r;
}

static int pd_is(const struct rdma_conn_param *p, int n, int seed) {
  static uint8_t b[UCMA_PRIVATE_MAX];
  pd_fill(b, n, seed);
  return p && p->private_data_len >= n && memcmp(p->private_data, b, n) == 0;
}

static void t_private_data_room(void) {
  own_address();
  int ppid = start(pd_passive);
  struct rdma_cm_id *id;
  const struct rdma_conn_param *got;
  uint8_t big[RDMA_CM_PRIVATE_MAX + 1] = { 0 };
  struct rdma_conn_param over = { .private_data = big, .private_data_len = sizeof big };
  TR_CHECK(pd_connect(&id, &got) == 0, "connect: errno %d", errno);
  TR_CHECK(pd_is(got, RDMA_CM_REP_PRIVATE_MAX, 2), "the REP's %d bytes did not arrive whole (%d)",
           RDMA_CM_REP_PRIVATE_MAX, got ? got->private_data_len : -1);
  TR_CHECK(rdma_disconnect(id) == 0, "rdma_disconnect: errno %d", errno);
  rdma_destroy_qp(id);
  rdma_destroy_id(id);
  TR_CHECK(pd_connect(&id, &got) == -1 && errno == ECONNREFUSED, "second connect not refused: errno %d", errno);
  TR_CHECK(id->event && id->event->event == RDMA_CM_EVENT_REJECTED, "no REJECTED");
  TR_CHECK(pd_is(got, RDMA_CM_REJ_PRIVATE_MAX, 3), "the REJ's %d bytes did not arrive whole",
           RDMA_CM_REJ_PRIVATE_MAX);
  TR_CHECK(rdma_connect(id, &over) == -1 && errno == EINVAL, "a REQ's room + 1 accepted");
  rdma_destroy_qp(id);
  rdma_destroy_id(id);
  passive_done(ppid, "12: REQ's private data, 13: accept, 14: reject, 15: no DISCONNECTED");
}

// ---- librdmacm's endpoint calls (rdma_getaddrinfo, rdma_create_ep) ----

// Each case its own port: a failed case's passive process may linger.
#define EP_PORT_GOOD 18610
#define EP_PORT_BAD  18611
#define EP_INLINE 16             // what rdma_server.c / rdma_client.c ask for
#define EP_TIMEOUT 14            // RDMA_OPTION_ID_ACK_TIMEOUT's value in the case

static void t_ep_getaddrinfo_passive_wildcard(void) {
  struct rdma_addrinfo hints = { .ai_flags = RAI_PASSIVE, .ai_port_space = RDMA_PS_TCP }, *res;
  const char *nodes[] = { "0.0.0.0", NULL };
  for (int i = 0; i < 2; i++) {
    TR_ASSERT(rdma_getaddrinfo(nodes[i], "7471", &hints, &res) == 0);
    struct sockaddr_in *sin = (struct sockaddr_in *)res->ai_src_addr;
    TR_CHECK(sin && sin->sin_family == AF_INET && sin->sin_addr.s_addr == 0 &&
             sin->sin_port == htons(7471) && res->ai_dst_addr == NULL, "node %s: not the wildcard",
             nodes[i] ? nodes[i] : "NULL");
    TR_CHECK(res->ai_qp_type == IBV_QPT_RC && res->ai_port_space == RDMA_PS_TCP, "qp_type %d ps 0x%x",
             res->ai_qp_type, res->ai_port_space);
    rdma_freeaddrinfo(res);
  }
  struct rdma_addrinfo bad_hints[] = {
    { .ai_flags = RAI_PASSIVE, .ai_family = AF_INET6 },
    { .ai_flags = RAI_PASSIVE, .ai_qp_type = IBV_QPT_UD },
    { .ai_flags = RAI_PASSIVE, .ai_port_space = RDMA_PS_UDP, .ai_qp_type = IBV_QPT_RC },
  };
  for (int i = 0; i < 3; i++) {
    errno = 0;
    TR_CHECK(rdma_getaddrinfo(NULL, "7471", &bad_hints[i], &res) == -1 && errno == EINVAL,
             "hints %d accepted (errno %d)", i, errno);
  }
  // RDMA_PS_UDP alone means UD, as librdmacm derives the QP type.
  struct rdma_addrinfo ud_hints = { .ai_flags = RAI_PASSIVE, .ai_port_space = RDMA_PS_UDP };
  TR_ASSERT(rdma_getaddrinfo(NULL, "7471", &ud_hints, &res) == 0);
  TR_CHECK(res->ai_qp_type == IBV_QPT_UD, "RDMA_PS_UDP gave qp_type %d", res->ai_qp_type);
  rdma_freeaddrinfo(res);
  const char *bad[][2] = { { "10.0.0", "1" }, { "host", "1" }, { "10.0.0.1", "x" },
                           { "10.0.0.1", "70000" }, { "10.0.0.1", "" }, { NULL, "1" } };
  for (int i = 0; i < 6; i++) {
    errno = 0;
    TR_CHECK(rdma_getaddrinfo(bad[i][0], bad[i][1], NULL, &res) == -1 && errno == EINVAL,
             "\"%s\" \"%s\" accepted (errno %d)", bad[i][0] ? bad[i][0] : "NULL", bad[i][1], errno);
  }
}

// rdma_server.c's steps at `port` with a zeroed qp_init_attr; exits 0, or
// the step that failed. A listener attribute with an inline size the
// device refuses makes rdma_get_request fail: the exit status is then its
// errno + 100.
static void ep_passive(int ready, int port_num, uint32_t inline_size) {
  struct rdma_addrinfo hints = { .ai_flags = RAI_PASSIVE, .ai_port_space = RDMA_PS_TCP }, *res;
  struct rdma_cm_id *listen, *id;
  char port[8];
  snprintf(port, sizeof port, "%d", port_num);
  if (rdma_getaddrinfo("0.0.0.0", port, &hints, &res)) exit(20);
  struct ibv_qp_init_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.cap.max_send_wr = attr.cap.max_recv_wr = 1;
  attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
  attr.cap.max_inline_data = inline_size;
  attr.sq_sig_all = 1;
  if (rdma_create_ep(&listen, res, NULL, &attr) || rdma_listen(listen, 0)) exit(21);
  write(ready, "p", 1);
  if (rdma_get_request(listen, &id)) exit(100 + errno);
  if (!id->qp) exit(22);
  static uint8_t msg[EP_INLINE];
  struct ibv_mr *mr = rdma_reg_msgs(id, msg, sizeof msg);
  struct ibv_wc wc;
  if (!mr || rdma_post_recv(id, NULL, msg, sizeof msg, mr) || rdma_accept(id, NULL)) exit(23);
  if (rdma_notify(id, IBV_EVENT_COMM_EST) != -1 || errno != EISCONN) exit(24);
  if (rdma_get_recv_comp(id, &wc) != 1 || wc.status != IBV_WC_SUCCESS) exit(25);
  if (rdma_post_send(id, NULL, msg, sizeof msg, NULL, IBV_SEND_INLINE) ||
      rdma_get_send_comp(id, &wc) != 1 || wc.status != IBV_WC_SUCCESS)
    exit(26);
  rdma_disconnect(id);
  rdma_dereg_mr(mr);
  rdma_destroy_ep(id);
  rdma_destroy_ep(listen);
  rdma_freeaddrinfo(res);
  exit(0);
}
static void ep_passive_good(int ready) { ep_passive(ready, EP_PORT_GOOD, EP_INLINE); }
static void ep_passive_bad(int ready) { ep_passive(ready, EP_PORT_BAD, 1u << 30); }

// Starts passive_fn's process (listening at port_num), then rdma_client.c's
// steps: rdma_create_ep with a zeroed qp_init_attr; *ppid is the child.
static struct rdma_cm_id *ep_active(void (*passive_fn)(int ready), int port_num, int *ppid,
                                    struct ibv_qp_init_attr *attr, struct rdma_addrinfo **res) {
  own_address();
  *ppid = start(passive_fn);
  char node[INET_ADDRSTRLEN], port[8];
  uint32_t ip_be = htonl(own_ip);
  struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP };
  struct rdma_cm_id *id = NULL;
  inet_ntop(AF_INET, &ip_be, node, sizeof node);
  snprintf(port, sizeof port, "%d", port_num);
  TR_ASSERT(rdma_getaddrinfo(node, port, &hints, res) == 0);
  memset(attr, 0, sizeof *attr);
  attr->cap.max_send_wr = attr->cap.max_recv_wr = 1;
  attr->cap.max_send_sge = attr->cap.max_recv_sge = 1;
  attr->cap.max_inline_data = EP_INLINE;
  attr->sq_sig_all = 1;
  TR_CHECK(rdma_create_ep(&id, *res, NULL, attr) == 0, "rdma_create_ep: errno %d", errno);
  return id;
}

// This guest's address in own_ip.
static void own_address(void) {
  struct net_info ni;
  TR_ASSERT(netinfo(&ni) == 0 && ni.present && ni.ip);
  own_ip = ni.ip;
}

static void t_ep_create_takes_ai_qp_type(void) {
  int ppid, status = -1;
  struct ibv_qp_init_attr attr;
  struct rdma_addrinfo *res;
  struct rdma_cm_id *id = ep_active(ep_passive_good, EP_PORT_GOOD, &ppid, &attr, &res);
  TR_ASSERT(id && id->qp);
  TR_CHECK(attr.qp_type == IBV_QPT_RC && attr.cap.max_inline_data >= EP_INLINE,
           "qp_init_attr after rdma_create_ep: qp_type %d max_inline_data %u", attr.qp_type,
           attr.cap.max_inline_data);
  uint8_t t = EP_TIMEOUT;
  TR_ASSERT(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &t, sizeof t) == 0);
  static uint8_t msg[EP_INLINE] = "from the client";
  struct ibv_mr *mr = rdma_reg_msgs(id, msg, sizeof msg);
  struct ibv_wc wc;
  TR_ASSERT(mr && rdma_post_recv(id, NULL, msg, sizeof msg, mr) == 0);
  TR_CHECK(rdma_connect(id, NULL) == 0, "rdma_connect: errno %d", errno);
  struct ibv_qp_attr qa;
  struct ibv_qp_init_attr qia;
  TR_CHECK(ibv_query_qp(id->qp, &qa, IBV_QP_TIMEOUT, &qia) == 0 && qa.timeout == EP_TIMEOUT,
           "ACK timeout %d, want %d", qa.timeout, EP_TIMEOUT);
  TR_CHECK(rdma_post_send(id, NULL, msg, sizeof msg, NULL, IBV_SEND_INLINE) == 0 &&
           rdma_get_send_comp(id, &wc) == 1 && wc.status == IBV_WC_SUCCESS, "inline send");
  TR_CHECK(rdma_get_recv_comp(id, &wc) == 1 && wc.status == IBV_WC_SUCCESS, "receive");
  TR_ASSERT(wait(&status) == ppid);
  TR_CHECK(status == 0, "passive side exited %d (rdma_server.c's steps; 1xx: get_request errno)",
           status);
  rdma_disconnect(id);
  rdma_dereg_mr(mr);
  rdma_destroy_ep(id);
  rdma_freeaddrinfo(res);
}

static void t_ep_get_request_bad_attr_einval(void) {
  int ppid, status = -1;
  struct ibv_qp_init_attr attr;
  struct rdma_addrinfo *res;
  struct rdma_cm_id *id = ep_active(ep_passive_bad, EP_PORT_BAD, &ppid, &attr, &res);
  TR_ASSERT(id);
  errno = 0;
  TR_CHECK(rdma_connect(id, NULL) == -1 && errno == ECONNREFUSED, "rdma_connect: errno %d", errno);
  TR_ASSERT(wait(&status) == ppid);
  TR_CHECK(status == 100 + EINVAL, "passive side exited %d: want rdma_get_request's EINVAL (%d)",
           status, 100 + EINVAL);
  rdma_destroy_ep(id);
  rdma_freeaddrinfo(res);
}

static void t_cm_options_devices_notify(void) {
  struct rdma_cm_id *id;
  TR_ASSERT(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP) == 0);
  uint8_t t = EP_TIMEOUT, big = RDMAX_MAX_ACK_TIMEOUT + 1;
  int one = 1;
  TR_CHECK(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &t, sizeof t) == 0 &&
           rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &one, sizeof one) == 0 &&
           rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &one, sizeof one) == 0,
           "supported options: errno %d", errno);
  struct { int level, name; void *val; size_t len; int err; } bad[] = {
    { RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &big, 1, EINVAL },
    { RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &one, sizeof one, EINVAL },
    { RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &t, 1, EINVAL },
    { RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &t, 1, ENOSYS },
    { RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, &t, 1, ENOSYS },
    { RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, NULL, 1, EINVAL },
  };
  for (int i = 0; i < (int)(sizeof bad / sizeof bad[0]); i++) {
    errno = 0;
    TR_CHECK(rdma_set_option(id, bad[i].level, bad[i].name, bad[i].val, bad[i].len) == -1 &&
             errno == bad[i].err, "option %d: errno %d, want %d", i, errno, bad[i].err);
  }
  errno = 0;
  TR_CHECK(rdma_notify(id, IBV_EVENT_COMM_EST) == -1 && errno == EINVAL, "notify, not connecting");
  errno = 0;
  TR_CHECK(rdma_notify(id, IBV_EVENT_QP_FATAL) == -1 && errno == EINVAL, "notify, another event");
  int n = -1;
  struct ibv_context **devs = rdma_get_devices(&n);
  TR_CHECK(devs && n == 1 && devs[0] && devs[1] == NULL, "rdma_get_devices: %d", n);
  struct ibv_port_attr pa;
  TR_CHECK(devs && devs[0] && ibv_query_port(devs[0], 1, &pa) == 0 && pa.state == IBV_PORT_ACTIVE,
           "the device's port");
  rdma_free_devices(devs);
  TR_ASSERT(rdma_destroy_id(id) == 0);
}

static void t_connect_wait_cq(void) { run_case(WAIT_CQ, 0); }
static void t_connect_cq_event(void) { run_case(WAIT_EVENT, 0); }
static void t_connect_busy_poll(void) { run_case(WAIT_BUSY, 0); }
static void t_disconnect_active(void) { run_case(WAIT_CQ, 1); }

// Selective repeat only when both sides offered it (xv6 caps in the REQ's
// and REP's reserved bits), never with a side that did not [SR-NEG-1].
static void t_sr_negotiation(void) {
  static const int offers[][2] = { { 1, 1 }, { 1, 0 }, { 0, 1 } };
  for (int i = 0; i < 3; i++) {
    active_sr = offers[i][0];
    passive_sr = offers[i][1];
    run_case(WAIT_CQ, 0);
  }
  active_sr = passive_sr = 0;
}

// ---- poll() readiness of a CM event channel ----

#define POLL_LONG_MS 10000
#define CM_TIMEOUT_MS 268           // one REQ's wait for an answer (kernel/rdma/cma.c: 4.096 us << 16)
#define NOBODY_PORT 18602           // no process listens on it

// Milliseconds one poll(fd, POLLIN, timeout_ms) took; *revents its answer.
static int timed_poll(int fd, int timeout_ms, int *ret, short *revents) {
  struct pollfd pf = { fd, POLLIN, 0 };
  uint64_t t0 = clock_ns();
  *ret = poll(&pf, 1, timeout_ms);
  *revents = pf.revents;
  return (int)((clock_ns() - t0) / 1000000);
}

// The next event of ch, which must be want (taken without waiting).
static void take_event(struct rdma_event_channel *ch, enum rdma_cm_event_type want) {
  struct rdma_cm_event *e;
  TR_ASSERT(rdmax_get_cm_event_timeout(ch, &e, 0) == 0);
  TR_CHECK(e->event == want, "event %s, want %s", rdma_event_str(e->event), rdma_event_str(want));
  rdma_ack_cm_event(e);
}

// A new channel with one id whose address (ours, port) is being resolved:
// ADDR_RESOLVED is queued in the kernel soon after this returns.
static struct rdma_event_channel *resolving_id(struct rdma_cm_id **id, int port) {
  struct net_info ni;
  TR_ASSERT(netinfo(&ni) == 0 && ni.present && ni.ip);
  struct rdma_event_channel *ch = rdma_create_event_channel();
  TR_ASSERT(ch && rdma_create_id(ch, id, NULL, RDMA_PS_TCP) == 0);
  struct sockaddr_in sin;
  rdmax_sockaddr(&sin, ni.ip, (uint16_t)port);
  TR_ASSERT(rdma_resolve_addr(*id, NULL, (struct sockaddr *)&sin, 2000) == 0);
  return ch;
}

static void t_poll_queued_event(void) {
  struct rdma_cm_id *id;
  struct rdma_event_channel *ch = resolving_id(&id, PASSIVE_PORT);
  int r;
  short rev;
  int ms = timed_poll(ch->fd, POLL_LONG_MS, &r, &rev);
  TR_CHECK(r == 1 && (rev & POLLIN) && ms < POLL_LONG_MS / 10,
           "poll with ADDR_RESOLVED queued: %d, revents 0x%x after %d ms (timeout %d)", r, rev, ms,
           POLL_LONG_MS);
  take_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
  ms = timed_poll(ch->fd, 0, &r, &rev);
  TR_CHECK(r == 0 && rev == 0, "poll with nothing queued: %d, revents 0x%x", r, rev);
  rdma_destroy_id(id);
  rdma_destroy_event_channel(ch);
}

static void t_connect_no_listener(void) {
  struct rdma_cm_id *id;
  struct rdma_event_channel *ch = resolving_id(&id, NOBODY_PORT);
  int r;
  short rev;
  TR_ASSERT(timed_poll(ch->fd, POLL_LONG_MS, &r, &rev) < POLL_LONG_MS && r == 1);
  take_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
  TR_ASSERT(rdma_resolve_route(id, 2000) == 0);
  TR_ASSERT(timed_poll(ch->fd, POLL_LONG_MS, &r, &rev) < POLL_LONG_MS && r == 1);
  take_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
  struct ibv_pd *pd = ibv_alloc_pd(id->verbs);
  struct ibv_cq *cq = pd ? ibv_create_cq(id->verbs, 4, NULL, NULL, 0) : NULL;
  struct ibv_qp_init_attr attr = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
                                   .cap = { .max_send_wr = 1, .max_recv_wr = 1,
                                            .max_send_sge = 1, .max_recv_sge = 1 } };
  TR_ASSERT(cq && rdma_create_qp(id, pd, &attr) == 0);
  TR_ASSERT(rdma_connect(id, NULL) == 0);
  int ms = timed_poll(ch->fd, POLL_LONG_MS, &r, &rev);
  TR_CHECK(r == 1 && (rev & POLLIN) && ms < CM_TIMEOUT_MS,
           "poll after a REQ to a port nobody listens on: %d, revents 0x%x after %d ms", r, rev, ms);
  struct rdma_cm_event *e;
  TR_ASSERT(rdmax_get_cm_event_timeout(ch, &e, 0) == 0);
  TR_CHECK(e->event == RDMA_CM_EVENT_REJECTED && e->status == IBCM_REJ_INVALID_SERVICE_ID,
           "event %s status %d, want REJECTED %d", rdma_event_str(e->event), e->status,
           IBCM_REJ_INVALID_SERVICE_ID);
  rdma_ack_cm_event(e);
  rdma_destroy_qp(id);
  rdma_destroy_id(id);
  ibv_destroy_cq(cq);
  ibv_dealloc_pd(pd);
  rdma_destroy_event_channel(ch);
}

// ---- UD through rdma_cm (RDMA_PS_UDP, SIDR) [IBCM-CMA-5] ----

#define UD_PORT 18620
#define UD_REJECT "reject me"
#define UD_ACCEPT "accept me"
#define UD_LEN ((int)sizeof UD_ACCEPT)     // both texts, with their NUL

static struct ibv_qp_init_attr ud_attr(void) {
  return (struct ibv_qp_init_attr){ .qp_type = IBV_QPT_UD,
                                    .cap = { .max_send_wr = 2, .max_recv_wr = 2,
                                             .max_send_sge = 1, .max_recv_sge = 1 } };
}

// A PS_UDP listener's next CONNECT_REQUEST with private data want (its
// param.ud: a path to us, no QPN): the new id, or exit(code).
static struct rdma_cm_id *ud_request(struct rdma_event_channel *ch, const char *want, int code) {
  struct rdma_cm_event *e;
  if (rdmax_get_cm_event_timeout(ch, &e, WAIT_MS) < 0 || e->event != RDMA_CM_EVENT_CONNECT_REQUEST) exit(code);
  struct rdma_ud_param *ud = &e->param.ud;
  struct rdma_cm_id *id = e->id;
  int ok = ud->private_data_len >= UD_LEN && memcmp(ud->private_data, want, UD_LEN) == 0 &&
           ud->ah_attr.is_global && ud->qp_num == 0 && id->qp_type == IBV_QPT_UD;
  rdma_ack_cm_event(e);
  if (!ok) exit(code + 1);
  return id;
}

// Rejects the first SIDR_REQ, accepts the second with a UD QP, then waits
// for one datagram on it.
static void ud_passive(int ready) {
  struct rdma_event_channel *ch = rdma_create_event_channel();
  struct rdma_cm_id *listen;
  struct sockaddr_in sin;
  rdmax_sockaddr(&sin, 0, UD_PORT);
  if (!ch || rdma_create_id(ch, &listen, NULL, RDMA_PS_UDP) || rdma_bind_addr(listen, (struct sockaddr *)&sin) ||
      rdma_listen(listen, 2))
    exit(30);
  write(ready, "p", 1);
  if (rdma_reject(ud_request(ch, UD_REJECT, 31), NULL, 0)) exit(33);
  struct rdma_cm_id *id = ud_request(ch, UD_ACCEPT, 34);
  struct ibv_qp_init_attr attr = ud_attr();
  static uint8_t buf[RDMAU_GRH + UD_LEN];
  if (rdma_create_qp(id, NULL, &attr)) exit(36);
  struct ibv_mr *mr = ibv_reg_mr(id->pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
  if (!mr || rdma_post_recv(id, NULL, buf, sizeof buf, mr) || rdma_accept(id, NULL)) exit(37);
  struct ibv_wc wc;
  if (rdmau_wait(id->recv_cq, &wc, WAIT_MS) != 1 || wc.status != IBV_WC_SUCCESS ||
      memcmp(buf + RDMAU_GRH, UD_ACCEPT, UD_LEN) != 0)
    exit(38);
  exit(0);
}

// A synchronous PS_UDP id with a UD QP, resolved towards our own address
// and port, its rdma_connect's result with private data priv.
static int ud_connect(struct rdma_cm_id **id, int port, const char *priv) {
  struct sockaddr_in dst;
  rdmax_sockaddr(&dst, own_ip, (uint16_t)port);
  struct ibv_qp_init_attr attr = ud_attr();
  TR_ASSERT(rdma_create_id(NULL, id, NULL, RDMA_PS_UDP) == 0);
  TR_ASSERT(rdma_resolve_addr(*id, NULL, (struct sockaddr *)&dst, 2000) == 0);
  TR_ASSERT(rdma_resolve_route(*id, 2000) == 0);
  TR_ASSERT(rdma_create_qp(*id, NULL, &attr) == 0);
  struct ibv_qp_attr qa;
  struct ibv_qp_init_attr ia;
  TR_CHECK(ibv_query_qp((*id)->qp, &qa, IBV_QP_STATE | IBV_QP_QKEY, &ia) == 0 && qa.qp_state == IBV_QPS_RTS &&
           qa.qkey == RDMA_UDP_QKEY, "UD QP state %d qkey 0x%x, want RTS 0x%x", qa.qp_state, qa.qkey,
           RDMA_UDP_QKEY);
  struct rdma_conn_param cp = { .private_data = priv, .private_data_len = UD_LEN };
  return rdma_connect(*id, &cp);
}

// The event a failed synchronous connect left on id: UNREACHABLE with status.
static void ud_unreachable(struct rdma_cm_id *id, int status) {
  TR_CHECK(id->event && id->event->event == RDMA_CM_EVENT_UNREACHABLE && id->event->status == status,
           "event %s status %d, want UNREACHABLE %d", id->event ? rdma_event_str(id->event->event) : "none",
           id->event ? id->event->status : 0, status);
  rdma_destroy_ep(id);
}

// SIDR through rdma_cm in both roles: no listener is UNREACHABLE 1, a
// rejected SIDR_REQ UNREACHABLE 2 [IBCM-SIDR-2]; an accepted one is
// ESTABLISHED with the passive QP's number and RDMA_UDP_QKEY, and a
// datagram sent with param.ud's AH, QPN and Q_Key arrives.
static void t_ud_sidr(void) {
  struct rdma_cm_id *id;
  own_address();
  TR_CHECK(ud_connect(&id, NOBODY_PORT, UD_ACCEPT) == -1, "a SIDR_REQ nobody listens for connected");
  ud_unreachable(id, IBCM_SIDR_UNSUPPORTED);
  int ppid = start(ud_passive);
  TR_CHECK(ud_connect(&id, UD_PORT, UD_REJECT) == -1, "a rejected SIDR_REQ connected");
  ud_unreachable(id, IBCM_SIDR_REJECT);
  TR_ASSERT(ud_connect(&id, UD_PORT, UD_ACCEPT) == 0);
  struct rdma_ud_param ud = id->event->param.ud;
  TR_CHECK(id->event->event == RDMA_CM_EVENT_ESTABLISHED && ud.qp_num != 0 && ud.qkey == RDMA_UDP_QKEY,
           "event %s qpn %u qkey 0x%x", rdma_event_str(id->event->event), ud.qp_num, ud.qkey);
  struct ibv_ah *ah = ibv_create_ah(id->pd, &ud.ah_attr);
  static char msg[UD_LEN] = UD_ACCEPT;
  struct ibv_mr *mr = ibv_reg_mr(id->pd, msg, UD_LEN, IBV_ACCESS_LOCAL_WRITE);
  TR_ASSERT(ah && mr);
  struct ibv_wc wc;
  TR_ASSERT(rdma_post_ud_send(id, NULL, msg, UD_LEN, mr, IBV_SEND_SIGNALED, ah, ud.qp_num) == 0);
  TR_CHECK(rdmau_wait(id->send_cq, &wc, WAIT_MS) == 1 && wc.status == IBV_WC_SUCCESS, "datagram not sent");
  passive_done(ppid, "31/32: first request, 33: reject, 34/35: second request, 37: accept, 38: no datagram");
  ibv_destroy_ah(ah);
  ibv_dereg_mr(mr);
  rdma_destroy_ep(id);
}

static const struct tr_case cases[] = {
  { "poll_queued_event", t_poll_queued_event, TR_QUICK, 0 },
  { "connect_no_listener", t_connect_no_listener, TR_QUICK, 0 },
  { "connect_wait_cq", t_connect_wait_cq, TR_QUICK, 0 },
  { "connect_cq_event", t_connect_cq_event, TR_QUICK, 0 },
  { "connect_busy_poll", t_connect_busy_poll, TR_QUICK, 0 },
  { "disconnect_active", t_disconnect_active, TR_QUICK, 0 },
  { "sr_negotiation", t_sr_negotiation, TR_QUICK, 0 },
  { "ud_sidr", t_ud_sidr, TR_QUICK, 0 },
  { "private_data_room", t_private_data_room, TR_QUICK, 0 },
  { NULL },
};
static const struct tr_case ep_cases[] = {
  { "ep_getaddrinfo_passive_wildcard", t_ep_getaddrinfo_passive_wildcard, TR_QUICK, 0 },
  { "ep_create_takes_ai_qp_type", t_ep_create_takes_ai_qp_type, TR_QUICK, 0 },
  { "ep_get_request_bad_attr_einval", t_ep_get_request_bad_attr_einval, TR_QUICK, 0 },
  { "cm_options_devices_notify", t_cm_options_devices_notify, TR_QUICK, 0 },
  { NULL },
};
static const struct tr_case *const tables[] = { cases, ep_cases };

int main(int argc, char **argv) {
  struct tr_suite suite = { "rdmacmtest", tables, 2, 60, 0, NULL };
  return tr_main(&suite, argc, argv);
}
