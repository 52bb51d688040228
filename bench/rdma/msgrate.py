#!/usr/bin/env python3
"""msgrate.py: make bench-msgrate. Small-message rate: xv6's rdma_bw beside
Linux rxe's perftest and beside the small-frame RoCE ceiling, in one run.

One lossless linkemu link (path MTU 1024 on a 1500-byte link, rxe_compare's
second bed) carries two xv6 guests (0 and 1) and two Linux Soft-RoCE guests
(2 and 3). For each op (WRITE, SEND, READ) and size (2 B .. 4 KiB) three
tools move the same number of messages, one after the other:

  rxe    perftest's ib_write_bw / ib_send_bw / ib_read_bw, guest 2 -> 3
         (its client busy-polls: perftest has no event mode for these)
  poll   xv6's rdma_bw, busy-polling its CQ, guest 1 -> guest 0
  event  xv6's rdma_bw -e, sleeping on its completion channel

and the number kept is perftest's MsgRate[Mpps] column (messages over the
run's elapsed time), shown here in thousands of messages per second.
The order of the tools is reversed every other round; medians per cell.

The ceiling, measured in the same xv6 guests at the start of every round:
the most the receiver takes in of a kernel blast (nettest kblast, system
call netblast) of RoCEv2 frames carrying a 64-byte payload to
NET_ROCE_SINK_PORT (link_ceiling.py's method "roce"), open-loop or paced
(link_ceiling.best_run): the sender stamps each copy's ICRC, the receiver verifies
it and copies the payload, no transport. Frame = Eth 14 + IPv4 20 + UDP 8
+ BTH 12 + 64 + ICRC 4 = 122 bytes. Its frames per second bound the
messages per second of any one-frame message of up to 64 bytes; a cell of
2..64 B whose rate is above the highest ceiling round is flagged: it beat
what the guests can carry, so the ceiling is not a bound.

The xv6 guests have one vCPU each, as the Linux guests (CPUS below says
why); --cpus N gives them N.

Outputs (bench/results/): msgrate.csv (every run), msgrate.md (tables,
ratios xv6/rxe and xv6/ceiling from this run), msgrate.png.

Usage: python3 bench/rdma/msgrate.py [--out DIR] [--rounds N] [--iters N]
       [--sizes 2 8 ...] [--ops write send read] [--seconds S] [--quick] [--cpus N]
The default is three rounds of 20000 messages a run (1000 were 25-90 ms,
too short for a rate; rxe's SEND run takes about 13 s), and the tables and
goals take the median of the rounds: one round alone is one sample, and
64 B WRITE polling ranged 78.6-101k messages a second between runs of one
build. --full runs every power of two from 2 B to 4 KiB.
"""
import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "bench", "net"))
sys.path.insert(0, os.path.join(REPO, "tests", "net"))
sys.path.insert(0, os.path.join(REPO, "tests", "harness"))
from guest import progress  # noqa: E402
import link_ceiling  # noqa: E402
import rdma_sweep  # noqa: E402
import rxe_compare  # noqa: E402

BED = (1024, 1500)                 # (path MTU, the Linux guests' link MTU)
# vCPUs of each xv6 guest: one, as each rxe guest has. On the 2-core host a
# second vCPU per guest cost small messages more than it gave: 3 rounds of
# 64 B, 1 against 2 vCPUs (bench/results/msgrate-cpus.md): WRITE polling
# 59.5k against 39.5k messages/s, READ polling 15.2k against 7.5k, the
# ceiling 150k against 146k frames/s. --cpus 2 measures the other way.
CPUS = 1
# WRs outstanding (rdma_bw -d, perftest's -t/--tx-depth) in every run, xv6's
# and rxe's: 256. Small messages need the window: 64 B WRITE, one vCPU per
# guest, polling, ran 48k messages/s at -d 64 (rdma_bw's default), 73k at
# 128 (perftest's default) and 82k at 256 in one bed; 448 gave no more.
DEPTH = 256
SIZES = (2, 8, 64, 256, 1024, 4096)
ROUNDS = 3                         # the default; see the top of the file
FULL_SIZES = tuple(1 << k for k in range(1, 13))
OPS = {"write": "ib_write_bw", "send": "ib_send_bw", "read": "ib_read_bw"}
TOOLS = ("rxe", "poll", "event")
LABEL = {"rxe": "Linux rxe (perftest, polling)", "poll": "xv6 rdma_bw, polling",
         "event": "xv6 rdma_bw -e, sleeping", "ceiling": "RoCE ceiling, 64 B payload"}
CEIL_PAYLOAD = 64
ROCE_BODY = 12 + 4                 # BTH + ICRC around the payload
CEIL_FRAME = link_ceiling.HEADERS + ROCE_BODY + CEIL_PAYLOAD   # 122 bytes


