#!/usr/bin/env python3
"""run_atomic.py: remote atomics execute exactly once, also through a lossy
link. The counter server of user/bin/atomcount.c on one guest, its clients
on the others, over linkemu at each loss rate (seeded), FETCH_AND_ADD and
COMPARE_AND_SWAP increments. A case passes when every program prints OK
and, over all clients' reports:

  - the server's final counter equals the number of successful increments
    (a retransmitted atomic the responder executed a second time would
    leave it higher; the responder must answer a duplicate from its saved
    results, IBTA 9.7.5.2.5 / proto-spec [RESP-ATOMIC-*]);
  - the values returned are 0 .. total-1 once each: their count, smallest
    and largest, sum and sum of squares (mod 2^64) are those of 0 .. total-1
    (a duplicate answered with a fresh value, or a lost one, moves them);
    each client also checks that one QP's values strictly increase;
  - a lossy run lost frames, and at 5 % its server's responder received
    duplicate requests (xv6: atomcount's count from the QPs' rx_dup; rxe:
    its duplicate_request counter), so the duplicate path was exercised.

Also run by make test-rdma (--bed xv6, a step of tests/rdma/run_all.py) and
make test-interop (the beds atomic_xv6-rxe and atomic_rxe-xv6 of
tests/interop/run_interop.py).

Beds (--bed; default all):
  linux     rxe <-> rxe, the reference: server on one Linux guest, a client
            with 4 QPs on another
  xv6       xv6 <-> xv6: server on guest 0, clients with 2 QPs each on
            guests 1 and 2 (three guests, one counter)
  xv6-rxe   server on xv6, a client with 4 QPs on Linux
  rxe-xv6   server on Linux, a client with 4 QPs on xv6
Case names: atomic_<bed>_<faa|cas>_loss<L>.

Usage: python3 tests/rdma/run_atomic.py [--bed linux xv6 xv6-rxe rxe-xv6]
           [--loss 0 1 5] [--op faa cas] [--incs K] [--seed S]
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
from guest import Guest, GuestError  # noqa: E402

MASK = (1 << 64) - 1
BASE_PORT = 7472            # atomcount's default; each run takes the next
DEPTH = 4                   # atomics in flight per QP
LOSSES = (0, 1, 5)          # percent, on both link directions
OPS = ("faa", "cas")
INCS = 200                  # increments per QP
# (xv6 guests, Linux guests, index of the server, [(client index, QPs)]).
BEDS = {
    "linux": (0, 2, 0, [(1, 4)]),
    "xv6": (3, 0, 0, [(1, 2), (2, 2)]),
    "xv6-rxe": (1, 1, 0, [(1, 4)]),
    "rxe-xv6": (1, 1, 1, [(0, 4)]),
}
CLIENT = re.compile(r"atomcount: client qps (\d+) incs (\d+) tries (\d+) sum (\d+) sumsq (\d+) "
                    r"min (\d+) max (\d+)\n")
COUNTER = re.compile(r"atomcount: counter (\d+) after (\d+) connections\n")
XV6_DUPS = re.compile(r"atomcount: duplicate requests (\d+) ")
RXE_DUPS = "/sys/class/infiniband/rxe0/ports/1/hw_counters/duplicate_request"
DUPS_REQUIRED_AT = 5        # percent loss from which a run must have made duplicates
END = r"atomcount: (OK|FAILED)\n"


def expected(total):
    """Count, sum, sum of squares, min and max of 0 .. total-1 (mod 2^64)."""
    return {"incs": total, "sum": total * (total - 1) // 2 & MASK,
            "sumsq": (total - 1) * total * (2 * total - 1) // 6 & MASK,
            "min": 0, "max": total - 1}


def verify(server_text, client_texts, incs_each):
    """(ok, info) for one run's transcripts."""
    problems = []
    for name, text in [("server", server_text)] + client_texts:
        if "atomcount: OK" not in text:
            lines = [ln for ln in text.splitlines() if ln.startswith("atomcount:")]
            problems.append(f"{name} did not end OK: {lines[-3:]}")
    c = COUNTER.search(server_text)
    reports = [CLIENT.search(t) for _, t in client_texts]
    if problems or not c or not all(reports):
        return False, "; ".join(problems) or "a report line is missing"
    got = {"incs": 0, "sum": 0, "sumsq": 0, "min": MASK, "max": 0}
    tries = 0
    for r in reports:
        qps, incs, t, s, sq, lo, hi = (int(x) for x in r.groups())
        if incs != qps * incs_each:
            problems.append(f"a client made {incs} increments, not {qps} x {incs_each}")
        got["incs"] += incs
        got["sum"] = (got["sum"] + s) & MASK
        got["sumsq"] = (got["sumsq"] + sq) & MASK
        got["min"], got["max"] = min(got["min"], lo), max(got["max"], hi)
        tries += t
    total = got["incs"]
    counter = int(c[1])
    if counter != total:
        problems.append(f"counter {counter} after {total} completed increments")
    want = expected(total)
    for k in want:
        if got[k] != want[k]:
            problems.append(f"returned values' {k} {got[k]}, 0..{total - 1} has {want[k]}")
    return not problems, "; ".join(problems) or f"counter {counter} = {total} increments " \
        f"({tries} atomics sent), values 0..{total - 1} once each"


