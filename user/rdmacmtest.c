// rdmacmtest: the connection library (user/rdma_cm.c) inside one guest.
//
// Needs a network card: the CM's datagrams to the guest's own address take
// the IP loopback (kernel/net/ipv4.c), the RC frames the RDMA loopback. Each
// case forks a passive process (listens on PASSIVE_PORT, accepts, then SENDs
// one message) and, for the lost-RTU cases, a relay process that carries the
// CM datagrams between the two sides and drops the active side's first RTU;
// the case's own process is the active side, which connects and then waits
// for the passive side's message, never in an rdma_* call:
//   loopback_connect      no relay: rdma_cm between two processes of one guest.
//   lost_rtu_wait_cq      [CM-TMO-6] [CM-TMO-3] the active side waits in
//   lost_rtu_cq_event     ibvx_wait_cq (rdmau_wait), in a completion channel's
//   lost_rtu_busy_poll    ibv_get_cq_event, or in an ibv_poll_cq loop. The
//                         passive side repeats its REP; the RTU that answers
//                         it must come from inside that wait, or the passive
//                         side's rdma_accept fails after its REP's retries
//                         ([CM-TMO-2]) and the message is never sent.
//   poll_queued_event     poll() on a CM event channel's fd (its
//                         readiness, user/poll.c): rdma_resolve_addr queues
//                         ADDR_RESOLVED in the channel's memory, its socket
//                         empty; poll(fd, POLLIN, 10 s) must say POLLIN at
//                         once, and poll(fd, 0) nothing once it is taken.
//   poll_drives_deadline  an rdma_connect to a port nobody holds: only the
//                         REQ's retries and their end [CM-TMO-1] [CM-TMO-2]
//                         make an event (UNREACHABLE); a poll() of 4 retry
//                         spans must return with POLLIN after about one.
// In every case the active side's duty must be over one CM retry interval
// after the peer's message arrived (its QP holds a frame from the peer),
// not at the end of the REP's retry span.
// Usage: rdmacmtest [-q] [-l] [-x name]... [name...]   (user/testrun.h)
#include "user.h"
#include "ibverbs.h"
#include "rdma_cm.h"
#include "rdma_util.h"
#include "testrun.h"

#define PASSIVE_PORT 18600
#define RELAY_PORT   18601
#define MSG "hello from the passive side"
#define MSG_LEN ((int)sizeof MSG)
// The active side's wait for the message: the REP's retries and their
// answers fit many times over; a lost answer fails the case long before.
#define WAIT_MS (4 * (int)(RCT_CM_RETRY_SPAN_NS / 1000000))

enum wait_mode { WAIT_CQ, WAIT_EVENT, WAIT_BUSY };

static uint32_t own_ip;

// What the relay saw, written to its result pipe when the case hangs up.
struct relay_counts { int reps, rtus, rtus_dropped; };

// ---- the relay: active <-> RELAY_PORT | its own socket <-> the passive ----
// The passive side's first datagram (the REP) comes from its connection's
// own port, not the listener's; the relay sends there from then on.

static void forward(int s, const uint8_t *buf, int n, uint32_t ip, uint16_t port) {
  struct net_addr to = { ip, port, 0 };
  if (sendto(s, buf, n, &to) != n) tr_fail(__LINE__, "relay: sendto failed");
}

