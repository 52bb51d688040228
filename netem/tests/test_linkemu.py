#!/usr/bin/env python3
"""test_linkemu.py: host-only test of netem/linkemu (no guests needed).

Two local UDP sockets play the two QEMU guests (`-netdev dgram`: one datagram
is one Ethernet frame). Each test starts linkemu with seeded impairments and a
drop list, sends numbered frames both ways, and checks:
  (a) the same seed twice drops the same frames, frame for frame;
      a different seed drops different ones;
  (b) a drop list drops exactly the named frames;
  (c) the --stats counters match what was sent and what arrived;
  (d) the control socket changes impairments mid-run (a blackhole now);
  (e) --pcap writes one readable pcap per port (tshark reads it, if installed);
  (f) the guests' test bed (tests/net/launch.py) restarts linkemu on fresh
      ports when one of its ports was taken.
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


class Link:
    """One linkemu process between guest sockets ga and gb."""

    def __init__(self, a2b="", b2a="", pcap=None, ctl=False):
        self.ga, self.gb = guest_socket(), guest_socket()
        self.la, self.lb, ctl_port = free_ports(3)
        self.dir = tempfile.mkdtemp(prefix="linkemu-test-")
        self.stats = os.path.join(self.dir, "stats.json")
        self.ctl = ctl_port if ctl else None
        cmd = [LINKEMU, "--port", "%d:%d" % (self.la, self.ga.getsockname()[1]),
               "--port", "%d:%d" % (self.lb, self.gb.getsockname()[1]),
               "--a2b", a2b, "--b2a", b2a, "--stats", self.stats, "--duration", "30"]
        if pcap:
            cmd += ["--pcap", self.dir]
        if self.ctl:
            cmd += ["--control", str(self.ctl)]
        self.p = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
        time.sleep(0.15)
        if self.p.poll() is not None:
            raise RuntimeError("linkemu exited: " + self.p.stderr.read())

    def send(self, src_is_a, idx):
        s, port = (self.ga, self.la) if src_is_a else (self.gb, self.lb)
        f = frame(MAC_B, MAC_A, idx) if src_is_a else frame(MAC_A, MAC_B, idx)
        s.sendto(f, ("127.0.0.1", port))

    @staticmethod
    def drain(sock, quiet=0.3):
        got, last = [], time.time()
        while time.time() - last < quiet:
            try:
                d = sock.recv(70000)
            except socket.timeout:
                continue
            got.append(d)
            last = time.time()
        return got

    def control(self, cmd):
        c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        c.settimeout(2)
        c.sendto(cmd.encode(), ("127.0.0.1", self.ctl))
        r = c.recv(1 << 16).decode()
        c.close()
        return r

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
            time.sleep(0.005)       # stay well inside socket buffers
    at_b = [struct.unpack("!I", d[14:18])[0] for d in link.drain(link.gb)]
    at_a = [struct.unpack("!I", d[14:18])[0] for d in link.drain(link.ga)]
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
    link = Link("", "", ctl=True)
    for i in range(20):
        link.send(True, i)
    got1 = link.drain(link.gb)
    r = link.control("set a2b blackhole 0s-1s")
    check(r == "ok", "control reply %r" % r)
    bad = link.control("set a2b loss 300%")
    check(bad.startswith("error:"), "bad spec accepted: %r" % bad)
    for i in range(20, 40):
        link.send(True, i)
    got2 = link.drain(link.gb, quiet=0.2)
    time.sleep(1.0)
    for i in range(40, 60):
        link.send(True, i)
    got3 = link.drain(link.gb)
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
    link.drain(link.gb)
    link.drain(link.ga)
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
    lp = free_ports(3)
    d = tempfile.mkdtemp(prefix="linkemu-test-")
    cmd = [LINKEMU, "--duration", "20", "--stats", os.path.join(d, "s.json")]
    for i in range(3):
        cmd += ["--port", "%d:%d" % (lp[i], g[i].getsockname()[1])]
    p = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    time.sleep(0.15)
    mac = [bytes.fromhex("5254000000%02x" % (i + 1)) for i in range(3)]
    link = Link.__new__(Link)             # only for drain()
    def counts():
        return [len(link.drain(s, quiet=0.15)) for s in g]
    g[0].sendto(frame(mac[1], mac[0], 1), ("127.0.0.1", lp[0]))      # b unknown: flood
    c1 = counts()
    g[1].sendto(frame(b"\xff" * 6, mac[1], 2), ("127.0.0.1", lp[1]))  # broadcast: flood
    c2 = counts()
    g[0].sendto(frame(mac[1], mac[0], 3), ("127.0.0.1", lp[0]))      # b learned: only b
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
        got = Link.drain(b)
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
