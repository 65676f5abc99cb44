// The queue waiters (proxy/completion.hpp) against the native runtime: a queue whose clFinish
// was handed to its waiter thread, which does not retain it, is released only after it.
#include <CL/cl.h>

#include <atomic>

#include "catch.hpp"
#include "native_queue.hpp"
#include "proxy/completion.hpp"

using hivecl::proxy::release_queue;
using hivecl::proxy::when_finished;

namespace {

cl_uint references(cl_command_queue queue) {
  cl_uint count = 0;
  REQUIRE(clGetCommandQueueInfo(queue, CL_QUEUE_REFERENCE_COUNT, sizeof count, &count, nullptr) == CL_SUCCESS);
  return count;
}

}  // namespace

TEST_CASE("Queue waiters: a queue is released after the clFinish handed to its waiter, not before",
          "[completion]") {
  NativeQueue native;
  cl_command_queue queue = native.new_queue();
  REQUIRE(clRetainCommandQueue(queue) == CL_SUCCESS);  // the test's own reference, so it can look
  cl_event gate = native.new_user_event();
  REQUIRE(clEnqueueMarkerWithWaitList(queue, 1, &gate, nullptr) == CL_SUCCESS);
  std::atomic<cl_int> finished{1};
  when_finished(queue, [&](cl_int result) { finished = result; });
  const cl_uint held = references(queue);  // the runtime's own, for the marker, included
  release_queue(queue);  // the session's release, while the clFinish waits for the marker
  CHECK(references(queue) == held);
  CHECK(finished == 1);
  REQUIRE(clSetUserEventStatus(gate, CL_COMPLETE) == CL_SUCCESS);
  CHECK(eventually([&] { return references(queue) == 1; }));
  CHECK(finished == CL_SUCCESS);
  clReleaseEvent(gate);
  clReleaseCommandQueue(queue);
}

TEST_CASE("Queue waiters: a queue with nothing handed to a waiter is released at once", "[completion]") {
  NativeQueue native;
  cl_command_queue queue = native.new_queue();
  REQUIRE(clRetainCommandQueue(queue) == CL_SUCCESS);
  const cl_uint held = references(queue);
  release_queue(queue);
  CHECK(references(queue) == held - 1);
  clReleaseCommandQueue(queue);
}
