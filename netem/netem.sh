#!/usr/bin/env bash
# netem.sh: run an experiment through the kernel's own tc-netem instead of linkemu.
#
# Topology, all inside one private network namespace this script creates:
#
#     guest a (QEMU, -netdev tap,ifname=xrtap0)      guest b (QEMU, ifname=xrtap1)
#                     |                                          |
#                  xrtap0 ---------------- xrbr0 -------------- xrtap1
#          root qdisc: netem B2A                      root qdisc: netem A2B
#
# A tap's root qdisc shapes what the bridge sends *to* that guest, so frames
# a->b are impaired on xrtap1 and frames b->a on xrtap0.
#
# Usage:
#   netem.sh --check                        only probe for sch_netem
#   netem.sh [--a2b "SPEC"] [--b2a "SPEC"] -- COMMAND [ARGS...]
#       runs COMMAND inside the namespace (it starts the two QEMUs with
#       -netdev tap,id=n0,ifname=xrtap0,script=no,downscript=no and ifname=xrtap1),
#       with NETEM_NS, NETEM_TAP_A, NETEM_TAP_B exported; cleans up on exit.
#   SPEC is tc-netem grammar ("delay 1ms loss 1%"); linkemu's extensions
#   (drop LIST, blackhole SCHEDULE) are not tc options and are refused.
#
# Exit status: COMMAND's status; 2 if this host's kernel has no sch_netem
# (use netem/linkemu instead); 3 if not root or ip/tc is missing; 4 on setup errors.
# Only the namespace named xrnetem-<pid> (and the probe namespace
# xrnetem-probe-<pid>) are created, and only they are deleted.
set -uo pipefail

NS="xrnetem-$$"
PROBE_NS="xrnetem-probe-$$"
A2B="" B2A="" CHECK_ONLY=0 PROBE_ERR=""
created_ns=() 

cleanup() {
  for ns in "${created_ns[@]}"; do
    ip netns del "$ns" 2>/dev/null || true
  done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

die() { echo "netem.sh: $1" >&2; exit "${2:-4}"; }

while [ $# -gt 0 ]; do
  case "$1" in
    --a2b) A2B="${2:?--a2b needs a spec}"; shift 2 ;;
    --b2a) B2A="${2:?--b2a needs a spec}"; shift 2 ;;
    --check) CHECK_ONLY=1; shift ;;
    --) shift; break ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    *) die "unknown option '$1' (see --help)" 4 ;;
  esac
done

for spec in "$A2B" "$B2A"; do
  case " $spec " in
    *" drop "*|*" blackhole "*) die "'$spec': drop lists and blackholes are linkemu extensions, not tc-netem options" 4 ;;
  esac
done

command -v ip >/dev/null && command -v tc >/dev/null || die "needs ip and tc (iproute2)" 3
[ "$(id -u)" -eq 0 ] || die "needs root (network namespaces, taps, qdiscs)" 3

# Probe: can this kernel attach a netem qdisc? Try it on a dummy device in a
# private namespace so nothing on the host is touched.
probe_netem() {
  ip netns add "$PROBE_NS" 2>/dev/null || die "cannot create a network namespace" 3
  created_ns+=("$PROBE_NS")
  local dev="" ok=1
  if ip -n "$PROBE_NS" link add xrprobe0 type dummy 2>/dev/null; then
    dev=xrprobe0
  elif ip -n "$PROBE_NS" link add xrprobe0 type veth peer name xrprobe1 2>/dev/null; then
    dev=xrprobe0
  else
    PROBE_ERR="could not create a dummy or veth device to probe on"
  fi
  if [ -n "$dev" ]; then
    ip -n "$PROBE_NS" link set "$dev" up 2>/dev/null
    if PROBE_ERR=$(ip netns exec "$PROBE_NS" tc qdisc add dev "$dev" root netem loss 1% 2>&1); then
      ok=0
    fi
  fi
  ip netns del "$PROBE_NS" 2>/dev/null
  return $ok
}

if ! probe_netem; then
  echo "netem.sh: this host's kernel has no sch_netem: 'tc qdisc add ... netem' failed in a private namespace (${PROBE_ERR:-no error text})."
  echo "netem.sh: use netem/linkemu instead (build/netem/linkemu; see netem/linkemu.c)."
  exit 2
fi
echo "netem.sh: sch_netem is available"
[ "$CHECK_ONLY" -eq 1 ] && exit 0
[ $# -gt 0 ] || die "no command given (netem.sh [--a2b SPEC] [--b2a SPEC] -- COMMAND ...)" 4

ip netns add "$NS" || die "cannot create namespace $NS" 4
created_ns+=("$NS")
run() { "$@" || die "setup failed: $*" 4; }
run ip -n "$NS" link set lo up
run ip -n "$NS" link add xrbr0 type bridge
run ip -n "$NS" link set xrbr0 up
for tap in xrtap0 xrtap1; do
  run ip -n "$NS" tuntap add dev "$tap" mode tap
  run ip -n "$NS" link set "$tap" master xrbr0
  run ip -n "$NS" link set "$tap" up
done
# shellcheck disable=SC2086  # the spec is a word list on purpose
[ -n "$A2B" ] && run ip netns exec "$NS" tc qdisc add dev xrtap1 root netem $A2B
# shellcheck disable=SC2086
[ -n "$B2A" ] && run ip netns exec "$NS" tc qdisc add dev xrtap0 root netem $B2A
echo "netem.sh: namespace $NS: xrtap0 (a) --xrbr0-- xrtap1 (b); a2b='$A2B' b2a='$B2A'"

export NETEM_NS="$NS" NETEM_TAP_A=xrtap0 NETEM_TAP_B=xrtap1
ip netns exec "$NS" "$@"
status=$?
ip netns exec "$NS" tc -s qdisc show dev xrtap0 2>/dev/null | sed 's/^/netem.sh: b2a: /'
ip netns exec "$NS" tc -s qdisc show dev xrtap1 2>/dev/null | sed 's/^/netem.sh: a2b: /'
exit $status
