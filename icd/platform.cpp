// Platform family on the client side: the one HiveCL platform, the ICD entry points.
#include <CL/cl.h>
#include <CL/cl_ext.h>
#include <CL/cl_hivecl.h>

#include <cstring>
#include <string>

#include "hivecl_build_config.hpp"
#include "icd/api.hpp"
#include "icd/connection.hpp"

using namespace hivecl;
using namespace hivecl::icd;

namespace {

const std::string platform_version = std::string("OpenCL 3.0 HiveCL ") + HIVECL_VERSION;
constexpr const char* platform_extensions = "cl_khr_icd";

cl_int get_platforms(cl_uint num_entries, cl_platform_id* platforms, cl_uint* num_platforms) {
  if ((num_entries == 0 && platforms) || (!platforms && !num_platforms)) return CL_INVALID_VALUE;
  Cluster& cluster = Cluster::get();
  const cl_uint available = cluster.serving() ? 1 : 0;
  if (num_platforms) *num_platforms = available;
  if (platforms && available) platforms[0] = cluster.platform();
  // cl_khr_icd: an ICD without platforms says so, and the loader skips it.
  return available ? CL_SUCCESS : CL_PLATFORM_NOT_FOUND_KHR;
}

}  // namespace

CL_API_ENTRY cl_int CL_API_CALL clIcdGetPlatformIDsKHR(cl_uint num_entries, cl_platform_id* platforms,
                                                      cl_uint* num_platforms) {
  return guarded([&] { check(get_platforms(num_entries, platforms, num_platforms)); });
}

CL_API_ENTRY cl_int CL_API_CALL clGetPlatformIDs(cl_uint num_entries, cl_platform_id* platforms,
                                                 cl_uint* num_platforms) {
  return guarded([&] { check(get_platforms(num_entries, platforms, num_platforms)); });
}

CL_API_ENTRY cl_int CL_API_CALL clGetPlatformInfo(cl_platform_id platform, cl_platform_info param_name,
                                                  size_t param_value_size, void* param_value,
                                                  size_t* param_value_size_ret) {
  return guarded([&] {
    if (platform) checked(platform);
    InfoReply reply(param_value_size, param_value, param_value_size_ret);
    switch (param_name) {
      case CL_PLATFORM_PROFILE: return reply.string("FULL_PROFILE");
      case CL_PLATFORM_VERSION: return reply.string(platform_version);
      case CL_PLATFORM_NUMERIC_VERSION: return reply.scalar(cl_version{CL_MAKE_VERSION(3, 0, 0)});
      case CL_PLATFORM_NAME: return reply.string("HiveCL");
      case CL_PLATFORM_VENDOR: return reply.string("HiveCL");
      case CL_PLATFORM_EXTENSIONS: return reply.string(platform_extensions);
      case CL_PLATFORM_EXTENSIONS_WITH_VERSION: {
        cl_name_version icd{CL_MAKE_VERSION(1, 0, 0), "cl_khr_icd"};
        return reply.scalar(icd);
      }
      case CL_PLATFORM_HOST_TIMER_RESOLUTION: return reply.scalar(cl_ulong{0});
      case CL_PLATFORM_ICD_SUFFIX_KHR: return reply.string("HiveCL");
      case CL_PLATFORM_MESSAGES_SENT_HIVECL: return reply.scalar(cl_ulong{Cluster::get().requests_sent()});
      default: throw ClError{CL_INVALID_VALUE};
    }
  });
}

CL_API_ENTRY void* CL_API_CALL clGetExtensionFunctionAddressForPlatform(cl_platform_id, const char* func_name) {
  // The loaders ask for the first by name; the second is cl_khr_subgroups' (devices that have
  // sub-groups offer it).
  if (!func_name) return nullptr;
  if (std::strcmp(func_name, "clIcdGetPlatformIDsKHR") == 0) return reinterpret_cast<void*>(&clIcdGetPlatformIDsKHR);
  if (std::strcmp(func_name, "clGetKernelSubGroupInfoKHR") == 0)
    return reinterpret_cast<void*>(&clGetKernelSubGroupInfoKHR);
  return nullptr;
}

CL_API_ENTRY void* CL_API_CALL clGetExtensionFunctionAddress(const char* func_name) {
  return clGetExtensionFunctionAddressForPlatform(nullptr, func_name);
}

CL_API_ENTRY cl_int CL_API_CALL clUnloadPlatformCompiler(cl_platform_id platform) {
  return guarded([&] { checked(platform); });
}

CL_API_ENTRY cl_int CL_API_CALL clUnloadCompiler(void) { return CL_SUCCESS; }

CL_API_ENTRY cl_int CL_API_CALL clGetHostTimer(cl_device_id device, cl_ulong*) {
  return guarded([&] {
    checked(device);
    throw ClError{CL_INVALID_OPERATION};  // CL_PLATFORM_HOST_TIMER_RESOLUTION is 0
  });
}
