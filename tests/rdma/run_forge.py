#!/usr/bin/env python3
"""run_forge.py: forged RoCEv2 frames from a third party on the link.

Two guests through linkemu, which here has a third port with no guest
behind it: the host writes Ethernet frames into that port, and linkemu
switches them to the victim like frames of a third machine (own MAC
52:54:00:00:00:03, the victim's connected peer's IP forged as source).
Guest 1 runs `rdmanet_test victim` (one RC connection to guest 0's
`rdmanet_test holder`, a 4 KiB MR with remote write access, filled with a
known pattern), which prints its QPN, expected PSN, the buffer's VA and
R_Key. The host then sends, one at a time, RDMA WRITE ONLY requests of 64
bytes, and after each asks the victim (console line "check") whether the
buffer still holds its pattern, and for its QP state and counters:

  bad_icrc       right QPN, PSN, R_Key, VA -- everything a real WRITE needs --
                 but a wrong ICRC. [ICRC-CALC-5] [RX-ORDER-2] [SEC-FORGE-1]:
                 dropped before any QP state is consulted: buffer intact, QP
                 RTS, no response (tx_frames, tx_nak unchanged).
  out_of_window  right R_Key and ICRC, PSN = ePSN + 2^22 (outside both the
                 2^16 ahead and 2^16 duplicate windows). [RESP-PSN-3]
                 [SEC-FORGE-1]: dropped without a response, rx_out_of_window
                 + 1, buffer intact, QP RTS.
  wrong_rkey     in-sequence PSN, valid ICRC, an R_Key the victim never
                 issued. [SEC-FORGE-3] [RESP-ACC-1]: no memory touched, one NAK
                 remote access error (tx_nak + 1); [QP-ERR-1]: that NAK moves
                 the responder's QP to ERR -- exactly what a legitimate frame
                 with the same fields may do ([SEC-FORGE-4]).

Then frames the victim must drop before any QP is found, each kind sent
several times, valid ICRC unless the kind is about it:

  unknown_qp     a WRITE to a QPN the victim does not have (rx_unknown_qp).
  truncated      a WRITE ONLY cut inside its RETH (rx_truncated).
  bad_opcode     a reserved RC opcode (rx_bad_opcode).

For every kind (bad_icrc included) the victim's device-wide drop counters
(SYS_rdma_dev_stats, rdmastat's "device:" section) must move by exactly the
number of frames of that kind, and the other drop counters not at all.

A second pair of guests (forged_dreq_case) tests the connection manager
(the kernel's IB CM behind QP1): the victim waits for a DREQ (console
"dreq 4") while the host sends four forged CM MADs to the victim's QP1
(UD SEND ONLY, QP1's Q_Key, valid ICRC):

  mad_forged     a DREQ from the holder's IP and one from a third IP, both
                 naming communication IDs no connection has; a DREQ with
                 base version 2; a MAD with an attribute no CM message has.
                 [SEC-FORGE-7]: all four dropped and counted (the device's
                 cm_dropped moves by 4), the QP stays in RTS and a SEND to
                 the holder ("ping") completes.
  mad_bad_keys   a MAD to QP1 with P_Key 0x7fff (the core drops it:
                 rx_bad_header +1) and one with Q_Key 0x11111111 (the UD core
                 drops it: gsi_rx_bad_qkey +1); QP1 and the CM took only the
                 four forged MADs above (gsi_rx_mads, cm_rx +4).
  cm_ports_random the holder's rdma_cm source port (in the REQ's
                 addressing header, as the victim saw it) lies in the
                 ephemeral range [SEC-RAND-8].

A third pair (mr_boundary_case) forges in-sequence WRITEs with the right
R_Key at the end of the victim's 4 KiB MR:

  mr_last_bytes  64 bytes ending exactly at the MR's last byte: placed
                 (the victim's "tail" shows them) and acknowledged, QP RTS.
  mr_over_end    64 bytes starting 32 before the end: nothing placed (the
                 tail unchanged), one NAK remote access error, QP to ERR
                 ([RESP-ACC-1], [SEC-FORGE-3], [QP-ERR-1]).

The first two also show the forged frames really arrive and are parsed: a
valid-ICRC frame moves a counter (out_of_window), so the bad_icrc verdict is
not an artefact of frames lost on the way. Each step waits (with a deadline)
for the counter its frames must move. Prints "test forge_<name>: OK|FAILED"
and "N passed, M failed".
"""
import os
import re
import random
import socket
import struct
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "net"))
sys.path.insert(0, os.path.join(HERE, "..", "harness"))
from launch import Testbed  # noqa: E402
from guest import GuestError, poll, progress  # noqa: E402
from tally import Tally  # noqa: E402

