// cm_rdma.c: xrpeer's connections (the pcm_* calls of peer.h) through
// Linux's librdmacm: rdma_cm over the InfiniBand CM (the kernel's ib_cm and rdma_cm send and
// answer the CM MADs on QP1), port space RDMA_PS_TCP, so the service ID is
// rdma_cm's IP one for the port. The QP stays the role's own (cq.c makes it
// before the connection), so the rdma_cm ID has none, as rdma_accept(3),
// rdma_establish(3) and rdma_notify(3) describe: every QP move takes its
// attributes from rdma_init_qp_attr; the passive side is in RTS before
// rdma_accept; the active side moves on the CONNECT_RESPONSE and then
// calls rdma_establish (which sends the RTU); a COMM_EST on the QP while
// the passive side waits for the RTU (the peer's first RC frame came
// first) is handed to rdma_cm with rdma_notify. One listener per process:
// xrpeer's roles serve one connection at a time.
#include "peer.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#define RESOLVE_MS 5000          // address (ARP) and route resolution, each
#define ANSWER_MS 30000          // REP or REJ for our REQ, RTU for our REP (the kernel's CM resends within)
#define DISCONNECT_MS 10000      // DREP for our DREQ (the kernel's CM gives up on its own before)
#define RETRIES 7                // the transport and RNR retry counts we ask for (RNR 7: no limit)
#define BACKLOG 8

static struct rdma_event_channel *listen_ch;
static struct rdma_cm_id *listen_id;

// The REJ reasons a peer is likely to send (IBTA Vol. 1, the REJ message's reason table).
static const struct { int reason; const char *name; } rej_reasons[] = {
  { 1, "no QP available" }, { 3, "no resources" }, { 4, "timeout" }, { 5, "unsupported request" },
  { 6, "invalid communication ID" }, { 8, "invalid service ID: nobody listens" },
  { 9, "invalid transport service type" }, { 10, "stale connection" }, { 26, "invalid path MTU" },
  { 27, "insufficient responder resources" }, { 28, "consumer reject" }, { 29, "invalid RNR retry count" },
  { 31, "unsupported class version" },
};

static const char *rej_name(int reason) {
  for (size_t i = 0; i < sizeof rej_reasons / sizeof rej_reasons[0]; i++)
    if (rej_reasons[i].reason == reason) return rej_reasons[i].name;
  return "?";
}

static void report(const char *what) { fprintf(stderr, "xrpeer: %s: %s\n", what, strerror(errno)); }

static uint8_t min8(uint8_t a, uint8_t b) { return a < b ? a : b; }

static int nonblock(int fd) {
  int fl = fcntl(fd, F_GETFL);
  return fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ? -1 : 0;
}

static int left_ms(uint64_t end) {
  uint64_t t = now_ns();
  if (t >= end) return 0;
  uint64_t ms = (end - t + 999999) / 1000000;
  return ms > INT_MAX ? INT_MAX : (int)ms;
}

// Takes the device's pending async events; a COMM_EST of our QP goes to
// rdma_cm (rdma_notify(3): required of a QP not made by rdma_create_qp).
static void take_async(struct pconn *c) {
  struct ibv_async_event e;
  while (ibv_get_async_event(c->dev->ctx, &e) == 0) {
    int est = e.event_type == IBV_EVENT_COMM_EST && e.element.qp == c->qp;
    ibv_ack_async_event(&e);
    if (est) {
      fprintf(stderr, "xrpeer: established by the first RC frame (no RTU)\n");
      rdma_notify(c->id, IBV_EVENT_COMM_EST);
    }
  }
}

// The next event on ch within timeout_ms, or NULL (errno ETIMEDOUT on
// timeout); the caller acks it. With watch, c's QP's async events are taken
// meanwhile (take_async).
static struct rdma_cm_event *next_event(struct rdma_event_channel *ch, struct pconn *c, int watch, int timeout_ms) {
  uint64_t end = now_ns() + (uint64_t)timeout_ms * 1000000u;
  for (;;) {
    struct rdma_cm_event *ev;
    if (rdma_get_cm_event(ch, &ev) == 0) return ev;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return NULL;
    int ms = left_ms(end);
    if (ms == 0) { errno = ETIMEDOUT; return NULL; }
    struct pollfd pf[2] = { { .fd = ch->fd, .events = POLLIN }, { .fd = watch ? c->dev->ctx->async_fd : -1,
                                                                  .events = POLLIN } };
    if (poll(pf, 2, ms) < 0 && errno != EINTR) return NULL;
    if (pf[1].revents & POLLIN) take_async(c);
  }
}

