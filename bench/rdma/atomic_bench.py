#!/usr/bin/env python3
"""atomic_bench.py: make bench-atomic. Remote atomics' latency and rate,
xv6 <-> xv6 beside Linux Soft-RoCE (rxe) <-> rxe, in one run on one link.

One linkemu link (lossless, path MTU 1024 on a 1500-byte link) carries two
xv6 guests (0 server, 1 client) and two Linux guests (2 client, 3 server):

  xv6   rdma_lat -t atomic / rdma_bw -t atomic (user/bin: perftest's columns)
  rxe   perftest's ib_atomic_lat / ib_atomic_bw (their own TCP exchange)

for FETCH_AND_ADD and CMP_AND_SWAP (-A), the same -n on both stacks, ROUNDS
rounds (the stacks' order reversed every other round). Kept from each run:
latency t_typical and t_avg (us, one atomic at a time), rate MsgRate (Mpps,
as many in flight as the requester's initiator depth allows) and BW average.
The table shows each cell's median over the rounds and xv6's against rxe's
(a unit-free ratio: both ran under the same load, all four guests up).

Outputs (bench/results/): atomic.csv (every run) and atomic.md (the table,
and the runs that failed). Exit status 1 only when a cell has no run.
  python3 bench/rdma/atomic_bench.py [--out DIR] [--rounds N] [--iters N]
"""
import argparse
import csv
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "net"))
sys.path.insert(0, os.path.join(REPO, "tests", "harness"))
from launch import Testbed  # noqa: E402
from guest import GuestError, progress  # noqa: E402
import perftable  # noqa: E402

XV6_SRV, XV6_CLI, LNX_CLI, LNX_SRV = 0, 1, 2, 3
ATOMICS = ("FETCH_AND_ADD", "CMP_AND_SWAP")
# (test, perftest program, xv6 tool, the row reader, the columns kept)
TESTS = (("lat", "ib_atomic_lat", "rdma_lat", perftable.lat_row, ("t_typical_us", "t_avg_us")),
         ("rate", "ib_atomic_bw", "rdma_bw", perftable.bw_row, ("mpps", "bw_avg_MiBps")))
ROUNDS = 5
ITERS = 5000
DEADLINE = 600
FIELDS = ["round", "stack", "test", "atomic", "iters", "t_typical_us", "t_avg_us", "mpps", "bw_avg_MiBps"]


def xv6_run(tb, tool, atomic, iters):
    """The xv6 server (it takes the client's parameters), then the client:
    the client's output, or None with a reason."""
    srv, cli = tb.guests[XV6_SRV], tb.guests[XV6_CLI]
    start = len(srv.output())
    srv.spawn(f"status {tool}", ready=r"waiting for a client on port \d+")
    out = cli.run(f"{tool} -t atomic -A {atomic} -n {iters} {tb.ip(XV6_SRV)}", timeout=DEADLINE)
    m = srv.expect(rf"status: {tool} exited (-?\d+)\n", timeout=120)
    if m[1] != "0":
        return None, f"xv6 server exited {m[1]}: {srv.output()[start:].strip()[-200:]!r}"
    return out, None


def rxe_run(tb, prog, atomic, iters):
    """perftest's server on guest 3 (once it listens), its client on guest 2."""
    cli, srv = tb.guests[LNX_CLI], tb.guests[LNX_SRV]
    flags = f"-A {atomic} -n {iters} -F"
    if not srv.start_server(f"{prog} -d rxe0 -x {srv.gid_index} {flags}"):
        return None, f"{prog} server never listened: {srv.server_output(30).strip()[-200:]!r}"
    out = cli.run(f"{prog} -d rxe0 -x {cli.gid_index} {flags} {tb.ip(LNX_SRV)}", timeout=DEADLINE)
    srv.server_output(120)
    return out, None