ROCE_PORT = 4791
OP_RC_WRITE_ONLY = 0x0A
THIRD_MAC = bytes.fromhex("525400000003")


def mac(s):
    return bytes(int(x, 16) for x in s.split(":"))


def ip4(s):
    return socket.inet_aton(s)


def ip_checksum(h):
    total = sum(struct.unpack("!10H", h))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


# Device-wide counters of frames dropped before a QP is found.
DROP_COUNTERS = ("rx_not_roce", "rx_truncated", "rx_bad_header", "rx_icrc_err", "rx_bad_opcode",
                 "rx_unknown_qp", "nic_rx_bad")


def roce_frame(dst_mac, src_ip, dst_ip, roce, bad_icrc=False):
    """A RoCEv2 frame from the third party around roce (BTH first), its ICRC computed."""
    udp_len = 8 + len(roce) + 4
    udp = struct.pack("!HHHH", 49152, ROCE_PORT, udp_len, 0)
    ip_len = 20 + udp_len
    iph = struct.pack("!BBHHHBBH4s4s", 0x45, 0, ip_len, 0x1234, 0x4000, 64, 17, 0, ip4(src_ip), ip4(dst_ip))
    iph = iph[:10] + struct.pack("!H", ip_checksum(iph)) + iph[12:]
    # ICRC pseudo packet: 8 bytes of ones for the LRH, IP with TOS/TTL/checksum
    # ones, UDP checksum ones, BTH Resv8a ones (the project's wire.md rules).
    m_ip = iph[:1] + b"\xff" + iph[2:8] + b"\xff" + iph[9:10] + b"\xff\xff" + iph[12:]
    m_udp = udp[:6] + b"\xff\xff"
    m_bth = roce[:4] + b"\xff" + roce[5:]
    icrc = zlib.crc32(b"\xff" * 8 + m_ip + m_udp + m_bth) & 0xFFFFFFFF
    if bad_icrc:
        icrc ^= 0x00010000
    eth = dst_mac + THIRD_MAC + b"\x08\x00"
    return eth + iph + udp + roce + struct.pack("<I", icrc)


def write_only(dst_mac, src_ip, dst_ip, qpn, psn, va, rkey, payload, bad_icrc=False,
               opcode=OP_RC_WRITE_ONLY, cut=None):
    """One RoCEv2 RC RDMA WRITE ONLY frame (payload a multiple of 4: no pad).
    cut: keep only that many bytes after the BTH (the ICRC stays valid)."""
    bth = struct.pack("!BBHI", opcode, 0, 0xFFFF, qpn & 0xFFFFFF) + \
        struct.pack("!I", 0x80000000 | (psn & 0xFFFFFF))           # AckReq, PSN
    reth = struct.pack("!QII", va, rkey, len(payload))
    roce = bth + reth + payload
    if cut is not None:
        roce = roce[:len(bth) + cut]
    return roce_frame(dst_mac, src_ip, dst_ip, roce, bad_icrc)


def pairs(text):
    words = text.split()
    return {words[i]: int(words[i + 1]) for i in range(0, len(words) - 1, 2)}


def check(victim):
    """The victim's buffer verdict, QP state and counters; c["dev"]: the device's."""
    victim.send("check")
    m = victim.expect(r"victim: buffer (\S+) state (\S+) (.*)\n", timeout=30)
    c = pairs(m.group(3))
    c["buffer"], c["state"] = m.group(1), m.group(2)
    c["dev"] = pairs(victim.expect(r"victim: device (.*) end\n", timeout=30).group(1))
    return c


def check_until(victim, done, timeout=30):
    """check() until done(counters) holds or the deadline passes; the last counters."""
    return poll(lambda: check(victim), done, timeout, interval=0.1)[0]


def drops_moved(before, after, want):
    """Every device drop counter moved by want.get(name, 0), exactly."""
    return all(after["dev"][k] - before["dev"][k] == want.get(k, 0) for k in DROP_COUNTERS)


OP_UD_SEND_ONLY = 0x64
GSI_QPN, GSI_QKEY = 1, 0x80010000          # QP1 (kernel/lib/uapi.h's RDMA_GSI_*)
CM_ATTR_DREQ = 0x0015
EPHEMERAL = range(49152, 65536)


def cm_mad(attr, data, base_version=1, tid=0x1234):
    """A 256-byte CM MAD (class 0x07, class version 2, method Send): the
    24-byte MAD header, then the attribute's data (IBTA vol 1 13.4.2, 12.6)."""
    hdr = struct.pack("!BBBBHHQHHI", base_version, 0x07, 2, 0x03, 0, 0, tid, attr, 0, 0)
    return (hdr + data).ljust(256, b"\0")


