#!/usr/bin/env python3
"""test_goals.py: bench/rdma/goals.py on made-up bench outputs.

Checks that each goal's verdict follows its value (met, missed, n/a), that a
file written before the run is "stale" and never "met", that requester drops
count the QP's and the NIC's (duplicates shown beside, not counted), that
each bench-rxe bed (path MTU) gets its own rxe rows, and that the section is replaced in place.
Prints "test-goals: N passed, M failed" (tests/harness/suite.py reads it).
"""
import csv
import os
import shutil
import sys
import tempfile
import time
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "bench", "rdma"))
import goals  # noqa: E402

MIB = 1 << 20


def write(d, name, rows):
    keys = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    with open(os.path.join(d, name), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)


def bw(cfg, op, size, loss, mbps, qp_drops=0, nic_drops=0, ratio=None):
    return {"config": cfg, "op": op, "size": size, "loss_pct": loss, "goodput_MBps": mbps,
            "dropped_all": qp_drops, "nic_dropped_all": nic_drops,
            "round_ratios": "" if ratio is None else f"{ratio} {ratio}", "ratio_median": "" if ratio is None else ratio}


def run(d, since=0):
    src = goals.Sources(d, since)
    t = goals.Table(src)
    for part in (goals.bw_goals, goals.qp_goals, goals.rxe_goals, goals.msgrate_goals, goals.lat_goals,
                 goals.sim_goals):
        part(t, src)
    return {w.split(" (")[0]: (v, k) for w, v, g, k, s in t.rows}, t


