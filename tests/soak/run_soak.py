#!/usr/bin/env python3
"""run_soak.py: the soak (make soak, make test-soak): minutes to hours of
RDMA traffic between guests whose link keeps changing, with processes
killed and restarted, every byte checked, and every guest's resources back
at their starting counts at the end.

The bed (tests/net/launch.py): two xv6 guests and, unless --no-linux, the
Linux Soft-RoCE guest, on one linkemu. In each xv6 guest an `rdmasoak
server` and --clients `rdmasoak client`s (user/tests/rdmasoak.c), each holding
two connections to the other xv6 guest's server, run a seeded mix of
WRITE (read back), READ, WRITE_WITH_IMM and SEND, opening and closing
connections. Between the Linux guest and xv6 guest 1 the opcode x size
matrix (`xrpeer` against `rdmanet_test --matrix`, both directions in turn)
runs over and over, its data checked on both sides; a round that errors
out (a connect lost in a blackhole) has its xv6 side killed, so the next
round starts clean.

Meanwhile a seeded schedule (--seed) changes the impairment of a random
port (or all) every 8-20 s through linkemu's control socket: random loss,
Gilbert-Elliott bursts, reorder, duplicates, corruption, blackholes of
1-3 s, a clean link (each kind once per round of seven); and every 15-35 s it kills a random rdmasoak process
(a client, or one time in three a server) and starts it again.

After --minutes the link is cleaned, the clients end by themselves, the
servers are killed, and the driver waits (with a deadline) until each xv6
guest's counters (`rdmasoak stat`: free pages, processes, PDs, MRs, CQs,
QPs, completion channels, ring-pool pages, netbufs) equal those taken
after boot. Checks (tests/harness/tally.py): no panic, no byte that
differed, every client not killed ended cleanly, bytes verified between
every pair of peers, the Linux rounds recovering after each fault (at most
LINUX_STREAK_MAX errored in a row), every resource back. Prints operations, bytes
verified, faults injected (from the schedule and linkemu's counters),
kills, resources at start and end, and "soak: N passed, M failed".

Usage: python3 tests/soak/run_soak.py [--minutes M] [--seed S] [--clients N] [--no-linux]
"""
import argparse
import os
import random
import re
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "net"))
sys.path.insert(0, os.path.join(HERE, "..", "harness"))
from launch import Testbed  # noqa: E402
from guest import GuestError, progress  # noqa: E402
from tally import Tally  # noqa: E402

XV6 = (0, 1)            # the xv6 guests' indices in the bed
LNX = 2                 # the Linux guest's
SERVER_IDLE_S = 20      # rdmasoak server -i: a killed client's connection is freed after this
REPORT_S = 30           # the driver's progress period
RESOURCES = ("free_pages", "procs", "pds", "mrs", "cqs", "qps", "chans", "pool_free", "netbufs_free")
DRAIN_S = 120           # how long the end may take to bring every count back
MATRIX_S = 180          # the longest a matrix round between xv6 and Linux may take
PASSIVE_GRACE_S = 10    # how long a passive side may take to end once its active peer failed
LINUX_STREAK_MAX = 5    # errored Linux rounds in a row that still count as recovering: a fault
                        # lasts 8-20 s and a round about 10 s, so 5 spans the worst two faults


# ---- reading consoles without consuming them ----

def wait_text(g, start, pattern, timeout):
    """The first match of pattern in g's output after offset start, waiting
    up to timeout s; raises GuestError on a timeout or a panic."""
    want = re.compile(pattern, re.MULTILINE)
    deadline = time.monotonic() + timeout
    while True:
        text = g.output()
        m = want.search(text, start)
        if m:
            return m
        if re.search(g.panic, text[start:]):
            raise GuestError(f"{g.name}: panic while waiting for /{pattern}/")
        if time.monotonic() > deadline:
            raise GuestError(f"{g.name}: timeout {timeout} s waiting for /{pattern}/; "
                             f"last output:\n{text[-400:]}")
        time.sleep(0.2)


TYPING = threading.Lock()    # the driver and the Linux thread both type on guest 1


