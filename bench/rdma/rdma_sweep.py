#!/usr/bin/env python3
"""rdma_sweep.py: make bench-rdma. rdma_bw / rdma_lat between two guests
over linkemu, written to bench/results/ beside the raw link ceiling of
`make bench-net` (bench/results/link-ceiling.csv, link-latency.csv).

Configurations (each a fresh pair of guests; seeds printed):
  mtu1024 lossless, go-back-N    WRITE sizes 2 B .. 8 MiB (every power of 2),
                                 READ and SEND at a few sizes,
                                 rdma_lat WRITE 2 B and 256 B, and the raw
                                 link's one-way latency (nettest lat against
                                 udpecho, 18-byte datagrams) in the same run
  mtu4096 lossless, go-back-N    WRITE, a few sizes (boot argument rdma_mtu=4096)
  loss 0.1 / 1 / 5 %, go-back-N and selective repeat
                                 WRITE at 4 KiB, 64 KiB, 1 MiB
Outputs: rdma-bw.csv, rdma-lat.csv, rdma-bw.png, rdma-loss.png,
rdma-perf.txt (the tools' own tables, perftest's columns), rdma-summary.md.
Iterations per size: enough for ~2-4 MiB (at least 5, at most 500);
at 5 % loss less. MB in the tools' columns is 2^20 bytes (as perftest);
the CSVs and the summary use MB = 10^6 bytes like link-ceiling.csv.

Usage: python3 bench/rdma/rdma_sweep.py [--out DIR] [--quick] [--seed N]
"""
import argparse
import csv
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "net"))
sys.path.insert(0, os.path.join(REPO, "tests", "harness"))
from launch import Testbed  # noqa: E402
from guest import GuestError, progress  # noqa: E402

BW_ROW = re.compile(r"^ (\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", re.M)
LAT_ROW = re.compile(r"^ (\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", re.M)
MIB = 1 << 20
REPEATS = 3


