#!/usr/bin/env python3
"""run_interop.py: xv6-rdma against Linux Soft-RoCE (rdma_rxe), both ways.

Owns `make test-interop`. One xv6 guest (10.0.0.1) and one Linux guest
(10.0.0.2, rxe0 on eth0, tests/linux/) on a linkemu link; on the Linux side
runs xrpeer (tests/linux/peer/), which connects through Linux's own
librdmacm (rdma_cm over the InfiniBand CM, QP1) and speaks the xv6 tools'
application protocols. Per test bed:

  * the opcode x size matrix (rdmanet_test --matrix: WRITE, READ, SEND,
    WRITE_WITH_IMM, SEND_WITH_IMM at 0, 1, MTU-1, MTU, MTU+1 bytes, 64 KiB
    and 1 MiB; guard bytes, immediates and byte_len checked; and
    ATOMIC_CMP_AND_SWP and ATOMIC_FETCH_AND_ADD on 8 bytes, the old value
    returned and the new one left) in both directions:
      rxe_to_xv6  xv6 `rdmanet_test host_a --matrix`, Linux `xrpeer host_b`
                  (rxe is the requester, xv6 the responder)
      xv6_to_rxe  Linux `xrpeer host_a --matrix`, xv6 `rdmanet_test host_b`
                  (xv6 is the requester, rxe the responder)
    each case must pass on both sides, and both sides must report the
    path MTU the bed was set up for;
  * beds: path MTU 1024 and 4096 (xv6 boot argument rdma_mtu=4096, the
    Linux eth0 at MTU 9000 so rxe's active MTU is 4096), each clean and at
    1 % seeded loss on both link directions (the lossy beds must have
    dropped frames, else they tested nothing); and at path MTU 4096 with
    5 % loss, xv6 (go-back-N) reading 1 MiB x 6 from `xrpeer bw-server`
    three times: every READ must complete (see READ_SIZE's comment);
  * on the clean MTU 1024 bed: a bw smoke run each way (xv6 rdma_bw client
    against `xrpeer bw-server`, `xrpeer bw-client` against xv6 rdma_bw's
    server; WRITE, READ and SEND), and the capture check: linkemu records the
    bed, every RoCEv2 frame (UDP destination 4791) must carry a valid ICRC
    (recomputed by proto-spec/model/vectors_check.py's icrc_of) and
    tshark must report no malformed frame and no error-severity expert
    item on a RoCEv2 frame. Two payload heuristics are disabled for tshark: RPC-over-RDMA
    (rpcrdma_infiniband) and Ethernet-over-IB (eth_over_ib); both guess a
    protocol from the application's payload bytes (the matrix's message
    type 6 reads as EtherType 0x0600, XNS IDP) and then call the guess
    malformed, which says nothing about the RoCEv2 frame.

  * UD between xv6 (user/bin/udping.c) and rxe (beds ud_xv6 clean and
    ud_xv6_loss1 at 1 % loss, path MTU 1024): xv6 `udping client` ->
    `xrpeer ud-server` (interop_<bed>_xv6_client) and `xrpeer ud-client` ->
    xv6 `udping server` (interop_<bed>_linux_client), SEND_WITH_IMM of
    UD_XV6_SIZE bytes: every message answered and verified on both ends
    (verified bytes = received x size; the server echoed what it received,
    nothing bad); clean, nothing lost or resent; lossy, what went missing
    each way is at most what linkemu dropped. The clean bed's capture must
    hold valid ICRCs and dissect clean in tshark (interop_ud_xv6_capture).

  * Linux only (bed ud_linux, path MTU 1024, one Linux
    guest, `xrpeer ud-server` and `xrpeer ud-client` to the guest's own
    address over rxe loopback): a ping-pong at the path MTU and one with
    immediates, every datagram echoed and verified on both sides
    (interop_ud_linux_loopback, _loopback_imm), and the smallest payload
    with immediates through `ud-server --raw`, which echoes any payload
    unchecked (interop_ud_linux_echo_raw); a wrong Q_Key: rxe sends
    every datagram and drops it on receipt, uncounted (rxe0's hw_counters),
    the server receives nothing, the client counts all lost
    (interop_ud_linux_wrong_qkey); SENDs over the path MTU: no frame, each
    completed with success (interop_ud_linux_oversize).

  * shared receive queues (beds srq clean and srq_loss1 at 1 % loss, path
    MTU 1024): rdma_bw SENDs (SRQ_ITERS x SRQ_SIZE, more than the SRQ's
    receives) with both ends' receives on an SRQ (`rdma_bw --srq`,
    `xrpeer bw-server/bw-client --srq`): rxe's SENDs into xv6's SRQ
    (interop_<bed>_rxe_to_xv6) and xv6's into rxe's (_xv6_to_rxe); the run
    must end with its result row.
  * remote paging with the memory node on Linux (beds rmem_paging clean
    and rmem_paging_loss1, path MTU 1024): the xv6 guest boots with 48M and
    rmem=<the Linux guest>, rmemd (user/bin/rmemd.c built against rdma-core)
    runs on Linux; memtouch with twice the free memory, one and two
    processes, every word checked (tests/rdma/run_rmem_paging.py's cases
    interop_<bed>_memtouch_2x, _two_processes).

Selective repeat is never used against rxe (no --sr anywhere here).
Prints "test NAME: OK|FAILED (...)" per check and "N passed, M failed".

    python3 tests/interop/run_interop.py [--only NAME ...] [--seed N] [--keep-capture DIR]

NAME is a bed (mtu1024, mtu1024_loss1, mtu4096, mtu4096_loss1, mtu4096_loss5,
ud_linux, ud_xv6, ud_xv6_loss1, cm, cm_loss1, cm_mtu_mismatch, rmem, rmem_loss1,
rmem_paging, rmem_paging_loss1, atomic_xv6-rxe, atomic_rxe-xv6).

  * rmem, rmem_loss1: the memory node and librmem across the stacks
    (rmem_interop.py): rmemd on Linux with xv6's rmemtest and rmem_example
    as clients, and rmemd on xv6 with Linux's rmem_example and rmem_bench.
The Linux guest is tests/harness/linux_guest.py's, on the test bed as
Testbed(1, linux=1) (build/linux/bzImage + initrd.img, make linux-image,
which carries xrpeer from build/linux/overlay/).
"""
import argparse
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "net"))
sys.path.insert(0, os.path.join(REPO, "tests", "harness"))
sys.path.insert(0, os.path.join(REPO, "proto-spec", "model"))
sys.path.insert(0, os.path.join(REPO, "tests", "rdma"))
from launch import Testbed  # noqa: E402
from guest import GuestError, progress  # noqa: E402
from tally import Tally  # noqa: E402
from linux_guest import linux_image_present  # noqa: E402
import vectors_check  # noqa: E402
import perftable  # noqa: E402
import cm_interop  # noqa: E402
import run_atomic  # noqa: E402
import rmem_interop  # noqa: E402
import run_rmem_paging  # noqa: E402
from run_udping import check_exchange, client_summary, server_summary  # noqa: E402

