#!/usr/bin/env python3
"""run_hostile.py: the hostile suite and the syscall fuzzer of the RDMA
system calls in one guest.

Boots one guest (tests/harness/guest.py), runs rdmahostile (every case;
each prints "test NAME: OK|FAILED (why)"), then rdmafuzz for
FUZZ_GUEST_SECONDS (default 60) with a seed drawn on the host and printed
here (FUZZ_SEED=S replays one), then checks that the guest still answers a
shell command. Fails on a panic, a failed case, a LEAK or any other
fuzzer verdict than ok, a hang (the fuzzer's deadline plus a margin), or a
guest that no longer answers. Ends with "N passed, M failed" (the cases,
plus one for the fuzzer and one for the final shell check).

HOSTILE_SKIP="name ..." leaves cases out (rdmahostile -x): on a kernel
whose MR page directory lacks room for an unaligned max_mr_size region,
limit_mr_size_unaligned panics the guest; it runs last so the rest report.

Usage: python3 tests/rdma/run_hostile.py [--seconds S] [--seed S] [--cpus N]
"""
import argparse
import os
import random
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "harness"))
from guest import Guest, GuestError  # noqa: E402

CASES_TIMEOUT = 900          # the whole suite, generous for a loaded 2-core host
FUZZ_MARGIN = 300            # beyond the fuzzer's own deadline: its final cleanup, load


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=int(os.environ.get("FUZZ_GUEST_SECONDS", "60")))
    ap.add_argument("--seed", type=int, default=int(os.environ.get("FUZZ_SEED", "0")) or None)
    ap.add_argument("--cpus", type=int, default=2)
    args = ap.parse_args()
    seed = args.seed or random.SystemRandom().randrange(1, 1 << 31)
    skip = "".join(f" -x {n}" for n in os.environ.get("HOSTILE_SKIP", "").split())
    print(f"hostile: rdmafuzz seed {seed} for {args.seconds} s (replay: FUZZ_SEED={seed})", flush=True)
    passed = failed = 0
    try:
        with Guest("hostile", cpus=args.cpus, append="ip=10.0.0.1 mac=52:54:00:00:00:01") as g:
            g.boot()
            start = len(g.output())
            g.send("rdmahostile" + skip)
            g.expect(r"^\d+ passed, \d+ failed$", timeout=CASES_TIMEOUT)
            g.expect(r"\$ $")
            for line in g.output()[start:].splitlines():
                if line.startswith("test ") or line.startswith("  "):
                    print(line)
                    if line.startswith("test "):
                        passed, failed = (passed + 1, failed) if line.endswith(": OK") else (passed, failed + 1)
            g.send(f"rdmafuzz -s {seed} -t {args.seconds}")
            m = g.expect(r"^rdmafuzz: seed \d+ calls (\d+) .*: (\w+)\n", timeout=args.seconds + FUZZ_MARGIN)
            print(m[0])
            print(f"hostile: fuzzer calls in {args.seconds} s: {m[1]}")
            passed, failed = (passed + 1, failed) if m[2] == "ok" else (passed, failed + 1)
            g.expect(r"\$ $")
            g.send("echo still-alive")
            g.expect(r"^still-alive$", timeout=60)
            passed += 1
            g.expect(r"\$ $")
            g.send("halt 0")
            g.wait_exit(30)
    except GuestError as e:
        print(f"hostile: FAILED guest error: {e}")
        failed += 1
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
