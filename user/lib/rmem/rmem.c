// rmem.c: librmem (rmem.h): a connection to a memory node. Owns the
// connection's rdma_cm id and verbs objects, its control exchange (one
// request at a time, its reply matched by req_id [RMEM-MSG-4]), the data
// accesses in flight (a slot each) and the finished ones not yet taken.
// Builds for xv6 and Linux (rdma-core) from this one source.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <time.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include "rmem.h"
#include "rmem_verbs.h"

#define WR_CTRL   RMEM_MAX_OUTSTANDING          // wr_id of a request's SEND; below: a receive slot
#define WR_DATA   (WR_CTRL + 1)                 // + the slot of a data access
#define SEND_DEPTH (RMEM_MAX_INFLIGHT + RMEM_MAX_OUTSTANDING)
#define CQ_DEPTH  (SEND_DEPTH + RMEM_MAX_OUTSTANDING)
#define MAX_RD_ATOMIC 16                        // READs in flight we ask for (xv6's limit)

struct slot {
  int used;
  uint64_t tag;
  struct ibv_mr *tmp;                           // registered for this access alone
};

struct rmem {
  struct rdma_event_channel *ch;
  struct rdma_cm_id *id;
  struct ibv_pd *pd;
  struct ibv_comp_channel *comp;
  struct ibv_cq *cq;
  struct ibv_mr *msg_mr;                        // covers req and rep
  uint8_t req[RMEM_MAX_OUTSTANDING][RMEM_REQ_LEN];
  uint8_t rep[RMEM_MAX_OUTSTANDING][RMEM_REP_LEN];
  uint32_t next_req;
  uint32_t want;                                // the first req_id awaited
  int nwant, got, sent;                         // how many; replies come, SENDs completed
  uint32_t gotmask;                             // bit i: want + i came
  struct rmem_msg reply[RMEM_MAX_OUTSTANDING];
  struct slot slots[RMEM_MAX_INFLIGHT];
  int inflight;
  struct rmem_comp done[RMEM_MAX_INFLIGHT];
  int ndone;
  struct { void *buf; size_t len; struct ibv_mr *mr; } bufs[RMEM_MAX_BUFS];
  int dead;                                     // errno every call gets, 0 while usable
  uint32_t dropped;                             // replies dropped [RMEM-MSG-4] [RMEM-MSG-5]
  char err[160];
};

static char connect_err[160];                   // rmem_last_error(NULL)

static int fail(struct rmem *m, int err, const char *fmt, ...) {
  char text[sizeof connect_err];     // the arguments may quote the old text
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  memcpy(m ? m->err : connect_err, text, sizeof text);
  errno = err;
  return -1;
}

const char *rmem_last_error(struct rmem *m) { return m ? m->err : connect_err; }

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

// Status of the memory node -> errno (rmem.h) [RMEM-ERR-1].
static const int status_errno[RMEM_STATUS_MAX + 1] = {
  [RMEM_OK] = 0, [RMEM_EBADREQ] = EINVAL, [RMEM_EBADVER] = EINVAL, [RMEM_EBADID] = ENOENT,
  [RMEM_ERANGE] = ERANGE, [RMEM_ENOMEM] = ENOMEM, [RMEM_ELIMIT] = ENOSPC,
};

static int wc_errno(enum ibv_wc_status s) {
  if (s == IBV_WC_SUCCESS) return 0;
  if (s == IBV_WC_REM_ACCESS_ERR) return EACCES;                 // [RMEM-DATA-2]
  return ECONNRESET;                          // flushed or retries spent: [RMEM-DATA-3]
}

static int post_recv(struct rmem *m, int slot) {
  return rmemv_post_recv(m->id->qp, m->rep[slot], RMEM_REP_LEN, m->msg_mr->lkey, (uint64_t)slot);
}

// A reply arrived in receive slot `slot`.
static void on_reply(struct rmem *m, int slot, uint32_t len) {
  struct rmem_msg r;
  uint32_t i = 0;
  if (rmem_decode_rep(m->rep[slot], len, &r) == 0 && (i = r.req_id - m->want) < (uint32_t)m->nwant &&
      !(m->gotmask & (1u << i))) {
    m->reply[i] = r;
    m->gotmask |= 1u << i;
    m->got++;
  } else {
    m->dropped++;
  }
  if (post_recv(m, slot)) m->dead = ECONNRESET;
}

