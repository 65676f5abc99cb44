// SHOC's KernelCompile and QueueDelay, natively and through HiveCL side by side
// (side_by_side.hpp).
// Compile: clCreateProgramWithSource + clBuildProgram of a small and a larger program, each
// measurement with a source never built before (runtimes cache builds by source: PoCL, NVIDIA).
// Queue delay: for an empty kernel, the time from enqueueing to the start of execution from
// event profiling (SHOC's figure; through HiveCL the proxy's native queue times it), and the
// host's time from the enqueue call to the completion seen by clWaitForEvents.
#include <CL/cl.h>

#include <string>

#include "bench/side_by_side.hpp"

using namespace hivecl::bench;

namespace {

const char* const small_source = "__kernel void copy(__global const float* in, __global float* out) {\n"
                                 "  out[get_global_id(0)] = in[get_global_id(0)];\n}\n";

// A few dozen kernels of a few statements each: a program of some size.
std::string large_source() {
  std::string source;
  for (int i = 0; i < 48; ++i) {
    const std::string n = std::to_string(i);
    source += "__kernel void k" + n + "(__global float* data, float x) {\n  const size_t i = get_global_id(0);\n" +
              "  float v = data[i] * x + " + n + ".0f;\n  for (int j = 0; j < " + n + "; ++j) v = sin(v) * x + j;\n" +
              "  data[i] = v;\n}\n";
  }
  return source;
}

double compile_ms(const Side& side, const std::string& source) {
  static int build = 0;  // makes every source new to the runtime's cache
  const std::string unique = "// build " + std::to_string(++build) + "\n" + source;
  const auto start = Clock::now();
  cl_program program = build_program(side, unique.c_str());
  const double milliseconds = seconds_since(start) * 1e3;
  clReleaseProgram(program);
  return milliseconds;
}

}  // namespace

int main() {
  SideBySide bench("compile_queue", CL_QUEUE_PROFILING_ENABLE);
  const std::string large = large_source();
  bench.compare("compile small program", "ms", 0, [&](Side& side) { return compile_ms(side, small_source); });
  bench.compare("compile 48-kernel program", "ms", 0, [&](Side& side) { return compile_ms(side, large); });

  const char* const empty = "__kernel void empty() {}";
  const cl_kernel native = make_kernel(bench.native, empty, "empty"), hivecl = make_kernel(bench.hivecl, empty, "empty");
  constexpr int launches = 50;
  auto delays = [&](Side& side, bool profiled) {
    const size_t one = 1;
    double total = 0;
    for (int i = 0; i < launches; ++i) {
      cl_event event = nullptr;
      const auto start = Clock::now();
      check(clEnqueueNDRangeKernel(side.queue, &side == &bench.native ? native : hivecl, 1, nullptr, &one, nullptr, 0,
                                   nullptr, &event),
            "clEnqueueNDRangeKernel");
      check(clWaitForEvents(1, &event), "clWaitForEvents");
      if (profiled) {
        cl_ulong queued = 0, started = 0;
        check(clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_QUEUED, sizeof queued, &queued, nullptr),
              "clGetEventProfilingInfo");
        check(clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_START, sizeof started, &started, nullptr),
              "clGetEventProfilingInfo");
        total += static_cast<double>(started - queued) * 1e-3;
      } else {
        total += seconds_since(start) * 1e6;
      }
      clReleaseEvent(event);
    }
    return total / launches;
  };
  bench.compare("queued to start (events)", "us", 0, [&](Side& side) { return delays(side, true); });
  bench.compare("enqueue to completion (host)", "us", 0, [&](Side& side) { return delays(side, false); });
  clReleaseKernel(native);
  clReleaseKernel(hivecl);
  std::printf("ratio: HiveCL / native (ms, us: how many times slower)\n");
  return 0;
}
