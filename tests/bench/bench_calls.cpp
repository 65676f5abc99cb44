// Basic calls and transfers, natively and through HiveCL, measured side by side
// (side_by_side.hpp): the median per call, or bandwidth, of each, the spread over rounds,
// and the ratio. Runs under tests/with-cluster.sh (`meson test --benchmark calls`).
//   HIVECL_BENCH_MAX_BYTES  largest transfer (default 64 MiB)
#include <CL/cl.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "bench/side_by_side.hpp"

using namespace hivecl::bench;

namespace {

// What each side needs beyond its queue: a one-argument kernel, its buffer, a completed event
// and, made by the last case, one that stays pending (a user event: HiveCL answers an ended
// command's status itself, a pending one's is asked of the proxy or in-process session each
// time). Made last: while a user event is pending, NVIDIA's clFinish takes twice as long.
struct Fixture {
  cl_kernel kernel = nullptr;
  cl_kernel add = nullptr;  // a by-value argument besides the buffer
  cl_mem buffer = nullptr;
  cl_event done = nullptr;
  mutable cl_event pending = nullptr;
  mutable std::vector<cl_event> launched;  // kept by the application until the round's end
  cl_command_queue profiled = nullptr;     // a profiling queue
  void* page_locked = nullptr;             // mapped memory of a CL_MEM_ALLOC_HOST_PTR buffer, as SHOC's
  mutable std::vector<cl_event> ended;     // commands of it that have ended, for the round
  mutable size_t next_ended = 0;
};

// A transfer small enough that its enqueue, not the copy, is what a window of them costs.
constexpr size_t small_transfer_bytes = 64;

Fixture make_fixture(const Side& side, size_t buffer_bytes) {
  Fixture fixture;
  fixture.kernel =
      make_kernel(side, "__kernel void touch(__global int* data) { data[get_global_id(0)] += 1; }", "touch");
  cl_int status = CL_SUCCESS;
  fixture.buffer =
      clCreateBuffer(side.context, CL_MEM_READ_WRITE, std::max(buffer_bytes, small_transfer_bytes), nullptr, &status);
  check(status, "clCreateBuffer");
  check(clSetKernelArg(fixture.kernel, 0, sizeof fixture.buffer, &fixture.buffer), "clSetKernelArg");
  fixture.add = make_kernel(
      side, "__kernel void add(__global int* data, int value) { data[get_global_id(0)] += value; }", "add");
  check(clSetKernelArg(fixture.add, 0, sizeof fixture.buffer, &fixture.buffer), "clSetKernelArg");
  check(clEnqueueMarkerWithWaitList(side.queue, 0, nullptr, &fixture.done), "clEnqueueMarkerWithWaitList");
  check(clFinish(side.queue), "clFinish");
  const cl_queue_properties profiling[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
  fixture.profiled = clCreateCommandQueueWithProperties(side.context, side.device, profiling, &status);
  check(status, "clCreateCommandQueueWithProperties");
  const cl_mem host_buffer = clCreateBuffer(side.context, CL_MEM_ALLOC_HOST_PTR, small_transfer_bytes, nullptr, &status);
  check(status, "clCreateBuffer");
  fixture.page_locked = clEnqueueMapBuffer(side.queue, host_buffer, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                           small_transfer_bytes, 0, nullptr, nullptr, &status);
  check(status, "clEnqueueMapBuffer");
  return fixture;
}

struct Operation {
  std::string name;
  size_t bytes;  // moved per call; 0: a latency, reported in microseconds
  int calls;     // per round
  std::function<void(const Side&, const Fixture&)> run;
  std::function<void(const Fixture&)> after_round = nullptr;  // untimed, once the queue has finished
  std::function<void(const Fixture&, int calls)> before_round = nullptr;  // untimed
};

std::vector<Operation> operations(size_t max_bytes, std::vector<char>& host) {
  std::vector<Operation> ops{
      // HiveCL knows this queue to be idle after the first and sends nothing.
      {"clFinish, empty queue", 0, 200, [](const Side& s, const Fixture&) { check(clFinish(s.queue), "clFinish"); }},
      // A round trip: the marker makes the queue busy for HiveCL (and NVIDIA).
      {"marker + clFinish", 0, 200,
       [](const Side& s, const Fixture&) {
         check(clEnqueueMarkerWithWaitList(s.queue, 0, nullptr, nullptr), "clEnqueueMarkerWithWaitList");
         check(clFinish(s.queue), "clFinish");
       }},
      // Then the clFinish has nothing left to wait for (HiveCL sends nothing for it).
      {"marker with an event + clWaitForEvents + clFinish", 0, 200,
       [](const Side& s, const Fixture&) {
         cl_event marker = nullptr;
         check(clEnqueueMarkerWithWaitList(s.queue, 0, nullptr, &marker), "clEnqueueMarkerWithWaitList");
         check(clWaitForEvents(1, &marker), "clWaitForEvents");
         check(clFinish(s.queue), "clFinish");
         check(clReleaseEvent(marker), "clReleaseEvent");
       }},
      // The same with the end seen by polling the marker's status (as some programs wait).
      {"marker with an event, polled until complete + clFinish", 0, 200,
       [](const Side& s, const Fixture&) {
         cl_event marker = nullptr;
         check(clEnqueueMarkerWithWaitList(s.queue, 0, nullptr, &marker), "clEnqueueMarkerWithWaitList");
         for (cl_int status = CL_QUEUED; status > CL_COMPLETE;)
           check(clGetEventInfo(marker, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr),
                 "clGetEventInfo");
         check(clFinish(s.queue), "clFinish");
         check(clReleaseEvent(marker), "clReleaseEvent");
       }},
      // As SHOC's Stencil2D iterates: each launch waited for through its event.
      {"kernel launch with an event + clWaitForEvents", 0, 200,
       [](const Side& s, const Fixture& f) {
         const size_t one = 1;
         cl_event launched = nullptr;
         check(clEnqueueNDRangeKernel(s.queue, f.kernel, 1, nullptr, &one, nullptr, 0, nullptr, &launched),
               "clEnqueueNDRangeKernel");
         check(clWaitForEvents(1, &launched), "clWaitForEvents");
         check(clReleaseEvent(launched), "clReleaseEvent");
       }},
      {"clGetEventInfo, status", 0, 200,
       [](const Side&, const Fixture& f) {
         cl_int status;
         check(clGetEventInfo(f.done, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr),
               "clGetEventInfo");
       }},

      // The enqueue of a transfer, timed without its end (the queue is finished after the
      // round): what each transfer of a window (bench-transfers) costs the calling thread.
      // Before the bursts of launches below: on NVIDIA a queue whose launches a gate held
      // stays slower for a while (docs/FINDINGS.md), which added 1.1–1.5 µs to each of these.
      {"non-blocking read of 64 B into page-locked memory", 0, 200,
       [](const Side& s, const Fixture& f) {
         check(clEnqueueReadBuffer(s.queue, f.buffer, CL_FALSE, 0, small_transfer_bytes, f.page_locked, 0, nullptr,
                                   nullptr),
               "clEnqueueReadBuffer");
       }},
      {"non-blocking write of 64 B from page-locked memory", 0, 200,
       [](const Side& s, const Fixture& f) {
         check(clEnqueueWriteBuffer(s.queue, f.buffer, CL_FALSE, 0, small_transfer_bytes, f.page_locked, 0, nullptr,
                                    nullptr),
               "clEnqueueWriteBuffer");
       }},
      {"clSetKernelArg", 0, 200,
       [](const Side&, const Fixture& f) {
         check(clSetKernelArg(f.kernel, 0, sizeof f.buffer, &f.buffer), "clSetKernelArg");
       }},
      // Timed without its end: the queue is finished after the round.
      {"kernel launch, unchanged arguments", 0, 200,
       [](const Side& s, const Fixture& f) {
         const size_t one = 1;
         check(clEnqueueNDRangeKernel(s.queue, f.kernel, 1, nullptr, &one, nullptr, 0, nullptr, nullptr),
               "clEnqueueNDRangeKernel");
       }},
      // As a loop of dependent steps makes them (Smith-Waterman): a new value, and an event
      // the application keeps (for profiling) until the end.
      {"launch, new value, event kept", 0, 200,
       [](const Side& s, const Fixture& f) {
         const size_t one = 1;
         const cl_int value = static_cast<cl_int>(f.launched.size());
         check(clSetKernelArg(f.add, 1, sizeof value, &value), "clSetKernelArg");
         cl_event event = nullptr;
         check(clEnqueueNDRangeKernel(s.queue, f.add, 1, nullptr, &one, nullptr, 0, nullptr, &event),
               "clEnqueueNDRangeKernel");
         f.launched.push_back(event);
       },
       [](const Fixture& f) {
         for (cl_event event : f.launched) check(clReleaseEvent(event), "clReleaseEvent");
         f.launched.clear();
       }},
      // As a program that times its kernels reads them: the four timestamps of a command that has ended.
      {"four timestamps of an ended command", 0, 100,
       [](const Side&, const Fixture& f) {
         cl_ulong time = 0;
         const cl_event event = f.ended[f.next_ended++];
         for (cl_profiling_info param : {CL_PROFILING_COMMAND_QUEUED, CL_PROFILING_COMMAND_SUBMIT,
                                         CL_PROFILING_COMMAND_START, CL_PROFILING_COMMAND_END})
           check(clGetEventProfilingInfo(event, param, sizeof time, &time, nullptr), "clGetEventProfilingInfo");
       },
       [](const Fixture& f) {
         for (cl_event event : f.ended) check(clReleaseEvent(event), "clReleaseEvent");
         f.ended.clear();
       },
       [](const Fixture& f, int calls) {
         const size_t one = 1;
         f.next_ended = 0;
         for (int i = 0; i < calls; ++i) {
           cl_event event = nullptr;
           check(clEnqueueNDRangeKernel(f.profiled, f.kernel, 1, nullptr, &one, nullptr, 0, nullptr, &event),
                 "clEnqueueNDRangeKernel");
           f.ended.push_back(event);
         }
         check(clFinish(f.profiled), "clFinish");
       }},
      {"kernel launch + clFinish", 0, 100,
       [](const Side& s, const Fixture& f) {
         const size_t one = 1;
         check(clEnqueueNDRangeKernel(s.queue, f.kernel, 1, nullptr, &one, nullptr, 0, nullptr, nullptr),
               "clEnqueueNDRangeKernel");
         check(clFinish(s.queue), "clFinish");
       }},
  };
  for (size_t bytes : {size_t{4} << 10, size_t{1} << 20, size_t{16} << 20, size_t{64} << 20, size_t{256} << 20}) {
    if (bytes > max_bytes) break;
    const int calls = static_cast<int>(std::clamp<size_t>((256u << 20) / bytes, 2, 100));
    const std::string size = size_label(bytes);
    ops.push_back({"write " + size + " (blocking)", bytes, calls, [bytes, &host](const Side& s, const Fixture& f) {
                     check(clEnqueueWriteBuffer(s.queue, f.buffer, CL_TRUE, 0, bytes, host.data(), 0, nullptr, nullptr),
                           "clEnqueueWriteBuffer");
                   }});
    ops.push_back({"read " + size + " (blocking)", bytes, calls, [bytes, &host](const Side& s, const Fixture& f) {
                     check(clEnqueueReadBuffer(s.queue, f.buffer, CL_TRUE, 0, bytes, host.data(), 0, nullptr, nullptr),
                           "clEnqueueReadBuffer");
                   }});
  }
  ops.push_back({"clGetEventInfo, pending status", 0, 200, [](const Side& s, const Fixture& f) {
                   cl_int status = CL_SUCCESS;
                   if (!f.pending) {  // in the uncounted first round
                     f.pending = clCreateUserEvent(s.context, &status);
                     check(status, "clCreateUserEvent");
                   }
                   check(clGetEventInfo(f.pending, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr),
                         "clGetEventInfo");
                 }});
  return ops;
}

}  // namespace

int main() {
  const size_t max_bytes = env_size("HIVECL_BENCH_MAX_BYTES", size_t{64} << 20);
  std::vector<char> host(max_bytes, 1);
  SideBySide bench("calls");
  const Fixture native = make_fixture(bench.native, max_bytes);
  const Fixture hivecl = make_fixture(bench.hivecl, max_bytes);
  for (const Operation& op : operations(max_bytes, host)) {
    // Microseconds per call, or GB/s for transfers: one value per round.
    bench.compare(op.name, op.bytes ? "GB/s" : "us", op.bytes, [&](Side& side) {
      const Fixture& fixture = &side == &bench.native ? native : hivecl;
      if (op.before_round) op.before_round(fixture, op.calls);
      const auto start = Clock::now();
      for (int i = 0; i < op.calls; ++i) op.run(side, fixture);
      const double calls_seconds = seconds_since(start);
      check(clFinish(side.queue), "clFinish");
      // A blocking write may return before its data reached the device (HiveCL's through a
      // proxy does): transfers are timed until the queue is empty, calls alone.
      const double seconds = (op.bytes ? seconds_since(start) : calls_seconds) / op.calls;
      if (op.after_round) op.after_round(fixture);
      return op.bytes ? op.bytes / seconds / 1e9 : seconds * 1e6;
    });
  }
  std::printf("ratio: HiveCL / native (for us: how many times slower; for GB/s: the fraction of native bandwidth)\n");
  return 0;
}
