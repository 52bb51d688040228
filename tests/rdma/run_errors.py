#!/usr/bin/env python3
"""run_errors.py: the RDMA tools' error messages, read as a person reads
them (make test-rdma's "errors" step).

Two guests on a lossless link (A 10.0.0.1, B 10.0.0.2). Each case runs a
tool in a way that must fail and checks that its one line names the
program, what it tried (option, address and port, file) and why:
  - numbers: rdma_bw -s 4294967297 (used to wrap to 1), -s 12x, rdma_lat -n 0,
    rdmacp -c 12, a missing value: the option, the text and the allowed
    range (the 8 MiB size limit among them); --help states the limits;
  - -t atomic: a size other than 8, -a, -R, -A alone or unknown, an
    unknown -t: each names the option and what it takes;
  - no listener: rdma_bw and rdmacp towards B on a port where nothing
    listens: B's kernel CM answers the REQ with a REJ (reason 8, invalid
    service ID, as Linux's does): "refused (REJ NO_LISTENER: no listener
    on that port)";
  - unreachable: towards 10.0.0.99, which no guest has: no ARP answer;
  - refused: rdmacp recv on B cannot create the destination file, rejects
    the REQ with its reason, and A says "refused" and why;
  - a failed completion: a copy with a fixed ACK timeout (-T 14, 67 ms x 8
    tries) whose A-to-B link linkemu cuts (loss 100 %) once 300 of A's frames
    have passed: A names the chunk's RDMA WRITE_WITH_IMM, the peer and the
    WC status ("transport retry counter exceeded"), not the flushes after it.
The last case leaves B's receiver waiting; the guests are killed at the end.
Each case waits for the tool's own line (deadlines, not sleeps).

Usage: python3 tests/rdma/run_errors.py
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(HERE, "..", "net"))
sys.path.insert(0, os.path.join(HERE, "..", "harness"))
from launch import Testbed  # noqa: E402
from guest import GuestError, poll  # noqa: E402
from tally import Tally  # noqa: E402

NOBODY = "10.0.0.99"          # on the link's subnet, no guest has it
FREE_PORT = 18600             # no program listens there


def header_define(path, name):
    """An integer #define (N, or (1u << K)) of a header: the one definition."""
    text = open(os.path.join(REPO, path)).read()
    m = re.search(rf"#define {name}\s+\(?(\d+)u?(?:\s*<<\s*(\d+))?\)?", text)
    return int(m[1]) << int(m[2] or 0)


def line_of(out, prog):
    """The tool's first line starting with 'prog: ' (or '')."""
    m = re.search(rf"^{re.escape(prog)}: [^\n]*", out, re.M)
    return m[0].strip() if m else ""


def check(out, prog, *parts):
    """(ok, info): the tool's line holds every part (regexes), in order."""
    line = line_of(out, prog)
    pattern = ".*".join(parts)
    ok = bool(line) and re.search(pattern, line) is not None
    return ok, f"{line!r}" + ("" if ok else f"; want /{pattern}/ in output {out.strip()[:300]!r}")


def number_cases(a):
    max_size = header_define("user/bin/rdma_perf.h", "PERF_MAX_SIZE")
    max_chunk = header_define("user/bin/rdmacp.c", "MAX_CHUNK")
    cases = [
        ("bw_size_wraps", "rdma_bw -s 4294967297 10.0.0.2", "rdma_bw",
         (r"-s 4294967297", "out of range", rf"allowed 1\.\.{max_size} bytes")),
        ("bw_size_trailing_junk", "rdma_bw -s 12x 10.0.0.2", "rdma_bw",
         (r"-s 12x", "not a number", rf"1\.\.{max_size}")),
        ("bw_size_too_big", f"rdma_bw -s {max_size + 1} -L", "rdma_bw",
         (rf"-s {max_size + 1}", "out of range", rf"1\.\.{max_size} bytes")),
        ("lat_iters_zero", "rdma_lat -n 0 -L", "rdma_lat", (r"-n 0", "out of range", r"allowed 1\.\.")),
        ("bw_missing_value", "rdma_bw -d", "rdma_bw", (r"-d needs a value",)),
        ("bw_bad_address", "rdma_bw 10.0.0.300", "rdma_bw", (r"10\.0\.0\.300", "not an IPv4 address")),
        ("rdmacp_chunk_small", "rdmacp send x 10.0.0.2 -c 12", "rdmacp",
         (r"-c 12", "out of range", rf"allowed 64\.\.{max_chunk} bytes")),
        ("rdmacp_port_junk", "rdmacp recv -p 80a", "rdmacp", (r"-p 80a", "not a number", r"1\.\.65535")),
        ("bw_atomic_size", "rdma_bw -t atomic -s 16 10.0.0.2", "rdma_bw",
         (r"-s with -t atomic", "an atomic moves 8 bytes")),
        ("lat_atomic_all_sizes", "rdma_lat -t atomic -a 10.0.0.2", "rdma_lat", (r"-a", "one size \(8 bytes\)")),
        ("bw_atomic_type_alone", "rdma_bw -A CMP_AND_SWAP 10.0.0.2", "rdma_bw", (r"-A needs -t atomic",)),
        ("bw_atomic_type_unknown", "rdma_bw -t atomic -A SWAP 10.0.0.2", "rdma_bw",
         (r"-A SWAP", "not an atomic", "CMP_AND_SWAP or FETCH_AND_ADD")),
        ("bw_atomic_perftest", "rdma_bw -t atomic -R 10.0.0.2", "rdma_bw", (r"-R with -t atomic", "not yet")),
        ("bw_op_unknown", "rdma_bw -t atomics 10.0.0.2", "rdma_bw",
         (r"-t atomics", "not an operation", "write, read, send or atomic")),
    ]
    results = []
    for name, cmd, prog, parts in cases:
        out = a.run(cmd, timeout=60)
        results.append((f"errors_{name}", *check(out, prog, *parts)))
    out = a.run("rdma_bw --help", timeout=60)
    ok = re.search(rf"-s N .*1\.\.{max_size} bytes", out) is not None
    results.append(("errors_bw_help_states_limits", ok, f"-s line: {re.search(r'.*-s N.*', out)[0].strip()!r}"
                    if ok else f"no '-s N ... 1..{max_size} bytes' in {out.strip()[:400]!r}"))
    return results