// Runs until hangup (the read end of the case's pipe) hangs up, then writes
// its counts to result.
static void relay(int hangup, int result, int ready) {
  int r = socket(SOCK_UDP), s = socket(SOCK_UDP);
  if (r < 0 || s < 0 || bind(r, RELAY_PORT) < 0) tr_fail(__LINE__, "relay: sockets");
  write(ready, "r", 1);
  struct relay_counts c = { 0 };
  struct net_addr active = { 0 };
  struct net_addr passive = { own_ip, PASSIVE_PORT, 0 };   // then its connection's reply port
  uint8_t buf[256];
  for (;;) {
    struct pollfd pf[3] = { { r, POLLIN, 0 }, { s, POLLIN, 0 }, { hangup, POLLIN, 0 } };
    if (poll(pf, 3, -1) < 0) tr_fail(__LINE__, "relay: poll");
    if (pf[2].revents) break;                       // the case hung up
    struct net_addr from;
    int n;
    if (pf[0].revents && (n = recvfrom(r, buf, sizeof buf, &from, 0)) >= RCT_CM_LEN_HDR) {
      active = from;                                // the active side's CM socket
      if (buf[3] == RCT_CM_RTU && c.rtus++ == 0) { c.rtus_dropped++; continue; }
      forward(s, buf, n, passive.ip, passive.port);
    }
    if (pf[1].revents && (n = recvfrom(s, buf, sizeof buf, &from, 0)) >= RCT_CM_LEN_HDR) {
      passive = from;                               // [CM-STATE-7]
      if (buf[3] == RCT_CM_REP) c.reps++;
      forward(r, buf, n, active.ip, active.port);
    }
  }
  write(result, &c, sizeof c);
  exit(0);
}

// ---- the passive side: accept, then SEND MSG ----

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
  if (rdma_accept(id, NULL) < 0) exit(14);         // a lost RTU nobody answered: ETIMEDOUT
  struct ibv_sge sge = { (uint64_t)msg, MSG_LEN, mr->lkey };
  struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
                            .send_flags = IBV_SEND_SIGNALED }, *bad;
  struct ibv_wc wc;
  if (ibv_post_send(id->qp, &wr, &bad)) exit(15);
  if (rdmau_wait(id->send_cq, &wc, WAIT_MS) != 1 || wc.status != IBV_WC_SUCCESS) exit(16);
  exit(0);
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

static int ctl[2], out[2];       // the case -> relay hang-up pipe; relay -> case counts

// Forks fn's process and waits for it to say it is ready; the child keeps
// only the pipe ends it uses.
static int start(void (*fn)(int ready)) {
  int ready[2], pid;
  if (pipe(ready) < 0 || (pid = fork()) < 0) tr_fail(__LINE__, "pipe or fork");
  if (pid == 0) {
    close(ready[0]);
    close(ctl[1]);
    close(out[0]);
    fn(ready[1]);
  }
  close(ready[1]);
  char c;
  if (read(ready[0], &c, 1) != 1) tr_fail(__LINE__, "child %d did not start", pid);
  close(ready[0]);
  return pid;
}

static void start_relay(int ready) { relay(ctl[0], out[1], ready); }

static void run_case(int with_relay, enum wait_mode mode) {
  struct net_info ni;
  TR_ASSERT(netinfo(&ni) == 0 && ni.present && ni.ip);
  own_ip = ni.ip;
  TR_ASSERT(pipe(ctl) == 0 && pipe(out) == 0);
  int rpid = with_relay ? start(start_relay) : -1;
  close(ctl[0]);
  close(out[1]);
  int ppid = start(passive);

  struct rdma_cm_id *id;
  TR_CHECK(rdmau_cm_resolve(&id, own_ip, with_relay ? RELAY_PORT : PASSIVE_PORT) == 0,
           "resolve: errno %d", errno);
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
  TR_CHECK(rdma_connect(id, NULL) == 0, "rdma_connect: errno %d", errno);

  struct ibv_wc wc;
  int n = wait_recv(mode, cq, ch, &wc);
  int pstatus = -1, rstatus = -1;
  TR_ASSERT(wait(&pstatus) == ppid);               // the relay runs until ctl hangs up
  TR_CHECK(pstatus == 0, "passive side exited %d (14: rdma_accept failed)", pstatus);
  TR_CHECK(n == 1 && wc.status == IBV_WC_SUCCESS && memcmp(got, MSG, MSG_LEN) == 0,
           "no message: %d completions, status %d", n, n == 1 ? wc.status : -1);
  // The peer's frame on the QP ends the duty at its next look, long before
  // the REP's retry span would: a wait of one CM retry interval (the duty
  // looks four times per interval) ends with no duty left.
  TR_CHECK(ibvx_wait_cq(cq, (int)(RCT_CM_RETRY_NS / 1000000)) == ETIMEDOUT, "a second completion");
  TR_CHECK(ibvx_wait_duty_end() == 0, "the duty outlived the peer's first frame by %lu ms",
           (ibvx_wait_duty_end() - clock_ns()) / 1000000);
  if (with_relay) {
    struct relay_counts rc = { 0 };
    close(ctl[1]);                                  // the relay's turn to report
    TR_ASSERT(read(out[0], &rc, sizeof rc) == sizeof rc);
    TR_ASSERT(wait(&rstatus) == rpid && rstatus == 0);
    TR_CHECK(rc.rtus_dropped == 1 && rc.rtus >= 2 && rc.reps >= 2,
             "relay saw %d REPs, %d RTUs (%d dropped): want the REP repeated and answered",
             rc.reps, rc.rtus, rc.rtus_dropped);
  }
}

