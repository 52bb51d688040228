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
  examples_upstream_loss<L>
                       librdmacm's own rdma_server / rdma_client, unmodified
                       (fetched from Debian by user/upstream/fetch.sh): at 0 %
                       with their defaults (the server binds "0.0.0.0" port
                       7471), at other rates with -s / -p; each run through
                       `status`, which must report exit 0 on both sides,
                       with "start", "end 0", the inline sends they ask for
                       and no error line. --seeds N repeats the lossy runs
                       with N seeds.
  examples_connect_no_listener
                       ep_client towards a port nobody listens on: REJ reason 8
                       from the other guest's kernel CM, ECONNREFUSED.
  examples_connect_silent_peer
                       ep_client towards a peer silent after ARP answered:
                       the REQ's retries run out, ETIMEDOUT (UNREACHABLE).
  examples_upstream_usage
                       rdma_client with an unknown option: its usage text
                       and exit status 1.

Usage: python3 tests/rdma/run_examples.py [--loss 0 1] [--only ep rc upstream] [--seeds N]
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
from guest import Guest  # noqa: E402
from tally import Tally  # noqa: E402

EX_SIZE = 8192          # user/examples/example.h
IMM = 0x5eed            # user/examples/rc_client.c
ECONNREFUSED = 111      # kernel/lib/uapi.h (Linux's value)
ETIMEDOUT = 110         # kernel/lib/uapi.h


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

UPSTREAM_PORT = 7500    # the lossy runs' -p (the programs' default is 7471)
# Lines the unmodified programs print only when something went wrong: a
# perror() ("rdma_create_ep: Invalid argument"), rdma_getaddrinfo's
# gai_strerror line, or the fallback when the QP grants no inline data.
UPSTREAM_BAD = re.compile(r"^rdma_\w+: (?!start$|end -?\d+$).*$|device doesn't support", re.M)


def check_upstream(prog, text):
    """One side's transcript: started, ended 0, exited 0 (status), and
    printed nothing else of its own."""
    status = field(text, rf"status: {prog} exited (-?\d+)\n")
    end = field(text, rf"{prog}: end (-?\d+)\n")
    bad = UPSTREAM_BAD.findall(text)
    ok = f"{prog}: start\n" in text and end == "0" and status == "0" and not bad
    return ok, f"{prog}: end {end}, exit status {status}" + (f", printed {bad}" if bad else "")


def upstream_run(loss, seed):
    """rdma_server on guest 0, rdma_client on guest 1, each under `status`.
    The client starts once the server has printed its start line (which
    rdma_server prints just before it sets up its listener): a REQ that
    came before the listener would get a REJ for no listener [IBCM-REJ-2]."""
    spec = f"loss {loss}% seed {seed}" if loss != "0" else None
    with Testbed(2, both=spec, name=f"examples-upstream-loss{loss}-seed{seed}") as tb:
        tb.boot()
        a, b = tb.guests
        if spec is None:
            server, client = "status rdma_server", f"status rdma_client -s {tb.ip(0)}"
        else:
            opts = f"-s {tb.ip(0)} -p {UPSTREAM_PORT}"
            server, client = f"status rdma_server {opts}", f"status rdma_client {opts}"
        a.send(server)
        a.expect(r"rdma_server: start\n", timeout=30)
        b.send(client)
        b.expect(r"status: rdma_client exited -?\d+\n", timeout=300)
        a.expect(r"status: rdma_server exited -?\d+\n", timeout=120)
        for g in tb.guests:
            g.expect(r"\$ $", timeout=30)
        srv, cli = a.output(), b.output()
        for g in tb.guests:
            g.send("halt 0")
        for g in tb.guests:
            g.wait_exit(30)
    ok_s, info_s = check_upstream("rdma_server", srv)
    ok_c, info_c = check_upstream("rdma_client", cli)
    return ok_s and ok_c, f"{info_s}; {info_c}"


