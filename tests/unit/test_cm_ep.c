/*
 * test_cm_ep.c: the CM endpoint state machine (cm_ep.c) of proto-spec cm.md:
 * an active and a passive endpoint wired through a scripted "network" that
 * may drop datagrams, on virtual time. [CM-STATE-*] [CM-TMO-*]
 */
#include "harness.h"
#include "rct_cm.h"

#define MS 1000000ull
static const struct rct_cm_addr ADDR_A = { 0x0a000001u, 40000 };   /* active, any port */
static const struct rct_cm_addr ADDR_B = { 0x0a000002u, RCT_CM_PORT };
static struct rct_cm_ep a, b;
static uint8_t buf[256];

static void msg_init(struct rct_cm_msg *m, uint32_t qpn, uint32_t psn)
{
  memset(m, 0, sizeof(*m));
  m->qpn = qpn;
  m->start_psn = psn;
  m->path_mtu = RCT_MTU_1024;
  m->responder_resources = m->initiator_depth = 4;
  m->private_len = 3;
  memcpy(m->private_data, "abc", 3);
}

/* Move the next datagram of `from` (sent by the endpoint at `src`) to `to`,
 * or drop it. Returns its CM type, 0 if nothing was queued. */
static int hop(struct rct_cm_ep *from, struct rct_cm_addr src, struct rct_cm_ep *to, uint64_t now,
               bool drop)
{
  struct rct_cm_addr dst;
  int n = rct_cm_ep_poll_msg(from, buf, sizeof(buf), &dst);
  ck_assert_int_ge(n, 0);
  if (!n)
    return 0;
  if (!drop)
    rct_cm_ep_handle_msg(to, now, src, buf, (size_t)n);
  return buf[3];
}

static enum rct_cm_event_type expect_event(struct rct_cm_ep *ep)
{
  struct rct_cm_event ev;
  ck_assert(rct_cm_ep_poll_event(ep, &ev));
  return ev.type;
}

static void start(uint64_t now)
{
  struct rct_cm_msg req;
  rct_cm_ep_init(&a, 0x1111);
  rct_cm_ep_init(&b, 0x2222);
  ck_assert_int_eq(rct_cm_ep_listen(&b), RCT_OK);
  msg_init(&req, 0x11, 0x123456);
  ck_assert_int_eq(rct_cm_ep_connect(&a, now, ADDR_B, &req), RCT_OK);
}

static void accept_b(uint64_t now)
{
  struct rct_cm_msg rep;
  msg_init(&rep, 0x12, 0x654321);
  ck_assert_int_eq(rct_cm_ep_accept(&b, now, &rep), RCT_OK);
}

/* [CM-STATE-1] [CM-STATE-2] [CM-STATE-3] [CM-STATE-7] the whole exchange:
 * REQ -> connect request; accept -> REP; REP -> ESTABLISHED + RTU; RTU ->
 * ESTABLISHED; replies go to the address the datagram came from. */
START_TEST(test_cm_ep_exchange)
{
  struct rct_cm_addr to;
  int n;
  start(0);
  n = rct_cm_ep_poll_msg(&a, buf, sizeof(buf), &to);
  ck_assert_int_eq(n, RCT_CM_LEN_REQ);
  ck_assert_uint_eq(to.ip, ADDR_B.ip);
  ck_assert_uint_eq(to.port, RCT_CM_PORT);
  rct_cm_ep_handle_msg(&b, 1, ADDR_A, buf, (size_t)n);
  ck_assert_int_eq(b.state, RCT_CM_EP_REQ_RCVD);
  ck_assert_int_eq(expect_event(&b), RCT_CM_EV_CONNECT_REQUEST);
  ck_assert_int_eq(memcmp(b.peer_msg.private_data, "abc", 3), 0);
  accept_b(2);
  n = rct_cm_ep_poll_msg(&b, buf, sizeof(buf), &to);
  ck_assert_int_eq(n, RCT_CM_LEN_REQ);
  ck_assert_uint_eq(to.ip, ADDR_A.ip);
  ck_assert_uint_eq(to.port, ADDR_A.port);             /* back to the source port */
  rct_cm_ep_handle_msg(&a, 3, ADDR_B, buf, (size_t)n);
  ck_assert_int_eq(a.state, RCT_CM_EP_ESTABLISHED);
  ck_assert_int_eq(expect_event(&a), RCT_CM_EV_ESTABLISHED);
  ck_assert_uint_eq(a.peer_msg.qpn, 0x12);
  ck_assert_int_eq(hop(&a, ADDR_A, &b, 4, false), RCT_CM_RTU);
  ck_assert_int_eq(b.state, RCT_CM_EP_ESTABLISHED);
  ck_assert_int_eq(expect_event(&b), RCT_CM_EV_ESTABLISHED);
  ck_assert_uint_eq(rct_cm_ep_next_timeout(&a), RCT_NEVER);
  ck_assert_uint_eq(rct_cm_ep_next_timeout(&b), RCT_NEVER);
  /* an event not listed for the state is ignored and counted */
  ck_assert_int_eq(rct_cm_ep_accept(&b, 5, &a.self_msg), RCT_ESTATE);
  ck_assert_int_eq(hop(&a, ADDR_A, &b, 5, false), 0);
}
END_TEST

