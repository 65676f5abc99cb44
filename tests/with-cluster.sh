#!/usr/bin/env bash
# Runs a command against a private HiveCL cluster (ompi-server and one hivecl-proxy serving
# the native test platform) in a fresh rendezvous directory, and always stops it afterwards.
#
#   with-cluster.sh BUILD_DIR COMMAND [ARGS...]
#
# The command sees two platforms: the native one and HiveCL in front of it. Set
# HIVECL_TEST_NATIVE_PLATFORM / HIVECL_TEST_NATIVE_ICD to test another native platform
# (default: PoCL, libpocl.so.2); HIVECL_TEST_HOSTFILE starts one proxy per host of a hostfile
# (with hivecl-cluster's agent, HIVECL_LAUNCH_AGENT). The proxy's log is $HIVECL_CLUSTER_DIR/logs/proxy-localhost.log;
# HIVECL_TEST_KEEP_LOGS=DIR keeps a copy of each cluster's logs in a directory of its own there.
set -u
build=$(cd "$1" && pwd); shift
cluster=$build/proxy/hivecl-cluster
HIVECL_CLUSTER_DIR=$(mktemp -d "${TMPDIR:-/tmp}/hivecl-test.XXXXXX")
export HIVECL_CLUSTER_DIR
# HIVECL_TEST_SECRET=TEXT: the cluster and the command share a secret of that text.
if [ -n "${HIVECL_TEST_SECRET:-}" ]; then
  (umask 077 && printf '%s\n' "$HIVECL_TEST_SECRET" >"$HIVECL_CLUSTER_DIR/secret")
  export HIVECL_SECRET_FILE=$HIVECL_CLUSTER_DIR/secret
fi
native_platform=${HIVECL_TEST_NATIVE_PLATFORM:-Portable Computing Language}
native_icd=${HIVECL_TEST_NATIVE_ICD:-libpocl.so.2}
export HIVECL_TEST_NATIVE_PLATFORM=$native_platform
# mpirun refuses root without these; CI runs as root.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# Stops the cluster. A proxy that does not shut down cleanly, or a sanitizer report in a
# proxy's log (a sanitized build), fails the test: the proxy runs detached from it.
cleanup() {
  local status=$?
  if ! "$cluster" stop >/dev/null 2>&1; then
    echo "with-cluster.sh: the proxy did not shut down cleanly; its log:" >&2
    cat "$HIVECL_CLUSTER_DIR"/logs/proxy-*.log >&2
    status=1
  fi
  if grep -lE "ERROR: (Address|Leak)Sanitizer|WARNING: ThreadSanitizer|runtime error:" "$HIVECL_CLUSTER_DIR"/logs/*.log >/dev/null 2>&1; then
    echo "with-cluster.sh: sanitizer reports in the cluster's logs:" >&2
    cat "$HIVECL_CLUSTER_DIR"/logs/*.log >&2
    status=1
  fi
  if [ -n "${HIVECL_TEST_KEEP_LOGS:-}" ]; then
    local kept=$HIVECL_TEST_KEEP_LOGS/$(basename "$HIVECL_CLUSTER_DIR")
    mkdir -p "$kept" && cp -r "$HIVECL_CLUSTER_DIR/logs/." "$kept/" && echo "$status" >"$kept/exit-status"
  fi
  rm -rf "$HIVECL_CLUSTER_DIR"
  exit $status
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if ! OCL_ICD_FILENAMES=$native_icd OCL_ICD_VENDORS=/etc/OpenCL/vendors HIVECL_PROXY_PLATFORM=$native_platform \
    "$cluster" start ${HIVECL_TEST_HOSTFILE:+--hostfile "$HIVECL_TEST_HOSTFILE"} >"$HIVECL_CLUSTER_DIR/start.log" 2>&1; then
  cat "$HIVECL_CLUSTER_DIR/start.log" >&2
  exit 1
fi
# Both platforms for the command, for either loader: ocl-icd 2.3.1 (Debian 12) reads only
# OCL_ICD_VENDORS, ocl-icd 2.3.2 and the Khronos loader honour OCL_ICD_FILENAMES too.
# Programs that must see one platform alone use the vendors-native and vendors-hivecl
# directories (HIVECL_TEST_ICD_<SIDE>: "directory:library").
vendors() {
  mkdir -p "$HIVECL_CLUSTER_DIR/$1"
  for library in "${@:2}"; do echo "$library" >"$HIVECL_CLUSTER_DIR/$1/$(basename "$library").icd"; done
}
hivecl_library=$build/icd/libhivecl.so.1
vendors vendors "$native_icd" "$hivecl_library"
vendors vendors-native "$native_icd"
vendors vendors-hivecl "$hivecl_library"
export HIVECL_TEST_ICD_NATIVE=$HIVECL_CLUSTER_DIR/vendors-native:$native_icd
export HIVECL_TEST_ICD_HIVECL=$HIVECL_CLUSTER_DIR/vendors-hivecl:$hivecl_library
OCL_ICD_VENDORS=$HIVECL_CLUSTER_DIR/vendors OCL_ICD_FILENAMES=$native_icd:$hivecl_library "$@"