static void on_data(struct rmem *m, int slot, enum ibv_wc_status status) {
  struct slot *s = &m->slots[slot];
  if (s->tmp) ibv_dereg_mr(s->tmp);
  m->done[m->ndone++] = (struct rmem_comp){ s->tag, wc_errno(status) };
  memset(s, 0, sizeof *s);
  m->inflight--;
}

static void on_wc(struct rmem *m, const struct ibv_wc *wc) {
  if (wc->wr_id >= WR_DATA) {
    on_data(m, (int)(wc->wr_id - WR_DATA), wc->status);
  } else if (wc->status != IBV_WC_SUCCESS) {
    if (!m->dead) fail(m, ECONNRESET, "%s failed: %s", wc->wr_id == WR_CTRL ? "sending a request"
                       : "receiving a reply", ibv_wc_status_str(wc->status));
  } else if (wc->wr_id == WR_CTRL) {
    m->sent++;
  } else {
    on_reply(m, (int)wc->wr_id, wc->byte_len);
  }
  if (wc->status != IBV_WC_SUCCESS && !m->dead) {
    if (wc->wr_id >= WR_DATA)
      fail(m, ECONNRESET, "the QP failed after an access's %s", ibv_wc_status_str(wc->status));
    m->dead = ECONNRESET;       // the QP is in the error state: reconnect
  }
}

// Takes every completion the CQ holds; the number taken.
static int drain(struct rmem *m) {
  struct ibv_wc wc[8];
  int n, total = 0;
  while ((n = ibv_poll_cq(m->cq, 8, wc)) > 0) {
    for (int i = 0; i < n; i++) on_wc(m, &wc[i]);
    total += n;
  }
  if (n < 0 && !m->dead) m->dead = ECONNRESET;
  return total;
}

// The connection's CM events: a DISCONNECTED means the memory node is gone [RMEM-LIFE-2].
static void cm_events(struct rmem *m) {
  struct rdma_cm_event *ev;
  while (rdma_get_cm_event(m->ch, &ev) == 0) {
    int e = ev->event;
    rdma_ack_cm_event(ev);
    if (e == RDMA_CM_EVENT_DISCONNECTED || e == RDMA_CM_EVENT_DEVICE_REMOVAL) {
      if (!m->dead) fail(m, ECONNRESET, "the memory node disconnected");
      m->dead = ECONNRESET;
    }
  }
}

// Sleeps until a completion or CM event may wait, or timeout_ms passed
// (< 0: no limit). Arms the CQ and drains it once more first (a completion
// may have come before the arm).
static int sleep_cq(struct rmem *m, int timeout_ms) {
  if (ibv_req_notify_cq(m->cq, 0)) return -1;
  if (drain(m)) return 0;
  struct pollfd pfd[2] = { { m->comp->fd, POLLIN, 0 }, { m->ch->fd, POLLIN, 0 } };
  if (poll(pfd, 2, timeout_ms) < 0 && errno != EINTR) return -1;
  struct ibv_cq *cq;
  void *ctx;
  while (ibv_get_cq_event(m->comp, &cq, &ctx) == 0) ibv_ack_cq_events(cq, 1);
  cm_events(m);
  drain(m);
  return 0;
}

// Waits until done(m) or the deadline; 0, or -1 with errno.
static int wait_until(struct rmem *m, int (*done)(struct rmem *), int timeout_ms, const char *what) {
  int64_t deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
  drain(m);
  while (!done(m)) {
    if (m->dead) return fail(m, m->dead, "%s: the connection failed (%s)", what, m->err[0] ? m->err : strerror(m->dead));
    int64_t left = deadline < 0 ? -1 : deadline - now_ms();
    if (deadline >= 0 && left <= 0)
      return fail(m, ETIMEDOUT, "%s: nothing within %d ms", what, timeout_ms);
    if (sleep_cq(m, left < 0 || left > 1000 ? 1000 : (int)left))
      return fail(m, errno, "%s: waiting for completions: %s", what, strerror(errno));
  }
  return 0;
}

static int reply_done(struct rmem *m) { return m->got == m->nwant && m->sent == m->nwant; }