XV6, LNX = 0, 1
CASES = 37                      # 5 opcodes x 7 sizes, CMP_AND_SWP and FETCH_AND_ADD x 8 bytes
RESULT = r"rdmanet_test: (OK|FAILED[^\n]*)\n"
ROCE_PORT = 4791
TSHARK_OFF = ("rpcrdma_infiniband", "eth_over_ib")
BW_SIZE, BW_ITERS = 65536, 200
# The 5 % bed: xv6 (go-back-N) reads 1 MiB x 6 from rxe, READ_RUNS times;
# every READ must complete. A go-back-N early probe [REQ-TMO-8] that asked
# rxe for a later response than the first missing one failed 2 of 3 such
# runs (RETRY_EXC_ERR, or no end in 60 s): IBTA lets a responder restart a
# READ's responses at a duplicate request's PSN, which skips those before.
READ_SIZE, READ_ITERS, READ_RUNS = 1 << 20, 6, 3


def beds(seed):
    """(name, path MTU, netem spec on both directions or None, capture?,
    what runs: "matrix", "reads" for READ_RUNS reads from rxe alone,
    "ud_xv6" for UD between xv6's udping and xrpeer both ways, "cm" for
    Linux's own rdma_cm programs against xv6's (cm_interop.py), "srq" for
    rdma_bw SENDs into shared receive queues both ways, "rmem" for
    the memory node and librmem across the stacks (rmem_interop.py),
    "rmem_paging" for a 48M xv6 guest paging to rmemd on Linux
    (run_rmem_paging.linux_node_bed), "ud" for the Linux-only UD checks,
    ud_bed, or "atomic" for the exactly-once counter at 0, 1 and 5 % loss,
    tests/rdma/run_atomic.py's bed named after "atomic_": its own link and
    loss rates)."""
    loss = f"loss 1% seed {seed}"
    return [("mtu1024", 1024, None, True, "matrix"), ("mtu1024_loss1", 1024, loss, False, "matrix"),
            ("mtu4096", 4096, None, False, "matrix"), ("mtu4096_loss1", 4096, loss, False, "matrix"),
            ("mtu4096_loss5", 4096, f"loss 5% seed {seed}", False, "reads"),
            ("ud_linux", 1024, None, False, "ud"),
            ("ud_xv6", 1024, None, True, "ud_xv6"), ("ud_xv6_loss1", 1024, loss, False, "ud_xv6"),
            ("cm", 1024, None, True, "cm"), ("cm_loss1", 1024, loss, False, "cm"),
            ("cm_mtu_mismatch", 1024, None, False, "cm_mtu"),
            ("srq", 1024, None, False, "srq"), ("srq_loss1", 1024, loss, False, "srq"),
            ("rmem", 1024, None, False, "rmem"), ("rmem_loss1", 1024, loss, False, "rmem"),
            ("rmem_paging", 1024, None, False, "rmem_paging"),
            ("rmem_paging_loss1", 1024, loss, False, "rmem_paging"),
            ("atomic_xv6-rxe", 1024, None, False, "atomic"), ("atomic_rxe-xv6", 1024, None, False, "atomic")]


