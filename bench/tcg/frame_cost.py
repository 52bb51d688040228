#!/usr/bin/env python3
"""frame_cost.py: the guests' work per frame, counted, not timed: the RoCE
frame ceiling's burst beside a steady 64 KiB WRITE (make bench-frames).

Two guests over linkemu, each QEMU with the tbcount plugin (bench/tcg/
tbcount.c). One snapshot of the counts before and after each of: the RoCE
frame ceiling's burst, guest 1 -> guest 0 (link_ceiling.py's method
"roce": ICRC at the sender, ICRC check and payload copy at the receiver,
no transport), then rdma_bw WRITE 64 KiB, guest 1 -> guest 0. Per frame
(the sender's frames sent, the receiver's frames taken in; the WRITE's
data frames, ACKs not counted) and per side: guest instructions, memory
accesses, translated blocks run, and lookups: the block exits QEMU did not
chain (indirect jumps such as returns, jumps to another page, and
instructions that end a block such as CSR accesses), which cost about as
much as tens of instructions each. The counts do not move with the host's
load, so a change to the per-frame path shows in one run, where the
throughput of the same run swings by a third; they say nothing about
time spent outside the guest's code (QEMU's device emulation, linkemu).

Writes DIR/frame-cost.md (totals and the functions with the most work per
frame). Usage: python3 bench/tcg/frame_cost.py --plugin build/tcg/tbcount.so
                   [--iters N (600)] [--seconds S (4)] [--out DIR]
"""
import argparse
import bisect
import collections
import datetime
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "net"))
sys.path.insert(0, os.path.join(REPO, "tests", "harness"))
sys.path.insert(0, os.path.join(REPO, "bench", "net"))
sys.path.insert(0, os.path.join(REPO, "bench", "rdma"))
from launch import Testbed  # noqa: E402
from guest import progress  # noqa: E402
import link_ceiling  # noqa: E402
import rdma_sweep  # noqa: E402

FRAME = 1082                 # a full RoCEv2 frame at path MTU 1024
KERNEL_BASE = 0x80000000     # kernel.ld: below it, user programs
LOOKUP_KINDS = ("off-page", "indirect", "system", "other")   # tbcount.c's exit kinds, in its order
FIELDS = 3 + len(LOOKUP_KINDS)   # per function: insns, mem, blocks, then lookups by kind
NM = os.environ.get("NM", "riscv64-unknown-elf-nm")           # as bench/prof.py
SNAPSHOT_WAIT = 30


def symbols(path):
    """Sorted (address, name) of the functions of an ELF file."""
    out = subprocess.run([NM, "-n", "--defined-only", path], capture_output=True, text=True,
                         check=True).stdout
    syms = []
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 3 and f[1] in "tTwW" and not f[2].startswith("$"):
            syms.append((int(f[0], 16), f[2]))
    return syms


class Namer:
    """Block address -> function name (kernel, or the phase's program)."""

    def __init__(self, kernel, program):
        self.k, self.u = symbols(kernel), symbols(program)
        self.ka, self.ua = [a for a, _ in self.k], [a for a, _ in self.u]

    def __call__(self, addr):
        syms, addrs, prefix = (self.k, self.ka, "") if addr >= KERNEL_BASE else (self.u, self.ua, "user:")
        i = bisect.bisect_right(addrs, addr) - 1
        return prefix + (syms[i][1] if i >= 0 else "?")


def load(path):
    """{block address: [insns, runs, mem, lookups by kind...]} of one snapshot."""
    blocks = {}
    with open(path) as f:
        for line in f:
            x = line.split()
            if x[0] != "idle":
                blocks[int(x[0], 16)] = [int(v) for v in x[1:]]
    return blocks


def per_function(before, after, namer, frames):
    """{function: [insns, mem, blocks, lookups by kind...]} per frame between two snapshots."""
    fn = collections.defaultdict(lambda: [0.0] * FIELDS)
    for addr, v in after.items():
        v0 = before.get(addr, [0] * len(v))
        runs = v[1] - v0[1]
        if runs <= 0:
            continue
        row = fn[namer(addr)]
        row[0] += v[0] * runs / frames
        row[1] += (v[2] - v0[2]) / frames
        row[2] += runs / frames
        for k in range(len(LOOKUP_KINDS)):
            row[3 + k] += (v[3 + k] - v0[3 + k]) / frames
    return fn