def connect_cases(tb):
    a, b = tb.guests
    ip_b = tb.ip(1)
    results = []
    out = a.run(f"rdma_bw -p {FREE_PORT} {ip_b}", timeout=120)
    results.append(("errors_bw_no_listener", *check(out, "rdma_bw", rf"connect to {re.escape(ip_b)} port {FREE_PORT}",
                                                     r"refused \(REJ NO_LISTENER", "no listener on that port")))
    out = a.run(f"rdma_bw {NOBODY}", timeout=120)
    results.append(("errors_bw_unreachable", *check(out, "rdma_bw", rf"connect to {re.escape(NOBODY)} port 18515",
                                                    "unreachable", r"no ARP answer within 2\.0 s")))
    a.run("rdmacp mkfile /err.bin 4096 3", timeout=60)
    out = a.run(f"rdmacp send /err.bin {ip_b} x.bin -p {FREE_PORT}", timeout=120)
    results.append(("errors_rdmacp_no_listener", *check(out, "rdmacp", rf"connect to {re.escape(ip_b)} port {FREE_PORT}",
                                                        r"refused \(REJ NO_LISTENER", "no listener on that port")))
    out = a.run(f"rdmacp send /err.bin {NOBODY}", timeout=120)
    results.append(("errors_rdmacp_unreachable", *check(out, "rdmacp", rf"connect to {re.escape(NOBODY)}",
                                                        "unreachable")))
    out = a.run("rdmacp send /nonexistent.bin 10.0.0.2", timeout=60)
    results.append(("errors_rdmacp_no_file", *check(out, "rdmacp", "cannot open /nonexistent.bin", "no such file")))
    # Refused: B listens, cannot create the file the REQ names, and says why in its REJ.
    b.send("rdmacp recv")
    b.expect(r"rdmacp: waiting", timeout=60)
    out = a.run(f"rdmacp send /err.bin {ip_b} nodir/x.bin", timeout=120)
    said_b = b.expect(r"rdmacp: [^\n]*\n", timeout=60)[0]
    b.expect(r"\$ $", timeout=60)
    results.append(("errors_rdmacp_refused", *check(out, "rdmacp", rf"connect to {re.escape(ip_b)} port 18515",
                                                    "refused", "CONSUMER_REJECT", "cannot create nodir/x.bin")))
    results.append(("errors_rdmacp_receiver_says_why", *check(said_b, "rdmacp", "cannot create nodir/x.bin",
                                                              "directory does not exist")))
    return results


def retry_case(tb):
    """A copy whose link is cut mid-transfer: the sender's error names the WR and its status."""
    a, b = tb.guests
    ip_b = tb.ip(1)
    a.run("rdmacp mkfile /big.bin 4194304 5", timeout=120)
    b.send("rdmacp recv -T 14")
    b.expect(r"rdmacp: waiting", timeout=60)
    first = tb.stats()["directions"][0]["frames_in"]
    a.send(f"rdmacp send /big.bin {ip_b} big.bin -T 14")
    _, moving = poll(lambda: tb.stats()["directions"][0]["frames_in"] - first, lambda n: n >= 300, timeout=120)
    # A to B only: A's next WRITE (a credit from B still arrives) is lost
    # for sure, so A's QP exhausts its retries whatever A was doing.
    tb.set_spec("a2b", "loss 100%")
    try:
        out = a.expect(r"rdmacp: [^\n]*\n", timeout=120)[0]
    finally:
        tb.set_spec("a2b", "")
    if not moving:
        return "errors_rdmacp_retry_exceeded", False, "the copy never passed 300 frames"
    return ("errors_rdmacp_retry_exceeded",
            *check(out, "rdmacp", r"RDMA WRITE_WITH_IMM of chunk \d+", rf"peer {re.escape(ip_b)}",
                   "transport retry counter exceeded"))


def main():
    t = Tally()
    try:
        with Testbed(2, name="rdmaerrors") as tb:
            tb.boot()
            for r in number_cases(tb.guests[0]) + connect_cases(tb):
                t.record(*r)
            t.record(*retry_case(tb))
    except GuestError as e:
        t.record("errors_guests", False, f"guest error: {e}")
    return t.finish()


if __name__ == "__main__":
    sys.exit(main())