def cm_dreq(local_comm_id, remote_comm_id, remote_qpn, **kw):
    """A DREQ: local and remote communication IDs, the remote QPN (IBTA 12.6.10)."""
    return cm_mad(CM_ATTR_DREQ, struct.pack("!III", local_comm_id, remote_comm_id,
                                            (remote_qpn & 0xFFFFFF) << 8), **kw)


def mad_frame(dst_mac, src_ip, dst_ip, mad, pkey=0xFFFF, qkey=GSI_QKEY):
    """A UD SEND ONLY to QP1 (its Q_Key, the default P_Key unless told),
    from QP1 of src_ip, carrying mad."""
    bth = struct.pack("!BBHI", OP_UD_SEND_ONLY, 0, pkey, GSI_QPN) + struct.pack("!I", 0)
    deth = struct.pack("!II", qkey, GSI_QPN)
    return roce_frame(dst_mac, src_ip, dst_ip, bth + deth + mad)


def connect_victim(tb):
    """Boots guests 0 and 1 of tb (port 2 is the host's) and connects
    `rdmanet_test holder` on guest 0 to `rdmanet_test victim` on guest 1;
    returns (holder, victim)."""
    tb.start_linkemu()
    holder_g, victim_g = tb.guests[0], tb.guests[1]
    for g in (holder_g, victim_g):
        g.start()
    for g in (holder_g, victim_g):
        g.boot(90)
    victim_g.send("rdmanet_test victim")
    victim_g.expect(r"listening", timeout=30)
    holder_g.send(f"rdmanet_test holder {tb.ip(1)}")
    return holder_g, victim_g


def forged_dreq_case():
    """Forged CM MADs to the victim's QP1 while it holds a connection
    [SEC-FORGE-7]; returns [(name, ok, info)]."""
    with Testbed(3, name="rdmaforge-cm") as tb:            # port 2: the third party
        holder_g, victim_g = connect_victim(tb)
        holder_port = int(victim_g.expect(r"victim: cm peer_port (\d+)\n", timeout=60).group(1))
        own_port = int(holder_g.expect(r"holder: connected, qpn [0-9a-f]+ cm_port (\d+)\n", timeout=60).group(1))
        progress("forge", f"holder's rdma_cm port {holder_port} (it says {own_port})")
        base = check(victim_g)
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        inject = ("127.0.0.1", tb.listen[2])
        rnd = random.Random(7)
        ids = lambda: (rnd.getrandbits(32) | 1, rnd.getrandbits(32) | 1)   # noqa: E731
        forged = ((tb.ip(0), cm_dreq(*ids(), 0)),                                       # the peer's IP
                  (tb.ip(2), cm_dreq(*ids(), 0)),                                       # a stranger
                  (tb.ip(0), cm_dreq(*ids(), 0, base_version=2)),                       # wrong version
                  (tb.ip(0), cm_mad(0x7fee, b"\1" * 16)))                              # no such attribute
        victim_g.send(f"dreq {len(forged)}")
        victim_g.expect(r"victim: waiting for DREQ", timeout=30)
        for src_ip, mad in forged:
            sock.sendto(mad_frame(mac(tb.mac(1)), src_ip, tb.ip(1), mad), inject)
        d = victim_g.expect(r"victim: dreq (\S+) cm_dropped (\d+)\n", timeout=60)
        # QP1's keys: another P_Key (the core drops it, rx_bad_header) and
        # another Q_Key (the UD core drops it, gsi_rx_bad_qkey); neither reaches the CM.
        for kw in (dict(pkey=0x7FFF), dict(qkey=0x11111111)):
            sock.sendto(mad_frame(mac(tb.mac(1)), tb.ip(0), tb.ip(1), cm_dreq(*ids(), 0), **kw), inject)
        moved = lambda c, k: c["dev"][k] - base["dev"][k]   # noqa: E731
        after = check_until(victim_g, lambda c: moved(c, "rx_bad_header") >= 1 and moved(c, "gsi_rx_bad_qkey") >= 1)
        victim_g.send("ping")
        ping = victim_g.expect(r"victim: ping (.*)\n", timeout=60).group(1).strip()
        for g in (victim_g, holder_g):
            g.send("quit")
        dropped = victim_g.expect(r"rdmanet_test: cm_dropped (\d+)\n", timeout=30).group(1)
        for g in (holder_g, victim_g):                     # tb.halt() would wait for guest 2 too
            g.send("halt 0")
        for g in (holder_g, victim_g):
            g.wait_exit(30)
    ok = (d.group(1) == "connected" and int(d.group(2)) == len(forged) and after["state"] == "RTS"
          and base["state"] == "RTS" and ping == "ok")
    keys = {k: moved(after, k) for k in ("rx_bad_header", "gsi_rx_bad_qkey", "gsi_rx_mads", "cm_rx")}
    keys_ok = keys == {"rx_bad_header": 1, "gsi_rx_bad_qkey": 1, "gsi_rx_mads": len(forged), "cm_rx": len(forged)}
    ports_ok = holder_port == own_port and holder_port in EPHEMERAL
    return [("mad_forged", ok, f"after {len(forged)} forged MADs to QP1: {d.group(1)}, cm_dropped "
             f"{d.group(2)} (device, at exit {dropped}), QP {after['state']}, ping {ping}"),
            ("mad_bad_keys", keys_ok, f"a MAD with P_Key 0x7fff and one with Q_Key 0x11111111 to QP1: "
             f"counters moved {keys} (want 1, 1, and only the {len(forged)} forged MADs in)"),
            ("cm_ports_random", ports_ok, f"holder's rdma_cm source port {holder_port} (its own word "
             f"{own_port}) [SEC-RAND-8]")]


