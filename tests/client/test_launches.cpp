// Commands HiveCL sends without waiting for the proxy: a kernel launch whose shape the proxy
// accepted before (one message, no round trip), and a non-blocking write. One that fails on
// the proxy all the same reports the failure through its event. HiveCL only: natively every
// launch answers at once, and the failing cases need a released buffer as an argument or
// memory no process can read. And a clFinish that HiveCL need not send at all.
#include <CL/cl.h>
#include <CL/cl_hivecl.h>
#include <sys/mman.h>

#include <algorithm>
#include <string>
#include <vector>

#include "catch.hpp"

namespace {

const char* source = R"(
kernel void add(global int* data, int value) { data[get_global_id(0)] += value; }
)";

constexpr size_t count = 256;

struct Launcher {
  cl_platform_id platform = nullptr;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  cl_program program = nullptr;
  cl_kernel kernel = nullptr;
  cl_mem data = nullptr;

  Launcher() {
    cl_device_id device = nullptr;
    REQUIRE(clGetPlatformIDs(1, &platform, nullptr) == CL_SUCCESS);
    REQUIRE(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr) == CL_SUCCESS);
    cl_int status = CL_SUCCESS;
    context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &status);
    REQUIRE(status == CL_SUCCESS);
    queue = clCreateCommandQueueWithProperties(context, device, nullptr, &status);
    REQUIRE(status == CL_SUCCESS);
    program = clCreateProgramWithSource(context, 1, &source, nullptr, &status);
    REQUIRE(clBuildProgram(program, 0, nullptr, "", nullptr, nullptr) == CL_SUCCESS);
    kernel = clCreateKernel(program, "add", &status);
    REQUIRE(status == CL_SUCCESS);
    data = new_buffer();
    REQUIRE(clSetKernelArg(kernel, 0, sizeof data, &data) == CL_SUCCESS);
  }
  ~Launcher() {
    clReleaseMemObject(data);
    clReleaseKernel(kernel);
    clReleaseProgram(program);
    clReleaseCommandQueue(queue);
    clReleaseContext(context);
  }

  cl_mem new_buffer() {
    std::vector<int> zeros(count, 0);
    cl_int status = CL_SUCCESS;
    cl_mem buffer = clCreateBuffer(context, CL_MEM_COPY_HOST_PTR, count * sizeof(int), zeros.data(), &status);
    REQUIRE(status == CL_SUCCESS);
    return buffer;
  }
  cl_int launch(int value, cl_event* event = nullptr) {
    REQUIRE(clSetKernelArg(kernel, 1, sizeof value, &value) == CL_SUCCESS);
    const size_t global = count, local = 64;
    return clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &global, &local, 0, nullptr, event);
  }
  // A text property of the queue's device.
  std::string device_text(cl_device_info param) const {
    cl_device_id device = nullptr;
    REQUIRE(clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof device, &device, nullptr) == CL_SUCCESS);
    char text[256] = {};
    REQUIRE(clGetDeviceInfo(device, param, sizeof text - 1, text, nullptr) == CL_SUCCESS);
    return text;
  }
  cl_ulong messages_sent() const {
    cl_ulong sent = 0;
    REQUIRE(clGetPlatformInfo(platform, CL_PLATFORM_MESSAGES_SENT_HIVECL, sizeof sent, &sent, nullptr) == CL_SUCCESS);
    return sent;
  }
  std::vector<int> contents(cl_mem buffer) {
    std::vector<int> values(count);
    REQUIRE(clEnqueueReadBuffer(queue, buffer, CL_TRUE, 0, count * sizeof(int), values.data(), 0, nullptr, nullptr) ==
            CL_SUCCESS);
    return values;
  }
};

}  // namespace

TEST_CASE("launches of an accepted shape send one message each and run in order", "[client][launch]") {
  Launcher launcher;
  REQUIRE(launcher.launch(1) == CL_SUCCESS);
  const cl_ulong before = launcher.messages_sent();
  for (int value = 2; value <= 100; ++value) REQUIRE(launcher.launch(value) == CL_SUCCESS);
  CHECK(launcher.messages_sent() - before == 99);
  REQUIRE(clFinish(launcher.queue) == CL_SUCCESS);
  CHECK(launcher.contents(launcher.data) == std::vector<int>(count, 100 * 101 / 2));
}

