// Contexts, command queues and events, natively and through HiveCL.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <numeric>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "differential.hpp"

using namespace hivecl::test;

namespace {

// add: the work that wait lists and barriers order; set_first: a task (one work-item).
constexpr const char* kernel_source = R"(
__kernel void add(__global int* data, int amount) { data[get_global_id(0)] += amount; }
__kernel void set_first(__global int* data) { data[0] = 42; }
)";

// A property name no OpenCL version defines.
constexpr cl_uint unknown_name = 0x7E57;

template <class T>
struct Answer {
  cl_int status;
  T value;
};

// One clGet*Info value of a fixed size.
template <class T, class Handle, class Param>
Answer<T> ask(cl_int(CL_API_CALL* query)(Handle, Param, size_t, void*, size_t*), std::type_identity_t<Handle> handle,
              std::type_identity_t<Param> param) {
  Answer<T> answer{CL_SUCCESS, T{}};
  answer.status = query(handle, param, sizeof(T), &answer.value, nullptr);
  return answer;
}

// One clGet*Info value that is a list.
template <class T, class Handle, class Param>
Answer<std::vector<T>> ask_list(cl_int(CL_API_CALL* query)(Handle, Param, size_t, void*, size_t*),
                                std::type_identity_t<Handle> handle, std::type_identity_t<Param> param) {
  Answer<std::vector<T>> answer{CL_SUCCESS, {}};
  size_t size = 0;
  answer.status = query(handle, param, 0, nullptr, &size);
  if (answer.status != CL_SUCCESS || size == 0) return answer;
  answer.value.resize(size / sizeof(T));
  answer.status = query(handle, param, size, answer.value.data(), nullptr);
  return answer;
}

// Takes a handle back from its owner, for a test that releases it by hand.
// An object's reference count, then after one retain and one release.
template <class Handle, class Param>
void record_reference_counts(Probe& probe, cl_int(CL_API_CALL* query)(Handle, Param, size_t, void*, size_t*),
                             std::type_identity_t<Param> count_param, cl_int(CL_API_CALL* retain)(Handle),
                             cl_int(CL_API_CALL* release)(Handle), std::type_identity_t<Handle> handle) {
  auto count = [&] { return ask<cl_uint>(query, handle, count_param); };
  probe.status("reference count status", count().status);
  probe.value("reference count", count().value);
  probe.status("retain", retain(handle));
  probe.value("after retain", count().value);
  probe.status("release", release(handle));
  probe.value("after release", count().value);
}

template <class Owner>
auto disown(Owner& owner) {
  auto handle = owner.get();
  *owner.out() = nullptr;
  return handle;
}

Context create_context(Probe& probe, const cl_context_properties* properties = nullptr) {
  cl_int status = CL_SUCCESS;
  cl_device_id device = probe.device();
  Context context(clCreateContext(properties, 1, &device, nullptr, nullptr, &status));
  REQUIRE(status == CL_SUCCESS);
  return context;
}

Buffer create_buffer(cl_context context, size_t size) {
  cl_int status = CL_SUCCESS;
  Buffer buffer(clCreateBuffer(context, CL_MEM_READ_WRITE, size, nullptr, &status));
  REQUIRE(status == CL_SUCCESS);
  return buffer;
}

// A buffer holding `data`, written with a blocking write on the setup's queue.
Buffer buffer_with(const Setup& setup, const std::vector<cl_int>& data) {
  const size_t bytes = data.size() * sizeof(cl_int);
  Buffer buffer = create_buffer(setup.context, bytes);
  REQUIRE(clEnqueueWriteBuffer(setup.queue, buffer, CL_TRUE, 0, bytes, data.data(), 0, nullptr, nullptr) ==
          CL_SUCCESS);
  return buffer;
}

Kernel create_kernel(cl_program program, const char* name) {
  cl_int status = CL_SUCCESS;
  Kernel kernel(clCreateKernel(program, name, &status));
  REQUIRE(status == CL_SUCCESS);
  return kernel;
}

// Sets the arguments of `add`.
void set_add_args(cl_kernel kernel, cl_mem buffer, cl_int amount) {
  REQUIRE(clSetKernelArg(kernel, 0, sizeof buffer, &buffer) == CL_SUCCESS);
  REQUIRE(clSetKernelArg(kernel, 1, sizeof amount, &amount) == CL_SUCCESS);
}

Event marker(cl_command_queue queue) {
  Event event;
  REQUIRE(clEnqueueMarkerWithWaitList(queue, 0, nullptr, event.out()) == CL_SUCCESS);
  return event;
}

bool supports_out_of_order(cl_device_id device) {
  cl_command_queue_properties properties = 0;
  clGetDeviceInfo(device, CL_DEVICE_QUEUE_ON_HOST_PROPERTIES, sizeof properties, &properties, nullptr);
  return properties & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE;
}

std::vector<cl_int> read_ints(cl_command_queue queue, cl_mem buffer, size_t count) {
  std::vector<cl_int> values(count);
  REQUIRE(clEnqueueReadBuffer(queue, buffer, CL_TRUE, 0, count * sizeof(cl_int), values.data(), 0, nullptr,
                              nullptr) == CL_SUCCESS);
  return values;
}

// Records a context's properties and whether they are the ones it was created with.
void record_context_properties(Probe& probe, const std::string& what, cl_context context,
                               const std::vector<cl_context_properties>& given) {
  const auto properties = ask_list<cl_context_properties>(clGetContextInfo, context, CL_CONTEXT_PROPERTIES);
  probe.status(what + " properties status", properties.status);
  probe.value(what + " properties count", properties.value.size());
  probe.value(what + " properties as given", properties.value == given);
}

}  // namespace

// --- contexts ---------------------------------------------------------------------------

DIFFERENTIAL_TEST(context_creation, "clCreateContext accepts and rejects as specified", "[context][event]") {
  cl_device_id device = probe.device();
  const auto platform = reinterpret_cast<cl_context_properties>(probe.platform());
  const cl_context_properties with_platform[] = {CL_CONTEXT_PLATFORM, platform, 0};
  cl_int status = CL_SUCCESS;
  {
    Context context(clCreateContext(with_platform, 1, &device, nullptr, nullptr, &status));
    probe.status("with platform", status);
    probe.value("with platform has a context", context.get() != nullptr);
  }
  {
    const cl_context_properties empty[] = {0};
    Context context(clCreateContext(empty, 1, &device, nullptr, nullptr, &status));
    probe.status("empty properties", status);
  }
  {
    auto notify = [](const char*, const void*, size_t, void*) {};
    int user_data = 0;
    Context context(clCreateContext(nullptr, 1, &device, notify, &user_data, &status));
    probe.status("with pfn_notify", status);
  }
  {
    // Duplicates are ignored: the context has the device once.
    const cl_device_id twice[] = {device, device};
    Context context(clCreateContext(nullptr, 2, twice, nullptr, nullptr, &status));
    probe.status("device twice", status);
    if (status == CL_SUCCESS) {
      probe.value("device twice: devices", ask<cl_uint>(clGetContextInfo, context.get(), CL_CONTEXT_NUM_DEVICES).value);
      probe.value("device twice: listed",
                  ask_list<cl_device_id>(clGetContextInfo, context.get(), CL_CONTEXT_DEVICES).value.size());
    }
  }
  // A handle that is no platform. (Another platform's id would not do: the ocl-icd loader
  // hands the call to that platform, with a device that is not its own.)
  const auto not_a_platform = reinterpret_cast<cl_context_properties>(device);
  const cl_context_properties bad_platform[] = {CL_CONTEXT_PLATFORM, not_a_platform, 0};
  probe.value("bad platform is null", clCreateContext(bad_platform, 1, &device, nullptr, nullptr, &status) == nullptr);
  probe.status("bad platform", status);
  const cl_context_properties unknown[] = {unknown_name, 1, 0};
  probe.value("unknown is null", clCreateContext(unknown, 1, &device, nullptr, nullptr, &status) == nullptr);
  probe.status("unknown property", status);
  const cl_context_properties duplicated[] = {CL_CONTEXT_PLATFORM, platform, CL_CONTEXT_PLATFORM, platform, 0};
  probe.value("duplicated is null", clCreateContext(duplicated, 1, &device, nullptr, nullptr, &status) == nullptr);
  probe.status("duplicated property", status);
  // The platform property makes the loader hand these to the platform instead of rejecting them itself.
  probe.value("NULL devices is null", clCreateContext(with_platform, 1, nullptr, nullptr, nullptr, &status) == nullptr);
  probe.status("NULL devices", status);
  probe.value("no devices is null", clCreateContext(with_platform, 0, &device, nullptr, nullptr, &status) == nullptr);
  probe.status("num_devices 0", status);
  const cl_device_id with_null[] = {device, nullptr};
  probe.value("NULL device is null",
              clCreateContext(with_platform, 2, with_null, nullptr, nullptr, &status) == nullptr);
  probe.status("NULL device in the list", status);
  int user_data = 0;
  probe.value("user_data alone is null",
              clCreateContext(with_platform, 1, &device, nullptr, &user_data, &status) == nullptr);
  probe.status("user_data without pfn_notify", status);
}

