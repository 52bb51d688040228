#!/usr/bin/env python3
"""run_netem.py: the loss experiment through the kernel's real tc netem.

This host's kernel has no sch_netem, so netem/netem.sh cannot run here; a
Linux guest can: the netem box (launch.py's netem_box, tests/harness/
linux_guest.py NetemBox) bridges two xv6 guests' links and puts
`tc qdisc ... netem SPEC` on each bridge port. rdma_bw WRITEs 64 KiB
messages from guest 1 to guest 0 through it, and the same run goes through
linkemu given the same spec, so the project's emulator is checked against
the kernel's.

Checks (make test-netem; each a line, "N passed, M failed" at the end), for
MEDIUM netem and linkemu, each told "loss 2%" on the data direction alone:
  MEDIUM_drops_binomial  the data frames xv6's QPs lost (the sender's
                         tx_frames minus the receiver's rx_frames, rdma_bw
                         --stats on both sides) lie within 4 standard
                         deviations of 2 % of the frames sent (binomial)
  MEDIUM_drops_counted   and they are the frames the medium says it dropped
                         (netem: tc -s qdisc; linkemu: its stats), within 3
                         frames (the connection's few CM datagrams cross it too)
Counts, not times: they hold on an idle and on a loaded host alike.

Benchmark (--compare; make bench-netem): goodput at 1 % loss both ways
relative to the same medium's clean goodput, through netem and through
linkemu, go-back-N and selective repeat, ROUNDS runs each; medians and
every round to bench/results/netem-compare.txt. Go-back-N pays for every
loss with a window of frames (ratio ~0.35), selective repeat loses almost
nothing at 1 % (ratio ~0.95); single runs swing with the host's load, so
the numbers are reported, not asserted.

Usage: python3 tests/net/run_netem.py [--compare] [--rounds N]
Needs build/linux (make linux-image).
"""
import argparse
import math
import os
import re
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "harness"))
from launch import Testbed  # noqa: E402
from guest import GuestError, progress  # noqa: E402
from tally import Tally  # noqa: E402
import perftable  # noqa: E402

BINOMIAL_LOSS = 0.02       # netem's loss on the data direction for the counting check
BINOMIAL_SIGMAS = 4        # a correct link fails this about once in 16,000 runs
COUNT_SLACK = 3            # frames besides the QP's that netem may drop (CM datagrams, ARP)
COMPARE_LOSS = "loss 1%"
ROUNDS = 7                 # --compare: short runs swing (one GBN run at 1 % fell to 0.11)
COMPARE_OUT = os.path.join(REPO, "bench", "results", "netem-compare.txt")
MESSAGES = 160             # 64 KiB WRITEs per run: 10 MiB, ~10,000 MTU-1024 frames
QDISC_SENT = re.compile(r"Sent \d+ bytes (\d+) pkt \(dropped (\d+),")


def bw_run(tb, sr):
    """One rdma_bw WRITE run guest 1 -> guest 0 with both sides' counters:
    (MB/s as printed, client (tx, rx), server (tx, rx))."""
    a, b = tb.guests[:2]
    a.send("rdma_bw --stats")
    a.expect(r"waiting for a client", timeout=60)
    out = b.run(f"rdma_bw -t write -s 65536 -n {MESSAGES} -e --stats{' --sr' if sr else ''} {tb.ip(0)}",
                timeout=900)
    srv = perftable.qp_stats(a.expect(perftable.QP_LINE.pattern, timeout=120)[0])
    a.expect(r"\$ $", timeout=120)
    row, cli = perftable.bw_row(out), perftable.qp_stats(out)
    if not row or not cli:
        raise GuestError(f"rdma_bw printed no result: {out.strip()[-300:]}")
    return (row["bw_avg_MiBps"], (cli["tx_frames"], cli["rx_frames"]),
            (srv["tx_frames"], srv["rx_frames"]))


def qdisc_counts(box, dev):
    """(packets sent, dropped) of netem on the box's port dev."""
    out = box.run(f"tc -s qdisc show dev {dev}", timeout=30)
    m = QDISC_SENT.search(out)
    if not m:
        raise GuestError(f"no netem counters on {dev}: {out.strip()}")
    return int(m.group(1)), int(m.group(2))


