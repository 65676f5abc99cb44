#!/usr/bin/env bash
# Builds the Debian packages with dpkg-buildpackage from a copy of the sources (checks off: CI's
# suites run them; unoptimised: this checks the packaging, and the test command builds the same
# code at -O2; 2 cores: the build took 249 s against 352 s at -O2) and runs lintian on them
# (errors fail). The packages, their .changes and the logs go to OUT_DIR. CI runs it as root.
#   tests/package/build-debian-packages.sh OUT_DIR
set -euo pipefail
source=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=$(mkdir -p "${1:?output directory}" && cd "$1" && pwd)
step() { echo; echo "== $*"; }

build_options="nocheck noopt"
step "build the packages (dpkg-buildpackage, DEB_BUILD_OPTIONS=\"$build_options\")"
# A copy of the sources without build trees: dpkg-buildpackage writes its results next to it.
rm -rf "$out/src"
mkdir "$out/src"
tar -C "$source" --exclude='./build*' --exclude=./.git --exclude='./obj-*' -cf - . | tar -C "$out/src" -xf -
(cd "$out/src" && DEB_BUILD_OPTIONS="$build_options" dpkg-buildpackage -us -uc -b) >"$out/build.log" 2>&1 ||
  { tail -n 40 "$out/build.log"; exit 1; }
rm -rf "$out/src"
ls "$out"/*.deb

step "lintian"
lintian --tag-display-limit 0 "$out"/hivecl_*.changes | tee "$out/lintian.txt" || true
if grep -q '^E: ' "$out/lintian.txt"; then echo "lintian reports errors"; exit 1; fi
echo "lintian: $(grep -c '^E: ' "$out/lintian.txt") errors, $(grep -c '^W: ' "$out/lintian.txt") warnings"
