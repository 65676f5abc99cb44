#include "bench/side_by_side.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "platform_named.hpp"

namespace hivecl::bench {

void die(const std::string& what, cl_int status) {
  std::fprintf(stderr, "benchmark: %s failed (%d)\n", what.c_str(), status);
  std::exit(1);
}

void check(cl_int status, const char* what) {
  if (status != CL_SUCCESS) die(what, status);
}

size_t env_size(const char* name, size_t fallback) {
  const char* value = std::getenv(name);
  return value ? std::strtoull(value, nullptr, 0) : fallback;
}

std::string native_platform_name() {
  const char* name = std::getenv("HIVECL_TEST_NATIVE_PLATFORM");
  return name ? name : "Portable Computing Language";
}

namespace {

std::string compared_platform_name() {
  const char* name = std::getenv("HIVECL_BENCH_COMPARED");
  return name ? name : "HiveCL";
}

// A row's median and range.
struct Summary {
  double median = 0, low = 0, high = 0;
};

Summary summarize(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return {values[values.size() / 2], values.front(), values.back()};
}

cl_platform_id find_platform(const std::string& platform_name) {
  cl_platform_id platform = test::platform_named(platform_name);
  if (!platform) die("finding platform '" + platform_name + "'", CL_INVALID_PLATFORM);
  return platform;
}

}  // namespace

Side open_side(const std::string& platform_name, cl_command_queue_properties queue_properties) {
  Side side{platform_name, find_platform(platform_name)};
  check(clGetDeviceIDs(side.platform, CL_DEVICE_TYPE_ALL, 1, &side.device, nullptr), "clGetDeviceIDs");
  cl_int status = CL_SUCCESS;
  side.context = clCreateContext(nullptr, 1, &side.device, nullptr, nullptr, &status);
  check(status, "clCreateContext");
  const cl_queue_properties properties[] = {CL_QUEUE_PROPERTIES, queue_properties, 0};
  side.queue = clCreateCommandQueueWithProperties(side.context, side.device, properties, &status);
  check(status, "clCreateCommandQueueWithProperties");
  return side;
}

cl_program build_program(const Side& side, const char* source, const char* options) {
  cl_int status = CL_SUCCESS;
  cl_program program = clCreateProgramWithSource(side.context, 1, &source, nullptr, &status);
  check(status, "clCreateProgramWithSource");
  check(clBuildProgram(program, 1, &side.device, options, nullptr, nullptr), "clBuildProgram");
  return program;
}

cl_kernel make_kernel(const Side& side, const char* source, const char* name, const char* options) {
  cl_program program = build_program(side, source, options);
  cl_int status = CL_SUCCESS;
  cl_kernel kernel = clCreateKernel(program, name, &status);
  check(status, "clCreateKernel");
  clReleaseProgram(program);  // the kernel keeps it
  return kernel;
}

double profiled_seconds(cl_event event) {
  cl_ulong start = 0, end = 0;
  check(clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_START, sizeof start, &start, nullptr),
        "clGetEventProfilingInfo");
  check(clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_END, sizeof end, &end, nullptr), "clGetEventProfilingInfo");
  return static_cast<double>(end - start) * 1e-9;
}

double launch_seconds(const Side& side, cl_kernel kernel, size_t global_size, int launches, bool profiled) {
  std::vector<cl_event> events(profiled ? launches : 0);
  const auto start = Clock::now();
  for (int i = 0; i < launches; ++i)
    check(clEnqueueNDRangeKernel(side.queue, kernel, 1, nullptr, &global_size, nullptr, 0, nullptr,
                                 profiled ? &events[i] : nullptr),
          "clEnqueueNDRangeKernel");
  check(clFinish(side.queue), "clFinish");
  if (!profiled) return seconds_since(start);
  double seconds = 0;
  for (cl_event event : events) {
    seconds += profiled_seconds(event);
    clReleaseEvent(event);
  }
  return seconds;
}

