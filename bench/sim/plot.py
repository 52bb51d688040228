#!/usr/bin/env python3
"""plot.py: turn sim-bench's CSVs into plots and a Markdown summary.

Reads  DIR/sim-goodput.csv and DIR/sim-cpu.csv (written by build/sim/sim-bench)
Writes DIR/sim-goodput-100g.png, DIR/sim-goodput-1g.png, DIR/sim-summary.md

Each plot shows, against loss, goodput as a fraction of the same mode's
lossless goodput (selective repeat and go-back-N, per message size), plus
the p99 message completion time. The summary table puts SR beside GBN at
every loss with the requester's retransmission timeouts, lists SR's
timeouts by cause, and states the goals (SR keeps >= 90 % of lossless
goodput at 1 % loss and >= 80 % at 5 % on the 100 Gb/s link) against what
was measured.
Usage: plot.py DIR
"""
import csv, os, sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

LINKS = {"100g": "100 Gb/s, 10 us RTT", "1g": "1 Gb/s, 200 us RTT"}
COMMAND = "make bench-sim"
DETAIL = "build/sim/sim-bench --out bench/results, then bench/sim/plot.py bench/results"


def load(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def size_name(n):
    n = int(n)
    return "%d MiB" % (n >> 20) if n >= 1 << 20 else "%d KiB" % (n >> 10)


def plot_link(rows, link, out):
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    for (mode, style) in (("sr", "-o"), ("gbn", "--s")):
        for size in sorted({r["size"] for r in rows}, key=int):
            pts = [r for r in rows if r["link"] == link and r["mode"] == mode and r["size"] == size]
            pts.sort(key=lambda r: float(r["loss_pct"]))
            if not pts:
                continue
            x = [float(r["loss_pct"]) for r in pts]
            label = "%s %s" % (mode.upper(), size_name(size))
            ax1.plot(x, [100 * float(r["fraction_of_lossless"]) for r in pts], style, label=label)
            ax2.plot(x, [float(r["p99_us"]) for r in pts], style, label=label)
    ax1.axhline(90, color="grey", lw=0.8, ls=":")
    ax1.set_xscale("symlog", linthresh=0.1)
    ax1.set_xlim(0, 12)
    ax1.set_xlabel("random loss, both directions (%)")
    ax1.set_ylabel("goodput, % of the mode's lossless goodput")
    ax1.set_ylim(0, 105)
    ax1.grid(alpha=0.3)
    ax1.legend(fontsize=8, loc="center left")
    ax2.set_xscale("symlog", linthresh=0.1)
    ax2.set_xlim(0, 12)
    ax2.set_yscale("log")
    ax2.set_xlabel("random loss, both directions (%)")
    ax2.set_ylabel("p99 message completion time (us)")
    ax2.grid(alpha=0.3)
    seed = rows[0]["seed"] if rows else "?"
    fig.suptitle("RDMA WRITE over a simulated %s link, MTU 4096 (seed %s)" % (LINKS[link], seed))
    # The headline number: SR at 1 % loss as a fraction of its lossless goodput.
    notes = []
    for size in sorted({r["size"] for r in rows}, key=int):
        sr, gbn = get(rows, link, "sr", size, 1.0), get(rows, link, "gbn", size, 1.0)
        if sr and gbn:
            notes.append("%s at 1%% loss: SR %.1f%% of lossless, GBN %.1f%%" % (
                size_name(size), 100 * float(sr["fraction_of_lossless"]),
                100 * float(gbn["fraction_of_lossless"])))
    ax1.text(0.03, 0.03, "\n".join(notes), transform=ax1.transAxes, fontsize=8,
             va="bottom", bbox=dict(boxstyle="round", fc="white", alpha=0.8))
    fig.text(0.01, 0.005, "command: %s; seed %s" % (COMMAND, seed), fontsize=7, color="grey")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(out, dpi=110)
    plt.close(fig)


def get(rows, link, mode, size, loss):
    for r in rows:
        if (r["link"], r["mode"], r["size"]) == (link, mode, str(size)) and float(r["loss_pct"]) == loss:
            return r
    return None


def timeout_causes(rows):
    """SR's timeouts by cause (the simulator's judgement, tests/sim/README.md)."""
    sr = [r for r in rows if r["mode"] == "sr" and int(r["timeouts"]) and r.get("timeouts_by_cause")]
    if not sr:
        return []
    L = ["## Selective repeat: retransmission timeouts by cause", "",
         "Judged when the timer fires, from the first PSN the requester has no news of: `tail` (its only "
         "copy was lost), `resend` (its last resend was lost), `ack` (it arrived; a later frame from the "
         "responder was lost), `unanswered` (it arrived and nothing from the responder was lost). Rows "
         "without timeouts are left out.", "",
         "| link | size | loss % | timeouts | by cause |", "| --- | --- | --- | --- | --- |"]
    for r in sr:
        L.append("| %s | %s | %s | %s | %s |" % (r["link"], size_name(r["size"]), r["loss_pct"], r["timeouts"],
                                                r["timeouts_by_cause"]))
    L.append("")
    return L


def summary(rows, cpu, out):
    seed = rows[0]["seed"] if rows else "?"
    L = ["# Transport benchmarks in the host simulator", "",
         "Command: `%s` (%s); seed %s. Virtual time; random loss on both directions (data and ACKs); "
         "path MTU 4096; RDMA WRITE, all signaled; goodput = message payload / time to the last completion; "
         "completion time = post to CQE, with sq_depth messages kept posted." % (COMMAND, DETAIL, seed), ""]
    for link in LINKS:
        r = next((r for r in rows if r["link"] == link and "max_inflight" in r), None)
        if r:
            L.append("- %s: max_inflight %s packets, local ACK timeout %s us%s%s, sq_depth %s (64 KiB) / %s (1 MiB)." % (
                LINKS[link], r["max_inflight"], r["ack_timeout_us"],
                (", adaptive RTO min %s us" % r["adaptive_min_rto_us"]) if float(r["adaptive_min_rto_us"]) else "",
                (", early probe slack %s us [REQ-TMO-10]" % r["probe_slack_us"]) if float(r.get("probe_slack_us") or 0) else "",
                next(x["sq_depth"] for x in rows if x["link"] == link and x["size"] == str(64 << 10)),
                next(x["sq_depth"] for x in rows if x["link"] == link and x["size"] == str(1 << 20))))
    L.append("")
    L.append("SR and GBN share the in-flight cap (max_inflight); SR is also bounded by the core's SR window "
             "(SR_WINDOW, proto-spec/README.md), which its SACK bitmap covers [SR-WIRE-8]. A larger cap helps SR "
             "(a loss no longer stalls the sender) and costs GBN (each loss resends more), so under loss GBN "
             "sends SEND/WRITE packets within its loss window [REQ-WIN-5]: halved per loss event, 16 packets "
             "back per window acknowledged.")
    L.append("")
    sizes = sorted({r["size"] for r in rows}, key=int)
    # The headlines: SR at 1 % and 5 % on 100G as a fraction of lossless.
    for (loss, goal) in ((1.0, 0.9), (5.0, 0.8)):
        L.append("## Goal: selective repeat at %g %% loss keeps >= %d %% of its lossless goodput on the 100 Gb/s link"
                 % (loss, 100 * goal))
        L.append("")
        for size in sizes:
            sr, gbn = get(rows, "100g", "sr", size, loss), get(rows, "100g", "gbn", size, loss)
            if sr and gbn:
                frac = float(sr["fraction_of_lossless"])
                L.append("- %s WRITEs: SR keeps **%.1f %%** (%s; %s timeouts), GBN keeps %.1f %%." % (
                    size_name(size), 100 * frac, "goal met" if frac >= goal else "goal NOT met",
                    sr["timeouts"], 100 * float(gbn["fraction_of_lossless"])))
        L.append("")
    for link in ("100g", "1g"):
        L.append("## %s link" % LINKS[link])
        L.append("")
        L.append("| size | loss % | SR Gb/s | SR % of lossless | SR p50 / p99 us | SR timeouts "
                 "| GBN Gb/s | GBN % of lossless | GBN p50 / p99 us | GBN timeouts |")
        L.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for size in sizes:
            losses = sorted({float(r["loss_pct"]) for r in rows if r["link"] == link})
            for loss in losses:
                sr, gbn = get(rows, link, "sr", size, loss), get(rows, link, "gbn", size, loss)
                if not sr or not gbn:
                    continue
                def cell(r):
                    return ("%.2f" % float(r["goodput_gbps"]), "%.1f" % (100 * float(r["fraction_of_lossless"])),
                            "%s / %s" % (r["p50_us"], r["p99_us"]), r["timeouts"])
                a, b = cell(sr), cell(gbn)
                flag = "" if sr["ok"] == "1" and gbn["ok"] == "1" else " (run failed)"
                L.append("| %s | %g | %s | %s | %s | %s | %s | %s | %s | %s |%s" % (size_name(size), loss, *a, *b, flag))
        L.append("")
    L += timeout_causes(rows)
    if cpu:
        L.append("## Core CPU cost (frames handled per second on one core)")
        L.append("")
        L.append("Time inside rct_handle_frame / rct_dev_poll_transmit / rct_dev_handle_timeout "
                 "(both endpoints, every frame sent or received counts once per endpoint) on the 100 Gb/s "
                 "lossless SR run; the simulated link and frame linearization are not counted; the cost of the "
                 "clock reads is subtracted. 'Excl. copy' also subtracts the payload placement memcpy at the "
                 "measured ns/byte (4 KiB copies into a 4 MiB buffer), so it is an estimate; n/a where the copy "
                 "estimate is as large as the measured time. The thread-CPU clock ignores "
                 "preemption by other jobs on this shared 2-core host; the wall clock does not. Best of several runs. "
                 "Where the subtracted clock reads come near the measured time (the offload rows, more so "
                 "on a loaded host, when a thread-CPU clock read costs a microsecond), a row says little; "
                 "bench/results/sim-tail-loss.md gives the host load of the last run.")
        L.append("")
        L.append("| clock | ICRC | WRITE size | frames | core CPU s | frames/s per core | frames/s excl. copy "
                 "| clock read ns (subtracted per call) |")
        L.append("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for r in cpu:
            L.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (r.get("clock", "wall"), r["icrc"],
                     size_name(r["size"]), r["frames"], r["core_cpu_s"], r["frames_per_s"],
                     r["frames_per_s_excl_copy"] if float(r["frames_per_s_excl_copy"]) > 0 else "n/a",
                     r.get("clock_read_ns", "?")))
        L.append("")
    L.append("Plots: sim-goodput-100g.png, sim-goodput-1g.png. Data: sim-goodput.csv, sim-cpu.csv.")
    with open(out, "w") as f:
        f.write("\n".join(L) + "\n")


def read_summary(reads, path):
    """Appends the READ rows (1 MiB, [REQ-READ-6]) to the summary: goodput as a
    fraction of the mode's lossless READ goodput and of the lossless WRITE of
    the same size."""
    if not reads:
        return
    L = ["", "## 1 MiB READ (requester reads from the responder)", ""]
    for link in LINKS:
        L.append("%s (%s):" % (link, LINKS[link]))
        L.append("")
        L.append("| mode | loss % | Gb/s | % of lossless READ | p50 / p99 us | retransmits | timeouts |")
        L.append("| --- | --- | --- | --- | --- | --- | --- |")
        for r in reads:
            if r["link"] != link:
                continue
            L.append("| %s | %s | %.3f | %.1f | %s / %s | %s | %s |" % (
                r["mode"], r["loss_pct"], float(r["goodput_gbps"]), 100 * float(r["fraction_of_lossless"]),
                r["p50_us"], r["p99_us"], r["retransmits"], r["timeouts"]))
        L.append("")
    with open(path, "a") as f:
        f.write("\n".join(L) + "\n")


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "bench/results"
    every = load(os.path.join(d, "sim-goodput.csv"))
    rows = [r for r in every if r.get("op", "WRITE") == "WRITE"]
    reads = [r for r in every if r.get("op") == "READ"]
    cpu_path = os.path.join(d, "sim-cpu.csv")
    cpu = load(cpu_path) if os.path.exists(cpu_path) else []
    for link in LINKS:
        plot_link(rows, link, os.path.join(d, "sim-goodput-%s.png" % link))
    summary(rows, cpu, os.path.join(d, "sim-summary.md"))
    read_summary(reads, os.path.join(d, "sim-summary.md"))
    print("plot.py: wrote %s/sim-goodput-100g.png, sim-goodput-1g.png, sim-summary.md" % d)


if __name__ == "__main__":
    main()
