#!/usr/bin/env bash
# Runs a command with HiveCL serving this node's devices in-process, with NO cluster: no
# ompi-server, no proxy, an empty rendezvous directory. Fails if the command fails or if
# MPI was initialised (Open MPI makes its session directory under TMPDIR when it starts).
#
#   local-only.sh BUILD_DIR COMMAND [ARGS...]
#
# The command sees two platforms, the native one and HiveCL in front of it (in-process),
# like under tests/with-cluster.sh (same HIVECL_TEST_NATIVE_PLATFORM / HIVECL_TEST_NATIVE_ICD,
# and HIVECL_TEST_ICD_<SIDE> for a program that must see one alone; HiveCL alone then finds
# the native library through HIVECL_LOCAL_LIBRARIES, which tests/e2e/lib.sh's `on` sets).
set -u
build=$(cd "$1" && pwd); shift
work=$(mktemp -d "${TMPDIR:-/tmp}/hivecl-local.XXXXXX")
trap 'rm -rf "$work"' EXIT
native_icd=${HIVECL_TEST_NATIVE_ICD:-libpocl.so.2}
export HIVECL_TEST_NATIVE_PLATFORM=${HIVECL_TEST_NATIVE_PLATFORM:-Portable Computing Language}
hivecl_library=$build/icd/libhivecl.so.1
mkdir -p "$work/cluster" "$work/tmp" "$work/vendors" "$work/vendors-native" "$work/vendors-hivecl"
echo "$native_icd" | tee "$work/vendors/native.icd" >"$work/vendors-native/native.icd"
echo "$hivecl_library" | tee "$work/vendors/hivecl.icd" >"$work/vendors-hivecl/hivecl.icd"
export HIVECL_TEST_ICD_NATIVE=$work/vendors-native:$native_icd
export HIVECL_TEST_ICD_HIVECL=$work/vendors-hivecl:$hivecl_library
# HiveCL finds the libraries to serve as the loader does (its own .icd among them: skipped).
HIVECL_CLUSTER_DIR=$work/cluster HIVECL_LOCAL_DEVICES=in-process TMPDIR=$work/tmp \
  OCL_ICD_VENDORS=$work/vendors OCL_ICD_FILENAMES=$native_icd:$hivecl_library "$@"
status=$?
if compgen -G "$work/tmp/ompi.*" >/dev/null || compgen -G "$work/tmp/openmpi-sessions*" >/dev/null; then
  echo "local-only.sh: MPI was initialised although only in-process devices were used" >&2
  status=1
fi
exit $status