# ---- the matrix ----

def matrix_verdict(passive_out, active_out, mtu):
    """(ok, info) from both sides' transcripts of one matrix run."""
    cases = re.findall(r"^matrix: (\S+) (\d+) bytes: (OK|FAILED)", active_out, re.M)
    summary = re.search(r"^matrix: (\d+) cases, (\d+) failed", active_out, re.M)
    conns = re.findall(r"rdmanet_test: connected, .* mtu (\d+) sr (\d)\n", passive_out + active_out)
    mtus = [int(m) for m, _ in conns]
    srs = [sr for _, sr in conns]
    bad = [f"{op} {n}" for op, n, r in cases if r != "OK"]
    problems = []
    if len(cases) != CASES or bad:
        problems.append(f"{len(cases)} cases, failed: {', '.join(bad) or 'none'}")
    if not summary or summary.group(2) != "0":
        problems.append("no clean summary")
    if mtus != [mtu, mtu]:
        problems.append(f"path MTU {mtus}, expected {mtu} on both sides")
    if srs != ["0", "0"]:
        problems.append("selective repeat in use")
    for who, out in (("passive", passive_out), ("active", active_out)):
        results = re.findall(RESULT, out)
        if results != ["OK"]:
            problems.append(f"{who}: {results or 'no result'}")
    return not problems, "; ".join(problems) or f"{len(cases)} cases OK, path MTU {mtu}"


def run_matrix(xv6, lnx, direction, mtu):
    """One matrix run; direction rxe_to_xv6 (xv6 passive) or xv6_to_rxe."""
    mtu_opt = f" --mtu {mtu}"
    if direction == "rxe_to_xv6":
        passive, active = xv6, lnx
        passive_cmd, active_cmd = "rdmanet_test host_a --matrix", f"xrpeer host_b {Testbed.ip(XV6)} --matrix{mtu_opt}"
    else:
        passive, active = lnx, xv6
        passive_cmd, active_cmd = f"xrpeer host_a --matrix{mtu_opt}", f"rdmanet_test host_b {Testbed.ip(LNX)} --matrix"
    p0, a0 = len(passive.output()), len(active.output())
    passive.send(passive_cmd)
    passive.expect(r"rdmanet_test: listening on port \d+\n", timeout=30)
    active.send(active_cmd)
    active.expect(RESULT, timeout=300)
    passive.expect(RESULT, timeout=90)
    passive.expect(passive.prompt, timeout=30)
    active.expect(active.prompt, timeout=30)
    return matrix_verdict(passive.output()[p0:], active.output()[a0:], mtu)


# ---- bw smoke ----

