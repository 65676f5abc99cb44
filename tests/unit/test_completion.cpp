// The queue waiters (proxy/completion.hpp) against the native runtime: a queue whose clFinish
// was handed to its waiter thread, which does not retain it, is released only after it; the
// completions of a queue that a user event may hold back do not wait behind one another.
#include <CL/cl.h>

#include <atomic>
#include <unordered_set>

#include "catch.hpp"
#include "native_queue.hpp"
#include "proxy/completion.hpp"

using hivecl::proxy::note_wait_list;
using hivecl::proxy::release_queue;
using hivecl::proxy::when_complete;
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

TEST_CASE("Queue waiters: on a queue a user event may hold, an earlier command's completion is not held behind "
          "a later one's, and a released queue forgets what held it", "[completion]") {
  NativeQueue native;
  cl_command_queue queue = native.new_queue();
  cl_event earlier_gate = native.new_user_event(), later_gate = native.new_user_event();
  const std::unordered_set<cl_event> user_events{earlier_gate, later_gate};
  cl_event earlier = nullptr, later = nullptr;
  note_wait_list(queue, {earlier_gate}, user_events);
  REQUIRE(clEnqueueMarkerWithWaitList(queue, 1, &earlier_gate, &earlier) == CL_SUCCESS);
  note_wait_list(queue, {later_gate}, user_events);
  REQUIRE(clEnqueueMarkerWithWaitList(queue, 1, &later_gate, &later) == CL_SUCCESS);
  std::atomic<cl_int> later_status{1}, earlier_status{1};
  when_complete(later, [&](cl_int status) { later_status = status; });  // handed over first
  when_complete(earlier, [&](cl_int status) { earlier_status = status; });
  REQUIRE(clSetUserEventStatus(earlier_gate, CL_COMPLETE) == CL_SUCCESS);
  CHECK(eventually([&] { return earlier_status == CL_COMPLETE; }));
  CHECK(later_status == 1);
  REQUIRE(clSetUserEventStatus(later_gate, CL_COMPLETE) == CL_SUCCESS);
  CHECK(eventually([&] { return later_status == CL_COMPLETE; }));
  // A wait list naming an event that has ended, or none of the user events, holds nothing.
  note_wait_list(queue, {earlier_gate, later}, user_events);
  CHECK(clFinish(queue) == CL_SUCCESS);
  cl_event gate = native.new_user_event();
  note_wait_list(queue, {gate}, {gate});
  REQUIRE(clRetainCommandQueue(queue) == CL_SUCCESS);
  release_queue(queue);  // forgets the gate, which it had retained
  cl_uint gate_references = 0;
  REQUIRE(clGetEventInfo(gate, CL_EVENT_REFERENCE_COUNT, sizeof gate_references, &gate_references, nullptr) ==
          CL_SUCCESS);
  CHECK(gate_references == 1);
  for (cl_event event : {earlier_gate, later_gate, earlier, later, gate}) clReleaseEvent(event);
  clReleaseCommandQueue(queue);
}
