#!/usr/bin/env bash
# What kernels print through a proxy goes to the client that may have printed it (run under
# tests/with-cluster.sh): a client whose kernels print gets each of its lines once, in order, on
# its standard output while another client of the same proxy launches kernels that print nothing;
# that client's standard output stays empty, and nothing goes to the proxy's log.
#   kernel-output.sh PRINTING_CLIENT
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
client=$1
count=200

on hivecl "$client" quiet 20000 >"$work/quiet.out" 2>"$work/quiet.err" &
quiet=$!
on hivecl "$client" print $count >"$work/print.out" 2>"$work/print.err"
printed=$?
wait $quiet
quieted=$?

pid=$(sed -n 's/.*pid \([0-9]*\),.*/\1/p' "$work/print.err")
for n in $(seq 0 $((count - 1))); do echo "client $pid says $n"; done >"$work/expected"
if [ $printed -eq 0 ] && [ -n "$pid" ] && cmp -s "$work/expected" "$work/print.out"; then
  echo "ok: the printing client got its $count lines, in order"
else
  echo "FAILED: the printing client's output (status $printed):"; cat "$work/print.err"; head "$work/print.out"
  failures=$((failures + 1))
fi
if [ $quieted -eq 0 ] && [ ! -s "$work/quiet.out" ]; then
  echo "ok: the other client got nothing"
else
  echo "FAILED: the quiet client (status $quieted) got:"; cat "$work/quiet.err"; head "$work/quiet.out"
  failures=$((failures + 1))
fi
if grep -q "says" "$HIVECL_CLUSTER_DIR"/logs/proxy-*.log; then
  echo "FAILED: kernel output in the proxy's log"; failures=$((failures + 1))
else
  echo "ok: nothing in the proxy's log"
fi
[ $failures -eq 0 ]
