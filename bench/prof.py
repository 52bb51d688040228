#!/usr/bin/env python3
"""prof.py: where the guests' kernels spend their time while commands run.

Boots guests with the kernel's sampling profiler on (boot argument
prof=N, kernel/core/prof.c), runs the given commands, halts the guests (the
kernel prints its hottest pcs at `halt`), resolves the pcs against
kernel/kernel with addr2line and prints, per guest, the functions with the
most samples.

Two guests on one link (tests/net/launch.py's Testbed, guest i is
10.0.0.(i+1)); each argument is "server command|client command": the
server starts on guest 0 and must print "waiting for a client", then the
client runs on guest 1:

    python3 bench/prof.py "rdma_bw|rdma_bw -t write -s 65536 -n 256 -e 10.0.0.1"

One guest alone (--loopback); each argument is one command:

    python3 bench/prof.py --loopback "rdma_bw -L -t write -s 65536 -n 256"

Percentages are of the samples the kernel kept (its ring holds the last
65536, all harts together). A sample at a wfi instruction is an idle hart
and is shown as "(idle: wfi)" instead of the function around it. User-mode
samples are counted but not resolved. Needs `make` first (kernel/kernel,
fs.img, and for two guests build/netem/linkemu).

Python standard library only.
"""
import argparse
import collections
import os
import re
import subprocess
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "net"))
sys.path.insert(0, os.path.join(REPO, "tests", "harness"))
from guest import PROMPT, Guest, GuestError  # noqa: E402
from launch import Testbed  # noqa: E402

KERNEL = os.path.join(REPO, "kernel", "kernel")
ADDR2LINE = os.environ.get("ADDR2LINE", "riscv64-unknown-elf-addr2line")
OBJDUMP = os.environ.get("OBJDUMP", "riscv64-unknown-elf-objdump")
NM = os.environ.get("NM", "riscv64-unknown-elf-nm")
IDLE = "(idle: wfi)"
# kernel/lib/memlayout.h: the trampoline page sits at MAXVA - PGSIZE (MAXVA =
# 2^38); its code is linked at the symbol `trampoline` inside the kernel.
TRAMPOLINE_VA = (1 << 38) - 4096

# What prof_dump() prints at halt.
HEADER_RE = re.compile(r"^prof: samples (\d+) \(last (\d+)\) user (\d+)", re.MULTILINE)
PC_RE = re.compile(r"^prof: (0x[0-9a-fA-F]+) (\d+)\s*$", re.MULTILINE)


def parse_args():
    ap = argparse.ArgumentParser(description="Profile the guest kernels while commands run.")
    ap.add_argument("commands", nargs="+",
                    help='"server cmd|client cmd" (two guests) or a command (--loopback)')
    ap.add_argument("--period", type=int, default=200, metavar="US",
                    help="microseconds between samples per hart (default 200)")
    ap.add_argument("--top", type=int, default=20, metavar="N",
                    help="functions shown per guest (default 20)")
    ap.add_argument("--append", default="", help="more boot arguments")
    ap.add_argument("--loopback", action="store_true",
                    help="one guest, every argument is one command run there")
    ap.add_argument("--cpus", type=int, default=2, help="harts per guest (default 2)")
    ap.add_argument("--timeout", type=int, default=600,
                    help="seconds one command may take (default 600)")
    ap.add_argument("--link", default=None, metavar="SPEC",
                    help="linkemu spec on both directions of the two guests' link, e.g. 'loss 1%% seed 11'")
    ap.add_argument("--name", default="prof",
                    help="guest name prefix; logs go to tests/logs/<name>N.log")
    args = ap.parse_args()
    if args.period < 1:
        ap.error("--period must be at least 1")
    if not args.loopback:
        for c in args.commands:
            if "|" not in c:
                ap.error(f'two guests need "server|client", got {c!r}')
    return args


def show(title, text):
    print(f"--- {title}")
    print(text.rstrip("\n"))


def run_two_guests(args, append):
    """Runs every server|client pair; returns the guests' log paths."""
    with Testbed(2, both=args.link, name=args.name, cpus=args.cpus, extra_append=append) as tb:
        tb.boot()
        server, client = tb.guests
        for pair in args.commands:
            srv, cli = (s.strip() for s in pair.split("|", 1))
            server.send(srv)
            server.expect(r"waiting for a client", timeout=60)
            show(f"{client.name}: {cli}", client.run(cli, timeout=args.timeout))
            server.expect(PROMPT, timeout=60)
        tb.halt()
        paths = [g.log_path for g in tb.guests]
    return paths          # read after the Testbed has closed the logs