def verdict(g, start, timeout):
    """rdmanet_test's verdict on g after start: "OK", "FAILED (...)", or
    "still running" after timeout s."""
    try:
        return wait_text(g, start, r"rdmanet_test: (OK|FAILED[^\n]*)\n", timeout)[1]
    except GuestError:
        if re.search(g.panic, g.output()[start:]):
            raise
        return f"still running after {timeout} s"


def type_line(g, line):
    """One line on g's console, never mixed with another thread's."""
    with TYPING:
        g.send(line)


def launch(g, cmd, started):
    """Starts cmd in the background on xv6 guest g; returns its pid, read
    from the line (regex `started`, its group 1) it prints when it runs
    (the pid the shell prints for a `&` job is the job's, not the program's)."""
    start = len(g.output())
    type_line(g, cmd + " &")
    return int(wait_text(g, start, started, 60)[1])


def launch_server(g):
    return launch(g, f"rdmasoak server -i {SERVER_IDLE_S}", r"rdmasoak\[(\d+)\]: server listening")


def resources(g):
    """The counters `rdmasoak stat` prints, as a dict."""
    start = len(g.output())
    type_line(g, "rdmasoak stat")
    line = wait_text(g, start, r"resources ([^\n]*)\n", 60)[1]
    words = line.split()
    return {words[i]: int(words[i + 1]) for i in range(0, len(words) - 1, 2)}


# ---- the impairment schedule ----

FAULTS = ("loss", "gemodel", "reorder", "duplicate", "corrupt", "blackhole", "clean")


def fault(rng, kind):
    """(kind, spec) of one seeded impairment of a kind in FAULTS; tc netem's
    grammar (netem/README.md)."""
    seed = rng.randrange(1, 1 << 30)
    spec = {
        "loss": f"loss {rng.uniform(0.5, 3):.2f}%",
        "gemodel": f"loss gemodel {rng.uniform(0.5, 2):.2f}% {rng.uniform(20, 40):.0f}% "
                   f"{rng.uniform(50, 90):.0f}% 0.1%",
        "reorder": f"delay 1ms reorder {rng.uniform(5, 25):.0f}% gap {rng.randint(2, 8)}",
        "duplicate": f"duplicate {rng.uniform(1, 5):.1f}%",
        "corrupt": f"corrupt {rng.uniform(0.5, 2):.1f}%",
        "blackhole": f"blackhole 0s-{rng.uniform(1, 3):.1f}s",
        "clean": "",
    }[kind]
    return kind, f"{spec} seed {seed}".strip()


# ---- the soak ----

