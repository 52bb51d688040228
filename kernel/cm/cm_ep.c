/*
 * cm_ep.c: the connection exchange of proto-spec cm.md as a sans-IO state
 * machine, one struct rct_cm_ep per connection (a listener is an endpoint
 * in LISTEN; the caller makes a fresh one per expected connection).
 * Datagrams and time come in through rct_cm_ep_handle_msg/handle_timeout;
 * datagrams, the next deadline and events go out through poll_msg,
 * next_timeout and poll_event. It never touches a QP or a socket: the
 * caller moves its QP on the events ([CM-STATE-3], [CM-STATE-6]).
 * [CM-STATE-*] [CM-TMO-*]
 */
#include "rct_cm.h"
#include "../transport/wire.h"

static const char *const state_names[] = {
  [RCT_CM_EP_IDLE] = "IDLE", [RCT_CM_EP_LISTEN] = "LISTEN", [RCT_CM_EP_REQ_SENT] = "REQ_SENT",
  [RCT_CM_EP_REQ_RCVD] = "REQ_RCVD", [RCT_CM_EP_REP_SENT] = "REP_SENT",
  [RCT_CM_EP_ESTABLISHED] = "ESTABLISHED", [RCT_CM_EP_DREQ_SENT] = "DREQ_SENT",
  [RCT_CM_EP_CLOSED] = "CLOSED", [RCT_CM_EP_REJECTED] = "REJECTED",
  [RCT_CM_EP_TIMEDOUT] = "TIMEDOUT",
};

const char *rct_cm_ep_state_name(enum rct_cm_ep_state s)
{
  return (unsigned)s < sizeof(state_names) / sizeof(state_names[0]) ? state_names[s] : "?";
}

void rct_cm_ep_init(struct rct_cm_ep *ep, uint32_t local_id)
{
  RCT_MEMSET(ep, 0, sizeof(*ep));
  ep->state = RCT_CM_EP_IDLE;
  ep->local_id = local_id;
  ep->deadline = RCT_NEVER;
}

/* Queue a datagram (encoded at poll time from self_msg or the header). */
static void send_msg(struct rct_cm_ep *ep, enum rct_cm_type type, uint16_t reason,
                     uint32_t src_id, uint32_t dst_id, struct rct_cm_addr to)
{
  if (ep->out_n == RCT_CM_EP_QUEUE) {
    ep->cnt.dropped++;
    return;
  }
  ep->out[ep->out_n].type = (uint8_t)type;
  ep->out[ep->out_n].reason = reason;
  ep->out[ep->out_n].src_id = src_id;
  ep->out[ep->out_n].dst_id = dst_id;
  ep->out[ep->out_n].to = to;
  ep->out_n++;
}

static void reply(struct rct_cm_ep *ep, enum rct_cm_type type)
{
  send_msg(ep, type, 0, ep->local_id, ep->remote_id, ep->peer);
}

static void event(struct rct_cm_ep *ep, enum rct_cm_event_type type, uint16_t reason)
{
  if (ep->ev_n == RCT_CM_EP_QUEUE)
    return;
  ep->ev[ep->ev_n].type = type;
  ep->ev[ep->ev_n].reason = reason;
  ep->ev_n++;
}

/* Start the retransmission timer of a REQ, REP or DREQ [CM-TMO-1]. */
static void arm(struct rct_cm_ep *ep, uint64_t now)
{
  ep->retries = 0;
  ep->deadline = now + RCT_CM_RETRY_NS;
}

/* A connection closed by DREQ, DREP or the DREQ's last retry: it stays in
 * time wait, answering duplicate DREQs, for CM_TIMEWAIT_NS [CM-TMO-5]. */
static void close_conn(struct rct_cm_ep *ep, uint64_t now)
{
  ep->state = RCT_CM_EP_CLOSED;                     /* caller: QP to ERR [CM-STATE-6] */
  ep->deadline = now + RCT_CM_TIMEWAIT_NS;
  event(ep, RCT_CM_EV_DISCONNECTED, 0);
}

int rct_cm_ep_listen(struct rct_cm_ep *ep)
{
  if (ep->state != RCT_CM_EP_IDLE)
    return RCT_ESTATE;
  ep->state = RCT_CM_EP_LISTEN;
  return RCT_OK;
}

