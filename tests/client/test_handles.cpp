// libhivecl called directly (linked, no loader): every entry point checks its handles
// before touching them, so garbage, released and wrong-type handles give the OpenCL
// error for an invalid object, never a crash. Also checks the cl_khr_icd layout.
#include <CL/cl.h>
#include <CL/cl_ext.h>

#include <cstring>
#include <thread>
#include <vector>

#include "catch.hpp"

namespace {

struct HiveCL {
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  cl_mem buffer = nullptr;

  HiveCL() {
    cl_uint count = 0;
    REQUIRE(clGetPlatformIDs(1, &platform, &count) == CL_SUCCESS);
    REQUIRE(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr) == CL_SUCCESS);
    cl_int status = CL_SUCCESS;
    context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &status);
    REQUIRE(status == CL_SUCCESS);
    queue = clCreateCommandQueueWithProperties(context, device, nullptr, &status);
    REQUIRE(status == CL_SUCCESS);
    buffer = clCreateBuffer(context, CL_MEM_READ_WRITE, 1024, nullptr, &status);
    REQUIRE(status == CL_SUCCESS);
  }
  ~HiveCL() {
    clReleaseMemObject(buffer);
    clReleaseCommandQueue(queue);
    clReleaseContext(context);
  }
};

// Looks like an ICD object (a non-NULL first word) but is none of HiveCL's.
struct Impostor {
  const void* dispatch = &dispatch;
  char padding[256] = {};
};

}  // namespace

TEST_CASE("the only platform is HiveCL's, and its objects start with one dispatch table", "[client]") {
  HiveCL cl;
  char name[64] = {};
  REQUIRE(clGetPlatformInfo(cl.platform, CL_PLATFORM_NAME, sizeof name, name, nullptr) == CL_SUCCESS);
  CHECK(std::string(name) == "HiveCL");
  const void* table = *reinterpret_cast<void* const*>(cl.platform);
  for (const void* handle : std::vector<const void*>{cl.device, cl.context, cl.queue, cl.buffer})
    CHECK(*reinterpret_cast<void* const*>(handle) == table);
  CHECK(clGetExtensionFunctionAddress("clIcdGetPlatformIDsKHR") == reinterpret_cast<void*>(&clIcdGetPlatformIDsKHR));
  CHECK(clGetExtensionFunctionAddressForPlatform(cl.platform, "clNoSuchFunctionKHR") == nullptr);
}

TEST_CASE("garbage and wrong-type handles give the invalid-object error", "[client]") {
  HiveCL cl;
  Impostor impostor;
  auto* fake = reinterpret_cast<void*>(&impostor);
  cl_int status = CL_SUCCESS;
  CHECK(clRetainContext(static_cast<cl_context>(fake)) == CL_INVALID_CONTEXT);
  CHECK(clFinish(static_cast<cl_command_queue>(fake)) == CL_INVALID_COMMAND_QUEUE);
  CHECK(clReleaseMemObject(static_cast<cl_mem>(fake)) == CL_INVALID_MEM_OBJECT);
  CHECK(clGetDeviceInfo(static_cast<cl_device_id>(fake), CL_DEVICE_NAME, 0, nullptr, nullptr) == CL_INVALID_DEVICE);
  CHECK(clCreateBuffer(static_cast<cl_context>(fake), 0, 16, nullptr, &status) == nullptr);
  CHECK(status == CL_INVALID_CONTEXT);
  // A buffer where a queue is expected, a queue where a buffer is expected.
  char data[16];
  CHECK(clEnqueueReadBuffer(reinterpret_cast<cl_command_queue>(cl.buffer), cl.buffer, CL_TRUE, 0, 16, data, 0,
                            nullptr, nullptr) == CL_INVALID_COMMAND_QUEUE);
  CHECK(clEnqueueReadBuffer(cl.queue, reinterpret_cast<cl_mem>(cl.queue), CL_TRUE, 0, 16, data, 0, nullptr,
                            nullptr) == CL_INVALID_MEM_OBJECT);
  // An impostor in a wait list.
  cl_event impostor_event = static_cast<cl_event>(fake);
  CHECK(clEnqueueReadBuffer(cl.queue, cl.buffer, CL_TRUE, 0, 16, data, 1, &impostor_event, nullptr) ==
        CL_INVALID_EVENT_WAIT_LIST);
  CHECK(clWaitForEvents(1, &impostor_event) == CL_INVALID_EVENT);
  // A kernel argument that looks like a buffer handle but is not one is passed as bytes.
  CHECK(clSetKernelArg(static_cast<cl_kernel>(fake), 0, sizeof(cl_mem), &fake) == CL_INVALID_KERNEL);
}