class Goals(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        rows = []
        for mtu in (1024, 4096):
            rows += [bw(f"sr-mtu{mtu}", "read", MIB, 0, 40.0), bw(f"sr-mtu{mtu}", "write", MIB, 0, 42.0),
                     bw(f"sr-mtu{mtu}", "read", MIB, 1, 38.0, ratio=0.95), bw(f"sr-mtu{mtu}", "read", MIB, 5, 36.0, ratio=0.5),
                     bw(f"mtu{mtu}", "write", 65536, 0, 30.0)]
        write(self.dir, "rdma-bw.csv", rows)
        # the ceiling's rounds, each a burst and a steady WRITE right after it
        write(self.dir, "rdma-ceiling.csv", [{"config": "mtu1024", "roce_payload_MBps_median": 33.0,
                                              "roce_round_ratios": "0.7 0.91 0.95", "roce_ratio_median": 0.91},
                                             {"config": "mtu4096", "roce_payload_MBps_median": 60.0,
                                              "roce_round_ratios": "0.5 0.4 0.6", "roce_ratio_median": 0.5}])

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_goals_verdict_follows_value(self):
        got, _ = run(self.dir)
        self.assertEqual(got["1 MiB READ, selective repeat, 1 % loss / lossless, MTU 1024"], ("0.95", "met"))
        self.assertEqual(got["1 MiB READ, selective repeat, 5 % loss / lossless, MTU 1024"], ("0.50", "missed"))
        self.assertEqual(got["1 MiB READ / 1 MiB WRITE, lossless, selective repeat, MTU 4096"], ("0.95", "met"))
        self.assertEqual(got["steady 64 KiB WRITE / RoCE frame ceiling, MTU 1024"], ("0.91", "met"))
        self.assertEqual(got["steady 64 KiB WRITE / RoCE frame ceiling, MTU 4096"], ("0.50", "missed"))

    def test_goals_missing_file_is_missing_not_met(self):
        got, _ = run(self.dir)
        self.assertEqual(got["QP scaling"], ("n/a", "missing"))
        self.assertEqual(got["latency matrix"], ("n/a", "missing"))

    def test_goals_qp_scaling_takes_the_rounds_ratios(self):
        one = {"mode": "busy", "qps": 1, "bw_MiBps": 40.0, "cpu_us_per_frame": 26.0}
        busy = {"mode": "busy", "qps": 256, "bw_MiBps": 38.0, "cpu_us_per_frame": 30.0,
                "bw_round_ratios": "0.8 0.95 0.97", "bw_ratio_median": 0.95}
        idle = {"mode": "idle", "qps": 256, "bw_MiBps": 39.0, "cpu_us_per_frame": 30.0,
                "cpu_round_ratios": "1.2 1.05 1.0", "cpu_ratio_median": 1.05}
        write(self.dir, "qp-scale.csv", [one, busy, idle])
        got, _ = run(self.dir)
        # the medians' ratios would be 0.95 and 1.15: the rounds' ratios decide
        self.assertEqual(got["goodput, 256 busy QPs / 1 QP"], ("0.95", "met"))
        self.assertEqual(got["CPU per frame, 1 busy + 255 idle QPs / 1 QP"], ("1.05", "met"))
        for r in (busy, idle):          # a file without the rounds' columns: the medians' ratio
            for k in [k for k in r if "ratio" in k]:
                del r[k]
        write(self.dir, "qp-scale.csv", [one, busy, idle])
        got, _ = run(self.dir)
        self.assertEqual(got["CPU per frame, 1 busy + 255 idle QPs / 1 QP"], ("1.15", "missed"))

    def test_goals_requester_drops_count_qp_and_nic(self):
        rows = [bw("sr-mtu1024", "read", MIB, 0, 40.0, qp_drops=0, nic_drops=3),
                bw("sr-mtu1024", "read", MIB, 1, 30.0, qp_drops=99)]
        rows[0]["dup_all"], rows[1]["dup_all"] = 5, 7
        write(self.dir, "rdma-bw.csv", rows)
        got, t = run(self.dir)
        self.assertEqual(got["frames the requester dropped, every lossless xv6-xv6 run"], ("3", "missed"))
        # duplicates received are shown beside, not counted as drops
        label = [w for w, *_ in t.rows if w.startswith("frames the requester dropped")][0]
        self.assertIn("QP 0 + NIC 3; duplicates received 5", label)

    def test_goals_old_file_is_stale(self):
        old = time.time() - 3600
        os.utime(os.path.join(self.dir, "rdma-bw.csv"), (old, old))
        got, _ = run(self.dir, since=time.time() - 60)
        self.assertEqual(got["1 MiB READ, selective repeat, 1 % loss / lossless, MTU 1024"][1], "stale")
        # the ceiling's rounds come from a fresh file
        self.assertEqual(got["steady 64 KiB WRITE / RoCE frame ceiling, MTU 1024"][1], "met")
        os.utime(os.path.join(self.dir, "rdma-ceiling.csv"), (old, old))
        os.utime(os.path.join(self.dir, "rdma-bw.csv"))
        got, _ = run(self.dir, since=time.time() - 60)
        self.assertEqual(got["steady 64 KiB WRITE / RoCE frame ceiling, MTU 1024"][1], "stale")
        self.assertEqual(got["1 MiB READ, selective repeat, 1 % loss / lossless, MTU 1024"][1], "met")

    def test_goals_rxe_each_path_mtu_its_own_row(self):
        def rxe_row(mtu, loss, tool, mbps, cell="WRITE 64 KiB"):
            return {"path_mtu": mtu, "round": 1, "loss_pct": loss, "cell": cell, "tool": tool, "goodput_MBps": mbps}
        rows = [rxe_row(4096, 0, "rxe", 17.0), rxe_row(4096, 0, "sr", 100.0),
                rxe_row(1024, 1, "rxe", 3.0), rxe_row(1024, 1, "sr", 33.0),
                rxe_row(1024, 5, "sr", 30.0), rxe_row(1024, 0, "rxe", 30.0), rxe_row(1024, 0, "sr", 33.0)]
        write(self.dir, "rxe-compare.csv", rows)
        got, _ = run(self.dir)
        key = "WRITE 64 KiB, xv6 selective repeat / rxe-rxe, {} % loss, path MTU {}"
        self.assertEqual(got[key.format(0, 4096)], ("5.88", "met"))
        self.assertEqual(got[key.format(0, 1024)], ("1.10", "missed"))
        self.assertEqual(got[key.format(1, 1024)], ("11.00", "met"))
        # no rxe run at 5 % in the MTU 1024 bed: not measured, whatever the other bed has
        self.assertEqual(got[key.format(5, 1024)], ("n/a", "n/a"))
        # a file from before the beds (no path_mtu column) was measured at 4096
        for r in rows:
            del r["path_mtu"]
        write(self.dir, "rxe-compare.csv", rows[:2])
        got, _ = run(self.dir)
        self.assertEqual(got[key.format(0, 4096)], ("5.88", "met"))
        self.assertEqual(got[key.format(0, 1024)], ("n/a", "n/a"))

    def test_goals_rxe_loss_at_mtu4096_replaced_by_own_lossless(self):
        """Issue 40: at path MTU 4096 the WRITE goals under loss are
        selective repeat's goodput over its own lossless one (rdma-bw.csv),
        not rxe ratios that would need xv6 above its lossless goodput."""
        write(self.dir, "rxe-compare.csv", [
            {"path_mtu": 4096, "round": 1, "loss_pct": 1, "cell": "WRITE 64 KiB", "tool": t, "goodput_MBps": v}
            for t, v in (("rxe", 9.0), ("sr", 72.0))])
        write(self.dir, "rdma-bw.csv", [
            {"config": "sr-mtu4096", "op": "write", "size": 65536, "loss_pct": loss, "goodput_MBps": v,
             "ratio_median": q, "round_ratios": ""}
            for loss, v, q in ((0, 86.0, 1.0), (1, 84.0, 0.97), (5, 60.0, 0.70))])
        got, _ = run(self.dir)
        self.assertNotIn("WRITE 64 KiB, xv6 selective repeat / rxe-rxe, 1 % loss, path MTU 4096", got)
        self.assertEqual(got["64 KiB WRITE, selective repeat, 1 % loss / lossless, MTU 4096"], ("0.97", "met"))
        self.assertEqual(got["64 KiB WRITE, selective repeat, 5 % loss / lossless, MTU 4096"], ("0.70", "missed"))

    def test_goals_write_above_every_ceiling_round_is_flagged(self):
        write(self.dir, "rdma-ceiling.csv", [{"config": "mtu1024", "roce_ratio_median": 0.91, "write_over_ceiling": ""},
                                             {"config": "mtu4096", "roce_ratio_median": 1.07,
                                              "write_over_ceiling": "91.2 90.5"}])
        got, _ = run(self.dir)
        key = "steady 64 KiB WRITE rounds above every RoCE ceiling round, MTU {}"
        self.assertEqual(got[key.format(1024)], ("0", "met"))
        self.assertEqual(got[key.format(4096)], ("2", "missed"))

    def test_goals_msgrate_against_ceiling_and_rxe(self):
        def m(op, tool, rate, size=64):
            return {"round": 1, "op": op, "size": size, "tool": tool, "messages": 1000, "msgs_per_s": rate}
        rows = [m("write", "poll", 60000), m("write", "rxe", 10000), m("send", "poll", 30000),
                m("read", "poll", 20000), m("read", "rxe", 10000), m("write", "event", 101000, size=8),
                m("ceiling", "roce-blast", 90000), m("ceiling", "roce-blast", 100000)]
        write(self.dir, "msgrate.csv", rows)
        got, _ = run(self.dir)
        # the ceiling is the median of its rounds (95000); a cell above every round is flagged
        self.assertEqual(got["64 B WRITE message rate, xv6 polling / RoCE 64 B-frame ceiling"], ("0.63", "met"))
        self.assertEqual(got["64 B WRITE message rate, xv6 polling / rxe"], ("6.00", "met"))
        self.assertEqual(got["64 B SEND message rate, xv6 polling / RoCE 64 B-frame ceiling"], ("0.32", "missed"))
        self.assertEqual(got["64 B READ message rate, xv6 polling / rxe"], ("2.00", "missed"))
        self.assertEqual(got["message-rate cells above every RoCE ceiling round"], ("1", "missed"))

    def test_goals_section_replaced_in_place(self):
        path = os.path.join(self.dir, "rdma-summary.md")
        with open(path, "w") as f:
            f.write("# RDMA benchmarks\n\nCommand: x.\n\n## Ratios\n\nbody\n")
        _, t = run(self.dir)
        for _ in range(2):
            goals.rxe_compare.write_summary(self.dir, goals.section(t, 0), goals.SECTION, goals.SECTION_END,
                                            at_top=True)
        with open(path) as f:
            text = f.read()
        self.assertEqual(text.count(goals.SECTION), 1)
        self.assertLess(text.index("Command: x."), text.index(goals.SECTION))
        self.assertLess(text.index(goals.SECTION_END), text.index("## Ratios"))


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=1).result
    failed = len(result.failures) + len(result.errors)
    print(f"test-goals: {result.testsRun - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
