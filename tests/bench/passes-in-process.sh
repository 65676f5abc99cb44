#!/usr/bin/env bash
# In-process transfers over several passes, each run a process of its own, run under
# tests/local-only.sh (which sets the native platform and the one-platform loader settings):
#   side:  bench-transfers side by side, HiveCL in-process against native ("ab") and native
#          against native ("aa": the spread an "ab" ratio must be read against);
#   alone: bench-alone with one platform visible: native, HiveCL ("hivecl") and native again
#          ("again": its A/A), as a program would run.
# The runs of a pass go in an order that turns by one each pass. One process's transfers of
# ordinary memory scatter by tens of percent; medians over passes and pooled ratios narrow
# that (docs/PERFORMANCE.md, fifty-fifth session). CSVs are
# KIND-PASS.csv in OUTPUT_DIR (those of an earlier run removed), with each run's log;
# tests/bench/passes.py's tables (python3) go to OUTPUT_DIR/passes.md and stdout. Stops
# starting passes when fewer than twice PASS_SECONDS (a run's time limit) are left of
# DEADLINE seconds.
#   [PASSES=3] [PARTS="side alone"] [PASS_SECONDS=90] [DEADLINE=3600] [ROUNDS=9] [MAX_BYTES=16 MiB] \
#     local-only.sh BUILD passes-in-process.sh OUTPUT_DIR BENCH_TRANSFERS BENCH_ALONE
set -u
out=$(mkdir -p "${1:?output directory}" && cd "$1" && pwd)
transfers=${2:?bench-transfers} alone=${3:?bench-alone}
. "$(dirname "${BASH_SOURCE[0]}")/../e2e/lib.sh"
deadline=$(( $(date +%s) + ${DEADLINE:-3600} ))
pass_seconds=${PASS_SECONDS:-90}
export HIVECL_BENCH_ROUNDS=${ROUNDS:-9} HIVECL_BENCH_MAX_BYTES=${MAX_BYTES:-$((16 << 20))}
rm -f "$out"/{ab,aa,native,hivecl,again}-*.csv  # a benchmark appends to its CSV
kinds=()
for part in ${PARTS:-side alone}; do
  case $part in
    side) kinds+=(ab aa) ;;
    alone) kinds+=(native hivecl again) ;;
    *) echo "unknown part: $part" >&2; exit 2 ;;
  esac
done

# run KIND PASS: one process, its CSV KIND-PASS.csv (removed if the run fails).
run() {
  local kind=$1 pass=$2 csv=$out/$1-$2.csv
  local limited=(env HIVECL_BENCH_CSV="$csv" timeout "$pass_seconds")
  case $kind in
    ab) set -- "${limited[@]}" "$transfers" ;;
    aa) set -- "${limited[@]}" env HIVECL_BENCH_COMPARED="$HIVECL_TEST_NATIVE_PLATFORM" "$transfers" ;;
    native | again) set -- on native "${limited[@]}" "$alone" "$HIVECL_TEST_NATIVE_PLATFORM" ;;
    hivecl) set -- on hivecl "${limited[@]}" "$alone" HiveCL ;;
  esac
  "$@" >"$out/$kind-$pass.log" 2>&1 ||
    { echo "$kind, pass $pass: exit $?"; rm -f "$csv"; }
}

for pass in $(seq 1 "${PASSES:-3}"); do
  [ $(( deadline - $(date +%s) )) -gt $(( 2 * pass_seconds )) ] || { echo "stopped before pass $pass"; break; }
  turn=$(( (pass - 1) % ${#kinds[@]} ))
  order=("${kinds[@]:turn}" "${kinds[@]:0:turn}")
  echo "pass $pass: ${order[*]} ($(date +%T))"
  for kind in "${order[@]}"; do run "$kind" "$pass"; done
done
command -v python3 >/dev/null || { echo "no python3: CSVs in $out"; exit 0; }
summarize() { "$(dirname "${BASH_SOURCE[0]}")/passes.py" "$out" "$@"; }
{
  if [[ " ${kinds[*]} " == *" ab "* ]]; then summarize --kinds ab aa --match "^transfers"; fi
  if [[ " ${kinds[*]} " == *" hivecl "* ]]; then summarize --kinds hivecl again --match "^alone"; fi
} | tee "$out/passes.md"
