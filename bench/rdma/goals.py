#!/usr/bin/env python3
"""goals.py: the performance goals of `make bench`, checked in one table.

Owns the section "Goals of this run" at the top of
bench/results/rdma-summary.md (replaced in place). It measures nothing: it
reads what the other benches of the same `make bench` run wrote and puts
each goal beside its value:

  rdma-bw.csv, rdma-ceiling.csv   make bench-rdma  READ under loss, READ/WRITE,
                                                   requester drops, RoCE ceiling
  qp-scale.csv                    make bench-qp    256 busy QPs, 255 idle QPs
  rxe-compare.csv                 make bench-rxe   xv6 against Linux rxe
  lat-matrix.csv                  make bench-lat   the latency matrix
  sim-goodput.csv                 make bench-sim   the simulator's 100 Gb/s link

--since EPOCH (make bench passes its start time) marks every value read
from a file written before it as stale, so a table can only say "met" for
what this run measured.

Usage: python3 bench/rdma/goals.py [--out bench/results] [--since EPOCH]
Python standard library only.
"""
import argparse
import csv
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import lat_matrix  # noqa: E402
import msgrate  # noqa: E402
import rxe_compare  # noqa: E402

MIB = 1 << 20
SECTION = "## Goals of this run (make bench)"
SECTION_END = "<!-- end of the goals table (bench/rdma/goals.py) -->"
ROCE_CEILING_GOAL = 0.90   # issue 40: steady 64 KiB WRITE and 1 MiB READ
SR_LOSS_GOALS = ((1.0, 0.90), (5.0, 0.80))   # (loss %, selective repeat's goodput / its lossless)
LAT_OVER_UDP_GOAL = 1.2    # issue 40: 256 B WRITE polling latency / raw UDP one-way


def num(v):
    """A CSV cell as a number (None when empty or not a number)."""
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


class Sources:
    """The run's CSV files, each read once, with its age checked."""

    def __init__(self, out, since):
        self.out, self.since, self.stale, self.missing = out, since, set(), set()

    def rows(self, name):
        path = os.path.join(self.out, name)
        if not os.path.exists(path):
            self.missing.add(name)
            return []
        if self.since and os.path.getmtime(path) < self.since:
            self.stale.add(name)
        with open(path, newline="") as f:
            return list(csv.DictReader(f))

    def tag(self, names):
        """The worst of the named files' states: missing, stale or "" (fresh)."""
        names = names.split(" + ")
        return ("missing" if any(n in self.missing for n in names) else
                "stale" if any(n in self.stale for n in names) else "")


class Table:
    def __init__(self, src):
        self.src, self.rows = src, []

    def add(self, what, value, goal, ok, source, detail=""):
        """ok: True / False / None (not measured); source: the file, or
        files joined by " + ", the value came from."""
        tag = self.src.tag(source)
        verdict = tag or ("n/a" if ok is None or value is None else "met" if ok else "missed")
        shown = "n/a" if value is None else (f"{value:.2f}" if isinstance(value, float) else str(value))
        self.rows.append((what + (f" ({detail})" if detail else ""), shown, goal, verdict, source))


def ratio(a, b):
    return a / b if a is not None and b else None