def one(tb, rnd, stack, test, atomic, iters, log):
    """One run: a CSV row, or None (the reason goes to the log)."""
    name, prog, tool, reader, cols = test
    run = xv6_run if stack == "xv6" else rxe_run
    try:
        out, why = run(tb, tool if stack == "xv6" else prog, atomic, iters)
    except GuestError as e:
        out, why = None, f"guest error: {e}"
    log.append(f"### round {rnd} {stack} {name} {atomic}\n{(out or why).strip()}\n")
    row = reader(out) if out else None
    if not row:
        progress("atomic", f"{stack} {name} {atomic}: no result ({why or 'no perftest row'})")
        return None
    return {"round": rnd, "stack": stack, "test": name, "atomic": atomic, "iters": iters,
            **{c: row[c] for c in cols}}


def run_all(tb, rounds, iters, log):
    rows = []
    for rnd in range(rounds):
        stacks = ("xv6", "rxe") if rnd % 2 == 0 else ("rxe", "xv6")
        for test in TESTS:
            for atomic in ATOMICS:
                for stack in stacks:
                    progress("atomic", f"round {rnd + 1}/{rounds}: {stack} {test[0]} {atomic}")
                    r = one(tb, rnd, stack, test, atomic, iters, log)
                    if r:
                        rows.append(r)
    return rows


def median(rows, stack, test, atomic, col):
    v = [r[col] for r in rows if (r["stack"], r["test"], r["atomic"]) == (stack, test, atomic)
         and r.get(col) not in (None, "")]
    return statistics.median(float(x) for x in v) if v else None


def table(rows, took, rounds, iters, load):
    """atomic.md: medians, xv6 against rxe."""
    lines = ["# Remote atomics: xv6 <-> xv6 beside rxe <-> rxe", "",
             f"`make bench-atomic` (bench/rdma/atomic_bench.py), {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
             f"{took:.0f} s, host load average {load[0]:.1f} at the start and {load[1]:.1f} at the end; one lossless linkemu link, path MTU 1024, two xv6 and two Linux guests up "
             f"throughout; -n {iters}, the median of {rounds} rounds (every run in atomic.csv). "
             "xv6: rdma_lat / rdma_bw -t atomic -A X; rxe: perftest's ib_atomic_lat / ib_atomic_bw -A X. "
             "Latency is one atomic's whole round trip (t_typical is the median); rate is MsgRate with "
             "as many atomics in flight as the initiator depth allows. QEMU TCG on a shared 2-core "
             "host: compare the two stacks within this run, not with hardware.", "",
             "| test | atomic | xv6 | rxe | xv6 / rxe |", "|---|---|---|---|---|"]
    missing = []
    for name, _, _, _, cols in TESTS:
        for atomic in ATOMICS:
            for col in cols:
                x, r = median(rows, "xv6", name, atomic, col), median(rows, "rxe", name, atomic, col)
                if x is None or r is None:
                    missing.append(f"{name} {atomic} {col}: " + ("xv6 " if x is None else "") +
                                   ("rxe" if r is None else "") + " had no run")
                ratio = f"{x / r:.2f}" if x is not None and r else "-"
                fmt = (lambda v: "-" if v is None else f"{v:.4f}" if col == "mpps" else f"{v:.2f}")
                lines.append(f"| {name} ({col}) | {atomic} | {fmt(x)} | {fmt(r)} | {ratio} |")
    if missing:
        lines += ["", "Cells without a run: " + "; ".join(missing) + " (see atomic.log)."]
    return "\n".join(lines) + "\n", missing


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "results"))
    ap.add_argument("--rounds", type=int, default=ROUNDS)
    ap.add_argument("--iters", type=int, default=ITERS)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    t0 = time.monotonic()
    load0 = os.getloadavg()[0]
    log = []
    with Testbed(2, linux=2, name="atomic-bench", linux_mtu=1500) as tb:
        tb.boot(timeout=240)
        rows = run_all(tb, args.rounds, args.iters, log)
        tb.halt()
    took = time.monotonic() - t0
    with open(os.path.join(args.out, "atomic.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        for r in rows:
            w.writerow(r)
    text, missing = table(rows, took, args.rounds, args.iters, (load0, os.getloadavg()[0]))
    with open(os.path.join(args.out, "atomic.md"), "w") as f:
        f.write(text)
    with open(os.path.join(args.out, "atomic.log"), "w") as f:
        f.write("\n".join(log))
    print(text)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
