// rmemd.c: the memory node of proto-spec rmem.md. Owns a pool of memory,
// the clients (one rdma_cm id, protection domain, CQ and RC QP each, a
// table of regions, bytes in use against a limit) and the counters. The
// clients' control requests (SEND) are answered by replies (SEND); their
// data moves by one-sided READ and WRITE that never reach this program.
//
// One source for xv6 (user/include gives libibverbs' and librdmacm's
// header names) and Linux's rdma-core (tests/rdma/rmem.mk builds it into
// the Linux guest's overlay). One thread: poll() on the event channel and
// on one completion channel that every client's CQ reports to.
//
//   rmemd [-p port] [-m pool_mib] [-l limit_kib] [-c clients] [-n ends]
// Prints "rmemd: listening on port P (pid N)" when it accepts connections,
// one line per client that comes and goes, and its counters when a client
// ends, at exit (-n: after that many clients ended) and on SIGINT/SIGTERM
// (Linux).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <stdint.h>
#include <unistd.h>
#include <fcntl.h>
#include <poll.h>
#include <getopt.h>
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#ifdef __linux__
#include <signal.h>
#endif
#include "kernel/rmem/rmem_wire.h"
#include "user/lib/rmem/rmem_verbs.h"

#define DEFAULT_POOL_MIB 16
#define DEFAULT_CLIENTS 8
#define MAX_CLIENTS 32                          // -c's ceiling (xv6: RDMA_MAX_PD 64, one PD each)
#define SEND_DEPTH (2 * RMEM_MAX_OUTSTANDING)   // replies posted and not yet completed
#define CQ_DEPTH (SEND_DEPTH + RMEM_MAX_OUTSTANDING)

struct region {
  uint32_t id;                  // 0: slot free
  uint64_t page, npages;        // in the pool
  struct ibv_mr *mr;
};

struct client {
  int used;
  int n;                        // the client's number, for messages
  char who[24];                 // peer address
  struct rdma_cm_id *id;
  struct ibv_pd *pd;
  struct ibv_cq *cq;
  struct ibv_mr *msg_mr;        // req and rep
  uint8_t req[RMEM_MAX_OUTSTANDING][RMEM_REQ_LEN];
  uint8_t rep[RMEM_MAX_OUTSTANDING][RMEM_REP_LEN];
  int inline_ok;                // replies go inline (copied at post)
  int sends;                    // replies posted, not yet completed
  struct region regions[RMEM_MAX_REGIONS];
  int nregions;
  uint64_t bytes;
  uint32_t next_id;
};

static struct {
  int port, max_clients, max_ends;
  uint64_t pool_bytes, limit;
} opt = { RMEM_PORT, DEFAULT_CLIENTS, 0, (uint64_t)DEFAULT_POOL_MIB << 20, 0 };

static struct {
  uint8_t *base;
  uint64_t npages;
  uint8_t *busy;                // a byte per page
  uint64_t free_pages;
} pool;

// [RMEM-LIFE-3]
static struct {
  uint64_t accepted, rejected, ended;
  uint64_t requests[RMEM_OP_MAX + 1];
  uint64_t errors[RMEM_STATUS_MAX + 1];
  uint64_t alloc_regions, alloc_bytes, freed_regions, freed_bytes, reaped_regions, reaped_bytes;
} cnt;

static struct client clients[MAX_CLIENTS];
static struct rdma_event_channel *cm_chan;
static struct ibv_comp_channel *comp_chan;
static struct rdma_cm_id *listen_id;
static int nclients_seen;
static volatile int stop;

