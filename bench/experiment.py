#!/usr/bin/env python3
"""experiment.py: a loss experiment described in a TOML file, run to a CSV.

Owns the experiment runner (make experiment EXP=FILE): it reads an
experiment file (docs/experiments.md says how to write one; examples in
experiments/), runs every workload at every impairment level, REPEATS
times, between two xv6 guests joined by a medium, and writes to OUT:

  runs.csv      one row per run: the configuration, every counter the tools
                and the medium report, and derived columns (goodput, wire
                frames per data frame, frames each side's QP lost against
                the frames the medium lost); failed runs too, with their log
  logs/         the console output of every failed run
  meta.json     the command, the experiment file's text and hash, the seeds,
                the commit and the host's load, so a run can be repeated
  summary.md, summary.csv, *.png
                medians and 95 % confidence intervals per cell, and plots
                (bench/experiment_report.py, also on its own: --report)

Media: "linkemu" (netem/linkemu: tc-netem grammar plus `seed N`; its
counters per direction) and "netem" (a Linux guest bridging the two xv6
guests with tc netem on both ports, tests/harness/linux_guest.py NetemBox;
tc's sent and dropped counters). Guest 1 is the client (rdma_bw, rdma_lat,
rdmacp send), guest 0 the server; "a2b" impairs frames from guest 0, so the
client's data crosses "b2a". A workload with peer = "linux" (rdma_bw,
linkemu only) runs xv6's rdma_bw against the Linux Soft-RoCE guest's
xrpeer instead, on tests/interop/run_interop.py's bed: xv6 is guest 0,
the Linux guest 10.0.0.2; xv6's counters only.

A person watches it: a progress line per run (cells done, runs left, time
left). Ctrl-C, SIGTERM or --max-runs stops it with every finished run saved; the
same command again resumes with the runs not yet done. A run that fails (a
guest hung, a tool errored) is written as failed with its log, the guests
are started afresh, the run is tried once more, and the experiment goes on.

Usage: python3 bench/experiment.py FILE [--out DIR] [--max-runs N] [--restart]
       python3 bench/experiment.py --report DIR     (tables and plots again)
"""
import argparse
import csv
import hashlib
import itertools
import json
import math
import os
import re
import shlex
import signal
import subprocess
import sys
import time
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, ".."))
for sub in ("tests/net", "tests/harness", "bench/rdma", "tests/interop"):
    sys.path.insert(0, os.path.join(REPO, sub))
from launch import Testbed  # noqa: E402
from guest import GuestError, progress  # noqa: E402
import perftable  # noqa: E402
import rdma_sweep  # noqa: E402
import run_netem  # noqa: E402
import run_interop  # noqa: E402

MIB = 1 << 20
TOOLS = ("rdma_bw", "rdma_lat", "rdmacp")
OPS = {"rdma_bw": ("write", "read", "send"), "rdma_lat": ("write", "read", "send"), "rdmacp": ("",)}
MODES = {"gbn": "", "sr": " --sr"}
MEDIA = ("linkemu", "netem")
PEERS = ("xv6", "linux")        # the other end: an xv6 guest, or the Linux guest's xrpeer (rdma_bw only)
PEER_ROLES = ("server", "client")
COUNT_BUDGET = 16 * MIB         # rdma_bw's default bytes per run (rdma_sweep.iters_for)
LAT_ITERS = 500
TOP_KEYS = {"name", "medium", "repeats", "seed", "live", "mtu", "timeout", "levels", "workload", "x_label"}
DEFAULTS = {"repeats": 3, "seed": 7, "live": True, "mtu": 1024, "timeout": 600}
QP_KEYS = ("tx_frames", "rx_frames", "retransmits", "timeouts", "tx_naks", "rx_naks", "dup", "oos", "oow",
           "dropped", "rnr_timeouts", "window_cuts", "late_probes")
