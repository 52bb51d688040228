#!/usr/bin/env python3
"""idle_qps.py: does a busy QP slow down when idle QPs exist beside it?

Two guests over linkemu; the server runs rdma_bw, the client runs
`rdma_bw -t write -s 65536 -n 1500 -e --idle-qps N` (N more connected QPs,
loopback pairs on the client, that never carry a frame). Rounds alternate
N = 0 and N = IDLE (ABBA), so the host's load drifts onto both. Prints each
run, the medians and the ratio IDLE/0 (1.0: idle QPs cost nothing per frame).

Usage: python3 bench/rdma/idle_qps.py [--idle N] [--rounds R] [--out FILE]
"""
import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "net"))
sys.path.insert(0, os.path.join(REPO, "tests", "harness"))
from launch import Testbed  # noqa: E402
import perftable  # noqa: E402


def one_run(tb, n):
    a, b = tb.guests[:2]
    a.send("rdma_bw")
    a.expect(r"waiting for a client", timeout=60)
    out = b.run(f"rdma_bw -t write -s 65536 -n 1500 -e --idle-qps {n} {tb.ip(0)}",
                timeout=600)
    a.expect(r"\$ $", timeout=120)
    return perftable.bw_row(out)["bw_avg_MiBps"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--idle", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "results", "idle-qps.txt"))
    args = ap.parse_args()
    os.chdir(REPO)
    res = {0: [], args.idle: []}
    t0 = time.time()
    with Testbed(2, name="idleqps") as tb:
        tb.boot()
        for rnd in range(args.rounds):
            for n in ([0, args.idle] if rnd % 2 == 0 else [args.idle, 0]):
                bw = one_run(tb, n)
                res[n].append(bw)
                print(f"round {rnd + 1}/{args.rounds} idle QPs {n}: {bw} MiB/s", flush=True)
        tb.halt()
    lines = [f"idle QPs beside one busy QP: rdma_bw WRITE 64 KiB -e, {args.rounds} rounds "
             f"each, ABBA order, {time.time() - t0:.0f} s, host load {os.getloadavg()[0]:.1f}"]
    for n in sorted(res):
        lines.append(f"idle QPs {n:4d}: median {statistics.median(res[n]):6.2f} MiB/s  runs "
                     + " ".join(str(v) for v in res[n]))
    lines.append(f"ratio {args.idle}/0: "
                 f"{statistics.median(res[args.idle]) / statistics.median(res[0]):.2f}")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    with open(args.out, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
