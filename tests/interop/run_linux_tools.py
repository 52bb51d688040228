#!/usr/bin/env python3
"""run_linux_tools.py: Debian's unmodified rping and perftest -R (in the
Linux guest, tests/linux/) against xv6's rping, rdma_bw -R and rdma_lat
-R, in both roles. One xv6 guest (10.0.0.1) and one Linux guest
(10.0.0.2, rxe0, eth0 MTU 1500: path MTU 1024) on a linkemu link; the
Linux server starts in the background and the client only once its
rdma_cm ID listens (`rdma res show cm_id`; neither rping nor perftest
retries a refused connect). Needs the InfiniBand CM in xv6 (issue 42):
with the project's own UDP exchange every case fails at the connection.

  rping_xv6_client_loss<L>   Linux `rping -s -v -V -C N -S 64`, xv6
                             `rping -c -v -V`: both exit 0, each side's N
                             ping lines ("ping data:" on the client,
                             "server ping data:" on Linux's server) are the
                             text tests/rdma/run_rping.py computes
  rping_xv6_server_loss<L>   xv6 `rping -s -d -v -C N`, Linux `rping -c -v
                             -V`: the same, and xv6 reports the connection
  rping_no_listener          xv6's client towards a Linux port nobody
                             listens on: exit 1, "refused (REJ ...)"; and
                             Linux's client towards an xv6 port nobody
                             listens on: "RDMA_CM_EVENT_REJECTED, error 8",
                             as between two Linux guests
  perftest_<tool>_<op>_xv6_<role>
                             ib_write_bw / ib_read_bw / ib_send_bw -R against
                             rdma_bw -R, ib_write_lat / ib_send_lat -R
                             against rdma_lat -R, -n 100 -s 4096, xv6 as
                             client and as server: both exit 0, both print
                             their result row

L is 0 and 1 (% loss each way, seeded). Prints "test NAME: OK|FAILED
(info)" per case and "N passed, M failed".

    python3 tests/interop/run_linux_tools.py [--only rping perftest] [--count N] [--match TEXT]
"""
import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "net"))
sys.path.insert(0, os.path.join(HERE, "..", "harness"))
sys.path.insert(0, os.path.join(HERE, "..", "rdma"))
from launch import Testbed  # noqa: E402
from tally import Tally  # noqa: E402
from run_rping import ping_text  # noqa: E402

SIZE = 64                   # rping's -S: one packet at path MTU 1024, as Linux's capture
FREE_PORT = 7999            # nobody listens there
LISTEN_PROBE, LISTENING = "rdma res show cm_id", "state LISTEN"
DEADLINE = 120              # a Linux program's `timeout`
PERF_OPTS = "-R -n 100 -s 4096"
PERF_TOOLS = [("rdma_bw", "ib_write_bw", "write"), ("rdma_bw", "ib_read_bw", "read"),
              ("rdma_bw", "ib_send_bw", "send"), ("rdma_lat", "ib_write_lat", "write"),
              ("rdma_lat", "ib_send_lat", "send")]
ROW = r"^ 4096 +100 +[\d.]+"


def linux_server(lx, cmd):
    """cmd in the background under `timeout`, its exit status at the end of
    its log; True once an rdma_cm ID listens."""
    return lx.start_server(f"(timeout {DEADLINE} {cmd}; echo server-exit $?)", probe=LISTEN_PROBE,
                           ready=LISTENING)


def linux_server_result(lx):
    out = lx.server_output(timeout=DEADLINE + 30)
    m = re.search(r"^server-exit (\d+)$", out, re.M)
    return (int(m[1]) if m else None), out


def xv6_run(g, cmd, timeout=300):
    """cmd under `status` in the xv6 guest: (exit status, output)."""
    out = g.run(f"status {cmd}", timeout=timeout)
    m = re.search(r"status: \S+ exited (-?\d+)", out)
    return (int(m[1]) if m else None), out


def xv6_serves(tb, cmd, ready, linux_cmd):
    """cmd (a server) under `status` in the xv6 guest; once it printed
    ready, linux_cmd (its client) in the Linux guest under `timeout`:
    (xv6's exit status, output, Linux's exit status, output)."""
    x, lx = tb.guests
    start = len(x.output())
    x.send(f"status {cmd}")
    x.expect(ready, timeout=60)
    l_rc, l_out = lx.run_status(f"timeout {DEADLINE} {linux_cmd}", timeout=DEADLINE + 30)
    x_rc = int(x.expect(r"status: \S+ exited (-?\d+)\n", timeout=120)[1])
    x.expect(r"\$ $", timeout=30)
    return x_rc, x.output()[start:], l_rc, l_out


def lines(text, prefix):
    return re.findall(rf"^{re.escape(prefix)}(.*?)\r?$", text, re.M)


