#include "differential.hpp"

#include <CL/cl_hivecl.h>

#include <cstdlib>
#include <iomanip>
#include <map>

namespace hivecl::test {

namespace {

std::string platform_name(cl_platform_id platform) {
  char name[256] = {};
  clGetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof name, name, nullptr);
  return name;
}

Target find_target(const std::string& wanted, const std::string& label, bool hivecl) {
  cl_uint count = 0;
  clGetPlatformIDs(0, nullptr, &count);
  std::vector<cl_platform_id> platforms(count);
  if (count) clGetPlatformIDs(count, platforms.data(), nullptr);
  for (cl_platform_id platform : platforms) {
    if (platform_name(platform) != wanted) continue;
    Target target{label, platform, nullptr, hivecl};
    if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &target.device, nullptr) == CL_SUCCESS) return target;
  }
  FAIL("no platform named '" << wanted << "' with a device (is the HiveCL cluster running? see tests/with-cluster.sh)");
  return {};
}

const Target& native_target() {
  static const Target target = [] {
    const char* name = std::getenv("HIVECL_TEST_NATIVE_PLATFORM");
    return find_target(name ? name : "Portable Computing Language", "native", false);
  }();
  return target;
}

const Target& hivecl_target() {
  static const Target target = find_target("HiveCL", "HiveCL", true);
  return target;
}

std::vector<std::pair<std::string, std::string>> run_on(const Target& target,
                                                        const std::function<void(Probe&)>& body) {
  Probe probe(target);
  INFO("running on " << target.name);
  body(probe);
  return probe.trace();
}

}  // namespace

cl_int Probe::status(const std::string& what, cl_int code) {
  record(what, status_name(code));
  return code;
}

void run_differential(const std::function<void(Probe&)>& body) {
  const auto native = run_on(native_target(), body);
  const auto hivecl = run_on(hivecl_target(), body);
  for (size_t i = 0; i < std::min(native.size(), hivecl.size()); ++i) {
    INFO("observation " << i << ": " << native[i].first);
    CHECK(hivecl[i].first == native[i].first);
    CHECK(hivecl[i].second == native[i].second);
  }
  CHECK(hivecl.size() == native.size());
}

void run_hivecl(const std::function<void(Probe&)>& body) { run_on(hivecl_target(), body); }

bool hivecl_in_process() {
  char path[32] = {};
  clGetDeviceInfo(hivecl_target().device, CL_DEVICE_DATA_PATH_HIVECL, sizeof path, path, nullptr);
  return std::string(path) == "in-process";
}