def bw_goals(t, src):
    rows = src.rows("rdma-bw.csv")

    def find(cfg, op, size, loss=0.0):
        return next((r for r in rows if r["config"] == cfg and r["op"] == op and int(r["size"]) == size
                     and num(r["loss_pct"]) == loss), None)

    def g(cfg, op, size, loss=0.0):
        r = find(cfg, op, size, loss)
        return num(r["goodput_MBps"]) if r else None

    # The median of the rounds' own ratios (rdma_sweep.round_ratios): the
    # lossy and the lossless run of one round are seconds apart, the
    # rounds minutes; the medians' ratio is shown beside it.
    # Issue 40: both the 64 KiB WRITE and the 1 MiB READ, both MTUs (they
    # replace rxe ratios at MTU 4096 that asked xv6 to beat its own
    # lossless goodput).
    for mtu in (1024, 4096):
        for op, size, what in (("write", 65536, "64 KiB WRITE"), ("read", MIB, "1 MiB READ")):
            base = g(f"sr-mtu{mtu}", op, size)
            for loss, goal in SR_LOSS_GOALS:
                row = find(f"sr-mtu{mtu}", op, size, loss)
                v, q = (num(row["goodput_MBps"]), num(row.get("ratio_median"))) if row else (None, None)
                t.add(f"{what}, selective repeat, {loss:g} % loss / lossless, MTU {mtu}", q, f">= {goal:.2f}",
                      q is not None and q >= goal, "rdma-bw.csv",
                      f"rounds {row.get('round_ratios') if row else '?'}; medians {v} / {base} MB/s")
    for mtu in (1024, 4096):
        r, w = g(f"sr-mtu{mtu}", "read", MIB), g(f"sr-mtu{mtu}", "write", MIB)
        q = ratio(r, w)
        t.add(f"1 MiB READ / 1 MiB WRITE, lossless, selective repeat, MTU {mtu}", q, ">= 0.90",
              q is not None and q >= 0.90, "rdma-bw.csv", f"{r} / {w} MB/s")
    clean = [r for r in rows if num(r["loss_pct"]) == 0]
    qp = [num(r.get("dropped_all")) for r in clean]
    nic = [num(r.get("nic_dropped_all")) for r in clean]
    dup = [num(r.get("dup_all")) for r in clean]
    known = clean and all(v is not None for v in qp + nic)
    total = int(sum(qp) + sum(nic)) if known else None
    reads = sum(1 for r in clean if r["op"] == "read")
    dups = f"; duplicates received {int(sum(dup))}" if clean and all(v is not None for v in dup) else ""
    t.add("frames the requester dropped, every lossless xv6-xv6 run", total, "0", total == 0 if known else None,
          "rdma-bw.csv", f"{len(clean)} cells ({reads} READ), QP {int(sum(qp)) if known else '?'}"
          f" + NIC {int(sum(nic)) if known else '?'}{dups}")
    ceil = {c["config"]: c for c in src.rows("rdma-ceiling.csv")}
    # Each round pairs a RoCE ceiling burst with a steady 64 KiB WRITE of
    # about the same length right after it (rdma_sweep.ceiling); the goal
    # is the median of the rounds' ratios.
    for mtu in (1024, 4096):
        c = ceil.get(f"mtu{mtu}", {})
        q = num(c.get("roce_ratio_median"))
        t.add(f"steady 64 KiB WRITE / RoCE frame ceiling, MTU {mtu}", q, f">= {ROCE_CEILING_GOAL:.2f}",
              q is not None and q >= ROCE_CEILING_GOAL, "rdma-ceiling.csv",
              f"rounds {c.get('roce_round_ratios', '?')}; WRITE {c.get('steady_write_MBps', '?')} / "
              f"ceiling {c.get('roce_all_payload_MBps', '?')} MB/s")
        # READ runs in the sweep, not beside the ceiling's rounds: medians.
        r, cm = g(f"sr-mtu{mtu}", "read", MIB), num(c.get("roce_payload_MBps_median"))
        q = ratio(r, cm)
        t.add(f"1 MiB READ / RoCE frame ceiling, MTU {mtu}", q, f">= {ROCE_CEILING_GOAL:.2f}",
              q is not None and q >= ROCE_CEILING_GOAL, "rdma-bw.csv, rdma-ceiling.csv",
              f"READ {r} / ceiling {cm} MB/s, medians of different runs")
        # A round faster than every ceiling round: the ceiling was no bound.
        over = c.get("write_over_ceiling")
        n = len(over.split()) if over is not None else None
        t.add(f"steady 64 KiB WRITE rounds above every RoCE ceiling round, MTU {mtu}", n, "0",
              n == 0 if n is not None else None, "rdma-ceiling.csv",
              f"WRITE {over} MB/s" if over else "the ceiling bounded every round" if over == "" else
              "no write_over_ceiling column (a file from before the flag)")


def qp_goals(t, src):
    rows = {(r["mode"], int(r["qps"])): r for r in src.rows("qp-scale.csv")}
    hi = max((n for _, n in rows), default=None)
    one, busy, idle = rows.get(("busy", 1)), rows.get(("busy", hi)), rows.get(("idle", hi))
    if not (one and busy and idle and hi > 1):
        t.add("QP scaling", None, "", None, "qp-scale.csv")
        return
    # The median of the rounds' own ratios (qp_scale.py pairs each round's
    # runs with that round's one-QP run), as for the loss goals; files
    # written before those columns existed give the medians' ratio.
    def paired(row, field, per_run):
        q = num(row.get(f"{field}_ratio_median"))
        if q is not None:
            return q, f"rounds {row.get(f'{field}_round_ratios')}; medians {row[per_run]} / {one[per_run]}"
        return ratio(num(row[per_run]), num(one[per_run])), f"{row[per_run]} / {one[per_run]}, medians"
    g, how = paired(busy, "bw", "bw_MiBps")
    t.add(f"goodput, {hi} busy QPs / 1 QP", g, ">= 0.90", g is not None and g >= 0.90, "qp-scale.csv",
          how + " MiB/s")
    c, how = paired(idle, "cpu", "cpu_us_per_frame")
    t.add(f"CPU per frame, 1 busy + {hi - 1} idle QPs / 1 QP", c, "<= 1.10", c is not None and c <= 1.10,
          "qp-scale.csv", how + " us")


