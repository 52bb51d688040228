#!/usr/bin/env python3
"""run_rmem_client.py: the kernel's own client of a memory node
(kernel/rmem/rmem_client.c) against R's xv6 rmemd, two guests over
linkemu: guest 0 runs `rmemd` (a 72 MiB pool: two regions), guest 1 boots with rmem=<guest 0>:PORT
(before rmemd runs, so the client's thread must retry with backoff) and a
short retry budget (rmem_budget=BUDGET seconds). Clean and at 1 % loss:

  rmem_client_connects_loss<L>
                  guest 1's `rmemctl status` says connected within the
                  deadline, with slots > 0 in >= 1 region, selective repeat
                  (both kernels offer it [SR-NEG-1]).
  rmem_client_selftest_<N>p_loss<L>
                  `rmemctl test N FIRST` (N pages of patterns written to slots
                  FIRST.. through the store's io(), read back into other
                  pages, compared byte by byte in the kernel): PASS, 0
                  mismatches, and the status counters grew by exactly N pages
                  and N x 4096 bytes each way (io() really moved them). The
                  128-page run straddles two regions when the node gave more
                  than one.
  rmem_client_concurrent_loss<L>
                  two `rmemctl test 128` at once on other slots (two callers
                  share the CQ and the send queue's room): both PASS.
Clean only:
  rmem_client_read_written
                  `rmemctl read 16 0` (slots the first self-test wrote): read 0.
  rmem_client_link_down
                  linkemu drops every frame both ways (the node's machine
                  gone, no DREQ): `rmemctl test` fails (write -1) within the
                  budget plus the transport's ~3 s of retries; with the link
                  back the client reconnects by itself (reconnects + 1) and
                  a test passes.
  rmem_client_node_killed
                  rmemd is killed; `rmemctl test` then fails (write -1)
                  within the budget plus the time the transport needs to
                  see the loss, the kernel keeps running (the shell answers,
                  status shows io_failed >= 1 and connected: no).
  rmem_client_node_back
                  rmemd runs again: the client reconnects by itself
                  (reconnects + 1); a read of slots written on the old
                  connection is refused (read -1, lost_reads grows: the node
                  freed them with the connection [RMEM-LIFE-1]); `rmemctl test`
                  on them passes again.
Both, last (paged-out pages of the shell and init must not meet a node kill):
  rmem_client_paging_loss<L>
                  memtouch with a working set twice guest 1's free memory
                  (CLIENT_MEM) pages through the client: "memtouch: ok"
                  (every byte checked), faults > 0, the client's pages_read
                  and pages_written grew by at least the faults.

Usage: python3 tests/rdma/run_rmem_client.py [--loss 0 1]
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
from guest import poll  # noqa: E402
from launch import Testbed  # noqa: E402
from tally import Tally  # noqa: E402

PORT = 7471             # kernel/rmem/rmem_wire.h RMEM_PORT
BUDGET = 5              # rmem_budget= seconds: io()'s retry budget in this bed
# The transport's own time to give up on a dead peer before the budget
# starts to count (ACK timeout 18, 7 retries: about 3 s, rmem_client.c), and
# a loaded host's slack.
DETECT_SLACK = 20
PAGES = (16, 128)       # 128: RMEM_TEST_MAX, the send queue's depth
# rmemd's pool: more than one region's worth (RMEM_MAX_REGION, 64 MiB), so
# the client holds two regions and a self-test crosses between them.
NODE_POOL_MIB = 72
CLIENT_MEM = "48M"      # guest 1: little free memory (about 4 MiB after boot)
KILLED_SLOT = 1024      # the failed write's slots: not those node_back reads
REGION_SLOTS = (64 << 20) // 4096   # rmem_wire.h RMEM_MAX_REGION in pages


def status(g):
    """guest g's `rmemctl status` as a dict of its "key: value" lines (the
    kernel's console lines that land between them, "rmem: ...", left out)."""
    out = g.run("rmemctl status", timeout=60)
    return {k: v for k, v in re.findall(r"^(\w+): (.*?)\r?$", out, re.M) if k not in ("rmem", "pager")}


