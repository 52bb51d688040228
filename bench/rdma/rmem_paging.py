#!/usr/bin/env python3
"""rmem_paging.py: paging to a remote memory node, against all-local and
against the verbs' own 4 KiB READ, in one run (issue 37's goals).

One bed per loss rate (0 and 1 % on both directions of linkemu, seeded),
two xv6 guests: guest 0 (128 MiB) is the memory node (rmemd) and the
all-local reference, guest 1 (CLIENT_MEM, boot argument rmem=<guest 0>)
pages to it through the kernel's client (kernel/rmem/rmem_client.c), whose
connection runs selective repeat. Per bed, in this order:

  1. the working set: twice guest 1's free memory (its `free`), in MiB;
  2. all-local: memtouch -m WS on guest 0 (enough memory: no paging);
  3. rdma_lat -t read -s 4096 --sr and rdma_bw -t read -s 4096 --sr,
     guest 1 reading from guest 0: the 4 KiB READ latency and goodput;
  4. rmemd on guest 0, guest 1 connected; `rmemctl lat reset`, then
     memtouch -m WS on guest 1 (sequential passes, then random 4 KiB
     touches, every byte checked), then `rmemctl lat` and `rmemctl`.

Columns: runtimes (sequential scan, random touches) paged and local and
their ratio; fault latency: the pager's median / p99 (pagestat's log2
buckets: upper bounds) and the client's io() read calls' median / p99
(10 us steps; a fault's read with its read-ahead pages); the 4 KiB READ's
typical / p99 latency; sequential-scan throughput (passes x WS / scan time)
against the 4 KiB READ goodput. Goals: median fault <= 1.5 x the READ's
latency; scan throughput >= 0.5 x the READ goodput; at 1 % loss each
within 0.8 of its clean value.

Usage: python3 bench/rdma/rmem_paging.py [--loss 0 1] [--passes N] [--touches N]
                                         [--client-mem 48M] [--out DIR]
Writes DIR/rmem-paging.md, .csv, .png (default bench/results) and the
guests' transcripts in DIR/rmem-paging.log.
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
sys.path.insert(0, os.path.join(REPO, "tests", "rdma"))
from guest import progress  # noqa: E402
from launch import Testbed  # noqa: E402
import perftable  # noqa: E402
import run_rmem_client  # noqa: E402
import rdma_sweep  # noqa: E402

PAGE = 4096
MIB = 1 << 20
NODE_POOL_MIB = 64      # rmemd -m: room for the pager's slots (8 x guest 1's pages at most)
READ_ITERS = 2000       # rdma_lat / rdma_bw iterations of the 4 KiB READ
GOALS = {"fault_vs_read": 1.5, "scan_vs_read_bw": 0.5, "lossy_of_clean": 0.8}
MEMTOUCH = re.compile(r"memtouch: ok pid \d+ MiB (\d+) seq_ms (\d+) rand_ms (\d+) faults (\d+) "
                      r"evictions (\d+) ra_hits (\d+) lat_median_us (\d+) lat_p99_us (\d+)")


def memtouch(g, mib, passes, touches, log):
    cmd = f"memtouch -q -m {mib} -p {passes} -r {touches}"
    out = g.run(cmd, timeout=3600)
    log.append(f"### {g.name}: {cmd}\n{out.strip()}\n")
    m = MEMTOUCH.search(out)
    if not m:
        raise RuntimeError(f"{g.name}: {cmd}: no result line: {out.strip()[-300:]!r}")
    keys = ("mib", "seq_ms", "rand_ms", "faults", "evictions", "ra_hits", "fault_median_us", "fault_p99_us")
    return dict(zip(keys, (int(x) for x in m.groups())))


def free_mib(g):
    out = g.run("free", timeout=60)
    return int(re.search(r"^free:\s+(\d+) pages", out, re.M)[1]) * PAGE / MIB


def read_ref(tb, log):
    """The 4 KiB READ's latency and goodput, guest 1 reading from guest 0."""
    cmd, out, _ = rdma_sweep.lat_pair(tb, f"-t read -s 4096 -n {READ_ITERS} -e --sr")
    log.append(f"### {cmd}\n{out.strip()}\n")
    lat = perftable.lat_row(out)
    bw = rdma_sweep.bw(tb, "read", 4096, READ_ITERS * 4, True, log)
    if not lat or not bw:
        raise RuntimeError("rdma_lat / rdma_bw gave no result row (see the log)")
    return {"read_lat_us": lat["t_typical_us"], "read_p99_us": lat["p99_us"],
            "read_bw_MiBps": float(bw["bw_avg_MiBps"])}


