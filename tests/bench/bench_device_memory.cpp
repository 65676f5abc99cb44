// SHOC's DeviceMemory in its simplest form, natively and through HiveCL side by side
// (side_by_side.hpp): global-memory bandwidth of streaming kernels (read, write, copy of
// float4 elements, one per work-item) over HIVECL_BENCH_DEVICE_BYTES (default 64 MiB).
// Each is measured twice: from event profiling (the kernels' device time, as SHOC does) and
// from the host's clock around the launches up to clFinish (what the application sees).
#include <CL/cl.h>

#include <array>
#include <string>

#include "bench/side_by_side.hpp"

using namespace hivecl::bench;

namespace {

const char* const kernel_source = R"(
__kernel void read(__global const float4* in, __global float* out) {
  const float4 value = in[get_global_id(0)];
  if (value.x + value.y + value.z + value.w == -1.0f) out[0] = value.x;  // never true: keeps the read
}
__kernel void write(__global const float4* in, __global float4* out) {
  out[get_global_id(0)] = (float4)(get_global_id(0));
}
__kernel void copy(__global const float4* in, __global float4* out) {
  out[get_global_id(0)] = in[get_global_id(0)];
}
)";

struct Stream {
  const char* kernel;
  int bytes_per_element;  // moved per float4: read or write 16, copy 32
};
constexpr std::array streams{Stream{"read", 16}, Stream{"write", 16}, Stream{"copy", 32}};
constexpr int launches = 4;

struct Buffers {
  cl_mem in = nullptr, out = nullptr;
};

Buffers make_buffers(const Side& side, size_t bytes) {
  cl_int status = CL_SUCCESS;
  Buffers buffers{clCreateBuffer(side.context, CL_MEM_READ_WRITE, bytes, nullptr, &status), nullptr};
  check(status, "clCreateBuffer");
  buffers.out = clCreateBuffer(side.context, CL_MEM_READ_WRITE, bytes, nullptr, &status);
  check(status, "clCreateBuffer");
  const float zero = 0;
  check(clEnqueueFillBuffer(side.queue, buffers.in, &zero, sizeof zero, 0, bytes, 0, nullptr, nullptr),
        "clEnqueueFillBuffer");
  check(clFinish(side.queue), "clFinish");
  return buffers;
}

}  // namespace

int main() {
  const size_t bytes = env_size("HIVECL_BENCH_DEVICE_BYTES", size_t{64} << 20);
  const size_t elements = bytes / 16;
  SideBySide bench("device_memory", CL_QUEUE_PROFILING_ENABLE);
  const Buffers native = make_buffers(bench.native, bytes), hivecl = make_buffers(bench.hivecl, bytes);
  for (const Stream& stream : streams) {
    std::array<cl_kernel, 2> kernels{make_kernel(bench.native, kernel_source, stream.kernel),
                                     make_kernel(bench.hivecl, kernel_source, stream.kernel)};
    for (int side = 0; side < 2; ++side) {
      const Buffers& buffers = side == 0 ? native : hivecl;
      check(clSetKernelArg(kernels[side], 0, sizeof buffers.in, &buffers.in), "clSetKernelArg");
      check(clSetKernelArg(kernels[side], 1, sizeof buffers.out, &buffers.out), "clSetKernelArg");
    }
    const double moved = static_cast<double>(elements) * stream.bytes_per_element * launches;
    for (const bool profiled : {true, false})
      bench.compare(std::string(stream.kernel) + (profiled ? " (events)" : " (host)"), "GB/s", bytes, [&](Side& side) {
        return moved / launch_seconds(side, kernels[&side == &bench.native ? 0 : 1], elements, launches, profiled) / 1e9;
      });
    for (cl_kernel kernel : kernels) clReleaseKernel(kernel);
  }
  for (const Buffers& buffers : {native, hivecl}) {
    clReleaseMemObject(buffers.in);
    clReleaseMemObject(buffers.out);
  }
  std::printf("ratio: HiveCL / native bandwidth\n");
  return 0;
}
