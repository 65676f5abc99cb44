#!/usr/bin/env bash
# Two proxies on this machine (one named localhost, one by the host's name: a hostfile's
# duplicate lines start one proxy), so that HiveCL shows two devices of two proxies; the
# n-body example split over both must match its run on one of them.
#   split-devices.sh BUILD_DIR
set -u
build=$(cd "$1" && pwd)
hostfile=$(mktemp)
trap 'rm -f "$hostfile"' EXIT
printf 'localhost\n%s\n' "$(hostname)" >"$hostfile"
HIVECL_TEST_HOSTFILE=$hostfile "$(dirname "${BASH_SOURCE[0]}")/../with-cluster.sh" "$build" bash -c '
  set -e
  output=$(OCL_ICD_VENDORS=${HIVECL_TEST_ICD_HIVECL%%:*} OCL_ICD_FILENAMES=${HIVECL_TEST_ICD_HIVECL#*:} \
    "$0/examples/nbody_split" --platform HiveCL --bodies 1500 --steps 3)
  echo "$output"
  grep -q "^result: 2 device(s) against 1: largest difference" <<<"$output"
  [ "$(grep -c "^share: " <<<"$output")" -eq 2 ]' "$build"
