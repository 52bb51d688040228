"""rdmacm_tools.py: Linux's own rdma_cm programs, server and client, on two Linux guests.

Owns how a test runs one of Debian's unmodified rdma_cm tools (rping,
ucmatose, udaddy from rdmacm-utils; perftest's ib_*_bw -R) between two
LinuxGuests and what it reads from them: the server starts in the
background under busybox `timeout` (so a hung one still ends), the client
starts only once the server's rdma_cm ID listens (`rdma res show cm_id`
lists it: neither rping nor perftest retries a refused connect), the
client runs under its own deadline, then the server's exit status and
output are collected. Used by tests/linux/check_guest.py (the Linux <->
Linux checks) and tests/vectors/capture_cm.py (the CM captures).

    r = pair(srv, cli, "rping -s -v -V -C 3 -S 64",
             f"rping -c -a {srv.ip} -v -V -C 3 -S 64")
    r.client_rc, r.client_out, r.server_rc, r.server_out, r.client_hung

Python standard library only.
"""
import re

from guest import poll

TIMED_OUT = 143              # busybox timeout ends its program with SIGTERM: 128 + 15
SERVER_GRACE = 15
SERVER_LOG = "/tmp/rdmacm-server.log"
SERVER_EXIT = re.compile(r"^server-exit (\d+)$", re.M)
# A listener of each rdma_cm port space, as `rdma res show cm_id` prints it.
LISTENING = {"TCP": "state LISTEN ps TCP", "UDP": "state LISTEN ps UDP"}


class Run:
    """One server/client run: exit statuses and outputs of both sides."""

    def __init__(self, listened, client_rc, client_out, server_rc, server_out):
        self.listened = listened
        self.client_rc, self.client_out = client_rc, client_out
        self.server_rc, self.server_out = server_rc, server_out

    @property
    def client_hung(self):
        return self.client_rc == TIMED_OUT

    @property
    def server_hung(self):
        return self.server_rc == TIMED_OUT

    def tail(self, n=240):
        """Both sides' last output, for a failure message."""
        return (f"client exit {self.client_rc}: {self.client_out.strip()[-n:]!r}; "
                f"server exit {self.server_rc}: {self.server_out.strip()[-n:]!r}")


def serve(srv, cmd, ps="TCP", deadline=60):
    """Starts cmd on srv in the background, ended by `timeout deadline`,
    its output and then "server-exit N" in SERVER_LOG; True once its
    rdma_cm ID of port space ps listens (within 30 s)."""
    srv.run(f"(timeout {deadline} {cmd}; echo server-exit $?) > {SERVER_LOG} 2>&1 &")
    _, ok = poll(lambda: srv.run("rdma res show cm_id"), lambda out: LISTENING[ps] in out,
                 30, interval=0.5)
    return ok


def server_result(srv, deadline=60):
    """Waits (up to deadline + 30 s) for the background server; (its exit
    status, or None if it never ended, and its output)."""
    out = srv.run(f"wait; cat {SERVER_LOG}", timeout=deadline + 30)
    m = SERVER_EXIT.search(out)
    return (int(m[1]) if m else None), (out[:m.start()] if m else out)


def client(cli, cmd, deadline=60):
    """Runs cmd on cli under `timeout deadline`: (exit status, output)."""
    return cli.run_status(f"timeout {deadline} {cmd}", timeout=deadline + 30)


def pair(srv, cli, server_cmd, client_cmd, ps="TCP", deadline=60):
    """The server on srv, then once it listens the client on cli; a Run.
    A server that never listens is ended and reported as such (client_rc
    None). The server's deadline is SERVER_GRACE s longer than the
    client's: a client that gives up ends first."""
    if not serve(srv, server_cmd, ps, deadline + SERVER_GRACE):
        srv.run("kill %1 2>/dev/null")
        rc, out = server_result(srv, deadline + SERVER_GRACE)
        return Run(False, None, "", rc, "never listened: " + out)
    crc, cout = client(cli, client_cmd, deadline)
    src, sout = server_result(srv, deadline + SERVER_GRACE)
    return Run(True, crc, cout, src, sout)
