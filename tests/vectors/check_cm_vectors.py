#!/usr/bin/env python3
"""check_cm_vectors.py: the host test of the CM captures in tests/vectors/cm/,
and the writer of cm/fields.json, tshark's reading of every CM MAD in them.

tshark (Wireshark's InfiniBand dissector, which has a CM decoder) is the
independent reference: per capture (FILES, the scenario the README names
for it), every RoCEv2 frame to or from QP1 (BTH destination QPN 1, the
GSI) must dissect as a MAD of the CM class (base version 1, management
class 0x07, class version 2, 256 bytes) with no malformed-packet or expert
item of warning or error severity, and the CM attributes must come in the
order listed; then the fields tshark decoded (MAD header, BTH/DETH, every
infiniband.cm.* field: communication IDs, service ID, QPNs, starting PSNs,
path MTU, retry counts, timeouts, private data) must equal cm/fields.json,
so that file always says what tshark reads in the pcaps next to it. Part
B's host tests (tests/unit/) assert the kernel's CM decoder against it.

    python3 tests/vectors/check_cm_vectors.py [DIR]          # the checks
    python3 tests/vectors/check_cm_vectors.py --write [DIR]  # remake DIR/fields.json
    (DIR: default tests/vectors/cm; another holds a fresh capture_cm.py --out)

Prints "test NAME: OK|FAILED (info)" per check and "N passed, M failed".
Needs tshark (tests/deps.sh); Python standard library otherwise.
"""
import argparse
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CM_DIR = os.path.join(HERE, "cm")
GSI_QPN = 1
MAD_BYTES = 256
CM_CLASS, CM_CLASS_VERSION, MAD_BASE_VERSION = 0x07, 2, 1

# CM attribute IDs (IBTA Vol. 1, 16.7.2 / 12.6: the CM's attributes).
ATTRIBUTES = {0x0010: "REQ", 0x0011: "MRA", 0x0012: "REJ", 0x0013: "REP", 0x0014: "RTU",
              0x0015: "DREQ", 0x0016: "DREP", 0x0017: "SIDR_REQ", 0x0018: "SIDR_REP",
              0x0019: "LAP", 0x001A: "APR"}

# The captures and the CM attributes each must hold, in order
# (tests/vectors/README.md, "cm/", says what each frame is).
FILES = {
    "rping.pcap": ["REQ", "REP", "RTU", "DREQ", "DREP"],
    "rej-no-listener.pcap": ["REQ", "REJ"],
    "udaddy.pcap": ["SIDR_REQ", "SIDR_REP"],
    # perftest -R connects twice (QPN 0x11, then 0x12 for the test) and
    # disconnects the second first.
    "perftest-write.pcap": ["REQ", "REP", "RTU"] * 2 + ["DREQ", "DREP"] * 2,
    "perftest-send.pcap": ["REQ", "REP", "RTU"] * 2 + ["DREQ", "DREP"] * 2,
    # Both sides sent a DREQ for the second connection at once (crossing
    # DREQs: each answered the other's with a DREP).
    "perftest-read.pcap": ["REQ", "REP", "RTU"] * 2 + ["DREQ", "DREQ", "DREP", "DREP", "DREQ", "DREP"],
}
# tshark's keys holding a header's bytes whole, or reserved bits: left out.
# Payload heuristics turned off (as tests/interop/run_interop.py does): they
# guess a protocol from an RC SEND's application bytes (perftest's small
# SENDs read as RPC-over-RDMA or Ethernet-over-IB) and call the guess
# malformed, which says nothing about the RoCEv2 frame.
TSHARK_OFF = ("rpcrdma_infiniband", "eth_over_ib")
# tshark's spelling of a byte string (private data, ARI): "00:40:e4:b6".
BYTES = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2})+$")
SKIP_KEY = re.compile(r"^infiniband\.(reserved|bth|deth|mad|mad\.data|smplid\.smpdata)$")


class Report:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, name, problems, info):
        """One check: OK if problems (a list of strings) is empty."""
        ok = not problems
        print(f"test {name}: {'OK' if ok else 'FAILED'} ({info if ok else '; '.join(problems[:3])})")
        self.passed += ok
        self.failed += not ok


def flatten(tree, out):
    """tshark's JSON layer as one dict: nested *_tree dicts unfolded."""
    for key, value in tree.items():
        if isinstance(value, dict):
            flatten(value, out)
        elif not key.startswith("_ws.") and not SKIP_KEY.match(key):
            out.setdefault(key, value)
    return out


def expert_items(layers):
    """Malformed or warning/error expert items anywhere in one frame."""
    found = []

    def walk(x):
        if isinstance(x, dict):
            for k, v in x.items():
                if k.startswith("_ws.malformed"):
                    found.append("malformed")
                elif k == "_ws.expert.severity" and int(v) >= 6291456:   # PI_WARN and above
                    found.append(f"expert {x.get('_ws.expert.message', v)}")
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    walk(layers)
    return found


def tshark_frames(path):
    """Every frame of path as tshark's JSON layers, numbered from 1."""
    cmd = ["tshark", "-r", path, "-T", "json", "--no-duplicate-keys"]
    for h in TSHARK_OFF:
        cmd += ["--disable-heuristic", h]
    out = subprocess.run(cmd,
                         capture_output=True, text=True, check=True).stdout
    return [(int(p["_source"]["layers"]["frame"]["frame.number"]), p["_source"]["layers"])
            for p in json.loads(out)]