MEDIUM_KEYS = ("in", "out", "dropped", "duplicated", "reordered")
CONFIG_COLUMNS = ("run_id", "status", "attempt", "cell", "repeat", "medium", "level", "a2b", "b2a", "seed",
                  "tool", "op", "size", "iters", "depth", "mode", "chunk", "peer", "peer_role", "mtu", "live", "started_utc",
                  "seconds", "host_load")
RESULT_COLUMNS = ("goodput_MBps", "bw_peak_MBps", "msg_rate_Mpps", "t_min_us", "t_typical_us", "t_avg_us",
                  "t_max_us", "t_stdev_us", "p99_us", "p999_us")
DERIVED_COLUMNS = ("data_frames", "wire_frames", "frames_per_data_frame", "qp_lost_a2b", "medium_lost_a2b",
                   "qp_lost_b2a", "medium_lost_b2a", "nic_dropped", "error", "log")
COLUMNS = (CONFIG_COLUMNS + RESULT_COLUMNS + tuple(f"{s}_{k}" for s in ("cli", "srv") for k in QP_KEYS)
           + tuple(f"{d}_{k}" for d in ("a2b", "b2a") for k in MEDIUM_KEYS) + DERIVED_COLUMNS)
RDMACP_SENT = re.compile(r"rdmacp: sent \S+ as \S+: (\d+) bytes in (\d+) chunks, checksum \w+: (\w+) "
                         r"\((\d+) KB/s\)\n")
RDMACP_QP = re.compile(r"rdmacp: qp \S+ sr \w+ ([^\n]*)\n")
# rdmacp's counter names -> perftable.qp_stats's
RDMACP_NAMES = {"tx_frames": "tx_frames", "rx_frames": "rx_frames", "retx": "retransmits",
                "timeouts": "timeouts", "tx_nak": "tx_naks", "rx_nak": "rx_naks", "rx_dup": "dup",
                "rx_out_of_seq": "oos", "rx_out_of_window": "oow", "rx_dropped": "dropped"}


class ExperimentError(Exception):
    """The experiment file or the output directory is not usable."""


# ---- the experiment file ----

def load(path, medium=None):
    """The experiment file, checked and expanded: a dict with the top-level
    settings, "levels" (dicts name/a2b/b2a/x) and "workloads" (one dict per
    combination of the list-valued fields)."""
    with open(path, "rb") as f:
        try:
            exp = tomllib.load(f)
        except tomllib.TOMLDecodeError as e:
            raise ExperimentError(f"{path}: not TOML: {e}")
    exp = {**DEFAULTS, "name": os.path.splitext(os.path.basename(path))[0], **exp}
    if medium:                                  # --medium: the same file through another medium
        exp.update(medium=medium, name=f"{exp['name']}-{medium}")
    unknown = set(exp) - TOP_KEYS
    if unknown:
        raise ExperimentError(f"{path}: unknown setting(s) {', '.join(sorted(unknown))} "
                              f"(known: {', '.join(sorted(TOP_KEYS))})")
    media = exp.get("medium")
    exp["media"] = media if isinstance(media, list) else [media]
    if not exp["media"] or any(m not in MEDIA for m in exp["media"]):
        raise ExperimentError(f"{path}: medium = {media!r}: one of {', '.join(MEDIA)} or a list of them")
    if exp["mtu"] not in (1024, 4096):
        raise ExperimentError(f"{path}: mtu = {exp['mtu']}: 1024 or 4096")
    exp["levels"] = [level(path, i, lv) for i, lv in enumerate(exp.get("levels") or [])]
    exp["workloads"] = [w for i, t in enumerate(exp.get("workload") or []) for w in expand(path, i, t)]
    if any(lv["x"] is None for lv in exp["levels"]):       # not all plain loss: the plots name them
        for i, lv in enumerate(exp["levels"]):
            lv["x"], lv["tick"] = float(i), lv["name"]
    if not exp["levels"] or not exp["workloads"]:
        raise ExperimentError(f"{path}: needs `levels` and at least one [[workload]]")
    if any(w["peer"] == "linux" for w in exp["workloads"]) and exp["media"] != ["linkemu"]:
        raise ExperimentError(f"{path}: a workload with peer = \"linux\" needs medium = \"linkemu\": "
                              f"with the netem box the Linux guest is the medium itself, not a peer")
    return exp