def bw_pair(xv6, lnx, client_side, opts, xv6_opts="", timeout=180, lnx_opts=""):
    """One rdma_bw exchange between xv6's rdma_bw and xrpeer: client_side
    'xv6' (against `xrpeer bw-server`) or 'linux' (`xrpeer bw-client`
    against xv6's rdma_bw server); OPTS go to the client, XV6_OPTS to the
    xv6 side (e.g. --stats), LNX_OPTS to xrpeer (e.g. --srq). Returns (the
    client's output, xv6's output)."""
    if client_side == "xv6":
        server, client = lnx, xv6
        server_cmd, server_done = f"xrpeer bw-server {lnx_opts}".strip(), r"xrpeer: bw-server done\n"
        client_cmd = f"rdma_bw {opts} {xv6_opts} {Testbed.ip(LNX)}"
    else:
        server, client = xv6, lnx
        server_cmd, server_done = f"rdma_bw {xv6_opts}".strip(), None
        client_cmd = f"xrpeer bw-client {Testbed.ip(XV6)} {opts} {lnx_opts}"
    c0, x0 = len(client.output()), len(xv6.output())
    server.send(server_cmd)
    server.expect(r"waiting for a client on port \d+\n", timeout=30)
    client.send(" ".join(client_cmd.split()))
    client.expect(client.prompt, timeout=timeout)
    if server_done:
        server.expect(server_done, timeout=60)
    server.expect(server.prompt, timeout=60)
    return client.output()[c0:], xv6.output()[x0:]


def run_bw(xv6, lnx, client_side, op, size=BW_SIZE, iters=BW_ITERS):
    """One rdma_bw exchange; client_side 'xv6' or 'linux'. (ok, info)."""
    out, _ = bw_pair(xv6, lnx, client_side, f"-t {op} -s {size} -n {iters}")
    rows = perftable.bw_rows(out)
    if len(rows) != 1 or rows[0]["size"] != size or rows[0]["iters"] != iters or rows[0]["bw_avg_MiBps"] <= 0:
        tail = out.strip().splitlines()[-3:]
        return False, f"no result row: {tail}"
    return True, f"{size} B x {iters}: {rows[0]['bw_avg_MiBps']} MB/s average"


# ---- shared receive queues ----

# More SENDs than an SRQ's 256 receives: each receive is reposted.
SRQ_SIZE, SRQ_ITERS = 4096, 2000


def run_srq_bw(xv6, lnx, client_side):
    """rdma_bw SENDs with both ends' receives on a shared receive queue
    (`rdma_bw --srq`, `xrpeer ... --srq`): client_side 'linux' puts xv6's
    SRQ under rxe's SENDs, 'xv6' rxe's under xv6's. (ok, info)."""
    out, xout = bw_pair(xv6, lnx, client_side, f"-t send -s {SRQ_SIZE} -n {SRQ_ITERS}", xv6_opts="--srq",
                        lnx_opts="--srq")
    rows = perftable.bw_rows(out)
    if len(rows) != 1 or rows[0]["size"] != SRQ_SIZE or rows[0]["iters"] != SRQ_ITERS:
        return False, f"no result row: client {out.strip().splitlines()[-3:]} xv6 {xout.strip().splitlines()[-3:]}"
    return True, f"{SRQ_ITERS} SENDs of {SRQ_SIZE} B into the {'xv6' if client_side == 'linux' else 'rxe'} SRQ: " \
                 f"{rows[0]['bw_avg_MiBps']} MB/s average"


# ---- UD (xrpeer ud-server / ud-client) ----

UD_SERVER_LOG = "/tmp/ud-server.log"
UD_CLIENT = (r"xrpeer: ud-client sent (\d+), received (\d+), lost (\d+), verified bytes (\d+) "
             r"\((\d+) of (\d+) messages answered\)\n")
UD_ONEWAY = r"xrpeer: ud-client sent (\d+) one way, every SEND completed: (yes|no)\n"
UD_SERVER = r"xrpeer: ud-server received (\d+), echoed (\d+), bad (\d+), errors (\d+), verified bytes (\d+)\n"
# The echo deadline: a TCG guest on a loaded host echoes in milliseconds;
# with 2 resends a ping-pong that gets no echo at all ends in 3 s a message.
UD_WAIT_MS = 1000
RXE_COUNTERS = "/sys/class/infiniband/rxe0/ports/1/hw_counters"


