// Thread safety, natively and through HiveCL: several application threads enqueue writes,
// kernels and reads at once, on queues of their own and on one shared queue. Each thread has
// its own kernel object (clSetKernelArg on one kernel is the API's only unsafe call).
#include <string>
#include <thread>
#include <vector>

#include "differential.hpp"

using namespace hivecl::test;

namespace {

constexpr int threads = 4;
constexpr int rounds = 25;
constexpr size_t items = 4096;

constexpr const char* add_source = R"(
kernel void add(global int* data, int amount) { data[get_global_id(0)] += amount; }
)";

// One thread's work: per round, write fresh values, add to them on the device, read them back.
// Returns the number of rounds whose data came back right (or -1 when a call failed).
int work(cl_context context, cl_command_queue queue, cl_program program, int seed) {
  cl_int status = CL_SUCCESS;
  cl_mem buffer = clCreateBuffer(context, CL_MEM_READ_WRITE, items * sizeof(cl_int), nullptr, &status);
  cl_kernel kernel = clCreateKernel(program, "add", &status);
  if (!buffer || !kernel) return -1;
  int right = 0;
  std::vector<cl_int> values(items), back(items);
  for (int round = 0; round < rounds; ++round) {
    for (size_t i = 0; i < items; ++i) values[i] = static_cast<cl_int>(i) * seed + round;
    const cl_int amount = seed * 1000 + round;
    const size_t global = items;
    bool ok = clEnqueueWriteBuffer(queue, buffer, CL_FALSE, 0, items * sizeof(cl_int), values.data(), 0, nullptr,
                                   nullptr) == CL_SUCCESS;
    ok = ok && clSetKernelArg(kernel, 0, sizeof buffer, &buffer) == CL_SUCCESS;
    ok = ok && clSetKernelArg(kernel, 1, sizeof amount, &amount) == CL_SUCCESS;
    // Through a shared queue another thread's commands may come between these: the in-order
    // queue still runs this thread's write, kernel and read in its order.
    ok = ok && clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &global, nullptr, 0, nullptr, nullptr) == CL_SUCCESS;
    ok = ok && clEnqueueReadBuffer(queue, buffer, CL_TRUE, 0, items * sizeof(cl_int), back.data(), 0, nullptr,
                                   nullptr) == CL_SUCCESS;
    if (!ok) break;
    bool same = true;
    for (size_t i = 0; i < items; ++i) same = same && back[i] == values[i] + amount;
    right += same;
  }
  clReleaseKernel(kernel);
  clReleaseMemObject(buffer);
  return right;
}

void record_results(Probe& probe, const std::string& what, const std::vector<int>& results) {
  for (size_t i = 0; i < results.size(); ++i) {
    probe.value(what + ": thread " + std::to_string(i) + " rounds right", results[i]);
    CHECK(results[i] == rounds);
  }
}

}  // namespace

DIFFERENTIAL_TEST(threads_own_queues, "threads enqueue at once on queues of their own", "[threads]") {
  auto setup = make_setup(probe);
  Program program = build_program(probe, setup.context, add_source);
  std::vector<Queue> queues;
  for (int i = 0; i < threads; ++i) {
    cl_int status = CL_SUCCESS;
    queues.emplace_back(clCreateCommandQueueWithProperties(setup.context, probe.device(), nullptr, &status));
    REQUIRE(status == CL_SUCCESS);
  }
  std::vector<int> results(threads);
  std::vector<std::thread> workers;
  for (int i = 0; i < threads; ++i)
    workers.emplace_back([&, i] { results[i] = work(setup.context, queues[i], program, i + 1); });
  for (auto& worker : workers) worker.join();
  record_results(probe, "own queues", results);
}

DIFFERENTIAL_TEST(threads_shared_queue, "threads enqueue at once on one shared queue", "[threads]") {
  auto setup = make_setup(probe);
  Program program = build_program(probe, setup.context, add_source);
  std::vector<int> results(threads);
  std::vector<std::thread> workers;
  for (int i = 0; i < threads; ++i)
    workers.emplace_back([&, i] { results[i] = work(setup.context, setup.queue, program, i + 1); });
  for (auto& worker : workers) worker.join();
  record_results(probe, "shared queue", results);
  probe.status("finish", clFinish(setup.queue));
}
