// rping.c: the RDMA ping-pong test of librdmacm's rping, speaking its
// application protocol, so that it runs against Linux's unmodified rping in
// either role; connections through rdma_cm (rdma_cm.h) only. Owns the
// options, the four buffers of a connection and the ping-pong's order.
//
//   rping -s [-vVd] [-P] [-a address] [-p port] [-C count] [-S size]
//   rping -c [-vVd] -a address [-p port] [-C count] [-S size]
//
// One ping (docs/rdma.md, "rping"; every message a SEND of 16 bytes):
//   client: fills its start buffer with the ping's text, advertises it
//           {be64 addr, be32 rkey, be32 size}
//   server: RDMA READs that many bytes into its buffer, SENDs a go-ahead
//   client: advertises its second (destination) buffer
//   server: RDMA WRITEs its buffer there (the text and its NUL), go-ahead
//   client: with -V compares the two buffers; with -v prints "ping data: "
// -C pings (default 0: for ever), then the client disconnects. The server
// serves -C pings (0: any number) until the client disconnects, then ends,
// or with -P waits for the next client (one after another).
#include "user.h"
#include "poll.h"
#include "rdma_cm.h"
#include "rdma_cm_util.h"
#include "rdma_util.h"

#define RPING_PORT 7174               // rping's default port
#define RPING_FMT "rdma-ping-%d: "    // the text before a ping's pattern
// The smallest size holds the text of the largest count and a NUL:
// strlen("rdma-ping-2147483647: ") + 1; the largest is rping's buffer
// (64 KiB) less one.
#define RPING_MIN_SIZE 23
#define RPING_MAX_SIZE 65535
#define RPING_DEFAULT_SIZE 64
#define RPING_ADV 16                  // the advertisement: be64 addr, be32 rkey, be32 size
#define RPING_WAIT_MS 60000           // the longest wait for the peer's next step
#define RPING_PATTERN_FIRST 65        // the pattern runs 'A'..'z' and wraps
#define RPING_PATTERN_LAST 122

struct opts {
  int server, client, verbose, validate, debug, persistent;
  uint32_t ip;                        // -a, host order (server: 0 = any)
  int port;
  uint32_t count;                     // 0: for ever
  uint32_t size;
};

// The completions a step waits for; each is also the wr_id of its WR.
enum { EV_SEND = 1, EV_RECV = 2, EV_READ = 4, EV_WRITE = 8 };
static const char *const ev_name[] = {
  [EV_SEND] = "SEND of a 16-byte message", [EV_RECV] = "receive of a 16-byte message",
  [EV_READ] = "RDMA READ of the client's ping", [EV_WRITE] = "RDMA WRITE of the ping back",
};

// One connection: its id, verbs resources, buffers and what has completed.
struct conn {
  struct rdma_cm_id *id;
  struct ibv_pd *pd;
  struct ibv_comp_channel *comp;
  struct ibv_cq *cq;
  struct ibv_mr *recv_mr, *send_mr, *start_mr, *rdma_mr;
  uint8_t recv_buf[RPING_ADV], send_buf[RPING_ADV], adv[RPING_ADV];
  char *start_buf, *rdma_buf;        // client: the ping and its copy; server: rdma_buf only
  uint32_t size;
  int got;                           // EV_* bits completed, not yet taken by a step
  uint32_t peer_ip;
};

static struct opts opt;

static void die(const char *fmt, const char *what) {
  printf("rping: ");
  printf(fmt, what);
  printf("\n");
  exit(1);
}

static void debug(const char *fmt, const char *what) {
  if (!opt.debug) return;
  printf("rping: ");
  printf(fmt, what);
  printf("\n");
}

static const char *ipstr(uint32_t ip) { return inet_ntoa((struct in_addr){ htonl(ip) }); }

static void usage(void) {
  printf("usage: rping -s [-vVd] [-P] [-a address] [-p port] [-C count] [-S size]\n"
         "       rping -c [-vVd] -a address [-p port] [-C count] [-S size]\n"
         "  -s / -c       server / client\n"
         "  -a address    server: the address to bind (default any); client: the server's\n"
         "  -p port       the rdma_cm port: 1..65535 (default %d)\n"
         "  -C count      pings over the connection: 0..2147483647 (default 0, for ever)\n"
         "  -S size       bytes of a ping: %d..%d (default %d)\n"
         "  -v            print the ping data\n"
         "  -V            validate the ping data (the client compares what came back)\n"
         "  -d            print the connection's steps\n"
         "  -P            server: serve clients one after another until killed\n",
         RPING_PORT, RPING_MIN_SIZE, RPING_MAX_SIZE, RPING_DEFAULT_SIZE);
}

