#!/usr/bin/env python3
"""capture_ud.py: records tests/vectors/ud/rxe-ud.pcap (path MTU 1024) or
rxe-ud-mtu4096.pcap, real Unreliable Datagram frames from Linux Soft-RoCE
(see tests/vectors/README.md).

Two Linux guests (tests/linux/, eth0 MTU 1500, so rxe's active MTU and the
UD path MTU are 1024; 9000 with --mtu 4096) on a linkemu link that records
guest B's port:
guest A (10.0.0.2) runs `xrpeer ud-server`, guest B (10.0.0.3) runs
`xrpeer ud-client` against it; every datagram and its echo cross the link.
The scenario, in order (each client is a fresh QP; the client's guest
first opens and closes QPN_SHIFT QPs, so its QPNs are 0x21 on):

  1. server Q_Key 0x11111111; clients: 2 x 16 bytes, 2 x MTU bytes (the
     path MTU), 2 x 64 bytes SEND_WITH_IMM; each echoed
  2. server Q_Key 0x0badcafe; a client with Q_Key 0x22222222 sends one
     datagram of 32 bytes, never resent (A's rxe drops it: wrong Q_Key);
     then 2 x 32 bytes with Q_Key 0x0badcafe, echoed

Every client must report every message answered (the wrong-Q_Key one none),
else nothing is written. Prints the QPNs the README names.

    python3 tests/vectors/capture_ud.py [--mtu 1024|4096] [OUT]
        (default OUT: tests/vectors/ud/rxe-ud.pcap, rxe-ud-mtu4096.pcap)

Needs make linux-image and build/netem/linkemu; no xv6 guest boots.
"""
import argparse
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "interop"))
import run_interop as ri  # noqa: E402
from run_interop import Testbed, GuestError, progress  # noqa: E402

SERVER, CLIENT = 1, 2           # guest indexes: the xv6 port 0 stays idle
QKEY, QKEY2, QKEY_WRONG = 0x11111111, 0x0BADCAFE, 0x22222222
QPN_SHIFT = 16
# (client arguments, messages answered): scenario 1 at path MTU mtu, then 2.
def first(mtu):
    return [("-s 16 -n 2", 2), (f"-s {mtu} -n 2", 2), ("-s 64 -n 2 --imm", 2)]


SECOND = [(f"--qkey {QKEY_WRONG:#x} -s 32 -n 1 -r 0 -w 1000", 0), (f"--qkey {QKEY2:#x} -s 32 -n 2", 2)]


def clients(srv, cli, qpn, runs):
    """Runs each client against the server's QPN; raises unless each
    answered what it should."""
    for args, want in runs:
        rc, nums, out = ri.ud_client(cli, srv.ip, qpn, args)
        qp = out.split("ud-client qpn ", 1)[-1].split()[0]
        progress("capture", f"client qpn {qp} {args}: {nums}")
        if not nums or nums[4] != want or (rc == 0) != (want > 0):
            raise GuestError(f"ud-client {args}: exit {rc}, {out.strip()[-300:]}")


def scenario(srv, cli, mtu):
    # rxe numbers QPs from 0x11 on each guest: QPs opened and closed on the
    # client's guest first keep its QPNs apart from the server's, so a DETH
    # source QPN never equals the BTH destination QPN of the same frame.
    cli.run(f"for i in $(seq {QPN_SHIFT}); do xrpeer ud-server --idle 1 >/dev/null & done; wait", timeout=120)
    qpn = ri.ud_server_start(srv, "-n 6 --idle 120")
    progress("capture", f"server qpn {qpn} qkey {QKEY:#010x}")
    clients(srv, cli, qpn, first(mtu))
    res, out = ri.ud_server_stop(srv)
    if not res or res[:4] != (6, 6, 0, 0):
        raise GuestError(f"ud-server 1: {out.strip()[-300:]}")
    qpn = ri.ud_server_start(srv, f"--qkey {QKEY2:#x} -n 2 --idle 120")
    progress("capture", f"server qpn {qpn} qkey {QKEY2:#010x}")
    clients(srv, cli, qpn, SECOND)
    res, out = ri.ud_server_stop(srv)
    if not res or res[:4] != (2, 2, 0, 0):
        raise GuestError(f"ud-server 2: {out.strip()[-300:]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mtu", type=int, choices=(1024, 4096), default=1024, help="the UD path MTU")
    ap.add_argument("out", nargs="?")
    args = ap.parse_args()
    name = "rxe-ud.pcap" if args.mtu == 1024 else f"rxe-ud-mtu{args.mtu}.pcap"
    out = args.out or os.path.join(HERE, "ud", name)
    cap = tempfile.mkdtemp(prefix="vectors-ud-")
    try:
        with Testbed(1, linux=2, linux_mtu=1500 if args.mtu == 1024 else 9000, name="vectors-ud",
                     pcap_dir=cap) as tb:
            srv, cli = tb.guests[SERVER], tb.guests[CLIENT]
            tb.boot(timeout=300, only=(srv, cli))
            if srv.mtu != (1500 if args.mtu == 1024 else 9000):
                raise GuestError(f"eth0 MTU {srv.mtu}")
            scenario(srv, cli, args.mtu)
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        shutil.copyfile(os.path.join(cap, f"port{CLIENT}.pcap"), out)
        print(f"capture: wrote {out}")
        return 0
    except GuestError as e:
        print(f"capture: failed: {e}")
        return 1
    finally:
        shutil.rmtree(cap, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
