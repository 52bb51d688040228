#!/usr/bin/env python3
"""demo.py: the project's main job, end to end (make demo).

Two guests on one Ethernet link through linkemu with 1 % random loss in
each direction (seeded; the seed is printed, DEMO_SEED repeats a run).
Guest A makes a file of DEMO_SIZE pseudo-random bytes; then, once with
go-back-N and once with selective repeat (both by default), on the same
guests and link:
  - a file copy: guest B waits with `rdmacp recv`, A copies the file with
    `rdmacp send` (RDMA WRITE_WITH_IMM chunks into B's ring, credits back
    by SEND), and B checksums its copy with `rdmacp sum` against A's;
  - a memory-to-memory transfer: `rdma_bw -t write` of MEM_ITERS x
    MEM_SIZE bytes (no file system on either side), --stats.
The file copies prove the bytes arrive intact, but both run at the pace
of B's file system; the memory transfers show the transport itself. The
summary prints each copy's detail (QP counters, linkemu's drops), then one
table, the modes side by side: memory goodput, frames sent per data frame,
retransmissions, the link's drops during each run (linkemu's counters,
before/after deltas), the file copy's rate and checksum; then a one-line
conclusion computed from those numbers, and RESULT.

Usage: python3 tests/rdma/demo.py [--size SIZE] [--loss LOSS] [--seed N] [--mode gbn|sr|both] [--sr]
Environment: DEMO_SIZE, DEMO_LOSS, DEMO_SEED, DEMO_MODE (the same options);
DEMO_SR=1 means --mode sr and DEMO_SR=0 --mode gbn.
  LOSS  as linkemu writes it (netem/impair.c): a percentage "5%" or a
        fraction "0.05"; at most MAX_LOSS (a bare "1" is a fraction: 100 %)
  SIZE  bytes, or with KiB / MiB ("16MiB"); at most the largest file the
        guests' file system holds (kernel/lib/fs_format.h)
  SEED  0 .. 2^32 - 1
A bad value prints one line "demo: NAME=VALUE: why (expected ...)" and
exits 2 before any guest boots.
Exit status 0 only if every copy arrived intact and every memory transfer
completed.
"""
import argparse
import os
import random
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "net"))
sys.path.insert(0, os.path.join(HERE, "..", "harness"))
from launch import Testbed  # noqa: E402
from guest import GuestError, progress  # noqa: E402
import perftable  # noqa: E402

REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
MAX_LOSS = 0.10          # beyond 10 % go-back-N's copy of a 16 MiB file takes minutes
MEM_SIZE = 65536         # the memory transfer: rdma_bw -t write of MEM_ITERS x MEM_SIZE bytes
FS_BOUND = 0.8          # a file copy below 0.8 x its mode's memory rate is paced by the disk
MEM_ITERS = 1024         # 64 MiB: 2 s (selective repeat) to 10 s (go-back-N at 5 % loss)

QP_FIELDS = ("retx", "timeouts", "tx_nak", "rx_nak", "rx_dup", "rx_out_of_seq",
             "rx_out_of_window", "rx_dropped", "tx_frames", "rx_frames")


def qp_counters(text):
    """The 'rdmacp: qp ...' line as a dict (empty if missing)."""
    m = re.search(r"rdmacp: qp (0x[0-9a-f]+) sr (\w+) (.*)", text)
    if not m:
        return {}
    words = m.group(3).split()
    d = {words[i]: int(words[i + 1]) for i in range(0, len(words) - 1, 2)}
    d["qpn"], d["sr"] = m.group(1), m.group(2)
    return d


def checksum(text):
    m = re.search(r"(\d+) bytes, checksum ([0-9a-f]+)", text)
    return (int(m.group(1)), m.group(2)) if m else (None, None)


MODES = {"gbn": ("go-back-N", ""), "sr": ("selective repeat", " --sr")}   # name, rdmacp flag