def level(path, i, lv):
    """One impairment level: a netem spec for both directions, or a table
    with a2b / b2a (and optionally name, x: its place on the plots' axis)."""
    if isinstance(lv, str):
        lv = {"a2b": lv, "b2a": lv}
    if not isinstance(lv, dict) or set(lv) - {"name", "a2b", "b2a", "both", "x"}:
        raise ExperimentError(f"{path}: levels[{i}]: a netem spec or a table of name, a2b, b2a, both, x")
    a2b, b2a = lv.get("a2b", lv.get("both", "")), lv.get("b2a", lv.get("both", ""))
    name = lv.get("name") or (a2b if a2b == b2a else f"a2b {a2b or '-'} / b2a {b2a or '-'}") or "clean"
    m = re.fullmatch(r"loss (?:random )?([\d.]+)%(?: seed \d+)?", b2a or a2b or "")
    x = lv.get("x", float(m.group(1)) if m else (0.0 if not (a2b or b2a) else None))
    return {"name": name, "a2b": a2b, "b2a": b2a, "x": x}


def expand(path, i, table):
    """The workloads of one [[workload]] table: every combination of its
    list-valued fields, each checked and given its defaults."""
    keys = list(table)
    values = [v if isinstance(v, list) else [v] for v in table.values()]
    for combo in itertools.product(*values):
        w = dict(zip(keys, combo))
        tool = w.get("tool")
        if tool not in TOOLS:
            raise ExperimentError(f"{path}: workload[{i}]: tool = {tool!r}: one of {', '.join(TOOLS)}")
        if w.setdefault("mode", "gbn") not in MODES:
            raise ExperimentError(f"{path}: workload[{i}]: mode = {w['mode']!r}: gbn or sr")
        unknown = set(w) - {"tool", "op", "size", "iters", "depth", "mode", "chunk", "peer", "peer_role"}
        if unknown:
            raise ExperimentError(f"{path}: workload[{i}]: unknown field(s) {', '.join(sorted(unknown))}")
        peer(path, i, w)
        w.setdefault("op", "write" if tool != "rdmacp" else "")
        if w["op"] not in OPS[tool]:
            raise ExperimentError(f"{path}: workload[{i}]: {tool} op = {w['op']!r}: one of {', '.join(OPS[tool])}")
        w.setdefault("size", 65536)
        if tool == "rdma_bw":
            w.setdefault("iters", rdma_sweep.iters_for(w["size"], COUNT_BUDGET))
        elif tool == "rdma_lat":
            w.setdefault("iters", LAT_ITERS)
        yield w


def peer(path, i, w):
    """A workload's peer (default xv6) and, against the Linux guest's
    xrpeer, the role xrpeer plays (default server): rdma_bw with go-back-N
    only (xrpeer speaks rdma_bw's protocol; rxe has no selective repeat)."""
    if w.setdefault("peer", "xv6") not in PEERS:
        raise ExperimentError(f"{path}: workload[{i}]: peer = {w['peer']!r}: one of {', '.join(PEERS)}")
    if w["peer"] == "xv6":
        if "peer_role" in w:
            raise ExperimentError(f"{path}: workload[{i}]: peer_role needs peer = \"linux\"")
        w["peer_role"] = ""
        return
    w.setdefault("peer_role", "server")
    if w["peer_role"] not in PEER_ROLES:
        raise ExperimentError(f"{path}: workload[{i}]: peer_role = {w['peer_role']!r}: one of {', '.join(PEER_ROLES)}")
    if w["tool"] != "rdma_bw" or w["mode"] != "gbn":
        raise ExperimentError(f"{path}: workload[{i}]: peer = \"linux\" runs rdma_bw with mode gbn only "
                              f"(not {w['tool']} {w['mode']}): xrpeer speaks rdma_bw's protocol, rxe has no "
                              "selective repeat")


