#!/usr/bin/env python3
"""run_matrix.py: every opcode x size class between two guests, byte-exact,
under each link impairment (tests/net/launch.py + linkemu).

Per impairment one pair of guests runs `rdmanet_test host_a/host_b --matrix`:
WRITE, READ, SEND, WRITE_WITH_IMM and SEND_WITH_IMM at 0, 1, MTU-1, MTU,
MTU+1 bytes, 64 KiB and 1 MiB (8 MiB too where --big applies); the
receiving side compares every byte and a guard after the end, and a
receive's opcode, immediate and byte_len. The blackhole case switches linkemu's
blackhole on for a few seconds mid-run through its control socket (less
than the retry budget: 7 retries x ~0.54 s local ACK timeout, doubled per
retry), then off; the transfer must recover, and the hole must have
dropped frames of the run (else the case tested nothing). Seeds are printed.

Prints "test matrix_<name>: OK|FAILED (...)" per impairment; the caller
(run_all.py) counts them. Usage:
    python3 tests/rdma/run_matrix.py [--only NAME ...] [--seed N]
"""
import argparse
import os
import re
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "net"))
sys.path.insert(0, os.path.join(HERE, "..", "harness"))
from launch import Testbed  # noqa: E402
from guest import GuestError, progress  # noqa: E402
from tally import Tally  # noqa: E402


def impairments(seed):
    """(name, netem spec on both ports or None, --big, blackhole?, --sr)."""
    return [
        ("lossless", None, True, False, False),
        ("loss1", f"loss 1% seed {seed}", False, False, False),
        ("loss5", f"loss 5% seed {seed}", False, False, False),
        ("loss5_sr", f"loss 5% seed {seed}", False, False, True),
        ("duplicate", f"duplicate 5% seed {seed}", False, False, False),
        ("reorder", f"delay 1ms reorder 10% seed {seed}", False, False, False),
        ("corrupt", f"corrupt 2% seed {seed}", False, False, False),
        ("blackhole", None, False, True, False),
    ]


def blackhole_pulse(tb, a, stop):
    """After host_b's 1-byte WRITE case, blackhole the link for 2 s: the
    next cases (MTU-1 .. 1 MiB WRITE) must ride it out by retransmission."""
    try:
        a.expect(r"matrix: RDMA_WRITE 1 bytes", timeout=120)      # a mark in B's output
    except GuestError:
        return
    if stop.is_set():
        return
    progress("matrix", "blackhole on (both directions) for 2 s, from now")
    tb.set_spec("both", "blackhole 0s-2s")        # times count from the set


def one(name, spec, big, blackhole, sr, timeout):
    flags = " --matrix" + (" --big" if big else "") + (" --sr" if sr else "")
    with Testbed(2, both=spec, name=f"matrix-{name}") as tb:
        tb.boot()
        a, b = tb.guests
        a.send(f"rdmanet_test host_a{flags}")
        a.expect(r"listening", timeout=30)
        stop = threading.Event()
        pulse = None
        if blackhole:
            pulse = threading.Thread(target=blackhole_pulse, args=(tb, b, stop), daemon=True)
            pulse.start()
        b.send(f"rdmanet_test host_b {tb.ip(0)}{flags}")
        mb = b.expect(r"rdmanet_test: (OK|FAILED[^\n]*)\n", timeout=timeout)
        ma = a.expect(r"rdmanet_test: (OK|FAILED[^\n]*)\n", timeout=120)
        stop.set()
        out = b.output()
        cases = re.findall(r"matrix: (\S+) (\d+) bytes: (OK|FAILED)", out)
        summary = re.search(r"matrix: (\d+) cases, (\d+) failed", out)
        qp = re.findall(r"qp 0x[0-9a-f]+: [^\n]*", out)
        link = tb.stats()
        tb.halt()
    drops = "/".join(str(d["dropped"]["total"]) for d in link["directions"])
    dups = "/".join(str(d["duplicated"]) for d in link["directions"])
    corr = "/".join(str(d["corrupted"]) for d in link["directions"])
    ok = ma.group(1) == "OK" and mb.group(1) == "OK" and summary and summary.group(2) == "0"
    # The blackhole case proves nothing unless the hole swallowed frames of the run.
    holed = sum(d["dropped"]["blackhole"] for d in link["directions"])
    if blackhole and holed == 0:
        ok = False
    bad = [f"{op} {n}" for op, n, r in cases if r != "OK"]
    info = (f"{len(cases)} cases{', failed: ' + ', '.join(bad) if bad else ''}; "
            f"{f'blackhole dropped {holed}; ' if blackhole else ''}link dropped {drops}, "
            f"duplicated {dups}, corrupted {corr}; B {qp[-1] if qp else 'no counters'}")
    return ok, info


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--seed", type=int, default=int(os.environ.get("RDMA_TEST_SEED", 11)))
    ap.add_argument("--timeout", type=int, default=600)
    args = ap.parse_args()
    progress("matrix", f"seed {args.seed}")
    tally = Tally()
    for name, spec, big, blackhole, sr in impairments(args.seed):
        if args.only and name not in args.only:
            continue
        tally.run(f"matrix_{name}", lambda: one(name, spec, big, blackhole, sr, args.timeout))
    return tally.finish()


if __name__ == "__main__":
    sys.exit(main())
