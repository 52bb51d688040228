#!/usr/bin/env python3
"""boot_time.py: measure wall time from launching QEMU to the shell prompt.

usage: python3 tools/boot_time.py [CPUS] [runs]
Boots kernel/kernel with a private copy of fs.img the way `make qemu`
does, waits for "$ " on the console, then sends "halt" and reports the
time to the prompt for each run and QEMU's exit status.
"""
import os, shutil, subprocess, sys, tempfile, time, select

def boot_once(cpus):
    tmp = tempfile.mkdtemp(prefix="boottime-")
    disk = os.path.join(tmp, "fs.img")
    shutil.copy("fs.img", disk)
    cmd = ["qemu-system-riscv64", "-machine", "virt", "-bios", "none",
           "-kernel", "kernel/kernel", "-m", "128M", "-smp", str(cpus),
           "-nographic", "-global", "virtio-mmio.force-legacy=false",
           "-drive", f"file={disk},if=none,format=raw,id=disk0",
           "-device", "virtio-blk-device,drive=disk0,bus=virtio-mmio-bus.0",
           "-device", "virtio-rng-device,bus=virtio-mmio-bus.7"]
    start = time.monotonic()
    q = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    out, prompt_at = b"", None
    try:
        while time.monotonic() - start < 30:
            r, _, _ = select.select([q.stdout], [], [], 0.05)
            if r:
                chunk = os.read(q.stdout.fileno(), 4096)
                if not chunk:
                    break
                out += chunk
                if b"$ " in out:
                    prompt_at = time.monotonic() - start
                    break
        if prompt_at is not None:
            q.stdin.write(b"halt\n")
            q.stdin.flush()
        status = q.wait(timeout=10)
    finally:
        if q.poll() is None:
            q.kill()
        shutil.rmtree(tmp)
    return prompt_at, status, out.decode(errors="replace")

def main():
    cpus = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    for i in range(runs):
        t, status, out = boot_once(cpus)
        if t is None:
            print(out)
            print(f"run {i}: no prompt within 30 s")
            sys.exit(1)
        print(f"CPUS={cpus} run {i}: prompt after {t:.2f} s, qemu exit {status}")

if __name__ == "__main__":
    main()