def workload_name(w):
    return " ".join(str(x) for x in (w["tool"], w.get("op"), w["size"], w["mode"],
                                     f"vs linux {w['peer_role']}" if w.get("peer") == "linux" else "",
                                     f"d{w['depth']}" if w.get("depth") else "", f"c{w['chunk']}" if w.get("chunk")
                                     else "") if x != "")


def plan(exp):
    """Every run in the order they go: medium by medium, repeat by repeat
    within a medium, level by level within a repeat (so a slow spell of the
    host lands on every level), workloads within a level."""
    runs = []
    for m in exp["media"]:
        for r in range(exp["repeats"]):
            for li, lv in enumerate(exp["levels"]):
                for wi, w in enumerate(exp["workloads"]):
                    runs.append({"run_id": f"{m}-r{r}-l{li}-w{wi}", "cell": f"{m}-l{li}-w{wi}", "repeat": r,
                                 "li": li, "level": lv, "workload": w,
                                 "medium": LINKEMU_LINUX if w["peer"] == "linux" else MEDIUM[m]})
    return runs


# ---- media ----

class Linkemu:
    """linkemu between the guests: levels through its control socket, its
    per-direction counters (frames in and out, dropped, duplicated, reordered)."""
    name = bed = "linkemu"

    def testbed(self, exp, tag):
        return Testbed(2, name=f"exp-{tag}", extra_append=mtu_append(exp))

    def set_level(self, tb, lv, seed):
        for d in ("a2b", "b2a"):
            tb.set_spec(d, f"{lv[d]} seed {seed}" if lv[d] else "")

    def counters(self, tb):
        st = tb.stats()["directions"]
        return {f"{d}_{k}": v for d, n in (("a2b", st[0]), ("b2a", st[1]))
                for k, v in (("in", n["frames_in"]), ("out", n["frames_out"]), ("dropped", n["dropped"]["total"]),
                             ("duplicated", n["duplicated"]), ("reordered", n["reordered"]))}


class NetemBox:
    """The Linux netem box between the guests: levels by `tc qdisc replace`,
    netem's sent and dropped counters (no seeds: netem draws its own)."""
    name = bed = "netem"

    def testbed(self, exp, tag):
        return Testbed(2, name=f"exp-{tag}", netem_box=(None, None), extra_append=mtu_append(exp))

    def set_level(self, tb, lv, seed):
        for d in ("a2b", "b2a"):
            tb.box.set_netem(d, lv[d] or None)

    def counters(self, tb):
        out = {}
        for d, dev in (("a2b", "eth1"), ("b2a", "eth0")):
            try:
                sent, dropped = run_netem.qdisc_counts(tb.box, dev)
            except GuestError:          # no qdisc counters: nothing crossed it yet
                sent, dropped = 0, 0
            out.update({f"{d}_in": sent + dropped, f"{d}_out": sent, f"{d}_dropped": dropped})
        return out


class LinkemuLinux(Linkemu):
    """linkemu between xv6 (guest 0, 10.0.0.1: its frames cross a2b) and
    the Linux Soft-RoCE guest (10.0.0.2, xrpeer), set up as
    tests/interop/run_interop.py's beds are: the Linux eth0 MTU makes rxe's
    active MTU the path MTU."""
    bed = "linkemu+linux"

    def testbed(self, exp, tag):
        return Testbed(1, linux=1, linux_mtu=1500 if exp["mtu"] <= 1024 else 9000, name=f"exp-{tag}",
                       extra_append=mtu_append(exp))


MEDIUM = {"linkemu": Linkemu(), "netem": NetemBox()}
LINKEMU_LINUX = LinkemuLinux()


def mtu_append(exp):
    return f"rdma_mtu={exp['mtu']}" if exp["mtu"] != 1024 else ""


# ---- workloads ----

