#!/usr/bin/env python3
"""run_security.py: identifier randomness, the random source and clean-up after a kill, in guests.

test rand_ids (one guest): `rdmanet_test ids 64` registers 64 MRs and
creates 24 QPs and prints their keys and QPNs; this script checks
  [SEC-RAND-1] keys are never 0, all 128 keys (lkeys and rkeys) are
               distinct, so lkey != rkey, and consecutive keys are not a
               counter (their differences are not constant);
  [SEC-RAND-4] QPNs lie in [2, 2^24), are distinct and not sequential;
  both: no key or QPN is derived from a table slot. A slot in the low byte
  makes the low bytes of consecutive registrations step by one (0, 1,
  2, ...); among the 63 + 63 + 23 consecutive lkeys, rkeys and QPNs, at
  most STEP_LIMIT - 1 steps of one are allowed. With random identifiers
  each step is one with probability ~1/256 (the increments of independent
  uniform bytes are independent and uniform); bounding it by 1/250 the
  chance of a false failure is printed and asserted below 1e-15.

test kill_mid_transfer (two guests through linkemu): guest B runs
`rdmacp recv`, guest A `rdmacp send` of a 4 MiB file in the background,
both with a fixed 68.7 s ACK timeout. linkemu passes 300 frames from A
after the copy starts and drops every later one, so the copy is provably
in flight (unacknowledged frames, retransmission timers armed) on a host
of any speed. Once a frame has been dropped by that cut and both QPs are
in RTS, both rdmacp processes are killed (their pids from rdmastat's
owner column; the kills must find them). The test then waits until
rdmastat shows no QP on either guest and checks that sysinfo's free
pages are back at the baseline taken before the copy (no pinned page
left: the exit hook's clean-up).

test ids_differ_across_boots (two guests through linkemu, started in the
same second): both kernels say they seeded from virtio-rng ([SEC-RAND-6]);
`rdmanet_test ids 16` on each prints 32 keys, 16 QPNs, 16 connection IDs
and 16 starting PSNs, and no value of a kind appears on both guests
([SEC-RAND-6] [SEC-RAND-7] [SEC-RAND-3]; the time-seeded generators gave
both guests the same first connection ID). The chance that independent
random values collide is printed and asserted below 1e-4.

test conn_ids_differ_between_processes (one guest): IDS_PROCS copies of
`rdmanet_test ids 1` started together (`a & b & c ...`) each print one
connection ID and PSN; all IDs are non-zero and distinct [SEC-RAND-7]
(the user-space LCG gave every process started within ~4.3 s the same one).

test getrandom (one guest): the usertests cases sys_getrandom_bad_args_fail
and sys_getrandom_varies pass [SEC-RAND-9]: -1 for bad pointers, negative
lengths and flags, GETRANDOM_MAX per call, output not constant.

test boots_without_rng (one guest started without virtio-rng, the old
command line): the kernel boots, warns that it seeded from jitter alone,
and still hands out random keys and connection IDs [SEC-RAND-6].

Prints "test <name>: OK|FAILED (...)" per test. Arguments: test names to run
(default: all).
"""
import math
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "net"))
sys.path.insert(0, os.path.join(HERE, "..", "harness"))
from launch import Testbed  # noqa: E402
from guest import Guest, poll, progress  # noqa: E402
from tally import Tally  # noqa: E402


def not_counter(values):
    """True if the values do not follow a fixed stride (a counter)."""
    diffs = {(b - a) for a, b in zip(values, values[1:])}
    return len(diffs) > len(values) // 2


def slot_steps(values):
    """How many consecutive values have low bytes one apart (mod 256)."""
    return sum(1 for a, b in zip(values, values[1:]) if (b - a) & 0xff == 1)


STEP_LIMIT = 16             # fail at this many steps of one (old scheme: all 149)
STEP_P = 1 / 250            # bound on one step's probability for random ids


def binom_tail(n, p, t):
    """P(X >= t) for X ~ Binomial(n, p): the chance random ids fail the step test."""
    return sum(math.comb(n, k) * p ** k * (1 - p) ** (n - k) for k in range(t, n + 1))