int rct_cm_ep_connect(struct rct_cm_ep *ep, uint64_t now, struct rct_cm_addr peer,
                      const struct rct_cm_msg *req)
{
  if (ep->state != RCT_CM_EP_IDLE || !ep->local_id)
    return RCT_ESTATE;
  ep->self_msg = *req;
  ep->self_msg.type = RCT_CM_REQ;
  ep->self_msg.src_conn_id = ep->local_id;
  ep->self_msg.dst_conn_id = 0;
  ep->active = 1;
  ep->peer = peer;
  ep->state = RCT_CM_EP_REQ_SENT;
  reply(ep, RCT_CM_REQ);
  arm(ep, now);
  return RCT_OK;
}

int rct_cm_ep_accept(struct rct_cm_ep *ep, uint64_t now, const struct rct_cm_msg *rep)
{
  if (ep->state != RCT_CM_EP_REQ_RCVD)
    return RCT_ESTATE;
  ep->self_msg = *rep;
  ep->self_msg.type = RCT_CM_REP;
  ep->self_msg.src_conn_id = ep->local_id;
  ep->self_msg.dst_conn_id = ep->remote_id;
  ep->state = RCT_CM_EP_REP_SENT;                       /* QP at RTS already [CM-STATE-3] */
  reply(ep, RCT_CM_REP);
  arm(ep, now);
  return RCT_OK;
}

int rct_cm_ep_reject(struct rct_cm_ep *ep, uint64_t now, enum rct_cm_reject reason,
                     const void *priv, uint8_t priv_len)
{
  (void)now;
  if (ep->state != RCT_CM_EP_REQ_RCVD || priv_len > RCT_CM_PRIVATE_MAX)
    return RCT_ESTATE;
  ep->self_msg.type = RCT_CM_REJ;
  ep->self_msg.private_len = priv_len;
  if (priv_len)
    RCT_MEMCPY(ep->self_msg.private_data, priv, priv_len);
  send_msg(ep, RCT_CM_REJ, (uint16_t)reason, ep->local_id, ep->remote_id, ep->peer);
  ep->state = RCT_CM_EP_CLOSED;                         /* REQ_RCVD -> closed [CM-STATE-1] */
  ep->deadline = RCT_NEVER;
  return RCT_OK;
}

int rct_cm_ep_disconnect(struct rct_cm_ep *ep, uint64_t now)
{
  if (ep->state != RCT_CM_EP_ESTABLISHED)
    return RCT_ESTATE;
  ep->state = RCT_CM_EP_DREQ_SENT;                      /* caller: QP to ERR [CM-STATE-6] */
  reply(ep, RCT_CM_DREQ);
  arm(ep, now);
  return RCT_OK;
}

void rct_cm_ep_rc_frame(struct rct_cm_ep *ep)
{
  if (ep->state == RCT_CM_EP_REP_SENT) {
    ep->state = RCT_CM_EP_ESTABLISHED;                /* RTU lost: RC traffic proves it */
    ep->deadline = RCT_NEVER;
    event(ep, RCT_CM_EV_ESTABLISHED, 0);
  }
}

static bool same_addr(struct rct_cm_addr a, struct rct_cm_addr b)
{
  return a.ip == b.ip && a.port == b.port;
}

/* A REQ [CM-STATE-2] [CM-TMO-3]. */
static void on_req(struct rct_cm_ep *ep, struct rct_cm_addr from, const struct rct_cm_msg *m)
{
  bool dup = ep->remote_id == m->src_conn_id && same_addr(from, ep->peer);
  switch (ep->state) {
  case RCT_CM_EP_LISTEN:
    ep->peer = from;                                  /* replies go back there [CM-STATE-7] */
    ep->remote_id = m->src_conn_id;
    ep->peer_msg = *m;
    ep->state = RCT_CM_EP_REQ_RCVD;
    event(ep, RCT_CM_EV_CONNECT_REQUEST, 0);
    return;
  case RCT_CM_EP_IDLE:
    /* open but not listening: REJ NO_LISTENER, src_conn_id 0 [CM-STATE-2] [CM-STATE-5] */
    send_msg(ep, RCT_CM_REJ, RCT_CM_REJ_NO_LISTENER, 0, m->src_conn_id, from);
    return;
  case RCT_CM_EP_REP_SENT:
  case RCT_CM_EP_ESTABLISHED:
    if (dup && !ep->active) {
      reply(ep, RCT_CM_REP);                    /* duplicate REQ [CM-TMO-3] */
      ep->cnt.retransmits++;
      return;
    }
    break;
  case RCT_CM_EP_REQ_RCVD:
    if (dup)
      return;                                   /* not accepted yet [CM-TMO-3] */
    break;
  default:
    break;
  }
  ep->cnt.ignored++;                                        /* [CM-STATE-1] */
}

