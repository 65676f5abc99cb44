// Basic calls and transfers, natively and through HiveCL, measured side by side: every
// operation runs in rounds that alternate between the two platforms, and the table gives
// the median per call (or bandwidth) of each, the spread over rounds, and the ratio.
// Runs under tests/with-cluster.sh (`meson test --benchmark`). Environment:
//   HIVECL_TEST_NATIVE_PLATFORM  the native platform's name (default PoCL's)
//   HIVECL_BENCH_ROUNDS          rounds per operation (default 7)
//   HIVECL_BENCH_MAX_BYTES       largest transfer (default 64 MiB)
//   HIVECL_BENCH_CSV             also write the results there
#include <CL/cl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Target {
  std::string name;
  cl_device_id device = nullptr;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  cl_kernel kernel = nullptr;
  cl_mem buffer = nullptr;
  cl_event done = nullptr;
};

[[noreturn]] void die(const std::string& what, cl_int status) {
  std::fprintf(stderr, "bench-calls: %s failed (%d)\n", what.c_str(), status);
  std::exit(1);
}

void check(cl_int status, const char* what) {
  if (status != CL_SUCCESS) die(what, status);
}

Target open_target(const std::string& platform_name, size_t buffer_bytes) {
  cl_uint count = 0;
  clGetPlatformIDs(0, nullptr, &count);
  std::vector<cl_platform_id> platforms(count);
  clGetPlatformIDs(count, platforms.data(), nullptr);
  for (cl_platform_id platform : platforms) {
    char name[256] = {};
    clGetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof name, name, nullptr);
    if (platform_name != name) continue;
    Target target{platform_name};
    check(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &target.device, nullptr), "clGetDeviceIDs");
    cl_int status = CL_SUCCESS;
    target.context = clCreateContext(nullptr, 1, &target.device, nullptr, nullptr, &status);
    check(status, "clCreateContext");
    target.queue = clCreateCommandQueueWithProperties(target.context, target.device, nullptr, &status);
    check(status, "clCreateCommandQueueWithProperties");
    const char* source = "__kernel void touch(__global int* data) { data[get_global_id(0)] += 1; }";
    cl_program program = clCreateProgramWithSource(target.context, 1, &source, nullptr, &status);
    check(clBuildProgram(program, 1, &target.device, nullptr, nullptr, nullptr), "clBuildProgram");
    target.kernel = clCreateKernel(program, "touch", &status);
    check(status, "clCreateKernel");
    clReleaseProgram(program);
    target.buffer = clCreateBuffer(target.context, CL_MEM_READ_WRITE, buffer_bytes, nullptr, &status);
    check(status, "clCreateBuffer");
    check(clSetKernelArg(target.kernel, 0, sizeof target.buffer, &target.buffer), "clSetKernelArg");
    check(clEnqueueMarkerWithWaitList(target.queue, 0, nullptr, &target.done), "clEnqueueMarkerWithWaitList");
    check(clFinish(target.queue), "clFinish");
    return target;
  }
  die("finding platform '" + platform_name + "'", CL_INVALID_PLATFORM);
}

struct Operation {
  std::string name;
  size_t bytes;       // moved per call; 0: a latency, reported in microseconds
  int calls;          // per round
  std::function<void(Target&)> run;
};

struct Summary {
  double median, low, high;
};

Summary summarize(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return {values[values.size() / 2], values.front(), values.back()};
}

// Microseconds per call, or GB/s for transfers: one value per round.
double measure(const Operation& op, Target& target) {
  const auto start = Clock::now();
  for (int i = 0; i < op.calls; ++i) op.run(target);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count() / op.calls;
  return op.bytes ? op.bytes / seconds / 1e9 : seconds * 1e6;
}