def rand_ids():
    with Testbed(2, name="rdmasec-ids") as tb:          # linkemu wants two ports
        tb.boot()
        out = tb.guests[0].run("rdmanet_test ids 64", timeout=120)
        tb.halt()
    mrs = [(int(a, 16), int(b, 16)) for a, b in re.findall(r"ids: mr ([0-9a-f]+) ([0-9a-f]+)", out)]
    qpns = [int(q, 16) for q in re.findall(r"ids: qp ([0-9a-f]+)", out)]
    problems = []
    lkeys, rkeys = [l for l, _ in mrs], [r for _, r in mrs]
    keys = lkeys + rkeys
    if len(mrs) != 64 or len(qpns) != 24:
        problems.append(f"got {len(mrs)} MRs, {len(qpns)} QPs")
    # [SEC-RAND-1]: never 0, no key equal to any other live key, not a counter.
    if 0 in keys:
        problems.append("a key is 0 [SEC-RAND-1]")
    if len(set(keys)) != len(keys):
        problems.append("two live keys are equal (or lkey == rkey) [SEC-RAND-1]")
    if not not_counter(lkeys) or not not_counter(rkeys):
        problems.append("keys follow a fixed stride [SEC-RAND-1]")
    # [SEC-RAND-4]: range [2, 2^24), distinct, not sequential.
    if any(q < 2 or q >= 1 << 24 for q in qpns):
        problems.append("a QPN outside [2, 2^24) [SEC-RAND-4]")
    if len(set(qpns)) != len(qpns):
        problems.append("duplicate QPNs [SEC-RAND-4]")
    if not not_counter(qpns):
        problems.append("QPNs follow a fixed stride [SEC-RAND-4]")
    # Both: the low byte is not a table slot.
    steps = (slot_steps(lkeys), slot_steps(rkeys), slot_steps(qpns))
    pairs = max(len(lkeys) - 1, 0) + max(len(rkeys) - 1, 0) + max(len(qpns) - 1, 0)
    false_fail = binom_tail(pairs, STEP_P, STEP_LIMIT)
    assert false_fail < 1e-15, f"STEP_LIMIT too low: random ids fail with p = {false_fail:.1e}"
    if sum(steps) >= STEP_LIMIT:
        problems.append(f"low bytes step by one in {sum(steps)} of {pairs} consecutive ids "
                        f"(lkeys {steps[0]}, rkeys {steps[1]}, QPNs {steps[2]}): "
                        "a table slot [SEC-RAND-1] [SEC-RAND-4]")
    info = f"{len(mrs)} MRs, {len(qpns)} QPs; first keys {[hex(k) for pair in mrs[:2] for k in pair]}, " \
           f"first QPNs {[hex(q) for q in qpns[:4]]}; low-byte steps of one {sum(steps)}/{pairs} " \
           f"(limit {STEP_LIMIT}, false failure p < {false_fail:.0e}), " \
           f"QPN low bytes {[q & 0xff for q in qpns[:6]]}..."
    return not problems, ("; ".join(problems) + "; " if problems else "") + info


IDS_N = 16                  # rdmanet_test ids 16: 32 keys, 16 QPNs, 16 conn IDs, 16 PSNs
IDS_PROCS = 4               # processes started together
KINDS = (("key", 32), ("qpn", 24), ("conn", 32), ("psn", 24))   # (kind, bits)
SEEDED = r"random: ChaCha20 self-test ok; seeded from virtio-rng"


def parse_ids(out):
    """{kind: [values]} from rdmanet_test ids output."""
    ids = {"key": [int(x, 16) for pair in re.findall(r"ids: mr ([0-9a-f]+) ([0-9a-f]+)", out) for x in pair]}
    for kind in ("qp", "conn", "psn"):
        ids["qpn" if kind == "qp" else kind] = [int(x, 16) for x in re.findall(rf"ids: {kind} ([0-9a-f]+)", out)]
    return ids


def cross_collision_p(a, b):
    """Chance that independent uniform ids of each kind share a value between a and b."""
    return sum(len(a[k]) * len(b[k]) / 2 ** bits for k, bits in KINDS)