# (cell, loss %, goal, path MTUs). At MTU 4096 the WRITE goals under loss
# would need xv6 above its own lossless goodput (rxe-rxe 9.1 MB/s at 1 %:
# x10 is 91 against xv6's lossless 79); SR_LOSS_GOALS and the ceiling
# goals stand there instead (issue 40).
RXE_GOALS = (("WRITE 64 KiB", 0, 1.5, (1024, 4096)), ("WRITE 64 KiB", 1, 10, (1024,)),
             ("WRITE 64 KiB", 5, 50, (1024,)), ("READ 1 MiB", 1, 10, (1024, 4096)))


def rxe_goals(t, src):
    """One row per goal and bench-rxe bed (path MTU): each bed is its own
    comparison, neither stands in for the other."""
    rows = [dict(r, path_mtu=int(r.get("path_mtu") or rxe_compare.BEDS[0][0]), loss_pct=int(r["loss_pct"]),
                 goodput_MBps=float(r["goodput_MBps"]))
            for r in src.rows("rxe-compare.csv") if num(r["goodput_MBps"]) is not None]
    meds = rxe_compare.medians(rows)
    for mtu, _ in rxe_compare.BEDS:
        for cell, loss, goal, mtus in RXE_GOALS:
            if mtu not in mtus:
                continue
            x, r = meds.get((mtu, loss, cell, "sr"), (None,))[0], meds.get((mtu, loss, cell, "rxe"), (None,))[0]
            q = ratio(x, r)
            t.add(f"{cell}, xv6 selective repeat / rxe-rxe, {loss} % loss, path MTU {mtu}", q, f">= {goal}",
                  q is not None and q >= goal, "rxe-compare.csv",
                  f"{x and round(x, 2)} / {r and round(r, 2)} MB/s, medians")


# Issue 40's message-rate goals at 64 B, xv6 polling: (op, against, goal);
# against "ceiling" is the small-frame RoCE ceiling of the same run.
MSGRATE_GOALS = (("write", "ceiling", 0.6), ("write", "rxe", 5), ("send", "ceiling", 0.5), ("read", "rxe", 3))


def msgrate_goals(t, src):
    """bench-msgrate: 64 B message rates against the same run's rxe and
    small-frame RoCE ceiling, and no cell above every ceiling round."""
    rows = [dict(r, size=int(r["size"]), msgs_per_s=int(r["msgs_per_s"])) for r in src.rows("msgrate.csv")
            if r.get("msgs_per_s") not in ("", None)]
    ceil = [r["msgs_per_s"] for r in rows if r["op"] == "ceiling"]
    meds = msgrate.medians([r for r in rows if r["op"] != "ceiling"])
    c = statistics.median(ceil) if ceil else None
    for op, against, goal in MSGRATE_GOALS:
        x = meds.get((op, msgrate.CEIL_PAYLOAD, "poll"))
        y = c if against == "ceiling" else meds.get((op, msgrate.CEIL_PAYLOAD, "rxe"))
        q = ratio(x, y)
        t.add(f"64 B {op.upper()} message rate, xv6 polling / {'RoCE 64 B-frame ceiling' if against == 'ceiling' else 'rxe'}",
              q, f">= {goal}", q is not None and q >= goal, "msgrate.csv", f"{x} / {y} messages/s, medians")
    over = [f"{op} {size} B {tool}" for (op, size, tool), v in sorted(meds.items())
            if tool != "rxe" and msgrate.over_ceiling(size, v, ceil)]
    t.add("message-rate cells above every RoCE ceiling round", len(over) if rows else None, "0", not over,
          "msgrate.csv", ", ".join(over))