class Soak:
    def __init__(self, tb, args):
        self.tb, self.args = tb, args
        self.rng = random.Random(args.seed)
        self.seconds = int(args.minutes * 60)
        self.servers = {}                    # guest index -> server pid
        self.clients = {}                    # (guest index, pid) -> cmd of clients to see end
        self.fault_deck, self.kill_deck = [], []
        self.killed = []                     # (guest index, pid, role)
        self.faults = {}                     # kind -> times set
        self.linux = {"rounds": 0, "ok": 0, "errors": 0, "bytes": 0, "bad_cases": [], "streak": 0,
                      "longest_streak": 0}
        self.xv6_pid = None                  # the xv6 rdmanet_test of the running Linux round
        self.stop_linux = threading.Event()

    def xv6(self, i):
        return self.tb.guests[i]

    def peer_ip(self, i):
        return self.tb.ip(1 - i)

    def start_client(self, i, seconds):
        seed = self.rng.randrange(1, 1 << 30)
        cmd = f"rdmasoak client -t {seconds} -q 2 -s {seed} {self.peer_ip(i)}"
        pid = launch(self.xv6(i), cmd, rf"rdmasoak\[(\d+)\]: client seed {seed} ")
        self.clients[(i, pid)] = cmd

    def start(self):
        for i in XV6:
            self.servers[i] = launch_server(self.xv6(i))
        for i in XV6:
            for _ in range(self.args.clients):
                self.start_client(i, self.seconds)
        self.t0 = time.monotonic()

    def left(self):
        return self.seconds - (time.monotonic() - self.t0)

    def kill_one(self):
        """Kills a random rdmasoak process and starts its like again."""
        i = self.rng.choice(XV6)
        g = self.xv6(i)
        if not self.kill_deck:                  # a server one kill in three, in a seeded order
            self.kill_deck = ["server", "client", "client"]
            self.rng.shuffle(self.kill_deck)
        if self.kill_deck.pop() == "server":
            pid = self.servers[i]
            type_line(g, f"kill {pid}")
            self.killed.append((i, pid, "server"))
            self.servers[i] = launch_server(g)
            progress("soak", f"killed server {pid} in guest {i}; new server {self.servers[i]}")
            return
        mine = [p for gi, p in self.clients if gi == i]
        if not mine or self.left() < 20:
            return
        pid = self.rng.choice(mine)
        type_line(g, f"kill {pid}")
        del self.clients[(i, pid)]
        self.killed.append((i, pid, "client"))
        self.start_client(i, int(self.left()))
        progress("soak", f"killed client {pid} in guest {i}; restarted for {int(self.left())} s")

    def change_link(self):
        ports = list(range(self.tb.total)) + ["both"]
        target = self.rng.choice(ports)
        if not self.fault_deck:                 # every kind once per round, in a seeded order
            self.fault_deck = list(FAULTS)
            self.rng.shuffle(self.fault_deck)
        kind, spec = fault(self.rng, self.fault_deck.pop())
        self.tb.set_spec(str(target), spec)
        self.faults[kind] = self.faults.get(kind, 0) + 1
        progress("soak", f"link {target}: {spec or 'clean'}")

    def run(self):
        """The timed part: faults and kills on their schedule until the end."""
        next_fault = time.monotonic() + self.rng.uniform(8, 20)
        next_kill = time.monotonic() + self.rng.uniform(15, 35)
        next_report = time.monotonic() + REPORT_S
        while self.left() > 0:
            now = time.monotonic()
            if now >= next_fault:
                self.change_link()
                next_fault = now + self.rng.uniform(8, 20)
            if now >= next_kill:
                self.kill_one()
                next_kill = now + self.rng.uniform(15, 35)
            if now >= next_report:
                self.report()
                next_report = now + REPORT_S
            self.check_panic()
            time.sleep(0.5)
        self.tb.set_spec("both", f"seed {self.args.seed}")
        progress("soak", "time is up; link clean; waiting for the clients to end")

    def check_panic(self):
        for g in self.tb.guests[:2]:
            if re.search(g.panic, g.output()):
                raise GuestError(f"{g.name}: kernel panic")

    def totals(self):
        """ops, bytes over every rdmasoak client (its last line), and VERIFY FAILED lines."""
        ops = nbytes = 0
        bad = []
        for i in XV6:
            text = self.xv6(i).output()
            last = {}
            for m in re.finditer(r"rdmasoak\[(\d+)\]: (?:progress|client done) ops (\d+) bytes (\d+)", text):
                last[m[1]] = (int(m[2]), int(m[3]))
            ops += sum(v[0] for v in last.values())
            nbytes += sum(v[1] for v in last.values())
            bad += re.findall(r"[^\n]*VERIFY FAILED[^\n]*", text)
        return ops, nbytes, bad

    def report(self):
        ops, nbytes, bad = self.totals()
        st = self.tb.stats()
        drops = sum(d["dropped"]["total"] for d in st["directions"])
        progress("soak", f"{self.left():.0f} s left: xv6 ops {ops} bytes {nbytes} verify failures {len(bad)}; "
                         f"linux matrix rounds {self.linux['ok']}/{self.linux['rounds']}; "
                         f"link drops {drops}; kills {len(self.killed)}")

    def finish_clients(self):
        """Waits for every client still running to print its end; the ones
        that did not end cleanly, each with its last word."""
        deadline = time.monotonic() + 120
        missing = []
        for (i, pid), cmd in self.clients.items():
            try:
                end = wait_text(self.xv6(i), 0, rf"rdmasoak\[{pid}\]: (client: OK|VERIFY FAILED[^\n]*|"
                                rf"[^\n]* failed \(errno[^\n]*)\n", max(1, deadline - time.monotonic()))[1]
                if end != "client: OK":
                    missing.append(f"guest {i} pid {pid} ({cmd}): {end}")
            except GuestError as e:
                missing.append(f"guest {i} pid {pid} ({cmd}): {str(e)[:200]}")
        return missing

    def stop_servers(self):
        for i, pid in self.servers.items():
            type_line(self.xv6(i), f"kill {pid}")

    # ---- xv6 <-> Linux: the matrix over and over ----

    def linux_loop(self):
        lnx, g = self.tb.guests[LNX], self.xv6(1)
        r = 0
        while not self.stop_linux.is_set():
            r += 1
            self.linux["rounds"] += 1
            self.xv6_pid = None
            try:
                ok = self.linux_round(lnx, g, r % 2 == 1)
            except GuestError as e:
                ok = False
                progress("soak", f"linux round {r}: {str(e)[:200]}")
                self.reset_linux(lnx)
            if not ok:
                self.end_xv6_side(g)
            self.tally_round(ok)

    def tally_round(self, ok):
        """Counts a round clean or errored out, and the longest run of errored ones."""
        lx = self.linux
        lx["ok" if ok else "errors"] += 1
        lx["streak"] = 0 if ok else lx["streak"] + 1
        lx["longest_streak"] = max(lx["longest_streak"], lx["streak"])

    def linux_round(self, lnx, g, linux_passive):
        """One matrix round, xv6 passive or active; True if both sides said OK.
        The active side's verdict comes first; a passive side whose peer
        failed gets PASSIVE_GRACE_S to end (a listener whose peer's connect
        was lost waits for ever). The xv6 side's pid is kept (self.xv6_pid)
        for end_xv6_side; a Linux side still running is ^Ced."""
        ip_x, ip_l = self.tb.ip(1), self.tb.ip(LNX)
        l0, x0 = len(lnx.output()), len(g.output())
        if linux_passive:
            lnx.send("xrpeer host_a --matrix")
            wait_text(lnx, l0, r"listening on port \d+\n", 60)
            type_line(g, f"rdmanet_test host_b {ip_l} --matrix &")
            self.xv6_pid = int(wait_text(g, x0, r"rdmanet_test: pid (\d+), host_b\n", 60)[1])
        else:
            type_line(g, "rdmanet_test host_a --matrix &")
            self.xv6_pid = int(wait_text(g, x0, r"rdmanet_test: pid (\d+), host_a\n", 60)[1])
            up = wait_text(g, x0, r"rdmanet_test: (listening on port \d+|FAILED[^\n]*)\n", 60)[1]
            if up.startswith("FAILED"):
                progress("soak", f"linux round: xv6 {up}")
                return False
            lnx.send(f"xrpeer host_b {ip_x} --matrix")
        (active, a0), (passive, p0) = ((g, x0), (lnx, l0)) if linux_passive else ((lnx, l0), (g, x0))
        av = verdict(active, a0, MATRIX_S)
        pv = verdict(passive, p0, MATRIX_S if av == "OK" else PASSIVE_GRACE_S)
        xv, lv = (av, pv) if linux_passive else (pv, av)
        if lv.startswith("still"):
            self.reset_linux(lnx)
        else:
            wait_text(lnx, l0, lnx.prompt, 60)
        # The shell reaps finished background jobs only while it waits for a
        # foreground one: without this the rounds' exited jobs fill the
        # process table.
        type_line(g, "echo")
        act = lnx.output()[l0:] if not linux_passive else g.output()[x0:]
        self.linux["bytes"] += sum(int(n) for n in re.findall(r"matrix: \S+ (\d+) bytes: OK", act))
        self.linux["bad_cases"] += re.findall(r"matrix: [^\n]*FAILED[^\n]*", g.output()[x0:] + lnx.output()[l0:])
        if xv == "OK" and lv == "OK":
            return True
        progress("soak", f"linux round: xv6 {xv}, linux {lv}")
        return False

    def lost_connect(self):
        """Breaks a round on purpose, before the soak: every frame from the
        Linux guest dropped while its host_b connects, so the connect times
        out and the xv6 listener waits for ever. The driver must clean up
        (end_xv6_side); the round after it, on a clean link, must then
        listen on the same port and pass. A clean round first resolves each
        side's ARP entry, so only the CM's messages are lost. Returns (the
        lost round errored out as meant, the next round clean)."""
        lnx, g = self.tb.guests[LNX], self.xv6(1)
        if not self.linux_round(lnx, g, False):
            return False, False
        l0 = len(lnx.output())
        self.tb.set_spec(str(LNX), f"loss 100% seed {self.args.seed}")
        try:
            lost = self.linux_round(lnx, g, False)
            timed_out = re.search(r"connect: no answer", lnx.output()[l0:]) is not None
        finally:
            self.tb.set_spec(str(LNX), f"seed {self.args.seed}")
        if not lost:
            self.end_xv6_side(g)
        return (not lost and timed_out), self.linux_round(lnx, g, False)

    def end_xv6_side(self, g):
        """A round that errored out: its xv6 rdmanet_test may still wait (a
        listener whose peer's connect was lost waits for ever, as rping -s
        does); kill it so the next round can listen, and reap it."""
        if self.xv6_pid is not None:
            type_line(g, f"kill {self.xv6_pid}")
        type_line(g, "echo")

    def reset_linux(self, lnx):
        """A round that hung: ^C on the Linux side, and its prompt back."""
        start = len(lnx.output())
        lnx.send("\x03")
        try:
            wait_text(lnx, start, lnx.prompt, 30)
        except GuestError:
            pass


