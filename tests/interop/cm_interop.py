"""cm_interop.py: Linux's own, unmodified rdma_cm programs against xv6's,
over the InfiniBand CM on QP1 (proto-spec/ibcm.md), both roles.

Owns the checks of run_interop.py's "cm" beds (one xv6 guest, one Linux
guest; clean with a capture, and at 1 % seeded loss):

  interop_<bed>_rping_<size>_xv6_client
        Debian's `rping -s -v -V` on Linux, xv6's `rping -c -v -V`: both exit
        0 and xv6 printed every ping's text, rping's pattern computed here.
  interop_<bed>_rping_<size>_linux_client
        xv6's `rping -s`, Debian's `rping -c -v -V`: Linux exits 0 with every
        ping's text, xv6's server reports the connection and the
        disconnect after exactly the count.
  interop_<bed>_rdma_server_linux / _rdma_server_xv6
        librdmacm's example pair (rdmacm-utils' rdma_server / rdma_client on
        Linux, the same unmodified sources built for xv6, user/upstream):
        each side exits 0 ("end 0"); both sides disconnect.
  interop_<bed>_udaddy_xv6_client / _linux_client (clean bed)
        rdmacm-utils' udaddy (RDMA_PS_UDP: SIDR_REQ / SIDR_REP, then UD
        datagrams each way) against xv6's udaddy, -C 5, either side the
        client: both exit 0 with "return status 0". Linux's udaddy waits for
        ever for a datagram UD dropped (e.g. one that came before its
        receive was posted): such a run is ended by its deadline, told
        apart from a failure by its last step ("receiving data
        transfers"), and retried once; the result says so.
  interop_<bed>_no_listener_linux_client / _xv6_client (clean bed)
        a client aimed at a port nobody listens on: Linux's rping reports
        "RDMA_CM_EVENT_REJECTED, error 8" (the REJ reason for an invalid
        service ID, as between two Linux guests); xv6's rping says the
        connection was refused and exits 1.
  interop_cm_mtu_mismatch_linux_req_rejected / _xv6_req_accepted
        Linux at path MTU 4096, xv6 at 1024: Linux's REQ gets REJ 26
        (invalid path MTU), xv6's is accepted and rping passes.
  interop_<bed>_rping_16_at_once (clean bed)
        Debian's persistent `rping -s -P -V` (a thread per client) on Linux,
        16 xv6 `rping -c -V` clients started in the background together:
        Linux shows all 16 connected at once, each client exits 0 (its
        pings validated on both sides), and xv6's rdmastat cm_live_ids
        comes back to its value before them. (The reverse needs an xv6
        server of concurrent clients; xv6's rping -P serves one after
        another, so there is none.)
  interop_<bed>_perftest_<kind>_<side>_client (clean bed)
        perftest's -R exchange, 200 x 4 KiB: Linux's ib_write_bw, ib_read_bw,
        ib_send_bw, ib_write_lat and ib_send_lat -R against xv6's rdma_bw /
        rdma_lat -R with the same -t, either side the client; both exit 0
        and the client prints its result row.

Python standard library only; the Linux side runs through
tests/linux/rdmacm_tools.py (servers start in the background under
`timeout`, clients start once the server's cm_id listens).
"""
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "linux"))
sys.path.insert(0, os.path.join(HERE, "..", "rdma"))
import rdmacm_tools  # noqa: E402
from guest import poll  # noqa: E402
from run_rping import lines, ping_text, server_problems  # noqa: E402

RPING_PORT = 7174          # rping's default port, both stacks
FREE_PORT = 7999           # nobody listens there
RDMA_SERVER_PORT = 7471    # librdmacm's examples' default port
UDADDY_COUNT = 5           # datagrams each way
UDADDY_DEADLINE = 60       # Linux's udaddy waits for ever for a dropped datagram: this ends it
UDADDY_OK = "return status 0"
UDADDY_WAITING = "receiving data transfers"   # udaddy's last step before it waits for datagrams
REJECTED = "RDMA_CM_EVENT_REJECTED, error 8"
DEADLINE = 240             # seconds for one run of a pair, lossy bed included
MANY, MANY_COUNT = 16, 2000  # connections at once, and each one's pings (outlast the starts)
PERF_SIZE, PERF_ITERS = 4096, 200


