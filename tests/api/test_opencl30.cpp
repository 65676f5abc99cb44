// What HiveCL reports of OpenCL 3.0 and of optional features agrees with itself and with
// what its entry points do: numeric versions, feature macros, extensions with versions,
// capabilities, native kernels, extension functions.
#include <CL/cl_ext.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "differential.hpp"

using namespace hivecl::test;

namespace {

template <class T>
std::vector<T> device_list(cl_device_id device, cl_device_info param) {
  size_t size = 0;
  REQUIRE(clGetDeviceInfo(device, param, 0, nullptr, &size) == CL_SUCCESS);
  std::vector<T> values(size / sizeof(T));
  if (size) REQUIRE(clGetDeviceInfo(device, param, size, values.data(), nullptr) == CL_SUCCESS);
  return values;
}

template <class T>
T device_value(cl_device_id device, cl_device_info param) {
  T value{};
  REQUIRE(clGetDeviceInfo(device, param, sizeof value, &value, nullptr) == CL_SUCCESS);
  return value;
}

std::string device_text(cl_device_id device, cl_device_info param) {
  const auto chars = device_list<char>(device, param);
  return std::string(chars.data(), strnlen(chars.data(), chars.size()));
}

std::set<std::string> names(const std::vector<cl_name_version>& list) {
  std::set<std::string> result;
  for (const auto& entry : list) result.insert(entry.name);
  return result;
}

std::set<std::string> words(const std::string& text) {
  std::istringstream stream(text);
  std::set<std::string> result;
  for (std::string word; stream >> word;) result.insert(word);
  return result;
}

}  // namespace

HIVECL_TEST(opencl30_versions, "numeric versions agree with the version strings", "[opencl30]") {
  cl_device_id device = probe.device();
  const cl_version numeric = device_value<cl_version>(device, CL_DEVICE_NUMERIC_VERSION);
  const std::string version = device_text(device, CL_DEVICE_VERSION);  // "OpenCL <major>.<minor> ..."
  CHECK(version.rfind("OpenCL " + std::to_string(CL_VERSION_MAJOR(numeric)) + "." +
                          std::to_string(CL_VERSION_MINOR(numeric)),
                      0) == 0);
  cl_version platform_numeric = 0;
  REQUIRE(clGetPlatformInfo(probe.platform(), CL_PLATFORM_NUMERIC_VERSION, sizeof platform_numeric, &platform_numeric,
                            nullptr) == CL_SUCCESS);
  CHECK(CL_VERSION_MAJOR(platform_numeric) == 3);
  // Every OpenCL C version the device accepts is listed, the one it names among them.
  const auto c_versions = device_list<cl_name_version>(device, CL_DEVICE_OPENCL_C_ALL_VERSIONS);
  CHECK_FALSE(c_versions.empty());
  const std::string c_version = device_text(device, CL_DEVICE_OPENCL_C_VERSION);  // "OpenCL C <major>.<minor> ..."
  const bool named = std::any_of(c_versions.begin(), c_versions.end(), [&](const cl_name_version& entry) {
    return c_version.rfind("OpenCL C " + std::to_string(CL_VERSION_MAJOR(entry.version)) + "." +
                               std::to_string(CL_VERSION_MINOR(entry.version)),
                           0) == 0;
  });
  CHECK(named);
}

HIVECL_TEST(opencl30_extensions, "extension lists agree, and their functions are found", "[opencl30]") {
  cl_device_id device = probe.device();
  CHECK(names(device_list<cl_name_version>(device, CL_DEVICE_EXTENSIONS_WITH_VERSION)) ==
        words(device_text(device, CL_DEVICE_EXTENSIONS)));
  size_t size = 0;
  REQUIRE(clGetPlatformInfo(probe.platform(), CL_PLATFORM_EXTENSIONS_WITH_VERSION, 0, nullptr, &size) == CL_SUCCESS);
  std::vector<cl_name_version> platform_list(size / sizeof(cl_name_version));
  REQUIRE(clGetPlatformInfo(probe.platform(), CL_PLATFORM_EXTENSIONS_WITH_VERSION, size, platform_list.data(),
                            nullptr) == CL_SUCCESS);
  char platform_extensions[256] = {};
  REQUIRE(clGetPlatformInfo(probe.platform(), CL_PLATFORM_EXTENSIONS, sizeof platform_extensions,
                            platform_extensions, nullptr) == CL_SUCCESS);
  CHECK(names(platform_list) == words(platform_extensions));
  // cl_khr_icd's one function and cl_khr_subgroups' (offered where a device has sub-groups);
  // names of nothing HiveCL offers give NULL.
  CHECK(clGetExtensionFunctionAddressForPlatform(probe.platform(), "clIcdGetPlatformIDsKHR") != nullptr);
  const auto sub_group_info = reinterpret_cast<clGetKernelSubGroupInfoKHR_fn>(
      clGetExtensionFunctionAddressForPlatform(probe.platform(), "clGetKernelSubGroupInfoKHR"));
  REQUIRE(sub_group_info != nullptr);
  CHECK(sub_group_info(nullptr, device, CL_KERNEL_MAX_NUM_SUB_GROUPS, 0, nullptr, 0, nullptr, &size) ==
        CL_INVALID_KERNEL);
  CHECK(clGetExtensionFunctionAddressForPlatform(probe.platform(), "clCreateCommandBufferKHR") == nullptr);
  CHECK(clGetExtensionFunctionAddressForPlatform(probe.platform(), "clNoSuchFunction") == nullptr);
  CHECK(clGetExtensionFunctionAddressForPlatform(probe.platform(), nullptr) == nullptr);
}

