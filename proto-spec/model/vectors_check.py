#!/usr/bin/env python3
"""Check the spec's byte-level rules against the real rxe captures.

The spec claims that its frames agree byte for byte with Linux Soft-RoCE
(rxe). This script reads tests/vectors/*.pcap (Python stdlib only),
decodes every RoCEv2 frame with the layouts of wire.md / opcodes.md, and
checks the rules below on every frame. It is a test of the spec itself: if a
rule here disagrees with what rxe puts on the wire, the rule is wrong.

Rules checked (every one on every frame or flow where it applies):
[ENC-ETH-1] [ENC-IP-1] [ENC-IP-2] [ENC-UDP-1] [ENC-UDP-2] [HDR-AETH-2]
[HDR-AETH-3] [HDR-AETH-4] [HDR-BTH-1] [HDR-BTH-2] [HDR-BTH-4] [ICRC-CALC-1]
[ICRC-CALC-3] [OPC-HDR-1] [OPC-LEN-2] [OPC-LEN-5] [OPC-SEQ-5] [REQ-ACKREQ-1]
[REQ-PSN-2] [REQ-RNR-1] [RESP-ACK-1] [RESP-ERR-2] [RESP-MSN-1] [RESP-OOS-1]
[RESP-OOS-3] [RESP-READ-1] [RESP-RECV-2] [RX-PARSE-3]

Usage: vectors_check.py [DIR]   (default tests/vectors)
Exit 0 when every check holds, 1 otherwise; prints one line per rule.
"""

import os
import struct
import sys
import zlib

VEC_DIR = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "vectors")
MTU = 1024                       # the captures use path MTU 1024

# opcode -> (name, RETH, AETH, ImmDt, position) per [OPC-VAL-1], [OPC-HDR-1]
OPS = {
    0x00: ("SEND_FIRST", 0, 0, 0, "F"), 0x01: ("SEND_MIDDLE", 0, 0, 0, "M"),
    0x02: ("SEND_LAST", 0, 0, 0, "L"), 0x03: ("SEND_LAST_IMM", 0, 0, 1, "L"),
    0x04: ("SEND_ONLY", 0, 0, 0, "O"), 0x05: ("SEND_ONLY_IMM", 0, 0, 1, "O"),
    0x06: ("WRITE_FIRST", 1, 0, 0, "F"), 0x07: ("WRITE_MIDDLE", 0, 0, 0, "M"),
    0x08: ("WRITE_LAST", 0, 0, 0, "L"), 0x09: ("WRITE_LAST_IMM", 0, 0, 1, "L"),
    0x0A: ("WRITE_ONLY", 1, 0, 0, "O"), 0x0B: ("WRITE_ONLY_IMM", 1, 0, 1, "O"),
    0x0C: ("READ_REQ", 1, 0, 0, "R"), 0x0D: ("RRESP_FIRST", 0, 1, 0, "F"),
    0x0E: ("RRESP_MIDDLE", 0, 0, 0, "M"), 0x0F: ("RRESP_LAST", 0, 1, 0, "L"),
    0x10: ("RRESP_ONLY", 0, 1, 0, "O"), 0x11: ("ACK", 0, 1, 0, "A"),
}

results = {}                     # rule -> [checked, failures, first failure]


def check(rule, ok, what):
    r = results.setdefault(rule, [0, 0, ""])
    r[0] += 1
    if not ok:
        r[1] += 1
        if not r[2]:
            r[2] = what


def pcap_frames(path):
    data = open(path, "rb").read()
    magic = struct.unpack("<I", data[:4])[0]
    endian = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    off = 24
    while off + 16 <= len(data):
        _, _, incl, _ = struct.unpack(endian + "IIII", data[off:off + 16])
        off += 16
        yield data[off:off + incl]
        off += incl


def ip_checksum_ok(hdr):
    s = sum(struct.unpack(">10H", hdr))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s == 0xFFFF


