// SHOC's MaxFlops in its simplest form, natively and through HiveCL side by side
// (side_by_side.hpp): chains of independent multiply-adds in single and (where the device has
// it) double precision. The chain length is set once so that a launch takes about
// HIVECL_BENCH_FLOPS_MS (default 50 ms) natively; GFLOP/s from event profiling (the kernels'
// device time, as SHOC does) and from the host's clock up to clFinish.
#include <CL/cl.h>

#include <algorithm>
#include <array>
#include <string>

#include "bench/side_by_side.hpp"

using namespace hivecl::bench;

namespace {

// 8 independent chains, 2 multiply-adds each per iteration: 32 flops per iteration.
const char* const kernel_source = R"(
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
__kernel void mad_chains(__global REAL* out, REAL seed, uint iterations) {
  const REAL m = (REAL)0.999, k = (REAL)0.001;
  REAL a = seed + get_global_id(0), b = a + 1, c = a + 2, d = a + 3, e = a + 4, f = a + 5, g = a + 6, h = a + 7;
  for (uint i = 0; i < iterations; ++i) {
    a = mad(a, m, k); b = mad(b, m, k); c = mad(c, m, k); d = mad(d, m, k);
    e = mad(e, m, k); f = mad(f, m, k); g = mad(g, m, k); h = mad(h, m, k);
    a = mad(a, m, k); b = mad(b, m, k); c = mad(c, m, k); d = mad(d, m, k);
    e = mad(e, m, k); f = mad(f, m, k); g = mad(g, m, k); h = mad(h, m, k);
  }
  out[get_global_id(0)] = a + b + c + d + e + f + g + h;
}
)";
constexpr double flops_per_iteration = 32;
constexpr int launches = 3;

struct Precision {
  const char* name;
  const char* options;
  size_t real_bytes;
};

bool has_fp64(cl_device_id device) {
  cl_device_fp_config config = 0;
  clGetDeviceInfo(device, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof config, &config, nullptr);
  return config != 0;
}

// A kernel with its output buffer and arguments set.
cl_kernel make_chains(const Side& side, const Precision& precision, size_t work_items, cl_uint iterations,
                      cl_mem& out) {
  cl_kernel kernel = make_kernel(side, kernel_source, "mad_chains", precision.options);
  cl_int status = CL_SUCCESS;
  out = clCreateBuffer(side.context, CL_MEM_WRITE_ONLY, work_items * precision.real_bytes, nullptr, &status);
  check(status, "clCreateBuffer");
  const double seed_double = 0.5;
  const float seed_float = 0.5f;
  check(clSetKernelArg(kernel, 0, sizeof out, &out), "clSetKernelArg");
  check(precision.real_bytes == 8 ? clSetKernelArg(kernel, 1, 8, &seed_double) : clSetKernelArg(kernel, 1, 4, &seed_float),
        "clSetKernelArg");
  check(clSetKernelArg(kernel, 2, sizeof iterations, &iterations), "clSetKernelArg");
  return kernel;
}

}  // namespace

int main() {
  const double target_seconds = static_cast<double>(env_size("HIVECL_BENCH_FLOPS_MS", 50)) / 1e3;
  SideBySide bench("max_flops", CL_QUEUE_PROFILING_ENABLE);
  cl_uint compute_units = 1;
  clGetDeviceInfo(bench.native.device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof compute_units, &compute_units, nullptr);
  const size_t work_items = size_t{compute_units} * 2048;
  std::array precisions{Precision{"SP", "-D REAL=float", 4}, Precision{"DP", "-D REAL=double", 8}};
  for (const Precision& precision : precisions) {
    if (precision.real_bytes == 8 && !has_fp64(bench.native.device)) {
      std::printf("DP: skipped, the device has no double precision\n");
      continue;
    }
    // Calibration: a short launch natively, scaled to the target time.
    cl_mem native_out = nullptr, hivecl_out = nullptr;
    cl_kernel probe = make_chains(bench.native, precision, work_items, 64, native_out);
    const double probe_seconds = std::max(launch_seconds(bench.native, probe, work_items, 1, true), 1e-6);
    const auto iterations = static_cast<cl_uint>(std::clamp(64 * target_seconds / probe_seconds, 64.0, 1e7));
    clReleaseKernel(probe);
    clReleaseMemObject(native_out);
    const std::array kernels{make_chains(bench.native, precision, work_items, iterations, native_out),
                             make_chains(bench.hivecl, precision, work_items, iterations, hivecl_out)};
    const double flops = flops_per_iteration * iterations * static_cast<double>(work_items) * launches;
    for (const bool profiled : {true, false})
      bench.compare(std::string(precision.name) + (profiled ? " (events)" : " (host)"), "GFLOP/s", 0, [&](Side& side) {
        return flops / launch_seconds(side, kernels[&side == &bench.native ? 0 : 1], work_items, launches, profiled) /
               1e9;
      });
    for (cl_kernel kernel : kernels) clReleaseKernel(kernel);
    clReleaseMemObject(native_out);
    clReleaseMemObject(hivecl_out);
  }
  std::printf("ratio: HiveCL / native GFLOP/s\n");
  return 0;
}