static void t_loopback_connect(void) { run_case(0, WAIT_CQ); }
static void t_lost_rtu_wait_cq(void) { run_case(1, WAIT_CQ); }
static void t_lost_rtu_cq_event(void) { run_case(1, WAIT_EVENT); }
static void t_lost_rtu_busy_poll(void) { run_case(1, WAIT_BUSY); }

// ---- poll() readiness of a CM event channel ----

#define POLL_LONG_MS 10000
#define SPAN_MS ((int)(RCT_CM_RETRY_SPAN_NS / 1000000))
#define NOBODY_PORT 18602           // no process binds it

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
// ADDR_RESOLVED is queued in the channel's memory when this returns.
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

static void t_poll_drives_deadline(void) {
  struct rdma_cm_id *id;
  struct rdma_event_channel *ch = resolving_id(&id, NOBODY_PORT);
  take_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
  TR_ASSERT(rdma_resolve_route(id, 2000) == 0);
  take_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
  struct ibv_pd *pd = ibv_alloc_pd(id->verbs);
  struct ibv_cq *cq = pd ? ibv_create_cq(id->verbs, 4, NULL, NULL, 0) : NULL;
  struct ibv_qp_init_attr attr = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
                                   .cap = { .max_send_wr = 1, .max_recv_wr = 1,
                                            .max_send_sge = 1, .max_recv_sge = 1 } };
  TR_ASSERT(cq && rdma_create_qp(id, pd, &attr) == 0);
  TR_ASSERT(rdma_connect(id, NULL) == 0);
  int r;
  short rev;
  int ms = timed_poll(ch->fd, 4 * SPAN_MS, &r, &rev);
  TR_CHECK(r == 1 && (rev & POLLIN) && ms < 2 * SPAN_MS,
           "poll while the REQ went unanswered: %d, revents 0x%x after %d ms (retry span %d ms)", r,
           rev, ms, SPAN_MS);
  take_event(ch, RDMA_CM_EVENT_UNREACHABLE);
  rdma_destroy_qp(id);
  rdma_destroy_id(id);
  ibv_destroy_cq(cq);
  ibv_dealloc_pd(pd);
  rdma_destroy_event_channel(ch);
}

static const struct tr_case cases[] = {
  { "poll_queued_event", t_poll_queued_event, TR_QUICK, 0 },
  { "poll_drives_deadline", t_poll_drives_deadline, TR_QUICK, 0 },
  { "loopback_connect", t_loopback_connect, TR_QUICK, 0 },
  { "lost_rtu_wait_cq", t_lost_rtu_wait_cq, TR_QUICK, 0 },
  { "lost_rtu_cq_event", t_lost_rtu_cq_event, TR_QUICK, 0 },
  { "lost_rtu_busy_poll", t_lost_rtu_busy_poll, TR_QUICK, 0 },
  { NULL },
};
static const struct tr_case *const tables[] = { cases };

int main(int argc, char **argv) {
  struct tr_suite suite = { "rdmacmtest", tables, 1, 60, 0, NULL };
  return tr_main(&suite, argc, argv);
}
