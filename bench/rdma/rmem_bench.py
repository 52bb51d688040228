#!/usr/bin/env python3
"""rmem_bench.py: librmem's READ / WRITE latency and throughput between two
xv6 guests (rmemd on guest 0, user/bin/rmem_bench on guest 1), go-back-N and
selective repeat (rmem_bench -r), at 0, 1 and 5 % loss on both directions of
linkemu (one bed; the loss changes between runs). Short by default (a few
minutes): sizes 64 B, 4 KiB, 64 KiB, 1 MiB, 50 accesses each, 16 in flight.

Usage: python3 bench/rdma/rmem_bench.py [--sizes all|few] [--iters N] [--depth D]
                                        [--losses 0 1 5] [--modes gbn sr] [--out DIR]
  --sizes all   every power of two from 64 B to 1 MiB (rmem_bench -a; ~4x longer)
  --replot      only redraw DIR/rmem-bench.png from DIR/rmem-bench.csv
Outputs: DIR/rmem-bench.csv (a row per mode, loss, op, size), DIR/rmem-bench.md
(the table), DIR/rmem-bench.png (latency and throughput against size; needs
matplotlib), DIR/rmem-bench.log (every run's output). DIR: bench/results.
"""
import argparse
import csv
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "net"))
sys.path.insert(0, os.path.join(REPO, "tests", "harness"))
from launch import Testbed  # noqa: E402

FIELDS = ["mode", "loss_pct", "op", "bytes", "iters", "depth", "lat_avg_us", "lat_p50_us",
          "lat_p99_us", "bw_MBps"]
CSV_LINE = re.compile(r"^csv,(READ|WRITE),(\d+),(\d+),(\d+),([\d.]+),([\d.]+),([\d.]+),([\d.]+)$", re.M)


def run(tb, args, sr, log):
    b = tb.guests[1]
    cmd = (f"rmem_bench -s {tb.ip(0)} -c -n {args.iters} -d {args.depth}"
           + (" -a" if args.sizes == "all" else "") + (" -r" if sr else ""))
    out = b.run(cmd, timeout=args.timeout)
    log.write(f"$ {cmd}\n{out}\n")
    log.flush()
    if "rmem_bench: done" not in out:
        print(f"rmem_bench: run failed: {out.strip()[-300:]}", flush=True)
        return []
    return CSV_LINE.findall(out)


def write_md(path, rows, args, took):
    with open(path, "w") as f:
        f.write("# rmem_bench: librmem READ / WRITE between two xv6 guests\n\n")
        f.write(f"rmemd on guest 0, rmem_bench on guest 1 (`-n {args.iters} -d {args.depth}`), linkemu "
                f"loss on both directions, go-back-N (gbn) and selective repeat (sr, `-r`); latency of "
                f"one access at a time, throughput with {args.depth} in flight. {took:.0f} s "
                f"(bench/rdma/rmem_bench.py).\n\n")
        f.write("| mode | loss % | op | bytes | t_avg us | t_p50 us | t_p99 us | MB/s |\n")
        f.write("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |\n")
        for r in rows:
            f.write(f"| {r['mode']} | {r['loss_pct']} | {r['op']} | {r['bytes']} | {r['lat_avg_us']} | "
                    f"{r['lat_p50_us']} | {r['lat_p99_us']} | {r['bw_MBps']} |\n")


def plot(path, rows):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("rmem_bench: no matplotlib, no plot", flush=True)
        return
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    keys = sorted({(r["mode"], r["loss_pct"], r["op"]) for r in rows})
    # A color per op and loss, solid for selective repeat, dashed for go-back-N.
    colors = {k: plt.cm.tab10(i % 10) for i, k in enumerate(sorted({(op, loss) for _, loss, op in keys}))}
    for mode, loss, op in keys:
        sel = sorted((int(r["bytes"]), r) for r in rows
                     if (r["mode"], r["loss_pct"], r["op"]) == (mode, loss, op))
        x = [s for s, _ in sel]
        style = "-" if mode == "sr" else "--"
        label = f"{op} {mode} {loss}%"
        c = colors[(op, loss)]
        ax1.plot(x, [float(r["lat_p50_us"]) for _, r in sel], style, color=c, marker="o", label=label)
        ax2.plot(x, [float(r["bw_MBps"]) for _, r in sel], style, color=c, marker="o", label=label)
    for ax, title, unit in ((ax1, "median latency, one access at a time", "us"),
                            (ax2, "throughput, accesses in flight", "MB/s")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("bytes")
        ax.set_ylabel(unit)
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
    ax2.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", choices=["few", "all"], default="few")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--depth", type=int, default=16)
    ap.add_argument("--losses", type=float, nargs="+", default=[0, 1, 5])
    ap.add_argument("--modes", nargs="+", choices=["gbn", "sr"], default=["gbn", "sr"])
    ap.add_argument("--timeout", type=int, default=1200, help="seconds for one rmem_bench run")
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "results"))
    ap.add_argument("--replot", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.replot:
        with open(os.path.join(args.out, "rmem-bench.csv")) as f:
            plot(os.path.join(args.out, "rmem-bench.png"), list(csv.DictReader(f)))
        return 0
    t0 = time.monotonic()
    rows = []
    with open(os.path.join(args.out, "rmem-bench.log"), "w") as log, \
            Testbed(2, name="rmem-bench") as tb:
        tb.boot()
        tb.guests[0].spawn("rmemd -m 16", r"rmemd: listening on port \d+ \(pid \d+\)", timeout=60)
        for loss in args.losses:
            tb.set_spec("both", f"loss {loss:g}% seed 11" if loss else "")
            for mode in args.modes:
                got = run(tb, args, mode == "sr", log)
                print(f"rmem_bench: {mode} {loss:g}%: {len(got)} rows", flush=True)
                for g in got:
                    rows.append(dict(zip(FIELDS, [mode, f"{loss:g}", *g])))
        tb.halt()
    took = time.monotonic() - t0
    with open(os.path.join(args.out, "rmem-bench.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    write_md(os.path.join(args.out, "rmem-bench.md"), rows, args, took)
    plot(os.path.join(args.out, "rmem-bench.png"), rows)
    want = len(args.losses) * len(args.modes) * 2 * (15 if args.sizes == "all" else 4)
    print(f"rmem_bench: {len(rows)} of {want} rows in {took:.0f} s -> {args.out}/rmem-bench.*", flush=True)
    return 0 if len(rows) == want else 1


if __name__ == "__main__":
    sys.exit(main())
