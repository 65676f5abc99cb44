#!/usr/bin/env bash
# Runs suites of the Khronos OpenCL-CTS, built outside this repository, test by test, natively
# and through HiveCL (one private cluster, tests/with-cluster.sh), and writes a table of the
# results for docs/CONFORMANCE.md. Nothing of the CTS is part of HiveCL; this only runs it.
#
#   run-cts.sh HIVECL_BUILD CTS_BUILD OUT_DIR SUITE...     (SUITE: api, basic, buffers, ...)
#
# With CTS_IN_PROCESS=1, HiveCL serves the device in-process instead (tests/local-only.sh: no
# cluster; the loader of the HiveCL side lists HiveCL alone, which opens the native library).
#
# Each test runs in a process of its own, natively and then through HiveCL, so a crash or a hang
# costs one test and both sides of a test see the same machine load. CTS_JOBS tests run at once
# (default: the number of cores); CTS_TIMEOUT bounds each run in seconds (default 900);
# CTS_DEVICE_TYPE is passed to the CTS as CL_DEVICE_TYPE (default: the platform's default);
# CTS_FILTER (an extended regular expression) keeps only the tests whose names match it.
# Results: OUT_DIR/results.tsv (suite, test, native, HiveCL, seconds of each), the logs of every
# run under OUT_DIR/logs, and OUT_DIR/summary.md.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# Inside the cluster: HIVECL_TEST_ICD_NATIVE and _HIVECL name one-platform vendor directories.
if [ -z "${HIVECL_TEST_ICD_NATIVE:-}" ]; then
  runner=with-cluster.sh
  [ -n "${CTS_IN_PROCESS:-}" ] && runner=local-only.sh
  exec "$here/../$runner" "$1" "$0" "$@"
fi
# on native|hivecl COMMAND: runs it with that platform alone visible.
source "$here/../e2e/lib.sh"
export -f on
cts_build=$(cd "$2" && pwd)
out=$(mkdir -p "$3" && cd "$3" && pwd)
shift 3
export CTS_TIMEOUT=${CTS_TIMEOUT:-900} out
mkdir -p "$out/logs"

# One test on one side: prints its result (pass, fail, skip, timeout, crash-N) and seconds.
run_one() {
  local binary=$1 test=$2 side=$3
  local log=$out/logs/$(basename "$binary")/$test.$side.log started status result
  mkdir -p "$(dirname "$log")"
  started=$(date +%s%N)
  status=0
  (cd "$(dirname "$binary")" &&
   on "$side" env ${CTS_DEVICE_TYPE:+CL_DEVICE_TYPE=$CTS_DEVICE_TYPE} \
     timeout -k 10 "$CTS_TIMEOUT" "$binary" "$test") >"$log" 2>&1 || status=$?
  if [ $status -eq 124 ] || [ $status -eq 137 ]; then result=timeout
  # A test's verdict ends a line; a warning without its newline may come before it.
  elif grep -qE "(^|[^A-Za-z0-9_])$test passed$" "$log" && [ $status -eq 0 ]; then result=pass
  elif grep -qE "(^|[^A-Za-z0-9_])$test (test not supported|test currently not implemented)$" "$log"; then result=skip
  elif grep -qE "(^|[^A-Za-z0-9_])$test FAILED$" "$log"; then result=fail
  elif [ $status -ge 128 ]; then result=crash-$((status - 128))
  else result=fail
  fi
  local tenths=$((($(date +%s%N) - started) / 100000000))
  printf '%s\t%d.%d' "$result" $((tenths / 10)) $((tenths % 10))
}
export -f run_one

# One line of results.tsv from a test's two results ("result<TAB>seconds" each).
record() {
  local binary=$1 test=$2 native=$3 hivecl=$4
  # One write per line (shorter than PIPE_BUF): parallel jobs append without mixing lines.
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$(basename "$binary")" "$test" "${native%%$'\t'*}" \
    "${hivecl%%$'\t'*}" "${native#*$'\t'}" "${hivecl#*$'\t'}" >>"$out/results.tsv.part"
}
export -f record

# A job: one test, natively then through HiveCL. A test that crashes the native runtime may
# crash the proxy, which runs that same runtime, and the tests after it would fail for want of
# a proxy: such a test runs through HiveCL after all the others, one at a time.
run_test() {
  local binary=$1 test=$2 native
  native=$(run_one "$binary" "$test" native)
  if [[ $native == crash-* ]]; then
    printf '%s\t%s\t%s\n' "$binary" "$test" "$native" >>"$out/native-crashes.part"
  else
    record "$binary" "$test" "$native" "$(run_one "$binary" "$test" hivecl)"
  fi
}
export -f run_test

: >"$out/results.tsv.part"
: >"$out/native-crashes.part"
for suite in "$@"; do
  binary=$(find "$cts_build/test_conformance" -type f -name "test_$suite" -perm -u+x | head -n 1)
  [ -n "$binary" ] || { echo "run-cts.sh: no test_$suite under $cts_build" >&2; exit 1; }
  (cd "$(dirname "$binary")" && OCL_ICD_VENDORS=${HIVECL_TEST_ICD_NATIVE%%:*} "$binary" --list) |
    sed -n 's/^\t\([A-Za-z0-9_]*\)$/\1/p' | grep -E "${CTS_FILTER:-.}" | sed "s|^|$binary |"
done | xargs -P "${CTS_JOBS:-$(nproc)}" -L 1 bash -c 'run_test "$0" "$1"'
while IFS=$'\t' read -r -u 3 binary test native_result native_seconds; do
  record "$binary" "$test" "$native_result"$'\t'"$native_seconds" "$(run_one "$binary" "$test" hivecl)"
done 3<"$out/native-crashes.part"
rm "$out/native-crashes.part"

{ printf 'suite\ttest\tnative\thivecl\tnative_s\thivecl_s\n'; sort "$out/results.tsv.part"; } >"$out/results.tsv"
rm "$out/results.tsv.part"
python3 "$here/summarize-cts.py" "$out/results.tsv" >"$out/summary.md"
cat "$out/summary.md"