/* From the peer: its address and port; in REQ_SENT, before the REP names
 * the peer's reply port, its IP address and any port [CM-STATE-7]. */
static bool from_peer(const struct rct_cm_ep *ep, struct rct_cm_addr from)
{
  return ep->state == RCT_CM_EP_REQ_SENT ? from.ip == ep->peer.ip : same_addr(from, ep->peer);
}

/* REP, REJ, RTU, DREQ, DREP: only for our ID, from our peer [CM-STATE-5];
 * a forged REJ or DREQ for another ID changes nothing [SEC-FORGE-6]. */
static void on_reply(struct rct_cm_ep *ep, uint64_t now, struct rct_cm_addr from,
                     const struct rct_cm_msg *m)
{
  enum rct_cm_ep_state s = ep->state;
  if (m->dst_conn_id != ep->local_id || !from_peer(ep, from) ||
      (s != RCT_CM_EP_REQ_SENT && m->src_conn_id != ep->remote_id)) {
    ep->cnt.dropped++;
    return;
  }
  if (s == RCT_CM_EP_REQ_SENT && (m->type == RCT_CM_REP || m->type == RCT_CM_REJ))
    ep->peer = from;                                  /* the peer's reply port [CM-STATE-7] */
  if (m->type == RCT_CM_REP && s == RCT_CM_EP_REQ_SENT) {
    ep->remote_id = m->src_conn_id;
    ep->peer_msg = *m;
    ep->state = RCT_CM_EP_ESTABLISHED;
    ep->deadline = RCT_NEVER;
    ep->answer_until = now + RCT_CM_RETRY_SPAN_NS;    /* the REP's retries [CM-TMO-6] */
    event(ep, RCT_CM_EV_ESTABLISHED, 0);              /* caller: QP to RTS first [CM-STATE-3] */
    reply(ep, RCT_CM_RTU);
  } else if (m->type == RCT_CM_REP && s == RCT_CM_EP_ESTABLISHED && ep->active) {
    reply(ep, RCT_CM_RTU);                            /* duplicate REP [CM-TMO-3] */
    ep->cnt.retransmits++;
  } else if (m->type == RCT_CM_REJ && s == RCT_CM_EP_REQ_SENT) {
    ep->state = RCT_CM_EP_REJECTED;
    ep->deadline = RCT_NEVER;
    ep->peer_msg = *m;
    event(ep, RCT_CM_EV_REJECTED, m->reject_reason);
  } else if (m->type == RCT_CM_RTU && s == RCT_CM_EP_REP_SENT) {
    rct_cm_ep_rc_frame(ep);
  } else if (m->type == RCT_CM_DREQ && (s == RCT_CM_EP_ESTABLISHED || s == RCT_CM_EP_DREQ_SENT)) {
    close_conn(ep, now);
    reply(ep, RCT_CM_DREP);
  } else if (m->type == RCT_CM_DREQ && s == RCT_CM_EP_CLOSED) {
    reply(ep, RCT_CM_DREP);                           /* duplicate DREQ [CM-TMO-3] */
    ep->cnt.retransmits++;
  } else if (m->type == RCT_CM_DREP && s == RCT_CM_EP_DREQ_SENT) {
    close_conn(ep, now);
  } else {
    ep->cnt.ignored++;                                /* [CM-STATE-1] */
  }
}

void rct_cm_ep_handle_msg(struct rct_cm_ep *ep, uint64_t now, struct rct_cm_addr from,
                          const uint8_t *buf, size_t len)
{
  struct rct_cm_msg m;
  int r = rct_cm_parse(&m, buf, len);
  ep->cnt.rx++;
  if (r < 0) {
    ep->cnt.dropped++;                                /* [CM-MSG-2] */
    return;
  }
  if (r > 0) {
    /* a REQ (or, on the active side, our REP) we must refuse [CM-MSG-4] */
    if (m.type == RCT_CM_REQ)
      send_msg(ep, RCT_CM_REJ, (uint16_t)r, 0, m.src_conn_id, from);
    else if (m.type == RCT_CM_REP && ep->state == RCT_CM_EP_REQ_SENT &&
             m.dst_conn_id == ep->local_id && from_peer(ep, from)) {
      send_msg(ep, RCT_CM_REJ, (uint16_t)r, ep->local_id, m.src_conn_id, from);
      ep->state = RCT_CM_EP_REJECTED;
      ep->deadline = RCT_NEVER;
      event(ep, RCT_CM_EV_REJECTED, (uint16_t)r);
    } else
      ep->cnt.dropped++;
    return;
  }
  if (m.type == RCT_CM_REQ)
    on_req(ep, from, &m);
  else
    on_reply(ep, now, from, &m);
}

