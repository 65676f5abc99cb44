#!/usr/bin/env bash
# Two proxies on this machine (with-two-proxies.sh), so that HiveCL shows two devices of two
# proxies:
# - examples/nbody_split over both must match its run on one of them;
# - spanning-context (one context over both devices) must give the host's results, natively
#   (both queues on the native device) and through HiveCL, its data moving proxy to proxy, then
#   through the application (local_proxy_moves).
#   two-proxies.sh BUILD_DIR SPANNING_CONTEXT
set -u
build=$(cd "$1" && pwd) spanning=$2
"$(dirname "${BASH_SOURCE[0]}")/with-two-proxies.sh" "$build" bash -c '
  set -e
  source "$2"  # on NATIVE|HIVECL COMMAND: one platform visible
  echo "== examples/nbody_split over the two proxies"
  output=$(on hivecl "$0/examples/nbody_split" --platform HiveCL --bodies 1500 --steps 3)
  echo "$output"
  grep -q "^result: 2 device(s) against 1: largest difference" <<<"$output"
  [ "$(grep -c "^share: " <<<"$output")" -eq 2 ]
  echo "== one context spanning both proxies: natively, then through HiveCL"
  on native "$1" "$HIVECL_TEST_NATIVE_PLATFORM"
  output=$(on hivecl "$1" HiveCL)
  echo "$output"
  grep -q "^devices: 2 distinct" <<<"$output"
  echo "== the buffers moved from proxy to proxy"
  [ "$(grep -l "to send it buffer data" "$HIVECL_CLUSTER_DIR"/logs/proxy-*.log | wc -l)" -eq 2 ]
  echo "== the same through HiveCL, the data moving through the application (the default for proxies of its node)"
  output=$(HIVECL_LOCAL_PROXY_MOVES=application HIVECL_LOG=debug on hivecl "$1" HiveCL 2>&1)
  grep -v " debug: " <<<"$output"
  grep -q "debug: spanning context: moving bytes .* of a buffer" <<<"$output"
  grep -q "debug: spanning context: moving bytes .* of an image" <<<"$output"
  if grep -q "debug: spanning context: proxy .* sends bytes" <<<"$output"; then
    echo "FAILED: data went proxy to proxy"
    exit 1
  fi' "$build" "$spanning" "$(dirname "${BASH_SOURCE[0]}")/../e2e/lib.sh"