def copy_once(tb, size, mode):
    """One rdmacp copy of /demo.bin from A to B in mode ("gbn" or "sr");
    B checksums its copy and deletes it. Returns what the summary needs."""
    a, b = tb.guests
    flags = MODES[mode][1]
    dest = f"demo-{mode}.bin"
    b.send(f"rdmacp recv{flags}")
    b.expect(r"rdmacp: waiting", timeout=60)
    progress("demo", f"{mode}: guest B ({tb.ip(1)}) waiting; A sends")
    before = tb.stats()
    t0 = time.monotonic()
    a.send(f"rdmacp send /demo.bin {tb.ip(1)} {dest}{flags}")
    sent = a.expect(r"rdmacp: (sent [^\n]*|[^\n]*)\n", timeout=1800)
    got = b.expect(r"rdmacp: (received [^\n]*|[^\n]*)\n", timeout=120)
    qa = a.expect(r"rdmacp: qp [^\n]*\n|\$ $", timeout=60).group(0)
    qb = b.expect(r"rdmacp: qp [^\n]*\n|\$ $", timeout=60).group(0)
    wall = time.monotonic() - t0
    a.expect(r"\$ $", timeout=60)
    b.expect(r"\$ $", timeout=60)
    progress("demo", f"{mode}: A: " + sent.group(0).strip())
    progress("demo", f"{mode}: B: " + got.group(0).strip())
    sum_b = checksum(b.run(f"rdmacp sum {dest}", timeout=600))
    b.run(f"rm {dest}", timeout=60)
    rate = re.search(r"\((\d+) KB/s\)", sent.group(0))
    return {"mode": mode, "sent": sent, "got": got, "qa": qa, "qb": qb, "wall": wall,
            "sum_b": sum_b, "kbs": int(rate.group(1)) if rate else None,
            "link": link_delta(before, tb.stats())}


def link_delta(before, after):
    """linkemu's per-direction counters for one copy (after minus before)."""
    out = []
    for d0, d1 in zip(before["directions"], after["directions"]):
        out.append({"name": d1["name"], "frames_in": d1["frames_in"] - d0["frames_in"],
                    "frames_out": d1["frames_out"] - d0["frames_out"],
                    "dropped": d1["dropped"]["total"] - d0["dropped"]["total"],
                    "random": d1["dropped"]["random"] - d0["dropped"]["random"]})
    return out


def mem_once(tb, mode):
    """One memory-to-memory rdma_bw WRITE from A (client) to B (server) in
    mode, the file copy's direction; returns its goodput, A's QP counters
    and linkemu's deltas."""
    a, b = tb.guests
    flags = MODES[mode][1]
    b.send("rdma_bw")
    b.expect(r"waiting for a client", timeout=60)
    progress("demo", f"{mode}: memory: rdma_bw -t write {MEM_ITERS} x {MEM_SIZE} bytes, A -> B")
    before = tb.stats()
    t0 = time.monotonic()
    out = a.run(f"rdma_bw -t write -s {MEM_SIZE} -n {MEM_ITERS} -e --stats{flags} {tb.ip(1)}", timeout=1800)
    wall = time.monotonic() - t0
    b.expect(r"\$ $", timeout=120)
    row = perftable.bw_row(out)
    progress("demo", f"{mode}: memory: " + (f"{row['bw_avg_MiBps']} MiB/s" if row else "no result: " + out.strip()[-300:]))
    return {"mode": mode, "row": row, "qp": perftable.qp_stats(out) or {}, "wall": wall, "out": out,
            "link": link_delta(before, tb.stats())}


def print_copy(r, size, sum_a):
    name, flags = MODES[r["mode"]]
    print(f"-- {name} (rdmacp{flags})")
    print(f"file            : {size} bytes, A checksum {sum_a[1]}, B checksum {r['sum_b'][1]} "
          f"({r['sum_b'][0]} bytes) -> {'MATCH' if sum_a == r['sum_b'] else 'MISMATCH'}")
    print(f"time            : {r['wall']:.1f} s host wall clock for send+verify at the receiver")
    if r["kbs"] is not None:
        print(f"throughput      : {r['kbs'] / 1000:.3f} MB/s (rdmacp, guest clock), "
              f"{size / r['wall'] / 1e6:.3f} MB/s (host wall clock)")
    for who, text in (("A (sender)", r["qa"]), ("B (receiver)", r["qb"])):
        c = qp_counters(text)
        if c:
            print(f"QP {who:12s}: qpn {c['qpn']} sr {c['sr']} frames tx {c['tx_frames']} rx {c['rx_frames']}; "
                  f"retransmissions {c['retx']}, timeouts {c['timeouts']}, NAKs tx {c['tx_nak']} "
                  f"rx {c['rx_nak']}, duplicates {c['rx_dup']}, out-of-sequence {c['rx_out_of_seq']}")
        else:
            print(f"QP {who:12s}: no counters printed")
    for d in r["link"]:
        print(f"linkemu {d['name']:8s}: frames in {d['frames_in']} out {d['frames_out']}, "
              f"dropped {d['dropped']} (random {d['random']})")


