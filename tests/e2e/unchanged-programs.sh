#!/usr/bin/env bash
# OpenCL programs run unchanged, once seeing only the native platform and once seeing only
# HiveCL (run under tests/with-cluster.sh): their results must be the same.
#   clinfo, and CLBlast's test programs, which check their results against a reference BLAS
#   and their error codes (skipped when not installed). This repository's examples: examples.sh.
#   unchanged-programs.sh
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if command -v clinfo >/dev/null; then
  on native clinfo -l >"$work/clinfo.native" 2>&1
  on hivecl clinfo -l >"$work/clinfo.hivecl" 2>&1
  grep -q "Platform #0: HiveCL" "$work/clinfo.hivecl" && echo "ok: clinfo lists HiveCL" ||
    { echo "FAILED: clinfo does not list HiveCL"; cat "$work/clinfo.hivecl"; failures=$((failures + 1)); }
  same "clinfo devices" 'Device #' "$work/clinfo.native" "$work/clinfo.hivecl"
  on hivecl clinfo >"$work/clinfo-full.hivecl" 2>&1 && echo "ok: full clinfo through HiveCL" ||
    { echo "FAILED: clinfo through HiveCL"; tail "$work/clinfo-full.hivecl"; failures=$((failures + 1)); }
else
  echo "skipped: clinfo is not installed"
fi

for routine in xaxpy xdot xnrm2 xscal; do
  program=clblast_test_$routine
  if ! command -v "$program" >/dev/null; then echo "skipped: $program is not installed"; continue; fi
  on native "$program" 2>&1 | sed 's/\x1b\[[0-9;]*m//g' >"$work/$routine.native"
  on hivecl "$program" 2>&1 | sed 's/\x1b\[[0-9;]*m//g' >"$work/$routine.hivecl"
  same "CLBlast $routine: same verdicts" 'test\(s\) (passed|skipped|failed)' "$work/$routine.native" "$work/$routine.hivecl"
  grep -qE '[1-9][0-9]* test\(s\) failed' "$work/$routine.hivecl" &&
    { echo "FAILED: CLBlast $routine has failures through HiveCL"; failures=$((failures + 1)); }
done

[ $failures -eq 0 ]
