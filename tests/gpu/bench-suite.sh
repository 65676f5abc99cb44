#!/usr/bin/env bash
# HiveCL's benchmark suite on the GPU machine (see check-nvidia.sh for its setup: NVIDIA's ICD,
# platform picked by name): builds, checks the examples natively and through HiveCL at small
# sizes, runs every Meson benchmark (SHOC-style level 0, the examples at GPU sizes, the
# call/transfer benchmarks) against native NVIDIA OpenCL with the proxy on the same node,
# bus speed a second time from host memory in transparent huge pages, and writes the CSV, the
# logs and the report (tests/bench/report.py, when matplotlib is there) under OUTPUT_DIR.
# About 4-8 minutes on one H100.
#   tests/gpu/bench-suite.sh OUTPUT_DIR
set -u
out=$(mkdir -p "${1:?output directory}" && cd "$1" && pwd)
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export HIVECL_TEST_NATIVE_PLATFORM="NVIDIA CUDA" HIVECL_TEST_NATIVE_ICD=libnvidia-opencl.so.1
summary=$out/summary.txt
step() { echo "== $* ($(date +%T))" | tee -a "$summary"; }

step environment
{ nvidia-smi -L; nproc; mpirun --version | head -1; git log --oneline -1; } >>"$summary" 2>&1

step build
# A build directory left by an earlier run is configured again rather than refused.
reconfigure=; [ -f build-gpu/build.ninja ] && reconfigure=--reconfigure
if ! { meson setup $reconfigure build-gpu -Dwerror=true && ninja -C build-gpu; } >"$out/build.log" 2>&1; then
  tail -40 "$out/build.log" | tee -a "$summary"
  exit 1
fi

step "examples natively and through HiveCL (small sizes, results compared)"
timeout 120 meson test -C build-gpu examples --print-errorlogs >"$out/examples-test.log" 2>&1
grep -E "^(ok|FAILED)" build-gpu/meson-logs/testlog.txt >>"$summary"
grep -E "^(Ok|Fail):" "$out/examples-test.log" >>"$summary"

# Sizes for an H100: compute-bound examples with kernels of tens to hundreds of ms.
export HIVECL_BENCH_CSV=$out/bench.csv HIVECL_BENCH_ROUNDS=${HIVECL_BENCH_ROUNDS:-5}
export HIVECL_BENCH_MAX_BYTES=$((512 << 20)) HIVECL_BENCH_DEVICE_BYTES=$((1 << 30)) HIVECL_BENCH_FLOPS_MS=50
export HIVECL_BENCH_EXAMPLES="sgemm --size 4096;dgemm --size 2048;nbody --bodies 131072 --steps 4;transpose --size 8192 --repeat 20;smith_waterman --length 4096"
rm -f "$HIVECL_BENCH_CSV"
for benchmark in max_flops device_memory compile_queue examples bus_speed calls; do
  step "benchmark $benchmark"
  timeout 300 meson test -C build-gpu --benchmark --verbose "$benchmark" >"$out/bench-$benchmark.log" 2>&1 ||
    echo "benchmark $benchmark failed or timed out (log: bench-$benchmark.log)" | tee -a "$summary"
  sed -n '/ — device: /,/^ratio:/p' "$out/bench-$benchmark.log" | sed 's/^ *[0-9]*\/[0-9]* [a-z_]* *//' >>"$summary"
done
# Same-node copies of the application's memory scale over the proxy's threads in huge pages only
# (docs/FINDINGS.md): the cases named "[huge pages]".
step "benchmark bus_speed, host memory in huge pages"
HIVECL_BENCH_HUGE_PAGES=1 timeout 300 meson test -C build-gpu --benchmark --verbose bus_speed >"$out/bench-bus_speed-huge.log" 2>&1 ||
  echo "benchmark bus_speed (huge pages) failed or timed out (log: bench-bus_speed-huge.log)" | tee -a "$summary"
sed -n '/ — device: /,/^ratio:/p' "$out/bench-bus_speed-huge.log" | sed 's/^ *[0-9]*\/[0-9]* [a-z_]* *//' >>"$summary"

step report
if python3 -c "import matplotlib" 2>/dev/null; then
  python3 tests/bench/report.py "$HIVECL_BENCH_CSV" "$out/report" --title "HiveCL on $(nvidia-smi -L | head -1 | cut -d'(' -f1)" \
    >>"$summary" 2>&1
else
  echo "no matplotlib here: run tests/bench/report.py $out/bench.csv DIR elsewhere" | tee -a "$summary"
fi
cat "$summary"
tar czf "$out.tgz" -C "$out" . && mv "$out.tgz" "$out/all-results.tgz"
