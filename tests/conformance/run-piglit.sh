#!/usr/bin/env bash
# Runs piglit's OpenCL tests (its `cl` profile: API tests and some 660 kernel programs checked
# against expected values; https://gitlab.freedesktop.org/mesa/piglit, installed from a
# distribution's package or built with piglit's own instructions: HiveCL neither ships nor builds
# it) natively and through HiveCL, and writes the same tables as run-cts.sh.
#
#   run-piglit.sh HIVECL_BUILD OUT_DIR [PIGLIT_RUN_OPTION...]   (e.g. -t 'api@' for some tests)
#
# The cluster is a private one (tests/with-cluster.sh); with PIGLIT_IN_PROCESS=1 HiveCL serves
# the device in-process instead (tests/local-only.sh). Each side runs the whole profile with its
# platform alone visible, natively first; PIGLIT_JOBS tests at once (default: the number of
# cores), PIGLIT_TIMEOUT seconds each (default 300); PIGLIT names the runner (default: piglit).
# Results: piglit's own under OUT_DIR/native and OUT_DIR/hivecl (`piglit summary html` reads
# them; through HiveCL, the tests that crashed natively under OUT_DIR/hivecl-native-crashes),
# OUT_DIR/results.tsv (a row per subtest, or per test without subtests) and OUT_DIR/summary.md.
# Exit status 1 when a result passes natively but not through HiveCL, 77 when there is no piglit.
# On NVIDIA, set CUDA_CACHE_DISABLE=1: with its compiler cache a build's result can depend on
# which side ran first (docs/FINDINGS.md).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
command -v "${PIGLIT:-piglit}" >/dev/null || { echo "skipped: piglit is not installed"; exit 77; }

if [ -z "${HIVECL_TEST_ICD_NATIVE:-}" ]; then
  runner=with-cluster.sh
  [ -n "${PIGLIT_IN_PROCESS:-}" ] && runner=local-only.sh
  exec "$here/../$runner" "${1:?usage: run-piglit.sh HIVECL_BUILD OUT_DIR [PIGLIT_RUN_OPTION...]}" "$0" "$@"
fi
# on native|hivecl COMMAND: runs it with that platform alone visible.
source "$here/../e2e/lib.sh"
out=$(mkdir -p "${2:?no OUT_DIR}" && cd "$2" && pwd)
shift 2

# run_side native|hivecl RESULTS_DIR PIGLIT_RUN_OPTION...
run_side() {
  local side=$1 results=$2
  shift 2
  # piglit's exit status says whether every test passed, which neither side does.
  on "$side" "${PIGLIT:-piglit}" run cl --overwrite --log-level dummy --jobs "${PIGLIT_JOBS:-$(nproc)}" \
    --timeout "${PIGLIT_TIMEOUT:-300}" "$@" "$results" || true
  [ -f "$results/results.json.bz2" ] || { echo "run-piglit.sh: no results from the $side run" >&2; exit 2; }
}

run_side native "$out/native" "$@"
# A test that crashes the native runtime may crash the proxy, which runs that same runtime, and
# the tests after it would find no HiveCL platform: those tests run through HiveCL last, alone.
python3 "$here/piglit-results.py" crashed "$out/native" >"$out/native-crashes.txt"
mapfile -t crashes < <(python3 "$here/piglit-results.py" exclusions "$out/native-crashes.txt")
run_side hivecl "$out/hivecl" "$@" "${crashes[@]/#/--exclude-tests=}"
hivecl_results=("$out/hivecl")
if [ ${#crashes[@]} -gt 0 ]; then
  run_side hivecl "$out/hivecl-native-crashes" --test-list "$out/native-crashes.txt"
  hivecl_results+=("$out/hivecl-native-crashes")
fi
python3 "$here/piglit-results.py" table "$out/native" "${hivecl_results[@]}" >"$out/results.tsv"
python3 "$here/summarize-cts.py" "$out/results.tsv" | tee "$out/summary.md"
! awk -F'\t' 'NR > 1 && $3 == "pass" && $4 != "pass" { found = 1 } END { exit !found }' "$out/results.tsv"