def xv6_status(xv6, cmd, timeout=DEADLINE):
    """Runs cmd on xv6 under `status`: (exit status or None, output)."""
    out = xv6.run(f"status {cmd}", timeout=timeout)
    m = re.search(r"status: \S+ exited (-?\d+)", out)
    return (int(m[1]) if m else None), out


def pings_ok(got, size, count):
    """'' if got holds exactly rping's count ping texts at size, else why not."""
    want = [ping_text(n, size) for n in range(count)]
    if got == want:
        return ""
    bad = next((n for n, (g, w) in enumerate(zip(got, want)) if g != w), min(len(got), len(want)))
    return f"{len(got)} of {count} ping lines, first difference at ping {bad}"


def rping_xv6_client(xv6, lnx, size, count):
    """Linux `rping -s` <- xv6 `rping -c`."""
    srv = f"rping -s -a {lnx.ip} -p {RPING_PORT} -v -V -C {count} -S {size}"
    if not rdmacm_tools.serve(lnx, srv, "TCP", DEADLINE + rdmacm_tools.SERVER_GRACE):
        lnx.run("kill %1 2>/dev/null")
        return False, "Linux rping -s never listened"
    rc, out = xv6_status(xv6, f"rping -c -v -V -a {lnx.ip} -p {RPING_PORT} -C {count} -S {size}")
    src, sout = rdmacm_tools.server_result(lnx, DEADLINE + rdmacm_tools.SERVER_GRACE)
    problems = [p for p in (pings_ok(lines(out, "ping data: "), size, count),) if p]
    if rc != 0 or src != 0:
        problems.append(f"exit status xv6 client {rc}, Linux server {src}")
    if problems:
        return False, "; ".join(problems) + f"; xv6: {out.strip()[-200:]!r}; Linux: {sout.strip()[-200:]!r}"
    return True, f"{count} pings of {size} B validated, both exit 0"


def rping_linux_client(xv6, lnx, xv6_ip, size, count):
    """xv6 `rping -s` <- Linux `rping -c`."""
    start = len(xv6.output())
    xv6.spawn(f"status rping -s -d -p {RPING_PORT} -S {size} -C {count}",
              ready=rf"rping: listening on port {RPING_PORT} \(pid (\d+)\)\n")
    rc, out = rdmacm_tools.client(lnx, f"rping -c -a {xv6_ip} -p {RPING_PORT} -v -V -C {count} -S {size}",
                                  DEADLINE)
    m = xv6.expect(r"status: rping exited (-?\d+)\n", timeout=120)
    srv = xv6.output()[start:]
    problems = [p for p in (pings_ok(lines(out, "ping data: "), size, count),) if p]
    if rc != 0 or m[1] != "0":
        problems.append(f"exit status Linux client {rc}, xv6 server {m[1]}")
    problems += server_problems(srv, lnx.ip, count)
    if problems:
        return False, "; ".join(problems) + f"; Linux: {out.strip()[-200:]!r}; xv6: {srv.strip()[-200:]!r}"
    return True, f"{count} pings of {size} B validated by Linux, both exit 0, xv6 saw the disconnect"


def rdma_server_linux(xv6, lnx):
    """rdmacm-utils' rdma_server on Linux, the same example's rdma_client on xv6."""
    if not rdmacm_tools.serve(lnx, f"rdma_server -p {RDMA_SERVER_PORT}", "TCP", DEADLINE):
        lnx.run("kill %1 2>/dev/null")
        return False, "Linux rdma_server never listened"
    rc, out = xv6_status(xv6, f"rdma_client -s {lnx.ip} -p {RDMA_SERVER_PORT}")
    src, sout = rdmacm_tools.server_result(lnx, DEADLINE)
    ok = rc == 0 and src == 0 and "rdma_client: end 0" in out and "rdma_server: end 0" in sout
    return ok, f"xv6 rdma_client exit {rc} {out.strip()[-120:]!r}; Linux rdma_server exit {src} " \
               f"{sout.strip()[-120:]!r}"