static void parse(int argc, char **argv) {
  int c;
  opt.port = RPING_PORT;
  opt.size = RPING_DEFAULT_SIZE;
  while ((c = getopt(argc, argv, "scvVdPha:p:C:S:")) != -1) {
    if (c == 's') opt.server = 1;
    else if (c == 'c') opt.client = 1;
    else if (c == 'v') opt.verbose = 1;
    else if (c == 'V') opt.validate = 1;
    else if (c == 'd') opt.debug = 1;
    else if (c == 'P') opt.persistent = 1;
    else if (c == 'h') { usage(); exit(0); }
    else if (c == 'a' && (rdmau_parse_ipv4(optarg, &opt.ip) < 0)) {
      printf("rping: -a %s: not an IPv4 address (a.b.c.d)\n", optarg);
      exit(2);
    }
    else if (c == 'p') opt.port = (int)rdmau_num("rping", "-p", optarg, 1, 65535, "");
    else if (c == 'C') opt.count = (uint32_t)rdmau_num("rping", "-C", optarg, 0, 2147483647, "pings");
    else if (c == 'S') opt.size = (uint32_t)rdmau_num("rping", "-S", optarg, RPING_MIN_SIZE, RPING_MAX_SIZE, "bytes");
    else if (c == '?') { printf("rping: rping -h lists the options\n"); exit(2); }
  }
  const char *bad = opt.server == opt.client ? "say -s (server) or -c (client), one of them"
                  : opt.client && opt.ip == 0 ? "the client needs the server's address (-a a.b.c.d)"
                  : optind < argc ? "unexpected arguments after the options" : NULL;
  if (bad) { printf("rping: %s; rping -h lists the options\n", bad); exit(2); }
}

// ---- the advertisement ----

static void advertise(struct conn *c, const char *buf, const struct ibv_mr *mr) {
  uint64_t addr = htobe64((uint64_t)buf);
  uint32_t rkey = htonl(mr->rkey), size = htonl(c->size);
  memcpy(c->send_buf, &addr, 8);
  memcpy(c->send_buf + 8, &rkey, 4);
  memcpy(c->send_buf + 12, &size, 4);
}

// The advertisement in c->adv: its address, rkey and size.
static void advertised(const struct conn *c, uint64_t *addr, uint32_t *rkey, uint32_t *size) {
  memcpy(addr, c->adv, 8);
  memcpy(rkey, c->adv + 8, 4);
  memcpy(size, c->adv + 12, 4);
  *addr = be64toh(*addr);
  *rkey = ntohl(*rkey);
  *size = ntohl(*size);
}

// ---- resources ----

