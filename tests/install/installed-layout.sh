#!/usr/bin/env bash
# `meson install` into a DESTDIR: every file where the install layout says, both programs
# answer --help, and an OpenCL program (examples/vecadd, clinfo) runs through the installed
# hivecl.icd against a cluster started by the installed launcher.
#   installed-layout.sh BUILD_DIR PREFIX LIBDIR BINDIR SYSCONFDIR MANDIR VENDORS_DIR
# The installed .icd names the library at its final place (PREFIX/LIBDIR); the program
# reads it from a vendors directory holding that .icd with the DESTDIR put in front.
set -u
build=$(cd "$1" && pwd)
prefix=$2; libdir=$prefix/$3; bindir=$prefix/$4; mandir=$prefix/$6; vendors_dir=$7
case $5 in /*) sysconfdir=$5 ;; *) sysconfdir=$prefix/$5 ;; esac
work=$(mktemp -d "${TMPDIR:-/tmp}/hivecl-install.XXXXXX")
destdir=$work/root
export HIVECL_CLUSTER_DIR=$work/cluster OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
failures=0
check() {  # check WHAT COMMAND...: one line per check, counted when it fails
  local what=$1; shift
  if "$@" >"$work/check.out" 2>&1; then echo "ok: $what"; else
    echo "FAILED: $what"; cat "$work/check.out"; failures=$((failures + 1)); fi
}
cleanup() {
  "$destdir$bindir/hivecl-cluster" stop >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

meson install -C "$build" --destdir "$destdir" --no-rebuild --quiet || { echo "meson install failed"; exit 1; }
for file in "$libdir/libhivecl.so.1" "$bindir/hivecl-proxy" "$bindir/hivecl-cluster" \
            "$sysconfdir/hivecl/hivecl.conf" "$mandir/man1/hivecl-proxy.1" "$mandir/man1/hivecl-cluster.1"; do
  check "installed $file" test -e "$destdir$file"
done
if [ "$vendors_dir" = off ]; then
  check "no .icd installed (vendors_dir=off)" test ! -e "$destdir/etc/OpenCL/vendors/hivecl.icd"
  exit $((failures > 0))
fi
icd=$destdir$vendors_dir/hivecl.icd
check "the .icd names the installed library" grep -qx "$libdir/libhivecl.so.1" "$icd"
check "hivecl-proxy --help" "$destdir$bindir/hivecl-proxy" --help
check "hivecl-cluster --help" "$destdir$bindir/hivecl-cluster" --help
check "the sample config is all comments" bash -c "! grep -v '^#' '$destdir$sysconfdir/hivecl/hivecl.conf' | grep -q ."

mkdir -p "$work/vendors"
echo "$destdir$(cat "$icd")" >"$work/vendors/hivecl.icd"
if ! OCL_ICD_VENDORS=/etc/OpenCL/vendors "$destdir$bindir/hivecl-cluster" start >"$work/start.log" 2>&1; then
  echo "FAILED: the installed launcher did not start a cluster"; cat "$work/start.log"
  cat "$HIVECL_CLUSTER_DIR"/logs/*.log
  exit 1
fi
echo "ok: the installed launcher started a cluster"
check "vecadd through the installed .icd" bash -c \
  "OCL_ICD_VENDORS='$work/vendors' '$build/examples/vecadd' --platform HiveCL --size 100000 | grep -q '^result: .* 0 wrong'"
if command -v clinfo >/dev/null; then
  check "clinfo through the installed .icd" bash -c "OCL_ICD_VENDORS='$work/vendors' clinfo -l | grep -q 'Platform #0: HiveCL'"
fi
check "the installed launcher stops the cluster" "$destdir$bindir/hivecl-cluster" stop
exit $((failures > 0))
