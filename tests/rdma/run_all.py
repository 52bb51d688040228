#!/usr/bin/env python3
"""run_all.py: make test-rdma. Runs every RDMA test step in turn, passes
its output through, and ends with one line "N passed, M failed" over all
of them (a step's own "N passed, M failed" line counts its tests; a step
without one counts as one test by its exit status).

Steps (times measured on the 2-core build machine, TCG):
  rdmatest, 1 and 3 CPUs     loopback: every opcode, error path, limits
  srqtest                    loopback: 64 connections on one SRQ, its limit, RNR, ERR, exit
  rdmanet                    two guests, 0 % and 1 % loss, rdmanet_test + rdmacp
  matrix                     opcode x size, byte-exact, under loss 0/1/5 %,
                             5 % with selective repeat, duplication,
                             reordering, corruption, a mid-run blackhole
  security                   [SEC-RAND-*] ids, ids across boots and processes,
                             getrandom, boot without virtio-rng, kill mid-transfer
  forge                      forged frames from a third linkemu port: bad ICRC,
                             PSN out of window, wrong R_Key, a stranger's DREQ
                             ([SEC-FORGE-*])
  cmtest                     rdmacmtest in one guest: rdma_cm between its processes,
                             the active side waiting in the verbs [IBCM-STATE-6]
  examples                   the rdma_cm examples (user/examples) on two guests,
                             0 % and 1 % loss, bytes checked on both ends;
                             librdmacm's unmodified rdma_server / rdma_client
                             (user/upstream/) exit 0 on both sides
  udping                     UD between two guests (user/bin/udping.c), 0 % and
                             1 % loss: every message answered, byte exact, what
                             went missing at most what linkemu dropped
  rping                      xv6's rping (Linux rping's protocol) between two
                             guests, -V at 64 B and 4 KiB, 0 % and 1 % loss; a
                             port nobody listens on; a size too small
  udaddy                     xv6's udaddy (RDMA_PS_UDP: SIDR_REQ / SIDR_REP,
                             then UD datagrams) between two guests, defaults
                             and -c 2 -C 5 -S 1000; a port nobody listens on
  perftest_r                 rdma_bw -R and rdma_lat -R (perftest's rdma_cm exchange)
                             between two guests, the comm connection's
                             SENDs in the order Linux's perftest sends them
  rmem                       the memory node rmemd and librmem (run_rmem.py): two
                             guests, 0 % and 1 % loss, every op and error,
                             isolation, a client's death, a server restart
  atomic                     the exactly-once counter (run_atomic.py --bed xv6):
                             atomcount's server on one guest, clients on two more,
                             FETCH_AND_ADD and CMP_AND_SWAP at 0, 1 and 5 % loss
  hostile                    rdmahostile (bad pointers, handles, limits, QP
                             transitions, exhaustion, kills of waiters), then
                             rdmafuzz for FUZZ_GUEST_SECONDS (default 60) with a
                             host-drawn seed; free pages must come back
  rmem_client                the kernel's client of a memory node against rmemd,
                             0 % and 1 % loss: rmemctl's self-test byte-checked,
                             two callers at once, the link down and the node
                             killed (io -1 within
                             the budget) and back (reconnect, old slots refused),
                             memtouch paging through it on a 48M guest
  rmem_paging                demand paging to rmemd (run_rmem_paging.py): a 48M
                             guest (its RAM from the device tree) runs memtouch
                             with twice its free memory, one and two processes,
                             0 % and 1 % loss, every word checked; paging
                             counters; rmemd killed mid-run: memtouch killed with
                             the message, the shell answers; usertests -q
                             under paging to the in-RAM test store
  rdmacp_16MiB_loss1         tests/rdma/demo.py --size 16 MiB at 1 % loss
  perf smoke                 rdma_bw / rdma_lat, two guests and loopback
  errors                     the tools' error messages: bad numbers, no answer,
                             unreachable, refused (tests/rdma/run_errors.py)
Usage: python3 tests/rdma/run_all.py [--skip NAME ...]
"""
import argparse
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PY = sys.executable


