#!/usr/bin/env python3
"""crash_test.py: power-cut test of the file system's write-ahead log.

usage: python3 tools/crash_test.py [seconds-before-kill] [--powercut N]
                                            [--kernel K] [--fs-img F]
Boots a copy of fs.img, starts a large file write, cuts the power part-way
(kills QEMU after the given seconds, or, with --powercut N, boots with the
kernel's powercut=N fault injection: the first N-1 block writes land, then
the machine stops), boots the same disk again and checks that the kernel
mounts it (replaying the log if needed), that the half-written file can be
read, that new files work, and, after a clean halt, that the half-written
file holds the pattern usertests wrote up to its size and that
tools/fsck.py finds the image consistent (no block mapped twice
or free in the bitmap, no leak, no dangling entry, link counts right).
Exits non-zero on any failure.
"""
import argparse, os, select, shutil, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fsck  # noqa: E402

KERNEL = "kernel/kernel"


def qemu(disk, append=None):
    cmd = ["qemu-system-riscv64", "-machine", "virt", "-bios", "none",
           "-kernel", KERNEL, "-m", "128M", "-smp", "2", "-nographic",
           "-global", "virtio-mmio.force-legacy=false",
           "-drive", f"file={disk},if=none,format=raw,id=disk0",
           "-device", "virtio-blk-device,drive=disk0,bus=virtio-mmio-bus.0",
           "-device", "virtio-rng-device,bus=virtio-mmio-bus.7"]
    if append:
        cmd += ["-append", append]
    return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)

def read_until(q, pattern, timeout, seen=b""):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        r, _, _ = select.select([q.stdout], [], [], 0.1)
        if r:
            chunk = os.read(q.stdout.fileno(), 4096)
            if not chunk:
                break
            seen += chunk
            if b"panic" in seen:
                raise SystemExit("kernel panic:\n" + seen.decode(errors="replace"))
            if pattern in seen:
                return seen
    raise SystemExit(f"timeout waiting for {pattern!r}:\n" + seen.decode(errors="replace"))

PIECE = 64 * 1024      # usertests fs_big_file_16mib writes 64 KiB pieces k = 0, 1, ...
LCG_A, LCG_C, MASK = 1103515245, 12345, 0xffffffff


def lcg_jump(n):
    """(A, C) with state_{j+n} = A * state_j + C (mod 2^32)."""
    a, c = 1, 0
    for _ in range(n):
        a, c = (LCG_A * a) & MASK, (LCG_A * c + LCG_C) & MASK
    return a, c


def check_big_file(data):
    """The half-written file must hold usertests' pattern (user/tests/usertests/
    helpers.c ut_fill_pattern, seed = piece index) up to its size: the
    first 16 bytes of every 1 KiB block are compared. A committed
    transaction's data blocks that the log did not replay show up here."""
    if data is None:
        return ["ut_big: gone after the reboot"]
    jump_a, jump_c = lcg_jump(1024)
    for k in range((len(data) + PIECE - 1) // PIECE):
        state = (k * 2654435761 + 1) & MASK
        for blk in range(0, min(PIECE, len(data) - k * PIECE), 1024):
            x = state
            for t in range(min(16, len(data) - k * PIECE - blk)):
                x = (LCG_A * x + LCG_C) & MASK
                off = k * PIECE + blk + t
                if data[off] != (x >> 16) & 0xff:
                    return [f"ut_big: wrong byte at offset {off} of {len(data)}"]
            state = (jump_a * state + jump_c) & MASK
    return []


def send(q, line):
    q.stdin.write(line.encode() + b"\n")
    q.stdin.flush()

def main():
    global KERNEL
    ap = argparse.ArgumentParser(description="power-cut test of the file system's log")
    ap.add_argument("delay", type=float, nargs="?", default=8, help="seconds into the write")
    ap.add_argument("--kernel", default="kernel/kernel")
    ap.add_argument("--fs-img", default="fs.img")
    ap.add_argument("--powercut", type=int, default=0,
                    help="stop the machine before its N-th block write (deterministic)")
    args = ap.parse_args()
    delay, KERNEL = args.delay, args.kernel
    tmp = tempfile.mkdtemp(prefix="crashtest-")
    disk = os.path.join(tmp, "fs.img")
    shutil.copy(args.fs_img, disk)
    try:
        q = qemu(disk, f"powercut={args.powercut}" if args.powercut else None)
        read_until(q, b"$ ", 30)
        send(q, "usertests fs_big_file_16mib")
        if args.powercut:
            read_until(q, b"power cut before block write", 120)
            if q.wait(timeout=30) != 3:
                raise SystemExit("powercut: QEMU did not stop with status 3")
        else:
            time.sleep(delay)
            q.kill()                              # power cut
            q.wait()
        q = qemu(disk)
        out = read_until(q, b"$ ", 60)
        replayed = b"replaying" in out
        send(q, "ls")
        out = read_until(q, b"$ ", 30)
        had_file = b"ut_big" in out
        if had_file:
            send(q, "wc ut_big")
            read_until(q, b"$ ", 120)
        send(q, "echo after-crash > fresh")
        read_until(q, b"$ ", 30)
        send(q, "cat fresh")
        out = read_until(q, b"after-crash\n", 30)
        send(q, "halt 0")
        status = q.wait(timeout=30)
        problems, _ = fsck.check(disk)
        if had_file and not problems:
            problems += check_big_file(fsck.root_file(disk, "ut_big"))
        for p in problems[:10]:
            print("crash test: fsck: " + p)
        where = f"power cut before block write {args.powercut}" if args.powercut else f"killed after {delay:g} s"
        print(f"crash test ({where}): log replayed at mount: {replayed}; half-written file "
              f"present: {had_file} (read, pattern checked); new file ok; qemu exit {status}; "
              f"fsck {len(problems)} problems")
        sys.exit(status or (1 if problems else 0))
    finally:
        shutil.rmtree(tmp)

if __name__ == "__main__":
    main()
