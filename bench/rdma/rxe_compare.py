#!/usr/bin/env python3
"""rxe_compare.py: make bench-rxe. xv6-rdma against Linux Soft-RoCE (rxe),
side by side on one link in one run.

One linkemu link carries four guests: two xv6 guests (0 and 1) and two Linux
Soft-RoCE guests (2 and 3, tests/harness/linux_guest.py). The cells are
64 KiB RDMA WRITE and 1 MiB RDMA READ at 0, 1 and 5 % random loss on every
port; in each cell three tools run in turn on the same link:

  rxe     perftest's ib_write_bw / ib_read_bw, guest 2 -> guest 3
  gbn     xv6's rdma_bw, go-back-N, guest 1 -> guest 0
  sr      xv6's rdma_bw with --sr (selective repeat), guest 1 -> guest 0

and in the READ cell a fourth run, xv6 reading from rxe:

  gbn-from-rxe  xv6's rdma_bw -t read (go-back-N: rxe has no selective
                repeat), guest 1 -> the project's Linux peer `xrpeer
                bw-server` on guest 3: rxe is the responder and sends its
                READ responses as fast as it likes; the xv6 requester's
                frames dropped (its QP's and its NIC's) show how it copes.

Fair by construction as far as this host allows:
  - the same link, the same loss (set through linkemu's control socket
    before each cell), the same host load (all four guests are up during
    every run; the idle pair costs both sides alike);
  - the same work: a fixed count of messages per cell, the same count for
    all three tools (not perftest's fixed-time -D mode), so each moves the
    same bytes; the count shrinks with the loss so rxe's slow cells end;
  - the waiting differs, as each tool allows: xv6's rdma_bw sleeps on its
    completion channel (-e), the mode the project's benches use because two
    guests that busy-poll on a 2-core host starve QEMU and linkemu;
    perftest 4.5 has no event mode for WRITE/READ bandwidth, so rxe's
    client busy-polls (its Linux guest has one vCPU, which the polling
    shares with rxe's own kernel work); the servers only wait;
  - the same units: both print perftest's "BW average[MB/sec]" with
    MB = 2^20 bytes; the ratio xv6/rxe is unit-free;
  - ROUNDS rounds, the tools' order reversed every other round, the median
    per cell; every run's value is kept in the CSV.
  - rxe's path MTU: perftest picks the port's active MTU from its
    netdev's MTU, so xv6 runs with the same path MTU (boot argument
    rdma_mtu) and every perftest run must report it.

Two beds, one after the other, each with fresh guests (BEDS): path MTU
4096 on a 9000-byte jumbo link, and path MTU 1024 on a 1500-byte link,
the MTU of every standard Ethernet, where each message is four times as
many frames and each loss costs rxe four times as often.

Outputs (bench/results/): rxe-compare.csv, rxe-compare.png, and the section
"xv6-rdma against Linux rxe" of rdma-summary.md (replaced in place, so
make bench-rdma's part of the file is kept when this runs after it).

Usage: python3 bench/rdma/rxe_compare.py [--out DIR] [--rounds N] [--seed N] [--quick]
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
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "net"))
sys.path.insert(0, os.path.join(REPO, "tests", "harness"))
from launch import Testbed  # noqa: E402
from guest import progress  # noqa: E402
import rdma_sweep  # noqa: E402
import perftable  # noqa: E402

MIB = 1 << 20
LOSSES = (0, 1, 5)
# (RoCE path MTU, the Linux guests' link MTU that makes rxe's port pick it)
BEDS = ((4096, 9000), (1024, 1500))
# (name, xv6 rdma_bw -t, perftest program, size, messages per loss level)
CELLS = (
    ("WRITE 64 KiB", "write", "ib_write_bw", 65536, {0: 400, 1: 160, 5: 40}),
    ("READ 1 MiB", "read", "ib_read_bw", MIB, {0: 24, 1: 12, 5: 6}),
)
TOOLS = ("rxe", "gbn", "sr")
FROM_RXE = "gbn-from-rxe"          # xv6 READs from an rxe responder (the READ cell only)
RXE_COUNTERS = ("sent_pkts", "rcvd_pkts", "completer_retry_err", "rcvd_seq_err", "duplicate_request",
                "out_of_seq_request", "retry_exceeded_err")
SECTION = "## xv6-rdma against Linux rxe"
SECTION_END = "<!-- end of the rxe comparison (bench/rdma/rxe_compare.py) -->"


def rxe_counters(lx):
    """rxe0's port counters now (the hw_counters files), as a dict."""
    out = lx.run("cd /sys/class/infiniband/rxe0/ports/1/hw_counters && grep . *", timeout=60)
    vals = {}
    for line in out.splitlines():
        name, _, v = line.strip().partition(":")
        if name in RXE_COUNTERS and v.strip().isdigit():
            vals[name] = int(v)
    return vals


