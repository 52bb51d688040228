#!/usr/bin/env python3
"""ab_compare.py: make bench-ab. The same RDMA workloads on two builds in one
run, so a restructuring can show it costs nothing: BASE (a git revision,
built in a worktree under build/ab/) against the working tree's build.

Each round boots a pair of guests of one build, runs every workload, halts
them, then does the same with the other build; the builds alternate (ABBA
order) so a drift in the host's load falls on both. Workloads, between two
guests over linkemu, every tool with -e as bench-rdma: rdma_bw WRITE 64 KiB
and 1 MiB lossless (go-back-N), WRITE 64 KiB at 1 % loss (selective repeat),
READ 1 MiB, SEND 4 KiB, 64 B WRITE and SEND message rates (perftest's
MsgRate, 20000 messages), and rdma_lat WRITE 2 B. The table gives each
build's median over the rounds and new/base; the tools' own tables go to
the log.

Usage: python3 bench/rdma/ab_compare.py [--base REV] [--rounds N] [--out DIR]
Outputs: DIR/ab-compare.txt (the table), DIR/ab-compare.log (every run).
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "net"))
sys.path.insert(0, os.path.join(REPO, "tests", "harness"))
sys.path.insert(0, HERE)
from launch import Testbed  # noqa: E402
from guest import progress  # noqa: E402
import rdma_sweep  # noqa: E402

# name, kind, op, size, iterations, selective repeat, link loss %
WORKLOADS = [
  ("WRITE 64 KiB", "bw", "write", 65536, 1500, False, 0),
  ("WRITE 1 MiB", "bw", "write", 1 << 20, 100, False, 0),
  ("WRITE 64 KiB SR 1% loss", "bw", "write", 65536, 600, True, 1),
  ("READ 1 MiB", "bw", "read", 1 << 20, 80, False, 0),
  ("SEND 4 KiB", "bw", "send", 4096, 4000, False, 0),
  ("WRITE 64 B msg/s", "rate", "write", 64, 20000, False, 0),
  ("SEND 64 B msg/s", "rate", "send", 64, 20000, False, 0),
  ("lat WRITE 2 B", "lat", "write", 2, 1000, False, 0),
]


def build_base(rev):
  """Check rev out in build/ab/<rev> and build its kernel and disk there."""
  sha = subprocess.run(["git", "rev-parse", "--short", rev], cwd=REPO, check=True,
                       capture_output=True, text=True).stdout.strip()
  tree = os.path.join(REPO, "build", "ab", sha)
  if not os.path.isdir(tree):
    subprocess.run(["git", "worktree", "add", "--detach", tree, sha], cwd=REPO, check=True)
  progress("ab", f"building base {sha} in {os.path.relpath(tree, REPO)}")
  subprocess.run(["make", "-s", "kernel/kernel", "fs.img"], cwd=tree, check=True,
                 stdout=subprocess.DEVNULL)
  return sha, os.path.join(tree, "kernel", "kernel"), os.path.join(tree, "fs.img")


def one_round(label, kernel, fs_img, results, log):
  with Testbed(2, name=f"ab-{label}", kernel=kernel, fs_img=fs_img) as tb:
    tb.boot()
    for name, kind, op, size, iters, sr, loss in WORKLOADS:
      tb.set_spec("both", f"loss {loss:g}% seed 11" if loss else "")
      if kind in ("bw", "rate"):
        r = rdma_sweep.bw(tb, op, size, iters, sr, log)
        v = r and (r["bw_avg_MiBps"] if kind == "bw" else r["mpps"] * 1e6)
      else:
        r = rdma_sweep.lat(tb, op, size, iters, log)
        v = r and r.get("t_typical_us")
      if v:
        results.setdefault((label, name), []).append(float(v))
      progress("ab", f"  {label}: {name}: {v}")


def table(results, labels, base_rev, rounds, took):
  base, new = labels
  lines = [f"bench-ab: base {base_rev} against the working tree, {rounds} rounds each, "
           f"ABBA order, {took:.0f} s",
           "bandwidth in MiB/s (perftest's BW average), msg/s: messages per second (its MsgRate), "
           "latency in usec (typical)",
           "",
           f"{'workload':26} {'base':>10} {'new':>10} {'new/base':>9}  runs (base | new)"]
  for name, kind, *_ in WORKLOADS:
    a, b = results.get((base, name), []), results.get((new, name), [])
    if not a or not b:
      lines.append(f"{name:26} {'-':>10} {'-':>10} {'-':>9}  missing runs")
      continue
    ma, mb = statistics.median(a), statistics.median(b)
    lines.append(f"{name:26} {ma:10.2f} {mb:10.2f} {mb / ma:9.2f}  "
                 + " ".join(f"{x:g}" for x in a) + " | " + " ".join(f"{x:g}" for x in b))
  return "\n".join(lines) + "\n"


def save_outputs(out, stem, text, log):
  """Write OUT/STEM.txt (the table) and OUT/STEM.log (every run), print the table."""
  os.makedirs(out, exist_ok=True)
  with open(os.path.join(out, stem + ".txt"), "w") as f:
    f.write(text)
  with open(os.path.join(out, stem + ".log"), "w") as f:
    f.write("\n".join(log))
  print(text)


def main():
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--base", default=os.environ.get("BASE", "HEAD"))
  ap.add_argument("--rounds", type=int, default=int(os.environ.get("ROUNDS", 3)))
  ap.add_argument("--out", default=os.path.join(REPO, "bench", "results"))
  args = ap.parse_args()
  sha, bk, bf = build_base(args.base)
  builds = {"base": (bk, bf), "new": (os.path.join(REPO, "kernel", "kernel"), os.path.join(REPO, "fs.img"))}
  results, log, t0 = {}, [], time.time()
  for rnd in range(args.rounds):
    order = ["base", "new"] if rnd % 2 == 0 else ["new", "base"]
    for label in order:
      progress("ab", f"round {rnd + 1}/{args.rounds}: {label}")
      one_round(label, *builds[label], results, log)
  text = table(results, ("base", "new"), sha, args.rounds, time.time() - t0)
  save_outputs(args.out, "ab-compare", text, log)
  return 0


if __name__ == "__main__":
  sys.exit(main())
