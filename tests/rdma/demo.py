#!/usr/bin/env python3
"""demo.py: the project's main job, end to end (make demo).

Two guests on one Ethernet link through linkemu with 1 % random loss in
each direction (seeded; the seed is printed, DEMO_SEED repeats a run).
Guest A makes a file of DEMO_SIZE pseudo-random bytes; then, once with
go-back-N and once with selective repeat (both by default), guest B waits
with `rdmacp recv`, A copies the file with `rdmacp send` (RDMA
WRITE_WITH_IMM chunks into B's ring, credits back by SEND), and B
checksums its copy with `rdmacp sum` against A's. The summary, per copy:
bytes, time, throughput, each side's QP counters (rdmacp prints the
counters rdmastat reads, just before its QP goes away) and linkemu's
per-direction drops during that copy; then the throughput ratio of the
two modes on the same link.

Usage: python3 tests/rdma/demo.py [--size BYTES] [--loss PCT] [--seed N] [--mode gbn|sr|both] [--sr]
Environment: DEMO_SIZE, DEMO_LOSS, DEMO_SEED, DEMO_MODE (the same options);
DEMO_SR=1 means --mode sr and DEMO_SR=0 --mode gbn.
Exit status 0 only if every copy arrived intact.
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


MODES = {"gbn": ("go-back-N", ""), "sr": ("selective repeat", " --sr")}   # name, rdmacp flag


def copy_once(tb, size, mode):
    """One rdmacp copy of /demo.bin from A to B in mode ("gbn" or "sr");
    B checksums its copy and deletes it. Returns what the summary needs."""
    a, b = tb.guests
    flags = MODES[mode][1]
    dest = f"demo-{mode}.bin"
    b.send(f"rdmacp recv{flags}")
    b.expect(r"rdmacp: waiting", timeout=60)
    progress("demo", f"{mode}: guest B ({tb.ip(1)}) waiting; A sends")
    before = tb.stats()
    t0 = time.monotonic()
    a.send(f"rdmacp send /demo.bin {tb.ip(1)} {dest}{flags}")
    sent = a.expect(r"rdmacp: (sent [^\n]*|[^\n]*)\n", timeout=1800)
    got = b.expect(r"rdmacp: (received [^\n]*|[^\n]*)\n", timeout=120)
    qa = a.expect(r"rdmacp: qp [^\n]*\n|\$ $", timeout=60).group(0)
    qb = b.expect(r"rdmacp: qp [^\n]*\n|\$ $", timeout=60).group(0)
    wall = time.monotonic() - t0
    a.expect(r"\$ $", timeout=60)
    b.expect(r"\$ $", timeout=60)
    progress("demo", f"{mode}: A: " + sent.group(0).strip())
    progress("demo", f"{mode}: B: " + got.group(0).strip())
    sum_b = checksum(b.run(f"rdmacp sum {dest}", timeout=600))
    b.run(f"rm {dest}", timeout=60)
    rate = re.search(r"\((\d+) KB/s\)", sent.group(0))
    return {"mode": mode, "sent": sent, "got": got, "qa": qa, "qb": qb, "wall": wall,
            "sum_b": sum_b, "kbs": int(rate.group(1)) if rate else None,
            "link": link_delta(before, tb.stats())}


def link_delta(before, after):
    """linkemu's per-direction counters for one copy (after minus before)."""
    out = []
    for d0, d1 in zip(before["directions"], after["directions"]):
        out.append({"name": d1["name"], "frames_in": d1["frames_in"] - d0["frames_in"],
                    "frames_out": d1["frames_out"] - d0["frames_out"],
                    "dropped": d1["dropped"]["total"] - d0["dropped"]["total"],
                    "random": d1["dropped"]["random"] - d0["dropped"]["random"]})
    return out