def rxe_bw(tb, prog, size, iters, log, mtu, depth=None):
    """One perftest run, server on guest 3, client on guest 2, which must
    report path MTU mtu; depth: its -t (TX depth), else perftest's 128."""
    cli, srv = tb.linux
    # perftest 4.5's WRITE and READ bandwidth tests have no event mode
    # (-e: "Events feature not available on WRITE verb"): rxe's client
    # busy-polls its CQ, the server only waits (one-sided operations).
    flags = f"-s {size} -n {iters} -F{f' -t {depth}' if depth else ''}"
    if not srv.start_server(f"{prog} -d rxe0 -x {srv.gid_index} {flags}"):
        progress("rxe", f"{prog}: the server never listened: {srv.server_output(30).strip()[-200:]}")
        return None
    before = rxe_counters(cli)
    cmd = f"{prog} -d rxe0 -x {cli.gid_index} {flags} {tb.ip(3)}"
    out = cli.run(cmd, timeout=1800)
    srv.server_output(300)
    after = rxe_counters(cli)
    log.append(f"### rxe: {cmd}\n{out.strip()}\n")
    row = perftable.bw_row(out)
    if not row:
        progress("rxe", f"{prog}: no result row")
        return None
    m = re.search(r"^\s*Mtu\s*:\s*(\d+)\[B\]", out, re.M)
    if not m or int(m.group(1)) != mtu:
        progress("rxe", f"{prog}: ran at MTU {m and m.group(1)}, not the bed's {mtu}: not counted")
        return None
    r = {"bw_avg_MiBps": row["bw_avg_MiBps"], "bw_peak_MiBps": row["bw_peak_MiBps"], "mpps": row["mpps"]}
    for k in RXE_COUNTERS:
        if k in before and k in after:
            r[k] = after[k] - before[k]
    r["tx_frames"] = r.get("sent_pkts")
    r["retransmits"] = r.get("completer_retry_err")
    return r


def xv6_from_rxe(tb, size, iters, log, mtu):
    """xv6's rdma_bw on guest 1 READs from `xrpeer bw-server` on Linux
    guest 3 (rxe the responder); the client's counters and NIC drops."""
    srv = tb.linux[1]
    if not srv.start_server(f"xrpeer bw-server --mtu {mtu}", probe="cat /tmp/server.log",
                            ready="waiting for a client"):
        progress("rxe", f"xrpeer bw-server never listened: {srv.server_output(30).strip()[-200:]}")
        return None
    cmd = f"rdma_bw -t read -s {size} -n {iters} -e --stats {tb.ip(3)}"
    out = tb.guests[1].run(cmd, timeout=1800)
    srv.server_output(300)
    log.append(f"### xv6 from rxe: {cmd}\n{out.strip()}\n")
    row = perftable.bw_row(out)
    if not row:
        progress("rxe", f"{cmd}: no result row")
        return None
    q = perftable.qp_stats(out) or {}
    return {"bw_avg_MiBps": row["bw_avg_MiBps"], **{k: q.get(k) for k in ("tx_frames", "retransmits",
            "timeouts", "dup", "dropped")}, "nic_dropped": perftable.nic_drops(out)}


def on_bed(name, run, cpus=2, bed=BEDS[0]):
    """Boots this bench's four guests (xv6 0 and 1 at bed's path MTU with
    `cpus` harts, Linux rxe 2 and 3 with one vCPU and bed's link MTU) on
    one lossless link, calls run(tb, log) with an empty log list, halts
    them; (what run returned, the log)."""
    log = []
    mtu, link_mtu = bed
    with Testbed(2, linux=2, name=name, cpus=cpus, linux_mtu=link_mtu,
                 extra_append=f"rdma_mtu={mtu}") as tb:
        tb.boot()
        rows = run(tb, log)
        tb.halt()
    return rows, log


