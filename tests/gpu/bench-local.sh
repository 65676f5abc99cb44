#!/usr/bin/env bash
# In-process devices on the GPU machine (see check-nvidia.sh for its set-up): HiveCL serving
# the node's NVIDIA GPU inside the application (local_devices = in-process, no cluster, no MPI)
# against native NVIDIA OpenCL, side by side in each run: per-call overhead (bench-calls:
# clSetKernelArg, a launch with unchanged arguments, clGetEventInfo, ...), VOCL's window
# bandwidth test with ordinary and page-locked memory (bench-transfers, 64 KiB .. 1 GiB; again
# with NVIDIA on both sides, the benchmark's own spread) and the examples (bench-examples).
# CSV, logs and a summary go to OUTPUT_DIR; about 3 minutes on an H200 (6 on the H100 before).
#   tests/gpu/bench-local.sh OUTPUT_DIR
set -u
out=$(mkdir -p "${1:?output directory}" && cd "$1" && pwd)
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export HIVECL_TEST_NATIVE_PLATFORM="NVIDIA CUDA" HIVECL_TEST_NATIVE_ICD=libnvidia-opencl.so.1
export HIVECL_BENCH_CSV=$out/local.csv HIVECL_BENCH_ROUNDS=${HIVECL_BENCH_ROUNDS:-5}
summary=$out/summary.txt
step() { echo "== $*" | tee -a "$summary"; }

step environment
{ nvidia-smi -L; nproc; ldconfig -p | grep libOpenCL.so.1; } >>"$summary" 2>&1

step build
if ! { meson setup build-gpu -Dwerror=true --buildtype=release && ninja -C build-gpu; } >"$out/build.log" 2>&1; then
  tail -40 "$out/build.log" | tee -a "$summary"
  exit 1
fi

# run NAME SECONDS COMMAND...: one benchmark in-process against native NVIDIA.
run() {
  local name=$1 seconds=$2; shift 2
  step "$name"
  timeout "$seconds" tests/local-only.sh build-gpu "$@" >"$out/$name.log" 2>&1 || echo "(exit $?)" >>"$summary"
  grep -E "device:|us |GB/s|s  " "$out/$name.log" | grep -v "^ratio:" >>"$summary"
}

run calls 120 env HIVECL_BENCH_MAX_BYTES=$((256 << 20)) build-gpu/tests/bench-calls
run transfers 200 env HIVECL_BENCH_MAX_BYTES=$((1 << 30)) build-gpu/tests/bench-transfers
# The same against a second context of NVIDIA's own (A/A): the spread a ratio of the run above
# must be read against (ordinary memory's windows scatter by tens of percent there).
run transfers-aa 200 env HIVECL_BENCH_MAX_BYTES=$((1 << 30)) HIVECL_BENCH_COMPARED="NVIDIA CUDA" build-gpu/tests/bench-transfers
run examples 300 build-gpu/tests/bench-examples build-gpu/examples sgemm nbody transpose smith_waterman
cat "$summary"
tar czf "$out.tgz" -C "$out" . && mv "$out.tgz" "$out/all-results.tgz"
