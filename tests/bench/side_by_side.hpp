// What every HiveCL benchmark shares: opening the native platform and HiveCL side by side,
// measuring an operation in rounds that alternate between them, and reporting medians,
// spread and ratio as a table on stdout and as CSV rows (HIVECL_BENCH_CSV, appended, so a
// whole `meson test --benchmark` run collects into one file for tests/bench/report.py).
//
// Environment:
//   HIVECL_TEST_NATIVE_PLATFORM  the native platform's name (default PoCL's)
//   HIVECL_BENCH_ROUNDS          measured rounds per case (default 7)
//   HIVECL_BENCH_COMPARED        the platform measured against the native one (default HiveCL);
//                                the native platform's own name gives an A/A run (a second
//                                context of the same runtime), which shows the benchmark's own
//                                spread between two sides that do the same
//   HIVECL_BENCH_CSV             CSV file to append to: benchmark,case,bytes,unit,
//                                native_median,native_min,native_max,hivecl_median,hivecl_min,hivecl_max,ratio,
//                                paired_ratio,paired_min,paired_max
#pragma once

#include <CL/cl.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace hivecl::bench {

using Clock = std::chrono::steady_clock;

[[noreturn]] void die(const std::string& what, cl_int status);
void check(cl_int status, const char* what);

size_t env_size(const char* name, size_t fallback);
std::string native_platform_name();

// One platform's first device with a context and an in-order queue.
struct Side {
  std::string name;
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
};

Side open_side(const std::string& platform_name, cl_command_queue_properties queue_properties = 0);
cl_program build_program(const Side& side, const char* source, const char* options = nullptr);
cl_kernel make_kernel(const Side& side, const char* source, const char* name, const char* options = nullptr);
double seconds_since(Clock::time_point start);
// A completed command's device time (CL_PROFILING_COMMAND_START to _END), in seconds.
double profiled_seconds(cl_event event);
// Seconds for `launches` launches of a one-dimensional kernel: the host's clock up to clFinish,
// or (`profiled`, on a profiling queue) the sum of the launches' device times.
double launch_seconds(const Side& side, cl_kernel kernel, size_t global_size, int launches, bool profiled);
// "4 KiB", "16 MiB".
std::string size_label(uint64_t bytes);
// VOCL's window test: transfers of `bytes` in a window of `window`, fewer where they would
// pass 1 GiB together.
size_t window_count(size_t bytes, size_t window);
// GB/s of `count` transfers of `bytes` between `host` and `device`: non-blocking then clFinish,
// or blocking one by one.
double transfer_rate(const Side& side, cl_mem device, void* host, bool writes, size_t bytes, size_t count,
                     bool blocking);
// The CSV file HIVECL_BENCH_CSV names, opened to append, `header` (a line) written first into a
// new or empty one; not open where the variable is unset.
std::ofstream open_csv(const char* header);

// Runs one round's two steps: native first in even rounds, HiveCL first in odd ones, so that
// what the first of a round leaves the second (caches, clocks) falls on both sides alike.
void in_turn(size_t round, const std::function<void()>& native_step, const std::function<void()>& hivecl_step);

// The native and HiveCL sides of one benchmark, and its report.
class SideBySide {
 public:
  explicit SideBySide(std::string benchmark, cl_command_queue_properties queue_properties = 0);
  Side native;
  Side hivecl;

  // Runs `measure` (returns one value per round: a latency in µs or a rate) once on each side
  // as a warm-up, then for `rounds` rounds on both sides (in_turn), and reports the row.
  void compare(const std::string& case_name, const std::string& unit, uint64_t bytes,
               const std::function<double(Side&)>& measure);
  // Reports a row measured by the caller: one value per round and side. Besides each side's
  // median and their ratio, the median of the rounds' own ratios (paired), which leaves out a
  // drift of the machine that the two sides of one round share.
  void report(const std::string& case_name, const std::string& unit, uint64_t bytes,
              const std::vector<double>& native_values, const std::vector<double>& hivecl_values);
  size_t rounds() const { return rounds_; }

 private:
  std::string benchmark_;
  size_t rounds_;
  std::ofstream csv_;
};

}  // namespace hivecl::bench