def one_run(tb, tool, cell, loss, log, mtu):
    name, op, prog, size, counts = cell
    iters = counts[loss]
    if tool == "rxe":
        return rxe_bw(tb, prog, size, iters, log, mtu)
    if tool == FROM_RXE:
        return xv6_from_rxe(tb, size, iters, log, mtu)
    return rdma_sweep.bw(tb, op, size, iters, tool == "sr", log)


def tools_of(cell, order):
    """The tools a cell runs, in this round's order: READ adds xv6 from rxe."""
    return order + ((FROM_RXE,) if cell[1] == "read" else ())


def run_all(tb, rounds, seed, log, mtu):
    rows = []
    log.append(f"## path MTU {mtu}\n")
    for rnd in range(rounds):
        order = TOOLS if rnd % 2 == 0 else tuple(reversed(TOOLS))
        for loss in LOSSES:
            tb.set_spec("both", f"loss {loss}% seed {seed + rnd}")
            for cell in CELLS:
                for tool in tools_of(cell, order):
                    t0 = time.monotonic()
                    r = one_run(tb, tool, cell, loss, log, mtu)
                    took = time.monotonic() - t0
                    if not r:
                        continue
                    rows.append({"path_mtu": mtu, "round": rnd + 1, "loss_pct": loss, "cell": cell[0], "tool": tool,
                                 "size": cell[3], "messages": cell[4][loss], "seconds": round(took, 1),
                                 "bw_avg_MiBps": r["bw_avg_MiBps"],
                                 "goodput_MBps": round(r["bw_avg_MiBps"] * MIB / 1e6, 3),
                                 "tx_frames": r.get("tx_frames"), "retransmits": r.get("retransmits"),
                                 "timeouts": r.get("timeouts"), "dup": r.get("dup"), "dropped": r.get("dropped"),
                                 "nic_dropped": r.get("nic_dropped")})
                    progress("rxe", f"MTU {mtu} round {rnd + 1} loss {loss}% {cell[0]} {tool}: "
                             f"{r['bw_avg_MiBps']} MB/s (2^20), retx {r.get('retransmits')}, {took:.0f} s")
    return rows


def csv_rows(path):
    """rxe-compare.csv's rows with numbers as numbers; a file from before
    the MTU 1024 bed has no path_mtu column: its runs were at 4096."""
    with open(path) as f:
        return [dict(r, path_mtu=int(r.get("path_mtu") or BEDS[0][0]), loss_pct=int(r["loss_pct"]),
                     goodput_MBps=float(r["goodput_MBps"]))
                for r in csv.DictReader(f) if r["goodput_MBps"] not in ("", None)]


def medians(rows):
    """{(path MTU, loss, cell, tool): (median goodput MB/s, [each run's])}."""
    out = {}
    for r in rows:
        out.setdefault((r["path_mtu"], r["loss_pct"], r["cell"], r["tool"]), []).append(r["goodput_MBps"])
    return {k: (statistics.median(v), v) for k, v in out.items()}


def ratio(a, b):
    return round(a / b, 2) if a is not None and b else None


