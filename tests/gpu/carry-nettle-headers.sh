#!/usr/bin/env bash
# The GPU machine has nettle's run-time library (libnettle.so.8) but not its headers, and no
# package registry: this copies this machine's headers (Debian's nettle-dev) into .carry/nettle
# with a pkg-config file for them, for the device tool to carry. On the device:
#   PKG_CONFIG_PATH=$PWD/.carry/nettle tests/gpu/bench-sw-gate-and-moves.sh OUT ...   (carry: .carry)
# Run here, from the repository root; the device's copy lives at the same path.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
[ -d /usr/include/nettle ] || { echo "no /usr/include/nettle here: apt-get install nettle-dev" >&2; exit 1; }
mkdir -p "$root/.carry/nettle/include"
cp -r /usr/include/nettle "$root/.carry/nettle/include/"
cat >"$root/.carry/nettle/nettle.pc" <<PC
prefix=$root/.carry/nettle
Name: Nettle
Description: nettle's headers carried in; the library is the machine's own
Version: $(pkg-config --modversion nettle)
Cflags: -I\${prefix}/include
Libs: -l:libnettle.so.8
PC
echo "$root/.carry/nettle"
