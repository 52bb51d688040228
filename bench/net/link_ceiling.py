#!/usr/bin/env python3
"""link_ceiling.py: the raw guest-to-guest link ceiling and one-way latency.

Two guests on a clean linkemu link (no impairment). For each frame size
(Ethernet header + IPv4 + UDP + payload, FCS not counted: 64, 1500, 4200,
9000 bytes) and each direction, the receiver runs `nettest sink`, the
sender `nettest blast` for --seconds; the receiver's rate (frames it got
between its first and last datagram) is the ceiling. Also recorded: what
the sender pushed, what linkemu delivered, and the receiver's interrupts
per frame (E1000 interrupt moderation at work). Then the one-way latency:
half the round trip of small UDP echoes (`nettest lat` against
`udpecho -s`), and ping.

Writes bench/results/link-ceiling.csv, link-ceiling.png (matplotlib, from
the Debian python3 if this interpreter lacks it), link-latency.csv, and
prints a table. Usage: link_ceiling.py [--seconds N] [--sizes 64 1500 ...]
[--itr N] [--echoes N] [--out DIR]; --seconds 0 measures only the latency.
"""
import argparse
import csv
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "net"))
from launch import Testbed  # noqa: E402

HEADERS = 14 + 20 + 8
OUT = os.path.join(REPO, "bench", "results")
RATE = re.compile(r"(\d+) frames (\d+) bytes in (\d+) us: (\d+) frames/s (\d+)\.(\d+) MB/s")


def one_run(tb, src, dst, frame, seconds):
    gs, gd = tb.guests[src], tb.guests[dst]
    payload = frame - HEADERS
    gd.send("nettest sink 9001 2000 &")   # background: its first line may interleave
    time.sleep(2)                         # with the prompt, so wait instead of matching
    before = tb.stats()
    out = gs.run(f"nettest blast {tb.ip(dst)} 9001 {payload} {seconds}", timeout=seconds + 120)
    m = RATE.search(out)
    sink = gd.expect(r"sink received " + RATE.pattern, timeout=60)
    irq = gd.expect(r"sink interrupts (\d+) for (\d+) frames: (\d+)\.(\d+) interrupts/frame", timeout=10)
    after = tb.stats()
    delivered = tb.delivered_to(dst, after) - tb.delivered_to(dst, before)
    return {
        "direction": f"{src}->{dst}", "frame_bytes": frame, "payload_bytes": payload,
        "sent_frames": int(m.group(1)) if m else 0, "sent_fps": int(m.group(4)) if m else 0,
        "linkemu_delivered": delivered,
        "recv_frames": int(sink.group(1)), "recv_fps": int(sink.group(4)),
        "payload_MBps": float(f"{sink.group(5)}.{sink.group(6)}"),
        "interrupts_per_frame": float(f"{irq.group(3)}.{irq.group(4)}"),
    }


