#!/usr/bin/env python3
"""run_examples.py: the rdma_cm examples of user/examples (docs/rdma.md) on
two guests over linkemu: each server on guest 0, its client on guest 1,
once per pair and loss rate (default 0 % and 1 %). A pair passes when
both print OK and the bytes moved match on both ends: the checksum of
what one side wrote, sent or exposed equals the checksum of what the other
side received or read, with the right sizes and immediate.

  examples_rc_loss<L>  rc_server / rc_client: event channel, rdma_create_qp,
                       a receive posted before the connection, private data
                       with a buffer's address and rkey, WRITE_WITH_IMM,
                       SEND / RECV, READ, a completion channel.
  examples_ep_loss<L>  ep_server / ep_client: rdma_getaddrinfo,
                       rdma_create_ep, rdma_get_request, rdma_verbs.h's
                       rdma_post_send / rdma_post_recv / rdma_get_*_comp.

Usage: python3 tests/rdma/run_examples.py [--loss 0 1]
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

EX_SIZE = 8192          # user/examples/example.h
IMM = 0x5eed            # user/examples/rc_client.c
ETIMEDOUT = 110         # user/ibverbs.h


def run_pair(tb, server, client):
    """Starts `server` on guest 0 and `client <ip>` on guest 1; returns the
    two transcripts once both ended (OK or FAILED)."""
    a, b = tb.guests
    a.send(server)
    a.expect(rf"{server}: listening", timeout=30)
    b.send(f"{client} {tb.ip(0)}")
    b.expect(rf"{client}: (OK|FAILED)\n", timeout=300)
    a.expect(rf"{server}: (OK|FAILED)\n", timeout=120)
    a.expect(r"\$ $", timeout=30)
    b.expect(r"\$ $", timeout=30)
    return a.output(), b.output()


def field(text, pattern):
    """The groups of the last line matching pattern, or None."""
    found = re.findall(pattern, text)
    return found[-1] if found else None


def check_rc(srv, cli):
    w_s = field(srv, r"rc_server: write (\d+) bytes imm 0x([0-9a-f]+) sum ([0-9a-f]+)")
    r_s = field(srv, r"rc_server: read region sum ([0-9a-f]+)")
    w_c = field(cli, r"rc_client: write (\d+) bytes imm 0x([0-9a-f]+) sum ([0-9a-f]+)")
    r_c = field(cli, r"rc_client: read (\d+) bytes sum ([0-9a-f]+)")
    reply = field(cli, r"rc_client: reply '([^']*)'")
    ok = ("rc_server: OK" in srv and "rc_client: OK" in cli and w_s is not None and w_c is not None
          and r_s is not None and r_c is not None
          and w_s == w_c and int(w_s[0]) == EX_SIZE and int(w_s[1], 16) == IMM
          and r_c == (str(EX_SIZE), r_s) and reply == f"write of {EX_SIZE} bytes received")
    return ok, f"write {w_c} -> {w_s}; read {r_s} -> {r_c}; reply {reply!r}"


def check_ep(srv, cli):
    s_c = field(cli, r"ep_client: sent (\d+) bytes sum ([0-9a-f]+)")
    r_s = field(srv, r"ep_server: received (\d+) bytes sum ([0-9a-f]+)")
    s_s = field(srv, r"ep_server: sent (\d+) bytes sum ([0-9a-f]+)")
    r_c = field(cli, r"ep_client: received (\d+) bytes sum ([0-9a-f]+)")
    ok = ("ep_server: OK" in srv and "ep_client: OK" in cli and s_c is not None and s_s is not None
          and s_c == r_s and s_s == r_c and int(s_c[0]) == EX_SIZE and int(s_s[0]) == EX_SIZE)
    return ok, f"client sent {s_c}, server received {r_s}; server sent {s_s}, client received {r_c}"


PAIRS = (("rc", "rc_server", "rc_client", check_rc), ("ep", "ep_server", "ep_client", check_ep))


def one_run(loss, name, server, client, check):
    spec = f"loss {loss}% seed 11" if loss != "0" else None
    with Testbed(2, both=spec, name=f"examples-{name}-loss{loss}") as tb:
        tb.boot()
        srv, cli = run_pair(tb, server, client)
        for g in tb.guests:
            g.send("halt 0")
        for g in tb.guests:
            g.wait_exit(30)
    return check(srv, cli)


def unreachable_run():
    """ep_client towards a port where nobody answers: after the REQ's
    retries [CM-TMO-1] rdma_connect fails with ETIMEDOUT (event UNREACHABLE,
    [CM-TMO-2]) and nothing else happens."""
    with Testbed(2, name="examples-unreachable") as tb:
        tb.boot()
        b = tb.guests[1]
        b.send(f"ep_client {tb.ip(0)} 4000")
        m = b.expect(r"ep_client: rdma_connect failed \(errno (\d+)\)\n", timeout=120)
        b.expect(r"\$ $", timeout=30)
        for g in tb.guests:
            g.send("halt 0")
        for g in tb.guests:
            g.wait_exit(30)
    return m[1] == str(ETIMEDOUT), f"rdma_connect errno {m[1]} (ETIMEDOUT is {ETIMEDOUT})"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--loss", type=float, nargs="+", default=[0, 1])
    args = ap.parse_args()
    tally = Tally()
    for loss in args.loss:
        loss_s = f"{loss:g}"
        for name, server, client, check in PAIRS:
            tally.run(f"examples_{name}_loss{loss_s}",
                      lambda: one_run(loss_s, name, server, client, check), timed=False)
    tally.run("examples_connect_unreachable", unreachable_run, timed=False)
    return tally.finish()


if __name__ == "__main__":
    sys.exit(main())
