// rdma_cm_util.c: see rdma_cm_util.h.
#include "user.h"
#include "rdma_cm_util.h"
#include "kernel/cm/ibcm.h"

int rdmau_cm_listen(struct rdma_cm_id **listen, int port) {
  struct sockaddr_in sin;
  rdmax_sockaddr(&sin, 0, (uint16_t)port);
  if (rdma_create_id(NULL, listen, NULL, RDMA_PS_TCP) < 0) return -1;
  if (rdma_bind_addr(*listen, (struct sockaddr *)&sin) < 0 || rdma_listen(*listen, 1) < 0) {
    int e = errno;
    rdma_destroy_id(*listen);
    errno = e;
    return -1;
  }
  return 0;
}

int rdmau_cm_resolve(struct rdma_cm_id **id, uint32_t ip, int port) {
  struct sockaddr_in sin;
  rdmax_sockaddr(&sin, ip, (uint16_t)port);
  if (rdma_create_id(NULL, id, NULL, RDMA_PS_TCP) < 0) return -1;
  if (rdma_resolve_addr(*id, NULL, (struct sockaddr *)&sin, RDMAU_RESOLVE_MS) < 0 ||
      rdma_resolve_route(*id, RDMAU_RESOLVE_MS) < 0) {
    int e = errno;
    rdma_destroy_id(*id);
    errno = e;
    return -1;
  }
  return 0;
}

int rdmau_cm_wait_disconnect(struct rdma_cm_id *id, int timeout_ms) {
  uint64 end = clock_ns() + (uint64)timeout_ms * 1000000ULL;
  struct rdma_cm_event *e;
  for (;;) {
    uint64 now = clock_ns();
    if (now >= end) { errno = ETIMEDOUT; return -1; }
    if (rdmax_get_cm_event_timeout(id->channel, &e, (int)((end - now) / 1000000ULL) + 1) < 0) return -1;
    int done = e->event == RDMA_CM_EVENT_DISCONNECTED;
    rdma_ack_cm_event(e);
    if (done) return 0;
  }
}

// What a REJ's reason means to the one who asked (rdma_reject_msg names it).
static const struct { int reason; const char *meaning; } rej_meaning[] = {
  { IBCM_REJ_CONSUMER, "the server rejected the request" },
  { IBCM_REJ_INVALID_SERVICE_ID, "no listener on that port" },
  { IBCM_REJ_NO_RESOURCES, "the server is out of resources" },
  { IBCM_REJ_NO_QP, "the server has no QP for it" },
  { IBCM_REJ_UNSUPPORTED_REQ, "the request's parameters are not supported" },
  { IBCM_REJ_UNSUPPORTED_CLASS_VERSION, "unsupported CM version" },
  { IBCM_REJ_TIMEOUT, "the server gave up waiting for us" },
  { IBCM_REJ_STALE_CONN, "a stale connection" },
  { IBCM_REJ_INVALID_PATH_MTU, "the path MTU is not supported" },
  { IBCM_REJ_INSUFFICIENT_RESP_RES, "the server has too few READ resources" },
};

static const char *meaning_of(int reason) {
  for (unsigned i = 0; i < sizeof rej_meaning / sizeof rej_meaning[0]; i++)
    if (rej_meaning[i].reason == reason) return rej_meaning[i].meaning;
  return "reason unknown";
}

// The REJ's private data, if it starts with a line of text ended by a NUL
// (rdmacp puts its reason there; the IB CM pads the REJ's room with zeros).
static const char *rej_text(const struct rdma_cm_event *e) {
  const char *t = e->param.conn.private_data;
  int n = e->param.conn.private_data_len;
  if (!t || n < 2 || t[0] == 0) return NULL;
  for (int i = 0; i < n; i++) {
    if (t[i] == 0) return t;
    if (t[i] < ' ' || t[i] > '~') return NULL;
  }
  return NULL;
}

const char *rdmau_cm_why(const struct rdma_cm_id *id, int err) {
  static char why[160];
  const struct rdma_cm_event *e = id ? id->event : NULL;
  if (err == ECONNREFUSED && e && e->event == RDMA_CM_EVENT_REJECTED) {
    int r = e->status;
    const char *t = rej_text(e);
    snprintf(why, sizeof why, "refused (REJ %s: %s%s%s)", rdma_reject_msg((struct rdma_cm_id *)id, r),
             meaning_of(r), t ? ": " : "", t ? t : "");
  } else if (err == ECONNREFUSED) {
    snprintf(why, sizeof why, "refused (%s)", meaning_of(IBCM_REJ_INVALID_SERVICE_ID));
  } else if (err == EHOSTUNREACH) {
    snprintf(why, sizeof why, "unreachable (no ARP answer within %d.%d s: no host at that address, or it is down)",
             RDMAU_RESOLVE_MS / 1000, RDMAU_RESOLVE_MS % 1000 / 100);
  } else if (err == ETIMEDOUT) {
    snprintf(why, sizeof why, "no answer (the REQ's retries ran out: no connection manager at that "
             "address, or the peer is down)");
  } else {
    snprintf(why, sizeof why, "%s", strerror(err));
  }
  return why;
}

void rdmau_cm_die(const char *prog, const char *what, uint32_t ip, int port,
                  const struct rdma_cm_id *id, int err) {
  printf("%s: %s %s port %d: %s\n", prog, what, inet_ntoa((struct in_addr){ htonl(ip) }), port,
         rdmau_cm_why(id, err));
  exit(1);
}