def ids_differ_across_boots():
    with Testbed(2, name="rdmasec-boots") as tb:
        tb.boot()
        starts = [g._started_at for g in tb.guests]
        seeded = [bool(re.search(SEEDED, g.output())) for g in tb.guests]
        outs = [g.run(f"rdmanet_test ids {IDS_N}", timeout=120) for g in tb.guests]
        tb.halt()
    a, b = (parse_ids(o) for o in outs)
    problems = []
    if abs(starts[0] - starts[1]) >= 1:
        problems.append(f"guests started {abs(starts[0] - starts[1]):.2f} s apart")
    if not all(seeded):
        problems.append(f"not seeded from virtio-rng: {seeded} [SEC-RAND-6]")
    want = {"key": 2 * IDS_N, "qpn": IDS_N, "conn": IDS_N, "psn": IDS_N}
    for g in (a, b):
        if {k: len(v) for k, v in g.items()} != want:
            problems.append(f"counts {({k: len(v) for k, v in g.items()})}, want {want}")
    common = {k: sorted(set(a[k]) & set(b[k])) for k, _ in KINDS}
    for k, vals in common.items():
        if vals:
            problems.append(f"{k} values on both guests: {[hex(v) for v in vals[:4]]} "
                            "[SEC-RAND-6] [SEC-RAND-7] [SEC-RAND-3]")
    if 0 in a["conn"] + b["conn"]:
        problems.append("a connection ID is 0 [SEC-RAND-7]")
    p = cross_collision_p(a, b)
    assert p < 1e-4, f"too many ids: random ones collide with p = {p:.1e}"
    info = f"started {abs(starts[0] - starts[1]):.2f} s apart; first conn IDs " \
           f"{[hex(g['conn'][0]) for g in (a, b) if g['conn']]}, first PSNs " \
           f"{[hex(g['psn'][0]) for g in (a, b) if g['psn']]}; false failure p < {p:.0e}"
    return not problems, ("; ".join(problems) + "; " if problems else "") + info


def conn_ids_differ_between_processes():
    with Guest("rdmasec-procs", cpus=2) as g:          # ids needs no network
        g.boot(timeout=120)
        start = len(g.output())
        g.send(" & ".join(["rdmanet_test ids 1"] * IDS_PROCS))
        for _ in range(IDS_PROCS):
            g.expect(r"rdmanet_test: OK", timeout=120)
        out = g.output()[start:]
    ids = parse_ids(out)
    conns = ids["conn"]
    problems = []
    if len(conns) != IDS_PROCS:
        problems.append(f"{len(conns)} connection IDs from {IDS_PROCS} processes")
    if len(set(conns)) != len(conns) or 0 in conns:
        problems.append("processes started together share a connection ID (or one is 0) [SEC-RAND-7]")
    if len(set(ids["psn"])) != len(ids["psn"]):
        problems.append("processes started together share a starting PSN [SEC-RAND-3]")
    p = len(conns) ** 2 / 2 ** 32 + len(ids["psn"]) ** 2 / 2 ** 24
    return not problems, ("; ".join(problems) + "; " if problems else "") + \
        f"conn IDs {[hex(c) for c in conns]}, PSNs {[hex(x) for x in ids['psn']]}; false failure p < {p:.0e}"


def getrandom():
    with Guest("rdmasec-getrandom", cpus=2) as g:
        g.boot(timeout=120)
        out = g.run("usertests sys_getrandom_bad_args_fail sys_getrandom_varies", timeout=120)
    ok = "2 passed, 0 failed" in out
    return ok, "; ".join(line for line in out.splitlines() if line.startswith("test ")) + " [SEC-RAND-9]"


def boots_without_rng():
    with Guest("rdmasec-norng", cpus=2, rng=False) as g:
        g.boot(timeout=120)
        warned = bool(re.search(r"random: warning: no virtio-rng device", g.output()))
        ids = parse_ids(g.run("rdmanet_test ids 4", timeout=120))
        g.send("halt 0")
        g.wait_exit(30)
    keys, conns = ids["key"], ids["conn"]
    ok = warned and len(keys) == 8 and 0 not in keys and len(set(keys)) == 8 and \
        len(conns) == 4 and 0 not in conns and len(set(conns)) == 4
    return ok, f"warning printed: {warned}; keys {[hex(k) for k in keys[:4]]}, conn IDs " \
               f"{[hex(c) for c in conns]} [SEC-RAND-6]"


def free_pages(g):
    m = re.search(r"free:\s+(\d+) pages", g.run("free", timeout=30))
    return int(m.group(1)) if m else None


def qp_table(g):
    """[(pid, state)] of the QPs rdmastat lists, and its 'N QPs' total."""
    out = g.run("rdmastat", timeout=30)
    rows = [(int(p), st) for p, st in
            re.findall(r"^\d+\s+(\d+)\s+[0-9a-f]+\s+[0-9a-f]+\s+(\S+)", out, re.MULTILINE)]
    total = re.search(r"(\d+) QPs", out)
    return rows, int(total.group(1)) if total else -1