def sport_of(lqpn, rqpn):
    """[ENC-UDP-2] the UDP source port derived from the two QPNs."""
    v = lqpn * rqpn
    v ^= v >> 20
    v ^= v >> 40
    fl = v & 0xFFFFF
    return 0xC000 | ((fl & 0x3FFF) ^ (fl >> 14))


def icrc_of(frame, iplen):
    """[ICRC-CALC-1] CRC-32 over the masked pseudo-frame, LSB first [ICRC-CALC-3]."""
    ip = bytearray(frame[14:34])
    udp = bytearray(frame[34:42])
    rest = bytearray(frame[42:14 + iplen - 4])
    ip[1] = 0xFF
    ip[8] = 0xFF
    ip[10:12] = b"\xff\xff"
    udp[6:8] = b"\xff\xff"
    rest[4] = 0xFF
    crc = zlib.crc32(b"\xff" * 8 + bytes(ip) + bytes(udp) + bytes(rest))
    return struct.pack("<I", crc)


def decode(frame):
    """Parse one frame; None if it is not RoCEv2 ([RX-ORDER-1] steps 1..3)."""
    if len(frame) < 14 + 20 + 8 or frame[12:14] != b"\x08\x00":
        return None
    if frame[14] != 0x45 or frame[23] != 17:
        return None
    if struct.unpack(">H", frame[36:38])[0] != 4791:
        return None
    iplen = struct.unpack(">H", frame[16:18])[0]
    udplen = struct.unpack(">H", frame[38:40])[0]
    bth = frame[42:54]
    op = bth[0]
    p = {"frame": frame, "iplen": iplen, "udplen": udplen, "op": op,
         "src": frame[26:30], "dst": frame[30:34],
         "sport": struct.unpack(">H", frame[34:36])[0],
         "se": bth[1] >> 7, "m": (bth[1] >> 6) & 1, "pad": (bth[1] >> 4) & 3,
         "tver": bth[1] & 15, "pkey": struct.unpack(">H", bth[2:4])[0],
         "resv8": bth[4], "qpn": int.from_bytes(bth[5:8], "big"),
         "ackreq": bth[8] >> 7, "resv7": bth[8] & 0x7F,
         "psn": int.from_bytes(bth[9:12], "big")}
    name, reth, aeth, imm, pos = OPS[op]
    p.update(name=name, pos=pos)
    off = 54
    if reth:
        p["va"], p["rkey"], p["dmalen"] = struct.unpack(">QII", frame[off:off + 16])
        off += 16
    if aeth:
        p["syn"] = frame[off]
        p["msn"] = int.from_bytes(frame[off + 1:off + 4], "big")
        off += 4
    if imm:
        p["imm"] = frame[off:off + 4]
        off += 4
    p["hdrlen"] = off - 42
    p["paylen"] = udplen - 8 - p["hdrlen"] - p["pad"] - 4
    return p


