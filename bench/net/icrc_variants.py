#!/usr/bin/env python3
"""icrc_variants.py: ns per KiB of CRC-32 variants under QEMU's RISC-V TCG.

Builds bench/net/icrc_variants.c with the transport core's
kernel/transport/icrc.c (static, freestanding RV64, the kernel's -O2 and
-march), runs it RUNS times under qemu-riscv64 (user mode; Debian package
qemu-user), and writes bench/results/icrc-variants.md: each variant's
median ns/KiB over the runs (each run already reports its median of 9
rounds) and its runs. The program checks every variant against a bitwise
CRC-32 first; a mismatch fails the benchmark.

Functions are aligned to 1 KiB (-falign-functions=1024) so that no hot
loop straddles a 4 KiB page: TCG does not chain translated blocks across
guest pages, and a straddling loop runs about three times slower (the
kernel keeps its hot loops in one page, .text.hot_loops, for that reason).

Usage: icrc_variants.py [--runs N] [--out DIR]
"""
import argparse
import datetime
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
CC = "riscv64-unknown-elf-gcc"
CFLAGS = ["-std=gnu11", "-Wall", "-Wextra", "-Werror", "-O2", "-falign-functions=1024",
          "-march=rv64gc", "-mabi=lp64d", "-mcmodel=medany", "-ffreestanding", "-fno-builtin",
          "-nostdlib", "-static"]
LINE = re.compile(r"^variant (\d+\.\d) ns/KiB (.+)$", re.MULTILINE)


def build(exe):
    cmd = [CC, *CFLAGS, "-I" + os.path.join(REPO, "kernel", "transport"), "-o", exe,
           os.path.join(HERE, "icrc_variants.c"), os.path.join(REPO, "kernel", "transport", "icrc.c")]
    subprocess.run(cmd, check=True)
    return " ".join([CC, *CFLAGS, "-Ikernel/transport", "bench/net/icrc_variants.c",
                     "kernel/transport/icrc.c"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "results"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        exe = os.path.join(tmp, "icrc_variants")
        cmd = build(exe)
        runs = {}
        for _ in range(args.runs):
            p = subprocess.run(["qemu-riscv64", exe], capture_output=True, text=True, timeout=300)
            if p.returncode != 0:
                sys.stdout.write(p.stdout)
                print("icrc_variants: a variant disagrees with the bitwise CRC-32", file=sys.stderr)
                return 1
            for ns, name in LINE.findall(p.stdout):
                runs.setdefault(name, []).append(float(ns))
    qemu = subprocess.run(["qemu-riscv64", "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    load = os.getloadavg()[0]
    med = {n: statistics.median(v) for n, v in runs.items()}
    best = min(med, key=med.get)
    core = next(n for n in med if n.startswith("transport core"))
    fused = next(n for n in med if "fused" in n)
    apart = next(n for n in med if "then" in n)
    # run-to-run spread of the core: (max - min) / median over the runs
    spread = (max(runs[core]) - min(runs[core])) / med[core]
    lines = [
        "# ICRC variants under TCG (bench/net/icrc_variants.py)", "",
        f"Command: `python3 bench/net/icrc_variants.py --runs {args.runs}`, "
        f"{datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC, {qemu} (user mode) on a 2-core host "
        f"shared with other jobs (load average {load:.2f}). Build: `{cmd}`.", "",
        "ns per KiB of CRC-32 over 4 KiB buffers (8-byte aligned), median of the runs, each run "
        "the median of 9 interleaved rounds of 1000 buffers. Every variant is checked against a "
        "bitwise CRC-32 at all alignments and lengths 0..299 first; the receive variants also "
        "copy the buffer, and the copy is checked. User-mode TCG has no software MMU, so the "
        "guest kernel (softmmu: a TLB lookup per load) pays more per byte (2.4-4.3 us per KiB "
        "measured there); the ranking is what carries over.", "",
        "| variant | ns/KiB | runs |", "| --- | ---: | --- |",
    ]
    for name, v in runs.items():
        lines.append(f"| {name} | {statistics.median(v):.1f} | {' '.join(f'{x:.0f}' for x in v)} |")
    gain = 1 - med[best] / med[core]
    lines += ["", f"Lowest median: {best}, {gain * 100:.0f} % below the transport core's "
              f"(whose runs spread over {spread * 100:.0f} % of its median). The fused receive pass "
              f"is {(1 - med[fused] / med[apart]) * 100:.0f} % below CRC-then-copy. "
              + ("The transport core keeps its slicing-by-8 on 64-bit loads: no variant beats it by "
                 "more than its own run-to-run spread." if gain <= spread else
                 f"{best} beats the transport core by more than its run-to-run spread."),
              "", "Functions are aligned to 1 KiB for these numbers: unaligned, a hot loop that "
              "straddles a 4 KiB page boundary runs about 3x slower under TCG (no block chaining "
              "across guest pages), which outweighs every difference between the variants; the "
              "kernel keeps its hot loops in one page (`.text.hot_loops`, kernel/kernel.ld)."]
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "icrc-variants.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
