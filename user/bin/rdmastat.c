// rdmastat: the RDMA device's queue pairs, their states and counters.
//
// First the port: its GID, MAC and MTU, then ibv_query_port's state,
// width, speed, VLs, physical state and capabilities as ibv_devinfo
// names them.
//
//   rdmastat        one line per QP (all processes) and its main counters
//   rdmastat -v     every counter of every QP
// Then "device:" and one "name value" line per device-wide counter (frames
// dropped before a QP was found, by reason; async events dropped).
#include "user.h"
#include "ibverbs.h"
#include "rdma_sys.h"
#include "rdma_util.h"

static const char *const req_names[] = { "idle", "sending", "wait_rnr", "error" };
static const char *const resp_names[] = { "idle", "in_send", "in_write", "error" };
static const char *const comp_names[] = { "idle", "wait_ack", "wait_rnr", "error" };

static const char *name_of(const char *const *t, unsigned n, unsigned v) { return v < n ? t[v] : "?"; }

int main(int argc, char **argv) {
  int verbose = argc > 1 && strcmp(argv[1], "-v") == 0;
  struct rdma_port_info pi;
  if (rdma_query_port(1, &pi) < 0) { printf("rdmastat: no RDMA device\n"); exit(1); }
  char gid[INET6_ADDRSTRLEN];
  inet_ntop(AF_INET6, pi.gid, gid, sizeof gid);
  printf("rxe0 port 1: gid %s mac %x:%x:%x:%x:%x:%x active_mtu %d\n", gid, pi.mac[0], pi.mac[1], pi.mac[2],
         pi.mac[3], pi.mac[4], pi.mac[5], ibv_mtu_to_num((enum ibv_mtu)pi.active_mtu));
  struct ibv_context *ctx = rdmau_open();
  struct ibv_port_attr pa;
  if (ctx && ibv_query_port(ctx, 1, &pa) == 0)
    printf("rxe0 port 1: state %s (%d) active_width %s (%d) active_speed %s (%d) max_vl_num %d"
           " phys_state %s (%d) port_cap_flags 0x%08x\n", ibv_port_state_str(pa.state), pa.state,
           ibvx_width_str(pa.active_width), pa.active_width, ibvx_speed_str(pa.active_speed),
           pa.active_speed, pa.max_vl_num, ibvx_phys_state_str(pa.phys_state), pa.phys_state,
           pa.port_cap_flags);
  printf("%-4s %-5s %-8s %-8s %-6s %-3s %-9s %-9s %-9s %9s %9s %7s %7s %6s\n", "slot", "pid", "qpn", "dest",
         "state", "sr", "requester", "responder", "completer", "tx_frames", "rx_frames", "retx", "tmo", "naks");
  int n = 0;
  for (int i = 0;; i++) {
    struct rdma_qp_stats s;
    int r = rdma_qp_stats(i, &s);
    if (r < 0) break;
    if (r == 1) continue;
    n++;
    int ud = s.qp_type == RDMA_QPT_UD;    // no connection: no peer, no SR, no RC roles
    printf("%-4d %-5d %-8x %-8x %-6s %-3s %-9s %-9s %-9s %9lu %9lu %7lu %7lu %6lu\n", i, s.owner_pid, s.qp_num,
           s.dest_qp_num, ibvx_qp_state_str((enum ibv_qp_state)s.state), ud ? "ud" : s.sr ? "on" : "off",
           ud ? "-" : name_of(req_names, 4, s.req_state), ud ? "-" : name_of(resp_names, 4, s.resp_state),
           ud ? "-" : name_of(comp_names, 4, s.comp_state), s.tx_frames, s.rx_frames, s.tx_retransmits, s.timeouts,
           s.tx_nak + s.rx_nak);
    if (verbose) {
      printf("     tx_bytes %lu rx_bytes %lu tx_payload %lu rx_payload %lu\n", s.tx_bytes, s.rx_bytes,
             s.tx_payload_bytes, s.rx_payload_bytes);
      printf("     tx_ack %lu rx_ack %lu tx_nak %lu rx_nak %lu tx_rnr_nak %lu rx_rnr_nak %lu rnr_timeouts %lu\n",
             s.tx_ack, s.rx_ack, s.tx_nak, s.rx_nak, s.tx_rnr_nak, s.rx_rnr_nak, s.rnr_timeouts);
      printf("     rx_dup %lu rx_out_of_seq %lu rx_out_of_window %lu rx_dropped %lu\n", s.rx_dup,
             s.rx_out_of_seq, s.rx_out_of_window, s.rx_dropped);
      printf("     completions %lu error_completions %lu flushed %lu cq_overflow %lu\n", s.completions,
             s.error_completions, s.flushed, s.cq_overflow);
      printf("     early_probes %lu late_probes %lu max_inflight %u window_cuts %lu loss_window %u\n",
             s.early_probes, s.late_probes, s.max_inflight, s.window_cuts, s.loss_window);
    }
  }
  printf("%d QPs\n", n);
  printf("device:\n");
  if (rdmau_print_dev_stats("\n") < 0) { printf("rdmastat: no device counters\n"); exit(1); }
  exit(0);
}
