// rdma_perf.h: what rdma_bw and rdma_lat share (user/bin/rdma_perf.c): the
// perftest-like options, bringing up connected RC QPs (one, or -q of them
// over rdma_cm) with a buffer on each side, the guest's CPU per RDMA frame,
// and the statistics of a list of samples.
//
// Three ways to connect:
//   server:   rdma_bw [opts]            listens on the CM port (two guests)
//   client:   rdma_bw [opts] <ip>       connects with rdma_cm
//   loopback: rdma_bw [opts] -L         forks; parent = client, child =
//             server, QP facts exchanged over a pipe (no NIC needed)
// The client sends the test parameters in the REQ's private data, so the
// server needs no options. With -R (perftest's rdma_cm mode, user/bin/
// perftest_cm.c) the tools speak perftest's own exchange instead, so that
// Linux's ib_write_bw -R, ib_read_bw -R and ib_send_bw -R run against them
// in either role; then both sides need the same options, as perftest's.
#ifndef RDMA_PERF_H
#define RDMA_PERF_H
#include "ibverbs.h"
#include "rdma_cm.h"

// -t atomic is PERF_FAA, with -A CMP_AND_SWAP PERF_CAS (perftest's
// ib_atomic_bw / ib_atomic_lat): 8 bytes, the peer buffer's first word.
enum perf_op { PERF_WRITE = 0, PERF_READ = 1, PERF_SEND = 2, PERF_FAA = 3, PERF_CAS = 4 };
#define PERF_ATOMIC_SIZE 8         // an atomic's operand and result (IBTA 9.4.5)
static inline int perf_is_atomic(int op) { return op == PERF_FAA || op == PERF_CAS; }

#define PERF_MAX_SIZE (1u << 23)   // -s: 8 MiB, perftest's -a top (one buffer per side)
#define PERF_LAT_MAX_ALL_SIZE (1u << 16)   // rdma_lat -a without -s: 64 KiB
#define PERF_MAX_ITERS (1u << 22)  // -n: a sample (8 bytes) per iteration, 32 MiB of a 128 MiB guest
#define PERF_MAX_MIN_RTO_US 60000000u   // --min-rto: 60 s
#define PERF_MAX_QPS 256       // -q: connections; 256 each way fit the device's max_qp (512)
#define PERF_MAX_IDLE_QPS 510  // --idle-qps: the device's max_qp (512) but the busy QP and a spare
// wr_ids of the WRs this library posts (the tools' own WRs use others).
#define PERF_WR_AHEAD 0x5151   // the receive posted ahead (perf_post_ahead)
#define PERF_WR_SYNC 0x5152    // perf_sync's SEND
#define PERF_WR_BYE 0x5154     // the server's BYE (perf_close)
#define PERF_RECV_AHEAD 2      // receives each side keeps posted (perf_sync)
// The test QP's queues (resources()): both at the device's max_qp_wr
// (RDMA_MAX_QP_WR); receives so a send server the scheduler holds back for a while
// still has receives for every SEND in the meantime (64 B SENDs arrive
// 20-30 thousand a second: 480 receives are 16-24 ms); its CQ holds both.
#define PERF_QP_SEND_WR 512
#define PERF_QP_RECV_WR 512
#define PERF_CQE (PERF_QP_SEND_WR + PERF_QP_RECV_WR)
// The send server's receives outstanding during a run: room is left for
// PERF_RECV_AHEAD and the ones perf_sync posts for early SENDs.
#define PERF_SEND_RECVS (PERF_QP_RECV_WR - 32)
// Receives go in lists of up to this many (perf_post_recvs): one receive
// per call cost the server as many system calls per message as its
// client, and a server a little slower than its client ran out of
// receives (RNR NAKs).
#define PERF_RECV_LIST 32
// -d: WRs in flight, at most the receives a send server keeps posted, so
// a SEND window never outruns them (and the send queue holds it and the
// sync SENDs). Small messages need a deep window: 64 B WRITEs, one vCPU per
// guest, polling, ran 73k messages/s at -d 128 and 82k at -d 256
// (bench/results/msgrate-elide.md).
#define PERF_MAX_TX_DEPTH PERF_SEND_RECVS
// rdma_lat's RTO floor unless --min-rto/--fixed-rto: perftest's default QP
// timeout (-u 14, 4.096 us x 2^14), at which its rxe QPs retransmit. A
// latency run on a lossless link has nothing to retransmit, and a host
// stall of QEMU longer than rdma_cm's 30 ms floor made the peer time out.
#define PERF_LAT_MIN_RTO_US 67109

