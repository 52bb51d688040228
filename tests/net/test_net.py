#!/usr/bin/env python3
"""test_net.py: `make test-net`, two guests on one link through linkemu.

Checks, one line each:
  arp         each guest resolves the other's MAC with ARP
  ping        ICMP echo both ways, every reply back
  loopback    a guest's datagrams to its own address: 5 pings of itself all
              answered, and a UDP echo sweep (sizes 1..8972, step 97) off a
              server in the same guest; ip_loopback grows by exactly 10 plus
              2 per echo (each request and reply) and no frame leaves
              (eth_tx unchanged)
  jumbo       UDP echo of every datagram size 1..8972 (frames up to 9014
              bytes, so jumbo frames) from guest 0 to a server on guest 1;
              the same sizes (step 13) sent zero-copy (sendzc: the E1000
              reads the payload from the sender's pinned pages, one TX
              descriptor per page piece); 8000..8972 the other way
  burst       the netblast system call in a guest with a card (`usertests
              netblast`: bad arguments give -1, a valid call returns count),
              then one kernel burst of 5,000 datagrams (1082-byte RoCEv2-size
              frames) to a port nobody holds: the receiver's udp_no_port
              counter grows by exactly 5,000, what linkemu delivered (a
              lossless link: 8 MiB host socket buffers hold the whole burst);
              then 5,000 RoCEv2 frame bodies to NET_ROCE_SINK_PORT (9003): the
              receiver's roce_sink_ok grows by exactly 5,000 (every ICRC the
              sender computed checks out), roce_sink_bad_icrc by 0
  corrupt     linkemu flips one random bit in every frame a->b: each of
              300 datagrams is either dropped by a check (IPv4 or UDP
              checksum, not-for-us MAC, unknown EtherType...) and counted,
              or accepted (a flipped source-MAC bit, which nothing can
              detect without the FCS); accepted + counted drops = delivered
  loss        linkemu switched to "loss 5%" both ways (seeded); 10,000 UDP
              datagrams each way at the same time; the count each guest
              received equals exactly what linkemu delivered to it (the
              tx counter of its port in linkemu's stats), and linkemu's drop
              counters are near 5%
  pollecho    `nettest pollecho` on guest 1: one poll() loop (no timeout) over a
              non-blocking UDP socket and the console; guest 0 sweeps sizes
              1..8972 (step 97) off it, a line typed on guest 1's console is
              answered, a second sweep is echoed after it, and "quit" ends it
              with the counts (every echo and exactly one line)
  starve      no neighbour starves the network: on guest 0 `nettest flood`
              sends through loopback into 4 sockets it never reads; once
              they hold their share (netstat's socket lines; all sockets
              hold at most half the pool, netbufs_sock <= NNETBUF / 2), while the
              drop counter sock_rcvq_drop keeps rising, other processes'
              pings both ways, a UDP echo sweep off guest 1 and an rdmacp
              copy from guest 0 to guest 1 all complete; after the flooder
              is killed the pool's free count returns to its start value
Ends with `N passed, M failed`; exit status 1 on any failure.
Options: --quick (sweep step 7), --seed N, --count N, --keep-pcap DIR.
"""
import argparse
import os
import random
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from launch import Testbed  # noqa: E402
from guest import GuestError, poll  # noqa: E402

results = []
REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
with open(os.path.join(REPO, "kernel", "net", "net.h")) as f:
    NNETBUF = int(re.search(r"^#define NNETBUF\s+(\d+)", f.read(), re.MULTILINE).group(1))


def check(name, ok, detail):
    results.append(ok)
    print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}", flush=True)


