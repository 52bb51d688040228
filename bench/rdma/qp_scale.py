#!/usr/bin/env python3
"""qp_scale.py: aggregate goodput and guest CPU per frame as QPs multiply.

Two guests over linkemu; the server runs `rdma_bw`, the client runs
  busy: `rdma_bw -t write -s SIZE -n ITERS -e --stats -q N <server>`
        (N connections, messages round-robin over them, one CQ)
  idle: `rdma_bw -t write -s SIZE -n ITERS -e --stats --idle-qps N-1 <server>`
        (one busy QP beside N-1 connected QPs that never carry a frame)
for N in 1, 4, 16, 64, 256. Each round runs every (mode, N) once, the
one-QP run next to the largest N's two, in forward order on even rounds
and backward on odd ones, so the host's load drifts onto all of them. Per
run it keeps the client's BW average and its "cpu:" line (busy guest CPU
over the run per RDMA frame sent + received); the table has the medians.
Writes bench/results/qp-scale.csv, .png and qp-scale.md with the two
ratios the QP limits are held to, each the median of the rounds' own
ratios (a round's runs are minutes apart at most: the host's load, which
moves single runs by 2x, cancels better than between medians):
  goodput with 256 busy QPs / 1 QP          (target >= 0.9)
  CPU per frame with 255 idle QPs / none    (target <= 1.1)

Usage: python3 bench/rdma/qp_scale.py [--rounds R (5)] [--iters N] [--size B]
                                      [--qps 1,4,16,64,256] [--out DIR]
"""
import argparse
import csv
import os
import re
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "net"))
sys.path.insert(0, os.path.join(REPO, "tests", "harness"))
from launch import Testbed  # noqa: E402
import perftable  # noqa: E402

CPU_LINE = re.compile(r"cpu: busy (\d+) us of (\d+) x (\d+) us, (\d+) frames \(tx\+rx\), (\d+)\.(\d+) us/frame")
MODES = ("busy", "idle")


def parse(out):
    """(BW average MiB/s, CPU us per frame) of one client transcript."""
    row = perftable.bw_row(out)
    m = CPU_LINE.search(out)
    if row is None or m is None:
        raise RuntimeError(f"rdma_bw printed no result: {out.strip()[-400:]}")
    return row["bw_avg_MiBps"], int(m[5]) + int(m[6]) / 1000.0


def one_run(tb, mode, n, args):
    a, b = tb.guests[:2]
    a.send("rdma_bw")
    a.expect(r"waiting for a client", timeout=60)
    more = f"-q {n}" if mode == "busy" else f"--idle-qps {n - 1}"
    out = b.run(f"rdma_bw -t write -s {args.size} -n {args.iters} -e --stats {more} {tb.ip(0)}",
                timeout=900)
    a.expect(r"\$ $", timeout=180)
    return parse(out)


def plot(rows, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("qp_scale: no matplotlib: no PNG", flush=True)
        return
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for mode, style in (("busy", "o-"), ("idle", "s--")):
        pts = [r for r in rows if r["mode"] == mode]
        label = "N busy QPs" if mode == "busy" else "1 busy + N-1 idle QPs"
        ax1.plot([r["qps"] for r in pts], [r["bw_MiBps"] for r in pts], style, label=label)
        ax2.plot([r["qps"] for r in pts], [r["cpu_us_per_frame"] for r in pts], style, label=label)
    for ax, what in ((ax1, "aggregate goodput, MiB/s"), (ax2, "guest CPU per frame, us")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("QPs (N)")
        ax.set_ylabel(what)
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend()
    fig.suptitle("rdma_bw WRITE between two guests (medians)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=2048)
    ap.add_argument("--size", type=int, default=65536)
    ap.add_argument("--qps", default="1,4,16,64,256")
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "results"))
    args = ap.parse_args()
    qps = [int(x) for x in args.qps.split(",")]
    os.chdir(REPO)
    runs = {(mode, n): [] for mode in MODES for n in qps}
    hi = max(qps)
    order = [("busy", 1)] if 1 in qps else []
    order += [(mode, n) for n in sorted(qps, key=lambda n: -n) for mode in MODES
              if n != 1]
    t0, load0 = time.time(), os.getloadavg()[0]
    with Testbed(2, name="qpscale") as tb:
        tb.boot()
        for rnd in range(args.rounds):
            for mode, n in (order if rnd % 2 == 0 else order[::-1]):
                bw, cpu = one_run(tb, mode, n, args)
                runs[(mode, n)].append((bw, cpu))
                print(f"round {rnd + 1}/{args.rounds} {mode} N={n}: {bw:.2f} MiB/s, "
                      f"{cpu:.3f} us/frame", flush=True)
        tb.halt()
    runs[("idle", 1)] = runs[("busy", 1)] if 1 in qps else []   # no idle QPs: the same run
    def round_ratios(num, field):
        """Each round's run of num over that round's one-QP run."""
        return [round(a[field] / b[field], 3) for a, b in zip(runs[num], runs.get(("busy", 1), [])) if b[field]]
    rows = []
    for mode in MODES:
        for n in qps:
            r = runs[(mode, n)]
            if not r:
                continue
            bw_r, cpu_r = round_ratios((mode, n), 0), round_ratios((mode, n), 1)
            rows.append({"mode": mode, "qps": n, "runs": len(r),
                         "bw_MiBps": round(statistics.median(x[0] for x in r), 2),
                         "cpu_us_per_frame": round(statistics.median(x[1] for x in r), 3),
                         "bw_round_ratios": " ".join(map(str, bw_r)),
                         "bw_ratio_median": round(statistics.median(bw_r), 3) if bw_r else "",
                         "cpu_round_ratios": " ".join(map(str, cpu_r)),
                         "cpu_ratio_median": round(statistics.median(cpu_r), 3) if cpu_r else ""})
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "qp-scale.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    plot(rows, os.path.join(args.out, "qp-scale.png"))
    lines = ["# QP scaling: rdma_bw between two guests", "",
             f"`python3 bench/rdma/qp_scale.py --rounds {args.rounds} --iters {args.iters} "
             f"--size {args.size} --qps {args.qps}` (`make bench-qp`): WRITE {args.size} B x "
             f"{args.iters}, -e, medians of {args.rounds} rounds (alternating order), "
             f"{time.time() - t0:.0f} s, host load (1-min average) {load0:.1f} at the start, "
             f"{os.getloadavg()[0]:.1f} at the end.", "",
             "busy: `-q N`, N connections, messages round-robin. idle: `--idle-qps N-1`, one busy QP "
             "beside N-1 connected idle ones. CPU: the client guest's busy time over the run "
             "per RDMA frame (tx + rx), from sysinfo's idle time and the device counters.", "",
             "| mode | QPs | goodput MiB/s | CPU us/frame |", "| --- | ---: | ---: | ---: |"]
    lines += [f"| {r['mode']} | {r['qps']} | {r['bw_MiBps']:.2f} | {r['cpu_us_per_frame']:.3f} |" for r in rows]
    if 1 in qps and hi > 1:
        g = statistics.median(round_ratios(("busy", hi), 0))
        c = statistics.median(round_ratios(("idle", hi), 1))
        lines += ["", "Ratios: the median of the rounds' ratios (each round's runs side by side).", "",
                  f"- goodput, {hi} busy QPs / 1 QP: **{g:.2f}** (target >= 0.9)",
                  f"- CPU per frame, 1 busy + {hi - 1} idle QPs / 1 QP: **{c:.2f}** (target <= 1.1)"]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(args.out, "qp-scale.md"), "w") as f:
        f.write(text)
    print(text, end="")


if __name__ == "__main__":
    main()
