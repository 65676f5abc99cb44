#!/usr/bin/env bash
# fault-tests [peer-death-VICTIM] under two proxies: one proxy killed while it sends a buffer
# to the other (sender), receives one (receiver), sends or receives an image (image-sender,
# image-receiver), or is to receive a buffer whose send a user event holds back (held-receiver),
# or holds an event the other waits for (event). When the sender
# or the event's proxy dies, the other fails the user event that the waiting commands depend
# on; a native runtime that aborts doing so (PoCL 3.1: docs/FINDINGS.md) would take it down
# too, so those cases are skipped (exit 77) where failed-event-probe does not come through
# natively within 20 s (the probe is one marker on one user event; PoCL 3.1 aborts or hangs
# there, run by run: a hang used to cost the 60 s the probe had).
#   peer-death.sh BUILD_DIR FAULT_TESTS FAILED_EVENT_PROBE sender|receiver|image-sender|image-receiver|held-receiver|event
set -u
build=$(cd "$1" && pwd) fault_tests=$2 probe=$3 victim=$4
"$(dirname "${BASH_SOURCE[0]}")/../cluster/with-two-proxies.sh" "$build" bash -c '
  native=$HIVECL_TEST_ICD_NATIVE  # directory:library
  if [ "${2%receiver}" = "$2" ] && ! OCL_ICD_VENDORS=${native%%:*} OCL_ICD_FILENAMES=${native#*:} timeout 20 "$1"; then
    echo "SKIP: the native runtime aborts or hangs failing a user event that a marker waits for:"
    echo "a proxy on it would not survive the death of the proxy it waits for"
    exit 77
  fi
  exec "$0" "[peer-death-$2]"' "$fault_tests" "$probe" "$victim"