def copy_ok(r, size, sum_a):
    return (": OK" in r["sent"].group(1) and ": OK" in r["got"].group(1)
            and sum_a[0] == size and r["sum_b"] == sum_a)


def wire_cost(tx, retx):
    """Frames sent per data frame (tx / (tx - retransmissions)), or None."""
    return tx / (tx - retx) if tx and tx > retx else None


def table_rows(size, sum_a, copies, mems):
    """The summary table: (label, one cell per mode, note)."""
    def drops(r):
        return " / ".join(str(d["dropped"]) for d in r["link"])

    def cost(tx, retx):
        c = wire_cost(tx, retx)
        return f"{c:.2f}" if c else "?"
    mq = [m["qp"] for m in mems]
    cq = [qp_counters(r["qa"]) for r in copies]
    names = " / ".join(d["name"] for d in (mems or copies)[0]["link"])
    return [
        ("memory goodput (MB/s)", [f"{mb_s(m):.1f}" if m["row"] else "FAILED" for m in mems],
         f"rdma_bw -t write {MEM_ITERS} x {MEM_SIZE} B, guest clock"),
        ("  frames per data frame", [cost(q.get("tx_frames"), q.get("retransmits", 0)) for q in mq],
         "the sender's frames / (frames - retransmissions)"),
        ("  retransmissions", [str(q.get("retransmits", "?")) for q in mq], "the sender's QP"),
        ("  link drops", [drops(m) for m in mems], f"linkemu, {names}, during the run"),
        ("file copy (MB/s)", [f"{r['kbs'] / 1000:.2f}" if r["kbs"] is not None else "FAILED" for r in copies],
         f"rdmacp of {size} B, A's file to B's"),
        ("  frames per data frame", [cost(c.get("tx_frames"), c.get("retx", 0)) for c in cq], "A's QP"),
        ("  retransmissions", [str(c.get("retx", "?")) for c in cq], "A's QP"),
        ("  link drops", [drops(r) for r in copies], f"linkemu, {names}, during the copy"),
        ("  checksum", ["MATCH" if r["sum_b"] == sum_a else "MISMATCH" for r in copies], "B's copy against A's file"),
    ]


def mb_s(m):
    """rdma_bw's average (MiB/s, perftest's MB) in MB/s (10^6 bytes), as rdmacp's."""
    return m["row"]["bw_avg_MiBps"] * (1 << 20) / 1e6


def conclusion(loss, mems, copies):
    """One line from the numbers: what selective repeat keeps and go-back-N
    loses, and the file copies' rates beside them."""
    mem = {m["mode"]: mb_s(m) for m in mems if m["row"]}
    done = [r for r in copies if r["kbs"] is not None]
    if not done:
        return mem_conclusion(loss, mems)
    rates = " and ".join(f"{r['kbs'] / 1000:.2f} MB/s ({MODES[r['mode']][0]})" for r in done)
    # A copy well below its mode's memory rate waits for the disk, not the link.
    held = [r for r in done if r["mode"] in mem and r["kbs"] / 1000 < FS_BOUND * mem[r["mode"]]]
    why = ("below the memory rates: B's file system sets their pace" if len(held) == len(done) else
           "; ".join(f"{MODES[r['mode']][0]}'s near its memory rate: the transport holds it back"
                     for r in done if r not in held))
    return mem_conclusion(loss, mems) + f"; the file copies ran at {rates}, {why}"


