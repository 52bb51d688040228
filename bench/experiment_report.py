#!/usr/bin/env python3
"""experiment_report.py: an experiment's runs.csv into tables and plots.

Owns what bench/experiment.py writes after the runs (and again with
`experiment.py --report DIR`): per cell (one level x one workload), over
its successful runs, the median, the mean and the mean's 95 % confidence
interval (Student's t on the repeats) of each metric:

  summary.csv   one row per cell and metric
  summary.md    the same as tables, with the experiment's meta data
  goodput.png   goodput against the level, one line per workload (mean and
                its 95 % interval as error bars; go-back-N dashed)
  wirecost.png  frames both QPs sent per data frame against the level
  latency.png   rdma_lat's t_typical, p99 and p99.9 against the level

Usage: python3 bench/experiment_report.py DIR   (needs matplotlib for the PNGs)
"""
import csv
import json
import math
import os
import statistics
import sys

# Student's t, two-sided 95 %, by degrees of freedom (1..30); beyond, 1.96.
T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
       2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
       2.045, 2.042)
METRICS = ("goodput_MBps", "msg_rate_Mpps", "t_typical_us", "p99_us", "p999_us", "frames_per_data_frame",
           "cli_retransmits", "cli_timeouts", "cli_rx_naks", "srv_dup", "cli_dup", "medium_lost_b2a",
           "medium_lost_a2b")
CELL_KEYS = ("cell", "medium", "level", "tool", "op", "size", "mode", "depth", "chunk", "peer", "peer_role", "iters")


def t95(df):
    return T95[df - 1] if df <= len(T95) else 1.96


def interval(values):
    """(median, mean, low, high): the mean's 95 % Student-t interval; with
    one value the interval is that value."""
    n = len(values)
    med, mean = statistics.median(values), statistics.fmean(values)
    if n < 2:
        return med, mean, mean, mean
    half = t95(n - 1) * statistics.stdev(values) / math.sqrt(n)
    return med, mean, mean - half, mean + half


def number(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def cells(rows):
    """{cell: [its successful runs]}, in first-seen order; a run counted once."""
    seen, out = set(), {}
    for r in rows:
        if r["status"] == "ok" and r["run_id"] not in seen:
            seen.add(r["run_id"])
            out.setdefault(r["cell"], []).append(r)
    return out


def summarize(rows):
    """One dict per cell and metric with the interval's numbers."""
    table = []
    for cell, runs in cells(rows).items():
        for m in METRICS:
            vals = [x for x in (number(r.get(m)) for r in runs) if x is not None]
            if not vals:
                continue
            med, mean, lo, hi = interval(vals)
            table.append({**{k: runs[0].get(k, "") for k in CELL_KEYS}, "metric": m, "n": len(vals),
                          "median": round(med, 4), "mean": round(mean, 4), "ci95_low": round(lo, 4),
                          "ci95_high": round(hi, 4)})
    return table


def workload_label(t):
    """A cell's workload in a few words; "vs linux server|client" when the
    peer is the Linux guest's xrpeer."""
    peer = f"vs linux {t['peer_role']}" if t.get("peer") == "linux" else ""
    return " ".join(str(t[k]) for k in ("tool", "op", "size", "mode") if t[k] != "") + (f" {peer}" if peer else "")


def series(table, metric):
    """{workload label: [(x, mean, low, high, median)]} of one metric, x the
    level's place on the axis (the levels' order in the file when absent)."""
    order = {}
    for t in table:
        order.setdefault(t["level"], len(order))
    out = {}
    media = len({t["medium"] for t in table}) > 1
    for t in table:
        if t["metric"] != metric:
            continue
        label = workload_label(t) + (f" {t['medium']}" if media else "")
        out.setdefault(label, []).append((t.get("x", order[t["level"]]), t["mean"], t["ci95_low"],
                                           t["ci95_high"], t["median"]))
    return {k: sorted(v) for k, v in out.items()}


def plot(out, table, metrics, ylabel, title, name, level_names, ticks):
    """One PNG of the metrics (a name or a tuple of names, each a line per
    workload) against the level (mean, 95 % interval bars); False if no cell
    has them."""
    metrics = (metrics,) if isinstance(metrics, str) else metrics
    data = {f"{label}{' ' + m if len(metrics) > 1 else ''}": pts for m in metrics
            for label, pts in series(table, m).items()}
    if not data:
        return False
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 5))
    for label, pts in data.items():
        xs, mean, lo, hi, _ = zip(*pts)
        ax.errorbar(xs, mean, yerr=[[m - a for m, a in zip(mean, lo)], [b - m for m, b in zip(mean, hi)]],
                    marker="o", capsize=3, linestyle=":" if label.endswith("_us") and "typical" not in label
                    else "--" if " gbn" in label else "-", label=label)
    ax.set_xlabel(level_names)
    if ticks:
        ax.set_xticks(list(ticks), list(ticks.values()), rotation=20, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, name), dpi=100)
    plt.close(fig)
    return True