def rdma_server_xv6(xv6, lnx, xv6_ip):
    """The example's rdma_server on xv6, rdmacm-utils' rdma_client on Linux.
    rdma_server prints nothing before it listens, so the Linux client
    retries a refused connect (REJ) until the deadline."""
    start = len(xv6.output())
    xv6.spawn(f"status rdma_server -p {RDMA_SERVER_PORT}", ready=r"rdma_server: start\n")
    rc, out = None, ""
    for _ in range(20):
        rc, out = rdmacm_tools.client(lnx, f"rdma_client -s {xv6_ip} -p {RDMA_SERVER_PORT}", 60)
        if rc == 0 or "REJECTED" not in out and "rdma_connect" not in out:
            break
    m = xv6.expect(r"status: rdma_server exited (-?\d+)\n", timeout=120)
    srv = xv6.output()[start:]
    ok = rc == 0 and m[1] == "0" and "rdma_client: end 0" in out and "rdma_server: end 0" in srv
    return ok, f"Linux rdma_client exit {rc} {out.strip()[-120:]!r}; xv6 rdma_server exit {m[1]} " \
               f"{srv.strip()[-120:]!r}"


def udaddy_hang(rc, out):
    """Why a Linux udaddy run ended by its deadline, or '' if it was not."""
    if rc != rdmacm_tools.TIMED_OUT:
        return ""
    if UDADDY_WAITING in out:
        return "Linux udaddy waited for a datagram that never came (a UD drop, not a CM failure)"
    return "Linux udaddy hung before the data transfers (the SIDR exchange did not finish)"


def udaddy_retried(run):
    """run() -> (ok, info, hang); once more if Linux's udaddy hung waiting
    for a dropped datagram; the result names such a hang."""
    ok, info, hang = run()
    if ok or not hang.startswith("Linux udaddy waited"):
        return ok, info + (f"; {hang}" if hang else "")
    ok, info2, hang2 = run()
    return ok, f"first run: {hang}; retried: {info2}" + (f"; {hang2}" if hang2 else "")


def udaddy_xv6_client(xv6, lnx):
    """Linux `udaddy` (server) <- xv6 `udaddy -s`."""
    def run():
        if not rdmacm_tools.serve(lnx, f"udaddy -C {UDADDY_COUNT}", "UDP", UDADDY_DEADLINE):
            lnx.run("kill %1 2>/dev/null")
            return False, "Linux udaddy never listened", ""
        rc, out = xv6_status(xv6, f"udaddy -s {lnx.ip} -C {UDADDY_COUNT}")
        src, sout = rdmacm_tools.server_result(lnx, UDADDY_DEADLINE)
        ok = rc == 0 and src == 0 and UDADDY_OK in out and UDADDY_OK in sout
        return ok, (f"xv6 udaddy exit {rc} {out.strip()[-160:]!r}; Linux udaddy exit {src} "
                    f"{sout.strip()[-160:]!r}"), udaddy_hang(src, sout)
    return udaddy_retried(run)


def udaddy_linux_client(xv6, lnx, xv6_ip):
    """xv6 `udaddy` (server) <- Linux `udaddy -s`. xv6's server ends by
    itself: after its replies, or (a lost datagram) when its wait runs out."""
    def run():
        start = len(xv6.output())
        xv6.spawn(f"status udaddy -C {UDADDY_COUNT}", ready=r"udaddy: starting server\n")
        rc, out = rdmacm_tools.client(lnx, f"udaddy -s {xv6_ip} -C {UDADDY_COUNT}", UDADDY_DEADLINE)
        m = xv6.expect(r"status: udaddy exited (-?\d+)\n", timeout=120)
        srv = xv6.output()[start:]
        ok = rc == 0 and m[1] == "0" and UDADDY_OK in out and UDADDY_OK in srv
        return ok, (f"Linux udaddy exit {rc} {out.strip()[-160:]!r}; xv6 udaddy exit {m[1]} "
                    f"{srv.strip()[-160:]!r}"), udaddy_hang(rc, out)
    return udaddy_retried(run)


