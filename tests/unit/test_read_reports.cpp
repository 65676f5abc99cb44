// Reports of detached reads (proxy/read_reports.hpp) against the native runtime: they run once
// the commands of their queue enqueued before send() have ended, each queue on its own.
#include <CL/cl.h>

#include <atomic>

#include "catch.hpp"
#include "native_queue.hpp"
#include "proxy/read_reports.hpp"

using hivecl::proxy::ReadReports;

TEST_CASE("Read reports run after the commands before them on their queue, each queue on its own", "[reports]") {
  NativeQueue native;
  cl_int status = CL_SUCCESS;
  cl_command_queue other = clCreateCommandQueueWithProperties(native.context, native.device, nullptr, &status);
  REQUIRE(status == CL_SUCCESS);
  cl_event gate = clCreateUserEvent(native.context, &status);
  REQUIRE(status == CL_SUCCESS);
  REQUIRE(clEnqueueMarkerWithWaitList(native.queue, 1, &gate, nullptr) == CL_SUCCESS);  // a read held back
  std::atomic<int> held_reported{0}, other_reported{0};
  std::atomic<cl_int> worst{CL_SUCCESS};
  const auto report_to = [&](std::atomic<int>& count) {
    return [&](cl_int reported) {
      if (reported != CL_SUCCESS) worst = reported;
      ++count;
    };
  };
  ReadReports reports;
  CHECK_FALSE(reports.any());
  reports.add(native.queue, report_to(held_reported));
  reports.add(other, report_to(other_reported));
  reports.add(native.queue, report_to(held_reported));
  CHECK(reports.any());
  reports.send();
  CHECK_FALSE(reports.any());
  CHECK(eventually([&] { return other_reported == 1; }));
  CHECK(held_reported == 0);
  REQUIRE(clSetUserEventStatus(gate, CL_COMPLETE) == CL_SUCCESS);
  CHECK(eventually([&] { return held_reported == 2; }));
  CHECK(worst == CL_SUCCESS);
  clReleaseEvent(gate);
  clReleaseCommandQueue(other);
}