/* [CM-TMO-1] a lost REQ is sent again, unchanged, after CM_RETRY_NS */
START_TEST(test_cm_ep_lost_req)
{
  uint8_t first[RCT_CM_LEN_REQ];
  struct rct_cm_addr to;
  start(0);
  ck_assert_int_eq(rct_cm_ep_poll_msg(&a, first, sizeof(first), &to), RCT_CM_LEN_REQ);  /* lost */
  ck_assert_uint_eq(rct_cm_ep_next_timeout(&a), 250 * MS);
  rct_cm_ep_handle_timeout(&a, 250 * MS - 1);            /* spurious: nothing */
  ck_assert_int_eq(rct_cm_ep_poll_msg(&a, buf, sizeof(buf), &to), 0);
  rct_cm_ep_handle_timeout(&a, 250 * MS);
  ck_assert_int_eq(rct_cm_ep_poll_msg(&a, buf, sizeof(buf), &to), RCT_CM_LEN_REQ);
  ck_assert_int_eq(memcmp(buf, first, RCT_CM_LEN_REQ), 0);
  ck_assert_uint_eq(rct_cm_ep_next_timeout(&a), 500 * MS);
  rct_cm_ep_handle_msg(&b, 251 * MS, ADDR_A, buf, RCT_CM_LEN_REQ);
  ck_assert_int_eq(b.state, RCT_CM_EP_REQ_RCVD);
}
END_TEST

/* [CM-TMO-1] [CM-TMO-3] a lost REP: the active side resends its REQ, and the
 * duplicate REQ is answered by resending the REP; a duplicate before accept
 * is ignored */
START_TEST(test_cm_ep_lost_rep)
{
  start(0);
  ck_assert_int_eq(hop(&a, ADDR_A, &b, 1, false), RCT_CM_REQ);
  ck_assert_int_eq(expect_event(&b), RCT_CM_EV_CONNECT_REQUEST);
  rct_cm_ep_handle_timeout(&a, 250 * MS);
  ck_assert_int_eq(hop(&a, ADDR_A, &b, 250 * MS, false), RCT_CM_REQ);   /* not accepted yet */
  ck_assert_int_eq(hop(&b, ADDR_B, &a, 250 * MS, false), 0);
  accept_b(260 * MS);
  ck_assert_int_eq(hop(&b, ADDR_B, &a, 260 * MS, true), RCT_CM_REP);    /* lost */
  rct_cm_ep_handle_timeout(&a, 500 * MS);
  ck_assert_int_eq(hop(&a, ADDR_A, &b, 500 * MS, false), RCT_CM_REQ);
  ck_assert_int_eq(hop(&b, ADDR_B, &a, 500 * MS, false), RCT_CM_REP);   /* resent */
  ck_assert_int_eq(a.state, RCT_CM_EP_ESTABLISHED);
  ck_assert_uint_eq(b.cnt.retransmits, 1);
}
END_TEST

/* [CM-TMO-3] [CM-TMO-1] [CM-STATE-3] a lost RTU: the passive side resends
 * REP; the active side answers the duplicate REP with RTU again. Or the
 * first RC frame establishes the passive side. */
