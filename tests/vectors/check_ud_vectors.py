#!/usr/bin/env python3
"""check_ud_vectors.py: the host test of the UD captures in tests/vectors/ud/.

Checks what can be checked without a UD parser of our own, on every frame
of rxe-ud.pcap (path MTU 1024) and rxe-ud-mtu4096.pcap: one scenario, so
one list of frames (tests/vectors/README.md says what each frame is, and
this file's FRAMES is that list, MTU standing for the path MTU): Ethernet/IPv4/UDP to port 4791 with a valid
IPv4 checksum and UDP checksum 0; the BTH (opcode 0x64 UD SEND_ONLY or 0x65
UD SEND_ONLY_WITH_IMMEDIATE, P_Key 0xFFFF, TVer 0, destination QPN); the
DETH at its IBTA place right after the BTH (bytes 54..61 of the frame: the
Q_Key in 4 bytes, a reserved byte, the source QPN in 3 bytes) holding the
Q_Key and source QPN xrpeer set; the immediate (ImmDt after the DETH)
and xrpeer's payload (tests/linux/peer/ud.c: a sequence number then the
byte pattern); the ICRC, recomputed by proto-spec/model/vectors_check.py's
icrc_of (the code `make test-spec` and the interop capture check use);
each echo answering its datagram (QPNs swapped, same payload); each
sender's PSNs consecutive; the UDP source port derived from the source QPN
(the rule the README states).

    python3 tests/vectors/check_ud_vectors.py [DIR]   (default tests/vectors/ud)

Prints "test NAME: OK|FAILED (info)" per check and "N passed, M failed".
Python standard library only.
"""
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "proto-spec", "model"))
import vectors_check  # noqa: E402

UD_DIR = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "ud")
ROCE_PORT = 4791
OP_SEND_ONLY, OP_SEND_ONLY_IMM = 0x64, 0x65
BTH_AT, DETH_AT = 42, 54             # Ethernet 14 + IPv4 20 + UDP 8; the BTH is 12 bytes
DETH_LEN, IMM_LEN, ICRC_LEN = 8, 4, 4
IMM_SALT = 0xC0DE0000                # xrpeer's immediate: sequence number ^ this
A, B = "10.0.0.2", "10.0.0.3"        # A the ud-server, B the ud-clients

MTU = "MTU"                          # in FRAMES: the file's path MTU
FILES = [("rxe-ud.pcap", 1024), ("rxe-ud-mtu4096.pcap", 4096)]
# The RoCEv2 frames of each file: (pcap frame number, source, opcode,
# BTH destination QPN, DETH Q_Key, DETH source QPN, payload bytes,
# sequence number, echo of the frame numbered, or None).
FRAMES = [
    (3, B, 0x64, 0x11, 0x11111111, 0x21, 16, 0, None), (4, A, 0x64, 0x21, 0x11111111, 0x11, 16, 0, 3),
    (5, B, 0x64, 0x11, 0x11111111, 0x21, 16, 1, None), (6, A, 0x64, 0x21, 0x11111111, 0x11, 16, 1, 5),
    (7, B, 0x64, 0x11, 0x11111111, 0x22, MTU, 0, None), (8, A, 0x64, 0x22, 0x11111111, 0x11, MTU, 0, 7),
    (9, B, 0x64, 0x11, 0x11111111, 0x22, MTU, 1, None), (10, A, 0x64, 0x22, 0x11111111, 0x11, MTU, 1, 9),
    (11, B, 0x65, 0x11, 0x11111111, 0x23, 64, 0, None), (12, A, 0x65, 0x23, 0x11111111, 0x11, 64, 0, 11),
    (13, B, 0x65, 0x11, 0x11111111, 0x23, 64, 1, None), (14, A, 0x65, 0x23, 0x11111111, 0x11, 64, 1, 13),
    (15, B, 0x64, 0x12, 0x22222222, 0x24, 32, 0, None),            # wrong Q_Key: never echoed
    (16, B, 0x64, 0x12, 0x0BADCAFE, 0x25, 32, 0, None), (17, A, 0x64, 0x25, 0x0BADCAFE, 0x12, 32, 0, 16),
    (18, B, 0x64, 0x12, 0x0BADCAFE, 0x25, 32, 1, None), (19, A, 0x64, 0x25, 0x0BADCAFE, 0x12, 32, 1, 18),
]
PCAP_FRAMES = 19                     # the two above plus ARP request and reply (frames 1, 2)