def no_listener_linux_client(lnx, xv6_ip):
    rc, out = rdmacm_tools.client(lnx, f"rping -c -a {xv6_ip} -p {FREE_PORT} -C 1", 60)
    ok = rc not in (0, rdmacm_tools.TIMED_OUT) and REJECTED in out
    return ok, f"Linux rping exit {rc}: {out.strip()[-160:]!r}"


def no_listener_xv6_client(xv6, lnx):
    rc, out = xv6_status(xv6, f"rping -c -a {lnx.ip} -p {FREE_PORT} -C 1", timeout=120)
    ok = rc == 1 and re.search(rf"connect to {re.escape(lnx.ip)} port {FREE_PORT}: refused", out) is not None
    return ok, f"xv6 rping exit {rc}: {out.strip()[-160:]!r}"


# (Linux's perftest program, xv6's tool with its -t) for each -R pair.
PERFTEST = {"write_bw": ("ib_write_bw", "rdma_bw -t write"), "read_bw": ("ib_read_bw", "rdma_bw -t read"),
            "send_bw": ("ib_send_bw", "rdma_bw -t send"), "write_lat": ("ib_write_lat", "rdma_lat -t write"),
            "send_lat": ("ib_send_lat", "rdma_lat -t send")}


def perftest_row(out):
    """The second column after #bytes and #iterations of perftest's result
    row (BW peak, or t_min for the latency tools), or None."""
    row = re.search(rf"^\s*{PERF_SIZE}\s+{PERF_ITERS}\s+(\S+)", out, re.M)
    return row[1] if row else None


def perftest_xv6_client(xv6, lnx, kind):
    """Linux's perftest -R serves, xv6's rdma_bw / rdma_lat -R is the client."""
    linux, ours = PERFTEST[kind]
    opts = f"-s {PERF_SIZE} -n {PERF_ITERS}"
    if not rdmacm_tools.serve(lnx, f"{linux} -R {opts}", "TCP", DEADLINE):
        lnx.run("kill %1 2>/dev/null")
        return False, f"Linux {linux} -R never listened"
    rc, out = xv6_status(xv6, f"{ours} -R {opts} {lnx.ip}")
    src, sout = rdmacm_tools.server_result(lnx, DEADLINE)
    row = perftest_row(out)
    ok = rc == 0 and src == 0 and row is not None
    return ok, (f"xv6 {ours} exit {rc}, row {row}; Linux {linux} exit {src}"
                + ("" if ok else f"; xv6: {out.strip()[-200:]!r}; Linux: {sout.strip()[-200:]!r}"))


# perftest's own clock check: it samples the CPU's cycle counter against
# time and gives up without a report when the samples scatter (a loaded
# host descheduling the guest), before it sends xv6 its report.
PERFTEST_CLOCK_FAILED = "Can't produce a report"


def perftest_linux_client(xv6, lnx, xv6_ip, kind):
    """xv6's rdma_bw / rdma_lat -R serves, Linux's perftest -R is the client.
    Tried a second time when perftest's clock check failed: then xv6's
    server must have ended with an error once the client left."""
    ok, info = perftest_linux_client_once(xv6, lnx, xv6_ip, kind)
    if ok or PERFTEST_CLOCK_FAILED not in info:
        return ok, info
    if "peer disconnected" not in info:
        return False, info + " (xv6's server did not see the client leave)"
    ok, again = perftest_linux_client_once(xv6, lnx, xv6_ip, kind)
    return ok, f"{again} (second try; the first: perftest's clock check failed, xv6 saw the client leave)"


