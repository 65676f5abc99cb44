// Transfer bandwidth, natively and through HiveCL, side by side (side_by_side.hpp), as VOCL
// measured it: a window of non-blocking writes (or reads) of one size, then clFinish; and
// single blocking transfers. Host memory ordinary (malloc) and page-locked (a mapped
// CL_MEM_ALLOC_HOST_PTR buffer of the side's own context). Each case name ends with
// HiveCL's data path ([memory] or [mpi], from CL_DEVICE_DATA_PATH_HIVECL) and the transfer
// settings given in the environment (HIVECL_STAGING_SLOTS=1: no pipeline).
//   HIVECL_BENCH_MIN_BYTES / HIVECL_BENCH_MAX_BYTES  sizes, powers of 4 apart (64 KiB .. 16 MiB)
//   HIVECL_BENCH_WINDOW         transfers per window (32); fewer where size * window > 1 GiB
#include <CL/cl.h>
#include <CL/cl_hivecl.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/side_by_side.hpp"

using namespace hivecl::bench;

namespace {

constexpr size_t window_bytes_cap = size_t{1} << 30;

// One side's device buffer and two host buffers of `bytes`: malloc'd and page-locked.
struct Fixture {
  cl_mem device = nullptr;
  cl_mem pinned_buffer = nullptr;
  void* pinned = nullptr;
  std::vector<char> ordinary;
};

Fixture make_fixture(const Side& side, size_t bytes) {
  Fixture fixture;
  cl_int status = CL_SUCCESS;
  fixture.device = clCreateBuffer(side.context, CL_MEM_READ_WRITE, bytes, nullptr, &status);
  check(status, "clCreateBuffer");
  fixture.pinned_buffer = clCreateBuffer(side.context, CL_MEM_ALLOC_HOST_PTR, bytes, nullptr, &status);
  check(status, "clCreateBuffer(CL_MEM_ALLOC_HOST_PTR)");
  fixture.pinned = clEnqueueMapBuffer(side.queue, fixture.pinned_buffer, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                      bytes, 0, nullptr, nullptr, &status);
  check(status, "clEnqueueMapBuffer");
  std::memset(fixture.pinned, 1, bytes);
  fixture.ordinary.assign(bytes, 1);
  check(clEnqueueWriteBuffer(side.queue, fixture.device, CL_TRUE, 0, bytes, fixture.ordinary.data(), 0, nullptr,
                             nullptr),
        "clEnqueueWriteBuffer");
  return fixture;
}

std::string size_name(size_t bytes) {
  return bytes >= (1u << 20) ? std::to_string(bytes >> 20) + " MiB" : std::to_string(bytes >> 10) + " KiB";
}

// "[memory]" or "[mpi]", with the transfer settings the environment gives client and proxy.
std::string path_label(const Side& hivecl) {
  char path[32] = {};
  clGetDeviceInfo(hivecl.device, CL_DEVICE_DATA_PATH_HIVECL, sizeof path, path, nullptr);
  std::string label = std::string("[") + path;
  for (const char* setting : {"HIVECL_STAGING_SLOTS", "HIVECL_CHUNK_BYTES", "HIVECL_COPY_THREADS"})
    if (const char* value = std::getenv(setting)) label += std::string(" ") + (setting + 7) + "=" + value;
  return label + "]";
}

// GB/s of `count` transfers of `bytes`, non-blocking then clFinish (count > 1), or blocking.
double transfer_rate(const Side& side, const Fixture& fixture, bool writes, bool pinned, size_t bytes, size_t count,
                     bool blocking) {
  void* host = pinned ? fixture.pinned : const_cast<char*>(fixture.ordinary.data());
  const auto start = Clock::now();
  for (size_t i = 0; i < count; ++i) {
    const cl_bool block = blocking ? CL_TRUE : CL_FALSE;
    check(writes ? clEnqueueWriteBuffer(side.queue, fixture.device, block, 0, bytes, host, 0, nullptr, nullptr)
                 : clEnqueueReadBuffer(side.queue, fixture.device, block, 0, bytes, host, 0, nullptr, nullptr),
          writes ? "clEnqueueWriteBuffer" : "clEnqueueReadBuffer");
  }
  check(clFinish(side.queue), "clFinish");
  return static_cast<double>(bytes) * static_cast<double>(count) / seconds_since(start) / 1e9;
}

// GB/s of making a buffer of `bytes` from host data (CL_MEM_COPY_HOST_PTR), released after.
double creation_rate(const Side& side, const Fixture& fixture, size_t bytes) {
  const auto start = Clock::now();
  cl_int status = CL_SUCCESS;
  const cl_mem buffer = clCreateBuffer(side.context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes,
                                       const_cast<char*>(fixture.ordinary.data()), &status);
  check(status, "clCreateBuffer(CL_MEM_COPY_HOST_PTR)");
  const double rate = static_cast<double>(bytes) / seconds_since(start) / 1e9;
  check(clReleaseMemObject(buffer), "clReleaseMemObject");
  return rate;
}

}  // namespace

int main() {
  const size_t min_bytes = env_size("HIVECL_BENCH_MIN_BYTES", size_t{64} << 10);
  const size_t max_bytes = env_size("HIVECL_BENCH_MAX_BYTES", size_t{16} << 20);
  const size_t window = std::max<size_t>(1, env_size("HIVECL_BENCH_WINDOW", 32));
  SideBySide bench("transfers");
  const Fixture native = make_fixture(bench.native, max_bytes);
  const Fixture hivecl = make_fixture(bench.hivecl, max_bytes);
  const std::string path = path_label(bench.hivecl);
  std::printf("HiveCL data path: %s\n", path.c_str());
  for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 4) {
    const size_t count = std::clamp<size_t>(window_bytes_cap / bytes, 1, window);
    for (const bool pinned : {false, true}) {
      for (const bool writes : {true, false}) {
        const std::string what = std::string(writes ? "write " : "read ") + size_name(bytes) +
                                 (pinned ? ", pinned" : ", malloc");
        for (const bool blocking : {false, true}) {
          const std::string name =
              what + (blocking ? ", blocking " : ", x" + std::to_string(count) + " ") + path;
          bench.compare(name, "GB/s", bytes, [&](Side& side) {
            const Fixture& fixture = &side == &bench.native ? native : hivecl;
            return transfer_rate(side, fixture, writes, pinned, bytes, blocking ? 1 : count, blocking);
          });
        }
      }
    }
  }
  bench.compare("create " + size_name(max_bytes) + " from malloc memory " + path, "GB/s", max_bytes, [&](Side& side) {
    return creation_rate(side, &side == &bench.native ? native : hivecl, max_bytes);
  });
  std::printf("ratio: the fraction of native bandwidth HiveCL reaches\n");
  return 0;
}