def unbytes(v):
    """A byte string's colons removed (a list of values: each)."""
    if isinstance(v, list):
        return [unbytes(x) for x in v]
    return v.replace(":", "") if BYTES.match(v) else v


def cm_frame(n, layers):
    """The record fields.json keeps for one CM MAD, or None for a frame that
    is not a RoCEv2 frame to or from QP1."""
    ib = layers.get("infiniband")
    if not ib:
        return None
    f = flatten(ib, {})
    dqpn, sqpn = int(f.get("infiniband.bth.destqp", "0"), 16), int(f.get("infiniband.deth.srcqp", "0"), 16)
    if GSI_QPN not in (dqpn, sqpn):
        return None
    mad = ib.get("infiniband.mad", "")
    attr = int(f.get("infiniband.mad.attributeid", "0"), 16)
    return {
        "frame": n, "src": layers["ip"]["ip.src"], "dst": layers["ip"]["ip.dst"],
        "attribute": ATTRIBUTES.get(attr, f"{attr:#06x}"),
        "mad_bytes": len(mad.split(":")) if mad else 0,
        "mad_hex": mad.replace(":", ""),
        "bth": {k[len("infiniband.bth."):]: v for k, v in f.items() if k.startswith("infiniband.bth.")},
        "deth": {k[len("infiniband.deth."):]: v for k, v in f.items() if k.startswith("infiniband.deth.")},
        "mad": {k[len("infiniband.mad."):]: v for k, v in f.items() if k.startswith("infiniband.mad.")},
        "cm": {k[len("infiniband.cm."):]: unbytes(v) for k, v in f.items() if k.startswith("infiniband.cm.")},
        "problems": expert_items(layers),
    }


def read_file(cm_dir, name):
    """(every frame's expert problems, the CM records) of one capture."""
    frames = tshark_frames(os.path.join(cm_dir, name))
    problems = [f"frame {n}: {p}" for n, layers in frames for p in expert_items(layers)]
    records = [r for r in (cm_frame(n, layers) for n, layers in frames) if r]
    for r in records:
        del r["problems"]
    return problems, records


def check_file(rep, name, records, problems, want):
    tag = name[:-len(".pcap")].replace("-", "_")
    rep.check(f"cm_vectors_{tag}_tshark_clean", problems, "no malformed frame, no warning or error")
    bad = []
    for r in records:
        m = r["mad"]
        if r["mad_bytes"] != MAD_BYTES:
            bad.append(f"frame {r['frame']}: MAD of {r['mad_bytes']} bytes")
        if (int(m.get("baseversion", "0"), 16), int(m.get("mgmtclass", "0"), 16),
                int(m.get("classversion", "0"), 16)) != (MAD_BASE_VERSION, CM_CLASS, CM_CLASS_VERSION):
            bad.append(f"frame {r['frame']}: base/class/version {m.get('baseversion')}/"
                       f"{m.get('mgmtclass')}/{m.get('classversion')}")
        if r["deth"].get("q_key") != "0x0000000080010000":
            bad.append(f"frame {r['frame']}: Q_Key {r['deth'].get('q_key')}")
    rep.check(f"cm_vectors_{tag}_cm_mads", bad, f"{len(records)} MADs of 256 bytes, class 0x07 version 2, "
              "Q_Key 0x80010000")
    got = [r["attribute"] for r in records]
    rep.check(f"cm_vectors_{tag}_attributes", [] if got == want else [f"{got}, expected {want}"],
              " ".join(got))
    undecoded = [f"frame {r['frame']} ({r['attribute']})" for r in records
                 if not r["cm"] and not r["attribute"].startswith("SIDR")]
    rep.check(f"cm_vectors_{tag}_cm_fields_decoded", undecoded, "tshark decoded the CM fields of every "
              "REQ/REP/RTU/REJ/DREQ/DREP (it has no SIDR decoder: those keep mad_hex only)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help="remake DIR/fields.json")
    ap.add_argument("dir", nargs="?", default=CM_DIR)
    args = ap.parse_args()
    fields_json = os.path.join(args.dir, "fields.json")
    rep = Report()
    try:
        version = subprocess.run(["tshark", "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    except OSError as e:
        rep.check("cm_vectors_tshark", [f"cannot run tshark: {e} (tests/deps.sh installs it)"], "")
        print(f"{rep.passed} passed, {rep.failed} failed")
        return 1
    fields = {"tshark": version, "files": {}}
    for name, want in FILES.items():
        if not os.path.exists(os.path.join(args.dir, name)):
            rep.check(f"cm_vectors_{name}", [f"{name} is missing from {args.dir}"], "")
            continue
        problems, records = read_file(args.dir, name)
        fields["files"][name] = records
        check_file(rep, name, records, problems, want)
    if args.write:
        with open(fields_json, "w") as f:
            json.dump(fields, f, indent=1, sort_keys=True)
            f.write("\n")
        print(f"wrote {fields_json}")
    try:
        with open(fields_json) as f:
            saved = json.load(f)["files"]
        stale = [n for n in FILES if saved.get(n) != fields["files"].get(n)]
    except (OSError, ValueError, KeyError) as e:
        stale = [f"cannot read {fields_json}: {e}"]
    rep.check("cm_vectors_fields_json_current", [f"{n} differs" for n in stale],
              "cm/fields.json is what tshark reads in the captures (--write remakes it)")
    print(f"{rep.passed} passed, {rep.failed} failed")
    return 0 if rep.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
