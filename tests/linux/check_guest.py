#!/usr/bin/env python3
"""check_guest.py: smoke check of the Linux Soft-RoCE guest on the test bed.

Owns `make test-linux-guest`. One xv6 guest (10.0.0.1) and two Linux guests
(10.0.0.2, 10.0.0.3) on one linkemu link (tests/net/launch.py, linux=2):

  * ping: the first Linux guest pings the xv6 guest, and the xv6 guest it;
  * rxe0: `rdma link` shows it ACTIVE, `ibv_devinfo -d rxe0` PORT_ACTIVE
    with an active MTU of 4096 (eth0 at MTU 9000);
  * ib_write_bw -d rxe0 -s 65536 -n 200 between the Linux guests, first
    with perftest's own TCP exchange of QP numbers and GIDs (-x: the IPv4
    GID's index from the ready line), then over rdma_cm (-R): the client
    prints its result line;
  * Linux's unmodified rdma_cm tools between the Linux guests, over the IB
    CM (tests/linux/rdmacm_tools.py: the client starts once the server's
    cm_id listens; both run under deadlines): rping -v -V -C 3 at -S 64
    and 4096 (both sides validate every ping), ucmatose -c 2, udaddy -C 1
    (a UD drop that hangs it is told apart from a failure), and an rping
    aimed at a port nobody listens on gets RDMA_CM_EVENT_REJECTED, error 8;
  * xrpeer (tests/linux/peer) between the Linux guests over its rdma_cm:
    the --matrix roles and bw-server / bw-client WRITE, READ, SEND;
  * netem: sch_netem takes a qdisc (tc qdisc add dev lo root netem ...).

Then the netem box (Testbed netem_box=): two xv6 guests joined by a Linux
bridge with tc netem "delay 10ms" on both ports: the ping RTT includes
both delays, a 8000-byte (jumbo) ping crosses, and "loss 100%" set mid-run
on one direction stops every echo until it is removed. --only mixed|box.

One line per check ("test NAME: OK|FAILED (info)"), then "N passed, M
failed" (tests/harness/tally.py). Needs kernel/kernel, fs.img,
build/netem/linkemu and `make linux-image`. Python standard library only.
"""
import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "harness"))
sys.path.insert(0, os.path.join(REPO, "tests", "net"))
sys.path.insert(0, HERE)
from guest import GuestError, progress  # noqa: E402
from launch import Testbed  # noqa: E402
from tally import Tally  # noqa: E402
import perftable  # noqa: E402
import rdmacm_tools as cm  # noqa: E402

BW_SIZE, BW_ITERS = 65536, 200
PING_COUNT = 3                       # rping -C: validated round trips
NO_LISTENER_PORT = 7999              # an rdma_cm port nobody listens on
REJECTED = "RDMA_CM_EVENT_REJECTED, error 8"   # rping's line for a REJ (no listener)


def check_ping_from_linux(lx, xv6_ip):
    rc, out = lx.run_status(f"ping -c 3 -W 5 {xv6_ip}")
    m = re.search(r"(\d+) packets received", out)
    return rc == 0 and m and m[1] == "3", (m[0] if m else out.strip()[-200:])


def check_ping_from_xv6(xv6, linux_ip):
    out = xv6.run(f"ping -c 3 {linux_ip}", timeout=60)
    m = re.search(r"(\d+) transmitted, (\d+) received", out)
    return bool(m) and m[2] == "3", (m[0] if m else out.strip()[-200:])


def check_rdma_link(lx):
    rc, out = lx.run_status("rdma link")
    return rc == 0 and "rxe0/1 state ACTIVE" in out, out.strip()


def check_devinfo(lx):
    rc, out = lx.run_status("ibv_devinfo -d rxe0")
    active = re.search(r"state:\s+PORT_ACTIVE", out)
    mtu = re.search(r"active_mtu:\s+(\d+)", out)
    ok = rc == 0 and active and mtu and mtu[1] == "4096"
    return ok, f"port {'ACTIVE' if active else 'not active'}, active_mtu {mtu[1] if mtu else '?'}"


def write_bw(server, client, server_ip, opts, timeout):
    """ib_write_bw server on one guest (in the background, output to a
    file), client on the other; the client's average MB/s. The client
    starts only once the server listens: its TCP port (perftest's exchange,
    `ss -ltn`) or its rdma_cm ID (`rdma res show cm_id`); perftest's client
    does not retry a refused connect, and its output to a file is buffered."""
    cmd = f"ib_write_bw -d rxe0 -s {BW_SIZE} -n {BW_ITERS} {opts}"
    probe, ready = ("rdma res show cm_id", "state LISTEN ps TCP") if "-R" in opts.split() else (None, None)
    if not server.start_server(cmd, probe, ready):
        return False, f"server not listening: {server.server_output(30).strip()[-300:]}"
    rc, out = client.run_status(f"{cmd} {server_ip}", timeout=timeout)
    server.server_output(30)
    m = [r for r in perftable.bw_rows(out) if r["size"] == BW_SIZE and r["iters"] == BW_ITERS]
    if rc != 0 or not m:
        return False, f"exit {rc}: {out.strip()[-300:]}"
    return True, f"{BW_SIZE} B x {BW_ITERS}: average {m[0]['bw_avg_MiBps']} MB/s, peak {m[0]['bw_peak_MiBps']} MB/s"