TEST_CASE("clFinish sends nothing while every command of its queue is known to have ended", "[client][finish]") {
  Launcher launcher;
  const auto finish_messages = [&] {
    const cl_ulong before = launcher.messages_sent();
    REQUIRE(clFinish(launcher.queue) == CL_SUCCESS);
    return launcher.messages_sent() - before;
  };
  REQUIRE(launcher.launch(1) == CL_SUCCESS);
  CHECK(finish_messages() == 1);
  CHECK(finish_messages() == 0);  // nothing since the last one
  REQUIRE(launcher.launch(2) == CL_SUCCESS);
  CHECK(launcher.contents(launcher.data) == std::vector<int>(count, 3));  // a blocking read: ended with the launch
  CHECK(finish_messages() == 0);
  REQUIRE(launcher.launch(4) == CL_SUCCESS);
  CHECK(finish_messages() == 1);
  CHECK(launcher.contents(launcher.data) == std::vector<int>(count, 7));

  // A wait for the queue's last command ends the queue too; one for an earlier command, not.
  cl_event last = nullptr, earlier = nullptr;
  REQUIRE(launcher.launch(1, &last) == CL_SUCCESS);
  REQUIRE(clWaitForEvents(1, &last) == CL_SUCCESS);
  CHECK(finish_messages() == 0);
  REQUIRE(launcher.launch(1, &earlier) == CL_SUCCESS);
  REQUIRE(launcher.launch(1) == CL_SUCCESS);
  REQUIRE(clWaitForEvents(1, &earlier) == CL_SUCCESS);
  CHECK(finish_messages() == 1);
  CHECK(launcher.contents(launcher.data) == std::vector<int>(count, 10));
  clReleaseEvent(last);
  clReleaseEvent(earlier);

  // So does seeing the queue's last command complete by polling its status.
  cl_event polled = nullptr;
  REQUIRE(launcher.launch(1, &polled) == CL_SUCCESS);
  cl_int execution = CL_QUEUED;
  while (execution > CL_COMPLETE)
    REQUIRE(clGetEventInfo(polled, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof execution, &execution, nullptr) ==
            CL_SUCCESS);
  REQUIRE(execution == CL_COMPLETE);
  CHECK(finish_messages() == 0);
  CHECK(launcher.contents(launcher.data) == std::vector<int>(count, 11));
  clReleaseEvent(polled);

  // A blocking write from memory the proxy maps too is answered once the device has it; one from
  // ordinary memory, once the proxy has it (the device may not be through with it yet).
  const size_t bytes = count * sizeof(int);
  const size_t shareable = 64 << 10;  // smaller mappings are not shared
  cl_int status = CL_SUCCESS;
  cl_mem pinned = clCreateBuffer(launcher.context, CL_MEM_ALLOC_HOST_PTR, shareable, nullptr, &status);
  REQUIRE(status == CL_SUCCESS);
  void* mapped = clEnqueueMapBuffer(launcher.queue, pinned, CL_TRUE, CL_MAP_WRITE, 0, shareable, 0, nullptr, nullptr,
                                    &status);
  REQUIRE(status == CL_SUCCESS);
  std::fill_n(static_cast<int*>(mapped), count, 9);
  const bool shared = launcher.device_text(CL_DEVICE_DATA_PATH_HIVECL) == "memory";
  REQUIRE(launcher.launch(1) == CL_SUCCESS);
  REQUIRE(clEnqueueWriteBuffer(launcher.queue, launcher.data, CL_TRUE, 0, bytes, mapped, 0, nullptr, nullptr) ==
          CL_SUCCESS);
  CHECK(finish_messages() == (shared ? 0 : 1));
  std::vector<int> ordinary(count, 5);
  REQUIRE(launcher.launch(1) == CL_SUCCESS);
  REQUIRE(clEnqueueWriteBuffer(launcher.queue, launcher.data, CL_TRUE, 0, bytes, ordinary.data(), 0, nullptr,
                               nullptr) == CL_SUCCESS);
  CHECK(finish_messages() == 1);
  CHECK(launcher.contents(launcher.data) == ordinary);
  REQUIRE(clEnqueueUnmapMemObject(launcher.queue, pinned, mapped, 0, nullptr, nullptr) == CL_SUCCESS);
  REQUIRE(clReleaseMemObject(pinned) == CL_SUCCESS);
}