def run(plugin, iters, seconds, workdir):
    """Boots the pair with the plugin, runs both workloads between snapshots;
    {side: {workload: per_function}} and the frame counts."""
    def snapshot(tb, k):
        for g in tb.guests:
            open(f"{workdir}/{g.name}.snap", "w").close()
        deadline = time.monotonic() + SNAPSHOT_WAIT
        for g in tb.guests:
            while not os.path.exists(f"{workdir}/{g.name}.{k}"):
                if time.monotonic() > deadline:
                    raise SystemExit(f"frame_cost: no snapshot from {g.name} in {SNAPSHOT_WAIT} s")
                time.sleep(0.05)

    with Testbed(2, name="framecost") as tb:
        for g in tb.guests:                     # read when boot() starts QEMU
            g.extra_args += ["-plugin", f"{plugin},out={workdir}/{g.name}"]
        tb.boot()
        names = [g.name for g in tb.guests]
        snapshot(tb, 0)
        progress("frames", f"RoCE frame ceiling burst, {seconds} s")
        burst = link_ceiling.one_run(tb, 1, 0, FRAME, seconds, "roce")
        snapshot(tb, 1)
        progress("frames", f"rdma_bw WRITE 64 KiB x {iters}")
        log = []
        write = rdma_sweep.bw(tb, "write", 65536, iters, False, log)
        snapshot(tb, 2)
    if not write or not burst["recv_frames"]:
        raise SystemExit("frame_cost: a workload printed no result\n" + "\n".join(log))
    frames = {("sender", "burst"): burst["sent_frames"], ("receiver", "burst"): burst["recv_frames"],
              ("sender", "write"): write["tx_frames"], ("receiver", "write"): write["tx_frames"]}
    programs = {"burst": f"{REPO}/user/_nettest", "write": f"{REPO}/user/_rdma_bw"}
    counts = {}
    for side, name in (("sender", names[1]), ("receiver", names[0])):
        snaps = [load(f"{workdir}/{name}.{k}") for k in range(3)]
        for i, wl in enumerate(("burst", "write")):
            namer = Namer(f"{REPO}/kernel/kernel", programs[wl])
            counts[side, wl] = per_function(snaps[i], snaps[i + 1], namer, frames[side, wl])
    return counts, frames, burst, write


def totals(fn):
    return [sum(row[i] for row in fn.values()) for i in range(FIELDS)]


def report(counts, frames, burst, write, args, took):
    lines = ["# Guest work per frame: RoCE frame ceiling burst vs steady 64 KiB WRITE (make bench-frames)", "",
             f"Command: `python3 bench/tcg/frame_cost.py --iters {args.iters} --seconds {args.seconds}`, "
             f"{datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC, {took:.0f} s. Two guests (2 vCPUs) over "
             "linkemu, path MTU 1024, counts from QEMU's TCG plugin bench/tcg/tbcount.c (not times: they do "
             "not move with the host's load). Burst: the RoCE frame ceiling's sender (ICRC per frame) and "
             f"sink (ICRC check, payload copy), {frames['sender', 'burst']} frames sent, "
             f"{frames['receiver', 'burst']} taken in ({burst['payload_MBps']} MB/s payload). WRITE: rdma_bw "
             f"-t write -s 65536 -n {args.iters} -e, {frames['sender', 'write']} data frames "
             f"({write['bw_avg_MiBps']} MiB/s). Per frame: the sender's per frame sent, the receiver's per "
             "frame taken in; a lookup is a block exit QEMU did not chain (off-page: a direct jump or "
             "fall-through to another page; indirect: jalr, every return; system: CSR access, ecall, fence).",
             "", "| side | workload | instructions | memory accesses | blocks | lookups | off-page | indirect | system |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for side in ("sender", "receiver"):
        for wl in ("burst", "write"):
            t = totals(counts[side, wl])
            lines.append(f"| {side} | {wl} | {t[0]:.0f} | {t[1]:.0f} | {t[2]:.0f} | {sum(t[3:]):.1f} | "
                         f"{t[3] + t[6]:.1f} | {t[4]:.1f} | {t[5]:.1f} |")
    for side in ("sender", "receiver"):
        b, w = counts[side, "burst"], counts[side, "write"]
        names = sorted(set(b) | set(w), key=lambda n: -(w.get(n, [0] * FIELDS)[0]))[:args.top]
        lines += ["", f"## {side}: functions by WRITE instructions per frame", "",
                  "| function | burst insns | burst lookups | WRITE insns | WRITE mem | WRITE blocks | WRITE lookups |",
                  "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for n in names:
            x, y = b.get(n, [0] * FIELDS), w.get(n, [0] * FIELDS)
            lines.append(f"| {n} | {x[0]:.1f} | {sum(x[3:]):.1f} | {y[0]:.1f} | {y[1]:.1f} | {y[2]:.1f} | "
                         f"{sum(y[3:]):.1f} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--plugin", default=os.path.join(REPO, "build", "tcg", "tbcount.so"))
    ap.add_argument("--iters", type=int, default=600)
    ap.add_argument("--seconds", type=int, default=4)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "results"))
    args = ap.parse_args()
    if not os.path.exists(args.plugin):
        sys.exit(f"frame_cost: no plugin at {args.plugin} (make bench-frames builds it)")
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="framecost-") as work:
        counts, frames, burst, write = run(os.path.abspath(args.plugin), args.iters, args.seconds, work)
    text = report(counts, frames, burst, write, args, time.monotonic() - start)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "frame-cost.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