def compare(start, end):
    """The counters that differ: 'name start->end' each."""
    return [f"{k} {start[k]}->{end.get(k)}" for k in RESOURCES if start.get(k) != end.get(k)]


def drain(soak, baseline):
    """Waits until each xv6 guest's counters equal their start (deadline DRAIN_S)."""
    end = {}
    deadline = time.monotonic() + DRAIN_S
    for i in XV6:
        while True:
            end[i] = resources(soak.xv6(i))
            if not compare(baseline[i], end[i]) or time.monotonic() > deadline:
                break
            time.sleep(2)
    return end


def summary(soak, baseline, end, st, t_all):
    ops, nbytes, _ = soak.totals()
    print("=== soak summary")
    print(f"  minutes {soak.args.minutes:g} (wall clock {time.monotonic() - t_all:.0f} s with boot and drain), "
          f"seed {soak.args.seed}, {soak.args.clients} clients per xv6 guest")
    print(f"  xv6 <-> xv6: operations {ops}, bytes verified {nbytes}")
    lx = soak.linux
    if soak.tb.linux:
        print(f"  xv6 <-> Linux: matrix rounds {lx['rounds']} ({lx['ok']} clean, {lx['errors']} errored out, "
              f"at most {lx['longest_streak']} in a row), "
              f"bytes verified {lx['bytes']}")
    print("  faults set: " + ", ".join(f"{k} {v}" for k, v in sorted(soak.faults.items())))
    for port, d in enumerate(st["directions"]):
        dr = d["dropped"]
        print(f"  linkemu, frames from guest {port}: frames in {d['frames_in']}, dropped random {dr['random']} "
              f"gemodel {dr['gemodel']} blackhole {dr['blackhole']}, duplicated {d['duplicated']}, "
              f"corrupted {d['corrupted']}, reordered {d['reordered']}")
    kills = [f"{role} {pid}@{i}" for i, pid, role in soak.killed]
    print(f"  kills {len(kills)}: " + " ".join(kills))
    for i in XV6:
        print(f"  guest {i} start: " + " ".join(f"{k} {baseline[i][k]}" for k in RESOURCES))
        print(f"  guest {i} end:   " + " ".join(f"{k} {end[i].get(k)}" for k in RESOURCES))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=float(os.environ.get("SOAK_MINUTES", 30)))
    ap.add_argument("--seed", type=int, default=int(os.environ.get("SOAK_SEED", 1)))
    ap.add_argument("--clients", type=int, default=3, help="rdmasoak clients per xv6 guest")
    ap.add_argument("--no-linux", action="store_true", help="no Linux guest (xv6 <-> xv6 only)")
    args = ap.parse_args()
    tally = Tally()
    t_all = time.monotonic()
    # The Linux guest's eth0 at 1500, so rxe's active MTU is the xv6 guests'
    # 1024: the IB CM's REQ fixes one path MTU for both directions, and a
    # passive side whose port runs less rejects it ([IBCM-REJ-3]).
    with Testbed(2, linux=0 if args.no_linux else 1, linux_mtu=1500, name="soak",
                 both=f"seed {args.seed}") as tb:
        tb.boot(timeout=240)
        soak = Soak(tb, args)
        baseline = {i: resources(soak.xv6(i)) for i in XV6}
        progress("soak", f"{args.minutes:g} minutes, seed {args.seed}; start: {baseline}")
        lost = None
        if tb.linux:
            try:
                lost = soak.lost_connect()
            except GuestError as e:
                lost = (False, False)
                progress("soak", f"lost-connect round: {str(e)[:200]}")
            progress("soak", f"lost-connect round: errored out as meant {lost[0]}; next round clean {lost[1]}")
        soak.start()
        lthread = None
        if tb.linux:
            lthread = threading.Thread(target=soak.linux_loop, daemon=True)
            lthread.start()
        try:
            soak.run()
            missing = soak.finish_clients()
        except GuestError as e:
            tally.record("soak_run", False, str(e)[:300])
            missing = ["the run stopped"]
        soak.stop_linux.set()
        if lthread:
            lthread.join(MATRIX_S + 240)
        soak.stop_servers()
        end = drain(soak, baseline)
        st = tb.stats()
        summary(soak, baseline, end, st, t_all)
        ops, nbytes, bad = soak.totals()
        panics = [g.name for g in tb.guests if re.search(g.panic, g.output())]
        tally.record("soak_no_panic", not panics, ", ".join(panics) or "no guest panicked")
        tally.record("soak_every_byte_verified", not bad and not soak.linux["bad_cases"],
                     f"{len(bad)} rdmasoak and {len(soak.linux['bad_cases'])} matrix differences"
                     + ("; " + " | ".join((bad + soak.linux["bad_cases"])[:3]) if bad or soak.linux["bad_cases"]
                        else ""))
        tally.record("soak_clients_end_clean", not missing,
                     f"{len(soak.clients)} clients not killed ended with OK" if not missing
                     else "; ".join(missing[:3]))
        tally.record("soak_xv6_pair_verified", nbytes > 0, f"{nbytes} bytes in {ops} operations")
        if tb.linux:
            tally.record("soak_linux_pair_verified", soak.linux["bytes"] > 0,
                         f"{soak.linux['bytes']} bytes in {soak.linux['ok']} clean matrix rounds")
            tally.record("soak_linux_lost_connect_cleaned", lost == (True, True),
                         "a Linux connect lost on purpose timed out, its xv6 listener was killed, and the next "
                         "round listened on the same port and passed" if lost == (True, True)
                         else f"lost round errored out as meant: {lost[0]}; next round clean: {lost[1]}")
            streak = soak.linux["longest_streak"]
            tally.record("soak_linux_pair_recovers", streak <= LINUX_STREAK_MAX,
                         f"at most {streak} errored rounds in a row (limit {LINUX_STREAK_MAX})")
        for i in XV6:
            diff = compare(baseline[i], end[i])
            tally.record(f"soak_guest{i}_resources_back", not diff,
                         "every count at its start" if not diff else "differ: " + ", ".join(diff))
        for g in tb.guests[:2]:
            g.send("halt 0")
    sys.stdout.write("soak: ")
    return tally.finish()


if __name__ == "__main__":
    sys.exit(main())