// Sends len bytes of each of m->req[0..n), whose req_ids are id .. id+n-1,
// all at once (n <= RMEM_MAX_OUTSTANDING [RMEM-CONN-3]), and waits for
// every reply, in any order, into m->reply[]; 0, or -1 with errno from the
// transport. [RMEM-MSG-4]
static int exchange(struct rmem *m, uint32_t id, size_t len, int n, const char *op) {
  if (m->dead) return fail(m, m->dead, "%s: the connection is gone", op);
  m->want = id;
  m->nwant = n;
  m->got = m->sent = 0;
  m->gotmask = 0;
  for (int i = 0; i < n; i++) {
    struct ibv_sge sge = { (uint64_t)(uintptr_t)m->req[i], (uint32_t)len, m->msg_mr->lkey };
    struct ibv_send_wr wr, *bad;
    memset(&wr, 0, sizeof wr);
    wr.wr_id = WR_CTRL;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    if (ibv_post_send(m->id->qp, &wr, &bad)) {
      m->nwant = 0;
      return fail(m, errno, "%s: posting the request failed: %s", op, strerror(errno));
    }
  }
  int r = wait_until(m, reply_done, RMEM_TIMEOUT_MS, op);
  m->nwant = 0;
  return r;
}

// n consecutive fresh req_ids, none 0; the first.
static uint32_t new_req_ids(struct rmem *m, int n) {
  if (m->next_req + (uint32_t)n < m->next_req) m->next_req = 0;
  m->next_req += (uint32_t)n;
  return m->next_req - (uint32_t)n + 1;
}

// Sends req and waits for its reply into m->reply; 0 with RMEM_OK, else -1
// with errno from the status [RMEM-ERR-1] or the transport.
static int call(struct rmem *m, struct rmem_msg *req) {
  const char *op = rmem_op_name(req->op);
  req->req_id = new_req_ids(m, 1);
  rmem_encode_req(req, m->req[0]);
  if (exchange(m, req->req_id, RMEM_REQ_LEN, 1, op)) return -1;
  uint16_t st = m->reply[0].status;
  if (st != RMEM_OK)
    return fail(m, status_errno[st <= RMEM_STATUS_MAX ? st : RMEM_EBADREQ],
                "%s: the memory node answered %s (%s)", op, rmem_status_name(st), rmem_strerror(st));
  return 0;
}

int rmem_call_raw(struct rmem *m, const uint8_t *req, size_t len, int n, struct rmem_msg *rep) {
  if (len > RMEM_REQ_LEN || n < 1 || n > RMEM_MAX_OUTSTANDING || (len < 12 && n > 1))
    return fail(m, EINVAL, "raw requests: %d of %lu bytes", n, (unsigned long)len);
  uint32_t id = new_req_ids(m, n);
  for (int k = 0; k < n; k++) {
    memcpy(m->req[k], req, len);
    for (size_t i = 8; i < 12 && i < len; i++) m->req[k][i] = (uint8_t)((id + (uint32_t)k) >> (8 * (11 - i)));
  }
  if (exchange(m, len >= 12 ? id : 0, len, n, "raw request")) return -1;
  memcpy(rep, m->reply, (size_t)n * sizeof *rep);
  return 0;
}

int rmem_alloc(struct rmem *m, uint64_t size, struct rmem_region *r) {
  struct rmem_msg req = rmem_request(RMEM_OP_ALLOC, 0);
  req.size = size;
  if (!r) return fail(m, EINVAL, "ALLOC: no region to fill in");
  if (call(m, &req)) return -1;
  const struct rmem_msg *a = &m->reply[0];
  *r = (struct rmem_region){ a->region, a->rkey, a->addr, a->length };
  return 0;
}

int rmem_free(struct rmem *m, uint32_t id) {
  struct rmem_msg req = rmem_request(RMEM_OP_FREE, 0);
  req.region = id;
  return call(m, &req);
}

int rmem_stat(struct rmem *m, struct rmem_stat *st) {
  struct rmem_msg req = rmem_request(RMEM_OP_STAT, 0);
  if (call(m, &req)) return -1;
  const struct rmem_msg *a = &m->reply[0];
  *st = (struct rmem_stat){ a->nregions, a->used, a->limit, a->pool_free };
  return 0;
}

// ---- data ----

static struct ibv_mr *buf_mr(struct rmem *m, const void *buf, size_t len) {
  for (int i = 0; i < RMEM_MAX_BUFS; i++) {
    const uint8_t *b = m->bufs[i].buf;
    if (b && (const uint8_t *)buf >= b && (const uint8_t *)buf + len <= b + m->bufs[i].len)
      return m->bufs[i].mr;
  }
  return 0;
}

