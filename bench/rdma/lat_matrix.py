#!/usr/bin/env python3
"""lat_matrix.py: make bench-lat. The latency matrix of xv6-rdma beside
Linux Soft-RoCE (rxe): WRITE, SEND, READ x 2 B, 256 B, 4 KiB x polling and
sleeping, on one link in one run.

The guests are rxe_compare.py's: one linkemu link, no loss, two xv6 guests
(0 and 1, path MTU 4096) and two Linux 6.1 Soft-RoCE guests (2 and 3). In
each cell two tools run in turn:

  xv6   rdma_lat -t write|send|read -s SIZE -n N [-e] --stats, guest 1 ->
        guest 0; the server runs `rdma_lat --stats` too, so every run has
        both sides' retransmissions, timeouts, RNR NAKs and duplicates
  rxe   perftest ib_write_lat / ib_send_lat / ib_read_lat -s SIZE -n N -F
        [-e], guest 2 -> guest 3; its requester's retransmission timeouts
        (completer_retry_err) from rxe0's hw_counters

The xv6 guests have one hart (--xv6-cpus), as the Linux guests have one
vCPU: like for like, and a second hart costs a polling guest more than it
gives on a 2-core host (bench/results/latency-notes.md).

Sleeping: xv6's -e sleeps on the completion channel (and its WRITE side in
ibvx_wait_write). perftest has -e/--events only where its --help lists it
(4.5: ib_send_lat and ib_read_lat, not ib_write_lat); where it has none the
rxe sleeping cell is its polling run of the same round, marked "poll" in
the tables.

ROUNDS rounds, the tools' order reversed every other round, the median of
t_typical per cell and the ratio xv6 / rxe of the medians. The goal a cell
is checked against: xv6's t_typical <= 0.8 x rxe's, and no RNR NAK, RNR
wait or timeout on either xv6 side.

Outputs (bench/results/): lat-matrix.csv (every run), lat-matrix.md (the
tables), lat-matrix.png and the section "Latency matrix" of
rdma-summary.md (replaced in place).

Usage: python3 bench/rdma/lat_matrix.py [--out DIR] [--rounds N] [--iters N] [--quick]
                                        [--only OP ...] [--xv6-args ARGS] [--xv6-cpus N] [--plot-only]
"""
import argparse
import csv
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "net"))
sys.path.insert(0, os.path.join(REPO, "tests", "harness"))
from guest import GuestError, progress  # noqa: E402
import perftable  # noqa: E402
import rdma_sweep  # noqa: E402
import rxe_compare  # noqa: E402

# (name, rdma_lat -t, perftest program)
OPS = (("WRITE", "write", "ib_write_lat"), ("SEND", "send", "ib_send_lat"), ("READ", "read", "ib_read_lat"))
SIZES = (2, 256, 4096)
MODES = ("poll", "sleep")
TOOLS = ("xv6", "rxe")
GOAL = 0.8                     # xv6 t_typical <= GOAL x rxe's
SURPRISES = ("tx_rnr_naks", "rx_rnr_naks", "rnr_timeouts", "timeouts")
SECTION = "## Latency matrix"
SECTION_END = "<!-- end of the latency matrix (bench/rdma/lat_matrix.py) -->"
RXE_TIMEOUT_S, RXE_TIMEOUT_PER_ITER_S = 60, 0.05    # a perftest run's deadline (normal: 1-12 s)
COLUMNS = ("t_min_us", "t_typical_us", "t_avg_us", "p99_us", "p999_us")


def xv6_run(tb, op, size, iters, sleep, extra, log):
    """One rdma_lat run, guest 1 -> guest 0; the row and both sides' counters."""
    cmd, out, server = rdma_sweep.lat_pair(tb, f"-t {op} -s {size} -n {iters}{' -e' if sleep else ''} --stats "
                                           f"{extra}", f"--stats {extra}")
    log.append(f"### xv6: {cmd}\n{out.strip()}\nserver: {server.strip()}\n")
    row = perftable.lat_row(out)
    if not row:
        progress("lat", f"{cmd}: no result row")
        return None
    c, s = perftable.qp_stats(out) or {}, perftable.qp_stats(server) or {}
    for side, q in (("cli", c), ("srv", s)):
        for k in ("retransmits", "timeouts", "tx_rnr_naks", "rx_rnr_naks", "rnr_timeouts", "dup"):
            row[f"{side}_{k}"] = q.get(k)
    row["surprises"] = sum(q.get(k) or 0 for q in (c, s) for k in SURPRISES) if c and s else None
    return row