def guarded(name, fn):
    try:
        fn()
    except GuestError as e:
        check(name, False, f"guest error: {str(e)[:800]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--count", type=int, default=10000)
    ap.add_argument("--rate", type=int, default=300, help="datagrams/s per sender in the loss check")
    ap.add_argument("--only", nargs="+", choices=["arp", "ping", "loopback", "jumbo", "burst", "corrupt", "loss",
                                              "pollecho", "itr", "starve"],
                    help="run only these checks")
    ap.add_argument("--keep-pcap", help="capture the whole run into this directory")
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1, 1 << 30)
    print(f"test-net: seed {seed} (rerun with --seed {seed})", flush=True)
    t_start = time.monotonic()

    with Testbed(2, name="net", pcap_dir=args.keep_pcap) as tb:
        tb.boot()
        g0, g1 = tb.guests

        def arp():
            for g, peer in ((g0, 1), (g1, 0)):
                out = g.run(f"nettest arp {tb.ip(peer)} 3000", timeout=30)
                ok = f"is-at {tb.mac(peer)}" in out
                check(f"arp {g.name}->{tb.ip(peer)}", ok, out.strip())

        def ping():
            for g, peer in ((g0, 1), (g1, 0)):
                out = g.run(f"ping -c 5 -i 100 {tb.ip(peer)}", timeout=60)
                last = out.strip().splitlines()[-1] if out.strip() else ""
                check(f"ping {g.name}->{tb.ip(peer)}", "5 transmitted, 5 received" in out, last)

        def loopback():
            g1.spawn("udpecho -s 19", r"udpecho: serving port 19")
            before = counters(g1)
            out = g1.run(f"ping -c 5 -i 100 {tb.ip(1)}", timeout=60)
            pinged = "5 transmitted, 5 received" in out
            out += g1.run(f"nettest sweep {tb.ip(1)} 19 1 8972 97", timeout=200)
            m = re.search(r"sweep ok .*: (\d+) echoes", out)
            echoes = int(m.group(1)) if m else -1
            after = counters(g1)
            looped = after["ip_loopback"] - before["ip_loopback"]
            left = after["eth_tx"] - before["eth_tx"]
            check(f"loopback: {g1.name} pings itself and echoes UDP off itself, no frame on the link",
                  pinged and echoes > 0 and looped == 10 + 2 * echoes and left == 0,
                  f"ping 5/5 {pinged}, {echoes} echoes, ip_loopback +{looped} (want {10 + 2 * echoes}), "
                  f"eth_tx +{left}")

        def jumbo():
            # Background servers: each says it is serving once its port is
            # bound (one write(), so the line is whole even beside the prompt).
            for g in (g1, g0):
                g.spawn("udpecho -s 7", r"udpecho: serving port 7")
            step = 7 if args.quick else 1
            t0 = time.monotonic()
            out = g0.run(f"nettest sweep {tb.ip(1)} 7 1 8972 {step}", timeout=400)
            line = re.search(r"sweep (ok|FAIL).*", out)
            check(f"jumbo echo 1..8972 step {step} {g0.name}->{g1.name}", "sweep ok" in out,
                  f"{line.group(0) if line else out.strip()[-300:]} ({time.monotonic() - t0:.0f} s)")
            out = g0.run(f"nettest sweep {tb.ip(1)} 7 1 8972 13 zc", timeout=200)
            line = re.search(r"sweep (ok|FAIL).*", out)
            check(f"jumbo echo 1..8972 step 13, scatter-gather TX from pinned user pages",
                  "sweep ok" in out, line.group(0) if line else out.strip()[-300:])
            out = g1.run(f"nettest sweep {tb.ip(0)} 7 8000 8972 1", timeout=200)
            line = re.search(r"sweep (ok|FAIL).*", out)
            check(f"jumbo echo 8000..8972 {g1.name}->{g0.name}", "sweep ok" in out,
                  line.group(0) if line else out.strip()[-300:])

        drop_counters = ("eth_short", "eth_not_for_us", "eth_unknown_type", "arp_bad",
                         "ip_bad_header", "ip_bad_checksum", "ip_not_for_us", "ip_fragment_drop",
                         "ip_ttl_zero", "ip_unknown_proto", "udp_bad_header", "udp_bad_checksum",
                         "udp_no_port", "icmp_bad_checksum", "sock_rcvq_drop")

        def counters(g):
            out = g.run("nettest stat", timeout=20)
            return {k: int(v) for k, v in re.findall(r"^(\w+) (\d+)$", out, re.MULTILINE)}

        def settled(g, name):
            """The counter once it stops moving (the guest has drained its queue)."""
            value, deadline = -1, time.monotonic() + 30
            while time.monotonic() < deadline:
                now = counters(g)[name]
                if now == value:
                    break
                value = now
                time.sleep(1)
            return value

        def burst():
            out = g0.run("usertests netblast", timeout=120)
            last = out.strip().splitlines()[-1] if out.strip() else ""
            check("netblast usertests with a network card", "2 passed, 0 failed" in out, last)
            g0.run(f"nettest arp {tb.ip(1)} 3000", timeout=30)
            n = 5000
            c0 = settled(g1, "udp_no_port")          # the usertests broadcasts included
            before = tb.stats()
            out = g0.run(f"nettest kburst {tb.ip(1)} 9002 1040 {n}", timeout=120)
            got = settled(g1, "udp_no_port") - c0
            delivered = tb.delivered_to(1) - tb.delivered_to(1, before)
            sent = re.search(r"kburst sent (\d+) frames.*", out)
            ok = bool(sent) and int(sent.group(1)) == n and got == delivered == n
            check(f"kernel burst of {n} datagrams counted exactly on the receiver", ok,
                  f"{sent.group(0) if sent else out.strip()[-200:]}; linkemu delivered "
                  f"{delivered}, receiver udp_no_port +{got}")
            # A RoCE blast: every frame carries the ICRC the sender computed for
            # it, and the receiver's check passes for each one [ICRC-CALC-5].
            c0 = {k: settled(g1, k) for k in ("roce_sink_ok", "roce_sink_bad_icrc")}
            out = g0.run(f"nettest kburst {tb.ip(1)} 9003 1040 {n}", timeout=120)
            got = {k: settled(g1, k) - v for k, v in c0.items()}
            check(f"RoCE burst of {n} frames arrives with valid ICRCs",
                  got == {"roce_sink_ok": n, "roce_sink_bad_icrc": 0},
                  f"{out.strip()[-120:]}; receiver {got}")

            # A paced burst (nettest kblast ... FPS) sends no faster than its pace
            # (open-loop, the same burst runs at tens of thousands a second) and
            # every datagram arrives; the host keeps up with a slow pace.
            pace = 2000
            c0 = settled(g1, "udp_no_port")
            out = g0.run(f"nettest kblast {tb.ip(1)} 9002 1040 2 {pace}", timeout=120)
            got = settled(g1, "udp_no_port") - c0
            m = re.search(r"kblast sent (\d+) frames \d+ bytes in \d+ us: (\d+) frames/s", out)
            ok = bool(m) and 0.8 * pace <= int(m.group(2)) <= 1.02 * pace and got == int(m.group(1))
            check(f"paced kernel burst: {pace} frames/s, each one received", ok,
                  f"{m.group(0) if m else out.strip()[-200:]}; receiver udp_no_port +{got}")

        def itr():
            # Adaptive interrupt moderation: a burst of 64-frame transmit
            # bursts is bulk on the sender (one transmit interrupt carries
            # tens of frames); pings 100 ms apart carry one or two frames
            # per window, so the class returns to lowest latency (0).
            c0 = counters(g0)
            g0.run(f"nettest arp {tb.ip(1)} 3000", timeout=30)
            g0.run(f"nettest kburst {tb.ip(1)} 9002 1040 2000", timeout=120)
            c1 = counters(g0)
            sent = c1["dev_tx_frames"] - c0["dev_tx_frames"]
            bells = c1["dev_tx_doorbells"] - c0["dev_tx_doorbells"]
            check("tx doorbells: a kernel burst writes the tail once per 64-frame batch, not per frame",
                  sent >= 2000 and 0 < bells * 16 <= sent, f"{sent} frames sent, {bells} tail writes")
            bulk = c1["dev_itr_windows_bulk"] - c0["dev_itr_windows_bulk"]
            check("itr: a kernel burst is classified bulk on the sender",
                  bulk > 0 and c1["dev_itr_changes"] > c0["dev_itr_changes"],
                  f"bulk windows +{bulk}, changes {c0['dev_itr_changes']} -> {c1['dev_itr_changes']}")
            seen, deadline = None, time.monotonic() + 60
            while time.monotonic() < deadline:
                g0.run(f"ping -c 2 -i 100 {tb.ip(1)}", timeout=60)
                seen = counters(g0)
                if seen["dev_itr_class"] == 0:
                    break
            check("itr: a quiet ping-pong brings the class back to lowest latency",
                  seen is not None and seen["dev_itr_class"] == 0 and seen["dev_itr"] == 0,
                  f"class {seen and seen['dev_itr_class']}, itr {seen and seen['dev_itr']}, "
                  f"lowest windows {seen and seen['dev_itr_windows_lowest']}")

        def corrupt():
            for g, peer in ((g0, 1), (g1, 0)):        # resolve first, on a clean link
                g.run(f"nettest arp {tb.ip(peer)} 3000", timeout=30)
            n = 300
            c0 = counters(g1)
            g1.spawn("nettest recv 9100 3000 60000", r"recv: ready on port 9100")
            tb.set_spec("a2b", f"corrupt 100% seed {seed}")
            before = tb.stats()
            g0.run(f"nettest send {tb.ip(1)} 9100 100 {n} 300", timeout=120)
            m = g1.expect(r"received (\d+) datagrams", timeout=60)
            delivered = tb.delivered_to(1) - tb.delivered_to(1, before)
            tb.set_spec("a2b", "")
            got = int(m.group(1))
            # The receiver went idle for 3 s before it printed, so every frame
            # linkemu delivered has been counted; poll a little in case not.
            def drops_now():
                c1 = counters(g1)
                return {k: c1.get(k, 0) - c0.get(k, 0) for k in drop_counters}
            drops, _ = poll(drops_now, lambda d: got + sum(d.values()) >= delivered, 20, interval=0.5)
            dropped = sum(drops.values())
            ok = got + dropped == delivered == n and got <= n // 10
            detail = ", ".join(f"{k} {v}" for k, v in drops.items() if v)
            check("corrupt: every corrupted frame dropped and counted, or accepted", ok,
                  f"delivered {delivered}, accepted {got}, dropped {dropped} ({detail})")

        def loss():
            for g, peer in ((g0, 1), (g1, 0)):        # resolve first: no ARP in the count
                g.run(f"nettest arp {tb.ip(peer)} 3000", timeout=30)
            spec = f"loss 5% seed {seed}"
            tb.set_spec(0, spec)
            tb.set_spec(1, f"loss 5% seed {seed + 1}")
            before = tb.stats()
            # Each guest binds its receiver and says so; only when both are
            # ready does a typed line start both senders (a barrier, not a
            # delay). One foreground command per guest: no background output
            # racing the prompt.
            n, rate = args.count, args.rate
            t0 = time.monotonic()
            for g, peer in ((g0, 1), (g1, 0)):
                g.send(f"nettest xfer {tb.ip(peer)} 9000 100 {n} {rate} 3000 stdin")
                g.expect(r"xfer: ready on port 9000", timeout=60)
            for g in (g0, g1):
                g.send("")
            got = {}
            for i, g in enumerate((g0, g1)):
                g.expect(r"sent \d+ datagrams", timeout=n / rate * 4 + 60)
                m = g.expect(r"received (\d+) datagrams", timeout=60)
                got[i] = int(m.group(1))
            after = tb.stats()        # both receivers heard 3 s of silence: the link is idle
            for i, g in enumerate((g0, g1)):
                src = 1 - i
                delivered = tb.delivered_to(i, after) - tb.delivered_to(i, before)
                d_in = after["directions"][src]["frames_in"] - before["directions"][src]["frames_in"]
                dropped = (after["directions"][src]["dropped"]["total"]
                           - before["directions"][src]["dropped"]["total"])
                pct = 100.0 * dropped / d_in if d_in else 0
                ok = got[i] == delivered and d_in == n and 3.0 <= pct <= 7.0
                check(f"loss 5% {tb.guests[src].name}->{g.name}", ok,
                      f"guest received {got[i]}, linkemu delivered {delivered}, "
                      f"frames in {d_in}, dropped {dropped} ({pct:.2f}%), "
                      f"{time.monotonic() - t0:.1f} s")
            tb.set_spec("both", "")

        def pollecho():
            port = 9300
            g1.send(f"nettest pollecho {port}")
            g1.expect(rf"pollecho: ready on port {port}", timeout=60)
            sweeps = []
            for lo, hi, step in ((1, 8972, 97), (100, 140, 1)):
                out = g0.run(f"nettest sweep {tb.ip(1)} {port} {lo} {hi} {step}", timeout=200)
                m = re.search(r"sweep ok .*: (\d+) echoes", out)
                sweeps.append(int(m.group(1)) if m else -1)
                if lo == 1:          # between the sweeps, a line on the console
                    g1.send("hello from the console")
                    g1.expect(r"pollecho: line hello from the console", timeout=30)
            g1.send("quit")
            m = g1.expect(r"pollecho: echoed (\d+) datagrams, (\d+) lines", timeout=30)
            echoed, lines = int(m.group(1)), int(m.group(2))
            g1.expect(g1.prompt, timeout=30)
            ok = min(sweeps) > 0 and echoed >= sum(sweeps) and lines == 1
            check("pollecho: poll() over a UDP socket and the console", ok,
                  f"sweeps echoed {sweeps}, server echoed {echoed} datagrams and {lines} line(s)")

        def flood_queued(g, port, nsock):
            """Datagrams queued in the flooder's sockets (netstat's socket lines)."""
            out = g.run("nettest stat", timeout=60)
            return sum(int(q) for p, q in re.findall(r"^socket udp (\d+) queued (\d+)", out, re.MULTILINE)
                       if port <= int(p) < port + nsock)

        def resync(g):
            """Consumes the console up to the prompt after an echo of a fresh tag, so
            a prompt a background job's line pushed behind it (or one the check
            before left unread) cannot end the next run() early."""
            tag = f"sync{random.randrange(1 << 30)}"
            g.send(f"echo {tag}")
            g.expect(rf"^(?:\$ )*{tag}\r?\n\$ ", timeout=60)

        def starve():
            for g, peer in ((g0, 1), (g1, 0)):
                resync(g)
                g.run(f"nettest arp {tb.ip(peer)} 3000", timeout=30)
            g1.spawn("udpecho -s 23", r"udpecho: serving port 23")
            resync(g1)
            free0 = settled(g0, "netbufs_free")
            port, nsock = 9400, 4
            pid = g0.spawn(f"nettest flood {port} {nsock} 1000", r"flood: pid (\d+) flooding").group(1)
            resync(g0)
            # The flood is on once its sockets hold the sockets' burst share
            # (sysnet.c SOCK_RCVQ_BURST, NNETBUF / 4), which they reach with
            # or without the limits.
            full = NNETBUF // 4
            queued, _ = poll(lambda: flood_queued(g0, port, nsock), lambda q: q >= full, 120, interval=1)
            # Sockets hold at most half the pool (NETBUF_SOCK_SHARE), and every
            # netbuf is counted under exactly one owner.
            c = counters(g0)
            owners = {k: v for k, v in c.items() if k.startswith("netbufs_")}
            check("starve: the flooder fills its unread sockets, within the sockets' half of the pool",
                  queued >= full and c["netbufs_sock"] <= NNETBUF // 2 and sum(owners.values()) == NNETBUF,
                  f"{queued} datagrams queued in its {nsock} sockets; {owners}")
            work = []
            drops = [counters(g0)["sock_rcvq_drop"]]
            for g, peer in ((g0, 1), (g1, 0)):
                out = g.run(f"ping -c 3 -i 100 {tb.ip(peer)}", timeout=120)
                work.append((f"ping {g.name}->{tb.ip(peer)}", "3 transmitted, 3 received" in out))
            drops.append(counters(g0)["sock_rcvq_drop"])
            out = g0.run(f"nettest sweep {tb.ip(1)} 23 1 4000 199", timeout=300)
            work.append(("udp echo sweep", "sweep ok" in out))
            drops.append(counters(g0)["sock_rcvq_drop"])
            g1.send("rdmacp recv")
            g1.expect(r"rdmacp: waiting", timeout=60)
            g0.send(f"rdmacp send /rdmatest {tb.ip(1)} starvecopy")
            sent = g0.expect(r"rdmacp: (sent[^\n]*|[^\n]*)\n", timeout=600).group(1)
            got = g1.expect(r"rdmacp: (received[^\n]*|[^\n]*)\n", timeout=120).group(1)
            for g in (g0, g1):
                g.expect(g.prompt, timeout=60)
            work.append(("rdmacp", ": OK" in sent and ": OK" in got))
            drops.append(counters(g0)["sock_rcvq_drop"])
            rising = all(b > a for a, b in zip(drops, drops[1:]))
            check("starve: pings, UDP echo and rdmacp complete beside the flood",
                  all(ok for _, ok in work) and rising,
                  ", ".join(f"{n} {'ok' if ok else 'FAILED'}" for n, ok in work) +
                  f"; sock_rcvq_drop {' -> '.join(map(str, drops))} (rising during each)")
            g0.run(f"kill {pid}", timeout=60)
            free, _ = poll(lambda: counters(g0)["netbufs_free"], lambda f: f == free0, 60, interval=1)
            check("starve: the pool is whole again once the flooder is gone", free == free0,
                  f"netbufs_free {free0} before, {free} after")

        for name, fn in (("arp", arp), ("ping", ping), ("loopback", loopback), ("jumbo", jumbo), ("burst", burst),
                         ("pollecho", pollecho), ("itr", itr), ("corrupt", corrupt), ("loss", loss),
                         ("starve", starve)):
            if not args.only or name in args.only:
                guarded(name, fn)
        try:
            for g in (g0, g1):
                print(f"--- {g.name} netstat (non-zero)")
                out = g.run("nettest stat", timeout=20)
                print("  " + "  ".join(l + "\n" for l in out.splitlines() if not l.endswith(" 0")), end="")
            tb.halt()
        except GuestError as e:
            check("halt", False, str(e)[:400])
    passed = sum(results)
    print(f"test-net: {time.monotonic() - t_start:.0f} s")
    print(f"{passed} passed, {len(results) - passed} failed")
    sys.exit(0 if results and all(results) else 1)


if __name__ == "__main__":
    main()
