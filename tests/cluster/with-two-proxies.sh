#!/usr/bin/env bash
# tests/with-cluster.sh with two proxies on this machine (hostfile lines localhost and the
# host's name: identical lines would start one), so that HiveCL shows two devices of two
# proxies.
#   with-two-proxies.sh BUILD_DIR COMMAND [ARGS...]
set -u
hostfile=$(mktemp)
trap 'rm -f "$hostfile"' EXIT
printf 'localhost\n%s\n' "$(hostname)" >"$hostfile"
HIVECL_TEST_HOSTFILE=$hostfile "$(dirname "${BASH_SOURCE[0]}")/../with-cluster.sh" "$@"