TEST_CASE("a launch that fails on the proxy after returning reports it through its event", "[client][launch]") {
  Launcher launcher;
  REQUIRE(launcher.launch(1) == CL_SUCCESS);
  // The argument passes clSetKernelArg's checks, then its buffer is gone before the launch.
  cl_mem doomed = launcher.new_buffer();
  REQUIRE(clSetKernelArg(launcher.kernel, 0, sizeof doomed, &doomed) == CL_SUCCESS);
  REQUIRE(clReleaseMemObject(doomed) == CL_SUCCESS);
  cl_event failed = nullptr;
  REQUIRE(launcher.launch(2, &failed) == CL_SUCCESS);
  CHECK(clWaitForEvents(1, &failed) == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST);
  cl_int status = CL_COMPLETE;
  REQUIRE(clGetEventInfo(failed, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr) == CL_SUCCESS);
  CHECK(status == CL_INVALID_KERNEL_ARGS);  // what the proxy's argument check answers
  REQUIRE(clReleaseEvent(failed) == CL_SUCCESS);

  // The kernel's next launch sends every argument again and is right.
  REQUIRE(clSetKernelArg(launcher.kernel, 0, sizeof launcher.data, &launcher.data) == CL_SUCCESS);
  REQUIRE(launcher.launch(5) == CL_SUCCESS);
  REQUIRE(launcher.launch(7) == CL_SUCCESS);
  CHECK(launcher.contents(launcher.data) == std::vector<int>(count, 1 + 5 + 7));
}

TEST_CASE("a non-blocking write that fails on the proxy after returning reports it through its event",
          "[client][write]") {
  Launcher launcher;
  const std::string path = launcher.device_text(CL_DEVICE_DATA_PATH_HIVECL);
  // On the memory path the proxy reads the application's memory itself, after the call returned.
  if (path != "memory") {
    WARN("not on the memory data path (" << path << "): nothing to check");
    return;
  }
  const size_t bytes = count * sizeof(int);
  void* unreadable = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(unreadable != MAP_FAILED);
  cl_event failed = nullptr;
  REQUIRE(clEnqueueWriteBuffer(launcher.queue, launcher.data, CL_FALSE, 0, bytes, unreadable, 0, nullptr, &failed) ==
          CL_SUCCESS);
  CHECK(clWaitForEvents(1, &failed) == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST);
  cl_int status = CL_COMPLETE;
  REQUIRE(clGetEventInfo(failed, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr) == CL_SUCCESS);
  CHECK(status < 0);
  REQUIRE(clReleaseEvent(failed) == CL_SUCCESS);
  munmap(unreadable, bytes);

  // The queue goes on: a later non-blocking write and a launch are right.
  const std::vector<int> ones(count, 1);
  REQUIRE(clEnqueueWriteBuffer(launcher.queue, launcher.data, CL_FALSE, 0, bytes, ones.data(), 0, nullptr, nullptr) ==
          CL_SUCCESS);
  REQUIRE(launcher.launch(2) == CL_SUCCESS);
  CHECK(launcher.contents(launcher.data) == std::vector<int>(count, 3));
}

