#!/usr/bin/env bash
# `hivecl-cluster status` shows a live session as the proxy reports it: a client holding a
# context, a queue and a 1 MiB buffer it wrote and read back (run under with-cluster.sh).
#   live-session.sh BUILD_DIR HOLD_SESSION_PROGRAM
set -u
build=$1 holder=$2
size=1048576
work=$(mktemp -d)
mkfifo "$work/stdin"
OCL_ICD_VENDORS=${HIVECL_TEST_ICD_HIVECL%%:*} OCL_ICD_FILENAMES=${HIVECL_TEST_ICD_HIVECL#*:} \
  "$holder" $size <"$work/stdin" >"$work/holder.out" 2>&1 &
holder_pid=$!
exec 3>"$work/stdin"
trap 'exec 3>&-; wait $holder_pid; rm -rf "$work"' EXIT
for _ in $(seq 1 300); do grep -q ready "$work/holder.out" && break; sleep 0.1; done
grep -q ready "$work/holder.out" || { echo "FAILED: the client did not open its session"; cat "$work/holder.out"; exit 1; }

# The proxy rewrites its status every second: wait for one that shows the session.
status() { "$build/proxy/hivecl-cluster" status "$@"; }
for _ in $(seq 1 50); do
  status --json | grep -q '"session"' && break
  sleep 0.2
done
echo "== hivecl-cluster status"; status
echo "== hivecl-cluster status --json"; status --json | tee "$work/status.json"
python3 - "$work/status.json" "$size" "$(uname -n)" <<'PYTHON'
import json, re, sys
status, size, node = json.load(open(sys.argv[1])), int(sys.argv[2]), sys.argv[3]
proxy = status["proxies"][0]
session = proxy["sessions"][0]
checks = {
    "one proxy on this node": len(status["proxies"]) == 1 and proxy["node"] == node,
    "its devices": len(proxy["devices"]) > 0 and proxy["devices"][0]["name"] != "?",
    # Where each device sits (hwloc): null for a device without PCI information (a CPU device).
    "their PCI bus ids and NUMA nodes": all(
        (d["pci_bus_id"] is None or re.fullmatch(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f]", d["pci_bus_id"]))
        and (d["numa_node"] is None or d["numa_node"] >= 0) for d in proxy["devices"]),
    "one client": len(proxy["sessions"]) == 1 and session["client_host"] == node and session["client_pid"] > 0,
    "context, queue and buffer held": session["objects"] >= 3,
    "the buffer's device memory": session["device_bytes"] == size,
    "bytes written to the proxy": session["bytes_to_proxy"] >= size,
    "bytes read back": session["bytes_to_client"] >= size,
    "calls served": session["calls"] >= 5,
}
for what, good in checks.items():
    print(("ok: " if good else "FAILED: ") + what)
sys.exit(0 if all(checks.values()) else 1)
PYTHON
