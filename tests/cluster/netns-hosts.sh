#!/usr/bin/env bash
# Test hosts made of network namespaces (root only): hivecl-h1 … hivecl-hN, each with its own
# address on a private bridge (10.231.47.0/24; this machine is 10.231.47.1 on it), the same
# file systems, and its own host name for the commands run in it.
#
#   netns-hosts.sh up N           create N hosts (removes earlier ones first)
#   netns-hosts.sh down           remove them
#   netns-hosts.sh exec HOST LINE run a shell command line on HOST: hivecl-cluster's (and
#                                 mpirun's) ssh look-alike, --agent "netns-hosts.sh exec"
set -euo pipefail
bridge=hivecl-br0
subnet=10.231.47

host_names() { ip netns list | awk '$1 ~ /^hivecl-h[0-9]+$/ { print $1 }'; }

down() {
  local host link
  # Veth pairs first: a deleted namespace frees its end only later, asynchronously.
  for link in $(ip -o link show | awk -F': ' '$2 ~ /^hivecl-v[0-9]+@/ { sub(/@.*/, "", $2); print $2 }'); do
    ip link delete "$link"
  done
  for host in $(host_names); do ip netns delete "$host"; done
  ip link delete "$bridge" 2>/dev/null || true
}

up() {
  local count=${1:?number of hosts} i
  down
  ip link add "$bridge" type bridge
  ip addr add "$subnet.1/24" dev "$bridge"
  ip link set "$bridge" up
  for i in $(seq 1 "$count"); do
    ip netns add "hivecl-h$i"
    ip link add "hivecl-v$i" type veth peer name eth0 netns "hivecl-h$i"
    ip link set "hivecl-v$i" master "$bridge" up
    ip -n "hivecl-h$i" addr add "$subnet.$((10 + i))/24" dev eth0
    ip -n "hivecl-h$i" link set eth0 up
    ip -n "hivecl-h$i" link set lo up
  done
}

case "${1:-}" in
  up) up "${2:-}" ;;
  down) down ;;
  exec)
    host=${2:?host}; shift 2
    # A UTS namespace of its own gives the command the host's name.
    exec ip netns exec "$host" unshare --uts sh -c "hostname '$host' && $*"
    ;;
  *) sed -n '2,10s/^# \{0,1\}//p' "$0"; exit 2 ;;
esac