def client_lat(g):
    out = g.run("rmemctl lat", timeout=60)
    return {k: int(v) for k, v in re.findall(r"^(read_\w+): (\d+)", out, re.M)}


def one_bed(loss, opts, log):
    spec = f"loss {loss:g}% seed 13" if loss else None
    with Testbed(2, both=spec, name=f"rmem-paging-loss{loss:g}") as tb:
        a, b = tb.guests
        b.memory = opts.client_mem
        b.append += f" rmem={tb.ip(0)}:{run_rmem_client.PORT}"
        tb.boot(timeout=180)
        ws = max(1, round(2 * free_mib(b)))
        progress("rmem-paging", f"loss {loss:g}%: working set {ws} MiB (twice guest 1's free memory)")
        local = memtouch(a, ws, opts.passes, opts.touches, log)
        ref = read_ref(tb, log)
        run_rmem_client.start_node(a, NODE_POOL_MIB)
        st = run_rmem_client.wait_connected(b, 180)
        if st.get("connected") != "yes":
            raise RuntimeError(f"guest 1 did not connect to the memory node: {st}")
        b.run("rmemctl lat reset", timeout=60)
        paged = memtouch(b, ws, opts.passes, opts.touches, log)
        cl = client_lat(b)
        log.append(f"### rmemctl on guest 1\n{b.run('rmemctl', timeout=60).strip()}\n")
        tb.halt()
    scan = opts.passes * ws / (paged["seq_ms"] / 1000) if paged["seq_ms"] else 0.0
    row = {"loss_pct": loss, "ws_MiB": ws, "transport": st.get("transport"),
           "seq_ms_paged": paged["seq_ms"], "seq_ms_local": local["seq_ms"],
           "rand_ms_paged": paged["rand_ms"], "rand_ms_local": local["rand_ms"],
           "faults": paged["faults"], "evictions": paged["evictions"], "ra_hits": paged["ra_hits"],
           "fault_median_us": paged["fault_median_us"], "fault_p99_us": paged["fault_p99_us"],
           "io_read_median_us": cl.get("read_median_us", 0), "io_read_p99_us": cl.get("read_p99_us", 0),
           "io_read_calls": cl.get("read_calls", 0), "io_read_pages": cl.get("read_pages", 0),
           **ref, "scan_MiBps": round(scan, 2)}
    row["fault_vs_read"] = round(row["io_read_median_us"] / ref["read_lat_us"], 2)
    row["scan_vs_read_bw"] = round(scan / ref["read_bw_MiBps"], 2)
    progress("rmem-paging", f"loss {loss:g}%: {row}")
    return row


