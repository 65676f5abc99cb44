#!/usr/bin/env bash
# A real single-node Slurm (Debian's slurm-wlm and munge) runs examples/slurm/hivecl-job.sh:
# the test writes a slurm.conf for this machine, starts munged, slurmctld and slurmd itself,
# submits the job with sbatch (clinfo, then examples/vecadd through HiveCL), checks its
# output, then stops the daemons and removes everything. Needs root; skipped otherwise.
#   slurm-job.sh BUILD_DIR SOURCE_DIR
set -u
build=$(cd "$1" && pwd) source=$(cd "$2" && pwd)
skip() { echo "skipped: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root (it starts munged, slurmctld and slurmd)"
for program in munged mungekey slurmctld slurmd sbatch scontrol; do
  command -v "$program" >/dev/null || skip "$program is not installed (apt-get install slurm-wlm munge)"
done

work=$(mktemp -d "${TMPDIR:-/tmp}/hivecl-slurm.XXXXXX")
chmod 755 "$work"
mkdir -m 700 "$work/munge"
mkdir "$work/state" "$work/spool" "$work/home"
node=$(hostname -s)
export SLURM_CONF=$work/slurm.conf
munge_socket=$work/munge/munge.socket

stop_daemons() {
  scancel --quiet --full --signal=KILL --jobname=hivecl 2>/dev/null
  for pid_file in "$work/slurmd.pid" "$work/slurmctld.pid" "$work/munge/munged.pid"; do
    [ -s "$pid_file" ] || continue
    local pid; pid=$(cat "$pid_file")
    kill "$pid" 2>/dev/null
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
  done
}
show_logs() { for log in "$work"/*.log "$work"/munge/*.log; do echo "--- $log"; tail -n 30 "$log"; done; }
trap 'stop_daemons; rm -rf "$work"' EXIT

# Ports of their own, so that the test does not meet a Slurm already running here.
port=$((20000 + RANDOM % 20000))
cat >"$SLURM_CONF" <<CONF
ClusterName=hivecltest
SlurmctldHost=$node
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$munge_socket
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
$(slurmd -C | head -n 1) State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP
CONF

mungekey --create --keyfile="$work/munge/munge.key" || { echo "mungekey failed"; exit 1; }
munged --force --socket="$munge_socket" --key-file="$work/munge/munge.key" --pid-file="$work/munge/munged.pid" \
       --log-file="$work/munge/munged.log" --seed-file="$work/munge/munged.seed" ||
  { echo "munged did not start"; show_logs; exit 1; }
slurmctld -f "$SLURM_CONF" || { echo "slurmctld did not start"; show_logs; exit 1; }
slurmd -f "$SLURM_CONF" || { echo "slurmd did not start"; show_logs; exit 1; }
for _ in $(seq 1 300); do
  sinfo -h -n "$node" -o %T 2>/dev/null | grep -q idle && break
  sleep 0.1
done
sinfo -h -n "$node" -o %T | grep -q idle || { echo "the node did not come up"; sinfo; show_logs; exit 1; }
echo "ok: single-node Slurm up ($(sinfo -V))"

# The job sees HiveCL (this build) next to the native platform, and this build's launcher.
mkdir "$work/vendors"
echo libpocl.so.2 >"$work/vendors/pocl.icd"
echo "$build/icd/libhivecl.so.1" >"$work/vendors/hivecl.icd"
job_out=$work/job.out
if ! HOME=$work/home PATH=$build/proxy:$PATH OCL_ICD_VENDORS=$work/vendors \
     timeout 300 sbatch --wait --output="$job_out" "$source/examples/slurm/hivecl-job.sh" \
     "$build/examples/vecadd" --platform HiveCL --size 100000 >"$work/sbatch.out" 2>&1; then
  echo "FAILED: the job failed"; cat "$work/sbatch.out" "$job_out"; show_logs
  exit 1
fi
echo "== the job's output"; cat "$job_out"
failures=0
expect() {
  if grep -qE "$2" "$job_out"; then echo "ok: $1"; else echo "FAILED: $1"; failures=$((failures + 1)); fi
}
expect "the launcher started one proxy on the allocation's node" "started 1 proxy\(ies\)"
expect "status lists the proxy on $node" "^proxy on $node, pid"
expect "clinfo lists HiveCL" "^Platform #[0-9]+: HiveCL"
expect "vecadd ran on HiveCL" "^platform: HiveCL"
expect "vecadd's result is right" "^result: 100000 elements, 0 wrong"
expect "vecadd ran on $node" "^node: $node"
expect "the cluster was stopped" "stopped the cluster"
logs=$(ls "$work"/home/.hivecl/slurm-*/logs/proxy-*.log 2>/dev/null)
if [ "$logs" = "$(ls "$work"/home/.hivecl/slurm-*/logs/proxy-"$node".log 2>/dev/null)" ] && [ -n "$logs" ]; then
  echo "ok: the proxy ran on the allocation's node, in the job's own cluster directory"
else
  echo "FAILED: proxy logs not where expected: ${logs:-none}"; failures=$((failures + 1))
fi
[ $failures -eq 0 ]
