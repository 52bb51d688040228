#!/usr/bin/env python3
"""launch.py: N xv6-rdma guests on one Ethernet link through linkemu.

Owns the test bed every network and RDMA test uses: it starts
netem/linkemu (a learning switch with per-direction impairments), then one
QEMU guest per port through tests/harness/guest.py, each with an E1000 NIC
on a `-netdev dgram` socket pointed at its linkemu port, and its own
address from the boot arguments:

    guest i: ip=10.0.0.(i+1)  mac=52:54:00:00:00:(i+1 in hex)

With k Linux Soft-RoCE guests after the n xv6 ones (tests/harness/
linux_guest.py; `make linux-image` first), numbered on: guest n+j gets
ip=10.0.0.(n+j+1), the next MAC, an MTU of 9000 (linux_mtu=) like the xv6
stack's, and rxe0 on eth0:

    with Testbed(1, linux=1) as tb:
        tb.boot()
        lx = tb.guests[1]               # also tb.linux[0]
        print(lx.run("ping -c 3 " + tb.ip(0)))

With a Linux "netem box" between two xv6 guests instead of linkemu: a
Linux guest with two E1000s bridged (br0), tc netem on each port, guest 0
on eth0's link and guest 1 on eth1's, each link a pair of UDP sockets
connected to each other (no linkemu, so no stats() and no pcap):

    with Testbed(2, netem_box="loss 1%") as tb:      # or ("loss 1%", None)
        tb.boot()
        tb.box.set_netem("a2b", "delay 5ms")         # mid-run change
        print(tb.box.qdiscs())                       # netem's counters

As a module:

    from launch import Testbed
    with Testbed(2, a2b="loss 5% seed 7", pcap_dir="/tmp/cap") as tb:
        tb.boot()                       # both guests in parallel
        g0, g1 = tb.guests
        print(g0.run("ping -c 3 " + tb.ip(1)))
        print(tb.stats()["directions"][0]["frames_out"])
        tb.set_spec("a2b", "loss 20%")   # change impairments mid-run

By hand (a console multiplexer: lines go to the current guest; `:N`
switches to guest N, `:stats` prints linkemu's counters, `:q` quits):

    python3 tests/net/launch.py --guests 2 --a2b "loss 1%" --pcap /tmp/cap
    python3 tests/net/launch.py --run "0:ping -c 3 10.0.0.2" --run "1:nettest stat"
    python3 tests/net/launch.py --guests 1 --linux 1 --run "1:rdma link"
    python3 tests/net/launch.py --netem-box "loss 1%" --run "0:ping -c 20 10.0.0.2"

With the host's tc netem instead of linkemu (netem/netem.sh makes the taps
xrtap0/xrtap1 on a bridge in a namespace; exit status 2 if the host kernel
has no sch_netem):

    netem/netem.sh --a2b "loss 1%" -- python3 tests/net/launch.py --tap --run ...

Python standard library only.
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "harness"))
from guest import Guest, GuestError, progress  # noqa: E402
from linux_guest import LinuxGuest, NetemBox  # noqa: E402

LINKEMU = os.environ.get("LINKEMU", os.path.join(REPO, "build", "netem", "linkemu"))


def free_udp_ports(n):
    """n distinct UDP ports on 127.0.0.1 that were free a moment ago.

    All n sockets stay bound until every port is known: the kernel picks a
    bound port at random, and ports picked one socket at a time can repeat
    (a test bed asks for up to ten, dozens of times per `make test`). Another
    process may still take one before linkemu binds it; start_linkemu
    retries with fresh ports when that happens."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            socks.append(s)
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


SOCK_BUF = 8 << 20
SO_SNDBUFFORCE, SO_RCVBUFFORCE = 32, 33     # Linux; root may exceed wmem/rmem_max


def guest_socket(linkemu_port):
    """The UDP socket a guest's E1000 sends and receives its frames on
    (bound to a port the kernel picks: getsockname() tells which),
    made here and inherited by QEMU (-netdev dgram,local.type=fd) so that it
    gets big buffers: with the kernel's default 208 KiB receive buffer a
    burst of ~90 1-KiB frames that arrives while the receiving QEMU waits for
    a host core overflows it, and that loss is the host's, not the link's."""
    s = big_udp_socket()
    s.connect(("127.0.0.1", linkemu_port))
    return s