class Report:
    def __init__(self):
        self.passed = self.failed = 0
        self.tag = ""                # the file's, in every check's name

    def check(self, name, problems, info):
        """One check: OK if problems (a list of strings) is empty."""
        ok = not problems
        name = name.replace("ud_vectors_", f"ud_vectors_{self.tag}_")
        print(f"test {name}: {'OK' if ok else 'FAILED'} ({info if ok else '; '.join(problems[:3])})")
        self.passed += ok
        self.failed += not ok


def ip_str(b):
    return ".".join(str(x) for x in b)


def u24(b):
    return int.from_bytes(b, "big")


def layers(f):
    """The fields this test reads from one RoCEv2 frame."""
    iplen, udplen = struct.unpack(">H", f[16:18])[0], struct.unpack(">H", f[38:40])[0]
    op = f[BTH_AT]
    hdr = DETH_AT + DETH_LEN + (IMM_LEN if op == OP_SEND_ONLY_IMM else 0)
    pad = f[BTH_AT + 1] >> 4 & 3
    end = 14 + iplen - ICRC_LEN - pad
    return {"iplen": iplen, "udplen": udplen, "op": op, "sport": struct.unpack(">H", f[34:36])[0],
            "dport": struct.unpack(">H", f[36:38])[0], "pkey": struct.unpack(">H", f[BTH_AT + 2:BTH_AT + 4])[0],
            "tver": f[BTH_AT + 1] & 15, "dqpn": u24(f[BTH_AT + 5:BTH_AT + 8]), "psn": u24(f[BTH_AT + 9:BTH_AT + 12]),
            "qkey": struct.unpack(">I", f[DETH_AT:DETH_AT + 4])[0], "deth_resv": f[DETH_AT + 4],
            "sqpn": u24(f[DETH_AT + 5:DETH_AT + 8]),
            "imm": struct.unpack(">I", f[DETH_AT + 8:DETH_AT + 12])[0] if op == OP_SEND_ONLY_IMM else None,
            "payload": f[hdr:end], "src": ip_str(f[26:30]), "dst": ip_str(f[30:34])}


def sport_of_qpn(qpn):
    """The UDP source port rxe gave every UD frame in the capture: 0xC000
    plus the top 14 bits of the 32-bit product qpn * 0x61C88647."""
    return 0xC000 | ((qpn * 0x61C88647) & 0xFFFFFFFF) >> 18


def check_envelope(r, roce, frames):
    bad = []
    for n, f in roce.items():
        x = layers(f)
        if f[12:14] != b"\x08\x00" or f[14] != 0x45 or f[23] != 17 or not vectors_check.ip_checksum_ok(f[14:34]):
            bad.append(f"frame {n}: not IPv4/UDP with a valid header checksum")
        elif x["dport"] != ROCE_PORT or f[40:42] != b"\x00\x00" or x["udplen"] != x["iplen"] - 20:
            bad.append(f"frame {n}: UDP port {x['dport']}, checksum {f[40:42].hex()}, length {x['udplen']}")
        elif len(f) < 14 + x["iplen"]:
            bad.append(f"frame {n}: {len(f)} bytes, IPv4 says {14 + x['iplen']}")
    r.check("ud_vectors_ethernet_ipv4_udp_4791", bad, f"{len(roce)} frames")


def check_headers(r, roce, frames):
    bad = []
    for n, src, op, dqpn, qkey, sqpn, size, seq, _ in frames:
        x = layers(roce[n])
        want = {"src": src, "dst": A if src == B else B, "op": op, "pkey": 0xFFFF, "tver": 0, "dqpn": dqpn,
                "qkey": qkey, "deth_resv": 0, "sqpn": sqpn}
        diff = [f"{k} {x[k]!r} not {v!r}" for k, v in want.items() if x[k] != v]
        if diff:
            bad.append(f"frame {n}: " + ", ".join(diff))
    r.check("ud_vectors_bth_deth_fields", bad, "opcode, P_Key, destination QPN; DETH Q_Key and source QPN")


