#!/usr/bin/env python3
"""demo.py: the project's main job, end to end (make demo).

Two guests on one Ethernet link through linkemu with 1 % random loss in
each direction (seeded; the seed is printed, DEMO_SEED repeats a run).
Guest A makes a file of DEMO_SIZE pseudo-random bytes, guest B waits with
`rdmacp recv`, A copies the file with `rdmacp send` (RDMA WRITE_WITH_IMM
chunks into B's ring, credits back by SEND), and both sides checksum
their copy afterwards with `rdmacp sum`. The summary: bytes, time,
throughput, each side's QP counters (rdmacp prints the counters rdmastat
reads, just before its QP goes away) and linkemu's per-direction drops.

Usage: python3 tests/rdma/demo.py [--size BYTES] [--loss PCT] [--seed N] [--sr]
Environment: DEMO_SIZE, DEMO_LOSS, DEMO_SEED, DEMO_SR=1 (the same options).
Exit status 0 only if the copy arrived intact.
"""
import argparse
import os
import random
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "net"))
sys.path.insert(0, os.path.join(HERE, "..", "harness"))
from launch import Testbed  # noqa: E402
from guest import GuestError, progress  # noqa: E402

QP_FIELDS = ("retx", "timeouts", "tx_nak", "rx_nak", "rx_dup", "rx_out_of_seq",
             "rx_out_of_window", "rx_dropped", "tx_frames", "rx_frames")


def qp_counters(text):
    """The 'rdmacp: qp ...' line as a dict (empty if missing)."""
    m = re.search(r"rdmacp: qp (0x[0-9a-f]+) sr (\w+) (.*)", text)
    if not m:
        return {}
    words = m.group(3).split()
    d = {words[i]: int(words[i + 1]) for i in range(0, len(words) - 1, 2)}
    d["qpn"], d["sr"] = m.group(1), m.group(2)
    return d


def checksum(text):
    m = re.search(r"(\d+) bytes, checksum ([0-9a-f]+)", text)
    return (int(m.group(1)), m.group(2)) if m else (None, None)


def run(size, loss, seed, sr):
    spec = f"loss {loss:g}% seed {seed}" if loss else None
    flags = " --sr" if sr else ""
    progress("demo", f"link: {spec or 'no impairment'} both directions (seed {seed}); "
             f"file {size} bytes; {'selective repeat' if sr else 'go-back-N'}")
    with Testbed(2, both=spec, name="demo") as tb:
        tb.boot()
        a, b = tb.guests
        progress("demo", f"guest A ({tb.ip(0)}): making /demo.bin")
        made = a.run(f"rdmacp mkfile /demo.bin {size} {seed}", timeout=600)
        progress("demo", made.strip())
        b.send(f"rdmacp recv{flags}")
        b.expect(r"rdmacp: waiting", timeout=60)
        progress("demo", f"guest B ({tb.ip(1)}): waiting; A sends")
        t0 = time.monotonic()
        a.send(f"rdmacp send /demo.bin {tb.ip(1)} demo.bin{flags}")
        sent = a.expect(r"rdmacp: (sent [^\n]*|[^\n]*)\n", timeout=1800)
        got = b.expect(r"rdmacp: (received [^\n]*|[^\n]*)\n", timeout=120)
        qa = a.expect(r"rdmacp: qp [^\n]*\n|\$ $", timeout=60).group(0)
        qb = b.expect(r"rdmacp: qp [^\n]*\n|\$ $", timeout=60).group(0)
        wall = time.monotonic() - t0
        a.expect(r"\$ $", timeout=60)
        b.expect(r"\$ $", timeout=60)
        progress("demo", "A: " + sent.group(0).strip())
        progress("demo", "B: " + got.group(0).strip())
        sum_a = checksum(a.run("rdmacp sum /demo.bin", timeout=600))
        sum_b = checksum(b.run("rdmacp sum demo.bin", timeout=600))
        stat_b = b.run("rdmastat", timeout=30)
        link = tb.stats()
        tb.halt()
    rate = re.search(r"\((\d+) KB/s\)", sent.group(0))
    ok = (": OK" in sent.group(1) and ": OK" in got.group(1) and sum_a[0] == size
          and sum_a == sum_b and checksum(made)[1] == sum_a[1])
    print()
    print("==== demo summary ====")
    print(f"link            : {spec or 'lossless'} (linkemu, both directions), seed {seed}")
    print(f"file            : {size} bytes, A checksum {sum_a[1]}, B checksum {sum_b[1]} "
          f"({sum_b[0]} bytes) -> {'MATCH' if sum_a == sum_b else 'MISMATCH'}")
    print(f"time            : {wall:.1f} s host wall clock for send+verify at the receiver")
    if rate:
        kbs = int(rate.group(1))
        print(f"throughput      : {kbs / 1000:.3f} MB/s (rdmacp, guest clock), "
              f"{size / wall / 1e6:.3f} MB/s (host wall clock)")
    for who, text in (("A (sender)", qa), ("B (receiver)", qb)):
        c = qp_counters(text)
        if c:
            print(f"QP {who:12s}: qpn {c['qpn']} sr {c['sr']} frames tx {c['tx_frames']} rx {c['rx_frames']}; "
                  f"retransmissions {c['retx']}, timeouts {c['timeouts']}, NAKs tx {c['tx_nak']} "
                  f"rx {c['rx_nak']}, duplicates {c['rx_dup']}, out-of-sequence {c['rx_out_of_seq']}")
        else:
            print(f"QP {who:12s}: no counters printed")
    for d in link["directions"]:
        print(f"linkemu {d['name']:8s}: frames in {d['frames_in']} out {d['frames_out']}, "
              f"dropped {d['dropped']['total']} (random {d['dropped']['random']}), "
              f"duplicated {d['duplicated']}, corrupted {d['corrupted']}, reordered {d['reordered']}")
    leftover = re.search(r"(\d+) QPs", stat_b)
    print(f"QPs left on B   : {leftover.group(1) if leftover else '?'} (rdmastat after the copy)")
    print(f"RESULT          : {'OK' if ok else 'FAILED'}")
    return ok


def main():
    env = os.environ
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=int(env.get("DEMO_SIZE", 16 << 20)))
    ap.add_argument("--loss", type=float, default=float(env.get("DEMO_LOSS", 1)))
    ap.add_argument("--seed", type=int, default=int(env.get("DEMO_SEED", random.randrange(1, 1 << 30))))
    ap.add_argument("--sr", action="store_true", default=env.get("DEMO_SR", "") not in ("", "0"))
    args = ap.parse_args()
    try:
        ok = run(args.size, args.loss, args.seed, args.sr)
    except GuestError as e:
        print(f"demo: FAILED: {e}")
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
