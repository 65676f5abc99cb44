// In-process (tests/local-only.sh, with session_max_objects = 12: tests/meson.build), a
// non-blocking read or write (of a buffer, a rectangle or an image) goes to the session
// answered only if it fails (protocol::answered_only_on_failure). One the session refuses, here
// for want of room for its event, fails the call itself as any in-process call does, hands out
// no event, and the session works on.
#include <CL/cl.h>

#include <vector>

#include "catch.hpp"
#include "platform_named.hpp"

TEST_CASE("in-process, a non-blocking transfer the session refuses fails its call, and the session works on",
          "[limits]") {
  const cl_platform_id platform = hivecl::test::platform_named("HiveCL");
  REQUIRE(platform);
  cl_device_id device = nullptr;
  REQUIRE(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr) == CL_SUCCESS);
  cl_int status = CL_SUCCESS;
  cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &status);
  REQUIRE(status == CL_SUCCESS);
  cl_command_queue queue = clCreateCommandQueueWithProperties(context, device, nullptr, &status);
  REQUIRE(status == CL_SUCCESS);
  constexpr size_t bytes = 64u << 10;
  cl_mem buffer = clCreateBuffer(context, CL_MEM_READ_WRITE, bytes, nullptr, &status);
  REQUIRE(status == CL_SUCCESS);  // 3 objects
  std::vector<unsigned char> host(bytes, 5);
  REQUIRE(clEnqueueWriteBuffer(queue, buffer, CL_TRUE, 0, bytes, host.data(), 0, nullptr, nullptr) == CL_SUCCESS);
  std::vector<cl_event> events(9);
  for (cl_event& event : events)  // 12 objects: the cap
    REQUIRE(clEnqueueReadBuffer(queue, buffer, CL_FALSE, 0, 4, host.data(), 0, nullptr, &event) == CL_SUCCESS);

  cl_event refused = nullptr;
  SECTION("a read") {
    CHECK(clEnqueueReadBuffer(queue, buffer, CL_FALSE, 0, bytes, host.data(), 0, nullptr, &refused) ==
          CL_OUT_OF_RESOURCES);
  }
  SECTION("a write") {
    CHECK(clEnqueueWriteBuffer(queue, buffer, CL_FALSE, 0, bytes, host.data(), 0, nullptr, &refused) ==
          CL_OUT_OF_RESOURCES);
  }
  SECTION("a rectangle's read") {
    const size_t origin[3] = {0, 0, 0}, region[3] = {64, 4, 1};
    CHECK(clEnqueueReadBufferRect(queue, buffer, CL_FALSE, origin, origin, region, 128, 0, 64, 0, host.data(), 0,
                                  nullptr, &refused) == CL_OUT_OF_RESOURCES);
  }
  SECTION("an image's write") {
    REQUIRE(clReleaseEvent(events.back()) == CL_SUCCESS);  // room for the image, none for an event
    events.pop_back();
    const cl_image_format format{CL_RGBA, CL_UNSIGNED_INT8};
    const cl_image_desc desc{.image_type = CL_MEM_OBJECT_IMAGE2D, .image_width = 16, .image_height = 16};
    cl_mem image = clCreateImage(context, CL_MEM_READ_WRITE, &format, &desc, nullptr, &status);
    REQUIRE(status == CL_SUCCESS);
    const size_t origin[3] = {0, 0, 0}, region[3] = {16, 16, 1};
    CHECK(clEnqueueWriteImage(queue, image, CL_FALSE, origin, region, 0, 0, host.data(), 0, nullptr, &refused) ==
          CL_OUT_OF_RESOURCES);
    REQUIRE(clFinish(queue) == CL_SUCCESS);
    CHECK(clReleaseMemObject(image) == CL_SUCCESS);
  }
  CHECK(refused == nullptr);

  // Without an event nothing is refused; with an event released there is room for one again.
  const std::vector<unsigned char> written(bytes, 9);
  std::vector<unsigned char> read(bytes, 0);
  REQUIRE(clEnqueueWriteBuffer(queue, buffer, CL_FALSE, 0, bytes, written.data(), 0, nullptr, nullptr) == CL_SUCCESS);
  REQUIRE(clEnqueueReadBuffer(queue, buffer, CL_FALSE, 0, bytes, read.data(), 0, nullptr, nullptr) == CL_SUCCESS);
  REQUIRE(clFinish(queue) == CL_SUCCESS);
  CHECK(read == written);
  REQUIRE(clReleaseEvent(events.back()) == CL_SUCCESS);
  events.pop_back();
  cl_event made = nullptr;
  CHECK(clEnqueueReadBuffer(queue, buffer, CL_FALSE, 0, 4, read.data(), 0, nullptr, &made) == CL_SUCCESS);
  CHECK(clWaitForEvents(1, &made) == CL_SUCCESS);

  CHECK(clReleaseEvent(made) == CL_SUCCESS);
  for (cl_event event : events) CHECK(clReleaseEvent(event) == CL_SUCCESS);
  CHECK(clReleaseMemObject(buffer) == CL_SUCCESS);
  CHECK(clReleaseCommandQueue(queue) == CL_SUCCESS);
  CHECK(clReleaseContext(context) == CL_SUCCESS);
}
