#!/usr/bin/env python3
"""capture_cm.py: records tests/vectors/cm/*.pcap, real InfiniBand CM
exchanges (CM MADs to and from QP1 over RoCEv2) and the application
traffic after them, between Linux's own rdma_cm programs on two Linux
Soft-RoCE guests (see tests/vectors/README.md, "cm/").

Each capture is its own test bed (tests/linux/, eth0 MTU 1500, so rxe's
active MTU, the path MTU, is 1024): guest A (10.0.0.2) runs the server,
guest B (10.0.0.3) the client (tests/linux/rdmacm_tools.py: B starts once
A's rdma_cm ID listens), and linkemu records B's port (both directions).
A capture is written only if both programs ended as they should:

  rping.pcap           rping -v -V -C 2 -S 64, both sides: REQ, REP, RTU,
                       the RC ping-pong, DREQ / DREP
  rej-no-listener.pcap rping -c aimed at port 7999, where nobody listens:
                       REQ, REJ; the client reports RDMA_CM_EVENT_REJECTED
  udaddy.pcap          udaddy -C 1 (RDMA_PS_UDP): SIDR_REQ, SIDR_REP, one
                       UD datagram each way
  perftest-write.pcap  ib_write_bw -R -n 5 -s 64
  perftest-send.pcap   ib_send_bw -R -n 5 -s 64
  perftest-read.pcap   ib_read_bw -R -n 5 -s 64

    python3 tests/vectors/capture_cm.py [--only NAME ...] [--out DIR]
        (default DIR: tests/vectors/cm; NAME: a file name without .pcap)

Needs make linux-image and build/netem/linkemu; no xv6 guest boots.
Afterwards `python3 tests/vectors/check_cm_vectors.py --write` remakes
cm/fields.json from the new files.
"""
import argparse
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "harness"))
sys.path.insert(0, os.path.join(REPO, "tests", "net"))
sys.path.insert(0, os.path.join(REPO, "tests", "linux"))
from guest import GuestError, progress  # noqa: E402
from launch import Testbed  # noqa: E402
import rdmacm_tools as cm  # noqa: E402

SERVER, CLIENT = 1, 2           # guest indexes: the xv6 port 0 stays idle
NO_LISTENER_PORT = 7999
PERF = "-d rxe0 -R -n 5 -s 64"


def rping(srv, cli):
    opts = "-v -V -C 2 -S 64"
    r = cm.pair(srv, cli, f"rping -s {opts}", f"rping -c -a {srv.ip} {opts}")
    return r.client_rc == 0 and r.server_rc == 0 and r.client_out.count("ping data: ") == 2, r.tail()


def rej_no_listener(srv, cli):
    rc, out = cm.client(cli, f"rping -c -a {srv.ip} -p {NO_LISTENER_PORT} -C 1 -v", deadline=30)
    return "RDMA_CM_EVENT_REJECTED, error 8" in out, f"exit {rc}: {out.strip()[-240:]!r}"


def udaddy(srv, cli):
    r = cm.pair(srv, cli, "udaddy -C 1", f"udaddy -s {srv.ip} -C 1", ps="UDP", deadline=30)
    ok = r.client_rc == 0 and r.server_rc == 0 and "return status 0" in r.client_out
    return ok, ("hung (a UD datagram dropped?) " if r.client_hung else "") + r.tail()


def perftest(tool):
    def run(srv, cli):
        r = cm.pair(srv, cli, f"{tool} {PERF}", f"{tool} {PERF} {srv.ip}")
        return r.client_rc == 0 and r.server_rc == 0, r.tail()
    return run


CAPTURES = [("rping", rping), ("rej-no-listener", rej_no_listener), ("udaddy", udaddy),
            ("perftest-write", perftest("ib_write_bw")), ("perftest-send", perftest("ib_send_bw")),
            ("perftest-read", perftest("ib_read_bw"))]


def capture(name, scenario, out_dir):
    """One test bed, one scenario; copies B's port capture to out_dir/name.pcap."""
    cap = tempfile.mkdtemp(prefix="vectors-cm-")
    try:
        with Testbed(1, linux=2, linux_mtu=1500, name=f"vectors-cm-{name}", pcap_dir=cap) as tb:
            srv, cli = tb.guests[SERVER], tb.guests[CLIENT]
            tb.boot(timeout=300, only=(srv, cli))
            ok, info = scenario(srv, cli)
            if not ok:
                raise GuestError(f"{name}: {info}")
            progress("capture", f"{name}: done")
        dst = os.path.join(out_dir, f"{name}.pcap")
        shutil.copyfile(os.path.join(cap, f"port{CLIENT}.pcap"), dst)
        print(f"capture: wrote {dst}")
    finally:
        shutil.rmtree(cap, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", nargs="+", choices=[n for n, _ in CAPTURES])
    ap.add_argument("--out", default=os.path.join(HERE, "cm"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    failed = 0
    for name, scenario in CAPTURES:
        if args.only and name not in args.only:
            continue
        try:
            capture(name, scenario, args.out)
        except GuestError as e:
            print(f"capture: {name} failed: {e}")
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