static int post(struct rmem *m, int write, const struct rmem_region *r, uint64_t off,
                const void *buf, size_t len, uint64_t tag) {
  const char *op = write ? "WRITE" : "READ";
  if (m->dead) return fail(m, m->dead, "%s: the connection is gone", op);
  if (!r || !buf || len == 0 || len > 0x7fffffffu) return fail(m, EINVAL, "%s: bad region, buffer or length", op);
  if (off > r->length || len > r->length - off)
    return fail(m, ERANGE, "%s of %lu bytes at %llu: outside region %u (%llu bytes)", op,
                (unsigned long)len, (unsigned long long)off, r->id, (unsigned long long)r->length);
  if (m->inflight == RMEM_MAX_INFLIGHT)
    return fail(m, EAGAIN, "%s: %d accesses in flight already", op, RMEM_MAX_INFLIGHT);
  int s = 0;
  while (m->slots[s].used) s++;
  struct ibv_mr *mr = buf_mr(m, buf, len), *tmp = 0;
  if (!mr) {
    mr = tmp = ibv_reg_mr(m->pd, (void *)buf, len, IBV_ACCESS_LOCAL_WRITE);
    if (!mr) return fail(m, errno, "%s: registering the local buffer failed: %s", op, strerror(errno));
  }
  struct ibv_sge sge = { (uint64_t)(uintptr_t)buf, (uint32_t)len, mr->lkey };
  struct ibv_send_wr wr, *bad;
  memset(&wr, 0, sizeof wr);
  wr.wr_id = WR_DATA + (uint64_t)s;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = write ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;     // [RMEM-DATA-1]
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = r->addr + off;
  wr.wr.rdma.rkey = r->rkey;
  if (ibv_post_send(m->id->qp, &wr, &bad)) {
    int err = errno;
    if (tmp) ibv_dereg_mr(tmp);
    return fail(m, err, "%s: posting failed: %s", op, strerror(err));
  }
  m->slots[s] = (struct slot){ 1, tag, tmp };
  m->inflight++;
  return 0;
}

int rmem_post_read(struct rmem *m, const struct rmem_region *r, uint64_t off, void *buf,
                   size_t len, uint64_t tag) {
  return post(m, 0, r, off, buf, len, tag);
}

int rmem_post_write(struct rmem *m, const struct rmem_region *r, uint64_t off, const void *buf,
                    size_t len, uint64_t tag) {
  return post(m, 1, r, off, buf, len, tag);
}

int rmem_inflight(struct rmem *m) { return m->inflight; }

int rmem_poll(struct rmem *m, struct rmem_comp *c, int max) {
  drain(m);
  int n = max < m->ndone ? max : m->ndone;
  memcpy(c, m->done, (size_t)n * sizeof *c);
  memmove(m->done, m->done + n, (size_t)(m->ndone - n) * sizeof *c);
  m->ndone -= n;
  return n;
}

static int have_done(struct rmem *m) { return m->ndone > 0; }

int rmem_wait(struct rmem *m, struct rmem_comp *c, int max, int timeout_ms) {
  if (max < 1) return fail(m, EINVAL, "rmem_wait: max %d", max);
  drain(m);
  if (!m->ndone && !m->inflight) return fail(m, EINVAL, "rmem_wait: nothing in flight");
  if (!m->ndone && wait_until(m, have_done, timeout_ms, "waiting for an access")) return -1;
  return rmem_poll(m, c, max);
}

// One access, waited for; its error as errno.
static int sync_access(struct rmem *m, int write, const struct rmem_region *r, uint64_t off,
                       const void *buf, size_t len) {
  const uint64_t tag = 0x73796e63ull;            // "sync"; rmem_wait hands back only this one's
  if (m->inflight) return fail(m, EBUSY, "%s: posted accesses are still in flight", write ? "WRITE" : "READ");
  if (post(m, write, r, off, buf, len, tag)) return -1;
  struct rmem_comp c;
  if (rmem_wait(m, &c, 1, RMEM_TIMEOUT_MS) != 1) return -1;
  if (c.error)
    return fail(m, c.error, "%s of %lu bytes at region %u + %llu failed: %s", write ? "WRITE" : "READ",
                (unsigned long)len, r->id, (unsigned long long)off,
                c.error == EACCES ? "remote access error (bad rkey or range)" : strerror(c.error));
  return 0;
}

int rmem_read(struct rmem *m, const struct rmem_region *r, uint64_t off, void *buf, size_t len) {
  return sync_access(m, 0, r, off, buf, len);
}

