#!/usr/bin/env python3
"""run_perftest_r.py: rdma_bw -R and rdma_lat -R (perftest's rdma_cm
exchange, user/bin/perftest_cm.c) between two xv6 guests over linkemu,
with the link captured: the tool with -R as server on guest 0, with -R and
the server's address as client on guest 1, the same -t, -s and -n on
both, each under `status`.

  perftest_r_<tool>_<op>
                    (rdma_bw write, read, send; rdma_lat send, write) both
                    exit 0; the client prints its table row; for rdma_bw's
                    write and read the server prints the client's result as
                    it came in the report exchange, and its size,
                    iterations and BW average equal the client's row; on the
                    wire, the SENDs of the comm connection (the first QP
                    pair; retransmissions counted once) have, in order, the
                    payload sizes Linux's perftest 6.06 sends (the version,
                    two 4-byte values and the MTU's 2 bytes, a per-QP message
                    of zeros, the test connection's REQ, a second one, the
                    per-QP messages, the 8-byte report values), both
                    directions alternating, the client first; the test QP
                    carries -n requests (bw) or -n each way (lat), the first
                    from the client, but for rdma_lat's WRITE from the
                    server, as ib_write_lat -R's. Before each run, rdma_lat
                    -R -t read on guest 1 must exit 2 with one line saying
                    it is not there yet.

Usage: python3 tests/rdma/run_perftest_r.py [--only rdma_bw_write ...]
Prints "test NAME: OK|FAILED (info)" per case and "N passed, M failed".
"""
import argparse
import os
import re
import struct
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "net"))
sys.path.insert(0, os.path.join(HERE, "..", "harness"))
from launch import Testbed  # noqa: E402
from tally import Tally  # noqa: E402

SIZE, ITERS = 4096, 200
ROCE_PORT = 4791
OP_SEND_FIRST, OP_SEND_ONLY, OP_WRITE_FIRST, OP_WRITE_ONLY, OP_READ_REQ = 0x00, 0x04, 0x06, 0x0A, 0x0C
# The comm connection's SEND payload sizes, one message each way per
# exchange, in the order Linux's perftest 6.06 sends them between two
# Linux guests (tests/vectors/cm/perftest-{write,read,send}.pcap,
# docs/linux-protocols.md): version 16; cycle buffer and cache line 4 each,
# the MTU 2 (as text, BTH pad count 2); a per-QP message of zeros 56
# before the test connection and one after; three per-QP messages (four
# for send) before the run; after it one, the five 8-byte report values
# and one more (send: one, no report). rdma_lat as ib_send_lat -R and
# ib_write_lat -R, captured the same way: four before the run; after it one
# (send) or none (write).
BEFORE = [16, 4, 4, 2, 56, 56, 56, 56, 56]
WIRE = {
    ("rdma_bw", "write"): BEFORE + [56] + [8] * 5 + [56],
    ("rdma_bw", "read"): BEFORE + [56] + [8] * 5 + [56],
    ("rdma_bw", "send"): BEFORE + [56] + [56],
    ("rdma_lat", "send"): BEFORE + [56] + [56],
    ("rdma_lat", "write"): BEFORE + [56],
}
# A request's first (or only) packet on the test QP.
TEST_OPCODES = {"write": (OP_WRITE_FIRST, OP_WRITE_ONLY), "read": (OP_READ_REQ,),
                "send": (OP_SEND_FIRST, OP_SEND_ONLY)}


def roce_frames(path):
    """(source IP, destination QPN, opcode, payload length (a READ
    request: the length it asks for), PSN) of each RoCEv2 frame of a pcap
    file, in order."""
    data = open(path, "rb").read()
    off, out = 24, []
    while off + 16 <= len(data):
        incl = struct.unpack("<I", data[off + 8:off + 12])[0]
        f = data[off + 16:off + 16 + incl]
        off += 16 + incl
        if len(f) < 58 or f[12:14] != b"\x08\x00" or struct.unpack(">H", f[36:38])[0] != ROCE_PORT:
            continue
        src = ".".join(map(str, f[26:30]))
        op, pad, qpn = f[42], f[43] >> 4 & 3, int.from_bytes(f[47:50], "big")   # BTH's PadCnt
        # A READ request's length is its RETH's DMA length (bytes 12-15).
        n = int.from_bytes(f[66:70], "big") if op == OP_READ_REQ else len(f) - 58 - pad
        out.append((src, qpn, op, n, int.from_bytes(f[51:54], "big")))
    return out


