// The launch gate (proxy/launch_gate.hpp) against the native runtime: which launch of a burst
// it holds, and that whatever follows the burst, the launches behind it run.
#include <CL/cl.h>

#include <chrono>
#include <optional>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "native_queue.hpp"
#include "proxy/launch_gate.hpp"

using hivecl::proxy::LaunchGate;
using namespace std::chrono_literals;

// The launches of a burst before the gated one, and the burst up to it.
constexpr int streak = LaunchGate::slow_launches_to_gate;
const std::vector<int> last_gated{streak};

namespace {

const char* source = "__kernel void bump(__global uint* count) { atomic_inc(count); }";

struct Bumps {
  NativeQueue native;
  cl_program program = nullptr;
  cl_kernel kernel = nullptr;
  cl_mem count = nullptr;
  std::vector<cl_event> events;

  Bumps() {
    cl_int status = CL_SUCCESS;
    program = clCreateProgramWithSource(native.context, 1, &source, nullptr, &status);
    REQUIRE(clBuildProgram(program, 1, &native.device, "", nullptr, nullptr) == CL_SUCCESS);
    kernel = clCreateKernel(program, "bump", &status);
    const cl_uint zero = 0;
    count = clCreateBuffer(native.context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof zero,
                           const_cast<cl_uint*>(&zero), &status);
    REQUIRE(status == CL_SUCCESS);
    REQUIRE(clSetKernelArg(kernel, 0, sizeof count, &count) == CL_SUCCESS);
  }
  ~Bumps() {
    for (cl_event event : events) clReleaseEvent(event);
    clReleaseMemObject(count);
    clReleaseKernel(kernel);
    clReleaseProgram(program);
  }

  // One launch through `gate`, as the proxy's executor makes it; whether the gate held it.
  bool launch(LaunchGate& gate, cl_command_queue queue, size_t local = 1, bool gated = true) {
    const size_t one = 1;
    const cl_event closed = gate.before_launch(queue, gated);
    cl_event event = nullptr;
    const cl_int status = clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &one, &local, closed ? 1 : 0,
                                                 closed ? &closed : nullptr, &event);
    gate.after_launch(status == CL_SUCCESS);
    if (status == CL_SUCCESS) events.push_back(event);
    return closed != nullptr;
  }
  // The launches (0-based) the gate held among `count` more.
  std::vector<int> gated_among(LaunchGate& gate, int count) {
    std::vector<int> gated;
    for (int i = 0; i < count; ++i)
      if (launch(gate, native.queue)) gated.push_back(i);
    return gated;
  }
  bool all_ended() const {
    for (cl_event event : events) {
      cl_int status = CL_QUEUED;
      if (clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr) != CL_SUCCESS ||
          status != CL_COMPLETE)
        return false;
    }
    return true;
  }
  cl_uint counted() {
    cl_uint value = 0;
    REQUIRE(clEnqueueReadBuffer(native.queue, count, CL_TRUE, 0, sizeof value, &value, 0, nullptr, nullptr) ==
            CL_SUCCESS);
    return value;
  }
};

}  // namespace

TEST_CASE("the gate holds the launch after a streak of slow ones, and a burst begins again after a wait",
          "[launch-gate]") {
  Bumps bumps;
  LaunchGate gate(0us);  // every launch counts as slow
  CHECK(bumps.gated_among(gate, streak + 1) == last_gated);
  gate.end_burst();
  CHECK(bumps.gated_among(gate, streak + 1) == last_gated);
  REQUIRE(clFinish(bumps.native.queue) == CL_SUCCESS);  // as the session opens it first
  gate.end_burst();
  CHECK(bumps.counted() == 2 * (streak + 1));
  CHECK(bumps.all_ended());
}

TEST_CASE("a gate nothing opens opens by itself", "[launch-gate]") {
  Bumps bumps;
  LaunchGate gate(0us);
  REQUIRE(bumps.gated_among(gate, streak + 1) == last_gated);
  // No call follows: no flush, no wait. The gate's own deadline lets the launches run.
  CHECK(eventually([&] { return bumps.all_ended(); }));
  CHECK(bumps.counted() == streak + 1);
}