def tail(victim):
    """The last 64 bytes of the victim's registered buffer."""
    victim.send("tail")
    return bytes.fromhex(victim.expect(r"victim: tail ([0-9a-f]+)\n", timeout=30).group(1))


def mr_boundary_case():
    """Forged WRITEs at the end of the victim's 4 KiB MR, in sequence with the
    right R_Key and ICRC: one ending exactly at the MR's last byte is placed
    and acknowledged; the next one, 32 bytes over the end, touches nothing
    (the buffer's last 64 bytes are unchanged, no partial placement) and is
    answered with NAK remote access error, the QP going to ERR
    ([RESP-ACC-1], [SEC-FORGE-3], [QP-ERR-1]). Returns [(name, ok, info)]."""
    with Testbed(3, name="rdmaforge-mr") as tb:            # port 2: the third party
        holder_g, victim_g = connect_victim(tb)
        v = victim_g.expect(r"victim: qpn ([0-9a-f]+) epsn ([0-9a-f]+) va ([0-9a-f]+) rkey ([0-9a-f]+) "
                            r"len (\d+)\n", timeout=60)
        qpn, epsn, va, rkey = (int(x, 16) for x in v.groups()[:4])
        length = int(v.group(5))
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        inject = ("127.0.0.1", tb.listen[2])
        base = check(victim_g)
        inside, over = b"LASTBYTE" * 8, b"OVEREND!" * 8
        args = dict(dst_mac=mac(tb.mac(1)), src_ip=tb.ip(0), dst_ip=tb.ip(1), qpn=qpn, rkey=rkey)
        sock.sendto(write_only(psn=epsn, va=va + length - len(inside), payload=inside, **args), inject)
        c1 = check_until(victim_g, lambda c: c["buffer"] == "CHANGED")
        t1 = tail(victim_g)
        sock.sendto(write_only(psn=(epsn + 1) & 0xFFFFFF, va=va + length - 32, payload=over, **args), inject)
        c2 = check_until(victim_g, lambda c: c["tx_nak"] > c1["tx_nak"] or c["state"] == "ERR")
        t2 = tail(victim_g)
        for g in (victim_g, holder_g):
            g.send("quit")
        for g in (holder_g, victim_g):                     # tb.halt() would wait for guest 2 too
            g.send("halt 0")
        for g in (holder_g, victim_g):
            g.wait_exit(30)
    ok_in = t1 == inside and c1["state"] == "RTS" and c1["tx_nak"] == base["tx_nak"]
    ok_over = t2 == inside and c2["state"] == "ERR" and c2["tx_nak"] == c1["tx_nak"] + 1
    return [("mr_last_bytes", ok_in, f"WRITE of {len(inside)} B ending at the MR's end: tail "
             f"{'placed' if t1 == inside else t1.hex()}, QP {c1['state']}, tx_nak {c1['tx_nak']}"),
            ("mr_over_end", ok_over, f"WRITE 32 B over the end: tail {'untouched' if t2 == inside else t2.hex()}, "
             f"QP {c2['state']}, tx_nak {c1['tx_nak']} -> {c2['tx_nak']}")]