def big_udp_socket():
    """A UDP socket on 127.0.0.1 (a port the kernel picks) with SOCK_BUF buffers."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for force, plain in ((SO_RCVBUFFORCE, socket.SO_RCVBUF), (SO_SNDBUFFORCE, socket.SO_SNDBUF)):
        try:
            s.setsockopt(socket.SOL_SOCKET, force, SOCK_BUF)
        except OSError:                         # not root: up to the sysctl maximum
            s.setsockopt(socket.SOL_SOCKET, plain, SOCK_BUF)
    s.bind(("127.0.0.1", 0))
    return s


def dgram_pair():
    """Two UDP sockets connected to each other: a point-to-point link
    between two QEMU NICs (the netem box's links)."""
    a, b = big_udp_socket(), big_udp_socket()
    a.connect(b.getsockname())
    b.connect(a.getsockname())
    return a, b


def guest_ip(i):
    return f"10.0.0.{i + 1}"


def guest_mac(i):
    return "52:54:00:00:00:%02x" % (i + 1)


class Testbed:
    """linkemu plus n guests; use as a context manager (kills everything).

    specs: {port_index: netem spec}; a2b/b2a are shorthands for ports 0/1;
    both applies one spec to every port. extra_append: more boot arguments
    (e.g. "itr=0"). pcap_dir: linkemu writes portN.pcap there. nic_opts:
    more QEMU e1000 properties, e.g. ",mitigation=off" (QEMU then raises
    every interrupt at once, as a real 82540EM does with ITR 0; with
    mitigation on QEMU keeps at least 128 us between interrupts).
    linux: how many Linux guests follow the n xv6 guests (ports n..n+linux-1);
    linux_mtu: their eth0 MTU (9000 as the xv6 stack's: rxe's active MTU is
    then 4096); linux_append: more boot arguments for them; linux_cpus:
    their -smp (1: TCG on a shared host gains little from more).
    kernel, fs_img: the xv6 guests' kernel and disk (another build's, to
    compare two trees in one run: bench/rdma/ab_compare.py).
    netem_box: a netem spec for both directions, or (a2b, b2a): n must be
    2; a linux_guest.NetemBox (self.box, not in self.guests) bridges guest
    0's link to guest 1's and impairs them; no linkemu runs.
    """

    def __init__(self, n=2, a2b=None, b2a=None, both=None, specs=None, pcap_dir=None,
                 cpus=2, memory="128M", name="net", extra_append="", tap=False, nic_opts="",
                 linux=0, linux_mtu=9000, linux_append="", linux_cpus=1, netem_box=None,
                 kernel="kernel/kernel", fs_img="fs.img"):
        self.n = n
        self.total = n + linux          # linkemu ports, one per guest
        self.box = None
        if netem_box is not None and (n != 2 or linux or tap):
            raise GuestError("netem_box: two xv6 guests, no Linux guests, no taps")
        self.specs = dict(specs or {})
        if a2b:
            self.specs[0] = a2b
        if b2a:
            self.specs[1] = b2a
        self.both = both
        self.pcap_dir = pcap_dir
        self.name = name
        self._pick_linkemu_ports()
        self.gport = []
        self.stats_path = os.path.join(REPO, "tests", "logs", f"{name}-linkemu-stats.json")
        self.linkemu_log = os.path.join(REPO, "tests", "logs", f"{name}-linkemu.log")
        self.linkemu = None
        self.tap = tap                  # tap i = xrtap<i> (netem/netem.sh); no linkemu
        self.guests = []
        self.socks = []
        box_links = [dgram_pair(), dgram_pair()] if netem_box is not None else None
        for i in range(n):
            append = f"ip={guest_ip(i)} mac={guest_mac(i)} {extra_append}".strip()
            args, fds = self._nic(i, nic_opts, box_links[i][0] if box_links else None)
            self.guests.append(Guest(f"{name}{i}", cpus=cpus, memory=memory,
                                     append=append, extra_args=args, pass_fds=fds,
                                     kernel=kernel, fs_img=fs_img))
        self.linux = []
        for i in range(n, self.total):
            append = f"ip={guest_ip(i)} mac={guest_mac(i)} mtu={linux_mtu} {linux_append}"
            args, fds = self._nic(i, nic_opts)
            self.linux.append(LinuxGuest(f"{name}{i}-linux", append=append.strip(),
                                         cpus=linux_cpus, extra_args=args, pass_fds=fds))
        self.guests += self.linux
        if box_links:
            self._make_box(netem_box, box_links, name, nic_opts)

    def _nic(self, i, nic_opts, sock=None, netid="n0"):
        """QEMU arguments and inherited fds for guest i's E1000: on port i
        (a tap, or a socket connected to linkemu's port i) or on sock."""
        if self.tap:
            netdev = f"tap,id={netid},ifname=xrtap{i},script=no,downscript=no"
            fds = ()
        else:
            if sock is None:
                sock = guest_socket(self.listen[i])
                self.gport.append(sock.getsockname()[1])
            self.socks.append(sock)
            fds = (sock.fileno(),)
            netdev = f"dgram,id={netid},local.type=fd,local.str={sock.fileno()}"
        return ["-netdev", netdev,
                "-device", f"e1000,netdev={netid},mac={guest_mac(i)},romfile={nic_opts}"], fds

    def _make_box(self, spec, links, name, nic_opts):
        """The netem box: eth0 on guest 0's link, eth1 on guest 1's."""
        a2b, b2a = spec if isinstance(spec, tuple) else (spec, spec)
        args0, fds0 = self._nic(self.n, nic_opts, links[0][1], "n0")
        args1, fds1 = self._nic(self.n + 1, nic_opts, links[1][1], "n1")
        self.box = NetemBox(f"{name}-box", a2b=a2b, b2a=b2a, nics=args0 + args1,
                            pass_fds=fds0 + fds1)

    @staticmethod
    def ip(i):
        return guest_ip(i)

    @staticmethod
    def mac(i):
        return guest_mac(i)

    # ---- lifecycle ----

    def start_linkemu(self, attempts=4):
        """Starts linkemu and waits until its control socket answers. If a
        port it should listen on was taken meanwhile (its bind fails), it
        picks fresh ports, points the guest sockets at them and tries again."""
        if not os.path.exists(LINKEMU):
            raise GuestError(f"{LINKEMU} missing (make {os.path.relpath(LINKEMU, REPO)})")
        for attempt in range(attempts):
            if self._run_linkemu():
                return
            with open(self.linkemu_log) as f:
                why = f.read()
            if "bind" not in why or attempt == attempts - 1:
                raise GuestError(f"linkemu exited: {why.strip()[-300:]} (log {self.linkemu_log})")
            progress(self.name, f"linkemu: {why.strip()}; again on fresh ports")
            self._pick_linkemu_ports()
            for sock, port in zip(self.socks, self.listen):
                sock.connect(("127.0.0.1", port))

    def _pick_linkemu_ports(self):
        """linkemu's listening port for each guest, and its control port."""
        *self.listen, self.ctl_port = free_udp_ports(self.total + 1)

    def _linkemu_cmd(self):
        cmd = [LINKEMU]
        for i in range(self.total):
            cmd += ["--port", f"{self.listen[i]}:{self.gport[i]}"]
        if self.both:
            cmd += ["--both", self.both]
        for port, spec in sorted(self.specs.items()):
            cmd += ["--in", str(port), spec]
        if self.pcap_dir:
            os.makedirs(self.pcap_dir, exist_ok=True)
            cmd += ["--pcap", self.pcap_dir]
        return cmd + ["--stats", self.stats_path, "--control", str(self.ctl_port)]

    def _run_linkemu(self):
        """One start; True once the control socket answers, False if linkemu
        exited first. Raises if it neither answers nor exits."""
        cmd = self._linkemu_cmd()
        os.makedirs(os.path.dirname(self.linkemu_log), exist_ok=True)
        with open(self.linkemu_log, "w") as log:
            progress(self.name, "linkemu " + " ".join(f"'{c}'" if " " in c else c for c in cmd[1:]))
            self.linkemu = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
        for _ in range(50):
            try:
                self.control("stats", timeout=0.2)
                return True
            except OSError:
                if self.linkemu.poll() is not None:
                    return False
        raise GuestError("linkemu control socket does not answer")

    def boot(self, timeout=90, only=None):
        """Starts linkemu and every guest (or the guests in only: the
        others' ports stay idle), waits for their shell prompts."""
        if not self.linkemu and not self.tap and not self.box:
            self.start_linkemu()
        every = list(only) if only else self.guests + ([self.box] if self.box else [])
        for g in every:
            g.start()
        for g in every:
            g.boot(timeout)
        return self

    def halt(self, timeout=30):
        """Powers every guest off cleanly; returns their exit statuses."""
        statuses = []
        for g in self.guests:
            if g.proc and g.proc.poll() is None:
                g.send_halt(0)
        for g in self.guests:
            statuses.append(g.wait_exit(timeout))
        if self.box and self.box.proc and self.box.proc.poll() is None:
            self.box.halt(timeout=timeout)
        return statuses

    def kill(self):
        for g in self.guests + ([self.box] if self.box else []):
            g.kill()
        for s in self.socks:
            s.close()
        self.socks = []
        if self.linkemu and self.linkemu.poll() is None:
            self.linkemu.terminate()
            try:
                self.linkemu.wait(5)
            except subprocess.TimeoutExpired:
                self.linkemu.kill()
                self.linkemu.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.kill()
        return False

    # ---- linkemu ----

    def control(self, message, timeout=2.0):
        """One request on linkemu's control socket; returns the reply text."""
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            s.settimeout(timeout)
            s.sendto(message.encode(), ("127.0.0.1", self.ctl_port))
            return s.recv(65536).decode()
        finally:
            s.close()

    def stats(self):
        """linkemu's counters now (the --stats JSON)."""
        return json.loads(self.control("stats"))

    def set_spec(self, target, spec):
        """Change impairments now: target 'a2b', 'b2a', 'both' or a port."""
        reply = self.control(f"set {target} {spec}")
        if not reply.startswith("ok"):
            raise GuestError(f"linkemu: {reply}")

    def delivered_to(self, i, st=None):
        """Frames linkemu has sent to guest i (its port's tx counter)."""
        st = st or self.stats()
        return st["directions"][i]["tx"]


# ---- command line ----

def console(tb):
    """Multiplexes the guests' consoles on this terminal."""
    current = [0]
    seen = [len(g.output()) for g in tb.guests]
    stop = threading.Event()

    def pump():
        while not stop.is_set():
            for i, g in enumerate(tb.guests):
                text = g.output()
                if len(text) > seen[i]:
                    new, seen[i] = text[seen[i]:], len(text)
                    for line in new.splitlines(True):
                        sys.stdout.write(f"[{i}] {line}")
                    sys.stdout.flush()
            time.sleep(0.05)

    threading.Thread(target=pump, daemon=True).start()
    print("console: lines go to guest 0; ':N' switches guest, ':stats', ':q' quits")
    for line in sys.stdin:
        line = line.rstrip("\n")
        if line == ":q":
            break
        if line == ":stats" and tb.linkemu:
            print(json.dumps(tb.stats(), indent=1))
        elif line == ":stats" and tb.box:
            print(tb.box.qdiscs(), end="")
        elif line[:1] == ":" and line[1:].isdigit() and int(line[1:]) < len(tb.guests):
            current[0] = int(line[1:])
            print(f"console: now guest {current[0]}")
        else:
            tb.guests[current[0]].send(line)
    stop.set()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--guests", type=int, default=2)
    ap.add_argument("--linux", type=int, default=0, metavar="K",
                    help="K Linux Soft-RoCE guests after the xv6 ones (make linux-image)")
    ap.add_argument("--linux-mtu", type=int, default=9000, help="their eth0 MTU")
    ap.add_argument("--linux-cpus", type=int, default=1, help="their -smp")
    ap.add_argument("--netem-box", metavar="SPEC",
                    help="a Linux bridge with tc netem SPEC each way between guests 0 and 1 "
                         "instead of linkemu (--box-a2b/--box-b2a: one direction)")
    ap.add_argument("--box-a2b", metavar="SPEC", help="the netem box's spec from guest 0")
    ap.add_argument("--box-b2a", metavar="SPEC", help="the netem box's spec from guest 1")
    ap.add_argument("--a2b", help="netem spec for frames from guest 0")
    ap.add_argument("--b2a", help="netem spec for frames from guest 1")
    ap.add_argument("--both", help="netem spec on every port")
    ap.add_argument("--in", dest="ins", nargs=2, action="append", metavar=("N", "SPEC"),
                    default=[], help="netem spec for frames entering port N")
    ap.add_argument("--pcap", help="directory for linkemu's portN.pcap captures")
    ap.add_argument("--tap", action="store_true",
                    help="NICs on taps xrtap0/xrtap1 (run under netem/netem.sh), no linkemu")
    ap.add_argument("--cpus", type=int, default=2)
    ap.add_argument("--append", default="", help="extra boot arguments for every guest")
    ap.add_argument("--run", action="append", default=[], metavar="N:CMD",
                    help="run CMD on guest N and print its output (repeatable, in order)")
    ap.add_argument("--timeout", type=int, default=120, help="seconds per --run command")
    args = ap.parse_args()
    specs = {int(n): s for n, s in args.ins}
    box = None
    if args.netem_box is not None or args.box_a2b or args.box_b2a:
        box = (args.box_a2b or args.netem_box, args.box_b2a or args.netem_box)
    with Testbed(args.guests, a2b=args.a2b, b2a=args.b2a, both=args.both, specs=specs,
                 pcap_dir=args.pcap, cpus=args.cpus, name="launch",
                 extra_append=args.append, tap=args.tap, linux=args.linux,
                 linux_mtu=args.linux_mtu, linux_cpus=args.linux_cpus,
                 netem_box=box) as tb:
        tb.boot()
        for item in args.run:
            n, _, cmd = item.partition(":")
            print(f"--- guest {n}: {cmd}")
            if cmd.rstrip().endswith("&"):        # background job: its output may
                tb.guests[int(n)].send(cmd)       # share the prompt's line, so do
                time.sleep(1.5)                   # not wait for a bare prompt
                continue
            print(tb.guests[int(n)].run(cmd, timeout=args.timeout), end="")
        if not args.run:
            console(tb)
        if tb.linkemu:
            print(json.dumps(tb.stats(), indent=1))
        elif tb.box:
            print(tb.box.qdiscs(), end="")
        tb.halt()
    if args.pcap:
        print(f"captures: {args.pcap}/port*.pcap (tshark -r {args.pcap}/port0.pcap)")


if __name__ == "__main__":
    main()