HIVECL_TEST(opencl30_features, "optional features are reported as the entry points behave", "[opencl30]") {
  cl_device_id device = probe.device();
  const auto features = names(device_list<cl_name_version>(device, CL_DEVICE_OPENCL_C_FEATURES));
  const bool images = device_value<cl_bool>(device, CL_DEVICE_IMAGE_SUPPORT);
  CHECK(features.contains("__opencl_c_images") == bool(images));
  CHECK(features.contains("__opencl_c_pipes") == bool(device_value<cl_bool>(device, CL_DEVICE_PIPE_SUPPORT)));
  const auto enqueue = device_value<cl_device_device_enqueue_capabilities>(device, CL_DEVICE_DEVICE_ENQUEUE_CAPABILITIES);
  CHECK(features.contains("__opencl_c_device_enqueue") == (enqueue != 0));
  const auto svm = device_value<cl_device_svm_capabilities>(device, CL_DEVICE_SVM_CAPABILITIES);
  CHECK((svm & ~cl_device_svm_capabilities{CL_DEVICE_SVM_COARSE_GRAIN_BUFFER}) == 0);  // coarse-grained buffers alone
  CHECK(features.contains("__opencl_c_generic_address_space") ==
        bool(device_value<cl_bool>(device, CL_DEVICE_GENERIC_ADDRESS_SPACE_SUPPORT)));
  const auto atomics = device_value<cl_device_atomic_capabilities>(device, CL_DEVICE_ATOMIC_MEMORY_CAPABILITIES);
  CHECK((atomics & CL_DEVICE_ATOMIC_ORDER_RELAXED) != 0);  // the minimum OpenCL 3.0 asks for
  CHECK(features.contains("__opencl_c_atomic_order_seq_cst") == ((atomics & CL_DEVICE_ATOMIC_ORDER_SEQ_CST) != 0));
  CHECK(features.contains("__opencl_c_atomic_scope_device") == ((atomics & CL_DEVICE_ATOMIC_SCOPE_DEVICE) != 0));
  const auto sub_groups = device_value<cl_uint>(device, CL_DEVICE_MAX_NUM_SUB_GROUPS);
  CHECK(features.contains("__opencl_c_subgroups") == (sub_groups > 0));
}

HIVECL_TEST(native_kernels, "native kernels are not reported and not run", "[opencl30]") {
  cl_device_id device = probe.device();
  const auto capabilities = device_value<cl_device_exec_capabilities>(device, CL_DEVICE_EXECUTION_CAPABILITIES);
  CHECK((capabilities & CL_EXEC_KERNEL) != 0);
  CHECK((capabilities & CL_EXEC_NATIVE_KERNEL) == 0);
  auto setup = make_setup(probe);
  int argument = 0;
  CHECK(clEnqueueNativeKernel(
            setup.queue, [](void*) {}, &argument, sizeof argument, 0, nullptr, nullptr, 0, nullptr, nullptr) ==
        CL_INVALID_OPERATION);
}

HIVECL_TEST(absent_features_refused, "what is reported absent is refused as the CTS's consistency tests expect",
            "[opencl30]") {
  cl_device_id device = probe.device();
  auto setup = make_setup(probe);
  CHECK(device_value<cl_device_device_enqueue_capabilities>(device, CL_DEVICE_DEVICE_ENQUEUE_CAPABILITIES) == 0);
  CHECK(clSetDefaultDeviceCommandQueue(setup.context, device, nullptr) == CL_INVALID_OPERATION);
  // No 2D images from buffers: both alignments read 0, and clCreateImage refuses one.
  CHECK(device_value<cl_uint>(device, CL_DEVICE_IMAGE_PITCH_ALIGNMENT) == 0);
  CHECK(device_value<cl_uint>(device, CL_DEVICE_IMAGE_BASE_ADDRESS_ALIGNMENT) == 0);
  cl_int status = CL_SUCCESS;
  Buffer buffer(clCreateBuffer(setup.context, CL_MEM_READ_WRITE, 64 * 64 * 4, nullptr, &status));
  REQUIRE(status == CL_SUCCESS);
  const cl_image_format format{CL_RGBA, CL_UNSIGNED_INT8};
  cl_image_desc desc{};
  desc.image_type = CL_MEM_OBJECT_IMAGE2D;
  desc.image_width = 64;
  desc.image_height = 64;
  desc.buffer = buffer.get();
  CHECK(clCreateImage(setup.context, CL_MEM_READ_ONLY, &format, &desc, nullptr, &status) == nullptr);
  CHECK(status == CL_INVALID_OPERATION);
}