def upstream_usage_run():
    """An unknown option: the usage lines and exit 1, as upstream's main says."""
    with Guest("examples-upstream-usage", append="ip=10.0.0.1 mac=52:54:00:00:00:01") as g:
        g.boot()
        out = g.run("status rdma_client -x", timeout=30)
        g.send("halt 0")
        g.wait_exit(30)
    ok = ("usage: rdma_client" in out and "[-s server_address]" in out and "[-p port_number]" in out
          and "status: rdma_client exited 1" in out)
    return ok, f"output {out.strip()!r}"


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


def no_listener_run():
    """ep_client towards a port nobody listens on: the other guest's kernel
    CM answers the REQ with a REJ (reason 8, invalid service ID) and
    rdma_connect fails with ECONNREFUSED, as librdmacm's on Linux does."""
    with Testbed(2, name="examples-no-listener") as tb:
        tb.boot()
        b = tb.guests[1]
        b.send(f"ep_client {tb.ip(0)} 4000")
        m = b.expect(r"ep_client: rdma_connect failed \(errno (\d+)\)\n", timeout=120)
        b.expect(r"\$ $", timeout=30)
        for g in tb.guests:
            g.send("halt 0")
        for g in tb.guests:
            g.wait_exit(30)
    return m[1] == str(ECONNREFUSED), f"rdma_connect errno {m[1]} (ECONNREFUSED is {ECONNREFUSED})"


def silent_peer_run():
    """ep_client towards a peer that falls silent once ARP has answered
    (guest 1 pings guest 0 first, then linkemu drops every frame both
    ways): the kernel CM's REQ retries run out on its own timers and
    rdma_connect fails with ETIMEDOUT (event UNREACHABLE), as Linux's
    rdma_cm reports a silent peer."""
    with Testbed(2, name="examples-silent") as tb:
        tb.boot()
        b = tb.guests[1]
        pinged = b.run(f"ping -c 1 {tb.ip(0)}", timeout=60)
        tb.set_spec("both", "loss 100%")
        b.send(f"ep_client {tb.ip(0)} 4000")
        m = b.expect(r"ep_client: (\S+) failed \(errno (\d+)\)\n", timeout=120)
        b.expect(r"\$ $", timeout=30)
        for g in tb.guests:
            g.send("halt 0")
        for g in tb.guests:
            g.wait_exit(30)
    ok = m[1] == "rdma_connect" and m[2] == str(ETIMEDOUT)
    return ok, f"{m[1]} errno {m[2]} (ETIMEDOUT is {ETIMEDOUT}); ping first: {pinged.strip()[-60:]!r}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--loss", type=float, nargs="+", default=[0, 1])
    ap.add_argument("--only", nargs="+", choices=["rc", "ep", "upstream"],
                    help="run only these examples (default: all, and the no-listener case)")
    ap.add_argument("--seeds", type=int, default=1, help="lossy upstream runs: seeds 11, 12, ...")
    args = ap.parse_args()
    tally = Tally()
    for loss in args.loss:
        loss_s = f"{loss:g}"
        for name, server, client, check in PAIRS:
            if not args.only or name in args.only:
                tally.run(f"examples_{name}_loss{loss_s}",
                          lambda: one_run(loss_s, name, server, client, check), timed=False)
        if not args.only or "upstream" in args.only:
            for seed in range(11, 11 + (args.seeds if loss_s != "0" else 1)):
                suffix = f"_seed{seed}" if args.seeds > 1 and loss_s != "0" else ""
                tally.run(f"examples_upstream_loss{loss_s}{suffix}",
                          lambda: upstream_run(loss_s, seed), timed=False)
    if not args.only or "upstream" in args.only:
        tally.run("examples_upstream_usage", upstream_usage_run, timed=False)
    if not args.only:
        tally.run("examples_connect_no_listener", no_listener_run, timed=False)
        tally.run("examples_connect_silent_peer", silent_peer_run, timed=False)
    return tally.finish()


if __name__ == "__main__":
    sys.exit(main())