def ud_server_start(lx, args=""):
    """Starts `xrpeer ud-server ARGS` in the background on lx; its QPN
    (the client's --qpn), once it is ready."""
    cmd = f"xrpeer ud-server {args}".strip()
    if not lx.start_server(cmd, probe=f"cat {UD_SERVER_LOG}", ready="echoing datagrams", log=UD_SERVER_LOG):
        raise GuestError(f"{cmd}: not ready: {lx.run(f'cat {UD_SERVER_LOG}')[-300:]}")
    return int(re.search(r"ud-server qpn (\d+)", lx.run(f"cat {UD_SERVER_LOG}"))[1])


def ud_server_stop(lx, kill=False, timeout=120):
    """Waits for the background ud-server to end (by its -n count, or at
    once by SIGTERM with kill; its echoes still in flight complete first):
    (received, echoed, bad, errors, verified bytes), or None with no
    summary line, and its output."""
    if kill:
        lx.run("kill $! 2>/dev/null")
    out = lx.server_output(timeout=timeout, log=UD_SERVER_LOG)
    m = re.search(UD_SERVER, out)
    return (tuple(int(v) for v in m.groups()) if m else None), out


def ud_client(lx, ip, qpn, args, timeout=120):
    """One `xrpeer ud-client`: (exit status, summary numbers or None, output).
    The numbers: (sent, received, lost, verified bytes, answered, messages);
    one way (--oneway): (sent, every SEND completed)."""
    rc, out = lx.run_status(f"xrpeer ud-client {ip} --qpn {qpn} {args}", timeout=timeout)
    m = re.search(UD_ONEWAY if "--oneway" in args else UD_CLIENT, out)
    nums = None
    if m:
        nums = (int(m[1]), m[2] == "yes") if "--oneway" in args else tuple(int(v) for v in m.groups())
    return rc, nums, out


def rxe_counters(lx):
    """rxe0's frame counters: {"sent_pkts": n, "rcvd_pkts": n}."""
    out = lx.run(f"cd {RXE_COUNTERS} && grep . sent_pkts rcvd_pkts; cd /")
    return {k: int(v) for k, v in re.findall(r"^(sent_pkts|rcvd_pkts):(\d+)$", out, re.M)}


def ud_pingpong(lx, n, size, opts="", server_opts=""):
    """n messages of size bytes from ud-client to ud-server and back, in one
    guest over rxe loopback: every one echoed and verified on both sides
    (GRH IPv4 addresses, the echo's source QPN, the pattern, immediates;
    the server checks no payload with --raw, and verifies 0 bytes)."""
    qpn = ud_server_start(lx, f"-n {n} --idle 120 {server_opts}")
    rc, got, _ = ud_client(lx, lx.ip, qpn, f"-s {size} -n {n} -w {UD_WAIT_MS} -r 2 {opts}")
    srv, _ = ud_server_stop(lx, kill=True)
    problems = []
    # A resend (an echo later than UD_WAIT_MS on a loaded host) is allowed:
    # the server then sees it too, and the counts must still agree.
    if rc != 0 or not got or got[4:] != (n, n) or got[1] < n or got[2] != got[0] - got[1] or got[3] != got[1] * size:
        problems.append(f"client: exit {rc}, (sent, received, lost, bytes, answered, messages) {got}")
    elif srv != (got[0], got[0], 0, 0, 0 if "--raw" in server_opts else got[0] * size):
        problems.append(f"server: (received, echoed, bad, errors, bytes) {srv}, client sent {got[0]}")
    what = f"{n} x {size} B {opts}{server_opts + ' ' if server_opts else ''}"
    return not problems, "; ".join(problems) or f"{what}echoed, verified (sent {got[0]}, received {got[1]})"


def ud_wrong_qkey(lx, n=3, retries=1):
    """A client whose Q_Key is not the server's: every datagram leaves rxe
    (sent_pkts) and is dropped by the receiving rxe before it counts it
    (rcvd_pkts); the server receives nothing, the client counts all lost."""
    qpn = ud_server_start(lx, "--idle 120")
    c0 = rxe_counters(lx)
    rc, got, _ = ud_client(lx, lx.ip, qpn, f"--qkey 0x22222222 -s 64 -n {n} -r {retries} -w 500")
    c1 = rxe_counters(lx)
    srv, _ = ud_server_stop(lx, kill=True)
    sent = n * (retries + 1)
    d_sent, d_rcvd = c1["sent_pkts"] - c0["sent_pkts"], c1["rcvd_pkts"] - c0["rcvd_pkts"]
    problems = []
    if rc == 0 or got != (sent, 0, sent, 0, 0, n):
        problems.append(f"client: exit {rc}, (sent, received, lost, bytes, answered, messages) {got}")
    if srv != (0, 0, 0, 0, 0):
        problems.append(f"server: (received, echoed, bad, errors, bytes) {srv}")
    if (d_sent, d_rcvd) != (sent, 0):
        problems.append(f"rxe0 sent_pkts +{d_sent}, rcvd_pkts +{d_rcvd}, expected +{sent}, +0")
    return not problems, "; ".join(problems) or \
        f"client sent {sent}, lost {sent}; rxe0 sent {d_sent}, counted 0 received; server received 0"