def plot(csv_path, png_path):
    code = f"""
import csv, matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
rows = list(csv.DictReader(open({csv_path!r})))
fig, ax = plt.subplots(1, 2, figsize=(10, 4))
for d in sorted(set(r["direction"] for r in rows)):
    rs = [r for r in rows if r["direction"] == d]
    x = [int(r["frame_bytes"]) for r in rs]
    ax[0].plot(x, [int(r["recv_fps"]) for r in rs], "o-", label="guest " + d)
    ax[1].plot(x, [float(r["payload_MBps"]) for r in rs], "o-", label="guest " + d)
ax[0].set_xlabel("frame bytes"); ax[0].set_ylabel("frames/s received"); ax[0].set_xscale("log")
ax[1].set_xlabel("frame bytes"); ax[1].set_ylabel("UDP payload MB/s"); ax[1].set_xscale("log")
for a in ax: a.grid(True, alpha=0.3); a.legend()
fig.suptitle("xv6-rdma E1000 link ceiling, guest to guest through linkemu (no impairment)")
fig.tight_layout(); fig.savefig({png_path!r}, dpi=110)
"""
    for py in (sys.executable, "/usr/bin/python3"):
        if subprocess.run([py, "-c", code], capture_output=True).returncode == 0:
            return True
    return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--sizes", type=int, nargs="+", default=[64, 1500, 4200, 9000])
    ap.add_argument("--out", default=OUT)
    ap.add_argument("--echoes", type=int, default=300, help="round trips for the latency")
    ap.add_argument("--itr", type=int, default=None,
                    help="E1000 ITR (256 ns units; 0 = no moderation) via the itr= boot argument")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rows, lat = [], {}
    append = f"itr={args.itr}" if args.itr is not None else ""
    with Testbed(2, name="bench", extra_append=append) as tb:
        tb.boot()
        g0, g1 = tb.guests
        for g, peer in ((g0, 1), (g1, 0)):
            g.run(f"nettest arp {tb.ip(peer)} 3000", timeout=30)
        for frame in (args.sizes if args.seconds > 0 else []):
            for src, dst in ((0, 1), (1, 0)):
                r = one_run(tb, src, dst, frame, args.seconds)
                r["itr"] = args.itr if args.itr is not None else 977
                print(f"  {r['direction']} {frame:5d} B: sent {r['sent_fps']} f/s, "
                      f"received {r['recv_fps']} f/s {r['payload_MBps']} MB/s, "
                      f"{r['interrupts_per_frame']} irq/frame", flush=True)
                rows.append(r)
        g1.send("udpecho -s 7 &")
        time.sleep(2)
        out = g0.run(f"nettest lat {tb.ip(1)} 7 18 {args.echoes}", timeout=300)
        m = re.search(r"rtt min (\d+) us median (\d+) us p90 (\d+) us avg (\d+) us, "
                      r"one-way min (\d+) us median (\d+) us avg (\d+) us", out)
        if m:
            v = [int(x) for x in m.groups()]
            lat = {"size": 18, "frame_bytes": 60, "rtt_min_us": v[0], "rtt_median_us": v[1],
                   "rtt_p90_us": v[2], "rtt_avg_us": v[3], "one_way_min_us": v[4],
                   "one_way_median_us": v[5], "one_way_avg_us": v[6]}
        ping = g0.run(f"ping -c 20 -i 50 {tb.ip(1)}", timeout=60)
        pm = re.search(r"rtt min/avg/max (\S+) ms / (\S+) ms / (\S+) ms", ping)
        if pm:
            lat["ping_rtt_min_ms"], lat["ping_rtt_avg_ms"] = pm.group(1), pm.group(2)
        tb.halt()

    path = os.path.join(args.out, "link-ceiling.csv")
    png = os.path.join(args.out, "link-ceiling.png")
    plotted = False
    if rows:                                   # --seconds 0: latency only
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
            w.writeheader()
            w.writerows(rows)
        plotted = plot(path, png)
    if lat:
        with open(os.path.join(args.out, "link-latency.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(lat.keys()))
            w.writeheader()
            w.writerow(lat)

    print()
    print(f"{'dir':5} {'frame':>6} {'payload':>7} {'sent f/s':>9} {'recv f/s':>9} "
          f"{'MB/s':>8} {'delivered':>9} {'received':>9} {'irq/frame':>9}")
    for r in rows:
        print(f"{r['direction']:5} {r['frame_bytes']:6d} {r['payload_bytes']:7d} {r['sent_fps']:9d} "
              f"{r['recv_fps']:9d} {r['payload_MBps']:8.3f} {r['linkemu_delivered']:9d} "
              f"{r['recv_frames'] + 1:9d} {r['interrupts_per_frame']:9.3f}")
    if lat:
        print(f"one-way latency (half the RTT of an 18-byte UDP echo): min {lat['one_way_min_us']} us, "
              f"median {lat['one_way_median_us']} us, avg {lat['one_way_avg_us']} us; "
              f"ping RTT min/avg {lat.get('ping_rtt_min_ms')} / "
              f"{lat.get('ping_rtt_avg_ms')} ms")
    if rows:
        print(f"wrote {path}" + (f", {png}" if plotted else " (no matplotlib: no PNG)"))


if __name__ == "__main__":
    main()