def iters_for(size, budget):
    return max(5, min(500, budget // max(size, 1)))


def bw(tb, op, size, iters, sr, log, depth=None):
    a, b = tb.guests
    a.send("rdma_bw")
    a.expect(r"waiting for a client", timeout=60)
    cmd = (f"rdma_bw -t {op} -s {size} -n {iters}{' --sr' if sr else ''}"
           f"{f' -d {depth}' if depth else ''} {tb.ip(0)}")
    out = b.run(cmd, timeout=1800)
    a.expect(r"\$ $", timeout=120)
    log.append(f"### {cmd}\n{out.strip()}\n")
    m = BW_ROW.search(out)
    if not m:
        progress("bench", f"{cmd}: no result row")
        return None
    return {"bw_peak_MiBps": float(m.group(3)), "bw_avg_MiBps": float(m.group(4)), "mpps": float(m.group(5))}


def lat(tb, op, size, iters, log):
    a, b = tb.guests
    a.send("rdma_lat")
    a.expect(r"waiting for a client", timeout=60)
    cmd = f"rdma_lat -t {op} -s {size} -n {iters} {tb.ip(0)}"
    out = b.run(cmd, timeout=900)
    a.expect(r"\$ $", timeout=120)
    log.append(f"### {cmd}\n{out.strip()}\n")
    m = LAT_ROW.search(out)
    if not m:
        return None
    v = [float(x) for x in m.groups()]
    return {"t_min_us": v[2], "t_max_us": v[3], "t_typical_us": v[4], "t_avg_us": v[5],
            "t_stdev_us": v[6], "p99_us": v[7], "p999_us": v[8]}


def raw_latency(tb, log):
    a, b = tb.guests
    b.send("udpecho -s 7 &")
    time.sleep(2)
    out = a.run(f"nettest lat {tb.ip(1)} 7 18 300", timeout=300)
    log.append(f"### nettest lat {tb.ip(1)} 7 18 300\n{out.strip()}\n")
    m = re.search(r"one-way min (\d+) us median (\d+) us avg (\d+) us", out)
    return {"one_way_min_us": int(m.group(1)), "one_way_median_us": int(m.group(2)),
            "one_way_avg_us": int(m.group(3))} if m else None


def configs(quick, seed):
    pow2 = [1 << k for k in range(1, 24)]
    few = [4096, 65536, MIB]
    if quick:
        pow2 = [2, 256, 4096, 65536, MIB]
    yield {"name": "mtu1024", "mtu": 1024, "loss": 0, "sr": 0, "sizes": pow2, "extra": True}
    yield {"name": "mtu4096", "mtu": 4096, "loss": 0, "sr": 0, "sizes": [4096, 65536, MIB, 8 * MIB]}
    for loss in (0.1, 1, 5):
        for sr in (0, 1):
            yield {"name": f"loss{loss:g}-{'sr' if sr else 'gbn'}", "mtu": 1024, "loss": loss, "sr": sr,
                   "sizes": few}


def run_config(c, seed, bw_rows, lat_rows, log, quick):
    spec = f"loss {c['loss']:g}% seed {seed}" if c["loss"] else None
    append = f"rdma_mtu={c['mtu']}" if c["mtu"] != 1024 else ""
    progress("bench", f"config {c['name']}: link {spec or 'lossless'}, path MTU {c['mtu']}, "
             f"{'selective repeat' if c['sr'] else 'go-back-N'}")
    budget = (MIB if c["loss"] >= 5 else 2 * MIB) if quick else (2 * MIB if c["loss"] >= 5 else 4 * MIB)
    with Testbed(2, both=spec, name=f"rdmabench-{c['name']}", extra_append=append) as tb:
        tb.boot()
        log.append(f"## {c['name']}: link {spec or 'lossless'}, path MTU {c['mtu']}, sr {c['sr']}\n")
        ops = [("write", s) for s in c["sizes"]]
        if c.get("extra"):
            ops += [(op, s) for op in ("read", "send") for s in (2, 4096, 65536, MIB)]
        for op, size in ops:
            n = iters_for(size, budget)
            # The ratio sizes run REPEATS times (the median counts): single
            # runs swing by 2x with the host's load.
            reps = REPEATS if op == "write" and size in (65536, MIB) else 1
            runs, depth = [], None
            for _ in range(reps):
                r = bw(tb, op, size, n, c["sr"], log)
                if not r:                   # retry exhausted: measure what a shallow queue gets
                    depth = 4
                    r = bw(tb, op, size, n, c["sr"], log, depth=depth)
                if r:
                    runs.append(r)
            if runs:
                runs.sort(key=lambda x: x["bw_avg_MiBps"])
                r = runs[len(runs) // 2]
                row = {"config": c["name"], "mtu": c["mtu"], "loss_pct": c["loss"], "sr": c["sr"], "op": op,
                       "size": size, "iters": n, "tx_depth": depth or 64, "runs": len(runs),
                       "all_avg_MiBps": " ".join(str(x["bw_avg_MiBps"]) for x in runs), **r,
                       "goodput_MBps": round(r["bw_avg_MiBps"] * MIB / 1e6, 3)}
                bw_rows.append(row)
                progress("bench", f"  {op} {size} B x{n}{f' depth {depth}' if depth else ''}: "
                         f"{r['bw_avg_MiBps']} MB/s (2^20) avg (median of {row['all_avg_MiBps']}), "
                         f"peak {r['bw_peak_MiBps']}")
        if c.get("extra"):
            for size in (2, 256):
                r = lat(tb, "write", size, 300 if quick else 1000, log)
                if r:
                    lat_rows.append({"config": c["name"], "what": f"rdma_lat write {size} B", "size": size, **r})
                    progress("bench", f"  rdma_lat write {size} B: t_typical {r['t_typical_us']} us")
            r = raw_latency(tb, log)
            if r:
                lat_rows.append({"config": c["name"], "what": "raw link one-way (nettest lat 18 B)", "size": 18,
                                 "t_typical_us": r["one_way_median_us"], "t_min_us": r["one_way_min_us"],
                                 "t_avg_us": r["one_way_avg_us"]})
                progress("bench", f"  raw one-way latency: median {r['one_way_median_us']} us")
        st = tb.stats()
        log.append("linkemu: " + ", ".join(f"{d['name']} in {d['frames_in']} dropped {d['dropped']['total']}"
                                           for d in st["directions"]) + "\n")
        tb.halt()


def write_csv(path, rows):
    keys = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)


def link_ceiling():
    """Best payload MB/s for 1500-byte frames (the size of MTU-1024 RoCE frames' class)."""
    path = os.path.join(REPO, "bench", "results", "link-ceiling.csv")
    if not os.path.exists(path):
        return None, {}
    rows = list(csv.DictReader(open(path)))
    by = {}
    for r in rows:
        by.setdefault(int(r["frame_bytes"]), []).append(float(r["payload_MBps"]))
    return path, {k: max(v) for k, v in by.items()}


def plots(out, bw_rows, ceil):
    """PNGs from the rows; without matplotlib here, the Debian python3 redraws them from the CSV."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        if os.path.exists("/usr/bin/python3") and sys.executable != "/usr/bin/python3":
            progress("bench", "no matplotlib here: plotting with /usr/bin/python3")
            os.spawnv(os.P_WAIT, "/usr/bin/python3", ["/usr/bin/python3", os.path.abspath(__file__),
                                                     "--plot-only", "--out", out])
        else:
            progress("bench", "no matplotlib: no PNGs")
        return
    fig, ax = plt.subplots(figsize=(8, 5))
    for cfg in ("mtu1024", "mtu4096"):
        pts = [(r["size"], r["goodput_MBps"]) for r in bw_rows if r["config"] == cfg and r["op"] == "write"]
        if pts:
            ax.plot(*zip(*pts), marker="o", label=f"WRITE, path MTU {cfg[3:]}, lossless")
    for op in ("read", "send"):
        pts = [(r["size"], r["goodput_MBps"]) for r in bw_rows if r["config"] == "mtu1024" and r["op"] == op]
        if pts:
            ax.plot(*zip(*pts), marker=".", linestyle="--", label=f"{op.upper()}, MTU 1024")
    for fb, v in sorted(ceil.items()):
        if fb in (1500, 4200):
            ax.axhline(v, linestyle=":", color="gray")
            ax.text(2, v, f"raw link, {fb}-byte UDP frames", fontsize=8, va="bottom")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("goodput (MB/s, 10^6)")
    ax.set_title("rdma_bw between two xv6-rdma guests (QEMU TCG, linkemu)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "rdma-bw.png"), dpi=100)
    fig, ax = plt.subplots(figsize=(8, 5))
    for size in (4096, 65536, MIB):
        for sr in (0, 1):
            pts = [(0, r["goodput_MBps"]) for r in bw_rows
                   if r["config"] == "mtu1024" and r["op"] == "write" and r["size"] == size]
            pts += [(r["loss_pct"], r["goodput_MBps"]) for r in bw_rows
                    if r["loss_pct"] and r["sr"] == sr and r["size"] == size]
            if len(pts) > 1:
                ax.plot(*zip(*pts), marker="o", linestyle="-" if sr else "--",
                        label=f"WRITE {size} B, {'SR' if sr else 'GBN'}")
    ax.set_xlabel("random loss per direction (%)")
    ax.set_ylabel("goodput (MB/s, 10^6)")
    ax.set_title("WRITE goodput under loss: go-back-N (dashed) and selective repeat")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "rdma-loss.png"), dpi=100)


NOTES = """
## Reading these numbers

- The host has 2 cores shared with another job: the lossless configuration
  ran first and its 64 KiB median (the ratio's numerator) was lower than the
  same WRITE at 0.1 % loss a few minutes later; treat single ratios as +-2x.
- At 5 % loss go-back-N and selective repeat both end rdma_bw in
  RETRY_EXC_ERR (also at TX depth 4), and the server's sync SEND fails with
  RNR NAKs and timeouts: the transport's retry accounting under heavy loss
  needs work (see the transport helper's selective-repeat fixes).
- rdma_lat's t_typical (~7-10 ms) is far above its t_min (~0.3-0.5 ms) and
  the raw one-way latency: both ends busy-poll, and with TCG every spinning
  vCPU holds a host core, so the vCPU that must take the frame waits for a
  host time slice. An event-driven rdma_lat (block in ibv_get_cq_event, like
  perftest -e) is the next thing to measure.
- Path MTU 4096: bursts of 4 KiB frames overflow QEMU's dgram socket
  buffers; the runs complete but are not faster than MTU 1024.
"""


def summary(out, bw_rows, lat_rows, ceil_path, ceil, seed, cmd, took):
    def g(cfg, size, op="write", sr=None, loss=None):
        for r in bw_rows:
            if r["config"] == cfg and r["size"] == size and r["op"] == op:
                return r["goodput_MBps"]
        return None

    def ratio(a, b):
        return f"{a / b:.2f}" if a is not None and b else "n/a"

    L = [f"# RDMA benchmarks (make bench-rdma)\n",
         f"Command: `{cmd}`, seed {seed}, {took / 60:.1f} minutes. Two guests (2 vCPUs, QEMU TCG) "
         f"through linkemu on the shared 2-core host; numbers move with the host's load. Goodput is "
         f"rdma_bw's BW average converted to MB = 10^6 bytes. Data: rdma-bw.csv, rdma-lat.csv, "
         f"rdma-perf.txt (the tools' tables), rdma-bw.png, rdma-loss.png.\n"]
    c1500 = ceil.get(1500)
    w64 = g("mtu1024", 65536)
    L.append("## Ratios the issue asks about\n")
    L.append("| ratio | value | goal |\n| --- | ---: | --- |")
    L.append(f"| 64 KiB WRITE goodput / raw link ceiling (1500-byte frames, {c1500} MB/s from "
             f"{os.path.relpath(ceil_path, REPO) if ceil_path else 'missing'}) | {ratio(w64, c1500)} "
             f"({w64} MB/s) | >= 0.80 |")
    for loss, goal in ((1, "0.90"), (5, "0.70")):
        for size in (65536, MIB):
            base = g("mtu1024", size)
            v = g(f"loss{loss}-sr", size)
            gbn = g(f"loss{loss}-gbn", size)
            L.append(f"| SR goodput at {loss} % loss / lossless, WRITE {size} B | {ratio(v, base)} "
                     f"({v} / {base} MB/s; go-back-N {ratio(gbn, base)}) | >= {goal} |")
    l256 = next((r for r in lat_rows if r["what"] == "rdma_lat write 256 B"), None)
    raw = next((r for r in lat_rows if r["what"].startswith("raw link")), None)
    if l256 and raw:
        L.append(f"| 256 B WRITE t_typical (us) | {l256['t_typical_us']} | < 500 |")
        L.append(f"| 256 B WRITE t_typical / raw one-way median ({raw['t_typical_us']} us, same run) | "
                 f"{ratio(l256['t_typical_us'], raw['t_typical_us'])} | <= 1.5 |")
    L.append("\nrdma_lat's t_typical is half the median round trip of a WRITE ping-pong (perftest's "
             "convention), the raw one-way latency is half the median round trip of an 18-byte UDP "
             "echo between the same two guests, measured after the RDMA runs.\n")
    L.append("## WRITE goodput by size (lossless)\n")
    L.append("| size | MTU 1024 MB/s | MTU 4096 MB/s |\n| ---: | ---: | ---: |")
    for size in sorted({r["size"] for r in bw_rows if r["config"] in ("mtu1024", "mtu4096") and r["op"] == "write"}):
        L.append(f"| {size} | {g('mtu1024', size)} | {g('mtu4096', size)} |")
    shallow = [r for r in bw_rows if r.get("tx_depth", 64) != 64]
    if shallow:
        L.append("\nRuns at TX depth 64 that ended in RETRY_EXC_ERR were rerun at depth 4: " +
                 ", ".join(f"{r['config']} {r['op']} {r['size']} B" for r in shallow) + ".\n")
    L.append("\n## Under loss (WRITE, MTU 1024)\n")
    L.append("| loss % | size | go-back-N MB/s | selective repeat MB/s |\n| ---: | ---: | ---: | ---: |")
    for loss in (0.1, 1, 5):
        for size in (4096, 65536, MIB):
            L.append(f"| {loss:g} | {size} | {g(f'loss{loss:g}-gbn', size)} | {g(f'loss{loss:g}-sr', size)} |")
    L.append("\n## Latency\n")
    L.append("| what | t_min us | t_typical us | t_avg us | p99 us |\n| --- | ---: | ---: | ---: | ---: |")
    for r in lat_rows:
        L.append(f"| {r['what']} | {r.get('t_min_us')} | {r.get('t_typical_us')} | {r.get('t_avg_us')} | "
                 f"{r.get('p99_us', '')} |")
    L.append(NOTES)
    with open(os.path.join(out, "rdma-summary.md"), "w") as f:
        f.write("\n".join(L) + "\n")
    print("\n".join(L))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "results"))
    ap.add_argument("--quick", action="store_true", help="fewer sizes and bytes")
    ap.add_argument("--seed", type=int, default=int(os.environ.get("BENCH_SEED", 7)))
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--plot-only", action="store_true", help="redraw the PNGs from the CSV in --out")
    args = ap.parse_args()
    if args.plot_only:
        rows = list(csv.DictReader(open(os.path.join(args.out, "rdma-bw.csv"))))
        for r in rows:
            for k in ("size", "mtu", "sr"):
                r[k] = int(r[k])
            r["loss_pct"] = float(r["loss_pct"])
            r["goodput_MBps"] = float(r["goodput_MBps"])
        plots(args.out, rows, link_ceiling()[1])
        return 0
    t0 = time.monotonic()
    progress("bench", f"seed {args.seed}")
    bw_rows, lat_rows, log = [], [], []
    failed = 0
    for c in configs(args.quick, args.seed):
        if args.only and c["name"] not in args.only:
            continue
        try:
            run_config(c, args.seed, bw_rows, lat_rows, log, args.quick)
        except GuestError as e:
            failed += 1
            progress("bench", f"config {c['name']}: guest error: {e}")
            log.append(f"config {c['name']}: guest error: {str(e)[:300]}\n")
    os.makedirs(args.out, exist_ok=True)
    write_csv(os.path.join(args.out, "rdma-bw.csv"), bw_rows)
    write_csv(os.path.join(args.out, "rdma-lat.csv"), lat_rows)
    with open(os.path.join(args.out, "rdma-perf.txt"), "w") as f:
        f.write("# rdma_bw / rdma_lat tables from bench/rdma/rdma_sweep.py (perftest's columns, MB = 2^20)\n\n")
        f.write("\n".join(log))
    ceil_path, ceil = link_ceiling()
    plots(args.out, bw_rows, ceil)
    summary(args.out, bw_rows, lat_rows, ceil_path, ceil, args.seed,
            "make bench-rdma" + (" (--quick)" if args.quick else ""), time.monotonic() - t0)
    return 0 if failed == 0 and bw_rows else 1


if __name__ == "__main__":
    sys.exit(main())
