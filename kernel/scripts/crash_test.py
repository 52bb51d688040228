#!/usr/bin/env python3
"""crash_test.py: power-cut test of the file system's write-ahead log.

usage: python3 kernel/scripts/crash_test.py [seconds-before-kill] [--powercut N]
                                            [--kernel K] [--fs-img F]
Boots a copy of fs.img, starts a large file write, cuts the power part-way
(kills QEMU after the given seconds, or, with --powercut N, boots with the
kernel's powercut=N fault injection: the first N-1 block writes land, then
the machine stops), boots the same disk again and checks that the kernel
mounts it (replaying the log if needed), that the half-written file can be
read and removed (removal frees every block it holds: a corrupt bitmap
would panic), that new files work, and, after a clean halt, that
kernel/scripts/fsck.py finds the image consistent (no block mapped twice
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
           "-device", "virtio-blk-device,drive=disk0,bus=virtio-mmio-bus.0"]
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
            send(q, "rm ut_big")
            read_until(q, b"$ ", 60)
        send(q, "echo after-crash > fresh")
        read_until(q, b"$ ", 30)
        send(q, "cat fresh")
        out = read_until(q, b"after-crash\n", 30)
        send(q, "halt 0")
        status = q.wait(timeout=30)
        problems, _ = fsck.check(disk)
        for p in problems[:10]:
            print("crash test: fsck: " + p)
        where = f"power cut before block write {args.powercut}" if args.powercut else f"killed after {delay:g} s"
        print(f"crash test ({where}): log replayed at mount: {replayed}; half-written file "
              f"present: {had_file} (read and removed); new file ok; qemu exit {status}; "
              f"fsck {len(problems)} problems")
        sys.exit(status or (1 if problems else 0))
    finally:
        shutil.rmtree(tmp)

if __name__ == "__main__":
    main()