def drop_checks(tally, tb, medium, set_data_loss, dropped):
    """The medium drops 2 % of guest 1's frames (the data direction) and
    counts them; set_data_loss(spec) sets it, dropped() reads its counter."""
    set_data_loss(f"loss {BINOMIAL_LOSS * 100:g}%")
    before = dropped()
    _, (cli_tx, _), (_, srv_rx) = bw_run(tb, sr=False)
    counted = dropped() - before
    lost = cli_tx - srv_rx
    mean = cli_tx * BINOMIAL_LOSS
    sigma = math.sqrt(cli_tx * BINOMIAL_LOSS * (1 - BINOMIAL_LOSS))
    ok = abs(lost - mean) <= BINOMIAL_SIGMAS * sigma
    tally.record(f"{medium}_drops_binomial", ok,
                 f"{lost} of {cli_tx} data frames lost ({100 * lost / cli_tx:.2f} %), expected "
                 f"{mean:.0f} +- {BINOMIAL_SIGMAS * sigma:.0f} at {BINOMIAL_LOSS * 100:g} %")
    tally.record(f"{medium}_drops_counted", abs(lost - counted) <= COUNT_SLACK,
                 f"QP counters lost {lost}, {medium} dropped {counted} on that direction")


def netem_data_loss(box):
    def set_loss(spec):
        box.set_netem("a2b", None)
        box.set_netem("b2a", spec)
    return set_loss


def linkemu_data_loss(tb):
    def set_loss(spec):
        tb.set_spec("a2b", "loss 0%")
        tb.set_spec("b2a", f"{spec} seed 7")
    return set_loss


def ratios(tb, set_loss, rounds):
    """{mode: [lossy/clean goodput per round]} on one bed; set_loss(spec or None)."""
    out = {"gbn": [], "sr": []}
    for rnd in range(rounds):
        for mode in out:
            set_loss(None)
            clean = bw_run(tb, mode == "sr")[0]
            set_loss(COMPARE_LOSS if tb.box else f"{COMPARE_LOSS} seed {7 + rnd}")
            lossy = bw_run(tb, mode == "sr")[0]
            out[mode].append(lossy / clean)
            progress("netem", f"{'netem box' if tb.box else 'linkemu'} {mode} round {rnd + 1}: "
                     f"{lossy} / {clean} MB/s = {lossy / clean:.2f}")
    return out


def write_compare(got, rounds):
    lines = [f"netem vs linkemu: goodput at 1 % loss / clean, rdma_bw WRITE 64 KiB x {MESSAGES}, "
             f"{rounds} rounds, medians", ""]
    for mode in ("gbn", "sr"):
        n, k = statistics.median(got["netem"][mode]), statistics.median(got["linkemu"][mode])
        lines.append(f"{mode:4s} netem {n:.2f}  linkemu {k:.2f}  linkemu/netem {k / n:.2f}   "
                     f"rounds netem {[round(x, 2) for x in got['netem'][mode]]} "
                     f"linkemu {[round(x, 2) for x in got['linkemu'][mode]]}")
    text = "\n".join(lines) + "\n"
    with open(COMPARE_OUT, "w") as f:
        f.write(text)
    print(text, end="")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--compare", action="store_true", help="the goodput benchmark instead of the checks")
    ap.add_argument("--rounds", type=int, default=ROUNDS)
    args = ap.parse_args()
    tally = Tally()
    got = {}
    try:
        with Testbed(2, netem_box=(None, None), name="netem-box") as tb:
            tb.boot()
            box = tb.box
            if args.compare:
                got["netem"] = ratios(tb, lambda spec: box.set_netem("both", spec), args.rounds)
            else:
                drop_checks(tally, tb, "netem", netem_data_loss(box),
                            lambda: qdisc_counts(box, "eth0")[1])
            tb.halt()
        with Testbed(2, name="netem-linkemu") as tb:
            tb.boot()
            if args.compare:
                got["linkemu"] = ratios(tb, lambda spec: tb.set_spec("both", spec or "loss 0%"), args.rounds)
            else:
                drop_checks(tally, tb, "linkemu", linkemu_data_loss(tb),
                            lambda: tb.stats()["directions"][1]["dropped"]["total"])
            tb.halt()
    except GuestError as e:
        tally.record("netem_experiment", False, f"guest error: {str(e)[:300]}")
    if args.compare:
        if len(got) == 2:
            write_compare(got, args.rounds)
            return 0
        return 1
    return tally.finish()


if __name__ == "__main__":
    sys.exit(main())
