#!/usr/bin/env python3
"""extract_atomic.py: makes tests/vectors/atomic/rxe-atomic.pcap, the atomic
frames Linux Soft-RoCE sent on the interop bed (see tests/vectors/README.md).

Reads a capture of the clean path-MTU-1024 interop bed, where the opcode x
size matrix runs both ways between xv6 (10.0.0.1) and rxe (10.0.0.2), and
keeps the RoCEv2 frames the Linux guest sent whose BTH opcode is an atomic
one (0x12 ATOMIC ACKNOWLEDGE, 0x13 COMPARE SWAP, 0x14 FETCH ADD): rxe's
requests when it drives the matrix (rxe_to_xv6) and its ATOMIC_ACKs when xv6
does (xv6_to_rxe). Writes them, in capture order, with their records as
captured; fails unless it found two requests and two ATOMIC_ACKs.

    python3 tests/interop/run_interop.py --only mtu1024 --keep-capture DIR
    python3 tests/vectors/extract_atomic.py DIR/port1.pcap [OUT]
"""
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LINUX_IP = bytes([10, 0, 0, 2])
ATOMIC_OPS = (0x12, 0x13, 0x14)
ETH, IP, UDP = 14, 20, 8


def frames(path):
    """(record header, frame bytes) of every record of a little-endian pcap."""
    with open(path, "rb") as f:
        head = f.read(24)
        if struct.unpack("<I", head[:4])[0] not in (0xA1B2C3D4, 0xA1B23C4D):
            sys.exit(f"extract_atomic: {path}: not a little-endian pcap")
        yield head, None
        while True:
            rec = f.read(16)
            if len(rec) < 16:
                return
            incl = struct.unpack("<I", rec[8:12])[0]
            yield rec, f.read(incl)


def atomic_from_linux(b):
    """The BTH opcode if b is a RoCEv2 frame from the Linux guest with an atomic opcode, else None."""
    if len(b) < ETH + IP + UDP + 12 or b[12:14] != b"\x08\x00" or b[ETH + 9] != 17:
        return None
    if b[ETH + 12:ETH + 16] != LINUX_IP or struct.unpack(">H", b[ETH + IP + 2:ETH + IP + 4])[0] != 4791:
        return None
    op = b[ETH + IP + UDP]
    return op if op in ATOMIC_OPS else None


def main():
    src = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "atomic", "rxe-atomic.pcap")
    kept, ops = [], []
    for rec, b in frames(src):
        if b is None:
            head = rec
            continue
        op = atomic_from_linux(b)
        if op is not None:
            kept.append(rec + b)
            ops.append(op)
    if sorted(ops) != [0x12, 0x12, 0x13, 0x14]:
        sys.exit(f"extract_atomic: {src}: rxe's atomic frames are {[hex(o) for o in ops]}, "
                 "want one COMPARE SWAP, one FETCH ADD and two ATOMIC ACKNOWLEDGEs")
    with open(out, "wb") as f:
        f.write(head + b"".join(kept))
    print(f"extract_atomic: {len(kept)} frames ({', '.join(hex(o) for o in ops)}) -> {out}")


if __name__ == "__main__":
    main()