// Waits for an event of type want (skipping others when skip); 0, or -1
// with a message naming what was being done.
static int wait_for(struct pconn *c, enum rdma_cm_event_type want, int skip, int timeout_ms, const char *what) {
  uint64_t end = now_ns() + (uint64_t)timeout_ms * 1000000u;
  for (;;) {
    struct rdma_cm_event *ev = next_event(c->ch, c, 0, left_ms(end));
    if (!ev) {
      fprintf(stderr, "xrpeer: %s: %s\n", what, errno == ETIMEDOUT ? "no answer (ETIMEDOUT)" : strerror(errno));
      return -1;
    }
    enum rdma_cm_event_type t = ev->event;
    int status = ev->status;
    rdma_ack_cm_event(ev);
    if (t == want && status == 0) return 0;
    if (skip && t != want) continue;
    fprintf(stderr, "xrpeer: %s: %s (status %d)\n", what, rdma_event_str(t), status);
    return -1;
  }
}

// An event's connection parameters: the private data (its first
// PCM_PRIVATE_MAX bytes), the peer's READ resources and its QPN.
static void take_conn(struct pconn *c, const struct rdma_cm_event *ev) {
  const struct rdma_conn_param *p = &ev->param.conn;
  c->private_len = p->private_data ? min8(p->private_data_len, PCM_PRIVATE_MAX) : 0;
  memcpy(c->private_data, p->private_data, c->private_len);
  c->peer_resp_res = p->responder_resources;
  c->peer_init_depth = p->initiator_depth;
  c->peer_qpn = p->qp_num;
}

static struct rdma_conn_param conn_param(struct pconn *c, const struct pcm_param *p, uint8_t resp, uint8_t init) {
  return (struct rdma_conn_param){ .private_data = p ? p->private_data : NULL,
                                   .private_data_len = p ? p->private_len : 0, .responder_resources = resp,
                                   .initiator_depth = init, .retry_count = RETRIES, .rnr_retry_count = RETRIES,
                                   .qp_num = c->qp->qp_num };
}

// ---------------------------------------------------------------- QP moves

// rdma_cm's attributes for moving c's QP to state s.
static int attrs_for(struct pconn *c, enum ibv_qp_state s, struct ibv_qp_attr *a, int *mask) {
  memset(a, 0, sizeof *a);
  a->qp_state = s;
  if (rdma_init_qp_attr(c->id, a, mask) == 0) return 0;
  report("rdma_init_qp_attr");
  return -1;
}

static int modify(struct pconn *c, struct ibv_qp_attr *a, int mask, const char *what) {
  if (ibv_modify_qp(c->qp, a, mask) == 0) return 0;
  report(what);
  return -1;
}

int pcm_qp_init(struct pconn *c) {
  struct ibv_qp_attr a;
  struct ibv_qp_init_attr ia;
  int mask;
  if (ibv_query_qp(c->qp, &a, IBV_QP_STATE, &ia)) return -1;
  if (a.qp_state != IBV_QPS_RESET) return 0;
  if (attrs_for(c, IBV_QPS_INIT, &a, &mask)) return -1;
  a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                      IBV_ACCESS_REMOTE_ATOMIC;
  return modify(c, &a, mask | IBV_QP_ACCESS_FLAGS, "QP to INIT");
}

// RTR with the path MTU capped by p's limit (our QP only: the CM announces
// the route's MTU) and resp READs served at once.
static int rqp_rtr(struct pconn *c, const struct pcm_param *p, uint8_t resp) {
  struct ibv_qp_attr a;
  int mask;
  if (attrs_for(c, IBV_QPS_RTR, &a, &mask)) return -1;
  if (p && p->mtu_limit && p->mtu_limit < a.path_mtu) {
    fprintf(stderr, "xrpeer: our path MTU capped at %d (the CM's is %d)\n", pcm_mtu_bytes(p->mtu_limit),
            pcm_mtu_bytes(a.path_mtu));
    a.path_mtu = p->mtu_limit;
  }
  a.max_dest_rd_atomic = resp;
  if (modify(c, &a, mask | IBV_QP_MAX_DEST_RD_ATOMIC, "QP to RTR")) return -1;
  c->path_mtu = a.path_mtu;
  c->peer_qpn = a.dest_qp_num;
  c->peer_psn = a.rq_psn;
  return 0;
}