int rmem_write(struct rmem *m, const struct rmem_region *r, uint64_t off, const void *buf,
               size_t len) {
  return sync_access(m, 1, r, off, buf, len);
}

int rmem_reg(struct rmem *m, void *buf, size_t len) {
  for (int i = 0; i < RMEM_MAX_BUFS; i++)
    if (!m->bufs[i].buf) {
      m->bufs[i].mr = ibv_reg_mr(m->pd, buf, len, IBV_ACCESS_LOCAL_WRITE);
      if (!m->bufs[i].mr) return fail(m, errno, "registering %lu bytes: %s", (unsigned long)len, strerror(errno));
      m->bufs[i].buf = buf;
      m->bufs[i].len = len;
      return 0;
    }
  return fail(m, ENOMEM, "registering a buffer: %d registered already", RMEM_MAX_BUFS);
}

int rmem_dereg(struct rmem *m, void *buf) {
  for (int i = 0; i < RMEM_MAX_BUFS; i++)
    if (m->bufs[i].buf == buf) {
      if (ibv_dereg_mr(m->bufs[i].mr)) return fail(m, errno, "deregistering: %s", strerror(errno));
      memset(&m->bufs[i], 0, sizeof m->bufs[i]);
      return 0;
    }
  return fail(m, EINVAL, "deregistering: the buffer was not registered");
}

// ---- connection ----

// The next CM event of m's id, which must be `want`, within timeout_ms.
static int cm_wait(struct rmem *m, enum rdma_cm_event_type want, int timeout_ms, const char *what) {
  int64_t deadline = now_ms() + timeout_ms;
  for (;;) {
    struct rdma_cm_event *ev;
    if (rdma_get_cm_event(m->ch, &ev) == 0) {
      int e = ev->event, status = ev->status;
      rdma_ack_cm_event(ev);
      if ((int)e == (int)want) return 0;
      int err = e == RDMA_CM_EVENT_REJECTED ? ECONNREFUSED
              : e == RDMA_CM_EVENT_UNREACHABLE ? ETIMEDOUT : status < 0 ? -status : EIO;
      return fail(0, err, "%s: %s (status %d)", what, rdma_event_str(e), status);
    }
    if (errno != EAGAIN) return fail(0, errno, "%s: rdma_get_cm_event: %s", what, strerror(errno));
    int64_t left = deadline - now_ms();
    if (left <= 0) return fail(0, ETIMEDOUT, "%s: no event within %d ms", what, timeout_ms);
    struct pollfd pfd = { m->ch->fd, POLLIN, 0 };
    poll(&pfd, 1, left > 1000 ? 1000 : (int)left);
  }
}

static int setup_qp(struct rmem *m) {
  struct ibv_qp_init_attr qa;
  m->pd = ibv_alloc_pd(m->id->verbs);
  if (!m->pd) return fail(0, errno, "allocating a protection domain: %s", strerror(errno));
  m->comp = ibv_create_comp_channel(m->id->verbs);
  if (!m->comp) return fail(0, errno, "creating a completion channel: %s", strerror(errno));
  if (fcntl(m->comp->fd, F_SETFL, fcntl(m->comp->fd, F_GETFL) | O_NONBLOCK) < 0)
    return fail(0, errno, "making the completion channel non-blocking: %s", strerror(errno));
  m->cq = ibv_create_cq(m->id->verbs, CQ_DEPTH, m, m->comp, 0);
  if (!m->cq) return fail(0, errno, "creating a CQ of %d: %s", CQ_DEPTH, strerror(errno));
  rmemv_qp_attr(&qa, m->cq, SEND_DEPTH, RMEM_MAX_OUTSTANDING);
  if (rdma_create_qp(m->id, m->pd, &qa)) return fail(0, errno, "creating the QP: %s", strerror(errno));
  m->msg_mr = ibv_reg_mr(m->pd, m->req, sizeof m->req + sizeof m->rep, IBV_ACCESS_LOCAL_WRITE);
  if (!m->msg_mr) return fail(0, errno, "registering the message buffers: %s", strerror(errno));
  for (int s = 0; s < RMEM_MAX_OUTSTANDING; s++)          // [RMEM-CONN-2]
    if (post_recv(m, s)) return fail(0, errno, "posting the receives: %s", strerror(errno));
  return 0;
}

