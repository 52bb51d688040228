#!/usr/bin/env python3
"""run_udping.py: UD between two xv6 guests over linkemu (user/bin/udping.c):
`udping server` on guest 0, `udping client` on guest 1 with the server's
QPN, clean and at 1 % loss.

  udping_xv6_loss<L>  the client sends -n messages of -s bytes with
                      immediate data, one at a time, each resent after its
                      deadline; every one must be answered, byte exact
                      (verified bytes = received x size). Clean: nothing
                      lost, the server echoed exactly what the client sent
                      (a resend after a late echo is allowed). Lossy: what went missing each way
                      (client sent - server received, server echoed -
                      client received) is at most what linkemu dropped,
                      and nothing arrived bad.

UD never retransmits: a lost datagram is lost; the tool counts it (lost =
sent - received) and resends the message.

Usage: python3 tests/rdma/run_udping.py [--loss 0 1] [-n COUNT] [-s SIZE]
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

IDLE_S = 4              # the server ends this long after the last datagram


def client_summary(text, prog):
    """The client's summary line (udping or xrpeer ud-client) as a dict, or None."""
    who = "udping: client" if prog == "udping" else "xrpeer: ud-client"
    m = re.findall(rf"{who} sent (\d+), received (\d+), lost (\d+), verified bytes (\d+) "
                   rf"\((\d+) of (\d+) messages answered\)", text)
    if not m:
        return None
    return dict(zip(("sent", "received", "lost", "verified", "answered", "count"), map(int, m[-1])))


def server_summary(text, prog):
    who = "udping: server" if prog == "udping" else "xrpeer: ud-server"
    m = re.findall(rf"{who} received (\d+), echoed (\d+), bad (\d+), errors (\d+), verified bytes (\d+)", text)
    if not m:
        return None
    return dict(zip(("received", "echoed", "bad", "errors", "verified"), map(int, m[-1])))


def check_exchange(c, s, size, count, dropped, raw_server=False):
    """A client's and a server's summaries: (ok, info). dropped: frames the
    link dropped (None: a clean link, where nothing may be lost)."""
    if c is None or s is None:
        return False, f"no summary line (client {c}, server {s})"
    info = (f"client sent {c['sent']} received {c['received']} lost {c['lost']} answered "
            f"{c['answered']}/{c['count']}; server received {s['received']} echoed {s['echoed']} "
            f"bad {s['bad']} errors {s['errors']}; link dropped {dropped}")
    ok = (c["answered"] == c["count"] == count and c["lost"] == c["sent"] - c["received"]
          and c["verified"] == c["received"] * size and c["sent"] >= count
          and s["bad"] == 0 and s["errors"] == 0 and s["echoed"] == s["received"]
          and (raw_server or s["verified"] == s["received"] * size))
    missing = (c["sent"] - s["received"]) + (s["echoed"] - c["received"])
    if dropped is None:   # a resend (an echo late on a loaded host) is allowed; nothing may go missing
        ok = ok and c["lost"] == 0 and missing == 0
    else:
        ok = ok and 0 <= missing <= dropped and c["sent"] - s["received"] >= 0
    return ok, info


def dropped_total(st):
    return sum(d["dropped"]["total"] for d in st["directions"])


def xv6_run(loss, count, size):
    spec = f"loss {loss}% seed 21" if loss != "0" else None
    with Testbed(2, both=spec, name=f"udping-loss{loss}") as tb:
        tb.boot()
        a, b = tb.guests
        a.send(f"udping server --idle {IDLE_S}")
        m = a.expect(r"udping: server qpn (\d+) qkey 0x11111111 mtu (\d+): echoing datagrams\n", timeout=60)
        b.send(f"udping client {tb.ip(0)} --qpn {m[1]} -s {size} -n {count} --imm")
        b.expect(r"udping: client sent \d+.*\n", timeout=600)
        a.expect(r"udping: server received \d+.*\n", timeout=120)
        for g in tb.guests:
            g.expect(r"\$ $", timeout=30)
        st = tb.stats()
        srv, cli = a.output(), b.output()
        for g in tb.guests:
            g.send("halt 0")
        for g in tb.guests:
            g.wait_exit(30)
    return check_exchange(client_summary(cli, "udping"), server_summary(srv, "udping"), size, count,
                          None if spec is None else dropped_total(st))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--loss", type=float, nargs="+", default=[0, 1])
    ap.add_argument("-n", type=int, default=300, help="messages per run")
    ap.add_argument("-s", type=int, default=1000, help="bytes per message")
    args = ap.parse_args()
    tally = Tally()
    for loss in args.loss:
        loss_s = f"{loss:g}"
        tally.run(f"udping_xv6_loss{loss_s}", lambda: xv6_run(loss_s, args.n, args.s))
    return tally.finish()


if __name__ == "__main__":
    sys.exit(main())