// RTS with p's local ACK timeout (if set) and init READs outstanding.
static int rqp_rts(struct pconn *c, const struct pcm_param *p, uint8_t init) {
  struct ibv_qp_attr a;
  int mask;
  if (attrs_for(c, IBV_QPS_RTS, &a, &mask)) return -1;
  if (p && p->timeout) a.timeout = p->timeout;
  a.max_rd_atomic = init;
  if (modify(c, &a, mask | IBV_QP_TIMEOUT | IBV_QP_MAX_QP_RD_ATOMIC, "QP to RTS")) return -1;
  c->my_psn = a.sq_psn;
  return 0;
}

// ---------------------------------------------------------------- passive side

int pcm_listen(int port) {
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)(port ? port : PCM_PORT)),
                           .sin_addr.s_addr = htonl(INADDR_ANY) };
  listen_ch = rdma_create_event_channel();
  if (!listen_ch || nonblock(listen_ch->fd) || rdma_create_id(listen_ch, &listen_id, NULL, RDMA_PS_TCP) ||
      rdma_bind_addr(listen_id, (struct sockaddr *)&a) || rdma_listen(listen_id, BACKLOG)) {
    report("rdma_cm listen");
    return -1;
  }
  return listen_ch->fd;
}

void pcm_unlisten(int lsock) {
  (void)lsock;
  if (listen_id) rdma_destroy_id(listen_id);
  if (listen_ch) rdma_destroy_event_channel(listen_ch);
  listen_id = NULL;
  listen_ch = NULL;
}

// The next CONNECT_REQUEST; its ID moves to a channel of its own.
int pcm_get_request(int lsock, struct pconn *c, int timeout_ms) {
  (void)lsock;
  uint64_t end = now_ns() + (uint64_t)timeout_ms * 1000000u;
  for (;;) {
    struct rdma_cm_event *ev = next_event(listen_ch, c, 0, left_ms(end));
    if (!ev) return -1;
    int req = ev->event == RDMA_CM_EVENT_CONNECT_REQUEST;
    if (req) {
      c->id = ev->id;
      take_conn(c, ev);
    }
    rdma_ack_cm_event(ev);
    if (req) break;
  }
  c->ch = rdma_create_event_channel();
  if (!c->ch || nonblock(c->ch->fd) || rdma_migrate_id(c->id, c->ch)) {
    report("rdma_migrate_id");
    rdma_reject(c->id, NULL, 0);
    return -1;
  }
  struct sockaddr *from = rdma_get_peer_addr(c->id);
  if (from->sa_family == AF_INET) memcpy(&c->peer, from, sizeof c->peer);
  c->state = PCM_REQ_RCVD;
  return 0;
}

int pcm_reject(struct pconn *c, uint16_t reason) {
  (void)reason;                 // rdma_cm's REJ says "consumer reject" (28)
  c->state = PCM_CLOSED;
  return rdma_reject(c->id, NULL, 0);
}

// RTR, RTS, REP; then waits for RTU (rdma_cm's ESTABLISHED).
int pcm_accept(struct pconn *c, const struct pcm_param *p) {
  if (c->state != PCM_REQ_RCVD || !c->qp) return -1;
  uint8_t resp = min8(c->dev->resp_res, c->peer_init_depth), init = min8(c->dev->init_depth, c->peer_resp_res);
  if (nonblock(c->dev->ctx->async_fd) || pcm_qp_init(c) || rqp_rtr(c, p, resp) || rqp_rts(c, p, init)) {
    pcm_reject(c, 0);
    return -1;
  }
  struct rdma_conn_param cp = conn_param(c, p, resp, init);
  if (rdma_accept(c->id, &cp)) { report("rdma_accept"); return -1; }
  c->state = PCM_REP_SENT;
  struct rdma_cm_event *ev = next_event(c->ch, c, 1, ANSWER_MS);
  if (!ev) {
    fprintf(stderr, "xrpeer: no RTU: %s\n", strerror(errno));
  } else {
    enum rdma_cm_event_type t = ev->event;
    rdma_ack_cm_event(ev);
    if (t == RDMA_CM_EVENT_ESTABLISHED) { c->state = PCM_ESTABLISHED; return 0; }
    fprintf(stderr, "xrpeer: accept: %s\n", rdma_event_str(t));
  }
  pcm_qp_error(c);
  c->state = PCM_CLOSED;
  return -1;
}

// ---------------------------------------------------------------- active side

