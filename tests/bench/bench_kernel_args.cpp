// Kernel arguments in the style of VOCL's Smith-Waterman case: a kernel with eight arguments
// (four buffers, three ints, a struct by value) launched HIVECL_BENCH_LAUNCHES times (default
// 10,000) on each side, every launch preceded by eight clSetKernelArg of which seven repeat
// the previous value. Native and HiveCL alternate round by round (side_by_side.hpp); printed:
// the median per call of clSetKernelArg and of clEnqueueNDRangeKernel, and for HiveCL the
// messages sent per launch and per clSetKernelArg, counted by libhivecl itself
// (CL_PLATFORM_MESSAGES_SENT_HIVECL). Runs under tests/with-cluster.sh
// (`meson test --benchmark kernel-args`).
#include <CL/cl.h>
#include <CL/cl_hivecl.h>

#include <cstdio>
#include <string>
#include <vector>

#include "bench/side_by_side.hpp"
#include "corpus.hpp"

using namespace hivecl::bench;

namespace {

// The Smith-Waterman step of kernels-parser's corpus: four buffers, three ints, a struct.
const char* sw_source() {
  for (const auto& source : hivecl::kernels_parser::corpus::sources())
    if (source.name == std::string("smith-waterman")) return source.text.c_str();
  die("no smith-waterman kernel in the corpus", CL_INVALID_VALUE);
}

constexpr int length = 64;
struct Scores {
  cl_int match, mismatch;
};

struct Fixture {
  cl_kernel kernel = nullptr;
  cl_mem query = nullptr, subject = nullptr, matrix = nullptr, best = nullptr;
};

cl_mem new_buffer(const Side& side, size_t bytes) {
  cl_int status = CL_SUCCESS;
  cl_mem buffer = clCreateBuffer(side.context, CL_MEM_READ_WRITE, bytes, nullptr, &status);
  check(status, "clCreateBuffer");
  return buffer;
}

Fixture make_fixture(const Side& side) {
  Fixture f;
  cl_program program = build_program(side, sw_source());
  cl_int status = CL_SUCCESS;
  f.kernel = clCreateKernel(program, "sw_diagonal", &status);
  check(status, "clCreateKernel");
  clReleaseProgram(program);
  f.query = new_buffer(side, length);
  f.subject = new_buffer(side, length);
  f.matrix = new_buffer(side, (length + 1) * (length + 1) * sizeof(cl_int));
  f.best = new_buffer(side, sizeof(cl_int));
  return f;
}

// The eight clSetKernelArg of one step: only the diagonal changes from step to step.
void set_args(const Fixture& f, cl_int diagonal) {
  const cl_int n = length;
  const Scores scores{2, -1};
  check(clSetKernelArg(f.kernel, 0, sizeof(cl_mem), &f.query), "clSetKernelArg");
  check(clSetKernelArg(f.kernel, 1, sizeof(cl_mem), &f.subject), "clSetKernelArg");
  check(clSetKernelArg(f.kernel, 2, sizeof(cl_mem), &f.matrix), "clSetKernelArg");
  check(clSetKernelArg(f.kernel, 3, sizeof(cl_mem), &f.best), "clSetKernelArg");
  check(clSetKernelArg(f.kernel, 4, sizeof n, &n), "clSetKernelArg");
  check(clSetKernelArg(f.kernel, 5, sizeof n, &n), "clSetKernelArg");
  check(clSetKernelArg(f.kernel, 6, sizeof diagonal, &diagonal), "clSetKernelArg");
  check(clSetKernelArg(f.kernel, 7, sizeof scores, &scores), "clSetKernelArg");
}

cl_ulong messages_sent(const Side& side) {
  cl_ulong sent = 0;
  check(clGetPlatformInfo(side.platform, CL_PLATFORM_MESSAGES_SENT_HIVECL, sizeof sent, &sent, nullptr),
        "clGetPlatformInfo(CL_PLATFORM_MESSAGES_SENT_HIVECL)");
  return sent;
}

// One round: `steps` launches, each after its eight arguments.
struct Round {
  double set_us = 0, launch_us = 0;           // per call
  cl_ulong set_messages = 0, launch_messages = 0;  // HiveCL only
};

Round run_round(const Side& side, const Fixture& f, int steps, bool count_messages) {
  Round round;
  double set_seconds = 0, launch_seconds = 0;
  const size_t global = length;
  for (int step = 0; step < steps; ++step) {
    const cl_ulong before_set = count_messages ? messages_sent(side) : 0;
    auto start = Clock::now();
    set_args(f, 2 + step % (2 * length));
    set_seconds += seconds_since(start);
    const cl_ulong before_launch = count_messages ? messages_sent(side) : 0;
    start = Clock::now();
    check(clEnqueueNDRangeKernel(side.queue, f.kernel, 1, nullptr, &global, nullptr, 0, nullptr, nullptr),
          "clEnqueueNDRangeKernel");
    launch_seconds += seconds_since(start);
    if (count_messages) {
      const cl_ulong after = messages_sent(side);
      round.set_messages += before_launch - before_set;
      round.launch_messages += after - before_launch;
    }
  }
  check(clFinish(side.queue), "clFinish");
  round.set_us = set_seconds / (steps * 8.0) * 1e6;
  round.launch_us = launch_seconds / steps * 1e6;
  return round;
}

}  // namespace

int main() {
  SideBySide bench("kernel-args");
  const int launches = static_cast<int>(env_size("HIVECL_BENCH_LAUNCHES", 10000));
  const int steps = std::max<int>(1, launches / static_cast<int>(bench.rounds()));
  const Fixture native = make_fixture(bench.native);
  const Fixture hivecl = make_fixture(bench.hivecl);
  run_round(bench.native, native, 10, false);  // warm-up
  run_round(bench.hivecl, hivecl, 10, false);
  std::vector<double> native_set, hivecl_set, native_launch, hivecl_launch;
  cl_ulong set_messages = 0, launch_messages = 0;
  for (size_t r = 0; r < bench.rounds(); ++r) {
    Round n, h;
    in_turn(
        r, [&] { n = run_round(bench.native, native, steps, false); },
        [&] { h = run_round(bench.hivecl, hivecl, steps, true); });
    native_set.push_back(n.set_us);
    native_launch.push_back(n.launch_us);
    hivecl_set.push_back(h.set_us);
    hivecl_launch.push_back(h.launch_us);
    set_messages += h.set_messages;
    launch_messages += h.launch_messages;
  }
  bench.report("clSetKernelArg (7 of 8 unchanged)", "us", 0, native_set, hivecl_set);
  bench.report("clEnqueueNDRangeKernel", "us", 0, native_launch, hivecl_launch);
  const double total = static_cast<double>(steps) * static_cast<double>(bench.rounds());
  std::printf("HiveCL messages: %.3f per clSetKernelArg, %.3f per launch (%d launches per side)\n",
              static_cast<double>(set_messages) / (total * 8), static_cast<double>(launch_messages) / total,
              static_cast<int>(total));
  std::printf("ratio: HiveCL / native (how many times slower)\n");
  return 0;
}