def check_rping(srv, cli, size):
    """Linux rping server and client: PING_COUNT validated (-V) round trips
    of size bytes; both exit 0 and each prints every ping's data."""
    opts = f"-v -V -C {PING_COUNT} -S {size}"
    r = cm.pair(srv, cli, f"rping -s {opts}", f"rping -c -a {srv.ip} {opts}")
    got_c = len(re.findall(r"^ping data: rdma-ping-\d+: ", r.client_out, re.M))
    got_s = len(re.findall(r"^server ping data: rdma-ping-\d+: ", r.server_out, re.M))
    ok = r.client_rc == 0 and r.server_rc == 0 and got_c == got_s == PING_COUNT
    return ok, (f"{size} B: {got_c} pings validated by the client, {got_s} by the server"
                if ok else r.tail())


def check_ucmatose(srv, cli):
    """ucmatose with 2 connections (the server must be told -c 2 as well:
    it refuses connections beyond its count): both report status 0."""
    r = cm.pair(srv, cli, "ucmatose -c 2", f"ucmatose -s {srv.ip} -c 2")
    done = [("data transfers complete" in o and "return status 0" in o)
            for o in (r.client_out, r.server_out)]
    ok = r.client_rc == 0 and r.server_rc == 0 and all(done)
    return ok, "2 connections, data transfers complete on both sides" if ok else r.tail()


def check_udaddy(srv, cli):
    """udaddy (RDMA_PS_UDP: SIDR, then UD datagrams), one message. UD drops
    a datagram that arrives before its receive is posted, and udaddy then
    waits forever: the deadline ends it, and such a hang (the CM exchange
    done, "receiving data transfers" its last line) is told apart from a
    failure."""
    r = cm.pair(srv, cli, "udaddy -C 1", f"udaddy -s {srv.ip} -C 1", ps="UDP", deadline=30)
    if r.client_hung or r.server_hung:
        who = "client" if r.client_hung else "server"
        out = r.client_out if r.client_hung else r.server_out
        last = out.strip().splitlines()[-2:] if out.strip() else ["nothing"]
        stage = ("waiting for a datagram that never came (a UD drop, e.g. one that arrived before "
                 "its receive was posted, not a CM failure)" if "receiving data transfers" in out
                 else "hung before the data transfers (the CM exchange did not finish)")
        return False, f"{who} ended by the 30 s deadline, {stage}; its last lines: {last}"
    ok = r.client_rc == 0 and r.server_rc == 0 and all(
        "return status 0" in o for o in (r.client_out, r.server_out))
    return ok, "SIDR and one datagram each way, status 0 on both sides" if ok else r.tail()


def check_no_listener(srv, cli):
    """rping aimed at a port nobody listens on: the passive side's CM
    answers the REQ with a REJ (no listener) and rping reports it."""
    rc, out = cm.client(cli, f"rping -c -a {srv.ip} -p {NO_LISTENER_PORT} -C 1 -v", deadline=30)
    ok = rc not in (0, cm.TIMED_OUT) and REJECTED in out
    return ok, f"exit {rc}: {out.strip()[-200:]!r}"


def check_xrpeer_matrix(srv, cli):
    """xrpeer host_a / host_b (rdmanet_test's --matrix protocol) between the
    Linux guests, connected by xrpeer's rdma_cm (cm_rdma.c): every case
    passes on both sides."""
    r = cm.pair(srv, cli, "xrpeer host_a --matrix", f"xrpeer host_b {srv.ip} --matrix", deadline=300)
    m = re.search(r"^matrix: (\d+) cases, (\d+) failed$", r.client_out, re.M)
    ok = (r.client_rc == 0 and r.server_rc == 0 and m and m[2] == "0" and
          all("rdmanet_test: OK" in o for o in (r.client_out, r.server_out)))
    return ok, m[0] if ok else r.tail()


def check_xrpeer_bw(srv, cli, op):
    """xrpeer bw-server / bw-client (rdma_bw's protocol) over rdma_cm."""
    r = cm.pair(srv, cli, "xrpeer bw-server", f"xrpeer bw-client {srv.ip} -t {op} -s {BW_SIZE} -n {BW_ITERS}")
    rows = [x for x in perftable.bw_rows(r.client_out) if x["size"] == BW_SIZE and x["iters"] == BW_ITERS]
    ok = r.client_rc == 0 and r.server_rc == 0 and rows and "xrpeer: bw-server done" in r.server_out
    return ok, f"{op} {BW_SIZE} B x {BW_ITERS}: average {rows[0]['bw_avg_MiBps']} MB/s" if ok else r.tail()