def rxe_events(tb):
    """{perftest program: True if its --help lists -e/--events}."""
    lx = tb.linux[0]
    return {prog: "--events" in lx.run(f"{prog} --help 2>&1 | grep -e --events", timeout=60)
            for _, _, prog in OPS}


def rxe_run(tb, prog, size, iters, sleep, log):
    """One perftest latency run, guest 2 -> guest 3."""
    cli, srv = tb.linux
    flags = f"-s {size} -n {iters} -F{' -e' if sleep else ''}"
    if not srv.start_server(f"{prog} -d rxe0 -x {srv.gid_index} {flags}"):
        progress("lat", f"{prog}: the server never listened: {srv.server_output(30).strip()[-200:]}")
        return None
    before = rxe_compare.rxe_counters(cli)
    cmd = f"{prog} -d rxe0 -x {cli.gid_index} {flags} {tb.ip(3)}"
    try:
        out = cli.run(cmd, timeout=RXE_TIMEOUT_S + iters * RXE_TIMEOUT_PER_ITER_S)
    except GuestError:
        # perftest with -e on rxe can wait forever for a completion event
        # (seen once in ib_send_lat -e): both ends are killed, the cell
        # loses this run, the next run starts clean.
        progress("lat", f"{cmd}: no result in time; killing both ends")
        log.append(f"### rxe: {cmd}\n(no result in time: killed)\n")
        cli.interrupt()
        cli.expect(cli.prompt, timeout=30)
        srv.run(f"busybox killall -9 {prog} 2>/dev/null; wait", timeout=60)
        return None
    srv.server_output(300)
    after = rxe_compare.rxe_counters(cli)
    log.append(f"### rxe: {cmd}\n{out.strip()}\n")
    row = perftable.lat_row(out)
    if not row:
        progress("lat", f"{cmd}: no result row")
        return None
    if "completer_retry_err" in before and "completer_retry_err" in after:
        row["cli_retransmits"] = after["completer_retry_err"] - before["completer_retry_err"]
    return row


def cells(only):
    for name, op, prog in OPS:
        if only and name not in only:
            continue
        for size in SIZES:
            for mode in MODES:
                yield name, op, prog, size, mode


def run_all(tb, args, log):
    events = rxe_events(tb)
    progress("lat", "perftest's event mode: " + ", ".join(f"{p} {'yes' if e else 'no'}" for p, e in events.items()))
    rows = []
    for rnd in range(args.rounds):
        order = TOOLS if rnd % 2 == 0 else tuple(reversed(TOOLS))
        rxe_poll = {}              # (prog, size): this round's rxe polling row
        for name, op, prog, size, mode in cells(args.only):
            sleep = mode == "sleep"
            for tool in order:
                t0 = time.monotonic()
                load = os.getloadavg()[0]
                rxe_mode = mode if tool == "rxe" and (not sleep or events[prog]) else "poll"
                if tool == "xv6":
                    r = xv6_run(tb, op, size, args.iters, sleep, args.xv6_args, log)
                elif sleep and not events[prog] and (prog, size) in rxe_poll:
                    r = dict(rxe_poll[(prog, size)])     # the same round's polling run
                else:
                    r = rxe_run(tb, prog, size, args.iters, sleep and events[prog], log)
                    if r and not sleep:
                        rxe_poll[(prog, size)] = r
                took = time.monotonic() - t0
                if not r:
                    continue
                rows.append({"round": rnd + 1, "op": name, "size": size, "mode": mode, "tool": tool,
                             "ran_as": mode if tool == "xv6" else rxe_mode, "iters": args.iters,
                             "seconds": round(took, 1), "load1": round(load, 2),
                             **{k: r.get(k) for k in COLUMNS},
                             **{k: r.get(k) for k in XV6_COUNTERS}, "surprises": r.get("surprises")})
                progress("lat", f"round {rnd + 1} {name} {size} B {mode} {tool}: t_typical "
                         f"{r['t_typical_us']} us, retx {r.get('cli_retransmits')}/{r.get('srv_retransmits')} "
                         f"tmo {r.get('cli_timeouts')}/{r.get('srv_timeouts')} rnr "
                         f"{r.get('cli_tx_rnr_naks')}/{r.get('srv_tx_rnr_naks')}, load {load:.1f}, {took:.0f} s")
    return rows


