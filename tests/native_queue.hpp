// The proxy's unit tests run its parts against the native runtime itself (PoCL in CI, or the
// platform HIVECL_TEST_NATIVE_PLATFORM names), with no HiveCL between.
#pragma once

#include <chrono>
#include <cstdlib>
#include <thread>

#include "catch.hpp"
#include "first_queue.hpp"
#include "platform_named.hpp"

struct NativeQueue : FirstQueue {
  NativeQueue() {
    const char* name = std::getenv("HIVECL_TEST_NATIVE_PLATFORM");
    cl_platform_id platform = hivecl::test::platform_named(name ? name : "Portable Computing Language");
    REQUIRE(platform);
    static_cast<FirstQueue&>(*this) = open_first_queue(platform);
    REQUIRE(status == CL_SUCCESS);
  }
  // Another in-order queue on the device, and a user event of the context; the caller releases them.
  cl_command_queue new_queue() const {
    cl_int created = CL_SUCCESS;
    cl_command_queue made = clCreateCommandQueueWithProperties(context, device, nullptr, &created);
    REQUIRE(created == CL_SUCCESS);
    return made;
  }
  cl_event new_user_event() const {
    cl_int created = CL_SUCCESS;
    cl_event made = clCreateUserEvent(context, &created);
    REQUIRE(created == CL_SUCCESS);
    return made;
  }
  NativeQueue(const NativeQueue&) = delete;
  NativeQueue& operator=(const NativeQueue&) = delete;
  ~NativeQueue() {
    clReleaseCommandQueue(queue);
    clReleaseContext(context);
  }
};

// Waits up to 10 s for `condition`.
template <class Condition>
bool eventually(Condition condition) {
  for (int i = 0; i < 1000 && !condition(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return condition();
}
