#!/usr/bin/env bash
# Every example (examples/) at small sizes, once seeing only the native platform and once
# seeing only HiveCL (under tests/with-cluster.sh, or in-process under tests/local-only.sh):
# both must succeed (each checks its result on the CPU) and print the same device and the same
# result line (checksums included).
#   examples.sh BUILD_DIR
set -u
build=$1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

check_example() {
  local name=$1; shift
  local status_native status_hivecl
  on native "$build/examples/$name" "$@" >"$work/$name.native" 2>&1; status_native=$?
  on hivecl "$build/examples/$name" "$@" >"$work/$name.hivecl" 2>&1; status_hivecl=$?
  if [ $status_native -ne 0 ] || [ $status_hivecl -ne 0 ] || ! grep -q '^time: ' "$work/$name.hivecl"; then
    echo "FAILED: $name exited $status_native natively and $status_hivecl through HiveCL"
    echo "--- native:"; cat "$work/$name.native"; echo "--- HiveCL:"; cat "$work/$name.hivecl"
    failures=$((failures + 1))
    return
  fi
  same "$name result" '^result: ' "$work/$name.native" "$work/$name.hivecl"
  same "$name device" '^device: ' "$work/$name.native" "$work/$name.hivecl"
  grep -q "^node: $(uname -n)" "$work/$name.hivecl" && echo "ok: $name names the node" ||
    { echo "FAILED: $name does not name the node"; failures=$((failures + 1)); }
}

check_example vecadd --size 300000
check_example sgemm --size 128
check_example dgemm --size 96
check_example nbody --bodies 500 --steps 2
check_example nbody_split --bodies 500 --steps 2
check_example transpose --size 300 --repeat 2
check_example smith_waterman --length 200
check_example svm_lists --lists 200 --nodes 50

[ $failures -eq 0 ]
