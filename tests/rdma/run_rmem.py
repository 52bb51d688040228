#!/usr/bin/env python3
"""run_rmem.py: the memory node rmemd and librmem (docs/rmem.md,
proto-spec/rmem.md) on two xv6 guests over linkemu: rmemd on guest 0,
the clients on guest 1.

  rmem_<case>_loss<L>   rmemtest's cases (user/tests/rmemtest.c) against
                        `rmemd -m 4 -l 3072`, at 0 % and 1 % loss:
    alloc_write_read_free  ALLOC rounds up to pages and gives zeroed memory,
                        WRITE then READ, STAT, FREE [RMEM-OP-1] [RMEM-OP-3]
                        [RMEM-OP-4] [RMEM-ISO-3] [RMEM-DATA-1] [RMEM-CONN-2]
    inflight_1mib       64 WRITEs then 64 READs of 16 KiB in flight, 1 MiB
                        intact [RMEM-DATA-1]
    errors              every status of ALLOC and FREE, each changing
                        nothing [RMEM-OP-2] [RMEM-OP-3] [RMEM-ERR-1]
    bad_requests        malformed requests on the wire [RMEM-MSG-5]
    outstanding_requests  16 requests before any reply, twice
                        [RMEM-CONN-3] [RMEM-MSG-4]
    isolation           another client's rkey (READ and WRITE), a forged
                        rkey, a range past the region, a freed region's
                        rkey: a remote access error and no byte moved; at
                        1 % loss (rmemtest -l) a lost NAK may end the
                        connection instead [RMEM-ISO-1] [RMEM-ISO-2]
                        [RMEM-DATA-2] [RMEM-DATA-3]
    exit_frees          a client that dies holding regions [RMEM-LIFE-1]
  rmem_counters_loss<L> rmemd's counters after the cases: every client
                        ended, every region allocated either FREEd or
                        reaped at disconnect, the pool whole, the errors
                        the cases provoked counted [RMEM-LIFE-1] [RMEM-LIFE-3]
  rmem_example_loss<L>  user/lib/rmem/example.c (the guide's program) prints OK
  rmem_server_restart   a client holding a region while rmemd is killed
                        sees the server gone (ECONNRESET) and its READ fail;
                        a new rmemd starts with a whole pool, the client
                        before it is not counted [RMEM-LIFE-2]
  rmem_too_many_clients rmemd -c 1: a second connection is refused
                        (ECONNREFUSED) while the first works [RMEM-CONN-1]

Usage: python3 tests/rdma/run_rmem.py [--loss 0 1] [--only cases example restart clients]
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
from guest import GuestError  # noqa: E402

PORT = 7471               # RMEM_PORT (kernel/rmem/rmem_wire.h)
POOL = 4 << 20            # rmemd -m 4, as rmemtest.c assumes
READY = r"rmemd: listening on port (\d+) \(pid (\d+)\)"
ECONNRESET, ECONNREFUSED = 104, 111   # kernel/lib/uapi.h
COUNTERS = re.compile(
    r"rmemd: counters: clients accepted (\d+) rejected (\d+) ended (\d+) live (\d+);"
    r" requests ALLOC (\d+) FREE (\d+) STAT (\d+); errors (.*?); regions allocated (\d+)"
    r" \((\d+) bytes\) freed (\d+) \((\d+) bytes\) reaped (\d+) \((\d+) bytes\);"
    r" pool free (\d+) of (\d+) bytes")
NAMES = ("accepted", "rejected", "ended", "live", "alloc", "free", "stat", "errors",
         "regions", "bytes", "freed", "freed_bytes", "reaped", "reaped_bytes", "pool_free", "pool")


def wait_counters(g, accepted, timeout=60):
    """Waits for rmemd's whole counters line saying every client (at least
    `accepted`, or exactly if an int) has ended; returns it as a dict."""
    acc = str(accepted) if isinstance(accepted, int) else r"\d+"
    m = g.expect(rf"rmemd: counters: clients accepted ({acc}) rejected \d+ ended \1 live 0;"
                 r"[^\n]* pool free \d+ of \d+ bytes\n", timeout=timeout)
    return counters(m[0])


def counters(text):
    """rmemd's last counters line in text as a dict, or None."""
    found = COUNTERS.findall(text)
    if not found:
        return None
    c = dict(zip(NAMES, found[-1]))
    errors = dict(re.findall(r"(RMEM_\w+) (\d+)", c.pop("errors")))
    c = {k: int(v) for k, v in c.items()}
    c["errors"] = {k: int(v) for k, v in errors.items()}
    return c


def start_rmemd(g, args="-m 4 -l 3072"):
    m = g.spawn(f"rmemd {args}", READY, timeout=60)
    return int(m[2])