static int connect_to(struct rmem *m, const char *host, int port, const struct rmem_opts *o) {
  struct rdma_addrinfo hints, *res;
  char service[8];
  memset(&hints, 0, sizeof hints);
  hints.ai_port_space = RDMA_PS_TCP;
  snprintf(service, sizeof service, "%d", port ? port : RMEM_PORT);
  m->ch = rdma_create_event_channel();
  if (!m->ch) return fail(0, errno, "creating an event channel: %s", strerror(errno));
  if (fcntl(m->ch->fd, F_SETFL, fcntl(m->ch->fd, F_GETFL) | O_NONBLOCK) < 0)
    return fail(0, errno, "making the event channel non-blocking: %s", strerror(errno));
  if (rdma_create_id(m->ch, &m->id, m, RDMA_PS_TCP)) return fail(0, errno, "rdma_create_id: %s", strerror(errno));
  if (rdma_getaddrinfo(host, service, &hints, &res))
    return fail(0, EINVAL, "the address %s port %s: rdma_getaddrinfo failed", host, service);
  int r = rdma_resolve_addr(m->id, NULL, res->ai_dst_addr, 2000);
  rdma_freeaddrinfo(res);
  if (r) return fail(0, errno, "resolving %s: %s", host, strerror(errno));
  if (cm_wait(m, RDMA_CM_EVENT_ADDR_RESOLVED, RMEM_TIMEOUT_MS, "resolving the address")) return -1;
  if (rdma_resolve_route(m->id, 2000)) return fail(0, errno, "resolving the route: %s", strerror(errno));
  if (cm_wait(m, RDMA_CM_EVENT_ROUTE_RESOLVED, RMEM_TIMEOUT_MS, "resolving the route")) return -1;
  if (setup_qp(m)) return -1;
  struct ibv_device_attr da;
  if (ibv_query_device(m->id->verbs, &da)) return fail(0, errno, "querying the device: %s", strerror(errno));
  struct rdma_conn_param param;
  memset(&param, 0, sizeof param);
  param.initiator_depth = (uint8_t)(da.max_qp_init_rd_atom < MAX_RD_ATOMIC ? da.max_qp_init_rd_atom
                                                                           : MAX_RD_ATOMIC);
  param.responder_resources = 1;   // the node issues no READ; 0 means "the default" to xv6's rdma_cm
  param.retry_count = 7;
  param.rnr_retry_count = 7;
  if (o && o->sr && rmemv_offer_sr(m->id))
    return fail(0, errno, "asking for selective repeat: %s", strerror(errno));
  if (rdma_connect(m->id, &param)) return fail(0, errno, "rdma_connect: %s", strerror(errno));
  char what[64];
  snprintf(what, sizeof what, "connecting to %s port %s", host, service);
  return cm_wait(m, RDMA_CM_EVENT_ESTABLISHED, RMEM_TIMEOUT_MS, what);
}

struct rmem *rmem_connect(const char *host, int port) { return rmem_connect_opts(host, port, 0); }

struct rmem *rmem_connect_opts(const char *host, int port, const struct rmem_opts *o) {
  if (!host || port < 0 || port > 65535) {
    fail(0, EINVAL, "rmem_connect: bad host or port");
    return 0;
  }
  struct rmem *m = calloc(1, sizeof *m);
  if (!m) {
    fail(0, ENOMEM, "rmem_connect: out of memory");
    return 0;
  }
  if (connect_to(m, host, port, o)) {
    int err = errno;
    rmem_close(m);
    errno = err;
    return 0;
  }
  return m;
}

void rmem_close(struct rmem *m) {
  if (!m) return;
  if (m->id && m->id->qp && !m->dead) rdma_disconnect(m->id);
  for (int i = 0; i < RMEM_MAX_INFLIGHT; i++)
    if (m->slots[i].tmp) ibv_dereg_mr(m->slots[i].tmp);
  for (int i = 0; i < RMEM_MAX_BUFS; i++)
    if (m->bufs[i].mr) ibv_dereg_mr(m->bufs[i].mr);
  if (m->id && m->id->qp) rdma_destroy_qp(m->id);
  if (m->msg_mr) ibv_dereg_mr(m->msg_mr);
  if (m->cq) ibv_destroy_cq(m->cq);
  if (m->comp) ibv_destroy_comp_channel(m->comp);
  if (m->pd) ibv_dealloc_pd(m->pd);
  if (m->id) rdma_destroy_id(m->id);
  if (m->ch) rdma_destroy_event_channel(m->ch);
  free(m);
}