def mem_conclusion(loss, mems):
    by = {m["mode"]: m for m in mems if m["row"]}
    if len(by) < 2:
        return ("; ".join(f"{MODES[m][0]} moved memory at {mb_s(r):.1f} MB/s" for m, r in by.items())
                + " (DEMO_MODE=both compares the two modes)")
    g, s = by["gbn"], by["sr"]
    rg, rs = mb_s(g), mb_s(s)
    cg = wire_cost(g["qp"].get("tx_frames"), g["qp"].get("retransmits", 0)) or 0
    cs = wire_cost(s["qp"].get("tx_frames"), s["qp"].get("retransmits", 0)) or 0
    at = f"at {loss * 100:g} % loss" if loss else "on a lossless link"
    if rs >= 1.2 * rg:
        return (f"{at} selective repeat moved memory {rs / rg:.1f}x as fast as go-back-N ({rs:.1f} against "
                f"{rg:.1f} MB/s), sending {cs:.2f} frames per data frame against {cg:.2f}: go-back-N resends "
                "the window behind every lost frame")
    if rg >= 1.2 * rs:
        return f"{at} go-back-N was faster ({rg:.1f} against {rs:.1f} MB/s): not what the transport should do"
    return (f"{at} both modes moved memory at about the same rate ({rs:.1f} and {rg:.1f} MB/s; frames per data "
            f"frame {cs:.2f} and {cg:.2f}): " + ("too few losses to tell them apart" if loss else "nothing lost, nothing to resend"))


def print_table(rows, modes):
    heads = [MODES[m][0] for m in modes]
    width = max(18, *(len(h) + 2 for h in heads))
    print(f"{'':24s}" + "".join(f"{h:>{width}s}" for h in heads))
    for label, cells, note in rows:
        print(f"{label:24s}" + "".join(f"{c:>{width}s}" for c in cells) + f"   {note}")


def run(size, loss, seed, modes):
    spec = f"loss {loss * 100:g}% seed {seed}" if loss else None
    progress("demo", f"link: {spec or 'no impairment'} both directions (seed {seed}); "
             f"file {size} bytes; " + " then ".join(modes) + f"; each mode also {MEM_ITERS} x {MEM_SIZE} "
             "bytes memory to memory")
    with Testbed(2, both=spec, name="demo") as tb:
        tb.boot()
        a, b = tb.guests
        progress("demo", f"guest A ({tb.ip(0)}): making /demo.bin")
        made = a.run(f"rdmacp mkfile /demo.bin {size} {seed}", timeout=600)
        progress("demo", made.strip())
        sum_a = checksum(a.run("rdmacp sum /demo.bin", timeout=600))
        copies, mems = [], []
        for m in modes:
            copies.append(copy_once(tb, size, m))
            mems.append(mem_once(tb, m))
        stat_b = b.run("rdmastat", timeout=30)
        tb.halt()
    ok = (checksum(made)[1] == sum_a[1] and all(copy_ok(r, size, sum_a) for r in copies)
          and all(m["row"] for m in mems))
    print()
    print("==== demo summary ====")
    print(f"link            : {spec or f'lossless (seed {seed})'} (linkemu, both directions); "
          "the runs share the link, one after the other")
    for r in copies:
        print_copy(r, size, sum_a)
    for m in mems:
        if not m["row"]:
            print(f"-- {MODES[m['mode']][0]} memory transfer FAILED:\n{m['out'].strip()[-600:]}")
    print()
    print_table(table_rows(size, sum_a, copies, mems), modes)
    print()
    print(f"conclusion      : {conclusion(loss, mems, copies)}")
    leftover = re.search(r"(\d+) QPs", stat_b)
    print(f"QPs left on B   : {leftover.group(1) if leftover else '?'} (rdmastat after the runs)")
    print(f"RESULT          : {'OK' if ok else 'FAILED'}")
    return ok


class BadValue(Exception):
    """A DEMO_* value (or option) that does not parse: str(e) says why."""


def parse_loss(text):
    """linkemu's loss grammar (impair_parse_percent): "N%" or a fraction;
    returns the fraction, at most MAX_LOSS."""
    expected = f"expected a percentage such as 5% or a fraction such as 0.05, at most {MAX_LOSS:.0%}"
    m = re.fullmatch(r"(\d+(?:\.\d*)?|\.\d+)(%?)", text.strip())
    if not m:
        raise BadValue(f"not a loss rate ({expected})")
    v = float(m[1]) / (100 if m[2] else 1)
    if v > MAX_LOSS:
        what = f"{v:.0%} loss" + ("" if m[2] else f" (a bare number is a fraction: write {m[1]}% for {m[1]} percent)")
        raise BadValue(f"{what}, above the demo's {MAX_LOSS:.0%} ({expected})")
    return v