START_TEST(test_cm_ep_lost_rtu)
{
  start(0);
  hop(&a, ADDR_A, &b, 1, false);
  accept_b(2);
  ck_assert_int_eq(hop(&b, ADDR_B, &a, 3, false), RCT_CM_REP);
  ck_assert_int_eq(hop(&a, ADDR_A, &b, 4, true), RCT_CM_RTU);           /* lost */
  ck_assert_int_eq(b.state, RCT_CM_EP_REP_SENT);
  rct_cm_ep_handle_timeout(&b, 2 + 250 * MS);
  ck_assert_int_eq(hop(&b, ADDR_B, &a, 2 + 250 * MS, false), RCT_CM_REP);
  ck_assert_int_eq(hop(&a, ADDR_A, &b, 2 + 250 * MS, false), RCT_CM_RTU);
  ck_assert_int_eq(b.state, RCT_CM_EP_ESTABLISHED);
  ck_assert_uint_eq(a.cnt.retransmits, 1);
  /* again, established by RC traffic instead */
  start(0);
  hop(&a, ADDR_A, &b, 1, false);
  accept_b(2);
  hop(&b, ADDR_B, &a, 3, false);
  hop(&a, ADDR_A, &b, 4, true);
  rct_cm_ep_rc_frame(&b);
  ck_assert_int_eq(b.state, RCT_CM_EP_ESTABLISHED);
  ck_assert_uint_eq(rct_cm_ep_next_timeout(&b), RCT_NEVER);
}
END_TEST

/* [CM-TMO-6] the active side owes answers to duplicate REPs for the REP's
 * whole retry span after the REP established it, and is answered at the
 * span's last moment; a passive side, or an active one not established,
 * owes none */
START_TEST(test_cm_ep_answer_until_covers_rep_retries)
{
  uint64_t t = 0;
  start(0);
  ck_assert_uint_eq(rct_cm_ep_answer_until(&a), 0);            /* REQ_SENT */
  hop(&a, ADDR_A, &b, 1, false);
  accept_b(2);
  ck_assert_int_eq(hop(&b, ADDR_B, &a, 3, false), RCT_CM_REP);
  ck_assert_uint_eq(rct_cm_ep_answer_until(&a), 3 + RCT_CM_RETRY_SPAN_NS);
  ck_assert_uint_eq(rct_cm_ep_answer_until(&b), 0);            /* passive */
  ck_assert_int_eq(hop(&a, ADDR_A, &b, 4, true), RCT_CM_RTU);  /* lost, and every RTU after it */
  for (int i = 0; i < RCT_CM_MAX_RETRIES; i++) {
    t = rct_cm_ep_next_timeout(&b);
    rct_cm_ep_handle_timeout(&b, t);
    ck_assert_uint_lt(t, rct_cm_ep_answer_until(&a));          /* within a's span */
    ck_assert_int_eq(hop(&b, ADDR_B, &a, t, false), RCT_CM_REP);
    ck_assert_int_eq(hop(&a, ADDR_A, &b, t, true), RCT_CM_RTU);
  }
  /* b gives up (REJ TIMEOUT) no later than a's span ends */
  ck_assert_uint_le(rct_cm_ep_next_timeout(&b), rct_cm_ep_answer_until(&a));
  ck_assert_int_eq(rct_cm_ep_disconnect(&a, t + 1), RCT_OK);
  ck_assert_uint_eq(rct_cm_ep_answer_until(&a), 0);            /* DREQ_SENT */
}
END_TEST

/* [CM-STATE-1] [CM-MSG-7] reject with a reason and private data */
START_TEST(test_cm_ep_reject)
{
  struct rct_cm_event ev;
  start(0);
  hop(&a, ADDR_A, &b, 1, false);
  ck_assert_int_eq(rct_cm_ep_reject(&b, 2, RCT_CM_REJ_CONSUMER, "no", 2), RCT_OK);
  ck_assert_int_eq(b.state, RCT_CM_EP_CLOSED);
  ck_assert_int_eq(hop(&b, ADDR_B, &a, 3, false), RCT_CM_REJ);
  ck_assert_int_eq(a.state, RCT_CM_EP_REJECTED);
  ck_assert(rct_cm_ep_poll_event(&a, &ev));
  ck_assert_int_eq(ev.type, RCT_CM_EV_REJECTED);
  ck_assert_uint_eq(ev.reason, RCT_CM_REJ_CONSUMER);
  ck_assert_int_eq(memcmp(a.peer_msg.private_data, "no", 2), 0);
  ck_assert_uint_eq(rct_cm_ep_next_timeout(&a), RCT_NEVER);
}
END_TEST

/* [CM-STATE-2] [CM-STATE-5] a REQ at an endpoint that does not listen:
 * REJ NO_LISTENER, dst_conn_id = the REQ's src_conn_id, src_conn_id 0 */