def perftest_linux_client_once(xv6, lnx, xv6_ip, kind):
    linux, ours = PERFTEST[kind]
    opts = f"-s {PERF_SIZE} -n {PERF_ITERS}"
    start = len(xv6.output())
    xv6.spawn(f"status {ours} -R {opts}", ready=r"waiting for a client on port \d+")
    rc, out = rdmacm_tools.client(lnx, f"{linux} -R {opts} {xv6_ip}", DEADLINE)
    m = xv6.expect(r"status: rdma_\w+ exited (-?\d+)\n", timeout=120)
    srv = xv6.output()[start:]
    row = perftest_row(out)
    ok = rc == 0 and m[1] == "0" and row is not None
    return ok, (f"Linux {linux} exit {rc}, row {row}; xv6 {ours} exit {m[1]}"
                + ("" if ok else f"; Linux: {out.strip()[-200:]!r}; xv6: {srv.strip()[-300:]!r}"))


def mtu_mismatch(tally, name, xv6, lnx, xv6_ip):
    """Linux's rxe at path MTU 4096 (eth0 9000), xv6's port at 1024: the
    REQ fixes one path MTU for both directions. Linux's REQ (4096) is
    rejected by xv6 with reason 26, invalid path MTU ([IBCM-REJ-3]), which
    Linux's rping reports; xv6's REQ (1024) is accepted by Linux and the
    pings pass at 1024."""
    def linux_client():
        start = len(xv6.output())
        pid = xv6.spawn(f"status rping -s -d -p {RPING_PORT} -C 1",
                        ready=rf"rping: listening on port {RPING_PORT} \(pid (\d+)\)\n")[1]
        rc, out = rdmacm_tools.client(lnx, f"rping -c -a {xv6_ip} -p {RPING_PORT} -C 1", 60)
        # No REQ reached it: it still listens. Its end prints before or after
        # the kill's prompt; the echo's line and the first prompt after it
        # consume whichever prompt was left (a job's line may land between
        # them, so no anchor at the end).
        xv6.run(f"kill {pid}", until=r"status: rping exited -?\d+\n", timeout=60)
        xv6.run("echo mtu-sync", until=r"^mtu-sync\r?\n(?:[^\n]*\n)*?\$ ")
        ok = rc not in (0, rdmacm_tools.TIMED_OUT) and "RDMA_CM_EVENT_REJECTED, error 26" in out
        return ok, f"Linux rping exit {rc}: {out.strip()[-160:]!r}; xv6: {xv6.output()[start:].strip()[-160:]!r}"
    tally.run(f"interop_{name}_linux_req_rejected", linux_client)
    tally.run(f"interop_{name}_xv6_req_accepted", lambda: rping_xv6_client(xv6, lnx, 64, 5))


def cm_live_ids(xv6):
    """xv6's rdmastat device counter cm_live_ids (rdma_cm ids alive), or None."""
    m = re.search(r"^\s*cm_live_ids\s+(\d+)", xv6.run("rdmastat", timeout=60), re.M)
    return int(m[1]) if m else None


def linux_connected(lnx):
    """How many of Linux's rdma_cm ids are connected rping ids (the
    persistent server's, one per client)."""
    out = lnx.run("rdma res show cm_id")
    return sum(1 for line in out.splitlines() if "state CONNECT" in line and "comm rping" in line)


