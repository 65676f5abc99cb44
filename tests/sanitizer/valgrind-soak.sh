#!/usr/bin/env bash
# The soak test (tests/fault, [soak]) against a proxy running under valgrind memcheck; fails
# on any memcheck error or definite/indirect leak outside the suppressed libraries.
# Not in the default suite (PoCL under valgrind makes every client take seconds).
#
#   tests/sanitizer/valgrind-soak.sh BUILD_DIR [SEQUENTIAL [CONCURRENT]]
#
# Defaults: 10 sequential clients, then 3 rounds of 8 concurrent ones. The memcheck report
# is kept in BUILD_DIR/valgrind-soak/ (valgrind.log, one file per process).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
sequential=${2:-10}
concurrent=${3:-8}
command -v valgrind >/dev/null || { echo "valgrind-soak.sh: valgrind is not installed" >&2; exit 77; }

out=$build/valgrind-soak
rm -rf "$out" && mkdir -p "$out"
# hivecl-cluster starts $HIVECL_PROXY in the proxy's mpirun job: this wrapper puts memcheck
# in front of the real proxy. The waker child that the proxy execs at shutdown (/proc/self/exe)
# runs natively (no --trace-children).
wrapper=$out/hivecl-proxy-under-valgrind
cat >"$wrapper" <<EOF
#!/bin/sh
exec valgrind --tool=memcheck --leak-check=full --show-leak-kinds=definite,indirect \
  --errors-for-leak-kinds=definite,indirect --num-callers=30 \
  --suppressions=$here/valgrind.supp --gen-suppressions=all \
  --log-file=$out/valgrind.%p.log "$build/proxy/hivecl-proxy" "\$@"
EOF
chmod +x "$wrapper"

started=$(date +%s)
# Memcheck is slow to start a proxy (PoCL's LLVM) and to stop it: the clients and the
# stop get more time than usual.
status=0
HIVECL_PROXY=$wrapper HIVECL_CONNECT_TIMEOUT_MS=60000 HIVECL_SOAK_SEQUENTIAL=$sequential \
  HIVECL_SOAK_CONCURRENT=$concurrent HIVECL_SOAK_MEMORY_CHECKER=valgrind \
  "$here/../with-cluster.sh" "$build" "$build/tests/fault-tests" '[soak]' || status=$?
echo "valgrind-soak.sh: soak with $sequential sequential and 3 x $concurrent concurrent clients, exit $status," \
  "$(( $(date +%s) - started )) s"

# Memcheck's summary of the proxy (the log that has one; the waker child runs natively).
report=$(grep -l "ERROR SUMMARY" "$out"/valgrind.*.log | head -n 1)
[ -n "$report" ] || { echo "valgrind-soak.sh: no memcheck report (did the proxy exit?)" >&2; exit 1; }
cp "$report" "$out/valgrind.log"
grep -E "ERROR SUMMARY|definitely lost|indirectly lost|possibly lost|suppressed:" "$out/valgrind.log"
errors=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' "$out/valgrind.log" | tail -n 1)
if [ "${errors:-1}" != 0 ]; then
  echo "valgrind-soak.sh: memcheck found $errors error(s) in the proxy; see $out/valgrind.log" >&2
  status=1
fi
exit $status
