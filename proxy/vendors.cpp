#include "proxy/vendors.hpp"

#include <CL/cl_icd.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "log.hpp"

namespace hivecl::proxy {

namespace {

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> items;
  std::istringstream list(text);
  std::string item;
  while (std::getline(list, item, separator))
    if (!item.empty()) items.push_back(item);
  return items;
}

// The libraries named by the .icd files of a vendors directory (or by one .icd file).
std::vector<std::string> registered_libraries(const std::filesystem::path& vendors) {
  std::error_code error;
  std::vector<std::filesystem::path> files;
  if (std::filesystem::is_directory(vendors, error)) {
    for (const auto& entry : std::filesystem::directory_iterator(vendors, error))
      if (entry.path().extension() == ".icd") files.push_back(entry.path());
  } else if (vendors.extension() == ".icd") {
    files.push_back(vendors);
  }
  std::sort(files.begin(), files.end());
  std::vector<std::string> libraries;
  for (const auto& file : files) {
    std::ifstream in(file);
    std::string line;
    if (std::getline(in, line) && !line.empty()) libraries.push_back(line);
  }
  return libraries;
}

const cl_icd_dispatch& dispatch_of(const void* object) { return **static_cast<const cl_icd_dispatch* const*>(object); }

using IcdGetPlatformIDs = cl_int (*)(cl_uint, cl_platform_id*, cl_uint*);

// The library's clIcdGetPlatformIDsKHR, as the loaders find it.
IcdGetPlatformIDs icd_entry(void* library) {
  if (void* entry = ::dlsym(library, "clIcdGetPlatformIDsKHR")) return reinterpret_cast<IcdGetPlatformIDs>(entry);
  using GetAddress = void* (*)(const char*);
  auto get_address = reinterpret_cast<GetAddress>(::dlsym(library, "clGetExtensionFunctionAddress"));
  return get_address ? reinterpret_cast<IcdGetPlatformIDs>(get_address("clIcdGetPlatformIDsKHR")) : nullptr;
}

std::vector<cl_platform_id> library_platforms(const std::string& name, const void* own_icd_entry) {
  // Kept open for the life of the process, as the loaders do.
  void* library = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    log::debug("in-process devices: cannot open ", name, ": ", ::dlerror());
    return {};
  }
  const IcdGetPlatformIDs entry = icd_entry(library);
  if (!entry || reinterpret_cast<const void*>(entry) == own_icd_entry) return {};
  cl_uint count = 0;
  if (entry(0, nullptr, &count) != CL_SUCCESS || count == 0) return {};
  std::vector<cl_platform_id> platforms(count);
  if (entry(count, platforms.data(), nullptr) != CL_SUCCESS) return {};
  return platforms;
}

}  // namespace

std::vector<std::string> vendor_libraries(const Config& config) {
  if (!config.local_libraries.empty()) return split(config.local_libraries, ':');
  std::vector<std::string> libraries;
  if (const char* filenames = std::getenv("OCL_ICD_FILENAMES")) libraries = split(filenames, ':');
  const char* vendors = std::getenv("OCL_ICD_VENDORS");
  for (auto& library : registered_libraries(vendors && *vendors ? vendors : "/etc/OpenCL/vendors"))
    if (std::find(libraries.begin(), libraries.end(), library) == libraries.end()) libraries.push_back(library);
  return libraries;
}

std::vector<NativeDevice> find_vendor_devices(const Config& config, const void* own_icd_entry) {
  std::vector<NativeDevice> found;
  std::vector<cl_platform_id> seen;  // a library named twice (by two paths) opens once
  for (const auto& library : vendor_libraries(config)) {
    for (cl_platform_id platform : library_platforms(library, own_icd_entry)) {
      const std::string name = platform_string(platform, CL_PLATFORM_NAME);
      if (name == "HiveCL" || std::find(seen.begin(), seen.end(), platform) != seen.end()) continue;
      seen.push_back(platform);
      const auto& dispatch = dispatch_of(platform);
      cl_uint count = 0;
      if (dispatch.clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, nullptr, &count) != CL_SUCCESS) continue;
      std::vector<cl_device_id> devices(count);
      dispatch.clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, count, devices.data(), nullptr);
      for (cl_device_id device : devices) found.push_back({platform, device, name, platform_string(platform, CL_PLATFORM_VERSION)});
      log::debug("in-process devices: ", count, " of ", name, " (", library, ")");
    }
  }
  return found;
}

std::string platform_string(cl_platform_id platform, cl_platform_info param) {
  size_t size = 0;
  const auto& dispatch = dispatch_of(platform);
  if (dispatch.clGetPlatformInfo(platform, param, 0, nullptr, &size) != CL_SUCCESS || size == 0) return {};
  std::string text(size, '\0');
  dispatch.clGetPlatformInfo(platform, param, size, text.data(), nullptr);
  text.resize(text.find('\0'));
  return text;
}

std::string platform_name_of(cl_device_id device) {
  cl_platform_id platform = nullptr;
  if (clGetDeviceInfo(device, CL_DEVICE_PLATFORM, sizeof platform, &platform, nullptr) != CL_SUCCESS) return {};
  return platform_string(platform, CL_PLATFORM_NAME);
}

cl_context create_native_context(cl_platform_id platform, const cl_context_properties* properties,
                                 cl_uint device_count, const cl_device_id* devices, cl_int* status) {
  return dispatch_of(platform).clCreateContext(properties, device_count, devices, nullptr, nullptr, status);
}

}  // namespace hivecl::proxy