def rping_many_xv6_clients(xv6, lnx):
    """Linux's persistent `rping -s -P` (one thread per client) <- MANY xv6
    `rping -c` in the background. Each client starts once Linux shows the
    previous ones connected: rping -P hands a CONNECT_REQUEST to its thread
    through one shared field, so REQs arriving in a burst give several
    threads one cm_id. Started together, the 16 xv6 clients' REQs reached
    Linux as 16 distinct CONNECT_REQUESTs (rping -d), then Linux printed
    "rdma_create_qp: Invalid argument" 12 times, some REQs were never
    answered and connections ended after a few pings. (16 Linux clients
    started by a shell loop passed: process start-up spreads their REQs.)
    Then waits,
    each with a deadline, for every client's exit line, and for
    cm_live_ids to fall back to its value before (every id destroyed)."""
    before = cm_live_ids(xv6)
    srv = f"rping -s -P -a {lnx.ip} -p {RPING_PORT} -V -C {MANY_COUNT} -S 64"
    if not rdmacm_tools.serve(lnx, srv, "TCP", 2 * DEADLINE):
        lnx.run("kill %1 2>/dev/null")
        return False, "Linux rping -s -P never listened"
    start, t0 = len(xv6.output()), time.monotonic()
    exits = re.compile(r"status: rping exited (-?\d+)\n")
    problems, peak = [], 0
    for n in range(1, MANY + 1):
        xv6.spawn(f"status rping -c -V -a {lnx.ip} -p {RPING_PORT} -C {MANY_COUNT} -S 64", ready=r"\[\d+\]\n")
        peak, ok = poll(lambda: linux_connected(lnx), lambda c: c >= n, 60, interval=0.3)
        if not ok:
            problems.append(f"client {n}: Linux shows {peak} connected, not {n}")
            break
    ended = len(exits.findall(xv6.output()[start:]))
    if not problems and ended:
        problems.append(f"{ended} clients had ended before all {MANY} were connected")
    t_all = time.monotonic() - t0
    statuses, done = poll(lambda: exits.findall(xv6.output()[start:]), lambda e: len(e) >= n, DEADLINE)
    t_end = time.monotonic() - t0
    lnx.run("kill %1 2>/dev/null")     # -P serves until killed
    _, sout = rdmacm_tools.server_result(lnx, 2 * DEADLINE)
    live, freed = poll(lambda: cm_live_ids(xv6), lambda c: c == before, 120, interval=2)
    if not done or statuses != ["0"] * n:
        problems.append(f"xv6 clients' exit statuses {statuses}")
    if before is None or not freed:
        problems.append(f"cm_live_ids {live}, before the clients {before}")
    if problems:
        return False, "; ".join(problems) + f"; xv6: {xv6.output()[start:].strip()[-300:]!r}; " \
                      f"Linux: {sout.strip()[-300:]!r}"
    return True, (f"{MANY} connected at once after {t_all:.0f} s (Linux: {peak} rping ids connected), "
                  f"{MANY} x {MANY_COUNT} pings validated by {t_end:.0f} s, all exit 0; "
                  f"cm_live_ids back to {before}")


def cm_bed(tally, name, xv6, lnx, xv6_ip, lossy):
    """Every check of one "cm" bed (see the top of this file)."""
    count = 20 if lossy else 10
    for size in (64, 4096):
        tally.run(f"interop_{name}_rping_{size}_xv6_client", lambda s=size: rping_xv6_client(xv6, lnx, s, count))
        tally.run(f"interop_{name}_rping_{size}_linux_client",
                  lambda s=size: rping_linux_client(xv6, lnx, xv6_ip, s, count))
    tally.run(f"interop_{name}_rdma_server_linux", lambda: rdma_server_linux(xv6, lnx))
    tally.run(f"interop_{name}_rdma_server_xv6", lambda: rdma_server_xv6(xv6, lnx, xv6_ip))
    if lossy:
        return
    tally.run(f"interop_{name}_udaddy_xv6_client", lambda: udaddy_xv6_client(xv6, lnx))
    tally.run(f"interop_{name}_udaddy_linux_client", lambda: udaddy_linux_client(xv6, lnx, xv6_ip))
    tally.run(f"interop_{name}_rping_{MANY}_at_once", lambda: rping_many_xv6_clients(xv6, lnx))
    tally.run(f"interop_{name}_no_listener_linux_client", lambda: no_listener_linux_client(lnx, xv6_ip))
    tally.run(f"interop_{name}_no_listener_xv6_client", lambda: no_listener_xv6_client(xv6, lnx))
    for kind in PERFTEST:
        tally.run(f"interop_{name}_perftest_{kind}_xv6_client", lambda k=kind: perftest_xv6_client(xv6, lnx, k))
        tally.run(f"interop_{name}_perftest_{kind}_linux_client",
                  lambda k=kind: perftest_linux_client(xv6, lnx, xv6_ip, k))
