#!/usr/bin/env python3
"""run_security.py: identifier randomness and clean-up after a kill, in guests.

test rand_ids (one guest): `rdmanet_test ids 64` registers 64 MRs and
creates 24 QPs and prints their keys and QPNs; this script checks
  [SEC-RAND-1] keys are never 0, no two live MRs share a key, lkey != rkey,
               and consecutive keys are not a counter (their differences are
               not constant and the random high 24 bits are all distinct);
  [SEC-RAND-4] QPNs lie in [2, 2^24), are distinct and not sequential.
It also reports how many low bits equal between consecutive values (a key
whose low byte is a table slot is a deviation from "no key is derived from
an MR index" in [SEC-RAND-1]: it is printed as a NOTE, see docs/rdma.md).

test kill_mid_transfer (two guests through linkemu): guest B runs
`rdmacp recv`, guest A `rdmacp send` of a 4 MiB file in the background
(1 % loss keeps it going ~8 s); 1.5 s in, both rdmacp processes are killed (their pids from
rdmastat's owner column). Afterwards rdmastat shows no QP on either guest
and sysinfo's free pages are back at the baseline taken before the copy
(no pinned page left: [SEC-RES-...] style clean-up of the exit hook).

Prints "test <name>: OK|FAILED (...)" per test.
"""
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "net"))
sys.path.insert(0, os.path.join(HERE, "..", "harness"))
from launch import Testbed  # noqa: E402
from guest import GuestError, progress  # noqa: E402


def not_counter(values):
    """True if the values do not follow a fixed stride (a counter)."""
    diffs = {(b - a) for a, b in zip(values, values[1:])}
    return len(diffs) > len(values) // 2


def rand_ids():
    with Testbed(2, name="rdmasec-ids") as tb:          # linkemu wants two ports
        tb.boot()
        out = tb.guests[0].run("rdmanet_test ids 64", timeout=120)
        tb.halt()
    mrs = [(int(a, 16), int(b, 16)) for a, b in re.findall(r"ids: mr ([0-9a-f]+) ([0-9a-f]+)", out)]
    qpns = [int(q, 16) for q in re.findall(r"ids: qp ([0-9a-f]+)", out)]
    problems = []
    keys = [k for pair in mrs for k in pair]
    if len(mrs) != 64 or len(qpns) != 24:
        problems.append(f"got {len(mrs)} MRs, {len(qpns)} QPs")
    # [SEC-RAND-1]: never 0, unique among live MRs, lkey != rkey, not a counter.
    if 0 in keys:
        problems.append("a key is 0 [SEC-RAND-1]")
    if len(set(keys)) != len(keys):
        problems.append("two live keys are equal [SEC-RAND-1]")
    if any(l == r for l, r in mrs):
        problems.append("lkey == rkey [SEC-RAND-1]")
    if not not_counter([l for l, _ in mrs]) or not not_counter([r for _, r in mrs]):
        problems.append("keys follow a fixed stride [SEC-RAND-1]")
    high = [k >> 8 for k in keys]
    if len(set(high)) < len(high) - 2:            # 24 random bits: collisions are ~never
        problems.append("the high 24 bits of keys repeat [SEC-RAND-1]")
    # [SEC-RAND-4]: range [2, 2^24), distinct, not sequential.
    if any(q < 2 or q >= 1 << 24 for q in qpns):
        problems.append("a QPN outside [2, 2^24) [SEC-RAND-4]")
    if len(set(qpns)) != len(qpns):
        problems.append("duplicate QPNs [SEC-RAND-4]")
    if not not_counter(qpns):
        problems.append("QPNs follow a fixed stride [SEC-RAND-4]")
    low_slot_keys = sum(1 for a, b in zip(keys[::2], keys[2::2]) if (b & 0xff) - (a & 0xff) == 1)
    note = (f"NOTE: {low_slot_keys} of {len(mrs) - 1} consecutive lkeys have low bytes one apart "
            f"(low byte = table slot), QPN low bytes {[q & 0xff for q in qpns[:6]]}...")
    info = f"{len(mrs)} MRs, {len(qpns)} QPs; first keys {[hex(k) for k in keys[:4]]}, " \
           f"first QPNs {[hex(q) for q in qpns[:4]]}; {note}"
    return not problems, ("; ".join(problems) + "; " if problems else "") + info


def free_pages(g):
    m = re.search(r"free:\s+(\d+) pages", g.run("free", timeout=30))
    return int(m.group(1)) if m else None


def qp_owners(g):
    """{pid: count} of the QPs rdmastat lists, and the 'N QPs' total."""
    out = g.run("rdmastat", timeout=30)
    pids = [int(p) for p in re.findall(r"^\d+\s+(\d+)\s+[0-9a-f]+\s", out, re.MULTILINE)]
    total = re.search(r"(\d+) QPs", out)
    return pids, int(total.group(1)) if total else -1


def kill_mid_transfer():
    with Testbed(2, both="loss 1% seed 3", name="rdmasec-kill") as tb:
        tb.boot()
        a, b = tb.guests
        a.run("rdmacp mkfile /k.bin 4194304 3", timeout=300)
        base = (free_pages(a), free_pages(b))
        b.send("rdmacp recv &")
        b.expect(r"rdmacp: waiting", timeout=60)
        a.send(f"rdmacp send /k.bin {tb.ip(1)} k.bin &")
        a.expect(r"\[\d+\]\s*\$ ", timeout=30)         # the job's pid and the prompt
        time.sleep(1.5)
        pids_a, _ = qp_owners(a)
        pids_b, _ = qp_owners(b)
        if not pids_a or not pids_b:
            tb.halt()
            return False, f"no QP to kill (A {pids_a}, B {pids_b}): the copy ended too soon?"
        progress("rdmasec", f"killing rdmacp: A pid {pids_a[0]}, B pid {pids_b[0]}")
        a.run(f"kill {pids_a[0]}", timeout=30)
        b.run(f"kill {pids_b[0]}", timeout=30)
        time.sleep(3)
        left = (qp_owners(a)[1], qp_owners(b)[1])
        after = (free_pages(a), free_pages(b))
        tb.halt()
    ok = left == (0, 0) and all(x is not None and y is not None and y + 8 >= x for x, y in zip(base, after))
    return ok, f"QPs left A {left[0]} B {left[1]}; free pages A {base[0]} -> {after[0]}, B {base[1]} -> {after[1]}"


def main():
    passed = failed = 0
    for name, fn in (("rand_ids", rand_ids), ("kill_mid_transfer", kill_mid_transfer)):
        t0 = time.monotonic()
        try:
            ok, info = fn()
        except GuestError as e:
            ok, info = False, f"guest error: {e}"
        print(f"test {name}: {'OK' if ok else 'FAILED'} ({time.monotonic() - t0:.0f} s; {info})", flush=True)
        passed += ok
        failed += not ok
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
