#!/usr/bin/env python3
"""run_rmem_paging.py: demand paging (kernel/core/pager.c) to a memory node
through the kernel's client (kernel/rmem/rmem_client.c). Two xv6 guests on
linkemu: guest 0 runs R's `rmemd`; guest 1 boots with only 48M of RAM
(QEMU -m, read from the device tree) and rmem=<guest 0>:PORT. Clean and at
1 % loss:

  rmem_paging_small_guest (clean)
                  guest 1's `free` counts the RAM of a 48M guest (fewer pages
                  than a 128M guest's), and its pager took the memory node
                  as its store ("pager: paging to memory node ...").
  rmem_paging_memtouch_2x_loss<L>
                  memtouch with a working set at least twice guest 1's free
                  memory (sequential scans, then seeded random 4 KiB
                  touches that rewrite pages; every 8-byte word checked):
                  "memtouch: ok", faults and evictions > 0, no MISMATCH.
  rmem_paging_two_processes_loss<L>
                  memtouch -f: two such processes at once (the second with
                  another seed), both "memtouch: ok", exit status 0.
  rmem_paging_beside_busy_owner_loss<L>
                  a busy memtouch (its set fits: it never sleeps, so it is
                  on a hart whenever the clock looks) holds about half the
                  free memory while memtouch -n 3 pages three more sets of
                  twice the rest at once: all three "memtouch: ok" (sbrk
                  and faults wait for the busy owner to give pages back
                  instead of failing; pager.c's top), the busy one is
                  still running after them (killed then).
  rmem_paging_stats (clean)
                  `free -v`: pages paged out and in the store, faults,
                  evictions, write-back batches, read-ahead issued and hits
                  all counted; the latency histogram sums to its count.
  rmem_paging_node_killed (clean, last)
                  rmemd is killed while memtouch pages: memtouch is killed
                  with "pid N (memtouch): killed: memory node ...
                  unreachable", the kernel keeps running and a shell
                  answers.

make test-interop runs the memtouch cases with the memory node on Linux
(R's rmemd built against rdma-core, rxe0): linux_node_bed below.

Without a memory node (one guest, the TEST-ONLY in-RAM store of
kernel/selftest_pager.c, boot argument pagertest=N):

  pager_usertests_under_paging
                  a 104M guest gives 14000 pages to the test store, leaving
                  about 2400 free: usertests -q (fork, exec, pipes, sbrk,
                  bad pointers, kills) all pass while the pager evicts
                  (evictions > 0 in free -v).

Every case fails without paging: memtouch cannot sbrk twice the free memory.
Usage: python3 tests/rdma/run_rmem_paging.py [--loss 0 1]
Prints "test NAME: OK|FAILED (info)" per case and "N passed, M failed".
"""
import argparse
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "net"))
sys.path.insert(0, os.path.join(HERE, "..", "harness"))
from guest import Guest  # noqa: E402
from launch import Testbed  # noqa: E402
from tally import Tally  # noqa: E402
# The same bed as the client's own test: rmemd's port and pool, the retry
# budget, guest 1's memory (about 4 MiB free after boot and the client).
from run_rmem_client import BUDGET, CLIENT_MEM, NODE_POOL_MIB, PORT, start_node  # noqa: E402

FULL_GUEST_PAGES = 23049   # a 128M guest's total pages (docs/kernel.md)
# How long the kill may take to show: the transport's ~3 s to give up on a
# dead peer, the budget, and a loaded host's slack.
KILL_DEADLINE = BUDGET + 120
STORE_LINE = r"pager: paging to memory node \S+ \((\d+) slots\)"


def free_pages(g):
    out = g.run("free", timeout=60)
    return int(re.search(r"^free:\s+(\d+) pages", out, re.M)[1]), out


