#!/usr/bin/env python3
"""run_rping.py: xv6's rping (user/bin/rping.c, Linux rping's protocol)
between two xv6 guests over linkemu: `rping -s` on guest 0, `rping -c` on
guest 1, each under `status` (its exit status), clean and at 1 % loss.

  rping_validate_<S>B_loss<L>
                  -V -C 10 -S S (at 1 % loss -C 50): both exit 0; the server reports the
                  client's connection and its disconnect after exactly that
                  many pings; with -v (at 64 B) every "ping data:" line of the
                  client and "server ping data:" line of the server is the
                  ping text this script computes itself ("rdma-ping-N: " and
                  the rotating run of 'A'..'z', S - 1 characters).
  rping_no_listener
                  a client towards a port nobody listens on: exit 1, one line
                  "rping: connect to A.B.C.D port P: refused (...)" or "no
                  answer within ..." (which one depends on the CM: a REJ
                  for no listener, or no answer at all).
  rping_size_too_small
                  -S 22 (one less than the ping text of the largest count
                  needs): exit 2 and the allowed range in the line.

Usage: python3 tests/rdma/run_rping.py [--loss 0 1] [--count N]
Prints "test NAME: OK|FAILED (info)" per case and "N passed, M failed".
"""
import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "net"))
sys.path.insert(0, os.path.join(HERE, "..", "harness"))
from launch import Testbed  # noqa: E402
from tally import Tally  # noqa: E402

PORT = 7174             # rping's default port
FREE_PORT = 7999        # nobody listens there
MIN_SIZE = 23           # user/bin/rping.c RPING_MIN_SIZE
FIRST, LAST = ord("A"), ord("z")


def ping_text(n, size):
    """Ping n's text as rping fills it: "rdma-ping-n: ", then characters
    from 'A' + n (mod the run) on, 'z' wrapping to 'A', size - 1 in all."""
    text = f"rdma-ping-{n}: "
    ch = FIRST + n % (LAST - FIRST + 1)
    while len(text) < size - 1:
        text += chr(ch)
        ch = FIRST if ch == LAST else ch + 1
    return text[:size - 1]


def lines(text, prefix):
    return re.findall(rf"^{re.escape(prefix)}(.*?)\r?$", text, re.M)


def server_problems(srv, client_ip, count):
    """What is wrong with an xv6 `rping -s -d` transcript srv that served
    client_ip for count pings: it must report the connection and the
    disconnect after exactly count pings."""
    problems = []
    if f"rping: connection from {client_ip}" not in srv:
        problems.append("the server did not report the connection")
    done = re.findall(rf"rping: {re.escape(client_ip)} disconnected after (\d+) pings", srv)
    if done != [str(count)]:
        problems.append(f"server's disconnect line: {done}")
    return problems


def ping_pong(tb, size, count, verbose):
    """One server and one client run; (ok, info)."""
    a, b = tb.guests
    v = " -v" if verbose else ""
    start_a, start_b = len(a.output()), len(b.output())
    drops0 = [d["dropped"]["total"] for d in tb.stats()["directions"]]
    a.send(f"status rping -s -d{v} -p {PORT} -S {size} -C {count}")
    a.expect(rf"rping: listening on port {PORT} \(pid \d+\)\n", timeout=60)
    b.send(f"status rping -c{v} -V -a {tb.ip(0)} -p {PORT} -C {count} -S {size}")
    cli_status = b.expect(r"status: rping exited (-?\d+)\n", timeout=600)[1]
    srv_status = a.expect(r"status: rping exited (-?\d+)\n", timeout=120)[1]
    for g in tb.guests:
        g.expect(r"\$ $", timeout=30)
    srv, cli = a.output()[start_a:], b.output()[start_b:]
    drops = [d["dropped"]["total"] - d0 for d, d0 in zip(tb.stats()["directions"], drops0)]
    want = [ping_text(n, size) for n in range(count)]
    problems = []
    if cli_status != "0" or srv_status != "0":
        problems.append(f"exit status client {cli_status}, server {srv_status}")
    problems += server_problems(srv, tb.ip(1), count)
    if verbose:
        got_c, got_s = lines(cli, "ping data: "), lines(srv, "server ping data: ")
        if got_c != want:
            problems.append(f"client ping data: {len(got_c)} lines, first {got_c[:1]}, want {want[:1]}")
        if got_s != want:
            problems.append(f"server ping data: {len(got_s)} lines, first {got_s[:1]}, want {want[:1]}")
    errors = re.findall(r"^rping: (?!listening|connection from|\S+ disconnected after|recv rkey|cma event).*$",
                        srv + cli, re.M)
    if errors:
        problems.append(f"error lines {errors[:3]}")
    return (not problems, "; ".join(problems) or f"{count} pings of {size} B validated, both exit 0; "
            f"linkemu dropped {drops[0]} / {drops[1]} frames (a2b / b2a)")


def no_listener(tb):
    b = tb.guests[1]
    out = b.run(f"status rping -c -a {tb.ip(0)} -p {FREE_PORT} -C 1", timeout=180)
    line = re.search(r"^rping: [^\n]*", out, re.M)
    line = line[0].strip() if line else ""
    ok = (re.search(rf"connect to {re.escape(tb.ip(0))} port {FREE_PORT}: (refused|no answer within)", line)
          is not None and "status: rping exited 1" in out)
    return ok, f"{line!r}" + ("" if ok else f"; output {out.strip()[:300]!r}")


def size_too_small(tb):
    b = tb.guests[1]
    out = b.run(f"status rping -c -a {tb.ip(0)} -S {MIN_SIZE - 1}", timeout=60)
    ok = (re.search(rf"rping: -S {MIN_SIZE - 1}: out of range \(allowed {MIN_SIZE}\.\.65535 bytes\)", out)
          is not None and "status: rping exited 2" in out)
    return ok, f"output {out.strip()[:200]!r}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--loss", type=float, nargs="+", default=[0, 1])
    ap.add_argument("--count", type=int, default=10, help="pings per run (lossy runs: 5 times as many)")
    args = ap.parse_args()
    t = Tally()
    for loss in args.loss:
        loss_s = f"{loss:g}"
        spec = f"loss {loss_s}% seed 7" if loss else None
        with Testbed(2, both=spec, name=f"rping-loss{loss_s}") as tb:
            tb.boot()
            for size, verbose in ((64, True), (4096, False)):
                count = args.count * (5 if loss else 1)
                t.run(f"rping_validate_{size}B_loss{loss_s}", lambda: ping_pong(tb, size, count, verbose))
            if not loss:
                t.run("rping_no_listener", lambda: no_listener(tb))
                t.run("rping_size_too_small", lambda: size_too_small(tb))
            for g in tb.guests:
                g.send("halt 0")
            for g in tb.guests:
                g.wait_exit(30)
    return t.finish()


if __name__ == "__main__":
    sys.exit(main())
