#!/usr/bin/env bash
# HiveCL's development commands (README.md):
#   ./dev.sh demo   install what is missing, build, start a local cluster (ompi-server and one
#                   proxy), run examples/vecadd through HiveCL, stop the cluster
#   ./dev.sh test   install what is missing, build with warnings as errors, run the test suite
#   ./dev.sh deps   only install the Debian packages HiveCL needs (root or sudo)
#   ./dev.sh suite BUILD_DIR [OPTIONS]  run an existing build's suite (failed tests retried once)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

packages=(g++ pkg-config meson ninja-build openmpi-bin libopenmpi-dev ocl-icd-opencl-dev opencl-headers
          pocl-opencl-icd catch2 clinfo clblast-tests nettle-dev libhwloc-dev valgrind)

deps() {
  local missing=()
  for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "ok installed" || missing+=("$package")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  echo "dev.sh: installing ${missing[*]}"
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

build() {
  [ -f build/build.ninja ] || meson setup build -Dwerror=true
  ninja -C build
}

# The suite, then once more the tests that failed: the cluster tests start real MPI jobs and
# time out on loaded 2-core machines now and then. A test that fails twice fails the run; a
# retried failure is printed, so it is seen.
run_tests() {
  local build_dir=$1; shift
  meson test -C "$build_dir" --print-errorlogs "$@" && return 0
  local failed
  failed=$(python3 -c 'import json, sys
print(" ".join(t["name"].split(" / ")[-1] for t in map(json.loads, open(sys.argv[1]))
               if t["result"] not in ("OK", "SKIP", "EXPECTEDFAIL")))' \
    "$build_dir/meson-logs/testlog.json")
  [ -n "$failed" ] || return 1
  echo "dev.sh: retrying once: $failed"
  # shellcheck disable=SC2086  # a list of test names
  meson test -C "$build_dir" --print-errorlogs "$@" $failed
}

# mpirun refuses to run as root unless told that it is meant.
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

case "${1:-}" in
  deps) deps ;;
  suite) shift; run_tests "$@" ;;  # suite BUILD_DIR [MESON TEST OPTIONS]: an existing build's suite
  test)
    deps
    build
    run_tests build
    ;;
  demo)
    deps
    build
    export HIVECL_CLUSTER_DIR=$PWD/build/demo-cluster
    trap 'build/proxy/hivecl-cluster stop' EXIT
    build/proxy/hivecl-cluster start
    echo
    echo "== examples/vecadd through HiveCL (the loader sees only build/icd/vendors/hivecl.icd)"
    OCL_ICD_VENDORS=$PWD/build/icd/vendors OCL_ICD_FILENAMES=$PWD/build/icd/libhivecl.so.1 \
      build/examples/vecadd --platform HiveCL
    echo
    ;;
  *)
    sed -n '2,8s/^# \{0,1\}//p' "$0"
    exit 2
    ;;
esac