def cases_run(tally, loss):
    """rmemtest's cases, then rmemd's counters and the example, on one bed."""
    spec = f"loss {loss}% seed 17" if loss != "0" else None
    with Testbed(2, both=spec, name=f"rmem-loss{loss}") as tb:
        tb.boot()
        a, b = tb.guests
        start_rmemd(a)
        lossy = " -l" if spec else ""
        out = b.run(f"rmemtest{lossy} -s {tb.ip(0)}", timeout=1500)
        for name, verdict, why in re.findall(r"^test (\S+): (OK|FAILED)(?: \((.*)\))?$", out, re.M):
            tally.record(f"{name}_loss{loss}", verdict == "OK", why)
        summary = re.search(r"^(\d+) passed, (\d+) failed$", out, re.M)
        if not summary or int(summary[1]) == 0:
            tally.record(f"rmem_cases_loss{loss}", False, f"no summary: {out[-300:]!r}")
        ex = b.run(f"rmem_example {tb.ip(0)}", timeout=300)
        tally.record(f"rmem_example_loss{loss}", "rmem_example: OK" in ex and "intact" in ex,
                     ex.strip()[-200:].replace("\n", " | "))
        # Every client has ended by now (rmemtest and the example closed
        # theirs); the counters line after the last end counts every client
        # whose "connected" line rmemd printed (each such line came before
        # that client's first reply, so all are in the transcript by now).
        c = wait_counters(a, None)
        while c["accepted"] < len(re.findall(r"rmemd: client \d+ \([\d.]+\) connected", a.output())):
            c = wait_counters(a, None)
        tb.halt()
    ok, info = check_counters(c)
    tally.record(f"rmem_counters_loss{loss}", ok, info)


def check_counters(c):
    """Every region allocated was freed or reaped; the pool is whole; the
    errors rmemtest provoked were counted. [RMEM-LIFE-1] [RMEM-LIFE-3]"""
    if c is None:
        return False, "no counters line"
    e = c["errors"]
    ok = (c["live"] == 0 and c["regions"] == c["freed"] + c["reaped"]
          and c["bytes"] == c["freed_bytes"] + c["reaped_bytes"]
          and c["reaped"] >= 3                 # rmem_exit_frees' child held 3
          and c["pool_free"] == c["pool"] == POOL
          and e.get("RMEM_EBADID", 0) >= 3 and e.get("RMEM_ERANGE", 0) >= 2
          and e.get("RMEM_ELIMIT", 0) >= 3 and e.get("RMEM_ENOMEM", 0) >= 1
          and e.get("RMEM_EBADVER", 0) >= 1 and e.get("RMEM_EBADREQ", 0) >= 5)
    return ok, (f"clients {c['accepted']} ended {c['ended']}; regions {c['regions']} = freed "
                f"{c['freed']} + reaped {c['reaped']}; pool free {c['pool_free']} of {c['pool']}; "
                f"errors {e}")


def hold(tb, rmemd_args):
    """Boots tb, starts rmemd on guest 0 and a client holding a region on
    guest 1 (`rmemtest hold`); returns the guests and rmemd's pid."""
    tb.boot()
    a, b = tb.guests
    pid = start_rmemd(a, rmemd_args)
    b.send(f"rmemtest -s {tb.ip(0)} hold")
    b.expect(r"rmemtest: holding region \d+\n", timeout=120)
    return a, b, pid


def restart_run():
    """Kill rmemd under a client holding a region; start it again. [RMEM-LIFE-2]"""
    with Testbed(2, name="rmem-restart") as tb:
        a, b, pid = hold(tb, "-m 4 -l 3072")
        a.run(f"kill {pid}", timeout=30)
        gone = b.expect(r"rmemtest: server gone: errno (\d+) \((.*)\)\n", timeout=120)
        after = b.expect(r"rmemtest: READ after: (-?\d+) errno (\d+)\n", timeout=60)
        b.expect(r"\$ $", timeout=30)
        start_rmemd(a)
        ex = b.run(f"rmem_example {tb.ip(0)}", timeout=300)
        c = wait_counters(a, 1)
        tb.halt()
    ok = (int(gone[1]) == ECONNRESET and after[1] == "-1" and int(after[2]) == ECONNRESET
          and "rmem_example: OK" in ex and c is not None and c["regions"] == 1 and c["freed"] == 1)
    return ok, (f"client: server gone errno {gone[1]} ({gone[2]}), READ after {after[1]} errno "
                f"{after[2]}; new rmemd: example {'OK' if 'rmem_example: OK' in ex else ex[-120:]!r}, "
                f"regions {c and c['regions']}")


def clients_run():
    """rmemd -c 1 refuses a second client and serves the first. [RMEM-CONN-1]"""
    with Testbed(2, name="rmem-clients") as tb:
        a, b, _ = hold(tb, "-m 4 -c 1")
        # The shell is busy with the holder: the second client runs on guest 0.
        ex = a.run(f"rmem_example {tb.ip(0)}", timeout=120)
        refused = a.output().count("rmemd: refusing a client")
        tb.halt()
    ok = "rmem_example: connect:" in ex and "REJECTED" in ex and refused == 1
    return ok, f"second client: {ex.strip()[-160:]!r}; rmemd refusals {refused}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--loss", nargs="+", default=["0", "1"])
    ap.add_argument("--only", nargs="+", choices=["cases", "restart", "clients"])
    args = ap.parse_args()
    tally = Tally()
    if not args.only or "cases" in args.only:
        for loss in args.loss:
            try:
                cases_run(tally, loss)
            except GuestError as e:
                tally.record(f"rmem_bed_loss{loss}", False, f"guest error: {e}")
    if not args.only or "restart" in args.only:
        tally.run("rmem_server_restart", restart_run, timed=False)
    if not args.only or "clients" in args.only:
        tally.run("rmem_too_many_clients", clients_run, timed=False)
    return tally.finish()


if __name__ == "__main__":
    sys.exit(main())
