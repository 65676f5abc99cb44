#!/usr/bin/env bash
# Several hosts over TCP: three network namespaces (netns-hosts.sh), ompi-server on this
# machine, one proxy per namespace, the client here. Runs the differential API tests against
# a proxy on another host, one computation and the n-body example split over the three hosts'
# devices, contexts spanning two hosts (and this machine's in-process device), then cuts one
# host's link (no TCP reset: only the peer timeout can tell) and checks that its
# calls fail within the timeout, cuts it again during a move from this machine's in-process
# device (the move fails in time, a later move to another host lands), then removes the
# namespaces. Skips (77) only where namespaces cannot be created.
#   multi-host.sh BUILD_DIR API_TESTS MULTI_DEVICE LINK_CUT SPANNING_CONTEXT MOVE_LINK_CUT
set -u
build=$1 api_tests=$2 multi_device=$3 link_cut=$4 spanning_context=$5 move_link_cut=$6
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
hosts=$here/netns-hosts.sh

if [ "$(id -u)" -ne 0 ]; then
  echo "multi-host: skipped: creating network namespaces needs root"
  exit 77
fi
trap '"$hosts" down' EXIT
if ! "$hosts" up 3; then
  echo "multi-host: skipped: network namespaces cannot be created here"
  exit 77
fi
# Open MPI's daemons and connections on the hosts' network only, and over TCP: the
# namespaces share this machine's memory, which UCX would otherwise use.
export OMPI_MCA_oob_tcp_if_include=10.231.47.0/24 OMPI_MCA_btl_tcp_if_include=10.231.47.0/24
export UCX_TLS=tcp,self
export HIVECL_TEST_HOSTFILE=$here/../../mpi-hostfiles/netns HIVECL_LAUNCH_AGENT="$hosts exec"
"$here/../with-cluster.sh" "$build" bash -c '
  set -e
  echo "== cluster"; "$0/proxy/hivecl-cluster" status
  echo "== differential API tests, HiveCL on the proxy of another host"; HIVECL_NODES=hivecl-h2 "$1"
  echo "== one computation over the devices of three hosts"; "$2" 3
  echo "== n-body split over the three hosts (the own device of this machine hidden), against one of them"
  HIVECL_LOCAL_DEVICES=hidden "$0/examples/nbody_split" --platform HiveCL --bodies 1200 --steps 3 |
    tee "$HIVECL_CLUSTER_DIR/split"
  [ "$(grep -c "^node: hivecl-h" "$HIVECL_CLUSTER_DIR/split")" -eq 3 ]
  echo "== one context over this machine (in-process) and hivecl-h1, then over hivecl-h1 and hivecl-h2"
  "$4" HiveCL
  HIVECL_LOCAL_DEVICES=hidden "$4" HiveCL
  # Back once hivecl-h3 reaches this machine again (a refused connection proves the route).
  h3_back() {
    for attempt in $(seq 1 100); do
      ip netns exec hivecl-h3 timeout 1 bash -c "exec 3<>/dev/tcp/10.231.47.1/9" 2>&1 | grep -q refused && return
      sleep 0.2
    done
  }
  echo "== hivecl-h3 loses its link; peer timeout 2 s"
  HIVECL_NODES=hivecl-h3 HIVECL_PEER_TIMEOUT_MS=2000 "$3" "ip link set hivecl-v3 down" "ip link set hivecl-v3 up" 8
  h3_back
  echo "== hivecl-h3 loses its link while a buffer moves to it from this machine (in-process), then one moves to hivecl-h1"
  HIVECL_NODES="$(hostname),hivecl-h1,hivecl-h3" HIVECL_PEER_TIMEOUT_MS=2000 \
    "$5" "ip link set hivecl-v3 down" "ip link set hivecl-v3 up" 8
  h3_back
  ' "$build" "$api_tests" "$multi_device" "$link_cut" "$spanning_context" "$move_link_cut"
