"""rmem_interop.py: the memory node rmemd and librmem across the two stacks
(docs/rmem.md, proto-spec/rmem.md): the same sources built for xv6 and
against Linux's rdma-core (tests/rdma/rmem.mk, in the Linux image's
overlay). Owns the checks of run_interop.py's "rmem" beds (one xv6 guest,
one Linux guest; clean and at 1 % seeded loss):

  interop_<bed>_rmem_<case>      rmemd on Linux (`rmemd -m 4 -l 3072`, rxe),
                                 xv6's rmemtest cases against it: every op
                                 and error, 16 requests in flight, isolation
                                 between two clients (rxe's remote access
                                 error for another client's, a forged, a
                                 freed rkey and a range past the region),
                                 a client that dies holding regions; on
                                 the lossy bed (rmemtest -l) a lost NAK may
                                 end the connection instead [RMEM-ISO-1]
                                 [RMEM-DATA-2] [RMEM-DATA-3] [RMEM-LIFE-1]
  interop_<bed>_rmem_example_xv6_client
                                 xv6's rmem_example against Linux's rmemd
  interop_<bed>_rmem_linux_counters
                                 Linux rmemd's counters at SIGTERM: every
                                 client ended, every region freed or reaped,
                                 the pool whole [RMEM-LIFE-3]
  interop_<bed>_rmem_linux_clients
                                 rmemd on xv6, Linux's rmem_example and a short
                                 rmem_bench (READ and WRITE, 64 KiB, 8 in
                                 flight) against it; xv6 rmemd's counters:
                                 both clients ended, every region given back
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "rdma"))
sys.path.insert(0, os.path.join(HERE, "..", "linux"))
import rdmacm_tools  # noqa: E402
import run_rmem  # noqa: E402

DEADLINE = 600             # seconds for the Linux rmemd / a Linux client
RMEMD_ARGS = "-m 4 -l 3072"   # what rmemtest.c assumes


def linux_node(tally, name, xv6, lnx, lossy):
    """rmemd on Linux, xv6's rmemtest and rmem_example as its clients;
    lossy: the link loses frames (rmemtest -l, [RMEM-DATA-3])."""
    if not rdmacm_tools.serve(lnx, f"rmemd {RMEMD_ARGS}", "TCP", DEADLINE):
        lnx.run("kill %1 2>/dev/null")
        tally.record(f"interop_{name}_rmem_linux_node", False, "Linux rmemd never listened")
        return
    out = xv6.run(f"rmemtest{' -l' if lossy else ''} -s {lnx.ip}", timeout=DEADLINE)
    for case, verdict, why in re.findall(r"^test (\S+): (OK|FAILED)(?: \((.*)\))?$", out, re.M):
        tally.record(f"interop_{name}_{case}", verdict == "OK", why)
    if not re.search(r"^[1-9]\d* passed, \d+ failed$", out, re.M):
        tally.record(f"interop_{name}_rmemtest", False, f"no summary: {out[-300:]!r}")
    ex = xv6.run(f"rmem_example {lnx.ip}", timeout=300)
    tally.record(f"interop_{name}_rmem_example_xv6_client", "rmem_example: OK" in ex,
                 ex.strip()[-200:].replace("\n", " | "))
    lnx.run("kill -TERM $(pidof rmemd)")
    _, sout = rdmacm_tools.server_result(lnx, 60)
    c = run_rmem.counters(sout)
    ok, info = run_rmem.check_counters(c)
    ok = ok and c["accepted"] == c["ended"] and c["accepted"] == sout.count(") connected")
    tally.record(f"interop_{name}_rmem_linux_counters", ok, info)


def linux_clients(tally, name, xv6, lnx, xv6_ip):
    """rmemd on xv6; Linux's rmem_example and rmem_bench against it."""
    run_rmem.start_rmemd(xv6, RMEMD_ARGS)
    rc_ex, ex = rdmacm_tools.client(lnx, f"rmem_example {xv6_ip}", DEADLINE)
    rc_b, bench = rdmacm_tools.client(lnx, f"rmem_bench -s {xv6_ip} -S 65536 -n 20 -d 8 -c", DEADLINE)
    c = run_rmem.wait_counters(xv6, 2)
    rows = re.findall(r"^csv,(READ|WRITE),65536,", bench, re.M)
    ok = (rc_ex == 0 and "rmem_example: OK" in ex and rc_b == 0 and "rmem_bench: done" in bench
          and len(rows) == 2 and c is not None and c["regions"] == c["freed"] + c["reaped"]
          and c["pool_free"] == c["pool"])
    tally.record(f"interop_{name}_rmem_linux_clients", ok,
                 f"example exit {rc_ex} {ex.strip()[-80:]!r}; rmem_bench exit {rc_b}, rows {rows}; "
                 f"xv6 rmemd: regions {c and c['regions']} freed {c and c['freed']} reaped "
                 f"{c and c['reaped']}, pool free {c and c['pool_free']}")


def rmem_bed(tally, name, xv6, lnx, xv6_ip, lossy):
    linux_node(tally, name, xv6, lnx, lossy)
    linux_clients(tally, name, xv6, lnx, xv6_ip)