def level_axis(meta):
    """Each level's x and tick label (experiment.load's: the loss % of a
    plain loss level or the file's `x`, else the level's place with its name
    as the tick) and the axis label (the file's x_label)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import experiment                       # the one reader of experiment files
    import tomllib
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".toml") as f:
        f.write(meta.get("experiment_text", ""))
        f.flush()
        try:
            exp = experiment.load(f.name)
        except experiment.ExperimentError:
            return {}, "level", {}
    ticks = {lv["x"]: lv["tick"] for lv in exp["levels"] if "tick" in lv}
    label = exp.get("x_label", "level" if ticks else "loss per direction (%)")
    return {lv["name"]: lv["x"] for lv in exp["levels"]}, label, ticks


def write_md(out, table, meta, rows):
    ok = len(cells(rows))
    failed = sorted({r["run_id"] for r in rows if r["status"] != "ok"} - {r["run_id"] for r in rows
                                                                             if r["status"] == "ok"})
    s = meta.get("sessions", [{}])
    L = [f"# Experiment {meta.get('name')} ({meta.get('experiment')}, medium {meta.get('medium')})", "",
         f"Commands: {'; '.join('`' + x.get('command', '') + '`' for x in s)}. Commit {s[-1].get('commit')}, "
         f"host load at start {', '.join(f'{v:.2f}' for v in s[-1].get('host_load', []))} "
         f"({s[-1].get('host_cpus')} CPUs). Seeds: {meta.get('seeds')} (base {meta.get('base_seed')}). "
         f"{meta.get('repeats')} repeats; {ok} cells; runs that failed twice: {', '.join(failed) or 'none'}.", "",
         "Median, mean and the mean's 95 % confidence interval (Student's t over the repeats). Columns: "
         "docs/experiments.md.", ""]
    for metric in METRICS:
        part = [t for t in table if t["metric"] == metric]
        if not part:
            continue
        L += [f"## {metric}", "", "| medium | level | workload | n | median | mean | 95 % CI |",
              "| --- | --- | --- | ---: | ---: | ---: | --- |"]
        for t in part:
            wl = workload_label(t)
            L.append(f"| {t['medium']} | {t['level']} | {wl} | {t['n']} | {t['median']:g} | {t['mean']:g} | "
                     f"{t['ci95_low']:g} .. {t['ci95_high']:g} |")
        L.append("")
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write("\n".join(L))


def main(out):
    rows = list(csv.DictReader(open(os.path.join(out, "runs.csv"))))
    meta_path = os.path.join(out, "meta.json")
    meta = json.load(open(meta_path)) if os.path.exists(meta_path) else {}
    table = summarize(rows)
    xs, xlabel, ticks = level_axis(meta)
    for t in table:
        if t["level"] in xs:
            t["x"] = xs[t["level"]]
    with open(os.path.join(out, "summary.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(CELL_KEYS) + ["x", "metric", "n", "median", "mean", "ci95_low",
                                                            "ci95_high"], extrasaction="ignore")
        w.writeheader()
        w.writerows(table)
    write_md(out, table, meta, rows)
    name, medium = meta.get("name", "experiment"), meta.get("medium", "")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print(f"experiment_report: no matplotlib in {sys.executable}: no plots", file=sys.stderr)
        return 0
    plot(out, table, "goodput_MBps", "goodput (MB/s, 10^6 B)",
         f"{name} through {medium}: goodput (mean, 95 % CI; go-back-N dashed)", "goodput.png", xlabel, ticks)
    plot(out, table, "frames_per_data_frame", "frames sent by both QPs per data frame",
         f"{name} through {medium}: wire cost", "wirecost.png", xlabel, ticks)
    plot(out, table, ("t_typical_us", "p99_us", "p999_us"), "latency (us)",
         f"{name} through {medium}: rdma_lat median (t_typical), p99 and p99.9 (dotted)", "latency.png",
         xlabel, ticks)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
