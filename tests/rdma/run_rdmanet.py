#!/usr/bin/env python3
"""run_rdmanet.py: two guests over linkemu (tests/net/launch.py), RoCEv2
through the E1000s: rdmanet_test host_a on guest 0, host_b on guest 1,
then rdmacp of /rdmatest from guest 1 to guest 0 (checksum checked by the
receiver), once per loss rate (default 0 % and 1 %, both directions); then,
per loss rate, --last-send-rounds connections of rdmanet_test --last-send
(host_b's one SEND must succeed although host_a disconnects the moment its
receive completes, [RESP-ACK-6]). Prints one line per run and "N passed,
M failed"; exit 0 only if every run printed "rdmanet_test: OK" on both
guests.

Usage: python3 tests/rdma/run_rdmanet.py [--loss 0 1] [--size N] [--iters N] [--sr]
           [--mode all|transfer|last-send] [--last-send-rounds N]
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "net"))
sys.path.insert(0, os.path.join(HERE, "..", "harness"))
from launch import Testbed  # noqa: E402
from tally import Tally  # noqa: E402


def pair_run(tb, flags, timeout_b):
    """rdmanet_test host_a / host_b with flags; returns both verdicts."""
    a, b = tb.guests
    a.send(f"rdmanet_test host_a {flags}")
    a.expect(r"listening", timeout=30)
    b.send(f"rdmanet_test host_b {tb.ip(0)} {flags}")
    mb = b.expect(r"rdmanet_test: (OK|FAILED[^\n]*)\n", timeout=timeout_b)
    ma = a.expect(r"rdmanet_test: (OK|FAILED[^\n]*)\n", timeout=120)
    a.expect(r"\$ $", timeout=30)
    b.expect(r"\$ $", timeout=30)
    return ma[1], mb[1]


def halt_all(tb):
    for g in tb.guests:
        g.send("halt 0")
    for g in tb.guests:
        g.wait_exit(30)


def one_run(loss, size, iters, sr):
    spec = f"loss {loss}% seed 7" if loss else None
    name = f"rdmanet-loss{loss}" + ("-sr" if sr else "")
    flags = f"-s {size} -n {iters}" + (" --sr" if sr else "")
    with Testbed(2, both=spec, name=name) as tb:
        tb.boot()
        a, b = tb.guests
        va, vb = pair_run(tb, flags, 300)
        out_b = b.output()
        rate = [l for l in out_b.splitlines() if "MB/s" in l or l.startswith("qp ")]
        ok = va == "OK" and vb == "OK"
        # rdmacp: copy a ~200 KB binary to host_a, checksum verified there.
        a.send("rdmacp recv")
        a.expect(r"rdmacp: waiting", timeout=30)
        b.send(f"rdmacp send /rdmatest {tb.ip(0)} copy")
        cb = b.expect(r"rdmacp: (sent[^\n]*|[^\n]*)\n", timeout=300)
        ca = a.expect(r"rdmacp: (received[^\n]*|[^\n]*)\n", timeout=120)
        a.expect(r"\$ $", timeout=30)
        b.expect(r"\$ $", timeout=30)
        cp_ok = ": OK" in ca[1] and ": OK" in cb[1]
        if cp_ok:
            size = a.run("ls copy", timeout=30)
            stat = a.run("rdmastat", timeout=30)
            rate.append(ca[1].strip())
        ok = ok and cp_ok
        halt_all(tb)
        return ok, f"host_a {va}, host_b {vb}; " + " | ".join(rate)


# The ACK hold of the last-send runs (boot argument ack_delay, us): long
# enough that host_a's disconnect always comes while the ACK is held (the
# default 300 us can pass before a TCG guest's process wakes), still far
# below the QPs' RTO (timeout 14: 67 ms).
LAST_SEND_ACK_DELAY_US = 20000


def last_send_runs(loss, rounds):
    """rounds connections, each one SEND then host_a's immediate disconnect."""
    spec = f"loss {loss}% seed 11" if loss else None
    with Testbed(2, both=spec, name=f"rdmanet-last-send-loss{loss}",
                 extra_append=f"ack_delay={LAST_SEND_ACK_DELAY_US}") as tb:
        tb.boot()
        bad = []
        for i in range(rounds):
            va, vb = pair_run(tb, "--last-send", 120)
            if va != "OK" or vb != "OK":
                bad.append(f"round {i + 1}: host_a {va}, host_b {vb}")
        halt_all(tb)
        return not bad, f"{rounds - len(bad)}/{rounds} last SENDs succeeded" + (
            "; " + "; ".join(bad) if bad else "")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--loss", type=float, nargs="+", default=[0, 1])
    ap.add_argument("--size", type=int, default=65536)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--sr", action="store_true")
    ap.add_argument("--mode", choices=["all", "transfer", "last-send"], default="all")
    ap.add_argument("--last-send-rounds", type=int, default=10)
    args = ap.parse_args()
    tally = Tally()
    for loss in args.loss:
        loss_s = f"{loss:g}"
        if args.mode in ("all", "transfer"):
            tally.run(f"rdmanet_loss{loss_s}", lambda: one_run(loss_s, args.size, args.iters, args.sr),
                      timed=False)
        if args.mode in ("all", "last-send"):
            tally.run(f"rdmanet_last_send_loss{loss_s}",
                      lambda: last_send_runs(loss_s, args.last_send_rounds))
    return tally.finish()


if __name__ == "__main__":
    sys.exit(main())
