#!/usr/bin/env python3
"""run_udaddy.py: xv6's udaddy (user/bin/udaddy.c, librdmacm's udaddy:
RDMA_PS_UDP through the kernel's CM, SIDR_REQ / SIDR_REP, then UD
datagrams) between two xv6 guests over linkemu, clean link: `udaddy` on
guest 0, `udaddy -s` on guest 1, each under `status` (its exit status).

  udaddy_default      no options (1 connection, -C 10, -S 100) [IBCM-CMA-5]: both exit 0,
                      each prints its steps in Linux udaddy's order and
                      "return status 0".
  udaddy_c2_C5_S1000  -c 2 -C 5 -S 1000: two SIDR exchanges, 5 datagrams of
                      1000 B each way on each.
  udaddy_no_listener  a client towards a guest where nobody listens: the
                      peer's CM answers the SIDR_REQ with status 1 (service
                      ID not supported, [IBCM-SIDR-2]); the client prints
                      "udaddy: event: RDMA_CM_EVENT_UNREACHABLE, error: 1"
                      and exits 1.

Usage: python3 tests/rdma/run_udaddy.py
Prints "test NAME: OK|FAILED (info)" per case and "N passed, M failed".
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "net"))
sys.path.insert(0, os.path.join(HERE, "..", "harness"))
from launch import Testbed  # noqa: E402
from tally import Tally  # noqa: E402

SERVER_STEPS = ["udaddy: starting server", "receiving data transfers", "sending replies",
                "data transfers complete", "test complete", "return status 0"]
CLIENT_STEPS = ["udaddy: starting client", "udaddy: connecting", "initiating data transfers",
                "receiving data transfers", "data transfers complete", "test complete",
                "return status 0"]


def steps(text, want):
    """The lines of text that are steps in want, in order of appearance."""
    return [ln.strip() for ln in text.splitlines() if ln.strip() in want]


def pair(tb, opts):
    """One server and one client run with opts; (ok, info)."""
    a, b = tb.guests
    start_a, start_b = len(a.output()), len(b.output())
    a.send(f"status udaddy {opts}".strip())
    a.expect(r"udaddy: starting server\n", timeout=60)
    b.send(f"status udaddy -s {tb.ip(0)} {opts}".strip())
    cli_status = b.expect(r"status: udaddy exited (-?\d+)\n", timeout=180)[1]
    srv_status = a.expect(r"status: udaddy exited (-?\d+)\n", timeout=60)[1]
    for g in tb.guests:
        g.expect(r"\$ $", timeout=30)
    srv, cli = a.output()[start_a:], b.output()[start_b:]
    problems = []
    if cli_status != "0" or srv_status != "0":
        problems.append(f"exit status client {cli_status}, server {srv_status}")
    if steps(srv, SERVER_STEPS) != SERVER_STEPS:
        problems.append(f"server's steps {steps(srv, SERVER_STEPS)}")
    if steps(cli, CLIENT_STEPS) != CLIENT_STEPS:
        problems.append(f"client's steps {steps(cli, CLIENT_STEPS)}")
    errors = re.findall(r"^udaddy: (?!starting|connecting).*$", srv + cli, re.M)
    if errors:
        problems.append(f"error lines {errors[:3]}")
    return not problems, "; ".join(problems) or f"udaddy {opts or '(defaults)'}: both return status 0"


def no_listener(tb):
    a = tb.guests[0]
    out = a.run(f"status udaddy -s {tb.ip(1)} -C 1", timeout=120)
    ok = ("udaddy: event: RDMA_CM_EVENT_UNREACHABLE, error: 1" in out and
          "status: udaddy exited 1" in out and "return status -1" in out)
    return ok, f"output {out.strip()[-300:]!r}"


def main():
    t = Tally()
    with Testbed(2, name="udaddy") as tb:
        tb.boot()
        t.run("udaddy_default", lambda: pair(tb, ""))
        t.run("udaddy_c2_C5_S1000", lambda: pair(tb, "-c 2 -C 5 -S 1000"))
        t.run("udaddy_no_listener", lambda: no_listener(tb))
        tb.halt()
    return t.finish()


if __name__ == "__main__":
    sys.exit(main())
