#!/usr/bin/env bash
# A client of a proxy of its own node connects without MPI (transport/watchdog.hpp): vecadd
# through HiveCL gives native's result, and libhivecl never initialises MPI (its debug log says
# when it does: the check's own control is the same run with the client told to send its
# control frames over MPI, where it must).
#   without-mpi.sh BUILD_DIR        (under tests/with-cluster.sh)
set -u
build=$1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Runs vecadd through HiveCL, logging at debug level, with the settings given; checks its result.
vecadd_through_hivecl() {
  local run=$1; shift
  env HIVECL_LOG=debug "$@" bash -c "source '$(dirname "${BASH_SOURCE[0]}")/lib.sh'; on hivecl '$build/examples/vecadd' --size 4096" \
    >"$work/$run.out" 2>&1 || { echo "FAILED: vecadd ($run) exited $?"; cat "$work/$run.out"; failures=$((failures + 1)); }
  same "vecadd result ($run)" '^result: ' "$work/native.out" "$work/$run.out"
}

expect() {
  local what=$1; shift
  if "$@"; then echo "ok: $what"; else echo "FAILED: $what"; failures=$((failures + 1)); fi
}

on native "$build/examples/vecadd" --size 4096 >"$work/native.out" 2>&1
vecadd_through_hivecl default
expect "the client connected without MPI" grep -q 'connected to proxy .* (without MPI)' "$work/default.out"
expect "the client did not initialise MPI" test -z "$(grep 'MPI initialised' "$work/default.out")"
vecadd_through_hivecl control-over-mpi HIVECL_CONTROL_PATH=mpi
expect "a client told to use MPI initialised it" grep -q 'MPI initialised' "$work/control-over-mpi.out"
expect "and connected over MPI" test -z "$(grep '(without MPI)' "$work/control-over-mpi.out")"
# Both moved their data through memory: the probe the proxy read back was the watchdog connection's
# nonce, then its token (proxy/data_path.hpp).
expect "the client without MPI moved its data through memory" grep -q 'data path memory' "$work/default.out"
expect "the client over MPI moved its data through memory" grep -q 'data path memory' "$work/control-over-mpi.out"
[ $failures -eq 0 ] || { echo "--- default:"; cat "$work/default.out"; echo "--- over MPI:"; cat "$work/control-over-mpi.out"; false; }