def run_perf(tb, w, timeout):
    """rdma_bw or rdma_lat with --stats on both sides: the result columns
    and both QPs' counters."""
    opts = (f"-t {w['op']} -s {w['size']} -n {w['iters']} -e --stats{MODES[w['mode']]}"
            + (f" -d {w['depth']}" if w.get("depth") else ""))
    cmd, out, server = rdma_sweep.lat_pair(tb, opts, "--stats", tool=w["tool"], timeout=timeout)
    row = {}
    if w["tool"] == "rdma_bw":
        r = perftable.bw_row(out)
        if r:
            row = {"goodput_MBps": round(r["bw_avg_MiBps"] * MIB / 1e6, 3),
                   "bw_peak_MBps": round(r["bw_peak_MiBps"] * MIB / 1e6, 3), "msg_rate_Mpps": r["mpps"]}
        row["nic_dropped"] = perftable.nic_drops(out)
    else:
        row = perftable.lat_row(out) or {}
    cli, srv = perftable.qp_stats(out), perftable.qp_stats(server)
    if not row or not cli or not srv:
        raise GuestError(f"{cmd}: no result or no counters in its output: {out.strip()[-400:]}")
    return row, cli, srv


def run_peer(tb, w, timeout):
    """xv6's rdma_bw (--stats) against the Linux guest's xrpeer
    (run_interop.bw_pair): the result columns from the client, whichever
    it is, and xv6's QP counters as the client's or the server's; the
    Linux side's are None (rxe keeps no per-QP counters)."""
    xv6, lnx = tb.guests[0], tb.guests[1]
    xv6_client = w["peer_role"] == "server"
    opts = f"-t {w['op']} -s {w['size']} -n {w['iters']}" + (f" -d {w['depth']}" if w.get("depth") else "")
    out, mine = run_interop.bw_pair(xv6, lnx, "xv6" if xv6_client else "linux", opts,
                                    "-e --stats" if xv6_client else "--stats", timeout=timeout)
    r, qp = perftable.bw_row(out), perftable.qp_stats(mine)
    if not r or not qp:
        raise GuestError(f"rdma_bw against xrpeer bw-{w['peer_role']}: no result or no xv6 counters: "
                         f"{(out if not r else mine).strip()[-400:]}")
    row = {"goodput_MBps": round(r["bw_avg_MiBps"] * MIB / 1e6, 3),
           "bw_peak_MBps": round(r["bw_peak_MiBps"] * MIB / 1e6, 3), "msg_rate_Mpps": r["mpps"],
           "nic_dropped": perftable.nic_drops(mine)}
    return (row, qp, None) if xv6_client else (row, None, qp)


def rdmacp_counters(text):
    m = RDMACP_QP.search(text)
    if not m:
        return None
    pairs = dict(zip(*[iter(m.group(1).split())] * 2))
    return {RDMACP_NAMES[k]: int(v) for k, v in pairs.items() if k in RDMACP_NAMES}


def run_rdmacp(tb, w, timeout):
    """rdmacp send of a SIZE-byte file guest 1 -> guest 0 (made once per
    test bed with rdmacp mkfile), the copy removed afterwards."""
    a, b = tb.guests[:2]
    src = f"exp{w['size']}"
    made = getattr(tb, "exp_files", set())
    if src not in made:
        out = b.run(f"rdmacp mkfile {src} {w['size']} 1", timeout=timeout)
        if "made" not in out:
            raise GuestError(f"rdmacp mkfile {src}: {out.strip()}")
        tb.exp_files = made | {src}
    chunk = f" -c {w['chunk']}" if w.get("chunk") else ""
    a.send(f"rdmacp recv{chunk}{MODES[w['mode']]}")
    a.expect(r"rdmacp: waiting on port", timeout=60)
    cmd = f"rdmacp send {src} {tb.ip(0)} copy{chunk}{MODES[w['mode']]}"
    out = b.run(cmd, timeout=timeout)
    server = a.expect(RDMACP_QP.pattern, timeout=120).group(0)
    a.expect(r"\$ $", timeout=120)
    a.run("rm copy", timeout=60)
    sent, cli, srv = RDMACP_SENT.search(out), rdmacp_counters(out), rdmacp_counters(server)
    if not sent or sent.group(3) != "OK" or not cli or not srv:
        raise GuestError(f"{cmd}: {out.strip()[-400:]}")
    return {"goodput_MBps": int(sent.group(4)) / 1000}, cli, srv