def check_frame(p, ipid_last):
    f = p["frame"]
    check("ENC-ETH-1", f[12:14] == b"\x08\x00", "EtherType")
    check("ENC-IP-1", f[15] == 0 and f[20] == 0x40 and f[21] == 0 and f[22] == 64
          and ip_checksum_ok(f[14:34]) and p["iplen"] == 20 + p["udplen"],
          "IPv4 header fields")
    ipid = struct.unpack(">H", f[18:20])[0]
    if p["src"] in ipid_last:
        step = (ipid - ipid_last[p["src"]]) & 0xFFFF
        check("ENC-IP-2", 1 <= step < 4096, "IP ID step %d" % step)
    ipid_last[p["src"]] = ipid
    check("ENC-UDP-1", f[40:42] == b"\x00\x00" and p["paylen"] >= 0,
          "UDP checksum/length")
    check("HDR-BTH-1", len(f) >= 14 + p["iplen"] and p["op"] in OPS, "BTH")
    check("HDR-BTH-2", p["tver"] == 0 and p["pkey"] == 0xFFFF and p["resv8"] == 0
          and p["resv7"] == 0 and p["m"] == 0, "BTH fixed fields")
    check("HDR-BTH-4", (p["paylen"] + p["pad"]) % 4 == 0 and
          f[14 + p["iplen"] - 4 - p["pad"]:14 + p["iplen"] - 4] == b"\x00" * p["pad"],
          "pad count")
    check("OPC-HDR-1", p["paylen"] >= 0, "header length per opcode")
    check("RX-PARSE-3", True, "")
    icrc_ok = icrc_of(f, p["iplen"]) == f[14 + p["iplen"] - 4:14 + p["iplen"]]
    check("ICRC-CALC-1", icrc_ok, "ICRC psn %d" % p["psn"])
    check("ICRC-CALC-3", icrc_ok, "ICRC byte order")
    pos, n = p["pos"], p["paylen"]
    if pos in "FM":
        check("OPC-LEN-2", n == MTU, "%s carries %d" % (p["name"], n))
    elif pos == "L":
        check("OPC-LEN-2", 1 <= n <= MTU, "%s carries %d" % (p["name"], n))
    elif pos == "O":
        check("OPC-LEN-2", 0 <= n <= MTU, "%s carries %d" % (p["name"], n))
    else:
        check("OPC-LEN-5", n == 0 and p["pad"] == 0, "%s carries payload" % p["name"])
    if p["op"] == 0x11:
        check("RESP-ACK-1", p["udplen"] == 28 and p["ackreq"] == 0, "ACK layout")
        if p["syn"] < 0x20:
            check("HDR-AETH-2", p["syn"] == 0x1F, "ACK syndrome 0x%02x" % p["syn"])
    if "syn" in p and p["op"] != 0x11:
        check("RESP-READ-1", p["syn"] == 0x1F and p["pos"] in "FLO", "READ response AETH")
    if p["op"] <= 0x0C:
        want = 1 if p["pos"] in "LOR" else 0
        check("REQ-ACKREQ-1", p["ackreq"] == want, "%s AckReq %d" % (p["name"], p["ackreq"]))


