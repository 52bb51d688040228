#!/usr/bin/env python3
"""test_linkemu.py: host-only test of netem/linkemu (no guests needed).

Two local UDP sockets play the two QEMU guests (`-netdev dgram`: one datagram
is one Ethernet frame). Each test starts linkemu with seeded impairments and a
drop list, sends numbered frames both ways, and checks:
  (a) the same seed twice drops the same frames, frame for frame;
      a different seed drops different ones;
  (b) a drop list drops exactly the named frames;
  (c) the --stats counters match what was sent and what arrived;
  (d) the control socket changes impairments mid-run (a blackhole now,
      then none);
  (e) --pcap writes one readable pcap per port (tshark reads it, if installed);
  (f) the guests' test bed (tests/net/launch.py) restarts linkemu on fresh
      ports when one of its ports was taken.
Nothing waits a fixed time: a test waits (with a deadline) until linkemu's
control socket answers, until its counters show every frame sent has entered
and left, then until each socket has received what linkemu says it sent there.
Prints one line per test and `N passed, M failed`; exit status 1 on failure.
Usage: test_linkemu.py path/to/linkemu
"""
import json, os, shutil, signal, socket, struct, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "net"))
import launch  # noqa: E402  (the test bed: free_udp_ports, Testbed)

LINKEMU = sys.argv[1] if len(sys.argv) > 1 else "build/netem/linkemu"
MAC_A, MAC_B = bytes.fromhex("525400000001"), bytes.fromhex("525400000002")
N = 300


free_ports = launch.free_udp_ports


def guest_socket():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
    s.bind(("127.0.0.1", 0))
    s.settimeout(0.05)
    return s


def frame(dst, src, idx, size=100):
    body = struct.pack("!I", idx) + bytes((idx + k) & 0xFF for k in range(size - 18))
    return dst + src + b"\x88\xb5" + body


DEADLINE = 20.0             # seconds any wait below may take before it fails


def control(port, cmd, timeout=2.0):
    """One request on linkemu's control socket; the reply text."""
    c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        c.settimeout(timeout)
        c.sendto(cmd.encode(), ("127.0.0.1", port))
        return c.recv(1 << 16).decode()
    finally:
        c.close()