def rping_checks(x_rc, x_out, l_rc, l_out, count, x_prefix, l_prefix):
    want = [ping_text(n, SIZE) for n in range(count)]
    problems = []
    if x_rc != 0 or l_rc != 0:
        problems.append(f"exit status xv6 {x_rc}, Linux {l_rc}; xv6 said {x_out.strip()[-200:]!r}; "
                        f"Linux said {l_out.strip()[-200:]!r}")
    for who, text, prefix in (("xv6", x_out, x_prefix), ("Linux", l_out, l_prefix)):
        got = lines(text, prefix)
        if got != want:
            problems.append(f"{who}: {len(got)} '{prefix}' lines, first {got[:1]}, want {count} from {want[:1]}")
    return problems


def rping_xv6_client(tb, count):
    x, lx = tb.guests
    opts = f"-v -V -C {count} -S {SIZE}"
    if not linux_server(lx, f"rping -s {opts}"):
        return False, "Linux's rping -s never listened"
    x_rc, x_out = xv6_run(x, f"rping -c -a {lx.ip} {opts}")
    l_rc, l_out = linux_server_result(lx)
    problems = rping_checks(x_rc, x_out, l_rc, l_out, count, "ping data: ", "server ping data: ")
    return not problems, "; ".join(problems) or f"{count} validated pings, both exit 0"


def rping_xv6_server(tb, count):
    x, lx = tb.guests
    x_rc, x_out, l_rc, l_out = xv6_serves(tb, f"rping -s -d -v -C {count} -S {SIZE}",
                                          r"rping: listening on port \d+",
                                          f"rping -c -a {tb.ip(0)} -v -V -C {count} -S {SIZE}")
    problems = rping_checks(x_rc, x_out, l_rc, l_out, count, "server ping data: ", "ping data: ")
    if f"rping: connection from {lx.ip}" not in x_out:
        problems.append("xv6's server did not report the connection")
    return not problems, "; ".join(problems) or f"{count} validated pings, both exit 0"


def rping_no_listener(tb):
    x, lx = tb.guests
    x_rc, x_out = xv6_run(x, f"rping -c -a {lx.ip} -p {FREE_PORT} -C 1", timeout=120)
    l_rc, l_out = lx.run_status(f"timeout 30 rping -c -a {tb.ip(0)} -p {FREE_PORT} -C 1 -v", timeout=60)
    x_ok = x_rc == 1 and re.search(rf"rping: connect to {re.escape(lx.ip)} port {FREE_PORT}: refused \(REJ", x_out)
    l_ok = "RDMA_CM_EVENT_REJECTED, error 8" in l_out
    return bool(x_ok and l_ok), f"xv6 exit {x_rc}: {x_out.strip()[-160:]!r}; Linux exit {l_rc}: {l_out.strip()[-160:]!r}"


def perftest(tb, xtool, ltool, op, xv6_role):
    x, lx = tb.guests
    if xv6_role == "client":
        if not linux_server(lx, f"{ltool} -d rxe0 {PERF_OPTS}"):
            return False, f"Linux's {ltool} -R never listened"
        x_rc, x_out = xv6_run(x, f"{xtool} -t {op} {PERF_OPTS} {lx.ip}")
        l_rc, l_out = linux_server_result(lx)
    else:
        x_rc, x_out, l_rc, l_out = xv6_serves(tb, f"{xtool} -t {op} {PERF_OPTS}",
                                              r"waiting for a client on port \d+",
                                              f"{ltool} -d rxe0 {PERF_OPTS} {tb.ip(0)}")
    client_out = x_out if xv6_role == "client" else l_out
    ok = x_rc == 0 and l_rc == 0 and re.search(ROW, client_out, re.M) is not None
    return ok, f"xv6 exit {x_rc}: {x_out.strip()[-200:]!r}; Linux exit {l_rc}: {l_out.strip()[-200:]!r}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", nargs="+", choices=["rping", "perftest"], default=["rping", "perftest"])
    ap.add_argument("--count", type=int, default=10, help="rping's -C")
    ap.add_argument("--match", default="", help="only the cases whose name contains this")
    args = ap.parse_args()
    cases = []
    if "rping" in args.only:
        for loss in (0, 1):
            cases += [(f"rping_xv6_client_loss{loss}", loss, lambda tb: rping_xv6_client(tb, args.count)),
                      (f"rping_xv6_server_loss{loss}", loss, lambda tb: rping_xv6_server(tb, args.count))]
        cases.append(("rping_no_listener", 0, rping_no_listener))
    if "perftest" in args.only:
        for xtool, ltool, op in PERF_TOOLS:
            for role in ("client", "server"):
                cases.append((f"perftest_{ltool}_xv6_{role}", 0,
                              lambda tb, x=xtool, lt=ltool, o=op, r=role: perftest(tb, x, lt, o, r)))
    t = Tally()
    for name, loss, fn in cases:
        if args.match in name:
            t.run(name, lambda: one_bed(name, loss, fn))
    return t.finish()


def one_bed(name, loss, fn):
    """fn(tb) on a bed of its own (a case that fails leaves nothing running
    for the next); the guests are killed at the end."""
    spec = f"loss {loss}% seed 7" if loss else None
    with Testbed(1, linux=1, linux_mtu=1500, both=spec, name=f"linux-tools-{name}") as tb:
        tb.boot()
        return fn(tb)


if __name__ == "__main__":
    sys.exit(main())