std::vector<Operation> operations(size_t max_bytes, std::vector<char>& host) {
  std::vector<Operation> ops{
      {"clFinish, empty queue", 0, 200, [](Target& t) { check(clFinish(t.queue), "clFinish"); }},
      {"clGetEventInfo, status", 0, 200,
       [](Target& t) {
         cl_int status;
         check(clGetEventInfo(t.done, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr),
               "clGetEventInfo");
       }},
      {"clSetKernelArg", 0, 200,
       [](Target& t) { check(clSetKernelArg(t.kernel, 0, sizeof t.buffer, &t.buffer), "clSetKernelArg"); }},
      {"kernel launch + clFinish", 0, 100,
       [](Target& t) {
         const size_t one = 1;
         check(clEnqueueNDRangeKernel(t.queue, t.kernel, 1, nullptr, &one, nullptr, 0, nullptr, nullptr),
               "clEnqueueNDRangeKernel");
         check(clFinish(t.queue), "clFinish");
       }},
  };
  for (size_t bytes : {size_t{4} << 10, size_t{1} << 20, size_t{16} << 20, size_t{64} << 20, size_t{256} << 20}) {
    if (bytes > max_bytes) break;
    const int calls = static_cast<int>(std::clamp<size_t>((256u << 20) / bytes, 2, 100));
    const std::string size = bytes >= (1u << 20) ? std::to_string(bytes >> 20) + " MiB" : std::to_string(bytes >> 10) + " KiB";
    ops.push_back({"write " + size + " (blocking)", bytes, calls, [bytes, &host](Target& t) {
                     check(clEnqueueWriteBuffer(t.queue, t.buffer, CL_TRUE, 0, bytes, host.data(), 0, nullptr, nullptr),
                           "clEnqueueWriteBuffer");
                   }});
    ops.push_back({"read " + size + " (blocking)", bytes, calls, [bytes, &host](Target& t) {
                     check(clEnqueueReadBuffer(t.queue, t.buffer, CL_TRUE, 0, bytes, host.data(), 0, nullptr, nullptr),
                           "clEnqueueReadBuffer");
                   }});
  }
  return ops;
}

size_t env_size(const char* name, size_t fallback) {
  const char* value = std::getenv(name);
  return value ? std::strtoull(value, nullptr, 0) : fallback;
}

}  // namespace

int main() {
  const char* native_name = std::getenv("HIVECL_TEST_NATIVE_PLATFORM");
  const size_t rounds = env_size("HIVECL_BENCH_ROUNDS", 7);
  const size_t max_bytes = env_size("HIVECL_BENCH_MAX_BYTES", size_t{64} << 20);
  std::vector<char> host(max_bytes, 1);
  Target native = open_target(native_name ? native_name : "Portable Computing Language", max_bytes);
  Target hivecl = open_target("HiveCL", max_bytes);
  char device[256] = {};
  clGetDeviceInfo(native.device, CL_DEVICE_NAME, sizeof device, device, nullptr);
  std::printf("device: %s; native platform: %s; %zu rounds, native and HiveCL alternating\n", device,
              native.name.c_str(), rounds);
  std::printf("%-28s %-6s %26s %26s %8s\n", "operation", "unit", "native median [min-max]",
              "HiveCL median [min-max]", "ratio");
  std::ofstream csv;
  if (const char* path = std::getenv("HIVECL_BENCH_CSV")) {
    csv.open(path);
    csv << "operation,unit,native_median,native_min,native_max,hivecl_median,hivecl_min,hivecl_max,ratio\n";
  }
  for (const Operation& op : operations(max_bytes, host)) {
    measure(op, native);  // warm-up, not counted
    measure(op, hivecl);
    std::vector<double> native_values, hivecl_values;
    for (size_t round = 0; round < rounds; ++round) {
      native_values.push_back(measure(op, native));
      hivecl_values.push_back(measure(op, hivecl));
    }
    const Summary n = summarize(native_values);
    const Summary h = summarize(hivecl_values);
    // Time ratio for latencies (how many times slower), bandwidth ratio for transfers.
    const double ratio = h.median / n.median;
    const char* unit = op.bytes ? "GB/s" : "us";
    std::printf("%-28s %-6s %10.2f [%6.2f-%6.2f] %10.2f [%6.2f-%6.2f] %8.2f\n", op.name.c_str(), unit, n.median, n.low,
                n.high, h.median, h.low, h.high, ratio);
    if (csv)
      csv << '"' << op.name << "\"," << unit << ',' << n.median << ',' << n.low << ',' << n.high << ',' << h.median
          << ',' << h.low << ',' << h.high << ',' << ratio << '\n';
  }
  std::printf("ratio: HiveCL / native (for us: how many times slower; for GB/s: the fraction of native bandwidth)\n");
  return 0;
}