def ceiling_round(tb, seconds, log):
    """The small-frame RoCE ceiling guest 1 -> guest 0 (the direction of the
    RDMA data): the most frames per second the receiver took in, open-loop
    or paced (link_ceiling.best_run)."""
    r = link_ceiling.best_run(tb, 1, 0, CEIL_FRAME, seconds, "roce")
    how = f"paced to {r['paced_fps']}/s" if r["paced_fps"] else "open-loop"
    log.append(f"### RoCE ceiling {CEIL_FRAME} B frames ({CEIL_PAYLOAD} B payload): {r['recv_fps']} frames/s "
               f"received ({how}; open-loop {r['open_loop_fps']}), {r['sent_fps']} sent, "
               f"{r['interrupts_per_frame']} irq/frame\n")
    progress("msgrate", f"RoCE ceiling, {CEIL_PAYLOAD} B payload: {r['recv_fps']} frames/s ({how}; "
             f"open-loop {r['open_loop_fps']})")
    return r["recv_fps"]


def one_run(tb, tool, op, size, iters, log):
    """Messages per second of one run of tool, or None."""
    if tool == "rxe":
        r = rxe_compare.rxe_bw(tb, OPS[op], size, iters, log, BED[0], depth=DEPTH)
    else:
        r = rdma_sweep.bw(tb, op, size, iters, False, log, depth=DEPTH, poll=tool == "poll")
    return round(r["mpps"] * 1e6) if r and r.get("mpps") else None


def run_all(tb, args, log):
    rows, ceil = [], []
    for rnd in range(args.rounds):
        ceil.append(ceiling_round(tb, args.seconds, log))
        order = TOOLS if rnd % 2 == 0 else tuple(reversed(TOOLS))
        for op in args.ops:
            for size in args.sizes:
                for tool in order:
                    t0 = time.monotonic()
                    rate = one_run(tb, tool, op, size, args.iters, log)
                    took = time.monotonic() - t0
                    progress("msgrate", f"round {rnd + 1} {op} {size} B {tool}: {rate} msg/s, {took:.0f} s")
                    if rate:
                        rows.append({"round": rnd + 1, "op": op, "size": size, "tool": tool, "messages": args.iters,
                                     "msgs_per_s": rate, "seconds": round(took, 1)})
    return rows, ceil


def medians(rows):
    """{(op, size, tool): median messages per second}."""
    out = {}
    for r in rows:
        out.setdefault((r["op"], r["size"], r["tool"]), []).append(r["msgs_per_s"])
    return {k: statistics.median(v) for k, v in out.items()}


def ratio(a, b):
    return f"{a / b:.2f}" if a and b else ""


def over_ceiling(size, rate, ceil):
    """A rate the ceiling should bound (a message of at most the ceiling's
    payload) that is above every ceiling round: the flag's text, or ""."""
    return "**over the ceiling**" if rate and ceil and size <= CEIL_PAYLOAD and rate > max(ceil) else ""


def kilo(v):
    return f"{v / 1000:.1f}" if v else ""