def ud_oversize(lx, mtu, n=2):
    """SENDs longer than the path MTU: rxe emits no frame and completes each
    work request with success (the InfiniBand spec lets a channel adapter
    drop such a UD message without an error); the client says the size
    exceeds the MTU, the server receives nothing."""
    size = mtu + mtu // 2
    qpn = ud_server_start(lx, "--idle 120")
    c0 = rxe_counters(lx)
    rc, got, out = ud_client(lx, lx.ip, qpn, f"-s {size} -n {n} --oneway")
    c1 = rxe_counters(lx)
    srv, _ = ud_server_stop(lx, kill=True)
    d_sent = c1["sent_pkts"] - c0["sent_pkts"]
    problems = []
    if f"{size} bytes exceed the port's MTU {mtu}" not in out:
        problems.append("no oversize warning")
    if rc != 0 or got != (n, True):
        problems.append(f"client: exit {rc}, (sent, every SEND completed) {got}")
    if d_sent != 0 or srv != (0, 0, 0, 0, 0):
        problems.append(f"rxe0 sent_pkts +{d_sent}; server (received, echoed, bad, errors, bytes) {srv}")
    return not problems, "; ".join(problems) or \
        f"{n} SENDs of {size} B > MTU {mtu}: each completed with success, no frame sent, server received 0"


def ud_bed(tally, name, mtu):
    """The Linux-only UD checks (no xv6 UD yet): one Linux guest, xrpeer's
    ud-server and ud-client in it, the client to the guest's own address
    (rxe loopback: nothing reaches the link, so the xv6 guest is not
    started)."""
    try:
        with Testbed(1, linux=1, linux_mtu=1500 if mtu <= 1024 else 9000, name=f"interop-{name}") as tb:
            lnx = tb.guests[LNX]
            tb.start_linkemu()
            lnx.start()
            lnx.boot(timeout=240)
            progress(name, f"Linux up: rxe0 {lnx.ip} eth0 MTU {lnx.mtu}")
            tally.run("interop_ud_linux_loopback", lambda: ud_pingpong(lnx, 20, mtu))
            tally.run("interop_ud_linux_loopback_imm", lambda: ud_pingpong(lnx, 10, 200, "--imm "))
            tally.run("interop_ud_linux_echo_raw", lambda: ud_pingpong(lnx, 10, 4, "--imm ", "--raw"))
            tally.run("interop_ud_linux_wrong_qkey", lambda: ud_wrong_qkey(lnx))
            tally.run("interop_ud_linux_oversize", lambda: ud_oversize(lnx, mtu))
    except GuestError as e:
        tally.record(f"interop_{name}", False, f"guest error: {e}")


# ---- UD: xv6 (udping) and rxe (xrpeer) ----

UD_XV6_SIZE, UD_XV6_COUNT = 1000, 200   # below path MTU 1024; enough to meet a 1 % loss
UD_XV6_IDLE_S = 5                        # udping server ends this long after its last datagram


def dropped_now(tb):
    return sum(d["dropped"]["total"] for d in tb.stats()["directions"])


def xrpeer_server_dict(t):
    return dict(zip(("received", "echoed", "bad", "errors", "verified"), t)) if t else None


def ud_xv6_client(tb, xv6, lnx, lossy):
    """xv6 `udping client` -> `xrpeer ud-server`."""
    qpn = ud_server_start(lnx, "--idle 120")
    d0 = dropped_now(tb)
    xv6.send(f"udping client {lnx.ip} --qpn {qpn} -s {UD_XV6_SIZE} -n {UD_XV6_COUNT} --imm -w {UD_WAIT_MS}")
    xv6.expect(r"udping: client sent \d+.*\n", timeout=900)
    xv6.expect(r"\$ $", timeout=30)
    srv, _ = ud_server_stop(lnx, kill=True)
    return check_exchange(client_summary(xv6.output(), "udping"), xrpeer_server_dict(srv), UD_XV6_SIZE,
                          UD_XV6_COUNT, dropped_now(tb) - d0 if lossy else None)