// One line, one write, so that other console output cannot split it.
static void print_counters(void) {
  char line[640];
  int n = snprintf(line, sizeof line,
                   "rmemd: counters: clients accepted %llu rejected %llu ended %llu live %llu;"
                   " requests ALLOC %llu FREE %llu STAT %llu; errors",
                   (unsigned long long)cnt.accepted, (unsigned long long)cnt.rejected,
                   (unsigned long long)cnt.ended, (unsigned long long)(cnt.accepted - cnt.ended),
                   (unsigned long long)cnt.requests[RMEM_OP_ALLOC],
                   (unsigned long long)cnt.requests[RMEM_OP_FREE],
                   (unsigned long long)cnt.requests[RMEM_OP_STAT]);
  for (int s = 1; s <= RMEM_STATUS_MAX; s++)
    n += snprintf(line + n, sizeof line - (size_t)n, " %s %llu", rmem_status_name(s),
                  (unsigned long long)cnt.errors[s]);
  snprintf(line + n, sizeof line - (size_t)n,
           "; regions allocated %llu (%llu bytes) freed %llu (%llu bytes) reaped %llu (%llu bytes);"
           " pool free %llu of %llu bytes\n",
           (unsigned long long)cnt.alloc_regions, (unsigned long long)cnt.alloc_bytes,
           (unsigned long long)cnt.freed_regions, (unsigned long long)cnt.freed_bytes,
           (unsigned long long)cnt.reaped_regions, (unsigned long long)cnt.reaped_bytes,
           (unsigned long long)(pool.free_pages * RMEM_PAGE), (unsigned long long)opt.pool_bytes);
  fputs(line, stdout);
  fflush(stdout);
}

static void die(const char *what, int err) {
  printf("rmemd: %s failed: %s\n", what, strerror(err));
  exit(1);
}

static void nonblocking(int fd) {
  if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) die("fcntl O_NONBLOCK", errno);
}

// The completion channel every client's CQ reports to, made on the first
// client's device (Linux binds a wildcard listener to no device).
static int comp_channel(struct ibv_context *verbs) {
  if (comp_chan) return 0;
  comp_chan = ibv_create_comp_channel(verbs);
  if (!comp_chan) return -1;
  nonblocking(comp_chan->fd);
  return 0;
}

// ---- the pool: first fit over a byte per page ----

// The first run of n free pages; -1 if none.
static int64_t pool_take(uint64_t n) {
  uint64_t run = 0;
  for (uint64_t p = 0; p < pool.npages; p++) {
    run = pool.busy[p] ? 0 : run + 1;
    if (run == n) {
      uint64_t first = p + 1 - n;
      memset(pool.busy + first, 1, n);
      pool.free_pages -= n;
      return (int64_t)first;
    }
  }
  return -1;
}

static void pool_give(uint64_t first, uint64_t n) {
  memset(pool.busy + first, 0, n);
  pool.free_pages += n;
}

static void pool_init(void) {
  pool.npages = opt.pool_bytes / RMEM_PAGE;
  uint8_t *raw = malloc(pool.npages * RMEM_PAGE + RMEM_PAGE);
  pool.busy = calloc(pool.npages, 1);
  if (!raw || !pool.busy) die("allocating the pool", ENOMEM);
  pool.base = (uint8_t *)(((uintptr_t)raw + RMEM_PAGE - 1) & ~(uintptr_t)(RMEM_PAGE - 1));
  pool.free_pages = pool.npages;
}

// ---- regions ----

// The client's live region id, or NULL.
static struct region *region_find(struct client *c, uint32_t id) {
  for (int i = 0; id && i < RMEM_MAX_REGIONS; i++)
    if (c->regions[i].id == id) return &c->regions[i];
  return 0;
}

// Deregisters r's MR and gives its pages back. xv6 refuses to deregister
// while the responder still uses the MR: try again for up to a second.
static int region_drop(struct region *r) {
  for (int tries = 0; ibv_dereg_mr(r->mr); tries++) {
    if (tries == 100) return -1;
    usleep(10000);
  }
  pool_give(r->page, r->npages);
  r->id = 0;
  return 0;
}

