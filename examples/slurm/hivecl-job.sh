#!/usr/bin/env bash
#SBATCH --job-name=hivecl
#SBATCH --nodes=1
#SBATCH --time=00:10:00
# A Slurm batch job that uses the GPUs of its nodes through HiveCL: starts one hivecl-proxy
# per allocated node, runs an unmodified OpenCL program, and stops the cluster.
#
#   sbatch [--nodes=N] hivecl-job.sh [PROGRAM ARGS...]
#
# hivecl-cluster finds the allocation's nodes itself (no hostfile). The cluster's
# rendezvous directory is ~/.hivecl/slurm-$SLURM_JOB_ID by default, which HiveCL's clients
# on the job's nodes find by themselves; with several nodes, $HOME must be shared by them
# (or set HIVECL_CLUSTER_DIR to a shared directory before sbatch). Proxy logs are in its
# logs/ subdirectory. `clinfo -l` shows the platforms the job sees (HiveCL next to the
# native ones), then the program runs.
set -euo pipefail
# mpirun refuses root unless told that it is meant.
[ "$(id -u)" -ne 0 ] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

hivecl-cluster start
trap 'hivecl-cluster stop' EXIT
hivecl-cluster status
if command -v clinfo >/dev/null; then clinfo -l; fi
if [ $# -gt 0 ]; then "$@"; fi