def data_frames(exp, w):
    """The RDMA frames that carry the payload once, the wire cost's unit:
    a message takes ceil(size / path MTU) frames; rdma_lat's WRITE and SEND
    ping-pongs send every message both ways."""
    per = max(1, math.ceil(w["size"] / exp["mtu"]))
    if w["tool"] == "rdmacp":
        return per
    both = 2 if w["tool"] == "rdma_lat" and w["op"] != "read" else 1
    return per * w["iters"] * both


def one_run(exp, medium, tb, run, seed):
    """One run on a booted test bed: the row's measured columns."""
    w = run["workload"]
    medium.set_level(tb, run["level"], seed)
    before = medium.counters(tb)
    fn = run_peer if w["peer"] == "linux" else run_rdmacp if w["tool"] == "rdmacp" else run_perf
    row, cli, srv = fn(tb, w, exp["timeout"])
    after = medium.counters(tb)
    row.update({f"{s}_{k}": qp.get(k) for s, qp in (("cli", cli), ("srv", srv)) if qp for k in QP_KEYS})
    row.update({k: after[k] - before[k] for k in after})
    row["data_frames"] = data = data_frames(exp, w)
    if cli and srv:             # both ends are xv6: the wire cost and each side's losses
        wire = cli["tx_frames"] + srv["tx_frames"]
        row.update({"wire_frames": wire, "frames_per_data_frame": round(wire / data, 4),
                    # the client is guest 1: its frames cross b2a, the server's a2b
                    "qp_lost_b2a": cli["tx_frames"] - srv["rx_frames"],
                    "qp_lost_a2b": srv["tx_frames"] - cli["rx_frames"]})
    for d in ("a2b", "b2a"):
        row[f"medium_lost_{d}"] = row[f"{d}_in"] - row[f"{d}_out"]
    return row


# ---- the output directory ----

def git_commit():
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                               capture_output=True, text=True).stdout.strip()
        return head + ("-dirty" if dirty else "")
    except OSError:
        return "unknown"


def open_out(out, path, exp, restart):
    """The runs already in OUT (to resume), after checking that they are
    runs of this experiment file; writes meta.json."""
    text = open(path).read()
    digest = settings_digest(text)
    meta_path, runs_path = os.path.join(out, "meta.json"), os.path.join(out, "runs.csv")
    os.makedirs(os.path.join(out, "logs"), exist_ok=True)
    if restart and os.path.exists(runs_path):
        os.remove(runs_path)
    old = json.load(open(meta_path)) if os.path.exists(meta_path) else None
    if old and os.path.exists(runs_path) and old.get("experiment_sha256") != digest:
        raise ExperimentError(f"{out} holds runs of other settings than {path}'s: "
                              "--restart to discard them, or --out elsewhere")
    sessions = (old or {}).get("sessions", []) if os.path.exists(runs_path) else []
    sessions.append({"command": shlex.join([sys.executable] + sys.argv), "cwd": os.getcwd(),
                     "started_utc": utc(), "commit": git_commit(), "host_load": os.getloadavg(),
                     "host_cpus": os.cpu_count()})
    meta = {"experiment": os.path.relpath(path, REPO), "experiment_sha256": digest, "experiment_text": text,
            "name": exp["name"], "medium": " and ".join(exp["media"]), "repeats": exp["repeats"], "base_seed": exp["seed"],
            "seeds": "linkemu: seed BASE + repeat on every impaired direction of every run (column seed); "
                     "netem: the kernel's own random draws (no seed)", "sessions": sessions}
    with open(meta_path, "w") as f:
        json.dump(meta, f, indent=1)
    done = {}
    if os.path.exists(runs_path):
        for r in csv.DictReader(open(runs_path)):
            if r["status"] == "ok" or int(r["attempt"]) >= 2:
                done[r["run_id"]] = r
    return done, meta