def wait_connected(g, timeout):
    """Polls rmemctl status until connected: yes; the last status."""
    last = {}

    def probe():
        last.clear()
        last.update(status(g))
        return last.get("connected") == "yes"
    poll(probe, lambda ok: ok, timeout, interval=1.0)
    return last


def start_node(g, pool_mib=None):
    """rmemd with a pool of pool_mib MiB (default NODE_POOL_MIB) in the
    background on g; its pid."""
    pool_mib = pool_mib or NODE_POOL_MIB
    m = g.spawn(f"rmemd -p {PORT} -m {pool_mib}", r"rmemd: listening on port \d+ \(pid (\d+)\)", timeout=120)
    return int(m[1])


def connects(g):
    st = wait_connected(g, 180)
    ok = (st.get("connected") == "yes" and int(st.get("slots", 0)) > 0 and
          int(st.get("regions", 0)) >= 1 and st.get("transport") == "selective repeat")
    return ok, f"status {st}"


def counters(st):
    return [int(st.get(k, 0)) for k in ("pages_written", "pages_read", "bytes_written", "bytes_read")]


def first_slot(st, pages):
    """Slots for a self-test of pages: across the first region boundary
    when there are two regions (RMEM_MAX_REGION / 4096 slots each)."""
    return REGION_SLOTS - pages // 2 if int(st.get("regions", 0)) > 1 else 0


def selftest(g, pages, first):
    before = counters(status(g))
    out = g.run(f"rmemctl test {pages} {first}", timeout=300)
    after = counters(status(g))
    grew = [a - b for a, b in zip(after, before)]
    want = [pages, pages, pages * 4096, pages * 4096]
    ok = "rmemctl test: PASS" in out and re.search(r"^mismatches: 0\s*$", out, re.M) and grew == want
    return bool(ok), f"slots {first}..; counters grew {grew} (want {want}); {out.strip()[-120:]!r}"