struct perf_opts {
  int op;              // enum perf_op
  uint32_t size;       // -s bytes (largest with -a)
  uint32_t iters;      // -n
  int all;             // -a: sizes 2, 4, ... 2^23 (up to -s if given)
  int tx_depth;        // -d outstanding WRs (bw)
  int cq_mod;          // -Q: one signaled WR (a completion) every cq_mod WRs (bw)
  int port;            // -p CM port
  int sr;              // --sr selective repeat
  int events;          // -e: sleep for completions / WRITEs instead of polling
  uint32_t inflight;   // --inflight: request packets in flight (0 = rdma_cm's default)
  int stats;           // --stats: the QP's transport counters after the table
  uint32_t min_rto_us; // --min-rto: adaptive RTO floor; ~0u (--fixed-rto) = IBTA timeout only
  int idle_qps;        // --idle-qps: connected QPs that stay idle during the run (bw)
  int num_qps;         // -q: connections the messages go over, round-robin (bw; write/read)
  uint32_t outs;       // -o: READs and atomics outstanding (0 = the device's maximum, as perftest's)
  int loopback;        // -L
  int perftest;        // -R: perftest's rdma_cm exchange (perftest_cm.c)
  int srq;             // --srq: this side's QPs take their receives from one shared receive queue
  int latency;         // the tool is rdma_lat (perftest_cm.c's scripts differ)
  uint32_t server_ip;  // 0 = server role
};

// The client's result, which -R sends to the server after the run
// (perftest's report exchange, perftest_cm.c).
struct perf_report {
  uint64 size, iters;
  uint64 peak_x100, avg_x100;   // MB/s x 100
  uint64 mpps_x100000;          // Mpps x 100000
};

struct perf_r;
struct perf_conn {
  struct ibv_context *ctx;
  struct ibv_pd *pd;
  struct ibv_comp_channel *chan;   // -e only
  struct ibv_cq *cq;
  struct ibv_srq *srq; // --srq: every receive of this side goes to it
  struct ibv_qp *qp;   // qps[0]: the one that syncs and says BYE
  int nqp;             // -q: qps[0..nqp), ids[0..nqp) (ids[0] = id)
  struct ibv_qp *qps[PERF_MAX_QPS];
  struct rdma_cm_id *ids[PERF_MAX_QPS];
  struct rdma_event_channel *ech;   // client: the one channel of ids[1..nqp)
  struct rdma_cm_id *lid;           // server: the listener, whose channel has ids[1..nqp)
  struct ibv_mr *mr;
  int access;          // the MR's and QPs' remote access (REMOTE_ATOMIC with -t atomic)
  uint8_t *buf;
  uint32_t buf_len;
  uint64_t raddr;      // the peer's buffer
  uint32_t rkey;
  int is_server;
  struct rdma_cm_id *id;
  int to_peer, from_peer;   // loopback: pipes for a tiny barrier
  uint32_t peer_ip;    // the other guest (host order), for messages
  int early_recvs;     // receive completions taken before their reader (perf_sync, perf_bye) asked
  int preposted;       // -R send server: receives of the run posted before it (perftest_cm.c)
  struct perf_report report;   // -R: the client's result (client: to send; server: received)
  struct perf_r *r;    // -R: perftest's comm connection (perftest_cm.c), NULL otherwise
};

