#!/usr/bin/env bash
# The Debian packages from a fresh machine's point of view (CI, as root): builds them and runs
# lintian (build-debian-packages.sh) unless PACKAGES_DIR holds them already (that script's
# output), installs them with apt-get (which pulls their run-time dependencies), starts a local
# cluster with the installed launcher, runs clinfo and examples/vecadd through the installed
# ICD, shows the cluster's status, stops it, purges the packages and checks that none of their
# files is left behind. Needs root; changes the system (installs and removes the packages).
#   tests/package/debian-package.sh BUILD_DIR [PACKAGES_DIR]    (BUILD_DIR: a build with examples/vecadd)
set -euo pipefail
build=$(cd "${1:?build directory with examples/vecadd}" && pwd)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source=$(cd "$here/../.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "debian-package.sh: needs root (installs the packages)" >&2; exit 1; }
version=$(dpkg-parsechangelog -l "$source/debian/changelog" -S Version)
work=$(mktemp -d "${TMPDIR:-/tmp}/hivecl-package.XXXXXX")
export HIVECL_CLUSTER_DIR=$work/cluster OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
packages=(libhivecl1 hivecl-proxy)
cleanup() {
  if [ -x /usr/bin/hivecl-cluster ]; then /usr/bin/hivecl-cluster stop >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
step() { echo; echo "== $*"; }

if [ -n "${2:-}" ]; then
  packages_dir=$(cd "$2" && pwd)  # apt-get takes a path with a slash as a file to install
else
  packages_dir=$work/packages
  "$here/build-debian-packages.sh" "$packages_dir"
fi

step "apt-get install the packages"
arch=$(dpkg --print-architecture)
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$packages_dir/libhivecl1_${version}_$arch.deb" \
  "$packages_dir/hivecl-proxy_${version}_$arch.deb"
dpkg -L "${packages[@]}" | sort -u >"$work/files"
dpkg-query -W "${packages[@]}"

step "a local cluster started by the installed launcher"
[ "$(command -v hivecl-cluster)" = /usr/bin/hivecl-cluster ]
hivecl-cluster start
step "clinfo through the installed ICD (/etc/OpenCL/vendors/hivecl.icd)"
clinfo -l | tee "$work/clinfo.out"
grep -q "Platform #.*: HiveCL" "$work/clinfo.out"
step "examples/vecadd through the installed ICD"
"$build/examples/vecadd" --platform HiveCL --size 100000 | tee "$work/vecadd.out"
grep -q "^result: 100000 elements, 0 wrong" "$work/vecadd.out"
step "status, then stop"
hivecl-cluster status
hivecl-cluster stop

step "purge the packages"
DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq "${packages[@]}"
left=()
while read -r path; do
  [ -e "$path" ] && [ ! -d "$path" ] && left+=("$path")
done <"$work/files"
for directory in /etc/hivecl /usr/share/doc/libhivecl1 /usr/share/doc/hivecl-proxy; do
  [ -e "$directory" ] && left+=("$directory")
done
if [ ${#left[@]} -gt 0 ]; then echo "left behind after purge: ${left[*]}"; exit 1; fi
echo "ok: purged, no file of the packages left behind"