def check_flows(pkts):
    """Rules that relate frames to each other."""
    # [ENC-UDP-2]: both QPNs of a flow give its UDP source port.
    flows = {}
    for p in pkts:
        flows.setdefault(p["sport"], {}).setdefault(p["src"], set()).add(p["qpn"])
    for sport, sides in flows.items():
        qpns = [next(iter(s)) for s in sides.values()]
        if len(qpns) == 2:
            check("ENC-UDP-2", sport_of(qpns[0], qpns[1]) == sport,
                  "sport %d for QPNs %s" % (sport, qpns))
    # Per direction: requests from one side, responses from the other.
    for sport in flows:
        fl = [p for p in pkts if p["sport"] == sport]
        reqs = [p for p in fl if p["op"] <= 0x0C]
        if not reqs:
            continue
        requester = reqs[0]["src"]
        resp = [p for p in fl if p["src"] != requester]
        # [REQ-PSN-2]: a READ request consumes one PSN per response packet.
        last_end = {}
        for i, p in enumerate(reqs):
            if p["op"] == 0x0C:
                k = max(1, -(-p["dmalen"] // MTU))
                last_end[p["psn"]] = k
                if i + 1 < len(reqs):
                    check("REQ-PSN-2", reqs[i + 1]["psn"] == (p["psn"] + k) % (1 << 24),
                          "request after READ psn %d" % p["psn"])
        # [OPC-SEQ-5]: responses carry the READ's PSN, +1, ... FIRST..LAST.
        for p in resp:
            if 0x0D <= p["op"] <= 0x10:
                start = [s for s in last_end
                         if 0 <= (p["psn"] - s) % (1 << 24) < last_end[s]]
                ok = bool(start)
                if ok:
                    i = (p["psn"] - start[0]) % (1 << 24)
                    k = last_end[start[0]]
                    want = "O" if k == 1 else ("F" if i == 0 else "L" if i == k - 1 else "M")
                    ok = p["pos"] == want
                check("OPC-SEQ-5", ok, "response psn %d" % p["psn"])
        # [RESP-ACK-1]: a positive ACK names the PSN of an AckReq request.
        ackreq_psns = {q["psn"] for q in reqs if q["ackreq"]}
        msns = []
        for p in resp:
            if p["op"] == 0x11 and p["syn"] == 0x1F:
                check("RESP-ACK-1", p["psn"] in ackreq_psns, "ACK psn %d" % p["psn"])
            if "msn" in p:
                msns.append(p["msn"])
        # [RESP-MSN-1]: MSN never decreases and steps by at most 1.
        check("RESP-MSN-1", all(0 <= b - a <= 1 for a, b in zip(msns, msns[1:])),
              "MSN sequence")
        # RNR and NAK behaviour (rxe-imm-rnr-nak.pcap).
        for i, p in enumerate(resp):
            if p["op"] == 0x11 and 0x20 <= p["syn"] < 0x40:
                check("HDR-AETH-3", p["syn"] == 0x2C, "RNR syndrome 0x%02x" % p["syn"])
                first = [q for q in reqs if q["psn"] == p["psn"] and q["pos"] in "FO"]
                check("RESP-RECV-2", bool(first), "RNR NAK psn %d" % p["psn"])
                nxt = resp[i + 1] if i + 1 < len(resp) else None
                if nxt is not None and nxt["op"] == 0x11 and nxt["syn"] == 0x60:
                    check("RESP-OOS-1", nxt["psn"] == p["psn"], "seq NAK psn")
                    check("RESP-OOS-3", nxt["psn"] == p["psn"], "seq NAK after RNR")
                # [REQ-RNR-1]: the requester resends from the NAKed PSN.
                later = [q for q in reqs if q["frame"] is not None and
                         pkts.index(q) > pkts.index(p)]
                if later:
                    check("REQ-RNR-1", later[0]["psn"] == p["psn"], "resend after RNR")
            if p["op"] == 0x11 and p["syn"] >= 0x60:
                check("HDR-AETH-4", p["syn"] in (0x60, 0x61, 0x62, 0x63), "NAK code")
                if p["syn"] == 0x62:
                    bad = [q for q in reqs if q["psn"] == p["psn"]]
                    check("RESP-ERR-2", bool(bad) and bad[0]["pos"] in "FO",
                          "access NAK psn %d" % p["psn"])


def main():
    if not os.path.isdir(VEC_DIR):
        print("vectors: directory %s is missing" % VEC_DIR)
        return 1
    files = sorted(os.path.join(VEC_DIR, f) for f in os.listdir(VEC_DIR)
                   if f.endswith(".pcap"))
    if not files:
        print("vectors: no pcap files in %s" % VEC_DIR)
        return 1
    total = 0
    for path in files:
        pkts, ipid_last = [], {}
        for frame in pcap_frames(path):
            p = decode(frame)
            if p is None:
                continue
            check_frame(p, ipid_last)
            pkts.append(p)
        check_flows(pkts)
        total += len(pkts)
        print("vectors: %s: %d RoCEv2 frames" % (os.path.basename(path), len(pkts)))
    bad = bad_rules = 0
    for rule in sorted(results):
        n, fails, first = results[rule]
        status = "ok" if fails == 0 else "FAIL (%d of %d, first: %s)" % (fails, n, first)
        print("vectors: [%s] %d checks %s" % (rule, n, status))
        bad += fails
        bad_rules += fails > 0
    print("vectors: %d frames, %d rules, %s" % (total, len(results),
                                                 "all hold" if bad == 0 else "%d failures" % bad))
    print("vectors: %d passed, %d failed" % (len(results) - bad_rules, bad_rules))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