def working_set_mib(g):
    """MiB of a working set at least twice g's free memory."""
    free, _ = free_pages(g)
    return -(-2 * free * 4096 // (1 << 20)), free


def small_guest(g):
    _, out = free_pages(g)
    total = int(re.search(r"^total:\s+(\d+) pages", out, re.M)[1])
    store = re.search(STORE_LINE, g.output())
    ok = 0 < total < FULL_GUEST_PAGES // 2 and store is not None and int(store[1]) > 0
    return ok, f"total {total} pages (a 128M guest: {FULL_GUEST_PAGES}); store line {store[0] if store else None!r}"


def results(out):
    """memtouch's result lines: {pid: {key: int}}."""
    found = {}
    for m in re.finditer(r"^memtouch: ok pid (\d+) (.*?)\r?$", out, re.M):
        words = m[2].split()
        found[m[1]] = {k: int(v) for k, v in zip(words[::2], words[1::2])}
    return found


def memtouch_2x(g):
    ws, free = working_set_mib(g)
    out = g.run(f"status memtouch -q -m {ws} -r 2000", timeout=3600)
    res = results(out)
    r = next(iter(res.values()), {})
    ok = (len(res) == 1 and "status: memtouch exited 0" in out and "MISMATCH" not in out and
          r.get("faults", 0) > 0 and r.get("evictions", 0) > 0 and ws * 256 >= 2 * free)
    return ok, f"{ws} MiB, free {free} pages: {r or out.strip()[-300:]!r}"


def two_processes(g):
    ws, free = working_set_mib(g)
    out = g.run(f"status memtouch -q -f -m {ws} -r 1000", timeout=3600)
    res = results(out)
    ok = len(res) == 2 and "status: memtouch exited 0" in out and "MISMATCH" not in out and \
        all(r["faults"] > 0 for r in res.values())
    return ok, f"{ws} MiB each, free {free} pages: {res or out.strip()[-300:]!r}"


def kill_job(g, pid, timeout=120):
    """Kills background job pid and waits until it is gone (the shell
    reaps it during the next foreground command: `kill` itself). Returns
    (it was there, it is gone)."""
    there = "no process" not in g.run(f"kill {pid}", timeout=60)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if "no process" in g.run(f"kill {pid}", timeout=60):
            return there, True
    return there, False


def busy_owner(g):
    free, _ = free_pages(g)
    busy_mib = max(1, -(-free * 4096 // 2 // (1 << 20)))
    m = g.spawn(f"memtouch -m {busy_mib} -p 1000000000 -r 0", r"memtouch: pid (\d+) write done", timeout=600)
    ws, rest = working_set_mib(g)
    out = g.run(f"status memtouch -q -n 3 -m {ws} -r 500", timeout=3600)
    res = results(out)
    busy, gone = kill_job(g, m[1])
    ok = len(res) == 3 and "status: memtouch exited 0" in out and "MISMATCH" not in out and \
        "FAILED" not in out and busy and gone
    return ok, f"busy pid {m[1]} {busy_mib} MiB of {free} free pages; {ws} MiB x 3 beside it " \
               f"(then {rest} free): {res or out.strip()[-300:]!r}; busy one running after: {busy}, gone: {gone}"


def stats(g):
    out = g.run("free -v", timeout=60)
    v = {k: int(n) for k, n in re.findall(r"^(\w+):\s+(\d+)", out, re.M)}
    hist = re.search(r"^lat_hist_us:((?: \d+)+)", out, re.M)
    hist_sum = sum(int(x) for x in hist[1].split()) if hist else -1
    need = ("faults", "evictions", "writebacks", "wb_batches", "ra_issued", "ra_hits", "slots_used")
    ok = all(v.get(k, 0) > 0 for k in need) and hist_sum == v.get("lat_count") and \
        "paged:" in out and "resident:" in out and v.get("writebacks", 0) >= v.get("wb_batches", 1)
    return ok, " ".join(f"{k} {v.get(k)}" for k in need + ("lat_count", "clean_evictions")) + \
        f"; histogram sum {hist_sum}"


def node_killed(tb, node_pid):
    a, b = tb.guests
    ws, _ = working_set_mib(b)
    b.send(f"memtouch -m {ws} -p 1000 -r 0")
    b.expect(r"memtouch: pid (\d+) write done", timeout=3600)
    a.run(f"kill {node_pid}", timeout=30)
    m = b.expect(r"pid (\d+) \(memtouch\): killed: (memory node \S+ unreachable[^\n]*)\n",
                 timeout=KILL_DEADLINE)
    b.expect(r"\$ $", timeout=120)
    alive = "alive" in b.run("echo alive", timeout=60)
    ok = alive and "MISMATCH" not in b.output()
    return ok, f"pid {m[1]}: {m[2]!r}; shell answers: {alive}"


def usertests_under_paging():
    with Guest("rmem-paging-usertests", memory="104M", append="pagertest=14000") as g:
        g.boot(timeout=120)
        out = g.run("usertests -q", timeout=1800)
        summary = re.search(r"^(\d+) passed, (\d+) failed", out, re.M)
        v = dict(re.findall(r"^(\w+):\s+(\d+)", g.run("free -v", timeout=60), re.M))
        g.halt(0, timeout=60)
    ok = summary is not None and summary[2] == "0" and int(summary[1]) > 0 and int(v.get("evictions", 0)) > 0
    return ok, f"usertests: {summary[0] if summary else out.strip()[-300:]!r}; evictions {v.get('evictions')} " \
               f"faults {v.get('faults')}"


def make_client(g, node_ip):
    """Before boot: g becomes the small guest paging to node_ip."""
    g.memory = CLIENT_MEM
    g.append += f" rmem={node_ip}:{PORT} rmem_budget={BUDGET}"


def linux_node_bed(tally, name, xv6, lnx):
    """The memtouch cases against rmemd on the Linux guest lnx (xv6 made
    by make_client); for tests/interop/run_interop.py."""
    if not lnx.start_server(f"rmemd -p {PORT} -m {NODE_POOL_MIB}", probe="cat /tmp/server.log",
                            ready="rmemd: listening on port", timeout=60):
        tally.record(f"interop_{name}_rmemd_listens", False, lnx.run("cat /tmp/server.log"))
        return
    xv6.expect(STORE_LINE, timeout=180)
    tally.run(f"interop_{name}_memtouch_2x", lambda: memtouch_2x(xv6))
    tally.run(f"interop_{name}_two_processes", lambda: two_processes(xv6))
    xv6.halt(0, timeout=60)           # before the node: the shell's pages may be there


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--loss", type=float, nargs="+", default=[0, 1])
    args = ap.parse_args()
    t = Tally()
    t.run("pager_usertests_under_paging", usertests_under_paging)
    for loss in args.loss:
        loss_s = f"{loss:g}"
        spec = f"loss {loss_s}% seed 7" if loss else None
        with Testbed(2, both=spec, name=f"rmem-paging-loss{loss_s}") as tb:
            a, b = tb.guests
            make_client(b, tb.ip(0))
            tb.boot(timeout=180)
            node = start_node(a)
            b.expect(STORE_LINE, timeout=180)
            if not loss:
                t.run("rmem_paging_small_guest", lambda: small_guest(b))
            t.run(f"rmem_paging_memtouch_2x_loss{loss_s}", lambda: memtouch_2x(b))
            t.run(f"rmem_paging_two_processes_loss{loss_s}", lambda: two_processes(b))
            t.run(f"rmem_paging_beside_busy_owner_loss{loss_s}", lambda: busy_owner(b))
            if not loss:
                t.run("rmem_paging_stats", lambda: stats(b))
                t.run("rmem_paging_node_killed", lambda: node_killed(tb, node))
            b.halt(0, timeout=60)     # the client first: its shell's pages may be on the node
            tb.halt()
    return t.finish()


if __name__ == "__main__":
    sys.exit(main())