def table(rows, opts, took):
    clean = next((r for r in rows if r["loss_pct"] == 0), None)
    lines = [f"# Paging to a remote memory node (make bench: bench/rdma/rmem_paging.py, {took:.0f} s)", "",
             f"Two xv6 guests over linkemu; guest 1 ({opts.client_mem}) pages to rmemd on guest 0 through the "
             f"kernel's client (selective repeat); all-local: the same memtouch on guest 0 (128M, no paging). "
             f"memtouch -p {opts.passes} -r {opts.touches}, working set twice guest 1's free memory. "
             f"Fault latency: the pager's (log2 buckets, upper bounds) and the client's io() read calls "
             f"(10 us steps; one fault's read with its read-ahead pages). 4 KiB READ: rdma_lat / rdma_bw "
             f"-t read -s 4096 --sr on the same link, guest 1 reading from guest 0.", "",
             "| loss | WS MiB | scan paged / local ms | random paged / local ms | faults | fault median / p99 us "
             "(pager) | io read median / p99 us | 4 KiB READ typ / p99 us | scan MiB/s | READ MiB/s | "
             "fault / READ | scan / READ bw |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        lines.append(f"| {r['loss_pct']:g} % | {r['ws_MiB']} | {r['seq_ms_paged']} / {r['seq_ms_local']} | "
                     f"{r['rand_ms_paged']} / {r['rand_ms_local']} | {r['faults']} | "
                     f"{r['fault_median_us']} / {r['fault_p99_us']} | {r['io_read_median_us']} / "
                     f"{r['io_read_p99_us']} | {r['read_lat_us']:.1f} / {r['read_p99_us']:.1f} | "
                     f"{r['scan_MiBps']:.1f} | {r['read_bw_MiBps']:.1f} | {r['fault_vs_read']} | "
                     f"{r['scan_vs_read_bw']} |")
    lines += ["", "Goals (issue 37):", ""]
    for r in rows:
        ok_f = r["fault_vs_read"] <= GOALS["fault_vs_read"]
        ok_s = r["scan_vs_read_bw"] >= GOALS["scan_vs_read_bw"]
        lines.append(f"- {r['loss_pct']:g} %: median fault {r['fault_vs_read']} x the READ latency "
                     f"(goal <= {GOALS['fault_vs_read']}): {'met' if ok_f else 'NOT met'}; scan "
                     f"{r['scan_vs_read_bw']} x the READ goodput (goal >= {GOALS['scan_vs_read_bw']}): "
                     f"{'met' if ok_s else 'NOT met'}")
        if clean and r is not clean:
            f = clean["io_read_median_us"] / r["io_read_median_us"] if r["io_read_median_us"] else 0
            s = r["scan_MiBps"] / clean["scan_MiBps"] if clean["scan_MiBps"] else 0
            lines.append(f"  - of clean: fault latency {f:.2f} (clean / lossy), scan {s:.2f} (goal >= "
                         f"{GOALS['lossy_of_clean']}): {'met' if min(f, s) >= GOALS['lossy_of_clean'] else 'NOT met'}")
    return "\n".join(lines) + "\n"


def plot(rows, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        progress("rmem-paging", "no matplotlib: no plot")
        return
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    panels = ((("io_read_median_us", "fault read (median)"), ("read_lat_us", "4 KiB READ (typical)"), "us",
               "latency"),
              (("scan_MiBps", "sequential scan, paged"), ("read_bw_MiBps", "4 KiB READ goodput"), "MiB/s",
               "throughput"))
    for ax, (ours, ref, unit, title) in zip(axes, panels):
        idx = range(len(rows))
        for (key, label), dx in ((ours, -0.175), (ref, 0.175)):
            ax.bar([i + dx for i in idx], [row[key] for row in rows], 0.35, label=label)
        ax.set_xticks(list(idx), [f"{row['loss_pct']:g} %" for row in rows])
        ax.set_ylabel(unit)
        ax.set_title(title)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--loss", type=float, nargs="+", default=[0, 1])
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--touches", type=int, default=4000)
    ap.add_argument("--client-mem", default="48M")
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "results"))
    opts = ap.parse_args()
    os.makedirs(opts.out, exist_ok=True)
    t0 = time.monotonic()
    log, rows = [], []
    try:
        for loss in opts.loss:
            rows.append(one_bed(loss, opts, log))
    finally:
        with open(os.path.join(opts.out, "rmem-paging.log"), "w") as f:
            f.write("\n".join(log))
    with open(os.path.join(opts.out, "rmem-paging.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    md = table(rows, opts, time.monotonic() - t0)
    with open(os.path.join(opts.out, "rmem-paging.md"), "w") as f:
        f.write(md)
    plot(rows, os.path.join(opts.out, "rmem-paging.png"))
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