START_TEST(test_cm_ep_no_listener)
{
  struct rct_cm_msg m;
  struct rct_cm_addr to;
  start(0);
  rct_cm_ep_init(&b, 0x2222);                            /* not listening */
  hop(&a, ADDR_A, &b, 1, false);
  ck_assert_int_eq(rct_cm_ep_poll_msg(&b, buf, sizeof(buf), &to), RCT_CM_LEN_REJ);
  ck_assert_int_eq(rct_cm_parse(&m, buf, RCT_CM_LEN_REJ), RCT_OK);
  ck_assert_uint_eq(m.reject_reason, RCT_CM_REJ_NO_LISTENER);
  ck_assert_uint_eq(m.dst_conn_id, 0x1111);
  ck_assert_uint_eq(m.src_conn_id, 0);
  rct_cm_ep_handle_msg(&a, 2, ADDR_B, buf, RCT_CM_LEN_REJ);
  ck_assert_int_eq(a.state, RCT_CM_EP_REJECTED);
}
END_TEST

/* [CM-STATE-5] replies for another connection ID or from another address
 * are dropped and counted */
START_TEST(test_cm_ep_foreign_reply_dropped)
{
  struct rct_cm_addr other = { 0x0a000009u, RCT_CM_PORT };
  uint8_t rep[RCT_CM_LEN_REQ];
  int n;
  start(0);
  hop(&a, ADDR_A, &b, 1, false);
  accept_b(2);
  n = rct_cm_ep_poll_msg(&b, rep, sizeof(rep), &other);
  other.ip = 0x0a000009u;
  rct_cm_ep_handle_msg(&a, 3, other, rep, (size_t)n);     /* wrong source address */
  ck_assert_int_eq(a.state, RCT_CM_EP_REQ_SENT);
  rep[11] ^= 1;                                           /* wrong dst_conn_id */
  rct_cm_ep_handle_msg(&a, 3, ADDR_B, rep, (size_t)n);
  ck_assert_int_eq(a.state, RCT_CM_EP_REQ_SENT);
  ck_assert_uint_eq(a.cnt.dropped, 2);
}
END_TEST

/* [CM-STATE-7] [CM-STATE-5] the passive side may answer from a port of its
 * own: the active side takes the REP from any port of the peer's IP
 * address, sends RTU there, and from then on hears only that port */
START_TEST(test_cm_ep_rep_from_reply_port)
{
  struct rct_cm_addr reply_port = { ADDR_B.ip, 50000 }, to;
  struct rct_cm_msg m;
  int n;
  start(0);
  hop(&a, ADDR_A, &b, 1, false);
  expect_event(&b);
  accept_b(2);
  ck_assert_int_eq(hop(&b, reply_port, &a, 3, false), RCT_CM_REP);
  ck_assert_int_eq(a.state, RCT_CM_EP_ESTABLISHED);
  ck_assert_int_eq(expect_event(&a), RCT_CM_EV_ESTABLISHED);
  n = rct_cm_ep_poll_msg(&a, buf, sizeof(buf), &to);
  ck_assert_int_eq(n, RCT_CM_LEN_HDR);
  ck_assert_int_eq(buf[3], RCT_CM_RTU);
  ck_assert_uint_eq(to.port, 50000);
  memset(&m, 0, sizeof(m));
  m.type = RCT_CM_DREQ;
  m.src_conn_id = 0x2222;
  m.dst_conn_id = 0x1111;
  n = rct_cm_encode(&m, buf, sizeof(buf));
  rct_cm_ep_handle_msg(&a, 4, ADDR_B, buf, (size_t)n);    /* the listening port: not the peer's now */
  ck_assert_int_eq(a.state, RCT_CM_EP_ESTABLISHED);
  ck_assert_uint_eq(a.cnt.dropped, 1);
  rct_cm_ep_handle_msg(&a, 5, reply_port, buf, (size_t)n);
  ck_assert_int_eq(a.state, RCT_CM_EP_CLOSED);
  ck_assert_int_eq(expect_event(&a), RCT_CM_EV_DISCONNECTED);
}
END_TEST

/* [CM-TMO-2] [CM-TMO-1] retries exhausted: the active side is unreachable
 * after 5 retransmissions; the passive side sends REJ TIMEOUT */
