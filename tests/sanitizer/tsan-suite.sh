#!/usr/bin/env bash
# The suites whose threads meet most, under ThreadSanitizer: the unit tests, the MPI engine's
# frames, the API suite in-process (application threads, native callback threads and the launch
# gate's keeper), and through a proxy the client tests, kernel output, sessions started and lost
# (killed clients, broken channels, malformed frames, connects in turn and to a proxy that
# dies), and a context over two proxies (data moving between them, and through the
# application's move and read-ahead threads). A report in a test program, or in a proxy's log
# (tests/with-cluster.sh), fails its test; tests/sanitizer/tsan.supp names the libraries' own.
#   tsan-suite.sh BUILD_DIR     (a build made with -Db_sanitize=thread -Db_lundef=false)
set -eu
build=$1
# libhivecl keeps its connections, and their channels' threads, until the process ends, as a
# native runtime keeps its state: not leaks.
export TSAN_OPTIONS="suppressions=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/tsan.supp report_thread_leaks=0"
# UCX's memory hooks run in a thread's exit after TSan has let the thread go, and crash the
# proxy there: Open MPI's own transports, without UCX.
export OMPI_MCA_pml=ob1 OMPI_MCA_osc=^ucx OMPI_MCA_btl=self,vader,tcp UCX_MEM_MALLOC_HOOKS=no UCX_MEM_MMAP_HOOK_MODE=none
meson test -C "$build" --print-errorlogs unit proxy-unit engine-frames-ob1 api-in-process client kernel-output \
  session-limits auth fault-isolation fault-client-death fault-connect-turns fault-proxy-death-connect two-proxies
