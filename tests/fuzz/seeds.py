#!/usr/bin/env python3
"""seeds.py: build the fuzz seed corpora from the Soft-RoCE vectors.

tests/fuzz/corpus/parser/     one RoCE frame per file (a sample of each opcode, vectors/atomic's
                              too), and one
                              256-byte CM MAD per attribute from vectors/cm (mad_*)
tests/fuzz/corpus/responder/  mode byte + [len16][frame] records: the request
                              frames of one message addressed to the fuzz endpoint
Usage: tests/fuzz/seeds.py [VECTOR_DIR]  (default tests/vectors)
"""
import os, struct, sys

def frames(path):
    with open(path, "rb") as f:
        data = f.read()
    off = 24
    while off + 16 <= len(data):
        incl = struct.unpack_from("<I", data, off + 8)[0]
        fr = data[off + 16: off + 16 + incl]
        off += 16 + incl
        if len(fr) > 54 and fr[12:14] == b"\x08\x00" and fr[23] == 17 and fr[36:38] == b"\x12\xb7":
            yield fr

def main():
    here = os.path.dirname(os.path.abspath(__file__))
    vec = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "vectors")
    pdir, rdir = os.path.join(here, "corpus", "parser"), os.path.join(here, "corpus", "responder")
    os.makedirs(pdir, exist_ok=True)
    os.makedirs(rdir, exist_ok=True)
    seen = {}
    adir = os.path.join(vec, "atomic")
    pcaps = [os.path.join(vec, f) for f in sorted(os.listdir(vec)) if f.endswith(".pcap")]
    pcaps += [os.path.join(adir, f) for f in sorted(os.listdir(adir)) if f.endswith(".pcap")] if os.path.isdir(adir) else []
    for path in pcaps:
        for fr in frames(path):
            op = fr[42]
            seen.setdefault(op, []).append(fr)
    n = 0
    for op, frs in sorted(seen.items()):
        for i, fr in enumerate(frs[:3]):
            with open(os.path.join(pdir, "op%02x_%d" % (op, i)), "wb") as f:
                f.write(fr)
            n += 1
    # responder seeds: runs of consecutive requests, fixed up by the target (mode bit 0x40)
    reqs = [fr for op in sorted(seen) if op <= 0x0c for fr in seen[op][:6]]
    for k, mode in enumerate([0x44, 0x45, 0x46, 0xc4]):
        rec = bytes([mode]) + b"".join(struct.pack(">H", len(fr)) + fr for fr in reqs[k * 4:(k + 1) * 4 + 8])
        with open(os.path.join(rdir, "seq%d" % k), "wb") as f:
            f.write(rec)
    acks = [fr for fr in seen.get(0x11, [])[:4]] + seen.get(0x0d, [])[:1] + seen.get(0x0f, [])[:1]
    with open(os.path.join(rdir, "acks"), "wb") as f:
        f.write(bytes([0x44]) + b"".join(struct.pack(">H", len(fr)) + fr for fr in acks))
    # atomics (vectors/atomic): rxe's CmpSwap and FetchAdd requests, then its ATOMIC_ACKs
    atomics = seen.get(0x13, [])[:1] + seen.get(0x14, [])[:1] + seen.get(0x12, [])[:2]
    if atomics:
        with open(os.path.join(rdir, "atomics"), "wb") as f:
            f.write(bytes([0x44]) + b"".join(struct.pack(">H", len(fr)) + fr for fr in atomics))
    # CM MADs (UD SEND_ONLY to or from QP1): the MAD after Ethernet, IPv4, UDP, BTH and DETH
    mads = {}
    cmdir = os.path.join(vec, "cm")
    for name in sorted(os.listdir(cmdir)) if os.path.isdir(cmdir) else []:
        if name.endswith(".pcap"):
            for fr in frames(os.path.join(cmdir, name)):
                mad = fr[62:62 + 256]
                if fr[42] == 0x64 and len(mad) == 256 and mad[1] == 0x07:
                    mads.setdefault(mad[17], mad)
    for attr, mad in sorted(mads.items()):
        with open(os.path.join(pdir, "mad_%02x" % attr), "wb") as f:
            f.write(mad)
    print("seeds: %d parser files, %d CM MADs, %d responder files" % (n, len(mads), 5 + (1 if atomics else 0)))

main()