std::string status_name(cl_int status) {
  static const std::map<cl_int, const char*> names{
      {CL_SUCCESS, "CL_SUCCESS"},
      {CL_DEVICE_NOT_FOUND, "CL_DEVICE_NOT_FOUND"},
      {CL_DEVICE_NOT_AVAILABLE, "CL_DEVICE_NOT_AVAILABLE"},
      {CL_COMPILER_NOT_AVAILABLE, "CL_COMPILER_NOT_AVAILABLE"},
      {CL_MEM_OBJECT_ALLOCATION_FAILURE, "CL_MEM_OBJECT_ALLOCATION_FAILURE"},
      {CL_OUT_OF_RESOURCES, "CL_OUT_OF_RESOURCES"},
      {CL_OUT_OF_HOST_MEMORY, "CL_OUT_OF_HOST_MEMORY"},
      {CL_PROFILING_INFO_NOT_AVAILABLE, "CL_PROFILING_INFO_NOT_AVAILABLE"},
      {CL_MEM_COPY_OVERLAP, "CL_MEM_COPY_OVERLAP"},
      {CL_BUILD_PROGRAM_FAILURE, "CL_BUILD_PROGRAM_FAILURE"},
      {CL_MAP_FAILURE, "CL_MAP_FAILURE"},
      {CL_MISALIGNED_SUB_BUFFER_OFFSET, "CL_MISALIGNED_SUB_BUFFER_OFFSET"},
      {CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST, "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST"},
      {CL_INVALID_VALUE, "CL_INVALID_VALUE"},
      {CL_INVALID_DEVICE_TYPE, "CL_INVALID_DEVICE_TYPE"},
      {CL_INVALID_PLATFORM, "CL_INVALID_PLATFORM"},
      {CL_INVALID_DEVICE, "CL_INVALID_DEVICE"},
      {CL_INVALID_CONTEXT, "CL_INVALID_CONTEXT"},
      {CL_INVALID_QUEUE_PROPERTIES, "CL_INVALID_QUEUE_PROPERTIES"},
      {CL_INVALID_COMMAND_QUEUE, "CL_INVALID_COMMAND_QUEUE"},
      {CL_INVALID_HOST_PTR, "CL_INVALID_HOST_PTR"},
      {CL_INVALID_MEM_OBJECT, "CL_INVALID_MEM_OBJECT"},
      {CL_INVALID_BINARY, "CL_INVALID_BINARY"},
      {CL_INVALID_BUILD_OPTIONS, "CL_INVALID_BUILD_OPTIONS"},
      {CL_INVALID_PROGRAM, "CL_INVALID_PROGRAM"},
      {CL_INVALID_PROGRAM_EXECUTABLE, "CL_INVALID_PROGRAM_EXECUTABLE"},
      {CL_INVALID_KERNEL_NAME, "CL_INVALID_KERNEL_NAME"},
      {CL_INVALID_KERNEL_DEFINITION, "CL_INVALID_KERNEL_DEFINITION"},
      {CL_INVALID_KERNEL, "CL_INVALID_KERNEL"},
      {CL_INVALID_ARG_INDEX, "CL_INVALID_ARG_INDEX"},
      {CL_INVALID_ARG_VALUE, "CL_INVALID_ARG_VALUE"},
      {CL_INVALID_ARG_SIZE, "CL_INVALID_ARG_SIZE"},
      {CL_INVALID_KERNEL_ARGS, "CL_INVALID_KERNEL_ARGS"},
      {CL_INVALID_WORK_DIMENSION, "CL_INVALID_WORK_DIMENSION"},
      {CL_INVALID_WORK_GROUP_SIZE, "CL_INVALID_WORK_GROUP_SIZE"},
      {CL_INVALID_WORK_ITEM_SIZE, "CL_INVALID_WORK_ITEM_SIZE"},
      {CL_INVALID_GLOBAL_OFFSET, "CL_INVALID_GLOBAL_OFFSET"},
      {CL_INVALID_EVENT_WAIT_LIST, "CL_INVALID_EVENT_WAIT_LIST"},
      {CL_INVALID_EVENT, "CL_INVALID_EVENT"},
      {CL_INVALID_OPERATION, "CL_INVALID_OPERATION"},
      {CL_INVALID_BUFFER_SIZE, "CL_INVALID_BUFFER_SIZE"},
      {CL_INVALID_GLOBAL_WORK_SIZE, "CL_INVALID_GLOBAL_WORK_SIZE"},
      {CL_INVALID_PROPERTY, "CL_INVALID_PROPERTY"},
      {CL_INVALID_COMPILER_OPTIONS, "CL_INVALID_COMPILER_OPTIONS"},
      {CL_INVALID_LINKER_OPTIONS, "CL_INVALID_LINKER_OPTIONS"},
      {CL_INVALID_DEVICE_PARTITION_COUNT, "CL_INVALID_DEVICE_PARTITION_COUNT"},
      {CL_INVALID_SAMPLER, "CL_INVALID_SAMPLER"},
      {CL_INVALID_IMAGE_SIZE, "CL_INVALID_IMAGE_SIZE"},
      {CL_INVALID_IMAGE_FORMAT_DESCRIPTOR, "CL_INVALID_IMAGE_FORMAT_DESCRIPTOR"},
      {CL_INVALID_IMAGE_DESCRIPTOR, "CL_INVALID_IMAGE_DESCRIPTOR"},
      {CL_IMAGE_FORMAT_MISMATCH, "CL_IMAGE_FORMAT_MISMATCH"},
      {CL_IMAGE_FORMAT_NOT_SUPPORTED, "CL_IMAGE_FORMAT_NOT_SUPPORTED"},
  };
  const auto it = names.find(status);
  return it != names.end() ? it->second : "status " + std::to_string(status);
}

Setup make_setup(Probe& probe, cl_command_queue_properties properties) {
  Setup setup;
  cl_int status = CL_SUCCESS;
  cl_device_id device = probe.device();
  setup.context = Context(clCreateContext(nullptr, 1, &device, nullptr, nullptr, &status));
  REQUIRE(status == CL_SUCCESS);
  const cl_queue_properties list[] = {CL_QUEUE_PROPERTIES, properties, 0};
  setup.queue = Queue(clCreateCommandQueueWithProperties(setup.context, device, list, &status));
  REQUIRE(status == CL_SUCCESS);
  return setup;
}

Program build_program(Probe& probe, cl_context context, const char* source, const char* options) {
  cl_int status = CL_SUCCESS;
  Program program(clCreateProgramWithSource(context, 1, &source, nullptr, &status));
  REQUIRE(status == CL_SUCCESS);
  cl_device_id device = probe.device();
  status = clBuildProgram(program, 1, &device, options, nullptr, nullptr);
  if (status != CL_SUCCESS) {
    size_t size = 0;
    clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
    std::string log(size, '\0');
    clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
    FAIL("build failed (" << status_name(status) << "): " << log);
  }
  return program;
}

std::string checksum(const void* data, size_t size) {
  // FNV-1a: enough to tell two byte strings apart in a trace.
  uint64_t hash = 1469598103934665603ull;
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) hash = (hash ^ bytes[i]) * 1099511628211ull;
  std::ostringstream text;
  text << size << " bytes, fnv " << std::hex << std::setw(16) << std::setfill('0') << hash;
  return text.str();
}

cl_int execution_status(cl_event event) {
  cl_int status = CL_QUEUED;
  REQUIRE(clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr) == CL_SUCCESS);
  return status;
}

}  // namespace hivecl::test