TEST_CASE("a launch of 2^32 work-groups or more fails on a PoCL device, and the proxy serves on",
          "[client][launch]") {
  Launcher launcher;
  const std::string version = launcher.device_text(CL_DEVICE_VERSION);
  if (version.find("PoCL") == std::string::npos) {
    WARN("not a PoCL device (" << version << "): nothing to check");
    return;
  }
  // 2^33 - 1 groups of one: PoCL 3.1 keeps 2^32 - 1 of them and aborts.
  const int value = 1;
  REQUIRE(clSetKernelArg(launcher.kernel, 1, sizeof value, &value) == CL_SUCCESS);
  const size_t global = (size_t{1} << 33) - 1, local = 1;
  CHECK(clEnqueueNDRangeKernel(launcher.queue, launcher.kernel, 1, nullptr, &global, &local, 0, nullptr, nullptr) ==
        CL_OUT_OF_RESOURCES);
  REQUIRE(launcher.launch(5) == CL_SUCCESS);
  CHECK(launcher.contents(launcher.data) == std::vector<int>(count, 5));
}

TEST_CASE("a launch of more than 2^64 work-items is refused, not run", "[client][launch]") {
  Launcher launcher;
  const size_t global[2] = {size_t{1} << 32, size_t{1} << 32};  // PoCL 3.1 aborts on it
  CHECK(clEnqueueNDRangeKernel(launcher.queue, launcher.kernel, 2, nullptr, global, nullptr, 0, nullptr, nullptr) ==
        CL_INVALID_GLOBAL_WORK_SIZE);
  REQUIRE(clFinish(launcher.queue) == CL_SUCCESS);
}

TEST_CASE("an ended command's four timestamps take one message, then none; a user event's, the native answer",
          "[client][event]") {
  Launcher launcher;
  cl_device_id device = nullptr;
  REQUIRE(clGetCommandQueueInfo(launcher.queue, CL_QUEUE_DEVICE, sizeof device, &device, nullptr) == CL_SUCCESS);
  const cl_queue_properties properties[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
  cl_int status = CL_SUCCESS;
  cl_command_queue profiled = clCreateCommandQueueWithProperties(launcher.context, device, properties, &status);
  REQUIRE(status == CL_SUCCESS);
  const int value = 3;
  const size_t global = count;
  REQUIRE(clSetKernelArg(launcher.kernel, 1, sizeof value, &value) == CL_SUCCESS);
  cl_event event = nullptr;
  REQUIRE(clEnqueueNDRangeKernel(profiled, launcher.kernel, 1, nullptr, &global, nullptr, 0, nullptr, &event) ==
          CL_SUCCESS);
  REQUIRE(clFinish(profiled) == CL_SUCCESS);
  const auto read_all = [&] {
    std::vector<cl_ulong> times;
    for (cl_profiling_info param : {CL_PROFILING_COMMAND_QUEUED, CL_PROFILING_COMMAND_SUBMIT,
                                    CL_PROFILING_COMMAND_START, CL_PROFILING_COMMAND_END}) {
      cl_ulong time = 0;
      REQUIRE(clGetEventProfilingInfo(event, param, sizeof time, &time, nullptr) == CL_SUCCESS);
      times.push_back(time);
    }
    return times;
  };
  const cl_ulong before = launcher.messages_sent();
  const std::vector<cl_ulong> first = read_all();
  CHECK(launcher.messages_sent() - before == 1);
  CHECK(read_all() == first);
  CHECK(launcher.messages_sent() - before == 1);
  CHECK(std::is_sorted(first.begin(), first.end()));
  REQUIRE(clReleaseEvent(event) == CL_SUCCESS);
  REQUIRE(clReleaseCommandQueue(profiled) == CL_SUCCESS);

  // A user event has none (CL_PROFILING_INFO_NOT_AVAILABLE, as the specification says): each
  // query gets the native answer, one message each.
  cl_event user = clCreateUserEvent(launcher.context, &status);
  REQUIRE(status == CL_SUCCESS);
  REQUIRE(clSetUserEventStatus(user, CL_COMPLETE) == CL_SUCCESS);
  const cl_ulong before_user = launcher.messages_sent();
  for (int round = 0; round < 2; ++round) {
    cl_ulong time = 0;
    CHECK(clGetEventProfilingInfo(user, CL_PROFILING_COMMAND_END, sizeof time, &time, nullptr) ==
          CL_PROFILING_INFO_NOT_AVAILABLE);
  }
  CHECK(launcher.messages_sent() - before_user == 2);
  REQUIRE(clReleaseEvent(user) == CL_SUCCESS);
}