def dropped(tb):
    """Frames linkemu has dropped so far, both ways."""
    return sum(d["dropped"]["total"] for d in tb.stats()["directions"])


def rxe_duplicates(g):
    """rxe0's duplicate requests so far (Linux guest g)."""
    m = re.search(r"^(\d+)$", g.run(f"cat {RXE_DUPS}"), re.M)
    return int(m[1]) if m else None


def server_duplicates(srv, text, before):
    """The duplicate requests the server's responder answered in this run:
    xv6's atomcount prints them, rxe counts them (before: its count at the
    start). None if unknown."""
    if srv.prompt == Guest.prompt:
        m = XV6_DUPS.search(text)
        return int(m[1]) if m else None
    now = rxe_duplicates(srv)
    return now - before if now is not None and before is not None else None


def one_run(tb, bed, op, port, incs, loss):
    """The server, then every client at once; their transcripts checked. A
    lossy run must have lost frames, and from DUPS_REQUIRED_AT % on its
    server must have received duplicates (a lost ATOMIC_ACK, or a request
    resent behind a lost one), or it proved nothing about them."""
    _, _, srv_i, clients = BEDS[bed]
    dropped_before = dropped(tb)
    srv = tb.guests[srv_i]
    dups_before = rxe_duplicates(srv) if srv.prompt != Guest.prompt else None
    conns = sum(q for _, q in clients)
    start = len(srv.output())
    srv.send(f"atomcount -s -p {port} -c {conns}")
    srv.expect(rf"atomcount: listening on port {port}\n|{END}", timeout=60)
    starts = []
    for i, qps in clients:
        g = tb.guests[i]
        starts.append(len(g.output()))
        cas = " -C" if op == "cas" else ""
        g.send(f"atomcount -p {port} -q {qps} -k {incs} -d {DEPTH}{cas} {tb.ip(srv_i)}")
    texts = []
    for (i, _), s in zip(clients, starts):
        g = tb.guests[i]
        g.expect(END, timeout=600)
        g.expect(g.prompt, timeout=60)
        texts.append((f"client on {g.name}", g.output()[s:]))
    srv.expect(END, timeout=120)
    srv.expect(srv.prompt, timeout=60)
    ok, info = verify(srv.output()[start:], texts, incs)
    lost = dropped(tb) - dropped_before
    dups = server_duplicates(srv, srv.output()[start:], dups_before)
    if loss and lost == 0:
        ok, info = False, f"linkemu dropped nothing; {info}"
    if loss >= DUPS_REQUIRED_AT and not dups:
        ok, info = False, f"the server received no duplicate ({dups}); {info}"
    return ok, f"{info}; linkemu dropped {lost} frames, the server answered {dups} duplicates"


def run_bed(tally, bed, seed, losses=LOSSES, ops=OPS, incs=INCS):
    """Every loss rate and op on one bed, booted once (linkemu's spec changes
    between runs). After a failed case a program may still run on a guest:
    the bed's other cases are counted failed, not run."""
    n, linux, _, _ = BEDS[bed]
    cases = [(loss, op) for loss in losses for op in ops]
    # Linux's eth0 MTU 1500: rxe's path MTU is then 1024, xv6's default
    # (the kernel CM rejects a REQ with another path MTU, [IBCM-REJ-*]).
    try:
        with Testbed(n, linux=linux, linux_mtu=1500, name=f"atomic-{bed}") as tb:
            tb.boot(timeout=240)
            for k, (loss, op) in enumerate(cases):
                name = f"atomic_{bed}_{op}_loss{loss:g}"
                tb.set_spec("both", f"loss {loss:g}% seed {seed}" if loss else "")
                failed = tally.failed
                tally.run(name, lambda: one_run(tb, bed, op, BASE_PORT + 1 + k, incs, loss))
                if tally.failed > failed:
                    for loss2, op2 in cases[k + 1:]:
                        tally.record(f"atomic_{bed}_{op2}_loss{loss2:g}", False,
                                     f"not run: {name} failed on this bed")
                    return
            tb.halt()
    except GuestError as e:
        tally.record(f"atomic_{bed}", False, f"guest error: {e}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bed", nargs="+", choices=list(BEDS), default=list(BEDS))
    ap.add_argument("--loss", type=float, nargs="+", default=list(LOSSES))
    ap.add_argument("--op", nargs="+", choices=list(OPS), default=list(OPS))
    ap.add_argument("--incs", type=int, default=INCS, help="increments per QP")
    ap.add_argument("--seed", type=int, default=int(os.environ.get("RDMA_TEST_SEED", 7)))
    args = ap.parse_args()
    tally = Tally()
    for bed in args.bed:
        run_bed(tally, bed, args.seed, args.loss, args.op, args.incs)
    return tally.finish()


if __name__ == "__main__":
    sys.exit(main())
