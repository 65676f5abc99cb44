#!/usr/bin/env bash
# The soak test (tests/fault, [soak]) against a proxy running under valgrind memcheck; fails
# on any memcheck error or definite/indirect leak outside the suppressed libraries.
# Not in the default suite (PoCL under valgrind makes every client take seconds).
#
#   tests/sanitizer/valgrind-soak.sh BUILD_DIR [SEQUENTIAL [CONCURRENT]]
#
# Defaults: 10 sequential clients, then 3 rounds of 8 concurrent ones. The proxy's memcheck
# report is kept as BUILD_DIR/valgrind-soak/valgrind.log.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
sequential=${2:-10}
concurrent=${3:-8}
command -v valgrind >/dev/null || { echo "valgrind-soak.sh: valgrind is not installed" >&2; exit 77; }

out=$build/valgrind-soak
rm -rf "$out" && mkdir -p "$out"
# hivecl-cluster runs $HIVECL_PROXY: this wrapper puts memcheck in front of the real proxy.
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
# Memcheck slows the proxy down many times: connecting gets more time than usual.
status=0
HIVECL_PROXY=$wrapper HIVECL_CONNECT_TIMEOUT_MS=60000 HIVECL_SOAK_SEQUENTIAL=$sequential \
  HIVECL_SOAK_CONCURRENT=$concurrent HIVECL_SOAK_MEMORY_CHECKER=valgrind \
  "$here/../with-cluster.sh" "$build" "$build/tests/fault-tests" '[soak]' || status=$?
echo "valgrind-soak.sh: $sequential sequential and 3 x $concurrent concurrent clients:" \
  "exit status $status after $(( $(date +%s) - started )) s"

# The serving proxy's report (the launcher also runs the wrapper for --show-config and
# --status; the waker child that the proxy may exec at shutdown runs natively).
report=$(grep -l "Command: .*hivecl-proxy --cluster-dir" "$out"/valgrind.*.log | head -n 1 || true)
if [ -z "$report" ] || ! grep -q "ERROR SUMMARY" "$report"; then
  echo "valgrind-soak.sh: no memcheck report of the proxy (did it exit?)" >&2
  exit 1
fi
cp "$report" "$out/valgrind.log"
grep -E "ERROR SUMMARY|definitely lost|indirectly lost|possibly lost|suppressed:" "$out/valgrind.log"
errors=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' "$out/valgrind.log" | tail -n 1)
if [ "${errors:-1}" != 0 ]; then
  echo "valgrind-soak.sh: memcheck found $errors error(s) in the proxy; see $out/valgrind.log" >&2
  status=1
fi
exit $status
