#!/usr/bin/env bash
# HiveCL's checks on a machine with an NVIDIA GPU (the "device" machine: Ubuntu 24.04,
# Catch2 3, NVIDIA OpenCL and PoCL 5): build, the test suite against native PoCL and against
# native NVIDIA, examples/vecadd and clinfo through HiveCL on the GPU, and the call/transfer
# benchmark against native NVIDIA. Results and logs go to OUTPUT_DIR. The machine lacks nettle's
# headers: carry them (tests/gpu/carry-nettle-headers.sh) and set PKG_CONFIG_PATH, as for every
# script here.
#   tests/gpu/check-nvidia.sh OUTPUT_DIR
set -u
out=$(mkdir -p "${1:?output directory}" && cd "$1" && pwd)
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export HIVECL_TEST_KEEP_LOGS=$out/cluster-logs
nvidia=(env HIVECL_TEST_NATIVE_PLATFORM="NVIDIA CUDA" HIVECL_TEST_NATIVE_ICD=libnvidia-opencl.so.1)
summary=$out/summary.txt
step() { echo "== $*" | tee -a "$summary"; }

step environment
{ nvidia-smi -L; OCL_ICD_FILENAMES=libpocl.so.2:libnvidia-opencl.so.1 clinfo -l; mpirun --version | head -1
  meson --version; ldconfig -p | grep libOpenCL.so.1; } >>"$summary" 2>&1

step build
if ! { meson setup build-gpu -Dwerror=true && ninja -C build-gpu; } >"$out/build.log" 2>&1; then
  tail -40 "$out/build.log" | tee -a "$summary"
  exit 1
fi

step "tests against native PoCL"
timeout 280 meson test -C build-gpu --print-errorlogs >"$out/tests-pocl.log" 2>&1
grep -E "^ *[0-9]+/[0-9]+ |^(Ok|Fail|Timeout):" "$out/tests-pocl.log" >>"$summary"

step "tests against native NVIDIA"
timeout 280 "${nvidia[@]}" meson test -C build-gpu --print-errorlogs >"$out/tests-nvidia.log" 2>&1
grep -E "^ *[0-9]+/[0-9]+ |^(Ok|Fail|Timeout):" "$out/tests-nvidia.log" >>"$summary"

# Test case by test case, so that a native crash on invalid input costs one case, not the run.
step "API test cases against native NVIDIA, one by one"
"${nvidia[@]}" tests/with-cluster.sh build-gpu bash -c '
  build-gpu/tests/api-tests --list-tests --verbosity quiet 2>/dev/null | grep -v "^$" > "$0/api-cases.txt"
  while IFS= read -r name; do
    # Catch2 reads commas in a test spec as separators: escape them.
    timeout 120 build-gpu/tests/api-tests "${name//,/\\,}" >"$0/case.txt" 2>&1 && { echo "pass: $name"; continue; }
    echo "FAIL: $name"
    { echo "==== $name"; grep -vE "^\s*$" "$0/case.txt" | tail -30; } >>"$0/api-nvidia-failures.txt"
  done <"$0/api-cases.txt"' "$out" >"$out/api-nvidia-cases.txt" 2>&1
grep -c "^pass:" "$out/api-nvidia-cases.txt" | sed 's/^/test cases passing: /' >>"$summary"
grep "^FAIL:" "$out/api-nvidia-cases.txt" >>"$summary"

step "vecadd and clinfo through HiveCL on the GPU"
"${nvidia[@]}" tests/with-cluster.sh build-gpu bash -c '
  on() { local spec=$1; shift; OCL_ICD_VENDORS=${spec%%:*} OCL_ICD_FILENAMES=${spec#*:} "$@"; }
  on "$HIVECL_TEST_ICD_NATIVE" build-gpu/examples/vecadd --size 16777216
  on "$HIVECL_TEST_ICD_HIVECL" build-gpu/examples/vecadd --size 16777216
  on "$HIVECL_TEST_ICD_HIVECL" clinfo' >"$out/vecadd-clinfo.log" 2>&1
grep -E "^(platform|device|node|result):|Device Name|Number of" "$out/vecadd-clinfo.log" >>"$summary"

step "call/transfer benchmark against native NVIDIA (the whole suite: bench-suite.sh)"
timeout 200 "${nvidia[@]}" HIVECL_BENCH_MAX_BYTES=$((256 << 20)) HIVECL_BENCH_CSV="$out/bench-nvidia.csv" \
  meson test -C build-gpu --benchmark --verbose calls >"$out/bench-nvidia.log" 2>&1
sed -n '/device: /,/^ratio:/p' "$out/bench-nvidia.log" >>"$summary"
cat "$summary"
# Everything in one archive as well (for tools that bring back few files).
tar czf "$out.tgz" -C "$out" . && mv "$out.tgz" "$out/all-results.tgz"