def wait_until(what, probe, timeout):
    """Polls probe() until it returns a true value; that value, or raises."""
    value, ok = poll(probe, bool, timeout)
    if not ok:
        raise AssertionError(f"{what}: not within {timeout} s")
    return value


KILL_FILE = 4 << 20         # bytes; at least 1024 data frames at any path MTU
KILL_CUT = 300              # a2b frames that pass once the copy starts; then none
KILL_ACK_TIMEOUT = 24       # rdmacp -T: 68.7 s per try, so no retry limit ends the hold


def kill_mid_transfer():
    """The copy is held in flight by the link itself: once KILL_CUT more frames
    from A have passed, linkemu's drop list drops every later one, so the
    copy (>= 1024 data frames) cannot finish on any host, A has frames that
    will never be acknowledged and both QPs have retransmission timers armed
    (a fixed 68.7 s timeout: neither side gives up by itself during the test).
    The test waits for the first frame dropped by the cut, checks both QPs
    are in RTS, kills both rdmacp processes (the kill must find them), then
    waits for the exit hook to leave no QP and no pinned page."""
    with Testbed(2, name="rdmasec-kill") as tb:
        tb.boot()
        a, b = tb.guests
        a.run(f"rdmacp mkfile /k.bin {KILL_FILE} 3", timeout=300)
        base = (free_pages(a), free_pages(b))
        b.send(f"rdmacp recv -T {KILL_ACK_TIMEOUT} &")
        b.expect(r"rdmacp: waiting", timeout=60)
        cut = tb.stats()["directions"][0]["frames_in"] + KILL_CUT
        tb.set_spec("a2b", f"drop {cut}-{1 << 50}")
        a.send(f"rdmacp send /k.bin {tb.ip(1)} k.bin -T {KILL_ACK_TIMEOUT} &")
        a.expect(r"\[\d+\]\s*\$ ", timeout=30)         # the job's pid and the prompt
        wait_until("a frame from A dropped by the cut (the copy held in flight)",
                   lambda: tb.stats()["directions"][0]["dropped"]["droplist"] > 0, 120)
        rows_a, _ = qp_table(a)
        rows_b, _ = qp_table(b)
        if [st for _, st in rows_a] != ["RTS"] or [st for _, st in rows_b] != ["RTS"]:
            tb.halt()
            return False, f"held copy: QPs A {rows_a}, B {rows_b}; expected one in RTS on each"
        pid_a, pid_b = rows_a[0][0], rows_b[0][0]
        progress("rdmasec", f"copy held after {KILL_CUT} frames; killing rdmacp: A pid {pid_a}, B pid {pid_b}")
        killed = [g.run(f"kill {pid}", timeout=30) for g, pid in ((a, pid_a), (b, pid_b))]
        if any("no process" in out for out in killed):
            tb.halt()
            return False, f"an rdmacp had already exited before its kill: {killed}"
        try:
            wait_until("no QP left on either guest", lambda: qp_table(a)[1] == 0 == qp_table(b)[1], 60)
        except AssertionError as e:
            left = (qp_table(a)[1], qp_table(b)[1])
            tb.halt()
            return False, f"{e}: QPs left A {left[0]} B {left[1]}"
        after = (free_pages(a), free_pages(b))
        tb.halt()
    ok = all(x is not None and y is not None and y + 8 >= x for x, y in zip(base, after))
    return ok, f"held after {KILL_CUT} frames from A, both QPs in RTS, both killed; QPs left 0/0; " \
               f"free pages A {base[0]} -> {after[0]}, B {base[1]} -> {after[1]}"


def main():
    tests = (("rand_ids", rand_ids), ("kill_mid_transfer", kill_mid_transfer),
             ("ids_differ_across_boots", ids_differ_across_boots),
             ("conn_ids_differ_between_processes", conn_ids_differ_between_processes),
             ("getrandom", getrandom), ("boots_without_rng", boots_without_rng))
    wanted = sys.argv[1:] or [name for name, _ in tests]
    unknown = set(wanted) - {name for name, _ in tests}
    if unknown:
        print(f"unknown tests: {sorted(unknown)}; known: {[name for name, _ in tests]}")
        return 2
    tally = Tally()
    for name, fn in tests:
        if name in wanted:
            tally.run(name, fn)
    return tally.finish()


if __name__ == "__main__":
    sys.exit(main())