DIFFERENTIAL_TEST(context_from_type, "clCreateContextFromType finds the platform's devices by type",
                  "[context][event]") {
  // Through a loader the platform property is what picks the platform.
  const cl_context_properties properties[] = {
      CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(probe.platform()), 0};
  for (cl_device_type type : std::array<cl_device_type, 5>{CL_DEVICE_TYPE_DEFAULT, CL_DEVICE_TYPE_ALL,
                                                           CL_DEVICE_TYPE_CPU, CL_DEVICE_TYPE_GPU,
                                                           CL_DEVICE_TYPE_ACCELERATOR}) {
    const std::string what = "type " + std::to_string(type);
    cl_int status = CL_SUCCESS;
    Context context(clCreateContextFromType(properties, type, nullptr, nullptr, &status));
    // PoCL 3.1 hands back an empty context along with CL_DEVICE_NOT_FOUND, so whether the
    // context is NULL is not compared.
    probe.status(what, status);
    if (status != CL_SUCCESS) continue;
    const auto devices = ask_list<cl_device_id>(clGetContextInfo, context.get(), CL_CONTEXT_DEVICES);
    probe.status(what + " devices status", devices.status);
    probe.value(what + " device count", devices.value.size());
    probe.value(what + " holds the test device",
                std::find(devices.value.begin(), devices.value.end(), probe.device()) != devices.value.end());
    record_context_properties(probe, what, context.get(), {properties, properties + 3});
  }
  // PoCL 3.1 answers CL_DEVICE_NOT_FOUND for an undefined type bit; the specification (and
  // HiveCL) says CL_INVALID_DEVICE_TYPE.
  cl_int status = CL_SUCCESS;
  Context bad(clCreateContextFromType(properties, cl_device_type{1} << 40, nullptr, nullptr, &status));
  probe.value("bad type rejected", status != CL_SUCCESS);
  if (probe.hivecl()) CHECK(status == CL_INVALID_DEVICE_TYPE);
  int user_data = 0;
  Context lonely(clCreateContextFromType(properties, CL_DEVICE_TYPE_ALL, nullptr, &user_data, &status));
  probe.status("user_data without pfn_notify", status);
}

DIFFERENTIAL_TEST(context_info, "clGetContextInfo answers every parameter", "[context][event]") {
  cl_device_id device = probe.device();
  Context context = create_context(probe);
  record_reference_counts(probe, clGetContextInfo, CL_CONTEXT_REFERENCE_COUNT, clRetainContext, clReleaseContext,
                          context.get());
  const auto num_devices = ask<cl_uint>(clGetContextInfo, context.get(), CL_CONTEXT_NUM_DEVICES);
  probe.status("num devices status", num_devices.status);
  probe.value("num devices", num_devices.value);
  const auto devices = ask_list<cl_device_id>(clGetContextInfo, context.get(), CL_CONTEXT_DEVICES);
  probe.status("devices status", devices.status);
  probe.value("devices are the one given", devices.value == std::vector<cl_device_id>{device});
  record_context_properties(probe, "NULL", context.get(), {});
  const cl_context_properties with_platform[] = {
      CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(probe.platform()), 0};
  Context given = create_context(probe, with_platform);
  record_context_properties(probe, "with platform", given.get(), {with_platform, with_platform + 3});
  const cl_context_properties empty[] = {0};
  Context given_empty = create_context(probe, empty);
  record_context_properties(probe, "empty", given_empty.get(), {0});
  const cl_context_properties user_sync[] = {CL_CONTEXT_INTEROP_USER_SYNC, CL_TRUE, 0};
  Context given_user_sync = create_context(probe, user_sync);
  record_context_properties(probe, "user sync", given_user_sync.get(), {user_sync, user_sync + 3});
  // As the specification and the CTS's negative_create_context say; natively PoCL 3.1 accepts
  // the bad value and NVIDIA answers the unknown name with CL_INVALID_VALUE.
  if (probe.hivecl()) {
    cl_device_id device_list[] = {device};
    cl_int status = CL_SUCCESS;
    const cl_context_properties bad_sync[] = {CL_CONTEXT_INTEROP_USER_SYNC, -1, 0};
    CHECK(clCreateContext(bad_sync, 1, device_list, nullptr, nullptr, &status) == nullptr);
    CHECK(status == CL_INVALID_PROPERTY);
    const cl_context_properties unknown[] = {0x7fff, 1, 0};
    CHECK(clCreateContext(unknown, 1, device_list, nullptr, nullptr, &status) == nullptr);
    CHECK(status == CL_INVALID_PROPERTY);
  }

  size_t size = 0;
  probe.status("size only", clGetContextInfo(context, CL_CONTEXT_NUM_DEVICES, 0, nullptr, &size));
  probe.value("size", size);
  char small = 0;
  probe.status("too small", clGetContextInfo(context, CL_CONTEXT_NUM_DEVICES, sizeof small, &small, nullptr));
  probe.status("unknown parameter", clGetContextInfo(context, unknown_name, sizeof size, &size, nullptr));
}

namespace {

struct DestructorLog {
  std::vector<std::string> calls;
  cl_context context = nullptr;
  bool right_context = true;
};

template <int Tag>
void CL_CALLBACK note_destruction(cl_context context, void* user_data) {
  auto* log = static_cast<DestructorLog*>(user_data);
  log->calls.push_back("callback " + std::to_string(Tag));
  log->right_context = log->right_context && context == log->context;
}

}  // namespace

DIFFERENTIAL_TEST(context_destructor, "context destructor callbacks run after the last release, newest first",
                  "[context][event]") {
  DestructorLog log;
  // Released by hand: the last release is what the test watches.
  cl_device_id device = probe.device();
  cl_int status = CL_SUCCESS;
  cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &status);
  REQUIRE(status == CL_SUCCESS);
  log.context = context;
  probe.status("register first", clSetContextDestructorCallback(context, note_destruction<1>, &log));
  probe.status("register second", clSetContextDestructorCallback(context, note_destruction<2>, &log));
  probe.status("register NULL", clSetContextDestructorCallback(context, nullptr, &log));
  {
    // A queue keeps the context until it goes too.
    Queue queue(clCreateCommandQueueWithProperties(context, device, nullptr, &status));
    REQUIRE(status == CL_SUCCESS);
    REQUIRE(clRetainContext(context) == CL_SUCCESS);
    probe.status("release one of two", clReleaseContext(context));
    probe.value("calls while referenced", log.calls.size());
    probe.status("last release", clReleaseContext(context));
    probe.value("calls while a queue lives", log.calls.size());
  }
  probe.value("calls", log.calls.size());
  for (const auto& call : log.calls) probe.record("called", call);
  probe.value("given the context", log.right_context);
}

// --- command queues ---------------------------------------------------------------------