def check_wire(frames, tool, op, client_ip, server_ip):
    """The comm QP pair's SENDs against WIRE; the test QPs' requests: -n
    from the client (bw), -n each way (lat), the server's first for
    rdma_lat's WRITE, the client's first otherwise."""
    seen, sends = set(), []
    for src, qpn, o, n, psn in frames:     # a retransmission is the same SEND
        if o == OP_SEND_ONLY and qpn != 1 and (qpn, psn) not in seen:
            seen.add((qpn, psn))
            sends.append((src, qpn, n))
    if not sends:
        return False, "no SEND on the wire"
    comm = {sends[0][1], next((q for s, q, n in sends if s != sends[0][0]), None)}
    got = [(s, n) for s, q, n in sends if q in comm]
    want = [(client_ip if i % 2 == 0 else server_ip, n) for i, n in enumerate(x for x in WIRE[tool, op] for _ in (0, 1))]
    # Requests by PSN: a retransmission is the same request.
    # A READ retried from the middle of its response asks for the rest
    # (a shorter RETH length at a later PSN): not a request of its own.
    test, first = {}, None
    for s, q, o, n, psn in frames:
        if o == OP_READ_REQ and n != SIZE:
            continue
        if q not in comm and q != 1 and o in TEST_OPCODES[op] and (q, psn) not in test:
            test[q, psn] = s
            first = first or s
    want_n = ITERS * (2 if tool == "rdma_lat" else 1)
    want_first = server_ip if (tool, op) == ("rdma_lat", "write") else client_ip
    ok = got == want and len(test) == want_n and first == want_first
    return ok, (f"comm SENDs {[n for _, n in got]}" + ("" if got == want else f", want {[n for _, n in want]}")
                + f"; test QP: {len(test)} of {want_n} {op} requests, the first from {first} (want {want_first})")


def run_op(tool, op):
    with tempfile.TemporaryDirectory(prefix="perftest-r-") as cap:
        with Testbed(2, pcap_dir=cap, name=f"perftest-r-{tool}-{op}") as tb:
            tb.boot()
            a, b = tb.guests
            refused = b.run(f"status rdma_lat -R -t read {tb.ip(0)}", timeout=60)
            opts = f"-R -t {op} -s {SIZE} -n {ITERS}"
            a.send(f"status {tool} {opts}")
            a.expect(r"waiting for a client on port \d+", timeout=60)
            b.send(f"status {tool} {opts} {tb.ip(0)}")
            cli_status = b.expect(rf"status: {tool} exited (-?\d+)\n", timeout=300)[1]
            srv_status = a.expect(rf"status: {tool} exited (-?\d+)\n", timeout=120)[1]
            srv, cli = a.output(), b.output()
            for g in tb.guests:
                g.send("halt 0")
            for g in tb.guests:
                g.wait_exit(30)
            client_ip, server_ip = tb.ip(1), tb.ip(0)
        frames = roce_frames(os.path.join(cap, "port0.pcap"))
    problems = []
    if not re.search(r"rdma_lat: -R with -t read: not yet", refused) or "exited 2" not in refused:
        problems.append(f"rdma_lat -R -t read said {refused.strip()[:200]!r}, want a refusal and exit 2")
    if cli_status != "0" or srv_status != "0":
        problems.append(f"exit status client {cli_status}, server {srv_status}: "
                        f"{re.findall(rf'^{tool}: .*$', srv + cli, re.M)[:3]}")
    row = re.search(rf"^ {SIZE} +{ITERS} +([\d.]+) +([\d.]+) +([\d.]+)", cli, re.M)
    if not row:
        problems.append("no result row on the client")
    if tool == "rdma_bw" and op != "send":
        rep = re.search(r"the client's result: (\d+) bytes x (\d+) iterations, BW peak ([\d.]+) MB/sec, "
                        r"BW average ([\d.]+) MB/sec", srv)
        if not rep or not row or (int(rep[1]), int(rep[2]), rep[4]) != (SIZE, ITERS, row[2]):
            problems.append(f"server's report {rep[0] if rep else None} against the client's row "
                            f"{row[0].strip() if row else None}")
    wire_ok, wire = check_wire(frames, tool, op, client_ip, server_ip)
    if not wire_ok:
        problems.append(wire)
    return not problems, "; ".join(problems) or f"both exit 0, row {row[0].strip()}; {wire}"


def main():
    ap = argparse.ArgumentParser()
    names = [f"{tool}_{op}" for tool, op in WIRE]
    ap.add_argument("--only", nargs="+", choices=names, default=names)
    args = ap.parse_args()
    t = Tally()
    for tool, op in WIRE:
        if f"{tool}_{op}" in args.only:
            t.run(f"perftest_r_{tool}_{op}", lambda: run_op(tool, op))
    return t.finish()


if __name__ == "__main__":
    sys.exit(main())