/* A retransmission deadline passed [CM-TMO-1] [CM-TMO-2]. */
void rct_cm_ep_handle_timeout(struct rct_cm_ep *ep, uint64_t now)
{
  static const uint8_t resend[] = {
    [RCT_CM_EP_REQ_SENT] = RCT_CM_REQ, [RCT_CM_EP_REP_SENT] = RCT_CM_REP,
    [RCT_CM_EP_DREQ_SENT] = RCT_CM_DREQ,
  };
  enum rct_cm_ep_state s = ep->state;
  if (ep->deadline == RCT_NEVER || now < ep->deadline)
    return;                                           /* spurious wakeup: harmless */
  if (s == RCT_CM_EP_CLOSED) {
    ep->deadline = RCT_NEVER;                         /* time wait over [CM-TMO-5] */
    event(ep, RCT_CM_EV_TIMEWAIT_EXIT, 0);
    return;
  }
  if ((unsigned)s >= sizeof(resend) || !resend[s]) {
    ep->deadline = RCT_NEVER;
    return;
  }
  if (ep->retries < RCT_CM_MAX_RETRIES) {
    ep->retries++;
    ep->cnt.retransmits++;
    reply(ep, (enum rct_cm_type)resend[s]);           /* unchanged */
    ep->deadline = now + RCT_CM_RETRY_NS;
    return;
  }
  ep->deadline = RCT_NEVER;
  if (s == RCT_CM_EP_REQ_SENT) {
    ep->state = RCT_CM_EP_TIMEDOUT;
    event(ep, RCT_CM_EV_UNREACHABLE, 0);
  } else if (s == RCT_CM_EP_REP_SENT) {
    send_msg(ep, RCT_CM_REJ, RCT_CM_REJ_TIMEOUT, ep->local_id, ep->remote_id, ep->peer);
    ep->state = RCT_CM_EP_CLOSED;
    event(ep, RCT_CM_EV_TIMEDOUT, 0);             /* caller: QP to ERR */
  } else {
    close_conn(ep, now);                              /* closed anyway [CM-TMO-2] */
  }
}

uint64_t rct_cm_ep_next_timeout(const struct rct_cm_ep *ep)
{
  return ep->deadline;
}

uint64_t rct_cm_ep_answer_until(const struct rct_cm_ep *ep)
{
  return ep->active && ep->state == RCT_CM_EP_ESTABLISHED ? ep->answer_until : 0;
}

int rct_cm_ep_poll_msg(struct rct_cm_ep *ep, uint8_t *buf, size_t cap, struct rct_cm_addr *to)
{
  struct rct_cm_msg m;
  int n;
  if (!ep->out_n)
    return 0;
  if (ep->out[0].type == RCT_CM_REQ || ep->out[0].type == RCT_CM_REP)
    m = ep->self_msg;
  else
    RCT_MEMSET(&m, 0, sizeof(m));
  m.type = (enum rct_cm_type)ep->out[0].type;
  m.version = RCT_CM_VERSION;
  m.src_conn_id = ep->out[0].src_id;
  m.dst_conn_id = ep->out[0].dst_id;
  if (m.type == RCT_CM_REJ) {
    m.reject_reason = ep->out[0].reason;
    if (ep->self_msg.type == RCT_CM_REJ) {
      m.private_len = ep->self_msg.private_len;
      RCT_MEMCPY(m.private_data, ep->self_msg.private_data, m.private_len);
    }
  }
  n = rct_cm_encode(&m, buf, cap);
  if (n < 0)
    return n;
  *to = ep->out[0].to;
  for (int i = 1; i < ep->out_n; i++)
    ep->out[i - 1] = ep->out[i];
  ep->out_n--;
  ep->cnt.tx++;
  return n;
}

int rct_cm_ep_poll_event(struct rct_cm_ep *ep, struct rct_cm_event *ev)
{
  if (!ep->ev_n)
    return 0;
  *ev = ep->ev[0];
  for (int i = 1; i < ep->ev_n; i++)
    ep->ev[i - 1] = ep->ev[i];
  ep->ev_n--;
  return 1;
}