TEST_CASE("launches go on while the keeper opens gates", "[launch-gate]") {
  Bumps bumps;
  LaunchGate gate(0us);
  const int launches = 3 * (streak + 1);
  int gated = 0;
  for (int i = 0; i < launches; ++i) {
    gated += bumps.launch(gate, bumps.native.queue);
    // Just after each gate the launching thread pauses past its deadline: the keeper opens it
    // while launches follow.
    if (i % (streak + 1) == streak) std::this_thread::sleep_for(std::chrono::microseconds(300));
  }
  CHECK(gated > 0);
  REQUIRE(clFinish(bumps.native.queue) == CL_SUCCESS);
  gate.end_burst();
  CHECK(bumps.counted() == launches);
  CHECK(bumps.all_ended());
}

TEST_CASE("a gate closed at its end is opened", "[launch-gate]") {
  Bumps bumps;
  {
    LaunchGate gate(0us);
    REQUIRE(bumps.gated_among(gate, streak + 1) == last_gated);
  }
  REQUIRE(clFinish(bumps.native.queue) == CL_SUCCESS);
  CHECK(bumps.counted() == streak + 1);
}

TEST_CASE("a refused launch leaves no gate behind it", "[launch-gate]") {
  Bumps bumps;
  LaunchGate gate(0us);
  REQUIRE(bumps.gated_among(gate, streak).empty());
  // The next would be held, but the runtime refuses it (a work-group larger than its range).
  bumps.launch(gate, bumps.native.queue, 2);
  CHECK(bumps.events.size() == streak);
  CHECK(bumps.gated_among(gate, streak + 1) == last_gated);  // a streak begins again
  REQUIRE(clFinish(bumps.native.queue) == CL_SUCCESS);
  gate.end_burst();
  CHECK(bumps.counted() == 2 * streak + 1);
}

TEST_CASE("no gate on an out-of-order queue or one the gate does not cover, nor when it is off or launches are fast",
          "[launch-gate]") {
  Bumps bumps;
  cl_int status = CL_SUCCESS;
  const cl_queue_properties properties[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, 0};
  cl_command_queue unordered =
      clCreateCommandQueueWithProperties(bumps.native.context, bumps.native.device, properties, &status);
  if (status == CL_SUCCESS) {
    LaunchGate gate(0us);
    for (int i = 0; i < 20; ++i) CHECK_FALSE(bumps.launch(gate, unordered));
    REQUIRE(clFinish(unordered) == CL_SUCCESS);
    clReleaseCommandQueue(unordered);
  }
  LaunchGate every_burst(0us);  // but on a queue the gate does not cover (another vendor's)
  for (int i = 0; i < 20; ++i) CHECK_FALSE(bumps.launch(every_burst, bumps.native.queue, 1, false));
  CHECK(bumps.gated_among(every_burst, streak + 1) == last_gated);  // one it covers begins a burst
  LaunchGate off(std::nullopt);
  CHECK(bumps.gated_among(off, 20).empty());
  LaunchGate only_slow(std::chrono::hours(1));  // no launch takes that long
  CHECK(bumps.gated_among(only_slow, 20).empty());
  REQUIRE(clFinish(bumps.native.queue) == CL_SUCCESS);
  CHECK(bumps.all_ended());
}

TEST_CASE("a burst of slow launches is gated only after a long streak", "[launch-gate]") {
  Bumps bumps;
  LaunchGate gate(1us);  // (nearly) every launch counts as slow; unlike 0, a pause ends a burst
  CHECK(bumps.gated_among(gate, LaunchGate::slow_launches_to_first_gate).empty());
  REQUIRE(clFinish(bumps.native.queue) == CL_SUCCESS);
  gate.end_burst();
  CHECK(bumps.counted() == LaunchGate::slow_launches_to_first_gate);
}