def ud_linux_client(tb, xv6, lnx, lossy):
    """`xrpeer ud-client` -> xv6 `udping server`."""
    xv6.send(f"udping server --idle {UD_XV6_IDLE_S}")
    m = xv6.expect(r"udping: server qpn (\d+) qkey 0x11111111 mtu \d+: echoing datagrams\n", timeout=60)
    d0 = dropped_now(tb)
    rc, got, out = ud_client(lnx, tb.ip(XV6), int(m[1]),
                             f"-s {UD_XV6_SIZE} -n {UD_XV6_COUNT} --imm -w {UD_WAIT_MS} -r 3", timeout=900)
    xv6.expect(r"udping: server received \d+.*\n", timeout=120)
    xv6.expect(r"\$ $", timeout=30)
    ok, info = check_exchange(client_summary(out, "xrpeer"), server_summary(xv6.output(), "udping"),
                              UD_XV6_SIZE, UD_XV6_COUNT, dropped_now(tb) - d0 if lossy else None)
    return ok and rc == 0, f"xrpeer exit {rc}; {info}"


# ---- the capture ----

def roce_frames(path):
    """Every RoCEv2 frame (IPv4, UDP destination 4791) of a pcap file."""
    for f in vectors_check.pcap_frames(path):
        if len(f) >= 14 + 20 + 8 + 12 + 4 and f[12:14] == b"\x08\x00" and f[14] == 0x45 and f[23] == 17 \
                and struct.unpack(">H", f[36:38])[0] == ROCE_PORT:
            yield f


def check_icrc(path):
    """(frames, bad, first bad description) over one capture file."""
    n = bad = 0
    first = ""
    for f in roce_frames(path):
        n += 1
        iplen = struct.unpack(">H", f[16:18])[0]
        if vectors_check.icrc_of(f, iplen) != f[14 + iplen - 4:14 + iplen]:
            bad += 1
            first = first or f"frame {n}: {f[26:30].hex()}->{f[30:34].hex()} opcode 0x{f[42]:02x}"
    return n, bad, first