TEST_CASE("released handles are invalid, and NULL handles too", "[client]") {
  HiveCL cl;
  cl_int status = CL_SUCCESS;
  cl_mem released = clCreateBuffer(cl.context, 0, 64, nullptr, &status);
  REQUIRE(status == CL_SUCCESS);
  REQUIRE(clReleaseMemObject(released) == CL_SUCCESS);
  CHECK(clReleaseMemObject(released) == CL_INVALID_MEM_OBJECT);  // double release
  cl_uint count = 0;
  CHECK(clGetMemObjectInfo(released, CL_MEM_REFERENCE_COUNT, sizeof count, &count, nullptr) == CL_INVALID_MEM_OBJECT);
  CHECK(clRetainContext(nullptr) == CL_INVALID_CONTEXT);
  CHECK(clFlush(nullptr) == CL_INVALID_COMMAND_QUEUE);
  CHECK(clWaitForEvents(1, nullptr) == CL_INVALID_VALUE);
  CHECK(clCreateProgramWithSource(nullptr, 0, nullptr, nullptr, &status) == nullptr);
  CHECK(status == CL_INVALID_CONTEXT);
}

// A thread keeps the handles it found live without looking them up again (icd/objects.cpp)
// while no handle of their kind has been released since, in any thread.
TEST_CASE("a handle released in another thread is invalid in one that used it just before", "[client]") {
  HiveCL cl;
  cl_int status = CL_SUCCESS;
  cl_mem buffer = clCreateBuffer(cl.context, 0, 64, nullptr, &status);
  REQUIRE(status == CL_SUCCESS);
  cl_uint count = 0;
  REQUIRE(clGetMemObjectInfo(buffer, CL_MEM_REFERENCE_COUNT, sizeof count, &count, nullptr) == CL_SUCCESS);
  cl_event marker = nullptr;
  REQUIRE(clEnqueueMarkerWithWaitList(cl.queue, 0, nullptr, &marker) == CL_SUCCESS);
  REQUIRE(clWaitForEvents(1, &marker) == CL_SUCCESS);
  cl_int released = CL_INVALID_VALUE;
  std::thread([&] {
    released = clReleaseMemObject(buffer);
    if (released == CL_SUCCESS) released = clReleaseEvent(marker);
  }).join();
  REQUIRE(released == CL_SUCCESS);
  CHECK(clGetMemObjectInfo(buffer, CL_MEM_REFERENCE_COUNT, sizeof count, &count, nullptr) == CL_INVALID_MEM_OBJECT);
  CHECK(clWaitForEvents(1, &marker) == CL_INVALID_EVENT);
  // What is still live stays so.
  CHECK(clGetMemObjectInfo(cl.buffer, CL_MEM_REFERENCE_COUNT, sizeof count, &count, nullptr) == CL_SUCCESS);
  CHECK(clFinish(cl.queue) == CL_SUCCESS);
}

TEST_CASE("a context that the application released lives on while its buffers do", "[client]") {
  HiveCL cl;
  cl_int status = CL_SUCCESS;
  cl_context context = clCreateContext(nullptr, 1, &cl.device, nullptr, nullptr, &status);
  REQUIRE(status == CL_SUCCESS);
  cl_mem buffer = clCreateBuffer(context, 0, 64, nullptr, &status);
  REQUIRE(clReleaseContext(context) == CL_SUCCESS);
  // Still valid, reached through the buffer, as natively; gone with the buffer.
  cl_context owner = nullptr;
  CHECK(clGetMemObjectInfo(buffer, CL_MEM_CONTEXT, sizeof owner, &owner, nullptr) == CL_SUCCESS);
  CHECK(owner == context);
  cl_uint references = 0;
  CHECK(clGetContextInfo(context, CL_CONTEXT_REFERENCE_COUNT, sizeof references, &references, nullptr) == CL_SUCCESS);
  CHECK(references == 1);
  CHECK(clReleaseMemObject(buffer) == CL_SUCCESS);
  CHECK(clRetainContext(context) == CL_INVALID_CONTEXT);
}

TEST_CASE("a NULL dispatch table and a context used after its release are rejected", "[client]") {
  HiveCL cl;
  struct {
    const void* dispatch = nullptr;
    char padding[256] = {};
  } null_dispatch;
  auto* fake = reinterpret_cast<void*>(&null_dispatch);
  CHECK(clRetainContext(static_cast<cl_context>(fake)) == CL_INVALID_CONTEXT);
  CHECK(clReleaseMemObject(static_cast<cl_mem>(fake)) == CL_INVALID_MEM_OBJECT);
  CHECK(clFinish(static_cast<cl_command_queue>(fake)) == CL_INVALID_COMMAND_QUEUE);
  cl_int status = CL_SUCCESS;
  cl_context context = clCreateContext(nullptr, 1, &cl.device, nullptr, nullptr, &status);
  REQUIRE(status == CL_SUCCESS);
  REQUIRE(clReleaseContext(context) == CL_SUCCESS);
  CHECK(clCreateBuffer(context, 0, 64, nullptr, &status) == nullptr);
  CHECK(status == CL_INVALID_CONTEXT);
  CHECK(clCreateCommandQueueWithProperties(context, cl.device, nullptr, &status) == nullptr);
  CHECK(status == CL_INVALID_CONTEXT);
  CHECK(clReleaseContext(context) == CL_INVALID_CONTEXT);
}