def check_payloads(r, roce, frames):
    bad = []
    for n, _, op, _, _, _, size, seq, _ in frames:
        x = layers(roce[n])
        p = x["payload"]
        want = struct.pack(">I", seq) + bytes((seq + k) & 255 for k in range(4, size))
        if p != want:
            bad.append(f"frame {n}: payload {len(p)} bytes {p[:8].hex()}.., expected {size} bytes")
        if (op == OP_SEND_ONLY_IMM) != (x["imm"] is not None) or (x["imm"] is not None and x["imm"] != seq ^ IMM_SALT):
            bad.append(f"frame {n}: immediate {x['imm']}")
    r.check("ud_vectors_payload_and_immediate", bad, "xrpeer's pattern; ImmDt = seq ^ 0xc0de0000")


def check_icrc(r, roce, frames):
    bad = [f"frame {n}" for n, f in roce.items()
           if vectors_check.icrc_of(f, layers(f)["iplen"]) != f[14 + layers(f)["iplen"] - 4:14 + layers(f)["iplen"]]]
    # The check can fail: one payload bit flipped must change the ICRC.
    f = bytearray(roce[frames[0][0]])
    iplen = layers(bytes(f))["iplen"]
    good = vectors_check.icrc_of(bytes(f), iplen)
    f[DETH_AT + DETH_LEN] ^= 1
    if vectors_check.icrc_of(bytes(f), iplen) == good:
        bad.append("a flipped payload bit kept the ICRC")
    r.check("ud_vectors_icrc", bad, f"{len(roce)} frames valid, a corrupted copy is not")


def check_echoes(r, roce, frames):
    bad = []
    echoed = {e for *_, e in frames if e}
    for n, *_, of in frames:
        if of is None:
            continue
        a, q = layers(roce[n]), layers(roce[of])
        if a["dqpn"] != q["sqpn"] or a["sqpn"] != q["dqpn"] or a["payload"] != q["payload"] or a["imm"] != q["imm"]:
            bad.append(f"frame {n} does not answer frame {of}")
    unanswered = [n for n, src, *_ in frames if src == B and n not in echoed]
    if unanswered != [15]:
        bad.append(f"unanswered datagrams {unanswered}, expected only the wrong Q_Key's (15)")
    r.check("ud_vectors_echo_answers_datagram", bad, "QPNs swapped, same payload; the wrong Q_Key's dropped")


def check_psn_and_sport(r, roce, frames):
    bad = []
    last = {}
    for n, *_ in frames:
        x = layers(roce[n])
        key = (x["src"], x["sqpn"])
        if key in last and x["psn"] != (last[key] + 1) & 0xFFFFFF:
            bad.append(f"frame {n}: PSN {x['psn']} after {last[key]}")
        last[key] = x["psn"]
        if x["sport"] != sport_of_qpn(x["sqpn"]):
            bad.append(f"frame {n}: UDP source port {x['sport']}, rule gives {sport_of_qpn(x['sqpn'])}")
    r.check("ud_vectors_psn_and_udp_source_port", bad, f"{len(last)} sending QPs, PSN +1 each; port from source QPN")


def check_file(r, path, mtu):
    """Every check on one capture; FRAMES with this file's path MTU."""
    frames = [(n, src, op, dq, qk, sq, mtu if size == MTU else size, seq, of)
              for n, src, op, dq, qk, sq, size, seq, of in FRAMES]
    if not os.path.exists(path):
        r.check("ud_vectors_file", [f"{path} is missing"], "")
        return
    pcap = list(vectors_check.pcap_frames(path))
    roce = {i + 1: f for i, f in enumerate(pcap) if len(f) >= DETH_AT + DETH_LEN + ICRC_LEN
            and f[12:14] == b"\x08\x00" and f[23] == 17 and struct.unpack(">H", f[36:38])[0] == ROCE_PORT}
    listed = sorted(roce) == [f[0] for f in frames]
    r.check("ud_vectors_frame_list", [] if len(pcap) == PCAP_FRAMES and listed
            else [f"{len(pcap)} frames, RoCEv2 at {sorted(roce)}"], f"{len(pcap)} frames, {len(roce)} RoCEv2")
    if listed:
        for fn in (check_envelope, check_headers, check_payloads, check_icrc, check_echoes, check_psn_and_sport):
            fn(r, roce, frames)


def main():
    r = Report()
    for name, mtu in FILES:
        r.tag = f"mtu{mtu}"
        check_file(r, os.path.join(UD_DIR, name), mtu)
    print(f"{r.passed} passed, {r.failed} failed")
    return 0 if r.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