XV6_COUNTERS = tuple(f"{side}_{k}" for side in ("cli", "srv")
                     for k in ("retransmits", "timeouts", "tx_rnr_naks", "rx_rnr_naks", "rnr_timeouts", "dup"))


def median(vals):
    vals = [v for v in vals if v is not None]
    return round(statistics.median(vals), 2) if vals else None


def table(rows, counters=True):
    """{(op, size, mode): {tool: {medians, and with counters the sums}}}."""
    out = {}
    for r in rows:
        out.setdefault((r["op"], r["size"], r["mode"]), {}).setdefault(r["tool"], []).append(r)
    res = {}
    for key, tools in out.items():
        res[key] = {}
        for tool, rs in tools.items():
            res[key][tool] = {"t_typical_us": median(r["t_typical_us"] for r in rs),
                              "all": [r["t_typical_us"] for r in rs],
                              "ran_as": rs[0]["ran_as"], "runs": len(rs),
                              **{k: sum(r[k] for r in rs if r.get(k) is not None)
                                 for k in (XV6_COUNTERS if counters else ())}}
    return res


def ratio(a, b):
    return round(a / b, 2) if a is not None and b else None


def goal_met(cell):
    x, r = cell.get("xv6"), cell.get("rxe")
    if not x or not r:
        return None
    q = ratio(x["t_typical_us"], r["t_typical_us"])
    clean = all(x[f"{s}_{k}"] == 0 for s in ("cli", "srv") for k in SURPRISES)
    return q is not None and q <= GOAL and clean


