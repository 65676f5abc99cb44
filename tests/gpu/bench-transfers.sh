#!/usr/bin/env bash
# The transfer benchmarks on the GPU machine (see check-nvidia.sh for its set-up): HiveCL
# with the proxy on the same node against native NVIDIA OpenCL, for the data path HiveCL
# picks (memory), each path forced (MPI), the pipeline off (one staging slot), and a sweep of
# staging chunk sizes and slot counts. CSV, logs and a summary go to OUTPUT_DIR; about 8 minutes.
#   tests/gpu/bench-transfers.sh OUTPUT_DIR
set -u
out=$(mkdir -p "${1:?output directory}" && cd "$1" && pwd)
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export HIVECL_TEST_KEEP_LOGS=$out/cluster-logs HIVECL_PROXY_LOG=info
export HIVECL_TEST_NATIVE_PLATFORM="NVIDIA CUDA" HIVECL_TEST_NATIVE_ICD=libnvidia-opencl.so.1
export HIVECL_BENCH_CSV=$out/transfers.csv HIVECL_BENCH_ROUNDS=${HIVECL_BENCH_ROUNDS:-3}
summary=$out/summary.txt
step() { echo "== $*" | tee -a "$summary"; }

step environment
{ nvidia-smi -L; nproc; cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null; mpirun --version | head -1; } \
  >>"$summary" 2>&1

step build
if ! { meson setup build-gpu -Dwerror=true --buildtype=release && ninja -C build-gpu; } >"$out/build.log" 2>&1; then
  tail -40 "$out/build.log" | tee -a "$summary"
  exit 1
fi

# run NAME SECONDS [VAR=VALUE...]: the transfer benchmark with those settings (client and proxy).
run() {
  local name=$1 seconds=$2; shift 2
  step "$name: $*"
  timeout "$seconds" env "$@" tests/with-cluster.sh build-gpu build-gpu/tests/bench-transfers \
    >"$out/$name.log" 2>&1 || echo "(exit $?)" >>"$summary"
  grep -vE "^(ratio:)" "$out/$name.log" | grep -E "GB/s|data path" >>"$summary"
}

run auto-1GiB 150 HIVECL_BENCH_MAX_BYTES=$((1 << 30))
run mpi 90 HIVECL_DATA_PATH=mpi HIVECL_BENCH_MAX_BYTES=$((256 << 20))
run no-pipeline 60 HIVECL_STAGING_SLOTS=1 HIVECL_BENCH_MIN_BYTES=$((4 << 20)) HIVECL_BENCH_MAX_BYTES=$((256 << 20))
# Staging ring and copy threads: what the defaults rest on (4 MiB .. 64 MiB only).
for setting in "HIVECL_CHUNK_BYTES=$((1 << 20))" "HIVECL_CHUNK_BYTES=$((16 << 20))" "HIVECL_STAGING_SLOTS=2" \
               "HIVECL_STAGING_SLOTS=8" "HIVECL_COPY_THREADS=1" "HIVECL_COPY_THREADS=8"; do
  run "sweep-${setting#HIVECL_}" 40 "$setting" HIVECL_BENCH_MIN_BYTES=$((4 << 20)) HIVECL_BENCH_MAX_BYTES=$((64 << 20))
done
grep -h "data path" "$out"/cluster-logs/*/proxy-*.log 2>/dev/null | sort | uniq -c >>"$summary"
cat "$summary"
tar czf "$out.tgz" -C "$out" . && mv "$out.tgz" "$out/all-results.tgz"