DIFFERENTIAL_TEST(queue_creation, "command queues are created with the properties asked for", "[queue][event]") {
  cl_device_id device = probe.device();
  Context context = create_context(probe);
  const bool out_of_order = supports_out_of_order(device);
  probe.value("device runs out of order", out_of_order);
  auto record_queue = [&](const std::string& what, cl_int status, const Queue& queue) {
    probe.status(what, status);
    probe.value(what + " has a queue", queue.get() != nullptr);
    if (status != CL_SUCCESS) return;
    probe.value(what + " properties",
                ask<cl_command_queue_properties>(clGetCommandQueueInfo, queue.get(), CL_QUEUE_PROPERTIES).value);
  };
  auto create = [&](const std::string& what, cl_command_queue_properties properties) {
    cl_int status = CL_SUCCESS;
    Queue queue(clCreateCommandQueue(context, device, properties, &status));
    record_queue("clCreateCommandQueue " + what, status, queue);
  };
  auto create_with = [&](const std::string& what, const cl_queue_properties* properties) {
    cl_int status = CL_SUCCESS;
    Queue queue(clCreateCommandQueueWithProperties(context, device, properties, &status));
    record_queue("with properties " + what, status, queue);
  };
  create("default", 0);
  create("profiling", CL_QUEUE_PROFILING_ENABLE);
  if (out_of_order) create("out of order", CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE | CL_QUEUE_PROFILING_ENABLE);
  create("unknown bit", cl_command_queue_properties{1} << 20);

  create_with("NULL", nullptr);
  const cl_queue_properties empty[] = {0};
  create_with("empty", empty);
  const cl_queue_properties profiling[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
  create_with("profiling", profiling);
  const cl_queue_properties unordered[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, 0};
  if (out_of_order) create_with("out of order", unordered);
  const cl_queue_properties unknown_bit[] = {CL_QUEUE_PROPERTIES, cl_queue_properties{1} << 20, 0};
  create_with("unknown bit", unknown_bit);
  const cl_queue_properties unknown_property[] = {unknown_name, 0, 0};
  create_with("unknown property", unknown_property);
  // A queue size needs an on-device queue. (PoCL 3.1 accepts it with no CL_QUEUE_PROPERTIES at
  // all, and aborts the process when asked for an on-device queue: see on_device_queues.)
  const cl_queue_properties size_on_host[] = {CL_QUEUE_PROPERTIES, 0, CL_QUEUE_SIZE, 4096, 0};
  create_with("size of a host queue", size_on_host);
}

// HiveCL offers no on-device queues (CL_DEVICE_QUEUE_ON_DEVICE_PROPERTIES is 0), and must
// not pass a request for one on: PoCL 3.1 aborts the proxy.
HIVECL_TEST(on_device_queues, "HiveCL refuses on-device queues", "[queue][event]") {
  cl_device_id device = probe.device();
  Context context = create_context(probe);
  auto create_with = [&](cl_queue_properties properties, cl_queue_properties size) {
    const cl_queue_properties list[] = {CL_QUEUE_PROPERTIES, properties, CL_QUEUE_SIZE, size, 0};
    cl_int status = CL_SUCCESS;
    Queue queue(clCreateCommandQueueWithProperties(context, device, list, &status));
    CHECK(queue.get() == nullptr);
    return status;
  };
  CHECK(create_with(CL_QUEUE_ON_DEVICE | CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, 0) == CL_INVALID_QUEUE_PROPERTIES);
  CHECK(create_with(CL_QUEUE_ON_DEVICE | CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE | CL_QUEUE_ON_DEVICE_DEFAULT, 1024) ==
        CL_INVALID_QUEUE_PROPERTIES);
  // An on-device queue is out of order; a default one is on the device; a size is for one.
  CHECK(create_with(CL_QUEUE_ON_DEVICE, 0) == CL_INVALID_VALUE);
  CHECK(create_with(CL_QUEUE_ON_DEVICE_DEFAULT | CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, 0) == CL_INVALID_VALUE);
  CHECK(create_with(0, 4096) == CL_INVALID_VALUE);
  cl_int status = CL_SUCCESS;
  Queue old_style(clCreateCommandQueue(context, device, CL_QUEUE_ON_DEVICE | CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE,
                                       &status));
  CHECK(old_style.get() == nullptr);
  CHECK(status == CL_INVALID_VALUE);  // on-device properties are not defined for clCreateCommandQueue
  const cl_queue_properties size_alone[] = {CL_QUEUE_SIZE, 4096, 0};
  Queue sized(clCreateCommandQueueWithProperties(context, device, size_alone, &status));
  CHECK(sized.get() == nullptr);
  CHECK(status == CL_INVALID_VALUE);
}

DIFFERENTIAL_TEST(queue_info, "clGetCommandQueueInfo answers every parameter", "[queue][event]") {
  cl_device_id device = probe.device();
  Context context = create_context(probe);
  const cl_queue_properties given[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
  cl_int status = CL_SUCCESS;
  Queue queue(clCreateCommandQueueWithProperties(context, device, given, &status));
  REQUIRE(status == CL_SUCCESS);

  const auto queue_context = ask<cl_context>(clGetCommandQueueInfo, queue.get(), CL_QUEUE_CONTEXT);
  probe.status("context status", queue_context.status);
  probe.value("context is its context", queue_context.value == context.get());
  const auto queue_device = ask<cl_device_id>(clGetCommandQueueInfo, queue.get(), CL_QUEUE_DEVICE);
  probe.status("device status", queue_device.status);
  probe.value("device is its device", queue_device.value == device);
  record_reference_counts(probe, clGetCommandQueueInfo, CL_QUEUE_REFERENCE_COUNT, clRetainCommandQueue,
                          clReleaseCommandQueue, queue.get());
  const auto properties = ask<cl_command_queue_properties>(clGetCommandQueueInfo, queue.get(), CL_QUEUE_PROPERTIES);
  probe.status("properties status", properties.status);
  probe.value("properties", properties.value);
  const auto array = ask_list<cl_queue_properties>(clGetCommandQueueInfo, queue.get(), CL_QUEUE_PROPERTIES_ARRAY);
  probe.status("properties array status", array.status);
  probe.value("properties array as given", array.value == std::vector<cl_queue_properties>(given, given + 3));
  const auto default_queue = ask<cl_command_queue>(clGetCommandQueueInfo, queue.get(), CL_QUEUE_DEVICE_DEFAULT);
  probe.status("device default status", default_queue.status);
  probe.value("device default is none", default_queue.value == nullptr);
  // A queue size belongs to on-device queues only.
  probe.status("size of a host queue", ask<cl_uint>(clGetCommandQueueInfo, queue.get(), CL_QUEUE_SIZE).status);
  size_t size = 0;
  probe.status("size only", clGetCommandQueueInfo(queue, CL_QUEUE_PROPERTIES, 0, nullptr, &size));
  probe.value("size", size);
  char small = 0;
  probe.status("too small", clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof small, &small, nullptr));
  probe.status("unknown parameter", clGetCommandQueueInfo(queue, unknown_name, sizeof size, &size, nullptr));

  // Queues made without a property list report none.
  Queue plain(clCreateCommandQueue(context, device, CL_QUEUE_PROFILING_ENABLE, &status));
  REQUIRE(status == CL_SUCCESS);
  const auto plain_array = ask_list<cl_queue_properties>(clGetCommandQueueInfo, plain.get(), CL_QUEUE_PROPERTIES_ARRAY);
  probe.status("clCreateCommandQueue array status", plain_array.status);
  probe.value("clCreateCommandQueue array size", plain_array.value.size());
  Queue unlisted(clCreateCommandQueueWithProperties(context, device, nullptr, &status));
  REQUIRE(status == CL_SUCCESS);
  const auto unlisted_array =
      ask_list<cl_queue_properties>(clGetCommandQueueInfo, unlisted.get(), CL_QUEUE_PROPERTIES_ARRAY);
  probe.status("NULL list array status", unlisted_array.status);
  probe.value("NULL list array size", unlisted_array.value.size());
  const cl_queue_properties empty[] = {0};
  Queue empty_list(clCreateCommandQueueWithProperties(context, device, empty, &status));
  REQUIRE(status == CL_SUCCESS);
  const auto empty_array =
      ask_list<cl_queue_properties>(clGetCommandQueueInfo, empty_list.get(), CL_QUEUE_PROPERTIES_ARRAY);
  probe.status("empty list array status", empty_array.status);
  probe.value("empty list array", empty_array.value.size());

  probe.status("flush empty", clFlush(queue));
  probe.status("finish empty", clFinish(queue));
  Buffer buffer = create_buffer(context, 1024);
  const cl_int pattern = 5;
  REQUIRE(clEnqueueFillBuffer(queue, buffer, &pattern, sizeof pattern, 0, 1024, 0, nullptr, nullptr) == CL_SUCCESS);
  probe.status("flush", clFlush(queue));
  probe.status("finish", clFinish(queue));
  probe.record("filled", checksum(read_ints(queue, buffer, 256).data(), 1024));
}

// --- events -----------------------------------------------------------------------------

DIFFERENTIAL_TEST(event_info, "clGetEventInfo describes the command of every kind of enqueue", "[event]") {
  Setup setup = make_setup(probe);
  cl_command_queue queue = setup.queue;
  Program program = build_program(probe, setup.context, kernel_source);
  Kernel add = create_kernel(program, "add");
  Kernel set_first = create_kernel(program, "set_first");
  constexpr size_t count = 64;
  constexpr size_t bytes = count * sizeof(cl_int);
  Buffer first = create_buffer(setup.context, bytes);
  Buffer second = create_buffer(setup.context, bytes);
  std::vector<cl_int> data(count);
  std::iota(data.begin(), data.end(), 1);
  std::vector<cl_int> read_back(count);
  const cl_int pattern = 3;
  const size_t global = count;
  set_add_args(add, first, 10);
  cl_mem first_mem = first;
  REQUIRE(clSetKernelArg(set_first, 0, sizeof first_mem, &first_mem) == CL_SUCCESS);

  std::vector<std::pair<std::string, Event>> events;
  auto next = [&](const std::string& what) { return events.emplace_back(what, Event()).second.out(); };
  probe.status("write", clEnqueueWriteBuffer(queue, first, CL_FALSE, 0, bytes, data.data(), 0, nullptr, next("write")));
  probe.status("copy", clEnqueueCopyBuffer(queue, first, second, 0, 0, bytes, 0, nullptr, next("copy")));
  probe.status("fill", clEnqueueFillBuffer(queue, second, &pattern, sizeof pattern, 0, bytes / 2, 0, nullptr,
                                           next("fill")));
  probe.status("NDRange", clEnqueueNDRangeKernel(queue, add, 1, nullptr, &global, nullptr, 0, nullptr,
                                                 next("NDRange")));
  probe.status("task", clEnqueueTask(queue, set_first, 0, nullptr, next("task")));
  cl_int status = CL_SUCCESS;
  void* mapped = clEnqueueMapBuffer(queue, first, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0, nullptr,
                                    next("map"), &status);
  probe.status("map", status);
  REQUIRE(mapped != nullptr);
  probe.record("mapped", checksum(mapped, bytes));
  static_cast<cl_int*>(mapped)[1] = -1;
  probe.status("unmap", clEnqueueUnmapMemObject(queue, first, mapped, 0, nullptr, next("unmap")));
  // Mappings that move no data: written over whole, and only read.
  void* overwritten = clEnqueueMapBuffer(queue, second, CL_TRUE, CL_MAP_WRITE_INVALIDATE_REGION, bytes / 2, bytes / 2,
                                         0, nullptr, next("map to overwrite"), &status);
  probe.status("map to overwrite", status);
  REQUIRE(overwritten != nullptr);
  std::fill_n(static_cast<cl_int*>(overwritten), count / 2, 9);
  probe.status("unmap overwritten",
               clEnqueueUnmapMemObject(queue, second, overwritten, 0, nullptr, next("unmap overwritten")));
  void* peeked = clEnqueueMapBuffer(queue, first, CL_TRUE, CL_MAP_READ, 0, bytes, 0, nullptr, next("map to read"),
                                    &status);
  probe.status("map to read", status);
  REQUIRE(peeked != nullptr);
  probe.record("peeked", checksum(peeked, bytes));
  probe.status("unmap read", clEnqueueUnmapMemObject(queue, first, peeked, 0, nullptr, next("unmap read")));
  cl_mem both[] = {first, second};
  probe.status("migrate", clEnqueueMigrateMemObjects(queue, 2, both, 0, 0, nullptr, next("migrate")));
  probe.status("marker", clEnqueueMarkerWithWaitList(queue, 0, nullptr, next("marker")));
  probe.status("barrier", clEnqueueBarrierWithWaitList(queue, 0, nullptr, next("barrier")));
  probe.status("read", clEnqueueReadBuffer(queue, second, CL_FALSE, 0, bytes, read_back.data(), 0, nullptr,
                                           next("read")));
  probe.status("finish", clFinish(queue));
  probe.record("read", checksum(read_back.data(), bytes));
  probe.record("first", checksum(read_ints(queue, first, count).data(), bytes));

  for (const auto& [what, event] : events) {
    const auto type = ask<cl_command_type>(clGetEventInfo, event.get(), CL_EVENT_COMMAND_TYPE);
    probe.status(what + " type status", type.status);
    // PoCL 3.1 runs a task as an NDRange and says so; the specification (and HiveCL) says CL_COMMAND_TASK.
    if (what == "task") {
      probe.value(what + " is a kernel", type.value == CL_COMMAND_TASK || type.value == CL_COMMAND_NDRANGE_KERNEL);
      if (probe.hivecl()) CHECK(type.value == CL_COMMAND_TASK);
    } else {
      probe.value(what + " type", type.value);
    }
    const auto event_queue = ask<cl_command_queue>(clGetEventInfo, event.get(), CL_EVENT_COMMAND_QUEUE);
    probe.status(what + " queue status", event_queue.status);
    probe.value(what + " queue is its queue", event_queue.value == queue);
    const auto event_context = ask<cl_context>(clGetEventInfo, event.get(), CL_EVENT_CONTEXT);
    probe.status(what + " context status", event_context.status);
    probe.value(what + " context is its context", event_context.value == setup.context.get());
    // Counts are compared as changes: PoCL holds the last command's event of a queue a while.
    auto references = [&] { return ask<cl_uint>(clGetEventInfo, event.get(), CL_EVENT_REFERENCE_COUNT); };
    const auto before = references();
    probe.status(what + " reference count status", before.status);
    probe.status(what + " retain", clRetainEvent(event));
    probe.value(what + " one more after retain", references().value == before.value + 1);
    probe.status(what + " release", clReleaseEvent(event));
    probe.value(what + " one less after release", references().value == before.value);
    const auto execution = ask<cl_int>(clGetEventInfo, event.get(), CL_EVENT_COMMAND_EXECUTION_STATUS);
    probe.status(what + " execution status status", execution.status);
    probe.value(what + " execution status", execution.value);
  }
  cl_event event = events.front().second;
  probe.value("write reference count", ask<cl_uint>(clGetEventInfo, event, CL_EVENT_REFERENCE_COUNT).value);
  size_t size = 0;
  probe.status("size only", clGetEventInfo(event, CL_EVENT_COMMAND_TYPE, 0, nullptr, &size));
  probe.value("size", size);
  char small = 0;
  probe.status("too small", clGetEventInfo(event, CL_EVENT_COMMAND_TYPE, sizeof small, &small, nullptr));
  probe.status("unknown parameter", clGetEventInfo(event, unknown_name, sizeof size, &size, nullptr));
}

DIFFERENTIAL_TEST(event_profiling, "events of a profiling queue carry four ordered timestamps", "[event]") {
  Setup profiled = make_setup(probe, CL_QUEUE_PROFILING_ENABLE);
  constexpr size_t bytes = 1 << 16;
  Buffer buffer = create_buffer(profiled.context, bytes);
  const std::vector<unsigned char> data(bytes, 7);
  std::vector<unsigned char> read_back(bytes);
  const cl_int pattern = 1;
  Event write, fill, read;
  REQUIRE(clEnqueueWriteBuffer(profiled.queue, buffer, CL_FALSE, 0, bytes, data.data(), 0, nullptr, write.out()) ==
          CL_SUCCESS);
  REQUIRE(clEnqueueFillBuffer(profiled.queue, buffer, &pattern, sizeof pattern, 0, bytes / 2, 0, nullptr,
                              fill.out()) == CL_SUCCESS);
  REQUIRE(clEnqueueReadBuffer(profiled.queue, buffer, CL_FALSE, 0, bytes, read_back.data(), 0, nullptr, read.out()) ==
          CL_SUCCESS);
  probe.status("finish", clFinish(profiled.queue));
  probe.record("read", checksum(read_back.data(), bytes));
  for (const auto& [what, event] : {std::pair{"write", write.get()}, {"fill", fill.get()}, {"read", read.get()}}) {
    const std::string name = what;
    std::vector<cl_ulong> times;
    for (cl_profiling_info param : {CL_PROFILING_COMMAND_QUEUED, CL_PROFILING_COMMAND_SUBMIT,
                                    CL_PROFILING_COMMAND_START, CL_PROFILING_COMMAND_END}) {
      const auto time = ask<cl_ulong>(clGetEventProfilingInfo, event, param);
      probe.status(name + " " + std::to_string(param), time.status);
      times.push_back(time.value);
    }
    probe.value(name + " timestamps ordered", std::is_sorted(times.begin(), times.end()) && times.front() > 0);
    // Asked again, in another order: the same values (HiveCL keeps an ended command's four).
    bool same = true;
    for (size_t i = times.size(); i-- > 0;)
      same = same && ask<cl_ulong>(clGetEventProfilingInfo, event,
                                   static_cast<cl_profiling_info>(CL_PROFILING_COMMAND_QUEUED + i)).value == times[i];
    probe.value(name + " timestamps again", same);
    const auto complete = ask<cl_ulong>(clGetEventProfilingInfo, event, CL_PROFILING_COMMAND_COMPLETE);
    probe.status(name + " complete status", complete.status);
    probe.value(name + " complete after end", complete.value >= times.back());
  }
  cl_ulong time = 0;
  probe.status("unknown parameter", clGetEventProfilingInfo(write, unknown_name, sizeof time, &time, nullptr));
  probe.status("too small", clGetEventProfilingInfo(write, CL_PROFILING_COMMAND_END, 4, &time, nullptr));
  size_t size = 0;
  probe.status("size only", clGetEventProfilingInfo(write, CL_PROFILING_COMMAND_START, 0, nullptr, &size));
  probe.value("size", size);

  Setup plain = make_setup(probe);
  Event unprofiled;
  REQUIRE(clEnqueueFillBuffer(plain.queue, create_buffer(plain.context, 64), &pattern, sizeof pattern, 0, 64, 0,
                              nullptr, unprofiled.out()) == CL_SUCCESS);
  probe.status("finish plain", clFinish(plain.queue));
  probe.status("without profiling",
               clGetEventProfilingInfo(unprofiled, CL_PROFILING_COMMAND_START, sizeof time, &time, nullptr));
}

DIFFERENTIAL_TEST(wait_for_events, "clWaitForEvents waits and rejects as specified", "[event]") {
  Setup one = make_setup(probe);
  Setup other = make_setup(probe);
  Queue another_queue(clCreateCommandQueueWithProperties(one.context, probe.device(), nullptr, nullptr));
  REQUIRE(another_queue.get() != nullptr);
  Event first = marker(one.queue);
  Event second = marker(another_queue);
  Event foreign = marker(other.queue);
  const cl_event same_context[] = {first, second};
  const cl_event mixed[] = {first, foreign};
  probe.status("none", clWaitForEvents(0, same_context));
  probe.status("NULL list", clWaitForEvents(1, nullptr));
  probe.status("different contexts", clWaitForEvents(2, mixed));
  probe.status("one", clWaitForEvents(1, same_context));
  probe.status("two", clWaitForEvents(2, same_context));
  probe.value("complete", ask<cl_int>(clGetEventInfo, second.get(), CL_EVENT_COMMAND_EXECUTION_STATUS).value);
  probe.status("foreign", clWaitForEvents(1, foreign.out()));
}

DIFFERENTIAL_TEST(wait_list_validation, "every enqueue checks its event wait list", "[event]") {
  Setup setup = make_setup(probe);
  Setup other = make_setup(probe);
  cl_command_queue queue = setup.queue;
  Program program = build_program(probe, setup.context, kernel_source);
  Kernel add = create_kernel(program, "add");
  Kernel set_first = create_kernel(program, "set_first");
  constexpr size_t count = 16;
  constexpr size_t bytes = count * sizeof(cl_int);
  Buffer buffer = create_buffer(setup.context, bytes);
  Buffer copy = create_buffer(setup.context, bytes);
  set_add_args(add, buffer, 1);
  cl_mem buffer_mem = buffer;
  REQUIRE(clSetKernelArg(set_first, 0, sizeof buffer_mem, &buffer_mem) == CL_SUCCESS);
  std::vector<cl_int> host(count, 0);
  const cl_int pattern = 0;
  const size_t global = count;
  REQUIRE(clEnqueueWriteBuffer(queue, buffer, CL_TRUE, 0, bytes, host.data(), 0, nullptr, nullptr) == CL_SUCCESS);
  Event good = marker(queue);
  Event foreign = marker(other.queue);
  REQUIRE(clFinish(other.queue) == CL_SUCCESS);

  using Enqueue = std::function<cl_int(cl_uint, const cl_event*)>;
  const std::vector<std::pair<std::string, Enqueue>> enqueues{
      {"write", [&](cl_uint n, const cl_event* list) {
         return clEnqueueWriteBuffer(queue, buffer, CL_TRUE, 0, bytes, host.data(), n, list, nullptr);
       }},
      {"read", [&](cl_uint n, const cl_event* list) {
         return clEnqueueReadBuffer(queue, buffer, CL_TRUE, 0, bytes, host.data(), n, list, nullptr);
       }},
      {"copy", [&](cl_uint n, const cl_event* list) {
         return clEnqueueCopyBuffer(queue, buffer, copy, 0, 0, bytes, n, list, nullptr);
       }},
      {"fill", [&](cl_uint n, const cl_event* list) {
         return clEnqueueFillBuffer(queue, copy, &pattern, sizeof pattern, 0, bytes, n, list, nullptr);
       }},
      {"map", [&](cl_uint n, const cl_event* list) {
         cl_int status = CL_SUCCESS;
         void* mapped = clEnqueueMapBuffer(queue, buffer, CL_TRUE, CL_MAP_READ, 0, bytes, n, list, nullptr, &status);
         if (mapped) REQUIRE(clEnqueueUnmapMemObject(queue, buffer, mapped, 0, nullptr, nullptr) == CL_SUCCESS);
         return status;
       }},
      {"unmap", [&](cl_uint n, const cl_event* list) {
         cl_int status = CL_SUCCESS;
         void* mapped = clEnqueueMapBuffer(queue, buffer, CL_TRUE, CL_MAP_READ, 0, bytes, 0, nullptr, nullptr, &status);
         REQUIRE(mapped != nullptr);
         status = clEnqueueUnmapMemObject(queue, buffer, mapped, n, list, nullptr);
         if (status != CL_SUCCESS)
           REQUIRE(clEnqueueUnmapMemObject(queue, buffer, mapped, 0, nullptr, nullptr) == CL_SUCCESS);
         return status;
       }},
      {"NDRange", [&](cl_uint n, const cl_event* list) {
         return clEnqueueNDRangeKernel(queue, add, 1, nullptr, &global, nullptr, n, list, nullptr);
       }},
      {"task", [&](cl_uint n, const cl_event* list) { return clEnqueueTask(queue, set_first, n, list, nullptr); }},
      {"marker", [&](cl_uint n, const cl_event* list) {
         return clEnqueueMarkerWithWaitList(queue, n, list, nullptr);
       }},
      {"barrier", [&](cl_uint n, const cl_event* list) {
         return clEnqueueBarrierWithWaitList(queue, n, list, nullptr);
       }},
      {"migrate", [&](cl_uint n, const cl_event* list) {
         cl_mem objects[] = {buffer};
         return clEnqueueMigrateMemObjects(queue, 1, objects, 0, n, list, nullptr);
       }},
  };
  for (const auto& [what, enqueue] : enqueues) {
    // PoCL 3.1 does not check the wait list of a kernel enqueue (it crashes on a missing one).
    if (what == "NDRange" || what == "task") {
      if (probe.hivecl()) {
        CHECK(enqueue(1, nullptr) == CL_INVALID_EVENT_WAIT_LIST);
        CHECK(enqueue(0, good.out()) == CL_INVALID_EVENT_WAIT_LIST);
        CHECK(enqueue(1, foreign.out()) == CL_INVALID_CONTEXT);
      }
    } else {
      probe.status(what + ": count without list", enqueue(1, nullptr));
      probe.status(what + ": list without count", enqueue(0, good.out()));
      probe.status(what + ": event of another context", enqueue(1, foreign.out()));
    }
    probe.status(what + ": valid list", enqueue(1, good.out()));
  }
  probe.status("finish", clFinish(queue));
  probe.record("buffer", checksum(read_ints(queue, buffer, count).data(), bytes));
}

DIFFERENTIAL_TEST(markers_and_barriers, "markers and barriers, with wait lists and in their OpenCL 1.1 forms",
                  "[event]") {
  Setup setup = make_setup(probe);
  cl_int status = CL_SUCCESS;
  Queue second(clCreateCommandQueueWithProperties(setup.context, probe.device(), nullptr, &status));
  REQUIRE(status == CL_SUCCESS);
  constexpr size_t count = 1024;
  constexpr size_t bytes = count * sizeof(cl_int);
  Buffer buffer = create_buffer(setup.context, bytes);
  const cl_int seven = 7;
  Event filled;
  REQUIRE(clEnqueueFillBuffer(second, buffer, &seven, sizeof seven, 0, bytes, 0, nullptr, filled.out()) ==
          CL_SUCCESS);
  REQUIRE(clFlush(second) == CL_SUCCESS);

  auto record_type = [&](const std::string& what, cl_event event) {
    probe.value(what + " type", ask<cl_command_type>(clGetEventInfo, event, CL_EVENT_COMMAND_TYPE).value);
  };
  Event marker_waiting, barrier_waiting, old_marker;
  probe.status("marker with wait list",
               clEnqueueMarkerWithWaitList(setup.queue, 1, filled.out(), marker_waiting.out()));
  record_type("marker with wait list", marker_waiting);
  // The marker completes only once what it waits for has.
  probe.status("wait for the marker", clWaitForEvents(1, marker_waiting.out()));
  probe.value("fill then", ask<cl_int>(clGetEventInfo, filled.get(), CL_EVENT_COMMAND_EXECUTION_STATUS).value);
  // The barrier holds the queue's later read until another fill on the other queue is done.
  const cl_int eight = 8;
  Event refilled;
  REQUIRE(clEnqueueFillBuffer(second, buffer, &eight, sizeof eight, 0, bytes, 0, nullptr, refilled.out()) ==
          CL_SUCCESS);
  REQUIRE(clFlush(second) == CL_SUCCESS);
  probe.status("barrier with wait list",
               clEnqueueBarrierWithWaitList(setup.queue, 1, refilled.out(), barrier_waiting.out()));
  record_type("barrier with wait list", barrier_waiting);
  probe.record("after barrier", checksum(read_ints(setup.queue, buffer, count).data(), bytes));
  probe.status("1.1 marker", clEnqueueMarker(setup.queue, old_marker.out()));
  record_type("1.1 marker", old_marker);
  probe.status("1.1 marker without event", clEnqueueMarker(setup.queue, nullptr));
  probe.status("1.1 barrier", clEnqueueBarrier(setup.queue));

  probe.status("finish", clFinish(setup.queue));
  for (const auto& [what, event] : {std::pair{"marker", marker_waiting.get()}, {"barrier", barrier_waiting.get()},
                                    {"1.1 marker", old_marker.get()}})
    probe.value(std::string(what) + " complete",
                ask<cl_int>(clGetEventInfo, event, CL_EVENT_COMMAND_EXECUTION_STATUS).value);
}

// PoCL 3.1 aborts the process in clEnqueueWaitForEvents; HiveCL enqueues a barrier instead.
HIVECL_TEST(enqueue_wait_for_events, "clEnqueueWaitForEvents holds a queue until the events complete", "[event]") {
  Setup setup = make_setup(probe);
  Setup other = make_setup(probe);
  cl_int status = CL_SUCCESS;
  Queue second(clCreateCommandQueueWithProperties(setup.context, probe.device(), nullptr, &status));
  REQUIRE(status == CL_SUCCESS);
  constexpr size_t count = 1024;
  constexpr size_t bytes = count * sizeof(cl_int);
  Buffer buffer = create_buffer(setup.context, bytes);
  const cl_int nine = 9;
  Event filled;
  REQUIRE(clEnqueueFillBuffer(second, buffer, &nine, sizeof nine, 0, bytes, 0, nullptr, filled.out()) == CL_SUCCESS);
  REQUIRE(clFlush(second) == CL_SUCCESS);
  CHECK(clEnqueueWaitForEvents(setup.queue, 1, filled.out()) == CL_SUCCESS);
  const auto data = read_ints(setup.queue, buffer, count);
  CHECK(std::all_of(data.begin(), data.end(), [](cl_int v) { return v == 9; }));
  CHECK(clEnqueueWaitForEvents(setup.queue, 0, nullptr) == CL_INVALID_VALUE);
  CHECK(clEnqueueWaitForEvents(setup.queue, 0, filled.out()) == CL_INVALID_VALUE);
  CHECK(clEnqueueWaitForEvents(setup.queue, 1, nullptr) == CL_INVALID_VALUE);
  Event foreign = marker(other.queue);
  CHECK(clEnqueueWaitForEvents(setup.queue, 1, foreign.out()) == CL_INVALID_CONTEXT);
  CHECK(clFinish(setup.queue) == CL_SUCCESS);
}

DIFFERENTIAL_TEST(event_ordering, "wait lists and barriers order commands", "[event]") {
  cl_device_id device = probe.device();
  const bool out_of_order = supports_out_of_order(device);
  probe.value("device runs out of order", out_of_order);
  Setup setup = make_setup(probe, out_of_order ? CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE : 0);
  cl_command_queue queue = setup.queue;
  Program program = build_program(probe, setup.context, kernel_source);
  Kernel add = create_kernel(program, "add");
  constexpr size_t count = 4096;
  constexpr size_t bytes = count * sizeof(cl_int);
  const size_t global = count;
  Buffer buffer = create_buffer(setup.context, bytes);
  const cl_int zero = 0;

  // A chain of events: fill, then three additions, then the read.
  Event previous;
  REQUIRE(clEnqueueFillBuffer(queue, buffer, &zero, sizeof zero, 0, bytes, 0, nullptr, previous.out()) == CL_SUCCESS);
  for (cl_int amount : {1, 2, 3}) {
    set_add_args(add, buffer, amount);
    Event next;
    REQUIRE(clEnqueueNDRangeKernel(queue, add, 1, nullptr, &global, nullptr, 1, previous.out(), next.out()) ==
            CL_SUCCESS);
    previous = std::move(next);
  }
  std::vector<cl_int> chained(count);
  REQUIRE(clEnqueueReadBuffer(queue, buffer, CL_TRUE, 0, bytes, chained.data(), 1, previous.out(), nullptr) ==
          CL_SUCCESS);
  probe.value("chain all six", std::all_of(chained.begin(), chained.end(), [](cl_int v) { return v == 6; }));

  // Barriers between commands that name no events.
  const cl_int ten = 10;
  REQUIRE(clEnqueueFillBuffer(queue, buffer, &ten, sizeof ten, 0, bytes, 0, nullptr, nullptr) == CL_SUCCESS);
  REQUIRE(clEnqueueBarrierWithWaitList(queue, 0, nullptr, nullptr) == CL_SUCCESS);
  set_add_args(add, buffer, 5);
  REQUIRE(clEnqueueNDRangeKernel(queue, add, 1, nullptr, &global, nullptr, 0, nullptr, nullptr) == CL_SUCCESS);
  REQUIRE(clEnqueueBarrierWithWaitList(queue, 0, nullptr, nullptr) == CL_SUCCESS);
  std::vector<cl_int> barred(count);
  REQUIRE(clEnqueueReadBuffer(queue, buffer, CL_TRUE, 0, bytes, barred.data(), 0, nullptr, nullptr) == CL_SUCCESS);
  probe.value("barriers all fifteen", std::all_of(barred.begin(), barred.end(), [](cl_int v) { return v == 15; }));

  // Across queues: the read on one queue waits for the kernel on another.
  Queue reader(clCreateCommandQueueWithProperties(setup.context, device, nullptr, nullptr));
  REQUIRE(reader.get() != nullptr);
  std::vector<cl_int> data(count);
  std::iota(data.begin(), data.end(), 0);
  Event written, added;
  REQUIRE(clEnqueueWriteBuffer(queue, buffer, CL_FALSE, 0, bytes, data.data(), 0, nullptr, written.out()) ==
          CL_SUCCESS);
  set_add_args(add, buffer, 100);
  REQUIRE(clEnqueueNDRangeKernel(queue, add, 1, nullptr, &global, nullptr, 1, written.out(), added.out()) ==
          CL_SUCCESS);
  REQUIRE(clFlush(queue) == CL_SUCCESS);
  std::vector<cl_int> across(count);
  REQUIRE(clEnqueueReadBuffer(reader, buffer, CL_TRUE, 0, bytes, across.data(), 1, added.out(), nullptr) ==
          CL_SUCCESS);
  bool correct = true;
  for (size_t i = 0; i < count; ++i) correct = correct && across[i] == data[i] + 100;
  probe.value("across queues", correct);
  probe.record("across queues data", checksum(across.data(), bytes));
}

// Whether `call` (a wait, made on another thread) returns within `given` while the user event
// `gate` is closed; the gate is opened after that, and the call's status recorded as `what`.
template <class Call>
bool returns_while_gate_closed(Probe& probe, cl_event gate, std::chrono::milliseconds given, const std::string& what,
                               Call call) {
  std::atomic<bool> returned = false;
  cl_int status = CL_SUCCESS;
  std::jthread caller([&] {
    status = call();
    returned = true;
  });
  const auto deadline = std::chrono::steady_clock::now() + given;
  while (!returned && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const bool before = returned;
  REQUIRE(clSetUserEventStatus(gate, CL_COMPLETE) == CL_SUCCESS);
  caller.join();
  probe.status(what, status);
  return before;
}

// Whether clFinish on `queue` waits while a command held by a user event is on it: it must, so
// it is given a while to return wrongly before the event is set.
bool finish_waits_for_held_command(Probe& probe, cl_command_queue queue, cl_event gate) {
  return !returns_while_gate_closed(probe, gate, std::chrono::milliseconds(50), "clFinish of the held command",
                                    [&] { return clFinish(queue); });
}

// A clFinish right after a blocking transfer, or after waiting for the queue's last command,
// has nothing left to wait for on an in-order queue (HiveCL then sends nothing), but must wait
// for a command after it. (Out of order, PoCL makes
// a blocking transfer wait for every command before it, so the case of one it does not wait
// for cannot be run here.)
DIFFERENTIAL_TEST(finish_after_blocking,
                  "clFinish after a blocking transfer or a wait waits for every command still running",
                  "[queue][event][memory]") {
  constexpr size_t count = 1024;
  constexpr size_t bytes = count * sizeof(cl_int);
  std::vector<cl_int> host(count, 7);
  Setup setup = make_setup(probe);
  Buffer buffer = create_buffer(setup.context, bytes);
  REQUIRE(clEnqueueWriteBuffer(setup.queue, buffer, CL_TRUE, 0, bytes, host.data(), 0, nullptr, nullptr) ==
          CL_SUCCESS);
  probe.status("clFinish after a blocking write", clFinish(setup.queue));
  REQUIRE(clEnqueueReadBuffer(setup.queue, buffer, CL_TRUE, 0, bytes, host.data(), 0, nullptr, nullptr) ==
          CL_SUCCESS);
  probe.status("clFinish after a blocking read", clFinish(setup.queue));
  probe.status("clFinish again", clFinish(setup.queue));

  cl_int status = CL_SUCCESS;
  Event gate(clCreateUserEvent(setup.context, &status));
  REQUIRE(status == CL_SUCCESS);
  REQUIRE(clEnqueueReadBuffer(setup.queue, buffer, CL_TRUE, 0, bytes, host.data(), 0, nullptr, nullptr) ==
          CL_SUCCESS);
  Event held;
  REQUIRE(clEnqueueMarkerWithWaitList(setup.queue, 1, gate.out(), held.out()) == CL_SUCCESS);
  probe.value("clFinish waited for the held marker", finish_waits_for_held_command(probe, setup.queue, gate));
  probe.value("the marker's status after clFinish",
              ask<cl_int>(clGetEventInfo, held.get(), CL_EVENT_COMMAND_EXECUTION_STATUS).value);
  probe.value("data", std::all_of(host.begin(), host.end(), [](cl_int v) { return v == 7; }));

  // The same after clWaitForEvents for the queue's last command, then for one before a held one.
  Event last, earlier, held_later;
  REQUIRE(clEnqueueMarkerWithWaitList(setup.queue, 0, nullptr, last.out()) == CL_SUCCESS);
  probe.status("wait for the last command", clWaitForEvents(1, last.out()));
  probe.status("clFinish after the wait", clFinish(setup.queue));
  Event later_gate(clCreateUserEvent(setup.context, &status));
  REQUIRE(status == CL_SUCCESS);
  REQUIRE(clEnqueueMarkerWithWaitList(setup.queue, 0, nullptr, earlier.out()) == CL_SUCCESS);
  REQUIRE(clEnqueueMarkerWithWaitList(setup.queue, 1, later_gate.out(), held_later.out()) == CL_SUCCESS);
  probe.status("wait for the command before the held one", clWaitForEvents(1, earlier.out()));
  probe.value("clFinish after that wait waited for the held marker",
              finish_waits_for_held_command(probe, setup.queue, later_gate));

  // And after seeing the command complete by polling its status.
  const auto poll_until_ended = [](cl_event event) {
    cl_int execution = CL_QUEUED;
    while (execution > CL_COMPLETE)
      REQUIRE(clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof execution, &execution, nullptr) ==
              CL_SUCCESS);
    return execution;
  };
  Event polled, polled_earlier, polled_held;
  REQUIRE(clEnqueueMarkerWithWaitList(setup.queue, 0, nullptr, polled.out()) == CL_SUCCESS);
  probe.value("the polled last command's status", poll_until_ended(polled.get()));
  probe.status("clFinish after polling", clFinish(setup.queue));
  Event polled_gate(clCreateUserEvent(setup.context, &status));
  REQUIRE(status == CL_SUCCESS);
  REQUIRE(clEnqueueMarkerWithWaitList(setup.queue, 0, nullptr, polled_earlier.out()) == CL_SUCCESS);
  REQUIRE(clEnqueueMarkerWithWaitList(setup.queue, 1, polled_gate.out(), polled_held.out()) == CL_SUCCESS);
  probe.value("the polled earlier command's status", poll_until_ended(polled_earlier.get()));
  probe.value("clFinish after polling waited for the held marker",
              finish_waits_for_held_command(probe, setup.queue, polled_gate));
}

// Reads that each wait for the read before them, all held behind a user event, then released.
// Through a proxy HiveCL once copied every read still on its way again for each such wait,
// doubling them per read (40 held reads: 2^40), where SHOC's Triad made its reads wait for its
// launches.
DIFFERENTIAL_TEST(held_read_chain, "a chain of reads each waiting for the one before it, held, then released",
                  "[event][memory]") {
  Setup setup = make_setup(probe);
  constexpr size_t count = 1024, reads = 40;
  constexpr size_t bytes = count * sizeof(cl_int);
  std::vector<cl_int> data(count);
  std::iota(data.begin(), data.end(), 5);
  Buffer buffer = buffer_with(setup, data);
  cl_int status = CL_SUCCESS;
  Event gate(clCreateUserEvent(setup.context, &status));
  REQUIRE(status == CL_SUCCESS);
  std::vector<std::vector<cl_int>> read_back(reads, std::vector<cl_int>(count));
  std::vector<Event> done(reads);
  for (size_t i = 0; i < reads; ++i) {
    const cl_event* before = i == 0 ? gate.out() : done[i - 1].out();
    probe.status("read " + std::to_string(i), clEnqueueReadBuffer(setup.queue, buffer, CL_FALSE, 0, bytes,
                                                                  read_back[i].data(), 1, before, done[i].out()));
  }
  probe.status("release the chain", clSetUserEventStatus(gate, CL_COMPLETE));
  probe.status("wait for the last read", clWaitForEvents(1, done.back().out()));
  probe.value("every read's data", std::all_of(read_back.begin(), read_back.end(),
                                               [&](const std::vector<cl_int>& read) { return read == data; }));
}

// Whether clWaitForEvents for `event` returns while `gate` is closed, given 5 s (a wait that
// needs the gate would otherwise never end).
bool ends_before_gate(Probe& probe, cl_event event, cl_event gate) {
  return returns_while_gate_closed(probe, gate, std::chrono::seconds(5), "the wait",
                                   [&] { return clWaitForEvents(1, &event); });
}

// On an out-of-order queue, a read into page-locked memory completes while a command enqueued
// before it waits for a user event: through a proxy of the node the read lies in memory the proxy
// shares, and its report once waited for a marker after every command before it.
DIFFERENTIAL_TEST(read_beside_held_command, "out of order, a read completes while a command before it is held",
                  "[event][memory]") {
  if (!supports_out_of_order(probe.device())) return;
  Setup setup = make_setup(probe, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
  constexpr size_t count = 64 << 10;  // 256 KiB: shared with the proxy (64 KiB or more)
  constexpr size_t bytes = count * sizeof(cl_int);
  std::vector<cl_int> data(count);
  std::iota(data.begin(), data.end(), 3);
  Buffer buffer = buffer_with(setup, data);
  REQUIRE(clFinish(setup.queue) == CL_SUCCESS);  // out of order, the read could overtake the write
  cl_int status = CL_SUCCESS;
  Buffer pinned(clCreateBuffer(setup.context, CL_MEM_ALLOC_HOST_PTR, bytes, nullptr, &status));
  REQUIRE(status == CL_SUCCESS);
  auto* host = static_cast<cl_int*>(clEnqueueMapBuffer(setup.queue, pinned, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                                       bytes, 0, nullptr, nullptr, &status));
  REQUIRE(status == CL_SUCCESS);
  Event gate(clCreateUserEvent(setup.context, &status));
  REQUIRE(status == CL_SUCCESS);
  Event held, read;
  REQUIRE(clEnqueueMarkerWithWaitList(setup.queue, 1, gate.out(), held.out()) == CL_SUCCESS);
  REQUIRE(clEnqueueReadBuffer(setup.queue, buffer, CL_FALSE, 0, bytes, host, 0, nullptr, read.out()) == CL_SUCCESS);
  REQUIRE(clFlush(setup.queue) == CL_SUCCESS);
  probe.value("the read ended before the held marker's gate opened", ends_before_gate(probe, read.get(), gate.get()));
  probe.value("its data", std::equal(data.begin(), data.end(), host));
  probe.status("wait for the held marker", clWaitForEvents(1, held.out()));
  REQUIRE(clEnqueueUnmapMemObject(setup.queue, pinned, host, 0, nullptr, nullptr) == CL_SUCCESS);
  REQUIRE(clFinish(setup.queue) == CL_SUCCESS);
}

// In order, a read into page-locked memory completes while a read after it waits for a user
// event: through a proxy of the node both lie in memory the proxy shares; their reports once went
// out together, and the second's report, waited for in turn with the first's wait, held it back.
DIFFERENTIAL_TEST(read_before_held_read, "in order, a read completes while the read after it is held",
                  "[event][memory]") {
  Setup setup = make_setup(probe);
  constexpr size_t count = 64 << 10;  // 256 KiB each: shared with the proxy (64 KiB or more)
  constexpr size_t bytes = count * sizeof(cl_int);
  std::vector<cl_int> data(count);
  std::iota(data.begin(), data.end(), 3);
  Buffer buffer = buffer_with(setup, data);
  cl_int status = CL_SUCCESS;
  Buffer pinned(clCreateBuffer(setup.context, CL_MEM_ALLOC_HOST_PTR, 2 * bytes, nullptr, &status));
  REQUIRE(status == CL_SUCCESS);
  auto* host = static_cast<cl_int*>(clEnqueueMapBuffer(setup.queue, pinned, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                                       2 * bytes, 0, nullptr, nullptr, &status));
  REQUIRE(status == CL_SUCCESS);
  Event gate(clCreateUserEvent(setup.context, &status));
  REQUIRE(status == CL_SUCCESS);
  Event first, second;
  REQUIRE(clEnqueueReadBuffer(setup.queue, buffer, CL_FALSE, 0, bytes, host, 0, nullptr, first.out()) == CL_SUCCESS);
  REQUIRE(clEnqueueReadBuffer(setup.queue, buffer, CL_FALSE, 0, bytes, host + count, 1, gate.out(), second.out()) ==
          CL_SUCCESS);
  probe.value("the first read ended before the second's gate opened", ends_before_gate(probe, first.get(), gate.get()));
  probe.value("its data", std::equal(data.begin(), data.end(), host));
  probe.status("wait for the second", clWaitForEvents(1, second.out()));
  probe.value("the second's data", std::equal(data.begin(), data.end(), host + count));
  REQUIRE(clEnqueueUnmapMemObject(setup.queue, pinned, host, 0, nullptr, nullptr) == CL_SUCCESS);
  REQUIRE(clFinish(setup.queue) == CL_SUCCESS);
}

// Whether a wait for `earlier` ends once `earlier_gate` opens while another thread waits for
// `later`, held by `later_gate`; both gates are open after it, and both waits' statuses recorded.
bool earlier_wait_ends(Probe& probe, cl_event earlier, cl_event earlier_gate, cl_event later, cl_event later_gate) {
  cl_int later_status = CL_SUCCESS;
  std::jthread later_waiter([&] { later_status = clWaitForEvents(1, &later); });
  // Long enough for the later wait to have reached wherever it waits before the earlier one.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::atomic<bool> earlier_returned = false;
  cl_int earlier_status = CL_SUCCESS;
  std::jthread earlier_waiter([&] {
    earlier_status = clWaitForEvents(1, &earlier);
    earlier_returned = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  REQUIRE(clSetUserEventStatus(earlier_gate, CL_COMPLETE) == CL_SUCCESS);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!earlier_returned && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const bool ended = earlier_returned;
  REQUIRE(clSetUserEventStatus(later_gate, CL_COMPLETE) == CL_SUCCESS);
  earlier_waiter.join();
  later_waiter.join();
  probe.status("the earlier wait", earlier_status);
  probe.status("the later wait", later_status);
  return ended;
}

// In order, a wait for a command ends when that command does, also while another thread waits
// for a later command held by a user event, directly or through a command of another queue.
// Through a proxy both waits once went to one thread of the queue that served them in the order
// they came: the later command held the earlier one's wait (docs/PERFORMANCE.md).
DIFFERENTIAL_TEST(wait_beside_held_wait, "in order, a wait ends while another thread waits for a held later command",
                  "[event][queue]") {
  Setup setup = make_setup(probe);
  const auto user_event = [&] {
    cl_int status = CL_SUCCESS;
    Event made(clCreateUserEvent(setup.context, &status));
    REQUIRE(status == CL_SUCCESS);
    return made;
  };
  const auto marker_after = [](cl_command_queue queue, cl_event before) {
    Event marker;
    REQUIRE(clEnqueueMarkerWithWaitList(queue, 1, &before, marker.out()) == CL_SUCCESS);
    REQUIRE(clFlush(queue) == CL_SUCCESS);
    return marker;
  };
  Event earlier_gate = user_event(), later_gate = user_event();
  Event earlier = marker_after(setup.queue, earlier_gate), later = marker_after(setup.queue, later_gate);
  probe.value("the earlier command's wait ended while the later one was held",
              earlier_wait_ends(probe, earlier, earlier_gate, later, later_gate));

  // The same with each user event held by a command of a queue of its own.
  cl_int status = CL_SUCCESS;
  Queue first_other(clCreateCommandQueueWithProperties(setup.context, probe.device(), nullptr, &status));
  REQUIRE(status == CL_SUCCESS);
  Queue second_other(clCreateCommandQueueWithProperties(setup.context, probe.device(), nullptr, &status));
  REQUIRE(status == CL_SUCCESS);
  Event first_gate = user_event(), second_gate = user_event();
  Event first_held = marker_after(first_other, first_gate), second_held = marker_after(second_other, second_gate);
  Event first = marker_after(setup.queue, first_held), second = marker_after(setup.queue, second_held);
  probe.value("the earlier command's wait ended while the later one was held through another queue",
              earlier_wait_ends(probe, first, first_gate, second, second_gate));
}

// A read is complete when its data is in host memory: so is every command that waits for it.
DIFFERENTIAL_TEST(read_then_dependent, "a command that waits for a read completes after its data has arrived",
                  "[event]") {
  cl_device_id device = probe.device();
  const bool out_of_order = supports_out_of_order(device);
  Setup setup = make_setup(probe, out_of_order ? CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE : 0);
  cl_int status = CL_SUCCESS;
  Queue other(clCreateCommandQueueWithProperties(setup.context, device, nullptr, &status));
  REQUIRE(status == CL_SUCCESS);
  // Large enough that its transfer takes a while.
  constexpr size_t count = 4 << 20;
  constexpr size_t bytes = count * sizeof(cl_int);
  std::vector<cl_int> data(count);
  std::iota(data.begin(), data.end(), 0);
  Buffer buffer = buffer_with(setup, data);
  // A blocking write need not be complete on return: out of order, a read could overtake it.
  REQUIRE(clFinish(setup.queue) == CL_SUCCESS);
  auto arrived = [&](const std::vector<cl_int>& read_back) { return read_back == data; };

  // A marker waits for everything before it, also on an out-of-order queue.
  std::vector<cl_int> first(count);
  Event after_first;
  REQUIRE(clEnqueueReadBuffer(setup.queue, buffer, CL_FALSE, 0, bytes, first.data(), 0, nullptr, nullptr) ==
          CL_SUCCESS);
  REQUIRE(clEnqueueMarkerWithWaitList(setup.queue, 0, nullptr, after_first.out()) == CL_SUCCESS);
  probe.status("wait for the marker", clWaitForEvents(1, after_first.out()));
  probe.value("data behind the marker", arrived(first));

  // A marker on another queue waits for the read it names.
  std::vector<cl_int> second(count);
  Event read, after_second;
  REQUIRE(clEnqueueReadBuffer(setup.queue, buffer, CL_FALSE, 0, bytes, second.data(), 0, nullptr, read.out()) ==
          CL_SUCCESS);
  REQUIRE(clFlush(setup.queue) == CL_SUCCESS);
  REQUIRE(clEnqueueMarkerWithWaitList(other, 1, read.out(), after_second.out()) == CL_SUCCESS);
  probe.status("wait for the other queue's marker", clWaitForEvents(1, after_second.out()));
  probe.value("data behind the other queue's marker", arrived(second));

  // clFinish of that other queue too.
  std::vector<cl_int> third(count);
  Event read_again;
  REQUIRE(clEnqueueReadBuffer(setup.queue, buffer, CL_FALSE, 0, bytes, third.data(), 0, nullptr, read_again.out()) ==
          CL_SUCCESS);
  REQUIRE(clFlush(setup.queue) == CL_SUCCESS);
  REQUIRE(clEnqueueBarrierWithWaitList(other, 1, read_again.out(), nullptr) == CL_SUCCESS);
  probe.status("finish the other queue", clFinish(other));
  probe.value("data behind the other queue's barrier", arrived(third));

  // A command after a barrier waits for the read before it; its status says when it is complete.
  std::vector<cl_int> fourth(count);
  Event filled;
  const cl_int pattern = 0;
  Buffer scratch = create_buffer(setup.context, 64);
  REQUIRE(clEnqueueReadBuffer(setup.queue, buffer, CL_FALSE, 0, bytes, fourth.data(), 0, nullptr, nullptr) ==
          CL_SUCCESS);
  REQUIRE(clEnqueueBarrierWithWaitList(setup.queue, 0, nullptr, nullptr) == CL_SUCCESS);
  REQUIRE(clEnqueueFillBuffer(setup.queue, scratch, &pattern, sizeof pattern, 0, 64, 0, nullptr, filled.out()) ==
          CL_SUCCESS);
  REQUIRE(clFlush(setup.queue) == CL_SUCCESS);
  while (ask<cl_int>(clGetEventInfo, filled.get(), CL_EVENT_COMMAND_EXECUTION_STATUS).value > CL_COMPLETE)
    std::this_thread::yield();
  probe.value("data behind the barrier", arrived(fourth));
  REQUIRE(clFinish(setup.queue) == CL_SUCCESS);
}

// --- lifetimes --------------------------------------------------------------------------

DIFFERENTIAL_TEST(released_parents, "objects outlive the release of their context, queue and program",
                  "[context][event]") {
  Setup setup = make_setup(probe);
  const cl_context context = setup.context;
  const cl_command_queue queue = setup.queue;
  constexpr size_t count = 256;
  constexpr size_t bytes = count * sizeof(cl_int);
  Buffer buffer = create_buffer(context, bytes);
  Program program_owner = build_program(probe, context, kernel_source);
  const cl_program program = program_owner;
  Kernel add = create_kernel(program, "add");
  probe.status("release context", clReleaseContext(disown(setup.context)));

  probe.value("queue's context", ask<cl_context>(clGetCommandQueueInfo, queue, CL_QUEUE_CONTEXT).value == context);
  probe.value("buffer's context", ask<cl_context>(clGetMemObjectInfo, buffer.get(), CL_MEM_CONTEXT).value == context);
  probe.value("program's context", ask<cl_context>(clGetProgramInfo, program, CL_PROGRAM_CONTEXT).value == context);
  probe.value("kernel's context", ask<cl_context>(clGetKernelInfo, add.get(), CL_KERNEL_CONTEXT).value == context);
  probe.status("release program", clReleaseProgram(disown(program_owner)));
  probe.value("kernel's program", ask<cl_program>(clGetKernelInfo, add.get(), CL_KERNEL_PROGRAM).value == program);

  std::vector<cl_int> data(count, 1);
  probe.status("write", clEnqueueWriteBuffer(queue, buffer, CL_FALSE, 0, bytes, data.data(), 0, nullptr, nullptr));
  set_add_args(add, buffer, 41);
  const size_t global = count;
  probe.status("kernel", clEnqueueNDRangeKernel(queue, add, 1, nullptr, &global, nullptr, 0, nullptr, nullptr));
  Event last;
  probe.status("read", clEnqueueReadBuffer(queue, buffer, CL_FALSE, 0, bytes, data.data(), 0, nullptr, last.out()));
  probe.status("release queue", clReleaseCommandQueue(disown(setup.queue)));
  probe.status("wait", clWaitForEvents(1, last.out()));
  probe.record("data", checksum(data.data(), bytes));
  probe.value("event's queue",
              ask<cl_command_queue>(clGetEventInfo, last.get(), CL_EVENT_COMMAND_QUEUE).value == queue);
  probe.value("event's context", ask<cl_context>(clGetEventInfo, last.get(), CL_EVENT_CONTEXT).value == context);
  probe.value("event complete", ask<cl_int>(clGetEventInfo, last.get(), CL_EVENT_COMMAND_EXECUTION_STATUS).value);
}

// The pattern of the C++ bindings (and of libraries handed only a queue): a parent taken
// from a query is retained and used, after the application released its own reference.
DIFFERENTIAL_TEST(context_from_queue, "a released context is reachable through its queue", "[context][event]") {
  Setup setup = make_setup(probe);
  const cl_context context = setup.context;
  probe.status("release", clReleaseContext(disown(setup.context)));
  const auto found = ask<cl_context>(clGetCommandQueueInfo, setup.queue.get(), CL_QUEUE_CONTEXT);
  probe.value("found", found.value == context);
  if (probe.status("retain", clRetainContext(found.value)) != CL_SUCCESS) return;
  Context retained(found.value);
  probe.value("num devices", ask<cl_uint>(clGetContextInfo, retained.get(), CL_CONTEXT_NUM_DEVICES).value);
  cl_int status = CL_SUCCESS;
  Buffer buffer(clCreateBuffer(retained, CL_MEM_READ_WRITE, 64, nullptr, &status));
  probe.status("buffer on it", status);
}

DIFFERENTIAL_TEST(queue_from_event, "a released queue is reachable through its event", "[queue][event]") {
  Setup setup = make_setup(probe);
  const cl_command_queue queue = setup.queue;
  Event marked = marker(queue);
  REQUIRE(clFinish(queue) == CL_SUCCESS);
  probe.status("release", clReleaseCommandQueue(disown(setup.queue)));
  const auto found = ask<cl_command_queue>(clGetEventInfo, marked.get(), CL_EVENT_COMMAND_QUEUE);
  probe.value("found", found.value == queue);
  if (probe.status("retain", clRetainCommandQueue(found.value)) != CL_SUCCESS) return;
  Queue retained(found.value);
  probe.status("marker on it", clEnqueueMarkerWithWaitList(retained, 0, nullptr, nullptr));
  probe.status("finish it", clFinish(retained));
}

DIFFERENTIAL_TEST(program_from_kernel, "a released program is reachable through its kernel", "[context][event]") {
  Setup setup = make_setup(probe);
  Program program_owner = build_program(probe, setup.context, kernel_source);
  const cl_program program = program_owner;
  Kernel add = create_kernel(program, "add");
  probe.status("release", clReleaseProgram(disown(program_owner)));
  const auto found = ask<cl_program>(clGetKernelInfo, add.get(), CL_KERNEL_PROGRAM);
  probe.value("found", found.value == program);
  if (probe.status("retain", clRetainProgram(found.value)) != CL_SUCCESS) return;
  Program retained(found.value);
  probe.value("kernels in it", ask<size_t>(clGetProgramInfo, retained.get(), CL_PROGRAM_NUM_KERNELS).value);
}

// --- threads ----------------------------------------------------------------------------

namespace {

constexpr int thread_count = 4;
constexpr int rounds = 20;
constexpr size_t thread_items = 256;

// One application thread's work: write, add its amount, read back (each step waiting for
// the one before by its event), check; `queue` may be shared.
struct Worker {
  cl_int status = CL_SUCCESS;
  bool correct = true;
  std::vector<cl_int> last;

  void run(cl_context context, cl_command_queue queue, cl_program program, cl_int amount) {
    auto step = [&](cl_int result) {
      if (status == CL_SUCCESS) status = result;
      return result == CL_SUCCESS;
    };
    const size_t bytes = thread_items * sizeof(cl_int);
    const size_t global = thread_items;
    cl_int created = CL_SUCCESS;
    Kernel kernel(clCreateKernel(program, "add", &created));
    if (!step(created)) return;
    Buffer buffer(clCreateBuffer(context, CL_MEM_READ_WRITE, bytes, nullptr, &created));
    if (!step(created)) return;
    cl_mem mem = buffer;
    if (!step(clSetKernelArg(kernel, 0, sizeof mem, &mem)) || !step(clSetKernelArg(kernel, 1, sizeof amount, &amount)))
      return;
    std::vector<cl_int> data(thread_items);
    last.resize(thread_items);
    for (int round = 0; round < rounds; ++round) {
      std::iota(data.begin(), data.end(), round * 1000);
      Event written, added, read;
      if (!step(clEnqueueWriteBuffer(queue, buffer, CL_FALSE, 0, bytes, data.data(), 0, nullptr, written.out())) ||
          !step(clEnqueueNDRangeKernel(queue, kernel, 1, nullptr, &global, nullptr, 1, written.out(), added.out())) ||
          !step(clEnqueueReadBuffer(queue, buffer, CL_FALSE, 0, bytes, last.data(), 1, added.out(), read.out())) ||
          !step(clWaitForEvents(1, read.out())))
        return;
      for (size_t i = 0; i < thread_items; ++i) correct = correct && last[i] == data[i] + amount;
    }
  }
};

void record_workers(Probe& probe, const std::vector<Worker>& workers) {
  for (size_t i = 0; i < workers.size(); ++i) {
    const std::string what = "thread " + std::to_string(i);
    probe.status(what, workers[i].status);
    probe.value(what + " correct", workers[i].correct);
    probe.record(what + " data", checksum(workers[i].last.data(), workers[i].last.size() * sizeof(cl_int)));
  }
}

}  // namespace

DIFFERENTIAL_TEST(threads_own_queues, "threads with a queue each on one context", "[context][queue][event]") {
  Context context = create_context(probe);
  Program program = build_program(probe, context, kernel_source);
  cl_device_id device = probe.device();
  std::vector<Worker> workers(thread_count);
  std::vector<cl_int> queue_status(thread_count, CL_SUCCESS);
  {
    std::vector<std::jthread> threads;
    for (int i = 0; i < thread_count; ++i)
      threads.emplace_back([&, i] {
        Queue queue(clCreateCommandQueueWithProperties(context, device, nullptr, &queue_status[i]));
        if (queue_status[i] == CL_SUCCESS) workers[i].run(context, queue, program, i + 1);
        if (queue_status[i] == CL_SUCCESS) queue_status[i] = clFinish(queue);
      });
  }
  for (cl_int status : queue_status) probe.status("queue", status);
  record_workers(probe, workers);
}

DIFFERENTIAL_TEST(threads_shared_queue, "threads sharing one queue", "[queue][event]") {
  Setup setup = make_setup(probe);
  Program program = build_program(probe, setup.context, kernel_source);
  std::vector<Worker> workers(thread_count);
  {
    std::vector<std::jthread> threads;
    for (int i = 0; i < thread_count; ++i)
      threads.emplace_back([&, i] { workers[i].run(setup.context, setup.queue, program, 10 * (i + 1)); });
  }
  probe.status("finish", clFinish(setup.queue));
  record_workers(probe, workers);
}
