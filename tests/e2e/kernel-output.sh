#!/usr/bin/env bash
# What kernels print through a proxy goes to the client that may have printed it (run under
# tests/with-cluster.sh). The proxy's only client gets its kernels' lines, in order, by the time
# it has exited, even where its source never names printf, and a line it never ends by then too.
# A client whose kernels print gets each of its lines once, in order, on its standard output
# while another client of the same proxy launches kernels that print nothing; that client's
# standard output stays empty, and nothing goes to the proxy's log. Two clients printing at once never get each other's text:
# each gets only its own lines, in order, and what their kernels print while both may be
# printing goes to the proxy's log (which says so; there, lines of kernels running at once may
# be interleaved, as natively in one process).
#   kernel-output.sh PRINTING_CLIENT
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
client=$1
count=200

# Each check of the printing client's output: the lines of pid (from its stderr report), in order.
expected_lines() {
  local pid
  pid=$(sed -n 's/.*pid \([0-9]*\),.*/\1/p' "$1")
  for n in $(seq 0 $((count - 1))); do echo "client $pid says $n"; done
}

on hivecl "$client" hidden $count >"$work/hidden.out" 2>"$work/hidden.err"
if [ $? -eq 0 ] && cmp -s <(expected_lines "$work/hidden.err") "$work/hidden.out"; then
  echo "ok: the only client got its $count lines, in order, from a source that does not name printf"
else
  echo "FAILED: the hidden client's output:"; cat "$work/hidden.err"; head "$work/hidden.out"
  failures=$((failures + 1))
fi

# A line that never ends is the client's too: it comes whole by the time the client has exited.
on hivecl "$client" unended $count >"$work/unended.out" 2>"$work/unended.err"
if [ $? -eq 0 ] && cmp -s <(expected_lines "$work/unended.err" | tr '\n' ' ') "$work/unended.out"; then
  echo "ok: the only client got its $count unended sayings by its exit"
else
  echo "FAILED: the unended client's output:"; cat "$work/unended.err"; head -c 300 "$work/unended.out"; echo
  failures=$((failures + 1))
fi

on hivecl "$client" quiet 20000 >"$work/quiet.out" 2>"$work/quiet.err" &
quiet=$!
on hivecl "$client" print $count >"$work/print.out" 2>"$work/print.err"
printed=$?
wait $quiet
quieted=$?

if [ $printed -eq 0 ] && cmp -s <(expected_lines "$work/print.err") "$work/print.out"; then
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
log_before=$(cat "$HIVECL_CLUSTER_DIR"/logs/proxy-*.log | wc -l)
on hivecl "$client" print $count >"$work/a.out" 2>"$work/a.err" &
first=$!
on hivecl "$client" print $count >"$work/b.out" 2>"$work/b.err"
second=$?
wait $first
first=$?
cat "$HIVECL_CLUSTER_DIR"/logs/proxy-*.log | tail -n +$((log_before + 1)) >"$work/log.new"
for side in a b; do
  pid=$(sed -n 's/.*pid \([0-9]*\),.*/\1/p' "$work/$side.err")
  own=$(grep -c "^client $pid says " "$work/$side.out")
  logged=$(grep -c "client $pid says " "$work/log.new")
  foreign=$(grep -vc "^client $pid says " "$work/$side.out")
  in_order=$(awk '{ if ($4 <= last && NR > 1) bad = 1; last = $4 } END { print bad ? "no" : "yes" }' "$work/$side.out")
  if [ -n "$pid" ] && [ "$foreign" -eq 0 ] && [ "$in_order" = yes ] && [ "$own" -le $count ] &&
     { [ "$own" -eq $count ] || grep -q "several clients may be printing" "$work/log.new"; }; then
    echo "ok: printing client $side got only its own lines ($own, in order; $logged whole in the log)"
  else
    echo "FAILED: printing client $side (pid $pid): $own own, $foreign foreign, $logged logged, in order $in_order"
    grep -vn "^client $pid says " "$work/$side.out" | head -3 | cat -A
    failures=$((failures + 1))
  fi
done
[ $first -eq 0 ] && [ $second -eq 0 ] || { echo "FAILED: a printing client failed"; failures=$((failures + 1)); }
[ $failures -eq 0 ]
