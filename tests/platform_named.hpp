// The platform of a given name among those the loader lists, or nullptr: shared by test and
// benchmark programs that pick the native platform or HiveCL by name.
#pragma once

#include <CL/cl.h>

#include <string>
#include <vector>

namespace hivecl::test {

inline cl_platform_id platform_named(const std::string& wanted) {
  cl_uint count = 0;
  clGetPlatformIDs(0, nullptr, &count);
  std::vector<cl_platform_id> platforms(count);
  clGetPlatformIDs(count, platforms.data(), nullptr);
  for (cl_platform_id platform : platforms) {
    char name[256] = {};
    clGetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof name, name, nullptr);
    if (wanted == name) return platform;
  }
  return nullptr;
}

}  // namespace hivecl::test
