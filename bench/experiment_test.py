#!/usr/bin/env python3
"""experiment_test.py: make test-experiment, the experiment runner's test.

Runs experiments/smoke.toml (two cells: 64 KiB WRITEs on a clean link and
at 3 % loss, twice each, through linkemu) with bench/experiment.py into
build/experiment-test: first stopped after two runs (--max-runs, as Ctrl-C
would), then resumed. Checks, each a line, "N passed, M failed" at the end:

  experiment_stops_and_resumes  the first pass saves 2 runs and exits 3;
                                the second runs the other 2 only (4 rows,
                                each run once)
  experiment_outputs            runs.csv, summary.csv, summary.md,
                                goodput.png, wirecost.png and meta.json
                                (with the command, commit and host load)
  experiment_counters_agree     in every run and direction the frames the
                                QPs lost (sender's tx - receiver's rx) are
                                the frames linkemu lost (in - out), within
                                COUNT_SLACK (CM datagrams and ARP cross it
                                too), linkemu's lost frames are its dropped
                                counter, the lossy cell lost frames and the
                                clean one none
  experiment_summary_medians    every cell has n = 2 and the median and the
                                interval of its runs' goodput in summary.csv

--check DIR: only the last three checks, on DIR's results (edit a copy of
runs.csv to see them fail).
Usage: python3 bench/experiment_test.py [--check DIR]
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "harness"))
sys.path.insert(0, HERE)
from tally import Tally  # noqa: E402
import experiment_report  # noqa: E402

EXP = os.path.join(REPO, "experiments", "smoke.toml")
OUT = os.path.join(REPO, "build", "experiment-test")
COUNT_SLACK = 3
FILES = ("runs.csv", "summary.csv", "summary.md", "goodput.png", "wirecost.png", "meta.json")


def runner(*args):
    cmd = [sys.executable, os.path.join(HERE, "experiment.py"), EXP, "--out", OUT, *args]
    print("$ " + " ".join(cmd), flush=True)
    return subprocess.run(cmd, cwd=REPO).returncode


def rows(out):
    return list(csv.DictReader(open(os.path.join(out, "runs.csv"))))


def check_resume(tally):
    rc1 = runner("--restart", "--max-runs", "2")
    first = rows(OUT)
    rc2 = runner()
    every = rows(OUT)
    ids = [r["run_id"] for r in every]
    ok = (rc1 == 3 and len(first) == 2 and rc2 == 0 and len(every) == 4 and len(set(ids)) == 4
          and all(r["status"] == "ok" for r in every))
    tally.record("experiment_stops_and_resumes", ok,
                 f"first pass exit {rc1} with {len(first)} runs, resumed exit {rc2} with {len(every)} rows "
                 f"({', '.join(r['run_id'] + ' ' + r['status'] for r in every)})")


def check_outputs(tally, out):
    missing = [f for f in FILES if not os.path.exists(os.path.join(out, f)) or not os.path.getsize(
        os.path.join(out, f))]
    meta = json.load(open(os.path.join(out, "meta.json"))) if "meta.json" not in missing else {}
    s = (meta.get("sessions") or [{}])[-1]
    ok = not missing and bool(s.get("command")) and bool(s.get("commit")) and len(s.get("host_load", [])) == 3
    tally.record("experiment_outputs", ok, f"missing or empty: {', '.join(missing) or 'none'}; last session: "
                 f"command {bool(s.get('command'))}, commit {s.get('commit')}, load {s.get('host_load')}")


def check_counters(tally, out):
    bad, lost = [], {}
    for r in rows(out):
        if r["status"] != "ok":
            continue
        # the client (guest 1) sends on b2a, the server (guest 0) on a2b
        for d, tx, rx in (("a2b", "srv", "cli"), ("b2a", "cli", "srv")):
            qp = int(r[f"{tx}_tx_frames"]) - int(r[f"{rx}_rx_frames"])
            med, dropped = int(r[f"{d}_in"]) - int(r[f"{d}_out"]), int(r[f"{d}_dropped"])
            if abs(qp - med) > COUNT_SLACK or med != dropped or (qp, med) != (int(r[f"qp_lost_{d}"]),
                                                                             int(r[f"medium_lost_{d}"])):
                bad.append(f"{r['run_id']} {d}: QPs lost {qp} (column {r[f'qp_lost_{d}']}), medium in-out {med} "
                           f"(column {r[f'medium_lost_{d}']}), dropped {dropped}")
        lost[r["level"]] = lost.get(r["level"], 0) + int(r["medium_lost_b2a"])
    ok = not bad and lost.get("clean") == 0 and lost.get("loss 3%", 0) > 0
    tally.record("experiment_counters_agree", ok, "; ".join(bad) or
                 f"frames linkemu lost on the data direction by level: {lost} (QPs within {COUNT_SLACK})")


def check_summary(tally, out):
    table = list(csv.DictReader(open(os.path.join(out, "summary.csv"))))
    got = {t["cell"]: t for t in table if t["metric"] == "goodput_MBps"}
    bad = []
    for cell, runs in experiment_report.cells(rows(out)).items():
        vals = [float(r["goodput_MBps"]) for r in runs]
        t = got.get(cell)
        med, _, lo, hi = experiment_report.interval(vals)
        if (not t or int(t["n"]) != 2 or abs(float(t["median"]) - med) > 1e-3
                or abs(float(t["ci95_low"]) - lo) > 1e-3 or abs(float(t["ci95_high"]) - hi) > 1e-3):
            bad.append(f"{cell}: runs {vals}, summary {t and {k: t[k] for k in ('n', 'median', 'ci95_low', 'ci95_high')}}")
    ok = not bad and len(got) == 2
    tally.record("experiment_summary_medians", ok, "; ".join(bad) or
                 ", ".join(f"{c} median {t['median']} MB/s [{t['ci95_low']}, {t['ci95_high']}]" for c, t in got.items()))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", metavar="DIR", help="only check DIR's results")
    args = ap.parse_args()
    tally = Tally()
    out = args.check or OUT
    if not args.check:
        check_resume(tally)
    for check in (check_outputs, check_counters, check_summary):
        try:
            check(tally, out)
        except (OSError, KeyError, ValueError) as e:
            tally.record(check.__name__.replace("check_", "experiment_"), False, f"{type(e).__name__}: {e}")
    return tally.finish()


if __name__ == "__main__":
    sys.exit(main())