def matrix_md(rows, res, args, took, load):
    loads = [r["load1"] for r in rows]
    L = [SECTION, "",
         f"Command: `make bench-lat` (bench/rdma/lat_matrix.py{' ' + ' '.join(args.argv) if args.argv else ''}), "
         f"{args.rounds} rounds of {args.iters} iterations, {took / 60:.1f} minutes, finished "
         f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, host load average {min(loads):.1f} to "
         f"{max(loads):.1f} during the runs ({load:.2f} at the end; 2 host cores). Two xv6 guests "
         f"({args.xv6_cpus} hart{'s' if args.xv6_cpus > 1 else ''}) and two Linux 6.1 Soft-RoCE guests "
         "(1 vCPU), QEMU TCG, on one linkemu link without loss, "
         "path MTU 4096. xv6 = rdma_lat (--stats on both sides), rxe = perftest ib_write_lat / ib_send_lat / "
         "ib_read_lat; the tools' order reverses every round. t_typical is the tools' median latency (half "
         "the round trip for WRITE and SEND, the whole READ), in microseconds, median of the rounds; "
         "\"poll*\" marks an rxe sleeping cell run polling (perftest has no event mode for that test). "
         f"Goal: xv6 <= {GOAL} x rxe with no RNR NAK, RNR wait or timeout on either xv6 side. "
         "Counters are summed over the rounds, client / server.", "",
         "| op | size | mode | xv6 t_typical | rxe t_typical | xv6 / rxe | xv6 retx | xv6 tmo | "
         "xv6 RNR NAKs tx | xv6 dup | rxe retries | goal |",
         "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for name, op, prog, size, mode in cells(args.only):
        cell = res.get((name, size, mode), {})
        x, r = cell.get("xv6"), cell.get("rxe")
        met = goal_met(cell)

        def pair(t, k):
            return f"{t[f'cli_{k}']} / {t[f'srv_{k}']}" if t else ""
        rmode = "" if not r or r["ran_as"] == mode else " (poll*)"
        L.append(f"| {name} | {size} | {mode} | {x['t_typical_us'] if x else ''} | "
                 f"{(str(r['t_typical_us']) + rmode) if r else ''} | "
                 f"{ratio(x and x['t_typical_us'], r and r['t_typical_us'])} | {pair(x, 'retransmits')} | "
                 f"{pair(x, 'timeouts')} | {pair(x, 'tx_rnr_naks')} | {pair(x, 'dup')} | "
                 f"{r['cli_retransmits'] if r else ''} | {'' if met is None else ('met' if met else 'missed')} |")
    L += ["", "Every run's t_typical (us), in round order:", "",
          "| op | size | mode | xv6 | rxe |", "| --- | ---: | --- | --- | --- |"]
    for name, op, prog, size, mode in cells(args.only):
        cell = res.get((name, size, mode), {})
        L.append(f"| {name} | {size} | {mode} | " + " | ".join(
            " ".join(str(v) for v in cell[t]["all"]) if t in cell else "" for t in TOOLS) + " |")
    L += ["", "Each run in lat-matrix.csv, the tools' tables in lat-matrix.txt; plot: lat-matrix.png.",
          SECTION_END]
    return "\n".join(L) + "\n"


def plot(out, res, only):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        progress("lat", "no matplotlib: no plot")
        return
    ops = [o for o in OPS if not only or o[0] in only]
    fig, axes = plt.subplots(1, len(ops), figsize=(4 * len(ops) + 1, 4.2), squeeze=False)
    series = (("xv6", "poll", "#4a7ebb", "xv6 polling"), ("rxe", "poll", "#888888", "rxe polling"),
              ("xv6", "sleep", "#9cc1ea", "xv6 sleeping"), ("rxe", "sleep", "#cccccc", "rxe sleeping"))
    for ax, (name, _, _) in zip(axes[0], ops):
        width = 0.2
        for j, (tool, mode, color, label) in enumerate(series):
            vals = [(res.get((name, s, mode), {}).get(tool) or {}).get("t_typical_us") or 0 for s in SIZES]
            ax.bar([i + (j - 1.5) * width for i in range(len(SIZES))], vals, width, color=color, label=label)
        ax.set_xticks(range(len(SIZES)))
        ax.set_xticklabels([f"{s} B" for s in SIZES])
        ax.set_ylabel("t_typical, us (median of rounds)")
        ax.set_title(name)
        ax.grid(axis="y", alpha=0.3)
    rxe_compare.save_plot(fig, axes[0][0], "Latency: xv6-rdma rdma_lat vs Linux rxe perftest, one lossless "
                          "link, same run", os.path.join(out, "lat-matrix.png"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "results"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=1000, help="iterations per run (perftest's default)")
    ap.add_argument("--quick", action="store_true", help="one round of 200 iterations, to check the script")
    ap.add_argument("--only", nargs="*", choices=[o[0] for o in OPS], help="these operations only")
    ap.add_argument("--xv6-args", default="", help="more rdma_lat options, both sides")
    ap.add_argument("--xv6-cpus", type=int, default=1, help="the xv6 guests' harts (the rxe guests have 1)")
    ap.add_argument("--plot-only", action="store_true", help="redraw the PNG from lat-matrix.csv in --out")
    args = ap.parse_args()
    args.argv = sys.argv[1:]
    if args.quick:
        args.rounds, args.iters = 1, 200
    if args.plot_only:
        with open(os.path.join(args.out, "lat-matrix.csv")) as f:
            rows = [dict(r, size=int(r["size"]), t_typical_us=float(r["t_typical_us"]))
                    for r in csv.DictReader(f)]
        plot(args.out, table(rows, counters=False), args.only)
        return 0
    t0 = time.monotonic()
    rows, log = rxe_compare.on_bed("lat-mx", lambda tb, log: run_all(tb, args, log), args.xv6_cpus)
    if not rows:
        progress("lat", "no run produced a result")
        return 1
    os.makedirs(args.out, exist_ok=True)
    rdma_sweep.write_csv(os.path.join(args.out, "lat-matrix.csv"), rows)
    with open(os.path.join(args.out, "lat-matrix.txt"), "w") as f:
        f.write("# rdma_lat and perftest tables from bench/rdma/lat_matrix.py (usec)\n\n" + "\n".join(log))
    res = table(rows)
    plot(args.out, res, args.only)
    section = matrix_md(rows, res, args, time.monotonic() - t0, os.getloadavg()[0])
    with open(os.path.join(args.out, "lat-matrix.md"), "w") as f:
        f.write("# " + section[3:])
    rxe_compare.write_summary(args.out, section, SECTION, SECTION_END)
    print(section)
    expected = args.rounds * len(list(cells(args.only))) * len(TOOLS)
    empty = [c for c in cells(args.only) if len(res.get((c[0], c[3], c[4]), {})) < len(TOOLS)]
    progress("lat", f"{len(rows)} of {expected} runs gave a result; {len(empty)} cells without both tools")
    return 0 if not empty else 1


if __name__ == "__main__":
    sys.exit(main())
