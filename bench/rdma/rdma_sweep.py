#!/usr/bin/env python3
"""rdma_sweep.py: make bench-rdma. rdma_bw / rdma_lat between two guests
over linkemu, written to bench/results/, with the raw link ceiling measured
in the same run on the same guests.

Every tool runs with -e (perftest's --events: the processes sleep on the
completion channel, and rdma_lat's WRITE side in ibvx_wait_write): two
guests that busy-poll on this 2-core host starve QEMU's I/O threads and
linkemu, and measure the host's scheduler instead of the transport.
Transport settings are rdma_cm's defaults (512 packets in flight at path
MTU 1024, 256 at 4096, adaptive RTO with a 30 ms floor); --stats adds each
run's retransmissions and timeouts to the CSV.

Configurations (each a fresh pair of guests, 2 vCPUs; seeds printed):
  mtu1024     lossless, go-back-N: WRITE 2 B .. 8 MiB (every power of 2),
              READ and SEND at a few sizes; the link ceiling at 1082-byte
              frames (a full MTU-1024 RoCEv2 frame): nettest kblast (the
              kernel sends one prebuilt UDP datagram again and again)
              against nettest kcount (the receiver counts from its stack's
              counters), guest 1 -> guest 0 like the RDMA data, 3 times;
              alternating with it, the RoCE frame ceiling: the same burst
              to NET_ROCE_SINK_PORT, each frame's ICRC computed by the
              sender and verified by the receiver, its payload copied
              into a buffer (link_ceiling.py's method "roce", the best of
              open-loop and paced bursts: link_ceiling.best_run); each
              round ends with a steady 64 KiB WRITE, about as long as
              the round's burst, for the WRITE / RoCE ceiling ratio
  mtu4096     the same at path MTU 4096 (boot argument rdma_mtu=4096) and
              4154-byte frames, WRITE at a few sizes
  sr-mtu1024, gbn-mtu1024, sr-mtu4096, gbn-mtu4096
              WRITE 64 KiB and 1 MiB, READ 1 MiB, with 0 / 0.1 / 1 / 5 % random loss both
              ways, selective repeat or go-back-N: the loss changes between
              runs on the same guests (linkemu's control socket), 5 rounds,
              so a ratio to the lossless runs compares like with like
  latency     rdma_lat -e WRITE 2 B and 256 B against the raw link's one-way
              latency (nettest lat, 18-byte UDP echoes) in the same guests,
              twice: as configured by default (2 vCPUs, E1000 interrupt
              moderation ITR 250 us), and tuned for latency the way one
              tunes a host for perftest's latency tests (1 vCPU, ITR 0 and
              QEMU's e1000 mitigation off: each frame interrupts at once)
Outputs: rdma-bw.csv, rdma-lat.csv, rdma-ceiling.csv, rdma-bw.png,
rdma-loss.png, rdma-perf.txt (the tools' own tables, perftest's columns),
rdma-summary.md. MB in the tools' columns is 2^20 bytes (as perftest); the
CSVs and the summary use MB = 10^6 bytes.

Usage: python3 bench/rdma/rdma_sweep.py [--out DIR] [--quick] [--seed N] [--only NAME ...]
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
sys.path.insert(0, os.path.join(REPO, "tests", "net"))
sys.path.insert(0, os.path.join(REPO, "tests", "harness"))
sys.path.insert(0, os.path.join(REPO, "bench", "net"))
from launch import Testbed  # noqa: E402
from guest import GuestError, progress  # noqa: E402
import link_ceiling  # noqa: E402
import perftable  # noqa: E402

MIB = 1 << 20
REPEATS = 3
# Ceiling rounds (each a raw burst, a RoCE burst and a steady WRITE): a round's ratio
# swung 0.57-0.97 on an idle host (the bursts' share of the 2 cores moves them
# by a third), so the median takes 5.
CEILING_ROUNDS = 5
LOSS_ROUNDS = 5     # rounds of the loss configurations: their ratios are each round's own, medians of 5
FRAME = {1024: 1082, 4096: 4154}      # a full RoCEv2 frame at each path MTU (no FCS)


def iters_for(size, budget):
    return max(5, min(500, budget // max(size, 1)))


def bw(tb, op, size, iters, sr, log, depth=None, poll=False):
    """rdma_bw on guest 1 against its server on guest 0: the client's row
    and --stats counters. It sleeps on its completion channel (-e) unless
    poll (busy-polling, perftest's default)."""
    a, b = tb.guests[:2]                 # the xv6 pair (a bed may hold Linux guests after them)
    a.send("rdma_bw")
    a.expect(r"waiting for a client", timeout=60)
    cmd = (f"rdma_bw -t {op} -s {size} -n {iters}{'' if poll else ' -e'} --stats{' --sr' if sr else ''}"
           f"{f' -d {depth}' if depth else ''} {tb.ip(0)}")
    out = b.run(cmd, timeout=1800)
    a.expect(r"\$ $", timeout=120)
    log.append(f"### {cmd}\n{out.strip()}\n")
    row = perftable.bw_row(out)
    if not row:
        progress("bench", f"{cmd}: no result row")
        return None
    r = {k: row[k] for k in ("bw_peak_MiBps", "bw_avg_MiBps", "mpps")}
    q = perftable.qp_stats(out)
    if q:
        r.update({k: q.get(k) for k in ("tx_frames", "retransmits", "timeouts", "dup", "dropped", "window_cuts",
                                   "late_probes")})
    r["nic_dropped"] = perftable.nic_drops(out)
    return r


def lat_pair(tb, opts, server_opts="", tool="rdma_lat", timeout=900):
    """`TOOL SERVER_OPTS` on guest 0, `TOOL OPTS <guest 0>` on guest 1 (TOOL
    rdma_lat or rdma_bw): (the client's command, its output, the server's
    --stats line or "")."""
    a, b = tb.guests[:2]
    a.send(f"{tool} {server_opts}".strip())
    a.expect(r"waiting for a client", timeout=60)
    cmd = " ".join(f"{tool} {opts} {tb.ip(0)}".split())
    out = b.run(cmd, timeout=timeout)
    server = a.expect(perftable.QP_LINE.pattern, timeout=120)[0] if "--stats" in server_opts else ""
    a.expect(r"\$ $", timeout=120)
    return cmd, out, server


def lat(tb, op, size, iters, log):
    cmd, out, _ = lat_pair(tb, f"-t {op} -s {size} -n {iters} -e")
    log.append(f"### {cmd}\n{out.strip()}\n")
    return perftable.lat_row(out)


def start_echo(tb):
    tb.guests[1].spawn("udpecho -s 7", ready=r"udpecho: serving port 7")


def raw_latency(tb, log, echoes=300):
    """One nettest lat run against the udpecho that start_echo left on guest 1."""
    a = tb.guests[0]
    out = a.run(f"nettest lat {tb.ip(1)} 7 18 {echoes}", timeout=300)
    log.append(f"### nettest lat {tb.ip(1)} 7 18 {echoes}\n{out.strip()}\n")
    m = re.search(r"one-way min (\d+) us median (\d+) us avg (\d+) us", out)
    return {"one_way_min_us": int(m.group(1)), "one_way_median_us": int(m.group(2)),
            "one_way_avg_us": int(m.group(3))} if m else None


def ceiling(tb, cfg, frame, seconds, c, ceil_rows, log):
    """The kernel-burst link ceiling guest 1 -> guest 0 at `frame` bytes and,
    alternating with it, the RoCE frame ceiling (ICRC + copy), CEILING_ROUNDS times
    each. Each round ends with a 64 KiB WRITE, guest 1 -> guest 0 like the
    bursts, sized to last about as long as one burst at that round's RoCE
    ceiling: the round's ratio compares a steady transfer with the steady
    burst just before it (a 0.2 s run against a 4 s burst measured the
    host's slow spells as much as the transport)."""
    runs = {"kernel": [], "roce": []}
    writes = []
    for _ in range(CEILING_ROUNDS):
        for method, rs in runs.items():
            # The RoCE ceiling is the most the receiver takes in, open-loop or
            # paced: an open-loop burst overdrives it (ceiling-notes.md).
            r = (link_ceiling.best_run if method == "roce" else link_ceiling.one_run)(tb, 1, 0, frame, seconds,
                                                                                     method)
            rs.append(r)
            log.append(f"### {link_ceiling.LABEL[method]} {frame} B: {r['recv_fps']} frames/s, "
                       f"{r['payload_MBps']} MB/s payload (sent {r['sent_fps']} frames/s"
                       f"{', paced, open-loop ' + str(r['open_loop_fps']) if r.get('paced_fps') else ''})\n")
        n = steady_iters(runs["roce"][-1]["payload_MBps"], seconds)
        w = bw(tb, "write", 65536, n, c["sr"], log)
        writes.append(dict(w, iters=n, goodput_MBps=round(w["bw_avg_MiBps"] * MIB / 1e6, 3)) if w else None)
    raw, roce = runs["kernel"], runs["roce"]
    ratios = [round(w["goodput_MBps"] / r["payload_MBps"], 3) for w, r in zip(writes, roce) if w and r["payload_MBps"]]
    done = [w for w in writes if w]
    row = {"config": cfg, "frame_bytes": frame, "runs": len(raw),
           "recv_fps_median": statistics.median(r["recv_fps"] for r in raw),
           "payload_MBps_median": statistics.median(r["payload_MBps"] for r in raw),
           "frame_MBps_median": statistics.median(r["frame_MBps"] for r in raw),
           "all_payload_MBps": " ".join(str(r["payload_MBps"]) for r in raw),
           "roce_recv_fps_median": statistics.median(r["recv_fps"] for r in roce),
           "roce_payload_MBps_median": statistics.median(r["payload_MBps"] for r in roce),
           "roce_all_payload_MBps": " ".join(str(r["payload_MBps"]) for r in roce),
           "steady_write_iters": " ".join(str(w["iters"]) for w in done),
           "steady_write_MBps": " ".join(str(w["goodput_MBps"]) for w in done),
           "steady_write_MBps_median": statistics.median(w["goodput_MBps"] for w in done) if done else "",
           "steady_write_retransmits": run_total(done, "retransmits"),
           "steady_write_timeouts": run_total(done, "timeouts"),
           "roce_round_ratios": " ".join(map(str, ratios)),
           "write_over_ceiling": " ".join(str(w["goodput_MBps"]) for w in over_ceiling(done, roce)),
           "roce_ratio_median": round(statistics.median(ratios), 3) if ratios else ""}
    ceil_rows.append(row)
    progress("bench", f"  link ceiling {frame} B: {row['payload_MBps_median']} MB/s payload (median of "
             f"{row['all_payload_MBps']}); RoCE frame ceiling {row['roce_payload_MBps_median']} MB/s "
             f"(median of {row['roce_all_payload_MBps']}); steady 64 KiB WRITE {row['steady_write_MBps']} MB/s, "
             f"rounds' ratios to the RoCE ceiling {row['roce_round_ratios']}"
             + (f"; ABOVE EVERY CEILING ROUND: WRITE {row['write_over_ceiling']} MB/s"
                if row["write_over_ceiling"] else ""))


def over_ceiling(writes, roce):
    """The steady WRITEs faster than every RoCE ceiling round: beyond the
    ceiling's own spread, so the ceiling did not bound them (a ceiling the
    transport beats is not a ceiling: bench/results/link-summary.md)."""
    top = max((r["payload_MBps"] for r in roce), default=None)
    return [w for w in writes if top is not None and w["goodput_MBps"] > top]


def steady_iters(roce_MBps, seconds):
    """64 KiB WRITEs that take about `seconds` at roce_MBps (10^6 B/s), at
    least the 128 the size sweep runs."""
    return max(128, int(seconds * roce_MBps * 1e6 / 65536))


def configs(quick):
    pow2 = [1 << k for k in range(1, 24)]
    if quick:
        pow2 = [2, 256, 4096, 65536, MIB]
    yield {"name": "mtu1024", "mtu": 1024, "loss": 0, "sr": 0, "sizes": pow2, "extra": True}
    yield {"name": "mtu4096", "mtu": 4096, "loss": 0, "sr": 0, "sizes": [4096, 65536, MIB, 8 * MIB]}
    for mtu in (1024, 4096):
        for sr in (1, 0):
            yield {"name": f"{'sr' if sr else 'gbn'}-mtu{mtu}", "mtu": mtu, "loss": 0, "sr": sr,
                   "interleaved": True, "losses": [0, 0.1, 1, 5], "sizes": [65536, MIB]}
    yield {"name": "latency-default", "mtu": 1024, "loss": 0, "latency": True, "cpus": 2}
    yield {"name": "latency-tuned", "mtu": 1024, "loss": 0, "latency": True, "cpus": 1,
           "append": "itr=0", "nic_opts": ",mitigation=off"}


def run_total(runs, key):
    """The sum of key over runs; None when there are none or a run did not
    say (None or an empty CSV cell)."""
    vals = [x.get(key) for x in runs]
    return None if not runs or any(v in (None, "") for v in vals) else sum(int(v) for v in vals)


def drop_sums(runs):
    """Frames the requester (the client guest) dropped over all of a cell's
    runs: its QP's counter and its NIC's; and the duplicates its QP received
    (late copies of retransmissions: received, not lost)."""
    return {"dropped_all": run_total(runs, "dropped"), "nic_dropped_all": run_total(runs, "nic_dropped"),
            "dup_all": run_total(runs, "dup")}


def run_bw(tb, c, op, size, budget, bw_rows, log):
    n = iters_for(size, budget)
    # The sizes behind the ratios run REPEATS times (the median
    # counts): single runs swing with the host's load.
    reps = REPEATS if op == "write" and size in (65536, MIB) else 1
    runs = [r for r in (bw(tb, op, size, n, c["sr"], log) for _ in range(reps)) if r]
    if not runs:
        return
    runs.sort(key=lambda x: x["bw_avg_MiBps"])
    r = runs[len(runs) // 2]
    row = {"config": c["name"], "mtu": c["mtu"], "loss_pct": c["loss"], "sr": c["sr"], "op": op,
           "size": size, "iters": n, "runs": len(runs),
           "all_avg_MiBps": " ".join(str(x["bw_avg_MiBps"]) for x in runs), **r, **drop_sums(runs),
           "goodput_MBps": round(r["bw_avg_MiBps"] * MIB / 1e6, 3)}
    bw_rows.append(row)
    progress("bench", f"  {op} {size} B x{n}: {r['bw_avg_MiBps']} MB/s (2^20) avg (median of "
             f"{row['all_avg_MiBps']}), peak {r['bw_peak_MiBps']}, retx {r.get('retransmits')} "
             f"timeouts {r.get('timeouts')}")


def round_ratios(runs, clean):
    """Each round's run over the lossless run of the same round (same size
    and operation), in round order: a slow spell of the host, which moves
    every run of its round, cancels out of its round's ratio."""
    base = {x["round"]: x["bw_avg_MiBps"] for x in clean}
    return [round(x["bw_avg_MiBps"] / base[x["round"]], 3) for x in runs if base.get(x["round"])]


def run_interleaved(tb, c, seed, budget, bw_rows, log):
    """Loss levels in turn on one pair of guests (linkemu's control socket
    changes the link between runs), LOSS_ROUNDS rounds: a ratio to the lossless
    runs then compares runs minutes apart at most, under the same host load."""
    runs = {}
    for rnd in range(LOSS_ROUNDS):
        for loss in c["losses"]:
            tb.set_spec("both", f"loss {loss:g}% seed {seed + rnd}")
            log.append(f"## {c['name']}: round {rnd + 1}, link loss {loss:g}%\n")
            for size in c["sizes"]:
                # Twice (64 KiB) or three times (1 MiB) the budget: a run of
                # 8 messages of 1 MiB lasted 0.4 s, and one slow repair at
                # its tail moved a ratio by 0.1.
                # Selective repeat keeps the whole budget at 5 %: a run of
                # 12 READs of 1 MiB (0.15 s) moved its round's ratio by
                # 0.2 with one slow spell of the host; go-back-N halves it
                # (its 5 % runs are slow enough as it is).
                b = budget * (3 if size >= MIB else 2)
                n = iters_for(size, b if loss < 5 or c["sr"] else b // 2)
                # 1 MiB READs too: the READ window under loss ([REQ-READ-6])
                for op in ("write", "read") if size == MIB else ("write",):
                    r = bw(tb, op, size, n, c["sr"], log)
                    if r:
                        runs.setdefault((loss, size, op), []).append(dict(r, iters=n, round=rnd))
    for (loss, size, op), rs in sorted(runs.items()):
        rounds = round_ratios(rs, runs.get((0, size, op), []))
        rs.sort(key=lambda x: x["bw_avg_MiBps"])
        r = rs[len(rs) // 2]
        bw_rows.append({"config": c["name"], "mtu": c["mtu"], "loss_pct": loss, "sr": c["sr"], "op": op,
                        "size": size, "runs": len(rs), "all_avg_MiBps": " ".join(str(x["bw_avg_MiBps"]) for x in rs),
                        **r, **drop_sums(rs), "goodput_MBps": round(r["bw_avg_MiBps"] * MIB / 1e6, 3),
                        "round_ratios": " ".join(map(str, rounds)),
                        "ratio_median": statistics.median(rounds) if rounds else ""})
        progress("bench", f"  {c['name']} loss {loss:g}% {op.upper()} {size} B: {r['bw_avg_MiBps']} MB/s (2^20), "
                 f"median of {len(rs)}, retx {r.get('retransmits')} timeouts {r.get('timeouts')}")


LAT_ROUNDS = 5


def median_of(rows, key):
    """The median of rows' values for key, to two decimals."""
    return round(statistics.median(q[key] for q in rows), 2)


def run_latency(tb, c, lat_rows, log, quick):
    """rdma_lat 2 B once; then 256 B and the raw link's echo in alternating
    rounds, so that a slow spell of the host (the link's own one-way time
    moves by 2x between minutes here) lands on both sides of the ratio.
    The rows give medians over the rounds; ratio_median is the median of
    the rounds' own ratios."""
    iters = 300 if quick else 1000
    r = lat(tb, "write", 2, iters, log)
    if r:
        lat_rows.append({"config": c["name"], "what": "rdma_lat -e write 2 B", "size": 2, **r})
        progress("bench", f"  rdma_lat -e write 2 B: t_typical {r['t_typical_us']} us")
    start_echo(tb)
    rdma, raw = [], []
    for k in range(LAT_ROUNDS):
        x, y = lat(tb, "write", 256, iters // LAT_ROUNDS, log), raw_latency(tb, log, iters // LAT_ROUNDS)
        if not x or not y:
            continue
        rdma.append(x)
        raw.append(y)
        progress("bench", f"  round {k + 1}/{LAT_ROUNDS}: rdma_lat -e write 256 B t_typical {x['t_typical_us']} us, "
                          f"raw one-way median {y['one_way_median_us']} us")
    if not rdma:
        return
    ratios = [round(x["t_typical_us"] / y["one_way_median_us"], 3) for x, y in zip(rdma, raw)]
    lat_rows.append({"config": c["name"], "what": "rdma_lat -e write 256 B", "size": 256,
                     "rounds": len(rdma), **{k: median_of(rdma, k) for k in rdma[0]},
                     "t_min_us": min(q["t_min_us"] for q in rdma), "t_max_us": max(q["t_max_us"] for q in rdma),
                     "ratio_median": statistics.median(ratios), "ratios": " ".join(map(str, ratios)),
                     "round_t_typical_us": " ".join(str(q["t_typical_us"]) for q in rdma)})
    lat_rows.append({"config": c["name"], "what": "raw link one-way (nettest lat 18 B)", "size": 18,
                     "rounds": len(raw), "t_typical_us": median_of(raw, "one_way_median_us"),
                     "t_min_us": min(q["one_way_min_us"] for q in raw), "t_avg_us": median_of(raw, "one_way_avg_us"),
                     "round_t_typical_us": " ".join(str(q["one_way_median_us"]) for q in raw)})


def run_config(c, seed, rows, log, quick):
    bw_rows, lat_rows, ceil_rows = rows
    spec = f"loss {c['loss']:g}% seed {seed}" if c["loss"] else None
    append = " ".join(x for x in (f"rdma_mtu={c['mtu']}" if c["mtu"] != 1024 else "", c.get("append", "")) if x)
    progress("bench", f"config {c['name']}: link {spec or 'lossless'}, path MTU {c['mtu']}, "
             f"{'latency' if c.get('latency') else 'selective repeat' if c['sr'] else 'go-back-N'}")
    budget = (MIB if c["loss"] >= 5 else 2 * MIB) if quick else (4 * MIB if c["loss"] >= 5 else 8 * MIB)
    with Testbed(2, both=spec, name=f"rdmabench-{c['name']}", extra_append=append,
                 cpus=c.get("cpus", 2), nic_opts=c.get("nic_opts", "")) as tb:
        tb.boot()
        log.append(f"## {c['name']}: link {spec or 'lossless'}, path MTU {c['mtu']}, "
                   f"boot arguments '{append}', {c.get('cpus', 2)} vCPUs\n")
        if c.get("latency"):
            run_latency(tb, c, lat_rows, log, quick)
        elif c.get("interleaved"):
            run_interleaved(tb, c, seed, budget, bw_rows, log)
        else:
            if not c["loss"]:
                ceiling(tb, c["name"], FRAME[c["mtu"]], 2 if quick else 4, c, ceil_rows, log)
            ops = [("write", s) for s in c["sizes"]]
            if c.get("extra"):
                ops += [(op, s) for op in ("read", "send") for s in (2, 4096, 65536, MIB)]
            for op, size in ops:
                run_bw(tb, c, op, size, budget, bw_rows, log)
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


def plots(out, bw_rows, ceil_rows):
    """PNGs from the rows; without matplotlib here, the Debian python3 redraws them from the CSVs."""
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
    colors = {"mtu1024": "tab:blue", "mtu4096": "tab:orange"}
    for cfg, color in colors.items():
        pts = [(r["size"], r["goodput_MBps"]) for r in bw_rows if r["config"] == cfg and r["op"] == "write"]
        if pts:
            ax.plot(*zip(*pts), marker="o", color=color, label=f"WRITE, path MTU {cfg[3:]}, lossless")
        for c in ceil_rows:
            if c["config"] == cfg:
                ax.axhline(c["payload_MBps_median"], linestyle=":", color=color)
                ax.text(2, c["payload_MBps_median"], f"link ceiling, {c['frame_bytes']}-byte frames "
                        "(kernel burst, same run)", fontsize=8, va="bottom", color=color)
    for op in ("read", "send"):
        pts = [(r["size"], r["goodput_MBps"]) for r in bw_rows if r["config"] == "mtu1024" and r["op"] == op]
        if pts:
            ax.plot(*zip(*pts), marker=".", linestyle="--", label=f"{op.upper()}, MTU 1024")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("goodput (MB/s, 10^6)")
    ax.set_title("rdma_bw -e between two xv6-rdma guests (QEMU TCG, linkemu)")
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "rdma-bw.png"), dpi=100)
    fig, axes = plt.subplots(1, 2, figsize=(12, 5), sharey=False)
    for ax, mtu in ((axes[0], 1024), (axes[1], 4096)):
        for op, size in (("write", 65536), ("write", MIB), ("read", MIB)):
            for sr in (0, 1):
                cfg = f"{'sr' if sr else 'gbn'}-mtu{mtu}"
                pts = sorted((r["loss_pct"], r["goodput_MBps"]) for r in bw_rows
                             if r["config"] == cfg and r["size"] == size and r["op"] == op)
                if len(pts) > 1:
                    ax.plot(*zip(*pts), marker="o", linestyle="-" if sr else "--",
                            label=f"{op.upper()} {size} B, {'SR' if sr else 'GBN'}")
        ax.set_xlabel("random loss per direction (%)")
        ax.set_ylabel("goodput (MB/s, 10^6)")
        ax.set_title(f"path MTU {mtu}: go-back-N (dashed), selective repeat (solid)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "rdma-loss.png"), dpi=100)


def summary(out, rows, seed, cmd, took):
    bw_rows, lat_rows, ceil_rows = rows

    def row(cfg, size, op="write", loss=0):
        return next((r for r in bw_rows if r["config"] == cfg and r["size"] == size and r["op"] == op
                     and float(r["loss_pct"]) == loss), {})

    def g(cfg, size, op="write", loss=0):
        return row(cfg, size, op, loss).get("goodput_MBps")

    def ratio(a, b):
        return f"{a / b:.2f}" if a is not None and b else "n/a"

    def ceil_of(cfg):
        return next((c for c in ceil_rows if c["config"] == cfg), None)

    L = [f"# RDMA benchmarks (make bench-rdma)\n",
         f"Command: `{cmd}`, seed {seed}, {took / 60:.1f} minutes, finished "
         f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, host load average "
         f"{os.getloadavg()[0]:.2f}. Two guests (QEMU TCG) through linkemu on a 2-core host; every tool "
         f"ran with -e (sleeping, not polling) and rdma_cm's default transport settings. Goodput is "
         f"rdma_bw's BW average in MB = 10^6 bytes, the median of {REPEATS} runs for 64 KiB and 1 MiB. "
         f"Data: rdma-bw.csv, rdma-lat.csv, rdma-ceiling.csv, rdma-perf.txt (the tools' tables), "
         f"rdma-bw.png, rdma-loss.png.\n"]
    L.append("## Ratios the issue asks about\n")
    L.append("| ratio | value | goal |\n| --- | ---: | --- |")
    for mtu in (1024, 4096):
        c = ceil_of(f"mtu{mtu}")
        w = g(f"mtu{mtu}", 65536)
        cv = c["payload_MBps_median"] if c else None
        L.append(f"| path MTU {mtu}: 64 KiB WRITE goodput / link ceiling at {FRAME[mtu]}-byte frames, same "
                 f"guests ({w} / {cv} MB/s) | {ratio(w, cv)} | >= 0.80 |")
    for mtu in (1024, 4096):
        c = ceil_of(f"mtu{mtu}") or {}
        L.append(f"| path MTU {mtu}: steady 64 KiB WRITE goodput / RoCE frame ceiling (ICRC + copy) at "
                 f"{FRAME[mtu]}-byte frames, each round's WRITE right after its burst, median of the rounds' "
                 f"ratios ({c.get('roce_round_ratios')}; WRITE {c.get('steady_write_MBps')} MB/s, "
                 f"ceiling {c.get('roce_all_payload_MBps')} MB/s)"
                 + (f"; **flagged: WRITE {c['write_over_ceiling']} MB/s above every ceiling round**"
                    if c.get("write_over_ceiling") else "")
                 + f" | {c.get('roce_ratio_median') or 'n/a'} | >= 0.80 |")
    for mtu in (1024, 4096):
        for loss, goal in ((1, "0.90"), (5, "0.70")):
            for size in (65536, MIB):
                base, v = g(f"sr-mtu{mtu}", size), g(f"sr-mtu{mtu}", size, loss=loss)
                gbase, gv = g(f"gbn-mtu{mtu}", size), g(f"gbn-mtu{mtu}", size, loss=loss)
                L.append(f"| path MTU {mtu}: SR at {loss} % loss / SR lossless, WRITE {size} B ({v} / {base} MB/s; "
                         f"go-back-N {ratio(gv, gbase)}) | {ratio(v, base)} | >= {goal} |")
    for mtu in (1024, 4096):
        for loss, goal in ((1, "0.90"), (5, "0.80")):
            base, v = g(f"sr-mtu{mtu}", MIB, "read"), g(f"sr-mtu{mtu}", MIB, "read", loss)
            gbase, gv = g(f"gbn-mtu{mtu}", MIB, "read"), g(f"gbn-mtu{mtu}", MIB, "read", loss)
            L.append(f"| path MTU {mtu}: SR at {loss} % loss / SR lossless, READ {MIB} B ({v} / {base} MB/s; "
                     f"go-back-N {ratio(gv, gbase)}) | {ratio(v, base)} | >= {goal} |")
        r, w = g(f"gbn-mtu{mtu}", MIB, "read"), g(f"gbn-mtu{mtu}", MIB)
        L.append(f"| path MTU {mtu}: READ / WRITE lossless, {MIB} B, go-back-N ({r} / {w} MB/s) | "
                 f"{ratio(r, w)} | >= 0.90 |")
    for cfg in ("latency-tuned", "latency-default"):
        l256 = next((r for r in lat_rows if r["config"] == cfg and r["what"] == "rdma_lat -e write 256 B"), None)
        raw = next((r for r in lat_rows if r["config"] == cfg and r["what"].startswith("raw link")), None)
        if l256 and raw:
            L.append(f"| {cfg}: 256 B WRITE t_typical (us) | {l256['t_typical_us']} | < 500 |")
            L.append(f"| {cfg}: 256 B WRITE t_typical / raw one-way median, median of {l256.get('rounds')} "
                     f"alternating rounds ({l256.get('ratios')}; raw {raw['t_typical_us']} us) | "
                     f"{l256.get('ratio_median')} | <= 1.5 |")
    L.append("""
How these are measured:

- The link ceiling is what the receiving guest takes in when the sending
  guest's kernel sends one prebuilt UDP datagram of the same frame size as
  fast as its NIC ring allows (nettest kblast / kcount, see
  bench/results/link-summary.md), guest 1 to guest 0 like the RDMA data,
  median of 5, measured in the same pair of guests just before the RDMA
  runs. Its payload per frame is 16 bytes more than RDMA's (no BTH/ICRC).
- The RoCE frame ceiling is the same burst, alternating with it run by
  run, to NET_ROCE_SINK_PORT: every frame pays the per-byte work of a
  RoCEv2 frame with a software ICRC (the sender computes each copy's ICRC
  with the transport core's code, the receiving kernel verifies it and
  copies the payload into a buffer), but no transport state, ACKs or
  completions. Its payload is RDMA's (frame - 58 bytes). Each round takes
  the most the receiver took in, open-loop or paced to 1.2 / 1.5 / 2 times
  the open-loop rate (an open-loop burst overdrives the receiver and the
  host drops what it cannot take: ceiling-notes.md); a WRITE round above
  every ceiling round is flagged (write_over_ceiling). Each of its
  rounds is followed by a 64 KiB WRITE sized to last about as long as the
  burst (at least 128 WRITEs); the steady WRITE / RoCE ceiling ratio is
  the median of the rounds' own ratios.
- SR and go-back-N under loss: one pair of guests per mode and MTU; the
  link's loss changes between runs through linkemu's control socket
  (0, 0.1, 1, 5 % in turn, 5 rounds, medians), so each ratio compares runs
  made minutes apart at most, under the same host load. Each run moves
  16 MiB in 64 KiB messages or 24 MiB in 1 MiB ones (go-back-N half that
  at 5 %).
- rdma_lat's t_typical is half the median round trip of a WRITE ping-pong
  (perftest's convention); the raw one-way latency is half the median round
  trip of an 18-byte UDP echo between the same two guests. The 256-byte
  WRITE and the echo run in 5 alternating rounds (200 round trips each, the
  host's slow spells move both); the rows give the medians over the rounds,
  the ratio is the median of the rounds' own ratios. Timestamps are
  user-mode `rdtime` reads (user/lib/c/clock.c), not system calls.
- latency-tuned: 1 vCPU per guest, E1000 ITR 0 and QEMU's e1000 interrupt
  mitigation off (ethtool -C rx-usecs 0 on a real host); latency-default:
  2 vCPUs, ITR 250 us, where an ACK that arrives just before the answering
  WRITE opens a moderation window that the WRITE then waits out.
""")
    L.append("## Link ceiling (same run)\n")
    L.append("| config | frame B | frames/s | payload MB/s | runs (payload MB/s) | RoCE frames/s | "
             "RoCE payload MB/s | RoCE runs (payload MB/s) |\n| --- | ---: | ---: | ---: | --- | ---: | ---: | --- |")
    for c in ceil_rows:
        L.append(f"| {c['config']} | {c['frame_bytes']} | {c['recv_fps_median']} | {c['payload_MBps_median']} | "
                 f"{c['all_payload_MBps']} | {c.get('roce_recv_fps_median')} | "
                 f"{c.get('roce_payload_MBps_median')} | {c.get('roce_all_payload_MBps')} |")
    L.append("\n## WRITE goodput by size (lossless)\n")
    L.append("| size | MTU 1024 MB/s | MTU 4096 MB/s |\n| ---: | ---: | ---: |")
    for size in sorted({r["size"] for r in bw_rows if r["config"] in ("mtu1024", "mtu4096") and r["op"] == "write"}):
        L.append(f"| {size} | {g('mtu1024', size)} | {g('mtu4096', size)} |")
    L.append("\n## READ and SEND (lossless, MTU 1024)\n")
    L.append("| size | READ MB/s | SEND MB/s |\n| ---: | ---: | ---: |")
    for size in (2, 4096, 65536, MIB):
        L.append(f"| {size} | {g('mtu1024', size, 'read')} | {g('mtu1024', size, 'send')} |")
    L.append("\n## Under loss (medians of 3 interleaved rounds)\n")
    L.append("| path MTU | loss % | op | size | go-back-N MB/s | selective repeat MB/s | SR retransmits / timeouts (median run) |\n"
             "| ---: | ---: | --- | ---: | ---: | ---: | --- |")
    for mtu in (1024, 4096):
        for loss in (0, 0.1, 1, 5):
            for op, size in (("write", 65536), ("write", MIB), ("read", MIB)):
                sr = row(f"sr-mtu{mtu}", size, op, loss)
                L.append(f"| {mtu} | {loss:g} | {op.upper()} | {size} | {g(f'gbn-mtu{mtu}', size, op, loss)} | "
                         f"{sr.get('goodput_MBps')} | {sr.get('retransmits')} / {sr.get('timeouts')} |")
    L.append("\n## Latency\n")
    L.append("| config | what | t_min us | t_typical us | t_avg us | p99 us |\n| --- | --- | ---: | ---: | ---: | ---: |")
    for r in lat_rows:
        L.append(f"| {r['config']} | {r['what']} | {r.get('t_min_us')} | {r.get('t_typical_us')} | "
                 f"{r.get('t_avg_us')} | {r.get('p99_us', '')} |")
    with open(os.path.join(out, "rdma-summary.md"), "w") as f:
        f.write("\n".join(L) + "\n")
    print("\n".join(L))


def read_csv(path, ints=(), floats=()):
    rows = list(csv.DictReader(open(path))) if os.path.exists(path) else []
    for r in rows:
        for k in ints:
            r[k] = int(r[k])
        for k in floats:
            r[k] = float(r[k])
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "results"))
    ap.add_argument("--quick", action="store_true", help="fewer sizes and bytes")
    ap.add_argument("--seed", type=int, default=int(os.environ.get("BENCH_SEED", 7)))
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--plot-only", action="store_true", help="redraw the PNGs from the CSVs in --out")
    args = ap.parse_args()
    if args.plot_only:
        bw_rows = read_csv(os.path.join(args.out, "rdma-bw.csv"), ("size", "mtu", "sr"), ("loss_pct", "goodput_MBps"))
        ceil_rows = read_csv(os.path.join(args.out, "rdma-ceiling.csv"), ("frame_bytes",), ("payload_MBps_median",))
        plots(args.out, bw_rows, ceil_rows)
        return 0
    t0 = time.monotonic()
    progress("bench", f"seed {args.seed}")
    rows, log = ([], [], []), []
    failed = 0
    for c in configs(args.quick):
        if args.only and c["name"] not in args.only:
            continue
        try:
            run_config(c, args.seed, rows, log, args.quick)
        except GuestError as e:
            failed += 1
            progress("bench", f"config {c['name']}: guest error: {e}")
            log.append(f"config {c['name']}: guest error: {str(e)[:300]}\n")
    os.makedirs(args.out, exist_ok=True)
    for name, r in zip(("rdma-bw.csv", "rdma-lat.csv", "rdma-ceiling.csv"), rows):
        write_csv(os.path.join(args.out, name), r)
    with open(os.path.join(args.out, "rdma-perf.txt"), "w") as f:
        f.write("# rdma_bw / rdma_lat tables from bench/rdma/rdma_sweep.py (perftest's columns, MB = 2^20)\n\n")
        f.write("\n".join(log))
    plots(args.out, rows[0], rows[2])
    summary(args.out, rows, args.seed, "make bench-rdma" + (" (--quick)" if args.quick else ""),
            time.monotonic() - t0)
    return 0 if failed == 0 and rows[0] else 1


if __name__ == "__main__":
    sys.exit(main())