// The answer to our REQ: a REP (RTR, RTS, RTU) or a REJ.
static int answer(struct pconn *c, struct rdma_cm_event *ev, const struct pcm_param *p) {
  enum rdma_cm_event_type t = ev->event;
  int status = ev->status;
  if (t == RDMA_CM_EVENT_CONNECT_RESPONSE || t == RDMA_CM_EVENT_REJECTED) take_conn(c, ev);
  rdma_ack_cm_event(ev);
  if (t == RDMA_CM_EVENT_REJECTED) {
    c->reject_reason = (uint16_t)status;
    c->state = PCM_REJECTED;
    fprintf(stderr, "xrpeer: rejected: %s (reason %d)\n", rej_name(status), status);
    return -1;
  }
  if (t != RDMA_CM_EVENT_CONNECT_RESPONSE) {
    fprintf(stderr, "xrpeer: connect: %s (status %d)\n", rdma_event_str(t), status);
    c->state = PCM_CLOSED;
    return -1;
  }
  uint8_t resp = min8(c->dev->resp_res, c->peer_init_depth), init = min8(c->dev->init_depth, c->peer_resp_res);
  if (rqp_rtr(c, p, resp) || rqp_rts(c, p, init) || (rdma_establish(c->id) && (report("rdma_establish"), 1))) {
    rdma_reject(c->id, NULL, 0);
    c->state = PCM_CLOSED;
    return -1;
  }
  c->state = PCM_ESTABLISHED;
  return 0;
}

int pcm_connect(struct pconn *c, uint32_t ip, int port, const struct pcm_param *p) {
  if (!c->qp) return -1;
  struct sockaddr_in src = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(c->dev->ipv4) };
  c->peer = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons((uint16_t)(port ? port : PCM_PORT)),
                                  .sin_addr.s_addr = htonl(ip) };
  c->ch = rdma_create_event_channel();
  if (!c->ch || nonblock(c->ch->fd) || rdma_create_id(c->ch, &c->id, NULL, RDMA_PS_TCP)) {
    report("rdma_create_id");
    return -1;
  }
  if (rdma_resolve_addr(c->id, (struct sockaddr *)&src, (struct sockaddr *)&c->peer, RESOLVE_MS) ||
      wait_for(c, RDMA_CM_EVENT_ADDR_RESOLVED, 0, RESOLVE_MS * 2, "resolve address") ||
      rdma_resolve_route(c->id, RESOLVE_MS) ||
      wait_for(c, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, RESOLVE_MS * 2, "resolve route") || pcm_qp_init(c))
    return -1;
  struct rdma_conn_param cp = conn_param(c, p, c->dev->resp_res, c->dev->init_depth);
  if (rdma_connect(c->id, &cp)) { report("rdma_connect"); return -1; }
  c->state = PCM_REQ_SENT;
  struct rdma_cm_event *ev = next_event(c->ch, c, 0, ANSWER_MS);
  if (!ev) {
    fprintf(stderr, "xrpeer: connect: no answer (%s)\n", errno == ETIMEDOUT ? "ETIMEDOUT" : strerror(errno));
    c->state = PCM_CLOSED;
    return -1;
  }
  return answer(c, ev, p);
}

// ---------------------------------------------------------------- the end

// Our DREQ; waits for DISCONNECTED (the DREP, or the CM's own timeout).
int pcm_disconnect(struct pconn *c) {
  if (c->state != PCM_ESTABLISHED) return -1;
  pcm_qp_error(c);
  if (rdma_disconnect(c->id)) report("rdma_disconnect");
  else wait_for(c, RDMA_CM_EVENT_DISCONNECTED, 1, DISCONNECT_MS, "disconnect");
  c->state = PCM_CLOSED;
  return 0;
}

// The peer's DREQ (DISCONNECTED), answered with our DREP (rdma_disconnect).
int pcm_wait_disconnect(struct pconn *c, int timeout_ms) {
  if (c->state != PCM_ESTABLISHED) return -1;
  if (wait_for(c, RDMA_CM_EVENT_DISCONNECTED, 1, timeout_ms, "wait for DREQ")) return -1;
  pcm_qp_error(c);
  rdma_disconnect(c->id);
  c->state = PCM_CLOSED;
  return 0;
}

void pcm_close(struct pconn *c) {
  if (c->id) rdma_destroy_id(c->id);
  if (c->ch) rdma_destroy_event_channel(c->ch);
  c->id = NULL;
  c->ch = NULL;
}
