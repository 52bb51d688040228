#!/usr/bin/env python3
"""run_soak.py: the soak (make soak, make test-soak): minutes to hours of
RDMA traffic between guests whose link keeps changing, with processes
killed and restarted, every byte checked, and every guest's resources back
at their starting counts at the end.

The bed (tests/net/launch.py): two xv6 guests and, unless --no-linux, the
Linux Soft-RoCE guest, on one linkemu. In each xv6 guest an `rdmasoak
server` and --clients `rdmasoak client`s (user/rdmasoak.c), each holding
two connections to the other xv6 guest's server, run a seeded mix of
WRITE (read back), READ, WRITE_WITH_IMM and SEND, opening and closing
connections. Between the Linux guest and xv6 guest 1 the opcode x size
matrix (`xrpeer` against `rdmanet_test --matrix`, both directions in turn)
runs over and over, its data checked on both sides.

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
every pair of peers, every resource back. Prints operations, bytes
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
        self.linux = {"rounds": 0, "ok": 0, "errors": 0, "bytes": 0, "bad_cases": []}
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
            try:
                self.linux_round(lnx, g, r % 2 == 1)
            except GuestError as e:
                self.linux["errors"] += 1
                progress("soak", f"linux round {r}: {str(e)[:200]}")
                self.reset_linux(lnx)

    def linux_round(self, lnx, g, linux_passive):
        ip_x, ip_l = self.tb.ip(1), self.tb.ip(LNX)
        l0, x0 = len(lnx.output()), len(g.output())
        if linux_passive:
            lnx.send("xrpeer host_a --matrix")
            wait_text(lnx, l0, r"listening on port \d+\n", 60)
            type_line(g, f"rdmanet_test host_b {ip_l} --matrix &")
        else:
            type_line(g, "rdmanet_test host_a --matrix &")
            wait_text(g, x0, r"rdmanet_test: listening on port \d+\n", 60)
            lnx.send(f"xrpeer host_b {ip_x} --matrix")
        self.linux["rounds"] += 1
        xv = wait_text(g, x0, r"rdmanet_test: (OK|FAILED[^\n]*)\n", MATRIX_S)[1]
        lv = wait_text(lnx, l0, r"rdmanet_test: (OK|FAILED[^\n]*)\n", 120)[1]
        wait_text(lnx, l0, lnx.prompt, 60)
        # The shell reaps finished background jobs only while it waits for a
        # foreground one: without this the rounds' exited jobs fill the
        # process table.
        type_line(g, "echo")
        active = lnx.output()[l0:] if not linux_passive else g.output()[x0:]
        self.linux["bytes"] += sum(int(n) for n in re.findall(r"matrix: \S+ (\d+) bytes: OK", active))
        self.linux["bad_cases"] += re.findall(r"matrix: [^\n]*FAILED[^\n]*", g.output()[x0:] + lnx.output()[l0:])
        if xv == "OK" and lv == "OK":
            self.linux["ok"] += 1
        else:
            self.linux["errors"] += 1
            progress("soak", f"linux round: xv6 {xv}, linux {lv}")

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
        print(f"  xv6 <-> Linux: matrix rounds {lx['rounds']} ({lx['ok']} clean, {lx['errors']} errored out), "
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
    with Testbed(2, linux=0 if args.no_linux else 1, name="soak", both=f"seed {args.seed}") as tb:
        tb.boot(timeout=240)
        soak = Soak(tb, args)
        baseline = {i: resources(soak.xv6(i)) for i in XV6}
        progress("soak", f"{args.minutes:g} minutes, seed {args.seed}; start: {baseline}")
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