def steps():
    return [
        ("rdmatest_cpus1", [PY, f"{HERE}/run_rdmatest.py", "--cpus", "1"]),
        ("rdmatest_cpus3", [PY, f"{HERE}/run_rdmatest.py", "--cpus", "3"]),
        # srqtest's cases check the verbs' rules: granted sizes and capacities [SRQ-VERB-1],
        # ibv_query_srq [SRQ-VERB-2], resizing refused [SRQ-VERB-3], exit releases [SRQ-VERB-6]
        # (the hostile step's srq_* cases: foreign, destroyed and other-PD SRQs [SRQ-VERB-6])
        ("srqtest", [PY, f"{HERE}/run_rdmatest.py", "--prog", "srqtest"]),
        ("rdmanet", [PY, f"{HERE}/run_rdmanet.py"]),
        ("matrix", [PY, f"{HERE}/run_matrix.py"]),
        ("security", [PY, f"{HERE}/run_security.py"]),
        ("forge", [PY, f"{HERE}/run_forge.py"]),
        ("cmtest", [PY, f"{HERE}/run_cmtest.py"]),
        ("examples", [PY, f"{HERE}/run_examples.py"]),
        ("udping", [PY, f"{HERE}/run_udping.py"]),
        ("rping", [PY, f"{HERE}/run_rping.py"]),
        ("udaddy", [PY, f"{HERE}/run_udaddy.py"]),
        ("perftest_r", [PY, f"{HERE}/run_perftest_r.py"]),
        ("rmem", [PY, f"{HERE}/run_rmem.py"]),
        ("atomic", [PY, f"{HERE}/run_atomic.py", "--bed", "xv6"]),
        ("hostile", [PY, f"{HERE}/run_hostile.py"]),
        ("rmem_client", [PY, f"{HERE}/run_rmem_client.py"]),
        ("rmem_paging", [PY, f"{HERE}/run_rmem_paging.py"]),
        ("rdmacp_16MiB_loss1", [PY, f"{HERE}/demo.py", "--size", str(16 << 20), "--loss", "1%",
                                "--seed", os.environ.get("RDMA_TEST_SEED", "7")]),
        ("perf_smoke", [PY, f"{HERE}/run_perf.py", "--smoke"]),
        ("errors", [PY, f"{HERE}/run_errors.py"]),
    ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--skip", nargs="*", default=[])
    args = ap.parse_args()
    passed = failed = 0
    failures = []          # repeated at the end: a CI log shows only its tail
    t_all = time.monotonic()
    for name, cmd in steps():
        if name in args.skip:
            continue
        print(f"=== {name} (at {time.monotonic() - t_all:.0f} s)", flush=True)
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        last = None
        for line in proc.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            # a passing check may quote the failure it expected ("test X: OK (... FAIL ...)")
            if re.search(r"FAILED|\bFAIL\b|panic", line) and not re.match(r"test \S+: OK\b", line):
                failures.append(f"{name}: {line.strip()[:300]}")
            m = re.match(r"^(\d+) passed, (\d+) failed$", line.strip())
            if m:
                last = (int(m.group(1)), int(m.group(2)))
        status = proc.wait()
        if last is None:
            last = (1, 0) if status == 0 else (0, 1)
        elif status != 0 and last[1] == 0:
            last = (last[0], 1)
        if last[1] and not any(f.startswith(name + ":") for f in failures):
            failures.append(f"{name}: exit status {status}, no FAILED line (see its output above)")
        passed += last[0]
        failed += last[1]
        print(f"=== {name}: {last[0]} passed, {last[1]} failed, {time.monotonic() - t0:.0f} s", flush=True)
    print(f"=== test-rdma took {time.monotonic() - t_all:.0f} s")
    if failures:
        print("=== what failed (each line as the step printed it):")
        for f in failures:
            print(f"  {f}")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