std::string size_label(uint64_t bytes) {
  if (bytes >= (uint64_t{1} << 30) && bytes % (uint64_t{1} << 30) == 0) return std::to_string(bytes >> 30) + " GiB";
  if (bytes >= (uint64_t{1} << 20) && bytes % (uint64_t{1} << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " B";
}

size_t window_count(size_t bytes, size_t window) {
  return std::clamp<size_t>((size_t{1} << 30) / bytes, 1, window);
}

double transfer_rate(const Side& side, cl_mem device, void* host, bool writes, size_t bytes, size_t count,
                     bool blocking) {
  const cl_bool block = blocking ? CL_TRUE : CL_FALSE;
  const auto start = Clock::now();
  for (size_t i = 0; i < count; ++i)
    check(writes ? clEnqueueWriteBuffer(side.queue, device, block, 0, bytes, host, 0, nullptr, nullptr)
                 : clEnqueueReadBuffer(side.queue, device, block, 0, bytes, host, 0, nullptr, nullptr),
          writes ? "clEnqueueWriteBuffer" : "clEnqueueReadBuffer");
  check(clFinish(side.queue), "clFinish");
  return static_cast<double>(bytes) * static_cast<double>(count) / seconds_since(start) / 1e9;
}

std::ofstream open_csv(const char* header) {
  std::ofstream csv;
  const char* path = std::getenv("HIVECL_BENCH_CSV");
  if (!path) return csv;
  const bool fresh = !std::filesystem::exists(path) || std::filesystem::file_size(path) == 0;
  csv.open(path, std::ios::app);
  if (fresh) csv << header;
  return csv;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void in_turn(size_t round, const std::function<void()>& native_step, const std::function<void()>& hivecl_step) {
  if (round % 2 == 0) {
    native_step();
    hivecl_step();
  } else {
    hivecl_step();
    native_step();
  }
}

SideBySide::SideBySide(std::string benchmark, cl_command_queue_properties queue_properties)
    : native(open_side(native_platform_name(), queue_properties)),
      hivecl(open_side(compared_platform_name(), queue_properties)),
      benchmark_(std::move(benchmark)),
      rounds_(std::max<size_t>(1, env_size("HIVECL_BENCH_ROUNDS", 7))) {
  char device[256] = {};
  clGetDeviceInfo(native.device, CL_DEVICE_NAME, sizeof device, device, nullptr);
  std::printf("%s — device: %s; native platform: %s; %zu rounds of native and HiveCL, either first in turn\n",
              benchmark_.c_str(), device, native.name.c_str(), rounds_);
  if (hivecl.name != "HiveCL") std::printf("the HiveCL column: platform %s\n", hivecl.name.c_str());
  std::printf("%-34s %-6s %26s %26s %8s %22s\n", "case", "unit", "native median [min-max]", "HiveCL median [min-max]",
              "ratio", "paired [min-max]");
  csv_ = open_csv(
      "benchmark,case,bytes,unit,native_median,native_min,native_max,hivecl_median,hivecl_min,hivecl_max,"
      "ratio,paired_ratio,paired_min,paired_max\n");
}

void SideBySide::compare(const std::string& case_name, const std::string& unit, uint64_t bytes,
                         const std::function<double(Side&)>& measure) {
  measure(native);  // warm-up, not counted
  measure(hivecl);
  std::vector<double> native_values(rounds_), hivecl_values(rounds_);
  for (size_t round = 0; round < rounds_; ++round)
    in_turn(round, [&] { native_values[round] = measure(native); }, [&] { hivecl_values[round] = measure(hivecl); });
  report(case_name, unit, bytes, native_values, hivecl_values);
}

void SideBySide::report(const std::string& case_name, const std::string& unit, uint64_t bytes,
                        const std::vector<double>& native_values, const std::vector<double>& hivecl_values) {
  const Summary n = summarize(native_values);
  const Summary h = summarize(hivecl_values);
  // For a latency: how many times slower HiveCL is; for a rate: the fraction of native it reaches.
  const double ratio = h.median / n.median;
  std::vector<double> round_ratios;
  for (size_t round = 0; round < std::min(native_values.size(), hivecl_values.size()); ++round)
    round_ratios.push_back(hivecl_values[round] / native_values[round]);
  const Summary paired = summarize(round_ratios);
  std::printf("%-34s %-6s %10.2f [%6.2f-%6.2f] %10.2f [%6.2f-%6.2f] %8.2f %8.2f [%5.2f-%5.2f]\n", case_name.c_str(),
              unit.c_str(), n.median, n.low, n.high, h.median, h.low, h.high, ratio, paired.median, paired.low,
              paired.high);
  std::fflush(stdout);
  if (csv_)
    csv_ << benchmark_ << ",\"" << case_name << "\"," << bytes << ',' << unit << ',' << n.median << ',' << n.low << ','
         << n.high << ',' << h.median << ',' << h.low << ',' << h.high << ',' << ratio << ',' << paired.median << ','
         << paired.low << ',' << paired.high << '\n';
}

}  // namespace hivecl::bench