def settings_digest(text):
    """The SHA-256 of an experiment file's settings (not its comments or
    layout): a rerun resumes only the runs of the same settings."""
    return hashlib.sha256(json.dumps(tomllib.loads(text), sort_keys=True).encode()).hexdigest()


def utc():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def append_row(out, row):
    path = os.path.join(out, "runs.csv")
    new = not os.path.exists(path)
    with open(path, "a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        if new:
            w.writeheader()
        w.writerow(row)


def save_log(out, tb, run, attempt, error):
    """The failed run's error and the tail of every guest's console."""
    rel = os.path.join("logs", f"{run['run_id']}-attempt{attempt}.log")
    with open(os.path.join(out, rel), "w") as f:
        f.write(f"{run['run_id']} ({workload_name(run['workload'])} at {run['level']['name']}): {error}\n")
        for g in (tb.guests + ([tb.box] if tb.box else [])) if tb else []:
            f.write(f"\n---- {g.name} ----\n{g.output()[-6000:]}\n")
    return rel


# ---- the loop ----

class Bed:
    """The test bed runs share: started on first use, again after a
    failure, for another medium, and for every level when levels go to
    fresh guests."""

    def __init__(self, exp):
        self.exp, self.tb, self.key, self.n = exp, None, None, 0

    def get(self, medium, key):
        if self.tb is None or (medium.bed, key) != self.key:
            self.close()
            self.n += 1
            self.tb = medium.testbed(self.exp, f"{self.exp['name'][:12]}{self.n}-")
            self.tb.boot(timeout=300)
            self.key = (medium.bed, key)
        return self.tb

    def close(self):
        if self.tb:
            self.tb.kill()
        self.tb = None


def run_all(exp, out, done, max_runs):
    """Runs every planned run not in done; returns the number it ran.
    Raises KeyboardInterrupt on Ctrl-C (the finished runs are saved)."""
    todo = [r for r in plan(exp) if r["run_id"] not in done]
    cells = {r["cell"] for r in plan(exp)}
    progress("experiment", f"{exp['name']}: {len(cells)} cells x {exp['repeats']} repeats through "
             f"{' and '.join(exp['media'])}; {len(done)} runs done before, {len(todo)} to go")
    bed, took, ran = Bed(exp), [], 0
    try:
        for i, run in enumerate(todo):
            if max_runs is not None and ran >= max_runs:
                progress("experiment", f"stopping after {ran} runs (--max-runs); rerun to resume")
                break
            t0 = time.monotonic()
            row = attempt_run(exp, out, bed, run)
            done[run["run_id"]] = row
            ran += 1
            took.append(time.monotonic() - t0)
            report_progress(exp, run, row, done, cells, todo[i + 1:], took)
    finally:
        bed.close()
    return ran


def attempt_run(exp, out, bed, run):
    """One run, tried a second time on fresh guests if the first fails;
    every attempt is a row."""
    medium = run["medium"]
    seed = exp["seed"] + run["repeat"]
    key = "live" if exp["live"] else (run["repeat"], run["li"])
    for attempt in (1, 2):
        row = {"run_id": run["run_id"], "attempt": attempt, "cell": run["cell"], "repeat": run["repeat"],
               "medium": medium.name, "level": run["level"]["name"], "a2b": run["level"]["a2b"],
               "b2a": run["level"]["b2a"], "seed": seed if medium.name == "linkemu" else "",
               "mtu": exp["mtu"], "live": int(exp["live"]), "started_utc": utc(),
               "host_load": round(os.getloadavg()[0], 2), **run["workload"]}
        t0 = time.monotonic()
        tb = None
        try:
            tb = bed.get(medium, key)
            row.update(one_run(exp, medium, tb, run, seed))
            row.update(status="ok", seconds=round(time.monotonic() - t0, 1))
            append_row(out, row)
            return row
        except GuestError as e:
            why = str(e).splitlines()[0][:300]
            row.update(status="failed", seconds=round(time.monotonic() - t0, 1), error=why,
                       log=save_log(out, tb or bed.tb, run, attempt, e))
            append_row(out, row)
            progress("experiment", f"run {run['run_id']} failed (attempt {attempt}): {why}; log {row['log']}"
                     + ("; again on fresh guests" if attempt == 1 else "; going on without it"))
            bed.close()
    return row


def report_progress(exp, run, row, done, cells, rest, took):
    """The progress line; the time left counts each run still to go at its
    cell's mean so far (a go-back-N run at 10 % loss takes 50 times a
    clean one), else at this session's mean run."""
    per_cell, secs = {}, {}
    for r in done.values():
        per_cell[r["cell"]] = per_cell.get(r["cell"], 0) + 1
        secs.setdefault(r["cell"], []).append(float(r["seconds"] or 0))
    full = sum(1 for c in cells if per_cell.get(c, 0) >= exp["repeats"])
    mean = sum(took) / len(took)
    left, eta = len(rest), sum(sum(secs[r["cell"]]) / len(secs[r["cell"]]) if r["cell"] in secs else mean
                               for r in rest)
    what = (f"{row.get('goodput_MBps')} MB/s" if row.get("goodput_MBps") not in (None, "") else
            f"t_typical {row.get('t_typical_us')} us")
    progress("experiment", f"cells {full}/{len(cells)} done, {left} runs left, ~{eta / 60:.1f} min left | "
             f"{run['run_id']} {workload_name(run['workload'])} at {run['level']['name']}: "
             f"{row['status']}, {what if row['status'] == 'ok' else row.get('error')}, {row['seconds']} s")


def report(out):
    """summary.md, summary.csv and the plots (bench/experiment_report.py),
    with an interpreter that has matplotlib."""
    cmd = [sys.executable, os.path.join(HERE, "experiment_report.py"), out]
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        if os.path.exists("/usr/bin/python3"):
            cmd[0] = "/usr/bin/python3"
    return subprocess.run(cmd).returncode


def stop(sig, frame):
    raise KeyboardInterrupt


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="Writing an experiment file: docs/experiments.md; examples: experiments/",
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file", nargs="?", help="the experiment file (TOML)")
    ap.add_argument("--out", help="the results directory (default build/experiments/NAME)")
    ap.add_argument("--max-runs", type=int, metavar="N", help="stop after N runs this time (rerun to resume)")
    ap.add_argument("--medium", choices=MEDIA, help="run through this medium instead of the file's "
                    "(results in build/experiments/NAME-MEDIUM)")
    ap.add_argument("--restart", action="store_true", help="discard the runs already in OUT")
    ap.add_argument("--report", metavar="DIR", help="only write DIR's summary and plots again from its runs.csv")
    args = ap.parse_args()
    if args.report:
        return report(args.report)
    if not args.file:
        ap.error("an experiment file, e.g. experiments/loss-sweep.toml")
    try:
        exp = load(args.file, args.medium)
        out = args.out or os.path.join(REPO, "build", "experiments", exp["name"])
        done, _ = open_out(out, args.file, exp, args.restart)
    except (ExperimentError, OSError) as e:
        print(f"experiment: {e}", file=sys.stderr)
        return 2
    total = len(plan(exp))
    signal.signal(signal.SIGTERM, stop)       # kill PID: as Ctrl-C
    try:
        run_all(exp, out, done, args.max_runs)
    except KeyboardInterrupt:
        progress("experiment", f"interrupted: {len(done)} of {total} runs saved in {out}/runs.csv; "
                 "the same command resumes")
        if done:
            report(out)                 # the summary of the runs so far
        return 130
    report(out)
    failed = sum(1 for r in done.values() if r["status"] != "ok")
    progress("experiment", f"{len(done)} of {total} runs in {out}/runs.csv ({failed} failed); "
             f"summary {out}/summary.md")
    return 0 if len(done) == total else 3


if __name__ == "__main__":
    sys.exit(main())
