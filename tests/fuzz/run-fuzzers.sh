#!/usr/bin/env bash
# Runs every fuzz target of a -Dfuzz=true build for a bounded time, from the seed corpus
# that fuzz-corpus encodes from the message table, and fails on any finding. FUZZ_JOBS
# targets run at once (default: the number of cores), each for the whole time.
#
#   run-fuzzers.sh BUILD_DIR [SECONDS_PER_TARGET]   (default 60)
#
# FUZZ_WORK_DIR keeps the grown corpora and any crash inputs (default: a temporary directory).
set -euo pipefail
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
seconds=${2:-60}
fuzz=$build/tests/fuzz
work=${FUZZ_WORK_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/hivecl-fuzz.XXXXXX")}
targets=(decoders session control-ring build-log kernels-parser)
at_once=${FUZZ_JOBS:-$(nproc)}
mkdir -p "$work"
"$fuzz/fuzz-corpus" "$work/seed-decoders" "$work/seed-session" "$work/seed-kernels-parser"
# PoCL and Open MPI keep memory for the life of the process: their leaks are not findings.
export LSAN_OPTIONS=suppressions=$here/../sanitizer/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# The session target runs the native OpenCL: it must see the native platform only.
export OCL_ICD_VENDORS=/etc/OpenCL/vendors

# The parser's target runs for 2/5 of the time given (it ran 300 s clean when it came, and
# guards against regressions here): five targets on two cores then take two full rounds and a
# short one.
seconds_for() {
  if [ "$1" = kernels-parser ]; then echo $(((seconds * 2 + 4) / 5)); else echo "$seconds"; fi
}

# fuzz_target NAME: its run, logged to $work/fuzz-NAME.log; its exit status says whether it found anything.
fuzz_target() {
  local target=$1
  mkdir -p "$work/corpus-$target" "$work/crashes-$target" "$work/seed-$target"
  # OpenCL C's words and punctuation for the parser's target.
  local dictionary=()
  [ "$target" != kernels-parser ] || dictionary=(-dict="$here/opencl-c.dict")
  "$fuzz/fuzz-$target" -max_total_time="$(seconds_for "$target")" -timeout=30 -rss_limit_mb=4096 -print_final_stats=1 "${dictionary[@]}" \
    -artifact_prefix="$work/crashes-$target/" "$work/corpus-$target" "$work/seed-$target" \
    >"$work/fuzz-$target.log" 2>&1
}

echo "== ${targets[*]}: $seconds s each (kernels-parser $(seconds_for kernels-parser) s), $at_once at once"
declare -A running=()
status=0
for target in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$at_once" ]; do wait -n || true; done
  fuzz_target "$target" &
  running[$target]=$!
done
for target in "${targets[@]}"; do
  echo "== fuzz-$target"
  if ! wait "${running[$target]}"; then
    status=1
    tail -60 "$work/fuzz-$target.log"
  fi
  grep -E "^stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)" "$work/fuzz-$target.log"
  echo "findings: $(ls "$work/crashes-$target" | wc -l)"
done
[ -n "${FUZZ_WORK_DIR:-}" ] || rm -rf "$work"
exit $status