def fs_max_file():
    """The largest file of the guests' file system (kernel/lib/fs_format.h)."""
    text = open(os.path.join(REPO, "kernel", "lib", "fs_format.h")).read()
    bsize = int(re.search(r"#define FS_BLOCK_SIZE\s+(\d+)", text)[1])
    ndirect = int(re.search(r"#define FS_NDIRECT\s+(\d+)", text)[1])
    per_block = bsize // 4                      # FS_NINDIRECT: block numbers are 4 bytes
    return (ndirect + per_block + per_block * per_block) * bsize


def parse_size(text):
    """Bytes, or N KiB / N MiB (also K, M); 1 .. the largest file."""
    units = {"": 1, "K": 1 << 10, "KiB": 1 << 10, "M": 1 << 20, "MiB": 1 << 20}
    top = fs_max_file()
    expected = f"expected bytes, or N KiB / N MiB such as 16MiB, 1..{top} bytes"
    m = re.fullmatch(r"(\d+)\s*([A-Za-z]*)", text.strip())
    if not m or m[2] not in units:
        raise BadValue(f"not a size ({expected})")
    v = int(m[1]) * units[m[2]]
    if not 1 <= v <= top:
        raise BadValue(f"{v} bytes is out of range: the guests' largest file is {top} bytes ({expected})")
    return v


def parse_seed(text):
    if not re.fullmatch(r"\d+", text.strip()) or int(text) >= 1 << 32:
        raise BadValue("not a seed (expected an integer 0..4294967295)")
    return int(text)


def parse_mode(text):
    if text not in ("gbn", "sr", "both"):
        raise BadValue("not a mode (expected gbn, sr or both)")
    return text


def settings(argv, env):
    """(size, loss fraction, seed, modes) from the options, else DEMO_*;
    BadValue names the one that does not parse."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size")
    ap.add_argument("--loss")
    ap.add_argument("--seed")
    ap.add_argument("--mode")
    ap.add_argument("--sr", action="store_const", const="sr", dest="mode", help="the same as --mode sr")
    ap.add_argument("--check", action="store_true", help="parse the settings, print them, boot nothing")
    args = ap.parse_args(argv)
    default_mode = env.get("DEMO_MODE", "both")
    if env.get("DEMO_SR", "") != "":           # the older switch: 1 = sr only, 0 = gbn only
        if env["DEMO_SR"] not in ("0", "1"):
            raise BadValue(f"DEMO_SR={env['DEMO_SR']}: not a switch (expected 0 or 1)")
        default_mode = "gbn" if env["DEMO_SR"] == "0" else "sr"
    values = []
    for opt, var, default, parse in (("size", "DEMO_SIZE", str(16 << 20), parse_size),
                                     ("loss", "DEMO_LOSS", "1%", parse_loss),
                                     ("seed", "DEMO_SEED", None, parse_seed),
                                     ("mode", "DEMO_MODE", default_mode, parse_mode)):
        given = getattr(args, opt)
        name, text = (f"--{opt}", given) if given is not None else (var, env.get(var, "") or default)
        if text is None:
            values.append(random.randrange(1, 1 << 30))
            continue
        try:
            values.append(parse(text))
        except BadValue as e:
            raise BadValue(f"{name}={text}: {e}") from None
    size, loss, seed, mode = values
    return size, loss, seed, ["gbn", "sr"] if mode == "both" else [mode]

def main():
    try:
        size, loss, seed, modes = settings(sys.argv[1:], os.environ)
    except BadValue as e:
        print(f"demo: {e}")
        return 2
    if "--check" in sys.argv[1:]:
        print(f"demo: size {size} bytes, loss {loss * 100:g}% (fraction {loss:g}), seed {seed}, "
              f"modes {' '.join(modes)}")
        return 0
    try:
        ok = run(size, loss, seed, modes)
    except GuestError as e:
        print(f"demo: FAILED: {e}")
        print("RESULT          : FAILED")
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
