#!/usr/bin/env bash
# In-process transfers on the GPU machine (see check-nvidia.sh for its set-up: nettle's headers
# carried in) over several processes: tests/bench/passes-in-process.sh with HiveCL serving the
# NVIDIA GPU in-process against native NVIDIA, side by side and with one platform a process,
# each against its A/A. Its settings (PASSES, PARTS, ROUNDS, MAX_BYTES, PASS_SECONDS) pass
# through; here 20 passes up to 256 MiB by default, until DEADLINE (default 540 s: the device
# tool's calls are limited to 600 s) ends them. Logs, CSVs and the tables go to OUTPUT_DIR, and
# all of it to OUTPUT_DIR/all.tgz (the device tool brings back few files).
#   [BUILDTYPE=release] [DEADLINE=540] [PASSES=20] ... tests/gpu/bench-local-passes.sh OUTPUT_DIR
set -u
out=$(mkdir -p "${1:?output directory}" && cd "$1" && pwd)
end=$(( $(date +%s) + ${DEADLINE:-540} - 15 ))  # 15 s for the archive
export PASSES=${PASSES:-20} MAX_BYTES=${MAX_BYTES:-$((256 << 20))}
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export HIVECL_TEST_NATIVE_PLATFORM=${HIVECL_TEST_NATIVE_PLATFORM:-NVIDIA CUDA}
export HIVECL_TEST_NATIVE_ICD=${HIVECL_TEST_NATIVE_ICD:-libnvidia-opencl.so.1}
build=${BUILD_DIR:-build-gpu}
{ nvidia-smi -L; nproc; git log --oneline -1; } >"$out/environment.txt" 2>&1
reconfigure=; [ -f "$build/build.ninja" ] && reconfigure=--reconfigure
if ! { meson setup $reconfigure "$build" -Dwerror=true --buildtype="${BUILDTYPE:-release}" &&
       meson compile -C "$build" icd/hivecl:shared_library icd/hivecl-local:shared_library bench-transfers \
         bench-alone; } >"$out/build.log" 2>&1; then
  tail -40 "$out/build.log"
  exit 1
fi
DEADLINE=$(( end - $(date +%s) )) tests/local-only.sh "$build" tests/bench/passes-in-process.sh "$out" \
  "$build/tests/bench-transfers" "$build/tests/bench-alone" 2>&1 | tee "$out/summary.txt"
tar czf "$out.tgz" -C "$out" . && mv "$out.tgz" "$out/all.tgz"
