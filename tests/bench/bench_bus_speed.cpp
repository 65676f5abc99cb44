// SHOC's BusSpeedDownload and BusSpeedReadback, natively and through HiveCL side by side
// (side_by_side.hpp): bandwidth of blocking host-to-device writes and device-to-host reads
// from 1 KiB up to HIVECL_BENCH_MAX_BYTES (default 64 MiB; SHOC goes to 512 MiB), doubling.
// Unlike SHOC, which times transfers with events from pageable or pinned memory, the time is
// the host's around the blocking calls of a round and a clFinish after them (a blocking write
// may return before its data reached the device), from ordinary (malloc'd) memory: what an
// application waits for, HiveCL's transport included. HIVECL_BENCH_HUGE_PAGES=1 asks
// transparent huge pages for that memory (madvise): through a proxy of the same node its
// copies then scale over the proxy's copy threads (docs/FINDINGS.md).
#include <CL/cl.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <new>

#include "advised_memory.hpp"
#include "bench/side_by_side.hpp"

using namespace hivecl::bench;

namespace {

cl_mem make_buffer(const Side& side, size_t bytes) {
  cl_int status = CL_SUCCESS;
  cl_mem buffer = clCreateBuffer(side.context, CL_MEM_READ_WRITE, bytes, nullptr, &status);
  check(status, "clCreateBuffer");
  return buffer;
}

}  // namespace

int main() try {
  const size_t max_bytes = env_size("HIVECL_BENCH_MAX_BYTES", size_t{64} << 20);
  const bool huge_pages = env_size("HIVECL_BENCH_HUGE_PAGES", 0) != 0;
  const AdvisedMemory host(max_bytes, huge_pages ? MADV_HUGEPAGE : MADV_NORMAL);
  if (huge_pages && !host.advised()) std::printf("note: no transparent huge pages here\n");
  SideBySide bench("bus_speed");
  const cl_mem native_buffer = make_buffer(bench.native, max_bytes);
  const cl_mem hivecl_buffer = make_buffer(bench.hivecl, max_bytes);
  for (const bool download : {true, false}) {
    for (size_t bytes = 1024; bytes <= max_bytes; bytes *= 2) {
      // Enough calls per round to outlast the clock's and the scheduler's noise.
      const int calls = static_cast<int>(std::clamp<size_t>((size_t{64} << 20) / bytes, 2, 200));
      const std::string name =
          (download ? "download " : "readback ") + size_label(bytes) + (huge_pages ? " [huge pages]" : "");
      bench.compare(name, "GB/s", bytes, [&](Side& side) {
        const cl_mem buffer = &side == &bench.native ? native_buffer : hivecl_buffer;
        const auto start = Clock::now();
        for (int i = 0; i < calls; ++i) {
          if (download)
            check(clEnqueueWriteBuffer(side.queue, buffer, CL_TRUE, 0, bytes, host.data(), 0, nullptr, nullptr),
                  "clEnqueueWriteBuffer");
          else
            check(clEnqueueReadBuffer(side.queue, buffer, CL_TRUE, 0, bytes, host.data(), 0, nullptr, nullptr),
                  "clEnqueueReadBuffer");
        }
        check(clFinish(side.queue), "clFinish");  // what a blocking write left queued (HiveCL's does)
        return static_cast<double>(bytes) * calls / seconds_since(start) / 1e9;
      });
    }
  }
  clReleaseMemObject(native_buffer);
  clReleaseMemObject(hivecl_buffer);
  std::printf("ratio: HiveCL / native bandwidth\n");
  return 0;
} catch (const std::bad_alloc&) {
  die("mmap of the host memory", CL_OUT_OF_HOST_MEMORY);
}