// [RMEM-OP-1] [RMEM-OP-2] [RMEM-ISO-1] [RMEM-ISO-3]
static uint16_t op_alloc(struct client *c, const struct rmem_msg *req, struct rmem_msg *rep) {
  uint64_t len = rmem_round_len(req->size);
  if (!len) return RMEM_ERANGE;
  if (c->nregions >= RMEM_MAX_REGIONS || c->bytes + len > opt.limit) return RMEM_ELIMIT;
  struct region *r = region_find(c, 0);
  for (int i = 0; !r && i < RMEM_MAX_REGIONS; i++)
    if (!c->regions[i].id) r = &c->regions[i];
  int64_t page = pool_take(len / RMEM_PAGE);
  if (page < 0) return RMEM_ENOMEM;
  uint8_t *addr = pool.base + (uint64_t)page * RMEM_PAGE;
  memset(addr, 0, len);
  r->mr = ibv_reg_mr(c->pd, addr, len,
                     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
  if (!r->mr) {
    printf("rmemd: client %d: registering %llu bytes failed: %s\n", c->n,
           (unsigned long long)len, strerror(errno));
    pool_give((uint64_t)page, len / RMEM_PAGE);
    return RMEM_ENOMEM;
  }
  do r->id = c->next_id++; while (!r->id || region_find(c, r->id) != r);
  r->page = (uint64_t)page;
  r->npages = len / RMEM_PAGE;
  c->nregions++;
  c->bytes += len;
  cnt.alloc_regions++;
  cnt.alloc_bytes += len;
  rep->region = r->id;
  rep->addr = (uint64_t)(uintptr_t)addr;
  rep->length = len;
  rep->rkey = r->mr->rkey;      // the device's key [RMEM-ISO-2]
  return RMEM_OK;
}

// [RMEM-OP-3]
static uint16_t op_free(struct client *c, const struct rmem_msg *req, struct rmem_msg *rep) {
  struct region *r = region_find(c, req->region);
  if (!r) return RMEM_EBADID;
  uint64_t len = r->npages * RMEM_PAGE;
  if (region_drop(r)) {
    printf("rmemd: client %d: deregistering region %u failed: %s\n", c->n, req->region,
           strerror(errno));
    return RMEM_EBADREQ;
  }
  c->nregions--;
  c->bytes -= len;
  cnt.freed_regions++;
  cnt.freed_bytes += len;
  return RMEM_OK;
}

// [RMEM-OP-4]
static uint16_t op_stat(struct client *c, const struct rmem_msg *req, struct rmem_msg *rep) {
  rep->nregions = (uint32_t)c->nregions;
  rep->used = c->bytes;
  rep->limit = opt.limit;
  rep->pool_free = pool.free_pages * RMEM_PAGE;
  return RMEM_OK;
}

static uint16_t (*const ops[RMEM_OP_MAX + 1])(struct client *, const struct rmem_msg *,
                                              struct rmem_msg *) = {
  [RMEM_OP_ALLOC] = op_alloc, [RMEM_OP_FREE] = op_free, [RMEM_OP_STAT] = op_stat,
};

// ---- clients ----

// Frees everything client c holds and its slot [RMEM-LIFE-1].
static void client_end(struct client *c, const char *why) {
  uint64_t regions = 0, bytes = 0;
  for (int i = 0; i < RMEM_MAX_REGIONS; i++) {
    struct region *r = &c->regions[i];
    if (!r->id) continue;
    uint64_t len = r->npages * RMEM_PAGE;
    if (region_drop(r) == 0) regions++, bytes += len;
    else printf("rmemd: client %d: region %u stays registered: %s\n", c->n, r->id, strerror(errno));
  }
  cnt.reaped_regions += regions;
  cnt.reaped_bytes += bytes;
  cnt.ended++;
  if (c->id->qp) rdma_destroy_qp(c->id);
  if (c->msg_mr) ibv_dereg_mr(c->msg_mr);
  if (c->cq) ibv_destroy_cq(c->cq);
  if (c->pd) ibv_dealloc_pd(c->pd);
  rdma_destroy_id(c->id);
  printf("rmemd: client %d (%s) ended (%s): freed %llu regions, %llu bytes\n", c->n, c->who, why,
         (unsigned long long)regions, (unsigned long long)bytes);
  memset(c, 0, sizeof *c);
  print_counters();
}

static int post_recv(struct client *c, int slot) {
  return rmemv_post_recv(c->id->qp, c->req[slot], RMEM_REQ_LEN, c->msg_mr->lkey, (uint64_t)slot);
}

// The request in receive slot `slot`, len bytes: decode, act, re-post the
// receive, reply. [RMEM-MSG-5] [RMEM-CONN-3]
static int serve(struct client *c, int slot, uint32_t len) {
  struct rmem_msg req, rep;
  int status = rmem_decode_req(c->req[slot], len, &req);
  if (status == RMEM_OK) {
    cnt.requests[req.op]++;
    rep = rmem_reply(&req, 0);
    status = ops[req.op](c, &req, &rep);
  }
  if (status != RMEM_OK) {
    rep = rmem_reply(&req, (uint16_t)status);
    cnt.errors[status]++;
  }
  if (post_recv(c, slot)) return -1;
  if (c->sends >= SEND_DEPTH) {
    printf("rmemd: client %d: %d replies unacknowledged, ending it\n", c->n, c->sends);
    return -1;
  }
  rmem_encode_rep(&rep, c->rep[slot]);
  struct ibv_sge sge = { (uint64_t)(uintptr_t)c->rep[slot], RMEM_REP_LEN, c->msg_mr->lkey };
  struct ibv_send_wr wr, *bad;
  memset(&wr, 0, sizeof wr);
  wr.wr_id = RMEM_MAX_OUTSTANDING + (uint64_t)slot;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED | (c->inline_ok ? IBV_SEND_INLINE : 0);
  if (ibv_post_send(c->id->qp, &wr, &bad)) return -1;
  c->sends++;
  return 0;
}

// Every completion of c's CQ. -1: the client is to end.
static int drain(struct client *c) {
  struct ibv_wc wc[8];
  int n;
  while ((n = ibv_poll_cq(c->cq, 8, wc)) > 0)
    for (int i = 0; i < n; i++) {
      if (wc[i].status != IBV_WC_SUCCESS) {
        if (wc[i].status != IBV_WC_WR_FLUSH_ERR)
          printf("rmemd: client %d: %s: %s\n", c->n, wc[i].wr_id < RMEM_MAX_OUTSTANDING ?
                 "receive" : "reply", ibv_wc_status_str(wc[i].status));
        return -1;
      }
      if (wc[i].wr_id >= RMEM_MAX_OUTSTANDING) c->sends--;
      else if (serve(c, (int)wc[i].wr_id, wc[i].byte_len)) return -1;
    }
  return n < 0 ? -1 : 0;
}

static void on_cq_event(void) {
  struct ibv_cq *cq;
  void *ctx;
  while (comp_chan && ibv_get_cq_event(comp_chan, &cq, &ctx) == 0) {
    struct client *c = ctx;
    ibv_ack_cq_events(cq, 1);
    if (!c->used || c->cq != cq) continue;
    if (ibv_req_notify_cq(cq, 0) || drain(c)) {
      // The QP failed (a refused access moved it to ERR: [RMEM-DATA-2]):
      // the client learns it from this disconnect if the NAK was lost [RMEM-DATA-3].
      rdma_disconnect(c->id);
      client_end(c, "its QP failed");
    }
  }
}

// Sets up a client for the connect request on id and accepts it, or
// rejects it (too many clients, no resources). [RMEM-CONN-1] [RMEM-CONN-2]
static void on_connect_request(struct rdma_cm_event *ev) {
  struct rdma_cm_id *id = ev->id;
  struct client *c = 0;
  for (int i = 0; !c && i < opt.max_clients; i++)
    if (!clients[i].used) c = &clients[i];
  struct sockaddr_in *peer = (struct sockaddr_in *)rdma_get_peer_addr(id);
  if (!c) {
    printf("rmemd: refusing a client from %s: %d clients connected\n", inet_ntoa(peer->sin_addr),
           opt.max_clients);
    cnt.rejected++;
    rdma_reject(id, 0, 0);
    rdma_destroy_id(id);
    return;
  }
  memset(c, 0, sizeof *c);
  c->used = 1;
  c->n = ++nclients_seen;
  c->id = id;
  c->next_id = 1;
  snprintf(c->who, sizeof c->who, "%s", inet_ntoa(peer->sin_addr));
  id->context = c;
  const char *what = "allocating a protection domain";
  struct ibv_device_attr da;
  struct ibv_qp_init_attr qa;
  c->pd = ibv_alloc_pd(id->verbs);
  if (!c->pd) goto fail;
  what = "creating a completion channel";
  if (comp_channel(id->verbs)) goto fail;
  what = "creating a CQ";
  c->cq = ibv_create_cq(id->verbs, CQ_DEPTH, c, comp_chan, 0);
  if (!c->cq || ibv_req_notify_cq(c->cq, 0)) goto fail;
  rmemv_qp_attr(&qa, c->cq, SEND_DEPTH, RMEM_MAX_OUTSTANDING);
  qa.cap.max_inline_data = RMEM_REP_LEN;
  what = "creating the QP";
  if (rdma_create_qp(id, c->pd, &qa)) {
    qa.cap.max_inline_data = 0;     // a device without inline sends
    if (rdma_create_qp(id, c->pd, &qa)) goto fail;
  }
  c->inline_ok = qa.cap.max_inline_data >= RMEM_REP_LEN;
  what = "registering the message buffers";
  c->msg_mr = ibv_reg_mr(c->pd, c->req, sizeof c->req + sizeof c->rep, IBV_ACCESS_LOCAL_WRITE);
  if (!c->msg_mr) goto fail;
  what = "posting the receives";
  for (int s = 0; s < RMEM_MAX_OUTSTANDING; s++)
    if (post_recv(c, s)) goto fail;
  what = "querying the device";
  if (ibv_query_device(id->verbs, &da)) goto fail;
  struct rdma_conn_param param;
  memset(&param, 0, sizeof param);
  param.responder_resources = ev->param.conn.initiator_depth;
  if (param.responder_resources > da.max_qp_rd_atom) param.responder_resources = (uint8_t)da.max_qp_rd_atom;
  if (param.responder_resources < 1) param.responder_resources = 1;
  param.initiator_depth = 1;     // it issues no READ; 0 means "the default" to xv6's rdma_cm
  param.rnr_retry_count = 7;
  what = "offering selective repeat";     // taken when the client offers it too
  if (rmemv_offer_sr(id)) goto fail;
  what = "accepting";
  if (rdma_accept(id, &param)) goto fail;
  cnt.accepted++;
  printf("rmemd: client %d (%s) connected\n", c->n, c->who);
  return;
fail:
  printf("rmemd: client from %s: %s failed: %s\n", c->who, what, strerror(errno));
  cnt.accepted++;               // client_end counts it ended
  rdma_reject(id, 0, 0);
  client_end(c, "setup failed");
}

static void on_cm_event(void) {
  struct rdma_cm_event *ev;
  while (rdma_get_cm_event(cm_chan, &ev) == 0) {
    struct rdma_cm_event copy = *ev;
    rdma_ack_cm_event(ev);      // the handlers may destroy the id
    struct client *c = copy.id->context;
    switch (copy.event) {
    case RDMA_CM_EVENT_CONNECT_REQUEST:
      on_connect_request(&copy);
      break;
    case RDMA_CM_EVENT_ESTABLISHED:
      break;
    case RDMA_CM_EVENT_DISCONNECTED:
    case RDMA_CM_EVENT_CONNECT_ERROR:
    case RDMA_CM_EVENT_UNREACHABLE:
    case RDMA_CM_EVENT_REJECTED:
      if (c && c->used && c->id == copy.id) client_end(c, rdma_event_str(copy.event));
      break;
    default:
      printf("rmemd: event %s\n", rdma_event_str(copy.event));
      break;
    }
  }
}

#ifdef __linux__
static void on_signal(int sig) { (void)sig; stop = 1; }
#endif

static void usage(void) {
  printf("usage: rmemd [-p port] [-m pool_mib] [-l limit_kib] [-c clients] [-n ends]\n"
         "  -p  rdma_cm port (default %d)\n"
         "  -m  pool size in MiB (default %d)\n"
         "  -l  each client's limit in KiB (default: the pool)\n"
         "  -c  clients at once, 1..%d (default %d)\n"
         "  -n  exit after this many clients ended (default: never)\n",
         RMEM_PORT, DEFAULT_POOL_MIB, MAX_CLIENTS, DEFAULT_CLIENTS);
  exit(2);
}

// A number in [lo, hi] or usage.
static long num(const char *s, long lo, long hi) {
  char *end;
  long v = strtol(s, &end, 10);
  if (!*s || *end || v < lo || v > hi) usage();
  return v;
}

static void parse(int argc, char **argv) {
  int ch;
  while ((ch = getopt(argc, argv, "p:m:l:c:n:h")) != -1) {
    switch (ch) {
    case 'p': opt.port = (int)num(optarg, 1, 65535); break;
    case 'm': opt.pool_bytes = (uint64_t)num(optarg, 1, 4096) << 20; break;
    case 'l': opt.limit = (uint64_t)num(optarg, 1, 1L << 30) << 10; break;
    case 'c': opt.max_clients = (int)num(optarg, 1, MAX_CLIENTS); break;
    case 'n': opt.max_ends = (int)num(optarg, 1, 1 << 30); break;
    default: usage();
    }
  }
  if (optind != argc) usage();
  if (!opt.limit) opt.limit = opt.pool_bytes;
}


static void listen_on(void) {
  struct rdma_addrinfo hints, *res;
  char service[8];
  memset(&hints, 0, sizeof hints);
  hints.ai_flags = RAI_PASSIVE;
  hints.ai_port_space = RDMA_PS_TCP;
  snprintf(service, sizeof service, "%d", opt.port);
  cm_chan = rdma_create_event_channel();
  if (!cm_chan) die("creating an event channel", errno);
  if (rdma_getaddrinfo(NULL, service, &hints, &res)) die("rdma_getaddrinfo", errno);
  if (rdma_create_id(cm_chan, &listen_id, NULL, RDMA_PS_TCP)) die("rdma_create_id", errno);
  if (rdma_bind_addr(listen_id, res->ai_src_addr)) die("binding the port", errno);
  rdma_freeaddrinfo(res);
  if (rdma_listen(listen_id, MAX_CLIENTS)) die("rdma_listen", errno);
  nonblocking(cm_chan->fd);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  parse(argc, argv);
  pool_init();
  listen_on();
#ifdef __linux__
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
#endif
  printf("rmemd: listening on port %d (pid %d), pool %llu bytes, limit %llu bytes per client\n",
         opt.port, getpid(), (unsigned long long)opt.pool_bytes, (unsigned long long)opt.limit);
  while (!stop && (!opt.max_ends || (int)cnt.ended < opt.max_ends)) {
    struct pollfd pfd[2] = { { cm_chan->fd, POLLIN, 0 }, { comp_chan ? comp_chan->fd : -1, POLLIN, 0 } };
    if (poll(pfd, comp_chan ? 2 : 1, 1000) < 0 && errno != EINTR) die("poll", errno);
    on_cq_event();
    on_cm_event();
  }
  for (int i = 0; i < MAX_CLIENTS; i++)
    if (clients[i].used) {
      rdma_disconnect(clients[i].id);
      client_end(&clients[i], "rmemd exits");
    }
  rdma_destroy_id(listen_id);
  printf("rmemd: exiting\n");
  print_counters();
  return 0;
}
