#!/usr/bin/env bash
# tests/with-cluster.sh with two proxies on this machine (hostfile lines localhost and the
# host's name: identical lines would start one), so that HiveCL shows two devices of two
# proxies. Data of a context over both moves proxy to proxy, as between two nodes, unless
# HIVECL_LOCAL_PROXY_MOVES says otherwise (its default outside the tests: through the
# application, README "Contexts over several proxies").
#   with-two-proxies.sh BUILD_DIR COMMAND [ARGS...]
set -u
export HIVECL_LOCAL_PROXY_MOVES=${HIVECL_LOCAL_PROXY_MOVES:-proxy}
hostfile=$(mktemp)
trap 'rm -f "$hostfile"' EXIT
printf 'localhost\n%s\n' "$(hostname)" >"$hostfile"
HIVECL_TEST_HOSTFILE=$hostfile "$(dirname "${BASH_SOURCE[0]}")/../with-cluster.sh" "$@"