def summary(rows, ceil, args, took, load):
    meds = medians(rows)
    c = statistics.median(ceil) if ceil else None
    flags = [(op, size, t) for op in args.ops for size in args.sizes for t in ("poll", "event")
             if over_ceiling(size, meds.get((op, size, t)), ceil)]
    L = ["# Message rate (make bench-msgrate)", "",
         f"Written by bench/rdma/msgrate.py, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: "
         f"{args.rounds} round(s), {args.iters} messages a run, {took / 60:.1f} minutes, host load average "
         f"{load:.2f}. Two xv6 guests ({args.cpus} vCPU{'s' if args.cpus > 1 else ''}) and two Linux 6.1 Soft-RoCE guests (1 vCPU) on one lossless "
         f"linkemu link, path MTU {BED[0]} ({BED[1]}-byte link); QEMU TCG on a 2-core host. Rates are perftest's "
         "MsgRate column (messages / elapsed time) in thousands of messages per second, medians of the "
         "rounds (every run in msgrate.csv). rxe = ib_write_bw / ib_send_bw / ib_read_bw (busy-polling); "
         f"poll / event = xv6's rdma_bw busy-polling / sleeping on its completion channel (-e); both sides keep "
         f"{DEPTH} WRs outstanding (rdma_bw -d, perftest -t).", "",
         f"Ceiling: the most the receiver took in of a kernel blast of {CEIL_FRAME}-byte RoCEv2 frames "
         f"({CEIL_PAYLOAD} B payload, ICRC stamped by the sender and verified by the receiver, payload copied; "
         "open-loop or paced, link_ceiling.best_run) in the same xv6 guests, "
         f"guest 1 -> 0: median {kilo(c)} k frames/s, rounds "
         f"{' '.join(kilo(x) for x in ceil)}. It bounds one-frame messages of up to {CEIL_PAYLOAD} B; "
         "the ratio to it is shown for larger sizes too, for scale.", ""]
    if flags:
        L += ["**Flagged**: above every ceiling round (the ceiling did not bound them): "
              + ", ".join(f"{op} {size} B {t}" for op, size, t in flags) + ".", ""]
    for op in args.ops:
        L += [f"## {op.upper()}", "",
              "| size B | rxe k/s | xv6 poll k/s | xv6 event k/s | poll / rxe | event / rxe | poll / ceiling | "
              "event / ceiling | flag |",
              "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
        for size in args.sizes:
            g = {t: meds.get((op, size, t)) for t in TOOLS}
            flag = " ".join(f"{t} {over_ceiling(size, g[t], ceil)}" for t in ("poll", "event")
                            if over_ceiling(size, g[t], ceil))
            L.append(f"| {size} | {kilo(g['rxe'])} | {kilo(g['poll'])} | {kilo(g['event'])} | "
                     f"{ratio(g['poll'], g['rxe'])} | {ratio(g['event'], g['rxe'])} | {ratio(g['poll'], c)} | "
                     f"{ratio(g['event'], c)} | {flag} |")
        L.append("")
    L += ["Plot: msgrate.png. The tools' own tables: msgrate.txt."]
    return "\n".join(L) + "\n"


def plot(out, rows, ceil, args):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        progress("msgrate", "no matplotlib: no plot")
        return
    meds = medians(rows)
    fig, axes = plt.subplots(1, len(args.ops), figsize=(4.2 * len(args.ops), 4.2), squeeze=False)
    style = {"rxe": ("#888888", "s--"), "poll": ("#d9822b", "o-"), "event": ("#4a7ebb", "^-")}
    for ax, op in zip(axes[0], args.ops):
        for t in TOOLS:
            xs = [s for s in args.sizes if meds.get((op, s, t))]
            ax.plot(xs, [meds[(op, s, t)] / 1000 for s in xs], style[t][1], color=style[t][0], label=LABEL[t])
        if ceil:
            ax.axhspan(min(ceil) / 1000, max(ceil) / 1000, color="#55aa55", alpha=0.2)
            ax.axhline(statistics.median(ceil) / 1000, color="#55aa55", label=LABEL["ceiling"])
        ax.set_xscale("log", base=2)
        ax.set_xlabel("message bytes")
        ax.set_ylabel("thousand messages/s")
        ax.set_ylim(bottom=0)
        ax.set_title(op.upper())
        ax.grid(alpha=0.3)
    rxe_compare.save_plot(fig, axes[0][0], f"Message rate, path MTU {BED[0]}, lossless (same run, medians)",
                          os.path.join(out, "msgrate.png"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "results"))
    ap.add_argument("--rounds", type=int, default=ROUNDS)
    ap.add_argument("--iters", type=int, default=20000, help="messages a run, every tool")
    ap.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    ap.add_argument("--ops", nargs="+", choices=list(OPS), default=list(OPS))
    ap.add_argument("--seconds", type=int, default=3, help="each ceiling burst")
    ap.add_argument("--full", action="store_true", help="every power of 2 to 4 KiB")
    ap.add_argument("--quick", action="store_true", help="64 B WRITE only, one round of 500 messages (a check of the bench)")
    ap.add_argument("--cpus", type=int, default=CPUS, help=f"vCPUs of each xv6 guest (default {CPUS}, as the Linux guests)")
    args = ap.parse_args()
    if args.full:
        args.sizes = list(FULL_SIZES)
    if args.quick:
        args.ops, args.sizes, args.iters, args.rounds = ["write"], [64], 500, 1
    t0 = time.monotonic()
    (rows, ceil), log = rxe_compare.on_bed("msgrate", lambda tb, lg: run_all(tb, args, lg), bed=BED,
                                        cpus=args.cpus)
    if not rows:
        progress("msgrate", "no run produced a result")
        return 1
    ceil_rows = [{"round": i + 1, "op": "ceiling", "size": CEIL_PAYLOAD, "tool": "roce-blast", "messages": "",
                  "msgs_per_s": x, "seconds": args.seconds} for i, x in enumerate(ceil)]
    rxe_compare.write_runs(args.out, "msgrate", rows + ceil_rows, log, "msgrate.py")
    plot(args.out, rows, ceil, args)
    text = summary(rows, ceil, args, time.monotonic() - t0, os.getloadavg()[0])
    with open(os.path.join(args.out, "msgrate.md"), "w") as f:
        f.write(text)
    print(text)
    expected = args.rounds * len(args.ops) * len(args.sizes) * len(TOOLS)
    progress("msgrate", f"{len(rows)} of {expected} runs gave a result")
    return 0 if len(rows) == expected else 1


if __name__ == "__main__":
    sys.exit(main())