START_TEST(test_cm_ep_retries_exhausted)
{
  struct rct_cm_addr to;
  struct rct_cm_msg m;
  uint64_t t = 0;
  int sent = 0;
  start(0);
  for (;;) {
    while (rct_cm_ep_poll_msg(&a, buf, sizeof(buf), &to) > 0)
      sent++;                                 /* all lost */
    t = rct_cm_ep_next_timeout(&a);
    if (t == RCT_NEVER)
      break;
    rct_cm_ep_handle_timeout(&a, t);
  }
  ck_assert_int_eq(sent, 1 + RCT_CM_MAX_RETRIES);       /* REQ and 5 resends */
  ck_assert_uint_eq(t, RCT_NEVER);
  ck_assert_int_eq(a.state, RCT_CM_EP_TIMEDOUT);
  ck_assert_int_eq(expect_event(&a), RCT_CM_EV_UNREACHABLE);
  ck_assert_uint_eq(a.cnt.retransmits, RCT_CM_MAX_RETRIES);
  /* passive: accepted, REP never answered */
  start(0);
  hop(&a, ADDR_A, &b, 1, false);
  accept_b(2);
  for (int i = 0; i < RCT_CM_MAX_RETRIES; i++) {
    ck_assert_int_eq(hop(&b, ADDR_B, &a, 0, true), RCT_CM_REP);
    rct_cm_ep_handle_timeout(&b, rct_cm_ep_next_timeout(&b));
  }
  ck_assert_int_eq(hop(&b, ADDR_B, &a, 0, true), RCT_CM_REP);
  rct_cm_ep_handle_timeout(&b, rct_cm_ep_next_timeout(&b));
  ck_assert_int_eq(b.state, RCT_CM_EP_CLOSED);
  ck_assert_int_eq(rct_cm_ep_poll_msg(&b, buf, sizeof(buf), &to), RCT_CM_LEN_REJ);
  ck_assert_int_eq(rct_cm_parse(&m, buf, RCT_CM_LEN_REJ), RCT_OK);
  ck_assert_uint_eq(m.reject_reason, RCT_CM_REJ_TIMEOUT);
  expect_event(&b);                                       /* the connect request */
  ck_assert_int_eq(expect_event(&b), RCT_CM_EV_TIMEDOUT);
}
END_TEST

/* Both endpoints ESTABLISHED at time 4: REQ, accept, REP, RTU. */
static void establish(void)
{
  start(0);
  hop(&a, ADDR_A, &b, 1, false);
  accept_b(2);
  hop(&b, ADDR_B, &a, 3, false);
  hop(&a, ADDR_A, &b, 4, false);
}

/* [CM-STATE-6] [CM-TMO-3] [CM-TMO-2] disconnect: DREQ -> DISCONNECTED + DREP;
 * a duplicate DREQ gets DREP again; an unanswered DREQ closes anyway */
START_TEST(test_cm_ep_disconnect)
{
  establish();
  ck_assert_int_eq(rct_cm_ep_disconnect(&a, 10), RCT_OK);
  ck_assert_int_eq(hop(&a, ADDR_A, &b, 11, false), RCT_CM_DREQ);
  ck_assert_int_eq(b.state, RCT_CM_EP_CLOSED);
  expect_event(&b);
  expect_event(&b);
  ck_assert_int_eq(expect_event(&b), RCT_CM_EV_DISCONNECTED);
  ck_assert_int_eq(hop(&b, ADDR_B, &a, 12, true), RCT_CM_DREP);        /* lost */
  rct_cm_ep_handle_timeout(&a, 10 + 250 * MS);
  ck_assert_int_eq(hop(&a, ADDR_A, &b, 10 + 250 * MS, false), RCT_CM_DREQ);
  ck_assert_int_eq(hop(&b, ADDR_B, &a, 10 + 250 * MS, false), RCT_CM_DREP);
  ck_assert_int_eq(a.state, RCT_CM_EP_CLOSED);
  /* nobody answers: closed after the retries */
  establish();
  rct_cm_ep_disconnect(&a, 10);
  for (int i = 0; i <= RCT_CM_MAX_RETRIES; i++) {
    ck_assert_int_eq(hop(&a, ADDR_A, &b, 0, true), RCT_CM_DREQ);
    rct_cm_ep_handle_timeout(&a, rct_cm_ep_next_timeout(&a));
  }
  ck_assert_int_eq(a.state, RCT_CM_EP_CLOSED);
}
END_TEST

