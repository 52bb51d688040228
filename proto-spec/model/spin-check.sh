#!/usr/bin/env bash
# spin-check.sh: generate, compile and run one SPIN verifier for a model (rc.pml, ibcm.pml) and
# judge its result. Used by proto-spec/spec.mk (make test-spec).
#
# usage: spin-check.sh NAME EXPECT OUTDIR MODEL "SPIN -D flags" "CC flags" "PAN flags"
#   EXPECT  pass  the run must finish with 0 errors and a complete search
#           fail  the run must report at least one error (a negative test)
# Prints one line: name, result, states stored, depth reached, seconds.
# Exit status 0 when the result is the expected one, 1 otherwise.
set -u
name=$1 expect=$2 outdir=$3 model=$4 dflags=$5 ccflags=$6 panflags=$7
dir=$outdir/$name
rm -rf "$dir" && mkdir -p "$dir"
model_abs=$(cd "$(dirname "$model")" && pwd)/$(basename "$model")
log=$dir/pan.out

start=$(date +%s.%N)
if ! (cd "$dir" && spin $dflags -a "$model_abs") >"$dir/spin.out" 2>&1; then
  echo "spec: $name: spin -a failed:"; cat "$dir/spin.out"; exit 1
fi
if ! (cd "$dir" && ${SPEC_CC:-gcc} -O2 -w $ccflags -o pan pan.c) >"$dir/cc.out" 2>&1; then
  echo "spec: $name: compiling pan failed:"; cat "$dir/cc.out"; exit 1
fi
(cd "$dir" && ./pan $panflags) >"$log" 2>&1
status=$?
end=$(date +%s.%N)
secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')

errors=$(sed -n 's/.*errors: \([0-9][0-9]*\).*/\1/p' "$log" | tail -1)
stored=$(sed -n 's/^ *\([0-9][0-9.e+]*\) states, stored.*/\1/p' "$log" | tail -1)
depth=$(sed -n 's/.*depth reached \([0-9][0-9]*\).*/\1/p' "$log" | tail -1)
incomplete=0
grep -qE 'max search depth too small|out of memory|search not completed' "$log" && incomplete=1
if [ -z "$errors" ]; then
  echo "spec: $name: no verdict from pan (exit $status):"; tail -20 "$log"; exit 1
fi

what=$(grep -m1 -E 'assertion violated|acceptance cycle|invalid end state|non-progress' "$log" \
       | sed 's/^pan:[0-9]*: *//')
line=$(printf "spec: %-14s %-5s errors %-2s states stored %-10s depth %-6s %5ss" \
       "$name" "" "$errors" "$stored" "$depth" "$secs")
if [ "$expect" = pass ]; then
  if [ "$errors" = 0 ] && [ $incomplete = 0 ]; then
    echo "${line/      errors/ PASS errors}"; exit 0
  fi
  echo "${line/      errors/ FAIL errors}"
  [ $incomplete = 1 ] && echo "spec: $name: search incomplete (depth or memory limit)"
  [ -n "$what" ] && echo "spec: $name: $what (trail: $dir)"
  exit 1
else
  if [ "$errors" != 0 ]; then
    echo "${line/      errors/ PASS errors} (negative test: failed as it must: $what)"
    exit 0
  fi
  echo "${line/      errors/ FAIL errors} (negative test: the broken variant passed!)"
  exit 1
fi