def start_linkemu(cmd, ctl_port):
    """Starts linkemu (cmd without --control) and waits until its control
    socket answers, so its ports are bound before the first frame."""
    p = subprocess.Popen(cmd + ["--control", str(ctl_port)], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + DEADLINE
    while True:
        if p.poll() is not None:
            raise RuntimeError("linkemu exited: " + p.stderr.read())
        try:
            control(ctl_port, "stats", timeout=0.2)
            return p
        except OSError:
            if time.monotonic() > deadline:
                p.kill()
                raise RuntimeError("linkemu's control socket does not answer")


def settle(ctl_port, sent):
    """Waits until linkemu has taken in sent[i] frames at port i and sent on
    every one it kept (nothing pending in its departure queue); the stats."""
    deadline = time.monotonic() + DEADLINE
    while True:
        st = json.loads(control(ctl_port, "stats"))
        dirs = st["directions"]
        if all(dirs[i]["frames_in"] == n for i, n in sent.items()) and st["pending"] == 0:
            return st
        if time.monotonic() > deadline:
            raise RuntimeError("linkemu did not settle: want in %s, stats %s" % (sent, dirs))
        time.sleep(0.01)


def receive(sock, n):
    """The next n frames on sock (linkemu said it sent them), within the deadline."""
    got, deadline = [], time.monotonic() + DEADLINE
    while len(got) < n:
        try:
            got.append(sock.recv(70000))
        except socket.timeout:
            if time.monotonic() > deadline:
                raise RuntimeError("%d of %d frames arrived" % (len(got), n))
    return got


class Link:
    """One linkemu process between guest sockets ga (port 0) and gb (port 1)."""

    def __init__(self, a2b="", b2a="", pcap=None):
        self.ga, self.gb = guest_socket(), guest_socket()
        self.la, self.lb, self.ctl = free_ports(3)
        self.dir = tempfile.mkdtemp(prefix="linkemu-test-")
        self.stats = os.path.join(self.dir, "stats.json")
        self.sent = {0: 0, 1: 0}
        self.taken = {0: 0, 1: 0}          # frames received so far at port i's socket
        cmd = [LINKEMU, "--port", "%d:%d" % (self.la, self.ga.getsockname()[1]),
               "--port", "%d:%d" % (self.lb, self.gb.getsockname()[1]),
               "--a2b", a2b, "--b2a", b2a, "--stats", self.stats, "--duration", "60"]
        if pcap:
            cmd += ["--pcap", self.dir]
        self.p = start_linkemu(cmd, self.ctl)

    def send(self, src_is_a, idx):
        s, port = (self.ga, self.la) if src_is_a else (self.gb, self.lb)
        f = frame(MAC_B, MAC_A, idx) if src_is_a else frame(MAC_A, MAC_B, idx)
        s.sendto(f, ("127.0.0.1", port))
        self.sent[0 if src_is_a else 1] += 1

    def arrivals(self):
        """Once linkemu has decided every frame sent: the frames that reached
        each socket since the last call, (at a, at b)."""
        st = settle(self.ctl, self.sent)
        out = []
        for i, sock in ((0, self.ga), (1, self.gb)):
            n = st["directions"][i]["tx"] - self.taken[i]
            out.append(receive(sock, n))
            self.taken[i] += n
        return out

    def control(self, cmd):
        return control(self.ctl, cmd)

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        self.p.wait(timeout=5)
        with open(self.stats) as f:
            st = json.load(f)
        self.ga.close(); self.gb.close()
        return st

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def exchange(a2b, b2a, n=N):
    """Send n frames each way; return (indices a->b arrived, b->a arrived, stats)."""
    link = Link(a2b, b2a)
    for i in range(n):
        link.send(True, i)
        link.send(False, i)
        if i % 50 == 49:
            time.sleep(0.005)       # pace the sender: stay well inside socket buffers
    got_a, got_b = link.arrivals()
    at_b = [struct.unpack("!I", d[14:18])[0] for d in got_b]
    at_a = [struct.unpack("!I", d[14:18])[0] for d in got_a]
    st = link.stop()
    link.cleanup()
    return at_b, at_a, st


failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("  FAIL:", msg)


def test_linkemu_same_seed_same_drops():
    spec_a, spec_b = "loss 10% seed 11", "loss 20% seed 12"
    r1 = exchange(spec_a, spec_b)
    r2 = exchange(spec_a, spec_b)
    r3 = exchange("loss 10% seed 99", spec_b)
    print("  seed 11/12: a->b %d of %d arrived, b->a %d of %d" % (len(r1[0]), N, len(r1[1]), N))
    check(r1[0] == r2[0] and r1[1] == r2[1], "same seed, different drops")
    check(r1[0] != r3[0], "seed 99 dropped the same frames as seed 11")
    check(0 < N - len(r1[0]) < N // 4, "a->b loss count %d implausible" % (N - len(r1[0])))


def test_linkemu_droplist_exact():
    named = {3, 7} | set(range(100, 121)) | {299}
    at_b, at_a, st = exchange("drop 3,7,100-120,299", "drop 0")
    missing_b = set(range(N)) - set(at_b)
    check(missing_b == named, "a->b dropped %s, want %s" % (sorted(missing_b), sorted(named)))
    check(set(range(N)) - set(at_a) == {0}, "b->a dropped %s" % sorted(set(range(N)) - set(at_a)))
    check(at_b == sorted(at_b), "frames reordered without reorder")


def test_linkemu_stats_match():
    at_b, at_a, st = exchange("loss 5% seed 3 drop 10-19", "duplicate 10% seed 4")
    d = {x["name"]: x for x in st["directions"]}
    ab, ba = d["a2b"], d["b2a"]
    check(ab["frames_in"] == N and ab["rx"] == N, "a2b frames_in %d rx %d" % (ab["frames_in"], ab["rx"]))
    check(ab["frames_out"] == len(at_b), "a2b frames_out %d, arrived %d" % (ab["frames_out"], len(at_b)))
    check(ab["dropped"]["total"] == N - len(at_b), "a2b dropped %d" % ab["dropped"]["total"])
    check(ab["dropped"]["droplist"] == 10, "a2b droplist %d" % ab["dropped"]["droplist"])
    check(d["b2a"]["tx"] == len(at_b), "port b tx %d, arrived %d" % (ba["tx"], len(at_b)))
    check(ba["frames_out"] == N + ba["duplicated"] == len(at_a),
          "b2a out %d dup %d arrived %d" % (ba["frames_out"], ba["duplicated"], len(at_a)))
    print("  a2b dropped %d (droplist %d, random %d); b2a duplicated %d" % (
        ab["dropped"]["total"], ab["dropped"]["droplist"], ab["dropped"]["random"], ba["duplicated"]))


def test_linkemu_control_blackhole():
    """A blackhole set through the control socket drops everything from now
    on; setting an empty spec ends it (window expiry in time is the engine's
    test, tests/sim/test_impair.c, in virtual time)."""
    link = Link("", "")
    for i in range(20):
        link.send(True, i)
    got1 = link.arrivals()[1]
    r = link.control("set a2b blackhole 0s-3600s")
    check(r == "ok", "control reply %r" % r)
    bad = link.control("set a2b loss 300%")
    check(bad.startswith("error:"), "bad spec accepted: %r" % bad)
    for i in range(20, 40):
        link.send(True, i)
    got2 = link.arrivals()[1]
    r = link.control("set a2b ")
    check(r == "ok", "clearing reply %r" % r)
    for i in range(40, 60):
        link.send(True, i)
    got3 = link.arrivals()[1]
    st = json.loads(link.control("stats"))
    link.stop()
    link.cleanup()
    check(len(got1) == 20 and len(got2) == 0 and len(got3) == 20,
          "blackhole via control: %d/%d/%d arrived (want 20/0/20)" % (len(got1), len(got2), len(got3)))
    check(st["directions"][0]["dropped"]["blackhole"] == 20, "blackhole counter")


def test_linkemu_pcap():
    link = Link("drop 0", "", pcap=True)
    for i in range(10):
        link.send(True, i)
        link.send(False, i)
    link.arrivals()
    link.stop()
    for port, want in ((0, 10 + 10), (1, 10 + 9)):   # sent + received
        path = os.path.join(link.dir, "port%d.pcap" % port)
        data = open(path, "rb").read()
        magic, = struct.unpack("=I", data[:4])
        check(magic == 0xA1B2C3D4, "pcap magic %x" % magic)
        off, count = 24, 0
        while off < len(data):
            incl = struct.unpack("=I", data[off + 8:off + 12])[0]
            off += 16 + incl
            count += 1
        check(count == want, "port%d.pcap has %d records, want %d" % (port, count, want))
        if shutil.which("tshark"):
            out = subprocess.run(["tshark", "-r", path], capture_output=True, text=True)
            n = len([l for l in out.stdout.splitlines() if l.strip()])
            check(out.returncode == 0 and n == want, "tshark read %d frames (rc %d)" % (n, out.returncode))
    link.cleanup()


def test_linkemu_learning_switch():
    """Three guests: unknown unicast and broadcast flood; learned MACs go to one port."""
    g = [guest_socket() for _ in range(3)]
    *lp, ctl = free_ports(4)
    d = tempfile.mkdtemp(prefix="linkemu-test-")
    cmd = [LINKEMU, "--duration", "60", "--stats", os.path.join(d, "s.json")]
    for i in range(3):
        cmd += ["--port", "%d:%d" % (lp[i], g[i].getsockname()[1])]
    p = start_linkemu(cmd, ctl)
    mac = [bytes.fromhex("5254000000%02x" % (i + 1)) for i in range(3)]
    sent, seen = {0: 0, 1: 0, 2: 0}, [0, 0, 0]

    def send(i, f):
        g[i].sendto(f, ("127.0.0.1", lp[i]))
        sent[i] += 1

    def counts():
        """Frames each socket received since the last call (what linkemu sent it)."""
        st = settle(ctl, sent)
        c = [st["directions"][i]["tx"] - seen[i] for i in range(3)]
        for i in range(3):
            receive(g[i], c[i])
            seen[i] += c[i]
        return c
    send(0, frame(mac[1], mac[0], 1))      # b unknown: flood
    c1 = counts()
    send(1, frame(b"\xff" * 6, mac[1], 2))  # broadcast: flood
    c2 = counts()
    send(0, frame(mac[1], mac[0], 3))      # b learned: only b
    c3 = counts()
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=5)
    for s in g:
        s.close()
    shutil.rmtree(d, ignore_errors=True)
    check(c1 == [0, 1, 1], "unknown unicast reached %s, want [0, 1, 1]" % c1)
    check(c2 == [1, 0, 1], "broadcast reached %s, want [1, 0, 1]" % c2)
    check(c3 == [0, 1, 0], "learned unicast reached %s, want [0, 1, 0]" % c3)


def test_linkemu_testbed_retries_taken_port():
    """A test bed whose linkemu port was taken before linkemu bound it starts
    linkemu on fresh ports, and frames cross between its guest sockets."""
    launch.LINKEMU = os.path.abspath(LINKEMU)
    tb = launch.Testbed(2, name="linkemu-retry")
    taken = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    taken.bind(("127.0.0.1", tb.listen[1]))
    before = list(tb.listen)
    try:
        tb.start_linkemu()
        check(tb.linkemu.poll() is None, "linkemu is not running after the retry")
        check(tb.listen[1] != before[1], "port 1 still %d, the taken one" % before[1])
        a, b = tb.socks
        b.settimeout(0.05)
        a.send(frame(MAC_B, MAC_A, 1))
        got = receive(b, 1)
        check(len(got) == 1 and got[0][14:18] == struct.pack("!I", 1),
              "guest 1 got %d frames, want frame 1" % len(got))
    finally:
        tb.kill()
        taken.close()


TESTS = [test_linkemu_learning_switch, test_linkemu_same_seed_same_drops, test_linkemu_droplist_exact,
         test_linkemu_stats_match, test_linkemu_control_blackhole, test_linkemu_pcap,
         test_linkemu_testbed_retries_taken_port]

if __name__ == "__main__":
    passed = failed = 0
    for t in TESTS:
        before = len(failures)
        try:
            t()
        except Exception as e:  # a crash is a failure, not an abort
            failures.append(repr(e))
            print("  FAIL: exception", repr(e))
        ok = len(failures) == before
        print("%s %s" % ("PASS" if ok else "FAIL", t.__name__))
        passed, failed = passed + ok, failed + (not ok)
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)
