#!/usr/bin/env bash
# Two questions the suite leaves open on the GPU machine (see check-nvidia.sh for its setup:
# nettle's headers carried in),
# each side by side in one run:
# - moves: a buffer of a context over two proxies of this node moved from one to the other
#   (bench-link --moves under tests/cluster/with-two-proxies.sh), through the application
#   (local_proxy_moves = application, the default) and proxy to proxy (= proxy), in turn;
# - sw: Smith-Waterman 4096 natively and through a proxy (bench-examples) with the launch gate
#   as configured (auto), with it off, and an A/A run (NVIDIA on both sides: the spread a
#   ratio of the others must be read against), in turn.
# Stops starting runs when fewer seconds than a run needs are left of DEADLINE (default 540:
# the device tool's calls are limited to 600 s). Logs, CSV and a summary go to OUTPUT_DIR.
#   [PASSES=3] [SW_PASSES=2] [ROUNDS=7] [DEADLINE=540] tests/gpu/bench-sw-gate-and-moves.sh OUTPUT_DIR [moves] [sw]
set -u
out=$(mkdir -p "${1:?output directory}" && cd "$1" && pwd)
shift
deadline=$(( $(date +%s) + ${DEADLINE:-540} ))
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export HIVECL_TEST_NATIVE_PLATFORM=${HIVECL_TEST_NATIVE_PLATFORM:-NVIDIA CUDA}
export HIVECL_TEST_NATIVE_ICD=${HIVECL_TEST_NATIVE_ICD:-libnvidia-opencl.so.1}
build=${BUILD_DIR:-build-gpu}
summary=$out/summary.txt
left() { echo $(( deadline - $(date +%s) )); }
step() { echo "== $* (left $(left) s, $(date +%T))" | tee -a "$summary"; }
# time_for SECONDS WHAT: whether a run that needs SECONDS still fits.
time_for() { [ "$(left)" -gt "$1" ] || { step "skipped: $2 (needs $1 s)"; return 1; }; }

step environment
{ nvidia-smi -L; nproc; git log --oneline -1; } >>"$summary" 2>&1

step build
reconfigure=; [ -f "$build/build.ninja" ] && reconfigure=--reconfigure
if ! { meson setup $reconfigure "$build" -Dwerror=true &&
       meson compile -C "$build" proxy/hivecl-proxy:executable icd/hivecl:shared_library \
         icd/hivecl-local:shared_library bench-link bench-examples smith_waterman; } >"$out/build.log" 2>&1; then
  tail -40 "$out/build.log" | tee -a "$summary"
  exit 1
fi

moves() {
  mkdir -p "$out/moves"
  for pass in $(seq 1 "${PASSES:-3}"); do
    for mode in application proxy; do
      time_for 60 "moves $mode, pass $pass" || return 0
      step "moves $mode, pass $pass"
      local log=$out/moves/$mode-$pass.txt
      HIVECL_LOCAL_PROXY_MOVES=$mode HIVECL_BENCH_ROUNDS=5 HIVECL_BENCH_MAX_BYTES=$((256 << 20)) \
        HIVECL_BENCH_CSV=$out/moves/$mode-$pass.csv \
        timeout 100 tests/cluster/with-two-proxies.sh "$build" "$build/tests/bench-link" --moves >"$log" 2>&1 ||
        echo "exit $?" >>"$log"
      grep -E "move of|^exit" "$log" | sed "s/^/$mode $pass: /" >>"$summary"
    done
  done
}

sw() {
  mkdir -p "$out/sw"
  for pass in $(seq 1 "${SW_PASSES:-2}"); do
    for variant in auto off aa; do
      time_for 75 "sw $variant, pass $pass" || return 0
      step "sw $variant, pass $pass"
      local log=$out/sw/$variant-$pass.txt settings=()
      [ "$variant" = off ] && settings=(HIVECL_LAUNCH_GATE_US=off)
      [ "$variant" = aa ] && settings=(HIVECL_BENCH_COMPARED="$HIVECL_TEST_NATIVE_PLATFORM")
      env "${settings[@]}" HIVECL_BENCH_ROUNDS="${ROUNDS:-7}" HIVECL_BENCH_CSV="$out/sw/$variant-$pass.csv" \
        HIVECL_BENCH_EXAMPLES="smith_waterman --length 4096" \
        timeout 150 tests/with-cluster.sh "$build" "$build/tests/bench-examples" "$build/examples" >"$log" 2>&1 ||
        echo "exit $?" >>"$log"
      grep -E "smith|^exit" "$log" | sed "s/^/$variant $pass: /" >>"$summary"
    done
  done
}

parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(moves sw)
for part in "${parts[@]}"; do
  case $part in
    moves | sw) $part ;;
    *) echo "unknown part: $part" >&2; exit 2 ;;
  esac
done
step done
cat "$summary"
