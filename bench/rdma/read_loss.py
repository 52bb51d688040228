#!/usr/bin/env python3
"""read_loss.py: 1 MiB RDMA READ between two xv6 guests under loss, with the
requester's counters. rdma_bw -t read -s 1048576 -e --stats, go-back-N and
selective repeat, at 0, 1 and 5 % loss on both directions of linkemu; each
row gives the goodput and the requester's (the client's) QP counters:
retransmissions, timeouts, duplicates, out-of-sequence and dropped frames
(proto-spec [REQ-READ-6], [SR-REQ-16]). With --base REV the same runs go on
REV's build too (built in build/ab/<rev> as bench-ab does), alternating.

Usage: python3 bench/rdma/read_loss.py [--base REV] [--iters N] [--rounds N] [--mtu 1024|4096]
                                      [--modes gbn,sr] [--out DIR]
Outputs: DIR/read-loss.txt (the table), DIR/read-loss.log (every run).
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ab_compare import REPO, Testbed, build_base, progress, save_outputs  # noqa: E402 (it sets the paths)
import rdma_sweep  # noqa: E402
import perftable  # noqa: E402

LOSSES = (0, 1, 5)
# column: perftable.qp_stats's key
KEYS = {"tx": "tx_frames", "rx": "rx_frames", "retx": "retransmits", "tmo": "timeouts", "dup": "dup",
        "oos": "oos", "oow": "oow", "dropped": "dropped"}


def run_read(tb, sr, iters, log):
  """One rdma_bw READ run, guest 1 reading from guest 0: MiB/s and its counters."""
  r = rdma_sweep.bw(tb, "read", 1 << 20, iters, sr, log)
  q = perftable.qp_stats(log[-1])      # the run's client output, last in the log
  if not r or not q:
    return None
  return {"MiBps": float(r["bw_avg_MiBps"]), **{k: q[v] for k, v in KEYS.items()}}


def one_round(rnd, label, kernel, fs_img, opts, results, log):
  append = f"rdma_mtu={opts.mtu}" if opts.mtu != 1024 else ""
  with Testbed(2, name=f"readloss-{label}", kernel=kernel, fs_img=fs_img, extra_append=append) as tb:
    tb.boot()
    for loss in LOSSES:
      tb.set_spec("both", f"loss {loss:g}% seed 11" if loss else "")
      for sr in opts.sr_modes:
        r = run_read(tb, sr, opts.iters, log)
        progress("read-loss", f"{label} {'sr' if sr else 'gbn'} {loss}%: {r}")
        if r:
          results.setdefault((label, sr, loss), []).append({**r, "round": rnd})


def table(results, labels, opts, took):
  lines = [f"read-loss: rdma_bw -t read -s 1048576 -n {opts.iters} -e --stats [--sr], two guests, "
           f"path MTU {opts.mtu}, "
           f"loss on both directions; median MiB/s over the rounds; \"of 0%\": the median of each "
           f"round's own ratio to that round's lossless run; counters of the requester (the last round); "
           f"{took:.0f} s", "",
           f"{'build':6} {'mode':4} {'loss':>5} {'MiB/s':>8} {'of 0%':>6} " + " ".join(f"{k:>8}" for k in KEYS)]
  for label in labels:
    for sr in opts.sr_modes:
      base = {x["round"]: x["MiBps"] for x in results.get((label, sr, 0), [])}
      for loss in LOSSES:
        rs = results.get((label, sr, loss))
        if not rs:
          lines.append(f"{label:6} {'sr' if sr else 'gbn':4} {loss:>4}% {'-':>8}")
          continue
        v = statistics.median(x["MiBps"] for x in rs)
        ratios = [x["MiBps"] / base[x["round"]] for x in rs if base.get(x["round"])]
        q = f"{statistics.median(ratios):6.2f}" if ratios else f"{'-':>6}"
        lines.append(f"{label:6} {'sr' if sr else 'gbn':4} {loss:>4}% {v:8.2f} {q} "
                     + " ".join(f"{rs[-1][k]:8d}" for k in KEYS))
  return "\n".join(lines) + "\n"


def main():
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--base", help="also run this git revision's build")
  ap.add_argument("--iters", type=int, default=40)
  ap.add_argument("--rounds", type=int, default=1)
  ap.add_argument("--mtu", type=int, default=1024, choices=(1024, 4096), help="path MTU (boot argument rdma_mtu)")
  ap.add_argument("--modes", default="gbn,sr", help="comma-separated: gbn, sr (default both)")
  ap.add_argument("--out", default=os.path.join(REPO, "bench", "results"))
  args = ap.parse_args()
  args.sr_modes = [m == "sr" for m in ("gbn", "sr") if m in args.modes.split(",")]
  if not args.sr_modes:
    ap.error("--modes: gbn, sr or both")
  builds = {"new": (os.path.join(REPO, "kernel", "kernel"), os.path.join(REPO, "fs.img"))}
  if args.base:
    _, bk, bf = build_base(args.base)
    builds["base"] = (bk, bf)
  labels = sorted(builds)
  results, log, t0 = {}, [], time.time()
  for rnd in range(args.rounds):
    for label in (labels if rnd % 2 == 0 else labels[::-1]):
      one_round(rnd, label, *builds[label], args, results, log)
  text = table(results, labels, args, time.time() - t0)
  save_outputs(args.out, "read-loss", text, log)
  return 0


if __name__ == "__main__":
  sys.exit(main())