def check_tshark(path):
    """(malformed/error RoCEv2 frames, their summary lines) as tshark sees
    them. Only the RoCEv2 frames (UDP 4791) are judged, the CM's MADs to
    QP1 among them (tshark's InfiniBand CM dissector); another UDP datagram
    would be decoded by whatever well-known port it happens to use, which
    says nothing about either stack."""
    cmd = ["tshark", "-r", path]
    for h in TSHARK_OFF:
        cmd += ["--disable-heuristic", h]
    cmd += ["-Y", f"udp.dstport == {ROCE_PORT} && (_ws.malformed || _ws.expert.severity == error)"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        return -1, [r.stderr.strip()[-300:]]
    lines = [ln for ln in r.stdout.splitlines() if ln.strip()]
    return len(lines), lines[:3]


def capture_verdict(cap_dir):
    """Port 0 holds what the xv6 guest sent and received (linkemu records a
    port's both directions), so one file covers both stacks' frames."""
    path = os.path.join(cap_dir, "port0.pcap")
    if not os.path.exists(path):
        return False, "no capture"
    n, bad, first = check_icrc(path)
    mal, lines = check_tshark(path)
    ok = n > 0 and bad == 0 and mal == 0
    info = f"{n} RoCEv2 frames, {bad} with a bad ICRC{' (' + first + ')' if first else ''}; tshark: {mal} malformed"
    if lines and mal:
        info += f" ({' | '.join(lines)})"
    return ok, info


# ---- one bed ----

def one_bed(tally, name, mtu, spec, capture, kind, keep_capture):
    cap_dir = tempfile.mkdtemp(prefix="interop-cap-") if capture else None
    try:
        xappend = "" if mtu == 1024 else f"rdma_mtu={mtu}"
        # The Linux guest's eth0 MTU: 1500 for path MTU 1024 (rxe's active
        # MTU is then 1024), 9000 for 4096.
        # "cm_mtu" runs the Linux guest at 9000 against xv6's 1024 on purpose.
        lmtu = 1500 if mtu <= 1024 and kind != "cm_mtu" else 9000
        with Testbed(1, linux=1, linux_mtu=lmtu, both=spec,
                     name=f"interop-{name}", extra_append=xappend, pcap_dir=cap_dir) as tb:
            t0 = time.monotonic()
            if kind == "rmem_paging":
                run_rmem_paging.make_client(tb.guests[XV6], tb.ip(LNX))
            tb.boot(timeout=240)
            xv6, lnx = tb.guests[XV6], tb.guests[LNX]
            progress(name, f"both guests up after {time.monotonic() - t0:.0f} s; Linux: rxe0 {lnx.ip} "
                           f"eth0 MTU {lnx.mtu} GID index {lnx.gid_index}")
            for direction in ("rxe_to_xv6", "xv6_to_rxe") if kind == "matrix" else ():
                progress(name, f"matrix {direction}")
                tally.run(f"interop_{name}_{direction}", lambda d=direction: run_matrix(xv6, lnx, d, mtu))
            for i in range(READ_RUNS if kind == "reads" else 0):
                progress(name, f"xv6 reads from rxe, run {i + 1} of {READ_RUNS}")
                tally.run(f"interop_{name}_xv6_reads_from_rxe_{i + 1}",
                          lambda: run_bw(xv6, lnx, "xv6", "read", READ_SIZE, READ_ITERS))
            if kind == "ud_xv6":
                lossy = spec is not None
                tally.run(f"interop_{name}_xv6_client", lambda: ud_xv6_client(tb, xv6, lnx, lossy))
                tally.run(f"interop_{name}_linux_client", lambda: ud_linux_client(tb, xv6, lnx, lossy))
            if kind == "cm":
                cm_interop.cm_bed(tally, name, xv6, lnx, tb.ip(XV6), spec is not None)
            if kind == "cm_mtu":
                cm_interop.mtu_mismatch(tally, name, xv6, lnx, tb.ip(XV6))
            for side in ("linux", "xv6") if kind == "srq" else ():
                progress(name, f"SENDs into the {'xv6' if side == 'linux' else 'rxe'} SRQ")
                tally.run(f"interop_{name}_{'rxe_to_xv6' if side == 'linux' else 'xv6_to_rxe'}",
                          lambda s=side: run_srq_bw(xv6, lnx, s))
            if kind == "rmem":
                rmem_interop.rmem_bed(tally, name, xv6, lnx, tb.ip(XV6), spec is not None)
            if kind == "rmem_paging":
                run_rmem_paging.linux_node_bed(tally, name, xv6, lnx)
            if capture and kind == "matrix":
                for side, op in [(s, o) for s in ("xv6", "linux") for o in ("write", "read", "send")]:
                    progress(name, f"bw {op}, {side} client")
                    tally.run(f"interop_bw_{side}_client_{op}", lambda s=side, o=op: run_bw(xv6, lnx, s, o))
            dropped = dropped_now(tb)
        if spec:
            tally.record(f"interop_{name}_loss_applied", dropped > 0, f"link dropped {dropped} frames")
        if capture:
            ok, info = capture_verdict(cap_dir)
            tally.record(f"interop_{name}_capture", ok, info)
            if keep_capture:
                shutil.copytree(cap_dir, keep_capture, dirs_exist_ok=True)
    except GuestError as e:
        tally.record(f"interop_{name}", False, f"guest error: {e}")
    finally:
        if cap_dir:
            shutil.rmtree(cap_dir, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--seed", type=int, default=int(os.environ.get("RDMA_TEST_SEED", 7)))
    ap.add_argument("--keep-capture", help="copy the checked capture (port*.pcap) here")
    args = ap.parse_args()
    if not linux_image_present():
        print("interop: no Linux image (make linux-image)")
        return 2
    t0 = time.monotonic()
    progress("interop", f"seed {args.seed}")
    tally = Tally()
    for name, mtu, spec, capture, kind in beds(args.seed):
        if args.only and name not in args.only:
            continue
        progress("interop", f"bed {name}: path MTU {mtu}, link {spec or 'clean'}")
        if kind == "ud":
            ud_bed(tally, name, mtu)
            continue
        if kind == "atomic":
            run_atomic.run_bed(tally, name[len("atomic_"):], args.seed)
            continue
        one_bed(tally, name, mtu, spec, capture, kind, args.keep_capture)
    progress("interop", f"{time.monotonic() - t0:.0f} s in all")
    return tally.finish()


if __name__ == "__main__":
    sys.exit(main())