def print_copy(r, size, sum_a):
    name, flags = MODES[r["mode"]]
    print(f"-- {name} (rdmacp{flags})")
    print(f"file            : {size} bytes, A checksum {sum_a[1]}, B checksum {r['sum_b'][1]} "
          f"({r['sum_b'][0]} bytes) -> {'MATCH' if sum_a == r['sum_b'] else 'MISMATCH'}")
    print(f"time            : {r['wall']:.1f} s host wall clock for send+verify at the receiver")
    if r["kbs"] is not None:
        print(f"throughput      : {r['kbs'] / 1000:.3f} MB/s (rdmacp, guest clock), "
              f"{size / r['wall'] / 1e6:.3f} MB/s (host wall clock)")
    for who, text in (("A (sender)", r["qa"]), ("B (receiver)", r["qb"])):
        c = qp_counters(text)
        if c:
            print(f"QP {who:12s}: qpn {c['qpn']} sr {c['sr']} frames tx {c['tx_frames']} rx {c['rx_frames']}; "
                  f"retransmissions {c['retx']}, timeouts {c['timeouts']}, NAKs tx {c['tx_nak']} "
                  f"rx {c['rx_nak']}, duplicates {c['rx_dup']}, out-of-sequence {c['rx_out_of_seq']}")
        else:
            print(f"QP {who:12s}: no counters printed")
    for d in r["link"]:
        print(f"linkemu {d['name']:8s}: frames in {d['frames_in']} out {d['frames_out']}, "
              f"dropped {d['dropped']} (random {d['random']})")


def copy_ok(r, size, sum_a):
    return (": OK" in r["sent"].group(1) and ": OK" in r["got"].group(1)
            and sum_a[0] == size and r["sum_b"] == sum_a)


def run(size, loss, seed, modes):
    spec = f"loss {loss:g}% seed {seed}" if loss else None
    progress("demo", f"link: {spec or 'no impairment'} both directions (seed {seed}); "
             f"file {size} bytes; " + " then ".join(modes))
    with Testbed(2, both=spec, name="demo") as tb:
        tb.boot()
        a, b = tb.guests
        progress("demo", f"guest A ({tb.ip(0)}): making /demo.bin")
        t0 = time.monotonic()
        made = a.run(f"rdmacp mkfile /demo.bin {size} {seed}", timeout=600)
        mkfile_wall = time.monotonic() - t0
        progress("demo", made.strip())
        sum_a = checksum(a.run("rdmacp sum /demo.bin", timeout=600))
        copies = [copy_once(tb, size, m) for m in modes]
        stat_b = b.run("rdmastat", timeout=30)
        tb.halt()
    ok = checksum(made)[1] == sum_a[1] and all(copy_ok(r, size, sum_a) for r in copies)
    print()
    print("==== demo summary ====")
    print(f"link            : {spec or 'lossless'} (linkemu, both directions), seed {seed}; "
          "the copies share the link, one after the other")
    for r in copies:
        print_copy(r, size, sum_a)
    for r in copies:
        c = qp_counters(r["qa"])
        if c and c["tx_frames"] > c["retx"]:
            print(f"wire cost       : {MODES[r['mode']][0]}: {c['tx_frames'] / (c['tx_frames'] - c['retx']):.2f} "
                  f"frames sent per data frame ({c['retx']} retransmissions for "
                  f"{sum(d['dropped'] for d in r['link'])} frames the link dropped, both ways)")
    if len(copies) > 1:
        print(f"note            : both copies run at the pace of B's file system writes (A's wrote "
              f"/demo.bin at {size / mkfile_wall / 1e6:.1f} MB/s, host clock), not the transport's; "
              "its own rates under loss are in bench/results/rdma-summary.md (make bench)")
    leftover = re.search(r"(\d+) QPs", stat_b)
    print(f"QPs left on B   : {leftover.group(1) if leftover else '?'} (rdmastat after the copies)")
    print(f"RESULT          : {'OK' if ok else 'FAILED'}")
    return ok


def main():
    env = os.environ
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=int(env.get("DEMO_SIZE", 16 << 20)))
    ap.add_argument("--loss", type=float, default=float(env.get("DEMO_LOSS", 1)))
    ap.add_argument("--seed", type=int, default=int(env.get("DEMO_SEED", random.randrange(1, 1 << 30))))
    default_mode = env.get("DEMO_MODE", "both")
    if env.get("DEMO_SR", "") != "":           # the older switch: 1 = sr only, 0 = gbn only
        default_mode = "gbn" if env["DEMO_SR"] == "0" else "sr"
    ap.add_argument("--mode", choices=("gbn", "sr", "both"), default=default_mode)
    ap.add_argument("--sr", action="store_const", const="sr", dest="mode",
                    help="the same as --mode sr")
    args = ap.parse_args()
    modes = ["gbn", "sr"] if args.mode == "both" else [args.mode]
    try:
        ok = run(args.size, args.loss, args.seed, modes)
    except GuestError as e:
        print(f"demo: FAILED: {e}")
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