def check_netem(lx):
    rc, out = lx.run_status("tc qdisc add dev lo root netem delay 1ms loss 1% && "
                            "tc qdisc show dev lo && tc qdisc del dev lo root")
    return rc == 0 and "netem" in out, out.strip()


def xv6_ping(g, ip, opts=""):
    """xv6 ping: (received, min RTT ms or None, the summary line)."""
    out = g.run(f"ping {opts} {ip}".replace("  ", " "), timeout=90)
    m = re.search(r"(\d+) transmitted, (\d+) received(?:, rtt min/avg/max ([\d.]+) ms)?", out)
    if not m:
        return 0, None, out.strip()[-200:]
    return int(m[2]), (float(m[3]) if m[3] else None), m[0]


def check_box_delay(g, ip):
    got, rtt, line = xv6_ping(g, ip, "-c 5")
    return got >= 4 and rtt is not None and rtt >= 20, line


def check_box_jumbo(g, ip):
    got, _, line = xv6_ping(g, ip, "-c 3 -s 8000")
    return got == 3, line


def check_box_set_loss(tb):
    g, ip = tb.guests[0], tb.ip(1)
    tb.box.set_netem("a2b", "loss 100%")
    lost, _, line1 = xv6_ping(g, ip, "-c 3")
    tb.box.set_netem("a2b", "delay 10ms")
    back, _, line2 = xv6_ping(g, ip, "-c 3")
    return lost == 0 and back >= 2, f"loss 100%: {line1}; removed: {line2}"


def run_mixed(t, args):
    with Testbed(1, linux=2, name="linuxcheck") as tb:
        tb.boot(args.boot_timeout)
        xv6, lx1, lx2 = tb.guests
        for g in tb.linux:
            progress(g.name, f"ready: ip {g.ip} mtu {g.mtu} IPv4 GID index {g.gid_index}, "
                             f"boot {g.boot_seconds:.1f} s")
        t.run("ping_linux_to_xv6", lambda: check_ping_from_linux(lx1, tb.ip(0)))
        t.run("ping_xv6_to_linux", lambda: check_ping_from_xv6(xv6, tb.ip(1)))
        t.run("rdma_link_active", lambda: check_rdma_link(lx1))
        t.run("ibv_devinfo_active", lambda: check_devinfo(lx2))
        gid = f"-x {lx1.gid_index}"
        t.run("ib_write_bw_tcp", lambda: write_bw(lx1, lx2, tb.ip(1), gid, args.timeout))
        t.run("ib_write_bw_rdma_cm", lambda: write_bw(lx1, lx2, tb.ip(1), "-R", args.timeout))
        for size in (64, 4096):
            t.run(f"rping_linux_linux_{size}", lambda size=size: check_rping(lx1, lx2, size))
        t.run("ucmatose_linux_linux", lambda: check_ucmatose(lx1, lx2))
        t.run("udaddy_linux_linux", lambda: check_udaddy(lx1, lx2))
        t.run("rdma_cm_no_listener_rejected", lambda: check_no_listener(lx1, lx2))
        t.run("xrpeer_matrix_rdma_cm", lambda: check_xrpeer_matrix(lx1, lx2))
        for op in ("write", "read", "send"):
            t.run(f"xrpeer_bw_{op}_rdma_cm", lambda op=op: check_xrpeer_bw(lx1, lx2, op))
        t.run("netem_qdisc", lambda: check_netem(lx2))
        tb.halt()


def run_box(t, args):
    with Testbed(2, netem_box="delay 10ms", name="netembox") as tb:
        tb.boot(args.boot_timeout)
        progress(tb.box.name, f"bridge up after {tb.box.boot_seconds:.1f} s")
        t.run("box_delay_both_ways", lambda: check_box_delay(tb.guests[0], tb.ip(1)))
        t.run("box_jumbo_8000", lambda: check_box_jumbo(tb.guests[1], tb.ip(0)))
        t.run("box_set_netem_midrun", lambda: check_box_set_loss(tb))
        tb.halt()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--timeout", type=int, default=180, help="seconds per ib_write_bw run")
    ap.add_argument("--boot-timeout", type=int, default=180)
    ap.add_argument("--only", choices=("mixed", "box"), help="one of the two test beds")
    args = ap.parse_args()
    t = Tally()
    for name, fn in (("mixed", run_mixed), ("box", run_box)):
        if args.only in (None, name):
            try:
                fn(t, args)
            except GuestError as e:               # a guest that never booted
                t.record(f"{name}_testbed", False, str(e)[-400:])
    return t.finish()


if __name__ == "__main__":
    sys.exit(main())