/* [CM-TMO-5] [CM-TMO-3] both ends of a closed connection stay in time wait
 * for CM_TIMEWAIT_NS, answering a duplicate DREQ with DREP, then report
 * TIMEWAIT_EXIT once and have no deadline left */
START_TEST(test_cm_ep_timewait_exit)
{
  uint64_t t;
  establish();
  expect_event(&a);
  expect_event(&b);
  expect_event(&b);
  ck_assert_int_eq(rct_cm_ep_disconnect(&a, 10), RCT_OK);
  ck_assert_int_eq(hop(&a, ADDR_A, &b, 11, false), RCT_CM_DREQ);
  ck_assert_int_eq(expect_event(&b), RCT_CM_EV_DISCONNECTED);
  ck_assert_uint_eq(rct_cm_ep_next_timeout(&b), 11 + RCT_CM_TIMEWAIT_NS);
  ck_assert_int_eq(hop(&b, ADDR_B, &a, 12, false), RCT_CM_DREP);
  ck_assert_int_eq(expect_event(&a), RCT_CM_EV_DISCONNECTED);
  ck_assert_uint_eq(rct_cm_ep_next_timeout(&a), 12 + RCT_CM_TIMEWAIT_NS);
  rct_cm_ep_handle_msg(&b, 13, ADDR_A, (const uint8_t[]){ 0x78, 0x72, 1, RCT_CM_DREQ, 0, 0, 0x11, 0x11,
                                                          0, 0, 0x22, 0x22 }, RCT_CM_LEN_HDR);
  ck_assert_int_eq(hop(&b, ADDR_B, &a, 14, false), RCT_CM_DREP);          /* duplicate DREQ */
  ck_assert(!rct_cm_ep_poll_event(&b, &(struct rct_cm_event){ 0 }));
  t = rct_cm_ep_next_timeout(&b);
  rct_cm_ep_handle_timeout(&b, t - 1);                                    /* not yet */
  ck_assert(!rct_cm_ep_poll_event(&b, &(struct rct_cm_event){ 0 }));
  rct_cm_ep_handle_timeout(&b, t);
  ck_assert_int_eq(expect_event(&b), RCT_CM_EV_TIMEWAIT_EXIT);
  ck_assert_uint_eq(rct_cm_ep_next_timeout(&b), RCT_NEVER);
  rct_cm_ep_handle_timeout(&a, rct_cm_ep_next_timeout(&a));
  ck_assert_int_eq(expect_event(&a), RCT_CM_EV_TIMEWAIT_EXIT);
  ck_assert(!rct_cm_ep_poll_event(&a, &(struct rct_cm_event){ 0 }));
  ck_assert_int_eq(a.state, RCT_CM_EP_CLOSED);
}
END_TEST

/* [SEC-FORGE-6] [CM-STATE-5] a forged REJ or DREQ naming an unknown
 * connection ID (or coming from another address) is ignored */
START_TEST(test_cm_ep_forged_rej_dreq_ignored)
{
  struct rct_cm_msg m;
  struct rct_cm_addr evil = { 0x0a0000ffu, RCT_CM_PORT };
  struct rct_cm_event ev;
  int n;
  start(0);
  hop(&a, ADDR_A, &b, 1, false);
  memset(&m, 0, sizeof(m));
  m.type = RCT_CM_REJ;
  m.src_conn_id = 0x2222;
  m.dst_conn_id = 0x1112;                                /* not a's ID */
  m.reject_reason = RCT_CM_REJ_CONSUMER;
  n = rct_cm_encode(&m, buf, sizeof(buf));
  rct_cm_ep_handle_msg(&a, 2, ADDR_B, buf, (size_t)n);
  ck_assert_int_eq(a.state, RCT_CM_EP_REQ_SENT);
  m.dst_conn_id = 0x1111;                                /* right ID, wrong address */
  n = rct_cm_encode(&m, buf, sizeof(buf));
  rct_cm_ep_handle_msg(&a, 2, evil, buf, (size_t)n);
  ck_assert_int_eq(a.state, RCT_CM_EP_REQ_SENT);
  ck_assert(!rct_cm_ep_poll_event(&a, &ev));
  /* established; a forged DREQ for another connection ID changes nothing */
  accept_b(3);
  hop(&b, ADDR_B, &a, 4, false);
  hop(&a, ADDR_A, &b, 5, false);
  memset(&m, 0, sizeof(m));
  m.type = RCT_CM_DREQ;
  m.src_conn_id = 0x1111;
  m.dst_conn_id = 0x2223;
  n = rct_cm_encode(&m, buf, sizeof(buf));
  rct_cm_ep_handle_msg(&b, 6, ADDR_A, buf, (size_t)n);
  ck_assert_int_eq(b.state, RCT_CM_EP_ESTABLISHED);
  ck_assert_int_eq(hop(&b, ADDR_B, &a, 6, false), 0);   /* no DREP */
  ck_assert_uint_eq(a.cnt.dropped + b.cnt.dropped, 3);
}
END_TEST