def concurrent(g, slots):
    """Two self-tests at once on disjoint slots."""
    firsts = (slots // 2, slots // 2 + 128)
    out = g.run(f"rmemctl test 128 {firsts[0]} & rmemctl test 128 {firsts[1]}", timeout=300)
    verdicts = re.findall(r"rmemctl test: (PASS|FAIL)", out)
    if len(verdicts) < 2:     # the background one may finish after the prompt
        g.expect(r"rmemctl test: (PASS|FAIL)", timeout=300)
        verdicts = re.findall(r"rmemctl test: (PASS|FAIL)", g.output()[-4000:])[-2:]
    return verdicts == ["PASS", "PASS"], f"slots {firsts}: {verdicts}"


def read_written(g):
    out = g.run("rmemctl read 16 0", timeout=120)
    return bool(re.search(r"^read: 0 ", out, re.M)), f"{out.strip()[-120:]!r}"


def node_killed(tb, pid):
    a, b = tb.guests
    a.run(f"kill {pid}", timeout=30)
    t0 = time.monotonic()
    out = b.run(f"rmemctl test 16 {KILLED_SLOT}", timeout=BUDGET + DETECT_SLACK + 120)
    took = time.monotonic() - t0
    alive = "alive" in b.run("echo alive", timeout=30)
    st = status(b)
    ok = (re.search(r"^write: -1 ", out, re.M) and "rmemctl test: FAIL" in out and
          took <= BUDGET + DETECT_SLACK and alive and int(st.get("io_failed", 0)) >= 1 and
          st.get("connected") == "no")
    return bool(ok), f"failed after {took:.1f} s (budget {BUDGET} s + {DETECT_SLACK} s); " \
                     f"{out.strip()[-160:]!r}; status {st}"


def link_down(tb):
    b = tb.guests[1]
    before = int(status(b).get("reconnects", 0))
    tb.set_spec("both", "loss 100%")
    t0 = time.monotonic()
    try:
        out = b.run(f"rmemctl test 16 {KILLED_SLOT}", timeout=BUDGET + DETECT_SLACK + 120)
        took = time.monotonic() - t0
    finally:
        tb.set_spec("both", "")
    st = wait_connected(b, 120)
    again = b.run(f"rmemctl test 16 {KILLED_SLOT}", timeout=300)
    ok = (re.search(r"^write: -1 ", out, re.M) and took <= BUDGET + DETECT_SLACK and
          int(st.get("reconnects", 0)) == before + 1 and "rmemctl test: PASS" in again)
    return bool(ok), f"failed after {took:.1f} s (budget {BUDGET} s + {DETECT_SLACK} s): " \
                     f"{re.findall(r'write: -?[0-9]+', out)}; reconnects {before} -> {st.get('reconnects')}; " \
                     f"then {re.findall(r'rmemctl test: [A-Z]+', again)}"


def node_back(tb, written):
    """written: slots the first self-test wrote on the old connection."""
    a, b = tb.guests
    before = int(status(b).get("reconnects", 0))
    start_node(a)
    st = wait_connected(b, 120)
    lost0 = int(st.get("lost_reads", 0))
    rd = b.run(f"rmemctl read 16 {written}", timeout=120)
    lost = int(status(b).get("lost_reads", 0)) - lost0
    out = b.run(f"rmemctl test 64 {written}", timeout=300)
    ok = (int(st.get("reconnects", 0)) == before + 1 and re.search(r"^read: -1 ", rd, re.M) and lost == 1 and
          "rmemctl test: PASS" in out)
    return bool(ok), f"reconnects {st.get('reconnects')}; old slots read {re.findall(r'read: (-?[0-9]+)', rd)}, " \
                     f"lost_reads +{lost}; {out.strip()[-100:]!r}"


def paging(g):
    free = int(re.search(r"^free:\s+(\d+) pages", g.run("free", timeout=60), re.M)[1])
    ws = max(1, round(2 * free * 4096 / (1 << 20)))
    before = counters(status(g))
    out = g.run(f"memtouch -q -m {ws} -r 2000", timeout=1800)
    grew = [x - y for x, y in zip(counters(status(g)), before)]
    m = re.search(r"memtouch: ok .*faults (\d+) evictions (\d+)", out)
    ok = m and int(m[1]) > 0 and grew[1] >= int(m[1]) and grew[0] > 0
    return bool(ok), f"{ws} MiB (free {free} pages): {out.strip()[-200:]!r}; pages written / read {grew[:2]}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--loss", type=float, nargs="+", default=[0, 1])
    args = ap.parse_args()
    t = Tally()
    for loss in args.loss:
        loss_s = f"{loss:g}"
        spec = f"loss {loss_s}% seed 7" if loss else None
        with Testbed(2, both=spec, name=f"rmem-client-loss{loss_s}") as tb:
            a, b = tb.guests
            b.memory = CLIENT_MEM
            b.append += f" rmem={tb.ip(0)}:{PORT} rmem_budget={BUDGET}"
            tb.boot(timeout=180)
            pid = start_node(a)
            t.run(f"rmem_client_connects_loss{loss_s}", lambda: connects(b))
            st = status(b)
            written = 0
            for pages in PAGES:
                first = 0 if pages == PAGES[0] else first_slot(st, pages)
                t.run(f"rmem_client_selftest_{pages}p_loss{loss_s}", lambda: selftest(b, pages, first))
            t.run(f"rmem_client_concurrent_loss{loss_s}", lambda: concurrent(b, int(st.get("slots", 0))))
            if not loss:
                t.run("rmem_client_read_written", lambda: read_written(b))
                t.run("rmem_client_link_down", lambda: link_down(tb))
                t.run("rmem_client_node_killed", lambda: node_killed(tb, pid))
                t.run("rmem_client_node_back", lambda: node_back(tb, written))
            t.run(f"rmem_client_paging_loss{loss_s}", lambda: paging(b))
            tb.halt()
    return t.finish()


if __name__ == "__main__":
    sys.exit(main())