// -R (user/bin/perftest_cm.c). rdma_lat's WRITEs go out from the buffer's
// last -s bytes (perf_send_area), apart from the first -s bytes the peer
// writes into. perf_r_connect: the comm connection, the
// exchanges before the run, the test connection (c->id, c->qp, whose
// resources perf_connect made and moved to INIT) and the peer's buffer
// (c->raddr, c->rkey); perf_r_close: the exchanges after the run (the
// client's c->report goes to the server) and the disconnects. Both exit
// with a message on failure.
#define PERF_R_CYCLE_BUFFER 4096   // perftest's cycle buffer: the peer's WRITEs and READs walk this far
void perf_r_connect(struct perf_conn *c, struct perf_opts *o);
// The transport settings of the options (--sr, --inflight, --min-rto) on
// an id, before its rdma_connect / rdma_accept.
void perf_set_transport(struct rdma_cm_id *id, struct perf_opts *o);
// The READ depth the CM exchange offers (-o, as perftest's --outs) into *p.
void perf_conn_depth(struct perf_conn *c, const struct perf_opts *o, struct rdma_conn_param *p);
// c->qp to INIT (from RESET), ready for an id's rdma_connect or rdma_accept.
void perf_qp_init(struct perf_conn *c);
void perf_r_close(struct perf_conn *c);
uint8_t *perf_send_area(const struct perf_conn *c, uint32_t size);

// Parses argv; `what` names the tool. A bad argument prints one line that
// names it and why (a number: the allowed range) and exits 2; -h/--help
// prints every option with its limits and exits 0.
void perf_parse(struct perf_opts *o, int argc, char **argv, const char *what);
// Connects (and in loopback mode forks). Returns 0 or exits.
int perf_connect(struct perf_conn *c, struct perf_opts *o);
// Both sides: wait for each other (SEND/RECV in RDMA, so it works over the network).
void perf_sync(struct perf_conn *c);
// Posts one of the receives each side keeps ahead of the peer's SENDs
// (the whole buffer, wr_id PERF_WR_AHEAD); a caller that takes one
// replaces it before it sends anything.
void perf_post_ahead(struct perf_conn *c);
// A receive WR to this side's SRQ (--srq) or its QP; exits if refused.
void perf_post_recv(struct perf_conn *c, struct ibv_recv_wr *wr);
void perf_post_recvs(struct perf_conn *c, uint32_t n, uint32_t len);
void perf_post_run_recvs(struct perf_conn *c, const struct perf_opts *o, uint32_t len);
// n more connected QPs (loopback pairs) that carry no traffic.
void perf_idle_qps(struct perf_conn *c, int n);
void perf_close(struct perf_conn *c);
// Up to max completions, at least one: n, 0 after timeout_ms, < 0 on
// error. With -e it sleeps on the completion channel instead of spinning.
int perf_poll(struct perf_conn *c, struct ibv_wc *wc, int max, int timeout_ms);
// The guest's CPU and the RDMA device's frames: a sample at the start and
// end of a run gives busy CPU time per frame sent or received.
struct perf_cpu { uint64 now_ns, idle_ns, frames, nic_missed, nic_no_buf, nic_doorbells, nic_interrupts, lock_parks; int ncpu; };
void perf_cpu_sample(struct perf_cpu *s);
// "cpu: busy ... us, ... frames, ... us/frame, ... lock waits parked" for the run between a and b.
void perf_cpu_print(const struct perf_cpu *a, const struct perf_cpu *b);
// "tool: what (peer a.b.c.d): <the WC status's name> (wr_id, vendor_err)",
// the QP's counters, and exit(1): a failed completion, said for a person.
void perf_fail_wc(const struct perf_conn *c, const char *what, const struct ibv_wc *wc);
// "tool: no what within secs s (peer a.b.c.d)", the QP's counters, exit(1).
void perf_fail_stall(const struct perf_conn *c, const char *what, int secs);
// One line of the QP's transport counters (after an error).
void perf_dump_qp(const struct perf_conn *c);
const char *perf_op_name(int op);
// wr's opcode and remote fields for o->op at the peer's buffer (c->raddr,
// c->rkey): WRITE, READ and SEND as named; an atomic at the buffer's first
// 8 bytes adds 1 (FAA) or swaps 0 for 0 (CAS: a hit every time).
void perf_wr_remote(const struct perf_conn *c, const struct perf_opts *o, struct ibv_send_wr *wr);

// Statistics over n samples (ns); sorts v.
struct perf_stats { uint64 min, max, median, avg, stdev, p99, p999; };
void perf_stats(uint64 *v, int n, struct perf_stats *s);
// "123.45" with 2 decimals from a value scaled by 100.
void perf_print_fixed(uint64 x100, int width);
#endif
