"""perftable.py: the tables perftest prints, read into numbers.

Owns the one reader of the output that perftest (ib_write_bw, ...) and the
project's tools that print its columns (rdma_bw, rdma_lat, xrpeer) share,
for every test and bench that runs them:

  bandwidth:  #bytes #iterations BW peak[MB/sec] BW average[MB/sec] MsgRate[Mpps]
  latency:    #bytes #iterations t_min t_max t_typical t_avg t_stdev p99 p99.9 (usec)
  counters:   rdma_bw/rdma_lat --stats: "perf: qp 0x.. state S tx T rx R retx X tmo Y ..."
              and rdma_bw's "nic: rx_missed M rx_no_buf B" (the client guest's NIC drops)

MB is 2^20 bytes in these tables. Python standard library only.
"""
import re

BW_ROW = re.compile(r"^[ \t]*(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)[ \t]*\n", re.M)
# perftest prints t_stdev as -nan now and then (a sum of squares that overflowed).
LAT_ROW = re.compile(r"^[ \t]*(\d+)\s+(\d+)" + r"\s+([\d.]+|-?nan)" * 7 + r"[ \t]*\n", re.M)
# Ends with the line: a console pattern must end after its last capture.
QP_LINE = re.compile(r"perf: qp \S+ state \d+ tx (\d+) rx (\d+) retx (\d+) tmo (\d+)[^\n]*\n")
QP_RNR = re.compile(r"rnr_tmo (\d+) naks tx (\d+) rx (\d+) rnr tx (\d+) rx (\d+)")
QP_DROPS = re.compile(r"dup (\d+) oos (\d+) oow (\d+) dropped (\d+)")
# Counters at the line's end that older builds do not print: name, pattern.
QP_LATER = (("window_cuts", re.compile(r" cuts (\d+)")), ("late_probes", re.compile(r" late (\d+)")))
NIC_LINE = re.compile(r"nic: rx_missed (\d+) rx_no_buf (\d+)")


def bw_rows(text):
    """Every bandwidth row of text, as dicts."""
    return [{"size": int(m[1]), "iters": int(m[2]), "bw_peak_MiBps": float(m[3]),
             "bw_avg_MiBps": float(m[4]), "mpps": float(m[5])} for m in BW_ROW.finditer(text)]


def bw_row(text):
    """The first bandwidth row of text, or None."""
    rows = bw_rows(text)
    return rows[0] if rows else None


def lat_row(text):
    """The first latency row of text (microseconds), or None."""
    m = LAT_ROW.search(text)
    if not m:
        return None
    v = [float(x) for x in m.groups()[2:]]
    return {"t_min_us": v[0], "t_max_us": v[1], "t_typical_us": v[2], "t_avg_us": v[3],
            "t_stdev_us": v[4], "p99_us": v[5], "p999_us": v[6]}


def qp_stats(text):
    """The first --stats counters line of text, or None."""
    m = QP_LINE.search(text)
    if not m:
        return None
    r = QP_RNR.search(m[0])
    rnr = {"rnr_timeouts": int(r[1]), "tx_naks": int(r[2]), "rx_naks": int(r[3]), "tx_rnr_naks": int(r[4]),
           "rx_rnr_naks": int(r[5])} if r else {}
    d = QP_DROPS.search(m[0])
    drops = {"dup": int(d[1]), "oos": int(d[2]), "oow": int(d[3]), "dropped": int(d[4])} if d else {}
    later = {name: int(x[1]) for name, rx in QP_LATER for x in [rx.search(m[0])] if x}
    return {"tx_frames": int(m[1]), "rx_frames": int(m[2]), "retransmits": int(m[3]), "timeouts": int(m[4]),
            **rnr, **drops, **later}


def nic_drops(text):
    """The frames the client guest's NIC dropped during an rdma_bw --stats
    run (ring full + no buffer), or None when the line is missing."""
    m = NIC_LINE.search(text)
    return int(m[1]) + int(m[2]) if m else None