def summary_section(rows, meds, args, took, load):
    L = [SECTION, "",
         f"Command: `make bench-rxe` (bench/rdma/rxe_compare.py), seed {args.seed}, {args.rounds} rounds, "
         f"{took / 60:.1f} minutes, finished {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
         f"host load average {load:.2f}. Two xv6 guests and two Linux 6.1 Soft-RoCE guests (QEMU TCG) on one "
         "linkemu link, random loss on every port; two beds, each with fresh guests: path MTU 4096 on a "
         "9000-byte link and path MTU 1024 on a 1500-byte link (standard Ethernet; every perftest run "
         "reported the bed's MTU). Each cell moves the same number of messages "
         "with every tool; xv6's rdma_bw sleeps on its completion channel (-e), perftest's client busy-polls "
         "(it has no event mode for WRITE/READ bandwidth); goodput is the tools' "
         "BW average (MB = 2^20 in their tables) in MB = 10^6 bytes here, median of the rounds "
         "(each run in rxe-compare.csv). rxe = perftest ib_write_bw / ib_read_bw; gbn / sr = xv6's rdma_bw "
         "with go-back-N / selective repeat.", "",
         "| path MTU | cell | loss % | rxe MB/s | xv6 GBN MB/s | xv6 SR MB/s | GBN / rxe | SR / rxe |",
         "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    mtus = [b[0] for b in BEDS if any(r["path_mtu"] == b[0] for r in rows)]
    for mtu in mtus:
        for cell in CELLS:
            for loss in LOSSES:
                g = {t: meds.get((mtu, loss, cell[0], t), (None, []))[0] for t in TOOLS}
                L.append(f"| {mtu} | {cell[0]} | {loss} | {g['rxe']} | {g['gbn']} | {g['sr']} | "
                         f"{ratio(g['gbn'], g['rxe'])} | {ratio(g['sr'], g['rxe'])} |")
    L += ["", "Frames each tool's requester sent per message, and its retransmissions (rxe: "
          "completer_retry_err, its retransmission timeouts; xv6: rdma_bw --stats), medians:", "",
          "| path MTU | cell | loss % | rxe frames/msg | GBN frames/msg | SR frames/msg | rxe retries | GBN retx | SR retx |",
          "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for mtu, cell, loss in ((m, c, l) for m in mtus for c in CELLS for l in LOSSES):
            f, x = {}, {}
            for t in TOOLS:
                rs = [r for r in rows if r["path_mtu"] == mtu and r["cell"] == cell[0] and r["loss_pct"] == loss
                      and r["tool"] == t]
                fr = [r["tx_frames"] / r["messages"] for r in rs if r.get("tx_frames") is not None]
                rt = [r["retransmits"] for r in rs if r.get("retransmits") is not None]
                f[t] = round(statistics.median(fr), 1) if fr else None
                x[t] = statistics.median(rt) if rt else None
            L.append(f"| {mtu} | {cell[0]} | {loss} | {f['rxe']} | {f['gbn']} | {f['sr']} | {x['rxe']} | "
                     f"{x['gbn']} | {x['sr']} |")
    L += from_rxe_table(rows, meds, mtus)
    L += ["", "Plot: rxe-compare.png.", SECTION_END]
    return "\n".join(L) + "\n"


def from_rxe_table(rows, meds, mtus):
    """Lines of the table of xv6 reading from rxe: goodput beside xv6 reading
    from xv6 (go-back-N, same round), and what the xv6 requester dropped."""
    cell = next(c for c in CELLS if c[1] == "read")
    L = ["", f"xv6 reading from rxe ({cell[0]}, xv6's rdma_bw go-back-N against the project's Linux peer "
         "`xrpeer bw-server`: rxe is the responder and paces nothing): goodput (median) and the frames the "
         "xv6 requester dropped, its QP's (out of window, duplicates dropped) and its NIC's (receive ring "
         "full or no buffer), summed over the rounds:", "",
         "| path MTU | loss % | xv6 from rxe MB/s | xv6 from xv6 (GBN) MB/s | QP dropped | NIC dropped | duplicates | retx |",
         "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for mtu, loss in ((m, l) for m in mtus for l in LOSSES):
        rs = [r for r in rows if r["path_mtu"] == mtu and r["cell"] == cell[0] and r["loss_pct"] == loss
              and r["tool"] == FROM_RXE]
        L.append(f"| {mtu} | {loss} | {meds.get((mtu, loss, cell[0], FROM_RXE), (None,))[0]} | "
                 f"{meds.get((mtu, loss, cell[0], 'gbn'), (None,))[0]} | "
                 + " | ".join(str(rdma_sweep.run_total(rs, k)) for k in ("dropped", "nic_dropped", "dup", "retransmits"))
                 + " |")
    return L


def write_summary(out, section, title=SECTION, end_marker=SECTION_END, at_top=False):
    """Replaces the section of rdma-summary.md from its title to its
    end_marker line (the rxe section unless told). A new section goes at
    the end, or with at_top after the summary's first paragraph."""
    path = os.path.join(out, "rdma-summary.md")
    text = "# RDMA benchmarks\n"
    if os.path.exists(path):
        with open(path) as f:
            text = f.read()
    start = text.find(title)
    if start >= 0:
        end = text.find(end_marker, start)
        end = len(text) if end < 0 else end + len(end_marker) + 1
        text = text[:start] + text[end:]
    if at_top and start >= 0:
        text = text[:start] + section + text[start:]
    elif at_top:
        head, sep, rest = text.partition("\n## ")
        text = head.rstrip("\n") + "\n\n" + section + ("\n## " + rest if sep else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    with open(path, "w") as f:
        f.write(text)


def plot(out, meds):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        progress("rxe", "no matplotlib: no plot")
        return
    mtus = sorted({k[0] for k in meds}, reverse=True)
    fig, grid = plt.subplots(len(mtus), len(CELLS), figsize=(11, 4.2 * len(mtus)), squeeze=False)
    colors = {"rxe": "#888888", "gbn": "#4a7ebb", "sr": "#d9822b"}
    labels = {"rxe": "Linux rxe (perftest)", "gbn": "xv6 go-back-N", "sr": "xv6 selective repeat"}
    for ax, (mtu, cell) in zip([a for row in grid for a in row], [(m, c) for m in mtus for c in CELLS]):
        width = 0.27
        for j, t in enumerate(TOOLS):
            vals = [meds.get((mtu, loss, cell[0], t), (0, []))[0] or 0 for loss in LOSSES]
            xs = [i + (j - 1) * width for i in range(len(LOSSES))]
            ax.bar(xs, vals, width, color=colors[t], label=labels[t])
        ax.set_xticks(range(len(LOSSES)))
        ax.set_xticklabels([f"{loss} % loss" for loss in LOSSES])
        ax.set_yscale("log")
        ax.set_ylabel("goodput, MB/s (10^6 B), log scale")
        ax.set_title(f"{cell[0]}, path MTU {mtu}")
        ax.grid(axis="y", alpha=0.3)
    save_plot(fig, grid[0][0], "xv6-rdma vs Linux Soft-RoCE on one lossy link (same run, medians)",
              os.path.join(out, "rxe-compare.png"))


def save_plot(fig, ax, title, path):
    """Writes fig to path with ax's legend below the plots and title above."""
    handles, names = ax.get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=len(names), fontsize=9)
    fig.suptitle(title)
    fig.tight_layout(rect=(0, min(0.07, 0.3 / fig.get_figheight()), 1, 1))
    fig.savefig(path, dpi=110)


def write_runs(out, stem, rows, log, script):
    """out/STEM.csv (rows, every run; the first row's keys are the columns)
    and out/STEM.txt (log: the tools' own tables, from bench/rdma/SCRIPT)."""
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, stem + ".csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    with open(os.path.join(out, stem + ".txt"), "w") as f:
        f.write(f"# perftest and rdma_bw tables from bench/rdma/{script} (MB = 2^20)\n\n" + "\n".join(log))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "results"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=int(os.environ.get("BENCH_SEED", 7)))
    ap.add_argument("--quick", action="store_true", help="one round, a quarter of the messages")
    ap.add_argument("--plot-only", action="store_true", help="redraw the PNG from rxe-compare.csv in --out")
    args = ap.parse_args()
    if args.plot_only:
        plot(args.out, medians(csv_rows(os.path.join(args.out, "rxe-compare.csv"))))
        return 0
    if args.quick:
        args.rounds = 1
        global CELLS
        CELLS = tuple((n, op, p, s, {k: max(5, v // 4) for k, v in c.items()}) for n, op, p, s, c in CELLS)
    t0 = time.monotonic()
    rows, log = [], []
    for bed in BEDS:
        r, lg = on_bed(f"rxe-cmp{bed[0]}", lambda tb, lg: run_all(tb, args.rounds, args.seed, lg, bed[0]),
                       bed=bed)
        rows += r
        log += lg
    if not rows:
        progress("rxe", "no run produced a result")
        return 1
    write_runs(args.out, "rxe-compare", rows, log, "rxe_compare.py")
    meds = medians(rows)
    plot(args.out, meds)
    section = summary_section(rows, meds, args, time.monotonic() - t0, os.getloadavg()[0])
    write_summary(args.out, section)
    print(section)
    expected = len(BEDS) * args.rounds * len(LOSSES) * sum(len(tools_of(c, TOOLS)) for c in CELLS)
    progress("rxe", f"{len(rows)} of {expected} runs gave a result")
    return 0 if len(rows) == expected else 1


if __name__ == "__main__":
    sys.exit(main())
