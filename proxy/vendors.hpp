// The node's vendor ICD libraries, opened by HiveCL itself for the devices it serves
// in-process (transport/in_process.hpp). The OpenCL loader is never asked: libhivecl runs
// inside the loader's own start-up (clIcdGetPlatformIDsKHR), so platforms come from each
// library's clIcdGetPlatformIDsKHR and are queried through their dispatch tables.
#pragma once

#include <CL/cl.h>

#include <string>
#include <vector>

#include "config.hpp"
#include "proxy/server.hpp"

namespace hivecl::proxy {

// The libraries to open, in order: the local_libraries setting, or else those of
// OCL_ICD_FILENAMES then the .icd files of OCL_ICD_VENDORS (or /etc/OpenCL/vendors), sorted.
std::vector<std::string> vendor_libraries(const Config& config);

// Every device of those libraries' platforms, in that order, except HiveCL's: a library
// whose clIcdGetPlatformIDsKHR is `own_icd_entry`, or a platform named "HiveCL".
std::vector<NativeDevice> find_vendor_devices(const Config& config, const void* own_icd_entry);

// A text of clGetPlatformInfo (CL_PLATFORM_NAME, ...), asked through the platform's own dispatch
// table (as below).
std::string platform_string(cl_platform_id platform, cl_platform_info param);
// The name of `device`'s platform; empty if the runtime does not tell it.
std::string platform_name_of(cl_device_id device);

// clCreateContext through the platform's own dispatch table rather than the OpenCL loader's
// entry point: in-process the loader need not list the platform's library (local_libraries may
// name one it does not), and ocl-icd answers a CL_CONTEXT_PLATFORM it does not know with
// CL_INVALID_PLATFORM. The proxy's loader would only have passed the call on.
cl_context create_native_context(cl_platform_id platform, const cl_context_properties* properties,
                                 cl_uint device_count, const cl_device_id* devices, cl_int* status);

}  // namespace hivecl::proxy
