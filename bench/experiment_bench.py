#!/usr/bin/env python3
"""experiment_bench.py: an experiment's cells against make bench-rdma's.

Owns the check that the experiment runner measures what the project's
fixed benchmark measures: for every cell of DIR/runs.csv that is also a
cell of bench/results/rdma-bw.csv (rdma_bw, the same operation, size, path
MTU, go-back-N or selective repeat, a plain `loss P%` on both directions,
a bench loss configuration's P), the two medians and the 95 % intervals
(Student's t over each side's runs), and whether they agree: the bench's
median inside the experiment's interval, or at least the two intervals
overlapping. The runs are not the same runs (another day, another host
load), so agreement is within the intervals, not equality.

Usage: python3 bench/experiment_bench.py DIR [--bench CSV]   -> DIR/bench-agreement.md
"""
import argparse
import csv
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import experiment_report  # noqa: E402

MIB = 1 << 20
BENCH_CSV = os.path.join(HERE, "results", "rdma-bw.csv")


def bench_cells(path):
    """{(mtu, loss %, mode, op, size): (iters, [goodput MB/s per run])} of
    bench-rdma's loss configurations."""
    out = {}
    for r in csv.DictReader(open(path)):
        mode = r["config"].split("-")[0]
        if mode not in ("gbn", "sr") or not r.get("all_avg_MiBps"):
            continue
        runs = [float(v) * MIB / 1e6 for v in r["all_avg_MiBps"].split()]
        out[(int(r["mtu"]), float(r["loss_pct"]), mode, r["op"], int(r["size"]))] = (r["iters"], runs)
    return out


def experiment_cells(out):
    """{same key: (iters, [goodput per run])} of DIR's rdma_bw cells through
    linkemu (bench-rdma's medium) whose level is plain loss, the same both
    ways."""
    got = {}
    for runs in experiment_report.cells(list(csv.DictReader(open(os.path.join(out, "runs.csv"))))).values():
        r = runs[0]
        spec = r["a2b"] or "loss 0%"
        if r["medium"] != "linkemu" or r["tool"] != "rdma_bw" or r["a2b"] != r["b2a"] or not (spec.startswith("loss ") and
                                                                   spec.endswith("%")):
            continue
        try:
            loss = float(spec[5:-1])
        except ValueError:
            continue
        key = (int(r["mtu"]), loss, r["mode"], r["op"], int(r["size"]))
        got[(r["medium"],) + key] = (r["iters"], [float(x["goodput_MBps"]) for x in runs])
    return got


def verdict(exp, bench):
    med, _, lo, hi = experiment_report.interval(exp)
    bmed, _, blo, bhi = experiment_report.interval(bench)
    if lo <= bmed <= hi:
        return "yes: bench median inside the interval"
    if lo <= bhi and blo <= hi:
        return "intervals overlap"
    return "NO"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--bench", default=BENCH_CSV)
    args = ap.parse_args()
    bench = bench_cells(args.bench)
    L = [f"# {os.path.basename(os.path.abspath(args.dir))} against make bench-rdma", "",
         f"Bench: {os.path.relpath(args.bench, os.path.dirname(HERE))} (its loss configurations, each cell's "
         "runs); experiment: runs.csv here. Goodput in MB/s (10^6 B); median [95 % interval of the mean, "
         "Student's t].", "",
         "| medium | MTU | loss % | mode | op | size | experiment (iters, runs) | bench (iters, runs) | agree |",
         "| --- | ---: | ---: | --- | --- | ---: | --- | --- | --- |"]
    n = agree = 0
    for key, (iters, vals) in sorted(experiment_cells(args.dir).items()):
        b = bench.get(key[1:])
        if not b:
            continue
        biters, bvals = b
        e, bb = experiment_report.interval(vals), experiment_report.interval(bvals)
        v = verdict(vals, bvals)
        n, agree = n + 1, agree + (v != "NO")
        L.append(f"| {key[0]} | {key[1]} | {key[2]:g} | {key[3]} | {key[4]} | {key[5]} | {e[0]:.1f} "
                 f"[{e[2]:.1f}, {e[3]:.1f}] ({iters}, {len(vals)}) | {bb[0]:.1f} [{bb[2]:.1f}, {bb[3]:.1f}] "
                 f"({biters}, {len(bvals)}) | {v} |")
    L += ["", f"{agree} of {n} common cells agree within the intervals."]
    text = "\n".join(L) + "\n"
    with open(os.path.join(args.dir, "bench-agreement.md"), "w") as f:
        f.write(text)
    print(text, end="")
    return 0 if n else 1


if __name__ == "__main__":
    sys.exit(main())