/* [SEC-FORGE-7] [CM-STATE-5] a DREQ that carries both right connection IDs
 * but comes from another port or another address, or from the peer's
 * address with another source ID, is dropped and counted: the connection
 * stays ESTABLISHED and no DREP goes out. The peer's own DREQ still works. */
START_TEST(test_cm_ep_stranger_dreq_dropped)
{
  static const struct rct_cm_addr strangers[] = {
    { 0x0a000001u, 40001 },                         /* peer's IP, another port */
    { 0x0a0000ffu, 40000 },                         /* another IP, peer's port */
  };
  struct rct_cm_msg m;
  struct rct_cm_event ev;
  int n;
  start(0);
  hop(&a, ADDR_A, &b, 1, false);
  accept_b(2);
  hop(&b, ADDR_B, &a, 3, false);                         /* REP */
  hop(&a, ADDR_A, &b, 4, false);                         /* RTU */
  ck_assert_int_eq(b.state, RCT_CM_EP_ESTABLISHED);
  ck_assert_int_eq(expect_event(&b), RCT_CM_EV_CONNECT_REQUEST);
  ck_assert_int_eq(expect_event(&b), RCT_CM_EV_ESTABLISHED);
  memset(&m, 0, sizeof(m));
  m.type = RCT_CM_DREQ;
  m.src_conn_id = 0x1111;
  m.dst_conn_id = 0x2222;
  n = rct_cm_encode(&m, buf, sizeof(buf));
  for (int i = 0; i < 2; i++)
    rct_cm_ep_handle_msg(&b, 5, strangers[i], buf, (size_t)n);
  m.src_conn_id = 0x1112;                                /* right address, wrong source ID */
  n = rct_cm_encode(&m, buf, sizeof(buf));
  rct_cm_ep_handle_msg(&b, 5, ADDR_A, buf, (size_t)n);
  ck_assert_int_eq(b.state, RCT_CM_EP_ESTABLISHED);
  ck_assert(!rct_cm_ep_poll_event(&b, &ev));
  ck_assert_int_eq(hop(&b, ADDR_B, &a, 6, false), 0);   /* no DREP */
  ck_assert_uint_eq(b.cnt.dropped, 3);
  m.src_conn_id = 0x1111;                                /* the peer's own DREQ */
  n = rct_cm_encode(&m, buf, sizeof(buf));
  rct_cm_ep_handle_msg(&b, 7, ADDR_A, buf, (size_t)n);
  ck_assert_int_eq(b.state, RCT_CM_EP_CLOSED);
}
END_TEST

Suite *suite_cm_ep(void)
{
  Suite *s = suite_create("cm_ep");
  TCase *t = tcase_create("cm-endpoint");
  tcase_add_test(t, test_cm_ep_exchange);
  tcase_add_test(t, test_cm_ep_lost_req);
  tcase_add_test(t, test_cm_ep_lost_rep);
  tcase_add_test(t, test_cm_ep_lost_rtu);
  tcase_add_test(t, test_cm_ep_answer_until_covers_rep_retries);
  tcase_add_test(t, test_cm_ep_reject);
  tcase_add_test(t, test_cm_ep_no_listener);
  tcase_add_test(t, test_cm_ep_foreign_reply_dropped);
  tcase_add_test(t, test_cm_ep_rep_from_reply_port);
  tcase_add_test(t, test_cm_ep_retries_exhausted);
  tcase_add_test(t, test_cm_ep_disconnect);
  tcase_add_test(t, test_cm_ep_timewait_exit);
  tcase_add_test(t, test_cm_ep_forged_rej_dreq_ignored);
  tcase_add_test(t, test_cm_ep_stranger_dreq_dropped);
  suite_add_tcase(s, t);
  return s;
}