static struct ibv_mr *reg(struct conn *c, void *buf, uint32_t len) {
  struct ibv_mr *mr = ibv_reg_mr(c->pd, buf, len,
                                 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
  if (!mr) die("cannot register %s", "a buffer's memory");
  return mr;
}

static void post_recv(struct conn *c) {
  struct ibv_sge sge = { (uint64_t)c->recv_buf, RPING_ADV, c->recv_mr->lkey };
  struct ibv_recv_wr wr = { .wr_id = EV_RECV, .sg_list = &sge, .num_sge = 1 }, *bad;
  if (ibv_post_recv(c->id->qp, &wr, &bad)) die("cannot post a receive (%s)", strerror(errno));
}

// The id's PD, CQ (with a completion channel), QP and buffers, and the
// receive for the peer's first message, before the connection exists.
static void setup(struct conn *c, struct rdma_cm_id *id) {
  memset(c, 0, sizeof *c);
  c->id = id;
  c->size = opt.size;
  c->pd = ibv_alloc_pd(id->verbs);
  c->comp = c->pd ? ibv_create_comp_channel(id->verbs) : NULL;
  c->cq = c->comp ? ibv_create_cq(id->verbs, 8, NULL, c->comp, 0) : NULL;
  if (!c->cq) die("cannot create a PD, completion channel and CQ (%s)", strerror(errno));
  struct ibv_qp_init_attr ia = { .send_cq = c->cq, .recv_cq = c->cq, .qp_type = IBV_QPT_RC,
    .cap = { .max_send_wr = 4, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1 } };
  if (rdma_create_qp(id, c->pd, &ia)) die("cannot create the QP (%s)", strerror(errno));
  c->start_buf = malloc(c->size);
  c->rdma_buf = malloc(c->size);
  if (!c->start_buf || !c->rdma_buf) die("out of memory for %s", "the buffers");
  memset(c->start_buf, 0, c->size);
  memset(c->rdma_buf, 0, c->size);
  c->recv_mr = reg(c, c->recv_buf, RPING_ADV);
  c->send_mr = reg(c, c->send_buf, RPING_ADV);
  c->start_mr = reg(c, c->start_buf, c->size);
  c->rdma_mr = reg(c, c->rdma_buf, c->size);
  if (ibv_req_notify_cq(c->cq, 0)) die("cannot arm the CQ (%s)", strerror(errno));
  post_recv(c);
}

// The id's channel blocking (for rdma_connect, rdma_accept and
// rdma_disconnect, which wait for their event on it) or not (during the
// ping-pong, so that a disconnect is seen between completions).
static void nonblocking(struct conn *c, int on) {
  if (fcntl(c->id->channel->fd, F_SETFL, on ? O_NONBLOCK : 0) < 0)
    die("cannot set the event channel's mode (%s)", strerror(errno));
}

static void teardown(struct conn *c) {
  rdma_destroy_qp(c->id);
  ibv_dereg_mr(c->recv_mr);
  ibv_dereg_mr(c->send_mr);
  ibv_dereg_mr(c->start_mr);
  ibv_dereg_mr(c->rdma_mr);
  ibv_destroy_cq(c->cq);
  ibv_destroy_comp_channel(c->comp);
  ibv_dealloc_pd(c->pd);
  free(c->start_buf);
  free(c->rdma_buf);
  rdma_destroy_id(c->id);
}

// ---- completions and the peer's disconnect ----

// One completion: the message received is copied out and its receive
// posted again at once (the peer's next message may follow our next SEND
// immediately). A failed completion other than a flush ends the program.
// Returns 0, or -1 when the QP was flushed (the connection is ending).
static int take_wc(struct conn *c, const struct ibv_wc *wc) {
  int ev = (int)wc->wr_id;
  if (wc->status == IBV_WC_WR_FLUSH_ERR) return -1;
  if (ev != EV_SEND && ev != EV_RECV && ev != EV_READ && ev != EV_WRITE) return 0;
  if (wc->status != IBV_WC_SUCCESS) {
    printf("rping: %s (peer %s) failed: %s\n", ev_name[ev], ipstr(c->peer_ip), ibv_wc_status_str(wc->status));
    exit(1);
  }
  if (ev == EV_RECV) {
    if (wc->byte_len != RPING_ADV) {
      printf("rping: Received bogus data, size %u (a message is %d bytes)\n", wc->byte_len, RPING_ADV);
      exit(1);
    }
    if (c->got & EV_RECV) die("a message from %s came before the last one was used", ipstr(c->peer_ip));
    memcpy(c->adv, c->recv_buf, RPING_ADV);
    post_recv(c);
  }
  c->got |= ev;
  return 0;
}

// A DISCONNECTED (or other) event on the id's channel, without blocking:
// 1 when the connection has ended.
static int cm_ended(struct conn *c) {
  struct rdma_cm_event *e;
  if (rdma_get_cm_event(c->id->channel, &e) < 0) return 0;
  int type = e->event;
  rdma_ack_cm_event(e);
  debug("cma event %s", rdma_event_str(type));
  return type == RDMA_CM_EVENT_DISCONNECTED || type == RDMA_CM_EVENT_DEVICE_REMOVAL;
}

// Waits until every completion of `want` has come, and takes them: 1; 0
// when the peer disconnected first. More than RPING_WAIT_MS without
// progress ends the program, naming what it waited for.
static int await(struct conn *c, int want, const char *what) {
  uint64 end = clock_ns() + RPING_WAIT_MS * 1000000ULL;
  struct ibv_wc wc;
  for (;;) {
    while (ibv_poll_cq(c->cq, 1, &wc) == 1)
      if (take_wc(c, &wc) < 0) return 0;
    if ((c->got & want) == want) { c->got &= ~want; return 1; }
    if (cm_ended(c)) return 0;
    uint64 now = clock_ns();
    if (now >= end) {
      printf("rping: no %s from %s within %d s\n", what, ipstr(c->peer_ip), RPING_WAIT_MS / 1000);
      exit(1);
    }
    struct pollfd p[2] = { { c->comp->fd, POLLIN, 0 }, { c->id->channel->fd, POLLIN, 0 } };
    if (poll(p, 2, (int)((end - now) / 1000000ULL) + 1) < 0) die("poll: %s", strerror(errno));
    if (p[0].revents & POLLIN) {
      struct ibv_cq *cq;
      void *ctx;
      if (ibv_get_cq_event(c->comp, &cq, &ctx) == 0) ibv_ack_cq_events(cq, 1);
      if (ibv_req_notify_cq(c->cq, 0)) die("cannot arm the CQ (%s)", strerror(errno));
    }
  }
}

static void post_sq(struct conn *c, int ev, char *buf, uint32_t len, const struct ibv_mr *mr,
                    uint64_t raddr, uint32_t rkey) {
  static const enum ibv_wr_opcode op[] = { [EV_SEND] = IBV_WR_SEND, [EV_READ] = IBV_WR_RDMA_READ,
                                           [EV_WRITE] = IBV_WR_RDMA_WRITE };
  struct ibv_sge sge = { (uint64_t)buf, len, mr->lkey };
  struct ibv_send_wr wr = { .wr_id = (uint64_t)ev, .sg_list = &sge, .num_sge = 1, .opcode = op[ev],
                            .send_flags = IBV_SEND_SIGNALED }, *bad;
  wr.wr.rdma.remote_addr = raddr;
  wr.wr.rdma.rkey = rkey;
  if (ibv_post_send(c->id->qp, &wr, &bad)) die("cannot post a %s", ev_name[ev]);
}

static void send_msg(struct conn *c) { post_sq(c, EV_SEND, (char *)c->send_buf, RPING_ADV, c->send_mr, 0, 0); }

// ---- the client ----

// Ping n's text: "rdma-ping-n: ", then printable characters from `first`
// on, one more each byte, 'z' wrapping to 'A'; the last byte a NUL.
static void fill_ping(char *buf, uint32_t size, uint32_t n, int first) {
  int k = snprintf(buf, size, RPING_FMT, (int)n);
  int ch = first;
  for (uint32_t i = (uint32_t)k; i < size; i++) {
    buf[i] = (char)ch;
    ch = ch == RPING_PATTERN_LAST ? RPING_PATTERN_FIRST : ch + 1;
  }
  buf[size - 1] = 0;
}

// Ping n of the client: 1; 0 when the server ended the connection; -1
// when -V found the data changed.
static int client_ping(struct conn *c, uint32_t n, int first) {
  fill_ping(c->start_buf, c->size, n, first);
  memset(c->rdma_buf, 0, c->size);
  advertise(c, c->start_buf, c->start_mr);
  send_msg(c);
  if (!await(c, EV_SEND | EV_RECV, "go-ahead after the server's RDMA READ")) return 0;
  advertise(c, c->rdma_buf, c->rdma_mr);
  send_msg(c);
  if (!await(c, EV_SEND | EV_RECV, "go-ahead after the server's RDMA WRITE")) return 0;
  if (opt.validate && memcmp(c->start_buf, c->rdma_buf, c->size) != 0) {
    uint32_t k = 0;
    while (c->start_buf[k] == c->rdma_buf[k]) k++;
    printf("rping: data mismatch! ping %u: byte %u of %u sent 0x%x, came back 0x%x\n", n, k, c->size,
           (uint8_t)c->start_buf[k], (uint8_t)c->rdma_buf[k]);
    return -1;
  }
  if (opt.verbose) printf("ping data: %s\n", c->rdma_buf);
  return 1;
}

static void client(void) {
  struct rdma_cm_id *id;
  struct conn c;
  if (rdmau_cm_resolve(&id, opt.ip, opt.port)) rdmau_cm_die("rping", "connect to", opt.ip, opt.port, NULL, errno);
  debug("resolved %s", ipstr(opt.ip));
  setup(&c, id);
  c.peer_ip = opt.ip;
  struct rdma_conn_param p = { .responder_resources = 1, .initiator_depth = 1, .retry_count = 7,
                               .rnr_retry_count = 7 };
  if (rdma_connect(id, &p)) rdmau_cm_die("rping", "connect to", opt.ip, opt.port, id, errno);
  nonblocking(&c, 1);
  debug("connected to %s", ipstr(opt.ip));
  int first = RPING_PATTERN_FIRST, r = 1;
  uint32_t n;
  for (n = 0; r == 1 && (opt.count == 0 || n < opt.count); n++) {
    r = client_ping(&c, n, first);
    first = first == RPING_PATTERN_LAST ? RPING_PATTERN_FIRST : first + 1;
  }
  if (r == 0) {
    printf("rping: the server %s ended the connection after %u pings\n", ipstr(opt.ip), n - 1);
    exit(1);
  }
  nonblocking(&c, 0);
  if (rdma_disconnect(id))
    printf("rping: disconnect from %s: %s\n", ipstr(opt.ip), strerror(errno));
  debug("disconnected from %s", ipstr(opt.ip));
  teardown(&c);
  exit(r < 0);
}

// ---- the server ----

// One ping served: 1; 0 when the client disconnected; -1 when this side
// ends the connection (the client's ping does not fit).
static int server_ping(struct conn *c) {
  if (!await(c, EV_RECV, "ping advertisement")) return 0;
  uint64_t raddr;
  uint32_t rkey, len;
  advertised(c, &raddr, &rkey, &len);
  if (opt.debug) printf("rping: recv rkey 0x%x addr 0x%lx len %u\n", rkey, raddr, len);
  if (len > c->size) {
    printf("rping: the client's ping is %u bytes, more than this server's -S %u: start the server with -S %u\n",
           len, c->size, len);
    return -1;
  }
  post_sq(c, EV_READ, c->rdma_buf, len, c->rdma_mr, raddr, rkey);
  if (!await(c, EV_READ, "RDMA READ completion")) return 0;
  c->rdma_buf[c->size - 1] = 0;      // the client's text ends in a NUL; ours does for sure
  if (opt.verbose) printf("server ping data: %s\n", c->rdma_buf);
  send_msg(c);
  if (!await(c, EV_SEND | EV_RECV, "advertisement of the client's destination buffer")) return 0;
  advertised(c, &raddr, &rkey, &len);
  // The text and its NUL, as rping writes, but no more than the buffer advertised.
  uint32_t n = (uint32_t)strlen(c->rdma_buf) + 1;
  post_sq(c, EV_WRITE, c->rdma_buf, n < len ? n : len, c->rdma_mr, raddr, rkey);
  if (!await(c, EV_WRITE, "RDMA WRITE completion")) return 0;
  send_msg(c);
  return 1;
}

// One client, from its request to its disconnect.
static void serve(struct rdma_cm_id *id) {
  struct conn c;
  setup(&c, id);
  c.peer_ip = ntohl(((struct sockaddr_in *)rdma_get_peer_addr(id))->sin_addr.s_addr);
  struct rdma_conn_param p = { .responder_resources = 1, .initiator_depth = 1 };
  if (rdma_accept(id, &p)) {
    printf("rping: accept of %s: %s\n", ipstr(c.peer_ip), strerror(errno));
    teardown(&c);
    return;
  }
  nonblocking(&c, 1);
  debug("connection from %s", ipstr(c.peer_ip));
  uint32_t n = 0;
  int r = 1;
  while ((opt.count == 0 || n < opt.count) && (r = server_ping(&c)) == 1) n++;
  // -C pings served: as Linux's rping, no more; the client is to disconnect.
  if (opt.count && n == opt.count && await(&c, EV_RECV, "disconnect after the last ping")) {
    printf("rping: %s sent more than -C %u pings\n", ipstr(c.peer_ip), opt.count);
    r = -1;
  }
  if (r < 0) {                       // this side ends it
    nonblocking(&c, 0);
    rdma_disconnect(id);
  }
  if (opt.debug) printf("rping: %s disconnected after %u pings\n", ipstr(c.peer_ip), n);
  teardown(&c);
}

// A synchronous id listening on -a's address (any without -a) and -p's port.
static struct rdma_cm_id *listen_on(uint32_t ip, int port) {
  struct rdma_cm_id *id;
  struct sockaddr_in sin;
  memset(&sin, 0, sizeof sin);
  sin.sin_family = AF_INET;
  sin.sin_addr.s_addr = htonl(ip);
  sin.sin_port = htons((uint16_t)port);
  if (rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP) || rdma_bind_addr(id, (struct sockaddr *)&sin) ||
      rdma_listen(id, 1))
    rdmau_cm_die("rping", "listen on", ip, port, NULL, errno);
  return id;
}

static void server(void) {
  struct rdma_cm_id *listen = listen_on(opt.ip, opt.port), *id;
  if (opt.debug) printf("rping: listening on port %d (pid %d)\n", opt.port, getpid());
  do {
    if (rdma_get_request(listen, &id)) die("waiting for a connection: %s", strerror(errno));
    serve(id);
  } while (opt.persistent);
  rdma_destroy_id(listen);
  exit(0);
}

int main(int argc, char **argv) {
  parse(argc, argv);
  if (opt.server) server();
  client();
  return 0;
}