def lat_goals(t, src):
    ints = {"round", "size", "iters"} | set(lat_matrix.XV6_COUNTERS)
    rows = []
    for r in src.rows("lat-matrix.csv"):
        rows.append({k: (int(v) if k in ints and v not in ("", None) else
                         None if k in ints else num(v) if k.startswith("t_") else v) for k, v in r.items()})
    if not rows:
        t.add("latency matrix", None, "", None, "lat-matrix.csv")
        return
    res = lat_matrix.table(rows)
    cells = [(k, c) for k, c in sorted(res.items()) if "xv6" in c and "rxe" in c]
    ratios = [(ratio(c["xv6"]["t_typical_us"], c["rxe"]["t_typical_us"]), k) for k, c in cells]
    worst = max(ratios, key=lambda x: x[0] or 0, default=(None, None))
    fast = sum(1 for q, _ in ratios if q is not None and q <= lat_matrix.GOAL)
    t.add(f"latency cells with xv6 t_typical <= {lat_matrix.GOAL} x rxe's", f"{fast} of {len(cells)}", f"{len(cells)} of {len(cells)}",
          fast == len(cells), "lat-matrix.csv",
          f"worst {worst[0]:.2f}: {' '.join(map(str, worst[1]))}" if worst[0] else "")
    # Issue 40: the 256 B WRITE polling latency against the raw UDP one-way
    # latency (bench-link's echoes; half their round trip), medians.
    w = res.get(("WRITE", 256, "poll"), {}).get("xv6", {}).get("t_typical_us")
    udp = next((num(r["one_way_median_us"]) for r in src.rows("link-latency.csv")), None)
    q = ratio(w, udp)
    t.add(f"256 B WRITE polling t_typical / raw UDP one-way latency", q, f"<= {LAT_OVER_UDP_GOAL}",
          q is not None and q <= LAT_OVER_UDP_GOAL, "lat-matrix.csv, link-latency.csv",
          f"{w} / {udp} us, medians of different benches")
    for what, keys in (("timeouts", ("timeouts",)), ("RNR NAKs and RNR waits", ("tx_rnr_naks", "rnr_timeouts"))):
        per_cell = {k: sum(c["xv6"][f"{s}_{x}"] for s in ("cli", "srv") for x in keys) for k, c in cells}
        bad = [" ".join(map(str, k)) for k, v in per_cell.items() if v]
        t.add(f"xv6 {what} in the latency runs (lossless link, both sides)", sum(per_cell.values()), "0",
              not bad, "lat-matrix.csv", f"in {len(bad)} of {len(cells)} cells" + (f": {', '.join(bad)}" if bad else ""))


def sim_goals(t, src):
    rows = src.rows("sim-goodput.csv")

    def f(op, size, loss):
        r = next((r for r in rows if r["link"] == "100g" and r["mode"] == "sr" and r.get("op", "WRITE") == op
                  and int(r["size"]) == size and num(r["loss_pct"]) == loss), None)
        return num(r["fraction_of_lossless"]) if r else None

    for op, size, loss, goal in (("WRITE", 65536, 5.0, 0.80), ("WRITE", MIB, 5.0, 0.80),
                                 ("READ", MIB, 1.0, 0.90), ("READ", MIB, 5.0, 0.80)):
        v = f(op, size, loss)
        t.add(f"simulator, 100 Gb/s: {op} {size // 1024} KiB selective repeat, {loss:g} % loss / lossless", v,
              f">= {goal:.2f}", v is not None and v >= goal, "sim-goodput.csv")


def section(t, since):
    met = sum(1 for r in t.rows if r[3] == "met")
    L = [SECTION, "",
         f"Written by bench/rdma/goals.py at {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} from the "
         "files the benches of one `make bench` run wrote" +
         (f" (started {time.strftime('%H:%M UTC', time.gmtime(since))})" if since else "") +
         f"; {met} of {len(t.rows)} goals met. A value from a file older than the run says \"stale\". "
         "The sections below and the files named give how each was measured.", "",
         "| goal | value | target | verdict | from |", "| --- | ---: | --- | --- | --- |"]
    L += [f"| {w} | {v} | {g} | {'**' + k + '**' if k == 'missed' else k} | {s} |" for w, v, g, k, s in t.rows]
    L += ["", SECTION_END]
    return "\n".join(L) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "results"))
    ap.add_argument("--since", type=float, default=0, help="the run's start (epoch seconds)")
    args = ap.parse_args()
    src = Sources(args.out, args.since)
    t = Table(src)
    for part in (bw_goals, qp_goals, rxe_goals, msgrate_goals, lat_goals, sim_goals):
        part(t, src)
    text = section(t, args.since)
    rxe_compare.write_summary(args.out, text, SECTION, SECTION_END, at_top=True)
    print(text, end="")


if __name__ == "__main__":
    main()
