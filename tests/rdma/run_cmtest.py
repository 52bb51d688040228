#!/usr/bin/env python3
"""run_cmtest.py: rdmacmtest (user/tests/rdmacmtest.c) in one guest with a
network card: rdma_cm between processes of one guest (the kernel's IB CM
over QP1), with the active side waiting for the passive side's first
message in ibvx_wait_cq, a completion channel's ibv_get_cq_event and an
ibv_poll_cq loop, never in an rdma_* call: the kernel's CM answers its
peer on its own timers whatever the application does ([IBCM-STATE-6]).
The second guest of
the test bed only gives linkemu its second port. Prints the transcript's
test lines and "N passed, M failed"; exit 0 only if nothing failed.

Usage: python3 tests/rdma/run_cmtest.py [--rounds N] [--timeout S]
(--rounds: run the suite N times in the same guest)
"""
import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "net"))
sys.path.insert(0, os.path.join(HERE, "..", "harness"))
from launch import Testbed  # noqa: E402
from guest import GuestError  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=300)
    args = ap.parse_args()
    passed = failed = 0
    try:
        with Testbed(2, name="cmtest") as tb:
            tb.boot()
            g = tb.guests[0]
            for _ in range(args.rounds):
                out = g.run("rdmacmtest", timeout=args.timeout)
                for line in out.splitlines():
                    if line.startswith("test "):
                        print(line, flush=True)
                m = re.search(r"^(\d+) passed, (\d+) failed$", out, re.MULTILINE)
                if not m:
                    print("rdmacmtest: no summary line")
                    failed += 1
                    continue
                passed += int(m[1])
                failed += int(m[2])
            tb.halt()
    except GuestError as e:
        print(f"rdmacmtest: guest error: {str(e)[:800]}")
        failed += 1
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
