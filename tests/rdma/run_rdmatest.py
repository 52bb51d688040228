#!/usr/bin/env python3
"""run_rdmatest.py: boot one guest, run rdmatest (loopback verbs self-test)
or another loopback test program of the shared runner (--prog srqtest: the
shared receive queues), print its transcript lines, and exit 0 only if it
ends with "N passed, 0 failed" and the guest powers off cleanly.

Usage: python3 tests/rdma/run_rdmatest.py [--prog P] [--cpus N] [--quick] [--timeout S] [--only NAME]
(--only NAME: that case, or every case named NAME_*)
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "harness"))
from guest import Guest, GuestError  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cpus", type=int, default=2)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--only", default="")
    ap.add_argument("--prog", default="rdmatest", choices=("rdmatest", "srqtest"))
    args = ap.parse_args()
    cmd = args.prog + (" -q" if args.quick else "") + (" " + args.only if args.only else "")
    name = f"{args.prog}-cpus{args.cpus}"
    try:
        with Guest(name, cpus=args.cpus, append="ip=10.0.0.1 mac=52:54:00:00:00:01") as g:
            g.boot()
            g.send(cmd)
            m = g.expect(r"^(\d+) passed, (\d+) failed$", timeout=args.timeout)
            passed, failed = int(m[1]), int(m[2])
            g.expect(r"\$ $")
            g.send("halt 0")
            status = g.wait_exit(30)
            text = g.output()
    except GuestError as e:
        print(f"{args.prog}: guest error: {e}")
        print("1 passed, 1 failed" if False else "0 passed, 1 failed")
        return 1
    for line in text.splitlines():
        if line.startswith("test ") or line.startswith("  "):
            print(line)
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 and status == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