def main():
    results = []
    try:
        with Testbed(3, name="rdmaforge") as tb:            # port 2: the third party, no guest
            holder_g, victim_g = connect_victim(tb)
            v = victim_g.expect(r"victim: qpn ([0-9a-f]+) epsn ([0-9a-f]+) va ([0-9a-f]+) rkey ([0-9a-f]+) ",
                                timeout=60)
            qpn, epsn, va, rkey = (int(x, 16) for x in v.groups())
            progress("forge", f"victim qpn {qpn:#x} epsn {epsn:#x} va {va:#x} rkey {rkey:#x}")
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            inject = ("127.0.0.1", tb.listen[2])
            frame_args = dict(dst_mac=mac(tb.mac(1)), src_ip=tb.ip(0), dst_ip=tb.ip(1), qpn=qpn, va=va,
                              payload=b"FORGED!!" * 8)
            base = check(victim_g)
            progress("forge", f"baseline: {base}")

            def send(count=1, **kw):
                for _ in range(count):
                    sock.sendto(write_only(**{**frame_args, **kw}), inject)

            def dev_moved(before, name, n):
                return lambda c: c["dev"][name] >= before["dev"][name] + n

            # bad ICRC on an otherwise perfect WRITE ([ICRC-CALC-5], [RX-ORDER-2]).
            send(3, psn=epsn, rkey=rkey, bad_icrc=True)
            c1 = check_until(victim_g, dev_moved(base, "rx_icrc_err", 3))
            ok = (c1["buffer"] == "intact" and c1["state"] == "RTS" and c1["tx_nak"] == base["tx_nak"]
                  and c1["tx_frames"] == base["tx_frames"] and c1["rx_frames"] == base["rx_frames"]
                  and drops_moved(base, c1, {"rx_icrc_err": 3}))
            results.append(("bad_icrc", ok, f"{c1}"))
            # PSN outside the window ([RESP-PSN-3], [SEC-FORGE-1]).
            send(psn=(epsn + (1 << 22)) & 0xFFFFFF, rkey=rkey)
            c2 = check_until(victim_g, lambda c: c["rx_out_of_window"] > c1["rx_out_of_window"])
            ok = (c2["buffer"] == "intact" and c2["state"] == "RTS"
                  and c2["rx_out_of_window"] == c1["rx_out_of_window"] + 1
                  and c2["tx_frames"] == c1["tx_frames"] and c2["tx_nak"] == c1["tx_nak"])
            results.append(("out_of_window", ok, f"{c2}"))
            # Dropped before a QP is found: each kind moves its own device counter.
            prev = c2
            for kind, counter, n, kw in (
                    ("unknown_qp", "rx_unknown_qp", 2, dict(qpn=qpn ^ 0x800001)),
                    ("truncated", "rx_truncated", 2, dict(cut=4)),
                    ("bad_opcode", "rx_bad_opcode", 1, dict(opcode=0x1F))):
                send(n, **{"psn": epsn, "rkey": rkey, **kw})
                c = check_until(victim_g, dev_moved(prev, counter, n))
                ok = (drops_moved(prev, c, {counter: n}) and c["buffer"] == "intact" and c["state"] == "RTS"
                      and c["tx_frames"] == prev["tx_frames"] and c["rx_frames"] == prev["rx_frames"])
                results.append((kind, ok, f"{c['dev']}"))
                prev = c
            c2 = prev
            # An R_Key never issued ([SEC-FORGE-3], [RESP-ACC-1], [QP-ERR-1]).
            bad_rkey = rkey ^ 0x5A5A5A00
            send(psn=epsn, rkey=bad_rkey)
            c3 = check_until(victim_g, lambda c: c["tx_nak"] > c2["tx_nak"])
            ok = (c3["buffer"] == "intact" and c3["tx_nak"] == c2["tx_nak"] + 1 and c3["state"] == "ERR")
            results.append(("wrong_rkey", ok, f"{c3}"))
            for g in (victim_g, holder_g):
                g.send("quit")
            linkst = tb.stats()
            progress("forge", "linkemu port 2 (third party) frames in: "
                     f"{linkst['directions'][2]['frames_in']}")
            for g in (holder_g, victim_g):                 # tb.halt() would wait for guest 2 too
                g.send("halt 0")
            for g in (holder_g, victim_g):
                g.wait_exit(30)
    except GuestError as e:
        results.append(("setup", False, f"guest error: {e}"))
    for case in (forged_dreq_case, mr_boundary_case):
        try:
            results += case()
        except GuestError as e:
            results.append((f"{case.__name__}_setup", False, f"guest error: {e}"))
    tally = Tally()
    for name, ok, info in results:
        tally.record(f"forge_{name}", ok, info)
    return tally.finish()


if __name__ == "__main__":
    sys.exit(main())
