#!/usr/bin/env python3
"""run_netem.py: the loss experiment through the kernel's real tc netem.

This host's kernel has no sch_netem, so netem/netem.sh cannot run here; a
Linux guest can: the netem box (launch.py's netem_box, tests/harness/
linux_guest.py NetemBox) bridges two xv6 guests' links and puts
`tc qdisc ... netem SPEC` on each bridge port. rdma_bw WRITEs 64 KiB
messages from guest 1 to guest 0 through it (go-back-N and selective
repeat), and the same runs go through linkemu given the same spec.

Checks (each a line; "N passed, M failed" at the end):
  netem_drops_binomial   netem told "loss 2%" on the data direction alone:
                         the data frames xv6's QPs lost (the sender's
                         tx_frames minus the receiver's rx_frames, rdma_bw
                         --stats on both sides) lie within 4 standard
                         deviations of 2 % of the frames sent (binomial)
  netem_drops_counted    and they are the frames netem says it dropped
                         (tc -s qdisc: dropped), within 3 frames (the
                         connection's few CM datagrams cross netem too)
  netem_vs_linkemu_gbn   goodput at 1 % loss both ways relative to the same
  netem_vs_linkemu_sr    medium's clean goodput (the box's own ceiling, a
                         Linux bridge in an emulated x86 guest, cancels
                         out), through netem and through linkemu: the two
                         ratios (medians of ROUNDS runs each) differ by at
                         most TOLERANCE[mode]. Go-back-N pays for every loss
                         with a window of frames (ratio ~0.35), so a wrong
                         loss rate moves it far; selective repeat loses
                         almost nothing at 1 % (ratio ~0.95), so its single
                         runs mostly measure the host: on a loaded 2-core
                         host they ranged 0.66-1.22 through the box and
                         0.79-1.11 through linkemu (go-back-N 0.23-0.41),
                         hence its wider tolerance. The strict checks are
                         the two above.

Usage: python3 tests/net/run_netem.py [--rounds N]
Needs build/linux (make linux-image); make test-netem runs it.
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
TOLERANCE = {"gbn": 0.15, "sr": 0.3}   # |netem ratio - linkemu ratio|, lossy/clean goodput
ROUNDS = 7                 # short runs swing (one GBN run at 1 % fell to 0.11): medians of 7
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


def binomial_checks(tally, tb):
    """netem drops 2 % of guest 1's frames (b2a, eth0's qdisc), nothing else."""
    box = tb.box
    box.set_netem("a2b", None)
    box.set_netem("b2a", f"loss {BINOMIAL_LOSS * 100:g}%")
    before = qdisc_counts(box, "eth0")
    _, (cli_tx, _), (_, srv_rx) = bw_run(tb, sr=False)
    after = qdisc_counts(box, "eth0")
    lost, netem_dropped = cli_tx - srv_rx, after[1] - before[1]
    mean = cli_tx * BINOMIAL_LOSS
    sigma = math.sqrt(cli_tx * BINOMIAL_LOSS * (1 - BINOMIAL_LOSS))
    ok = abs(lost - mean) <= BINOMIAL_SIGMAS * sigma
    tally.record("netem_drops_binomial", ok,
                 f"{lost} of {cli_tx} data frames lost ({100 * lost / cli_tx:.2f} %), expected "
                 f"{mean:.0f} +- {BINOMIAL_SIGMAS * sigma:.0f} at {BINOMIAL_LOSS * 100:g} %")
    tally.record("netem_drops_counted", abs(lost - netem_dropped) <= COUNT_SLACK,
                 f"QP counters lost {lost}, netem dropped {netem_dropped} on that port")


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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=ROUNDS)
    args = ap.parse_args()
    tally = Tally()
    got = {}
    try:
        with Testbed(2, netem_box=(None, None), name="netem-box") as tb:
            tb.boot()
            binomial_checks(tally, tb)
            got["netem"] = ratios(tb, lambda spec: tb.box.set_netem("both", spec), args.rounds)
            tb.halt()
        with Testbed(2, name="netem-linkemu") as tb:
            tb.boot()
            got["linkemu"] = ratios(tb, lambda spec: tb.set_spec("both", spec or "loss 0%"), args.rounds)
            tb.halt()
    except GuestError as e:
        tally.record("netem_experiment", False, f"guest error: {str(e)[:300]}")
    for mode in ("gbn", "sr"):
        if "netem" not in got or "linkemu" not in got:
            break
        n, k = statistics.median(got["netem"][mode]), statistics.median(got["linkemu"][mode])
        tally.record(f"netem_vs_linkemu_{mode}", abs(n - k) <= TOLERANCE[mode],
                     f"goodput at 1 % / clean: netem {n:.2f}, linkemu {k:.2f} "
                     f"(tolerance {TOLERANCE[mode]}; rounds netem {[round(x, 2) for x in got['netem'][mode]]}, "
                     f"linkemu {[round(x, 2) for x in got['linkemu'][mode]]})")
    return tally.finish()


if __name__ == "__main__":
    sys.exit(main())