def run_loopback(args, append):
    """Runs every command in one guest; returns its log path."""
    boot = f"ip={Testbed.ip(0)} mac={Testbed.mac(0)} {append}"
    with Guest(f"{args.name}0", cpus=args.cpus, append=boot) as g:
        g.boot()
        for cmd in args.commands:
            show(f"{g.name}: {cmd}", g.run(cmd, timeout=args.timeout))
        g.send("halt 0")
        g.wait_exit(30)
        path = g.log_path
    return [path]


def parse_log(text):
    """(samples, kept, user, [(pc, count)]) from a console log, or None."""
    text = text.replace("\r", "")
    head = HEADER_RE.search(text)
    if not head:
        return None
    pcs = [(int(pc, 16), int(n)) for pc, n in PC_RE.findall(text, head.end())]
    return int(head.group(1)), int(head.group(2)), int(head.group(3)), pcs


def trampoline_link_address():
    """Where trampoline.S is linked (nm), or None."""
    try:
        out = subprocess.run([NM, KERNEL], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    m = re.search(r"^([0-9a-f]+) T trampoline$", out, re.MULTILINE)
    return int(m.group(1), 16) if m else None


def resolve(pcs):
    """{pc: function name} through addr2line (two output lines per pc).
    A pc in the trampoline page is looked up at its link address."""
    if not pcs:
        return {}
    tramp = trampoline_link_address()
    def linked(pc):
        if tramp is not None and TRAMPOLINE_VA <= pc < TRAMPOLINE_VA + 4096:
            return pc - TRAMPOLINE_VA + tramp
        return pc
    cmd = [ADDR2LINE, "-f", "-s", "-e", KERNEL] + [hex(linked(pc)) for pc in pcs]
    lines = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.splitlines()
    # `trampoline` and `user_entry` label the same address; name the code.
    return {pc: "user_entry" if lines[2 * i] == "trampoline" else lines[2 * i]
            for i, pc in enumerate(pcs)}


def wfi_pcs():
    """Addresses of every wfi in the kernel and of the instruction after it
    (the pc an interrupted wfi reports); empty if objdump is missing."""
    try:
        out = subprocess.run([OBJDUMP, "-d", KERNEL], capture_output=True, text=True,
                             check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return set()
    pcs = set()
    for m in re.finditer(r"^\s*([0-9a-f]+):\s+10500073\s+wfi\b", out, re.MULTILINE):
        pc = int(m.group(1), 16)
        pcs.update((pc, pc + 4))
    return pcs


def pct(n, total):
    return 100.0 * n / total if total else 0.0


def report(name, parsed, idle, top):
    samples, kept, user, pcs = parsed
    names = resolve([pc for pc, _ in pcs])
    per_fn = collections.Counter()
    for pc, n in pcs:
        per_fn[IDLE if pc in idle else names[pc]] += n
    listed = sum(n for _, n in pcs)
    other = kept - user - listed       # kernel pcs below the dump's top 80
    print(f"=== {name}: {samples} samples, the last {kept} analysed"
          f"{' (ring wrapped)' if samples > kept else ''}")
    print(f"    user mode {user} ({pct(user, kept):.1f} %), "
          f"idle {per_fn[IDLE]} ({pct(per_fn[IDLE], kept):.1f} %), "
          f"kernel pcs not in the dump {other} ({pct(other, kept):.1f} %)")
    print(f"  {'samples':>8} {'%':>6}  function")
    for fn, n in per_fn.most_common(top):
        print(f"  {n:8d} {pct(n, kept):6.1f}  {fn}")


def main():
    args = parse_args()
    append = f"prof={args.period} {args.append}".strip()
    try:
        paths = run_loopback(args, append) if args.loopback else run_two_guests(args, append)
    except GuestError as e:
        print(f"prof.py: {e}", file=sys.stderr)
        return 1
    idle = wfi_pcs()
    status = 0
    for path in paths:
        name = os.path.splitext(os.path.basename(path))[0]
        with open(path, errors="replace") as f:
            parsed = parse_log(f.read())
        if parsed is None:
            print(f"=== {name}: no 'prof: samples' line in {path} (kernel without prof.c?)")
            status = 1
            continue
        report(name, parsed, idle, args.top)
    return status


if __name__ == "__main__":
    sys.exit(main())
