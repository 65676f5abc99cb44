#!/usr/bin/env bash
# The Debian packages from a fresh machine's point of view (CI, as root): builds them with
# dpkg-buildpackage (checks off: the suite ran already; unoptimised: this checks the packaging,
# and the test command built the same code at -O2; 2 cores: the step took 249 s against 352 s
# at -O2), runs lintian (errors fail), installs them with apt-get (which pulls their run-time
# dependencies), starts a local cluster with the installed launcher, runs clinfo and
# examples/vecadd through the installed ICD, shows the cluster's status, stops it, purges the
# packages and checks that none of their files is left behind. Needs root; changes the system
# (installs and removes the packages).
#   tests/package/debian-package.sh BUILD_DIR     (BUILD_DIR: a build with examples/vecadd)
set -euo pipefail
build=$(cd "${1:?build directory with examples/vecadd}" && pwd)
source=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
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

build_options="nocheck noopt"
step "build the packages (dpkg-buildpackage, DEB_BUILD_OPTIONS=\"$build_options\")"
# A copy of the sources without build trees: dpkg-buildpackage writes its results next to it.
mkdir "$work/src"
tar -C "$source" --exclude='./build*' --exclude=./.git --exclude='./obj-*' -cf - . | tar -C "$work/src" -xf -
(cd "$work/src" && DEB_BUILD_OPTIONS="$build_options" dpkg-buildpackage -us -uc -b) >"$work/build.log" 2>&1 ||
  { tail -n 40 "$work/build.log"; exit 1; }
ls "$work"/*.deb

step "lintian"
lintian --tag-display-limit 0 "$work"/hivecl_*.changes | tee "$work/lintian.txt" || true
if grep -q '^E: ' "$work/lintian.txt"; then echo "lintian reports errors"; exit 1; fi
echo "lintian: $(grep -c '^E: ' "$work/lintian.txt") errors, $(grep -c '^W: ' "$work/lintian.txt") warnings"

step "apt-get install the packages"
arch=$(dpkg --print-architecture)
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$work/libhivecl1_${version}_$arch.deb" \
  "$work/hivecl-proxy_${version}_$arch.deb"
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
