// The parser's answers against the native platform's (PoCL's) clGetKernelArgInfo for every
// source of the corpus, built with -cl-kernel-arg-info: address qualifier, access qualifier,
// type name, and the set of kernels.
#include <CL/cl.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "catch.hpp"
#include "corpus.hpp"
#include "kernels_parser.hpp"
#include "platform_named.hpp"

using namespace hivecl::kernels_parser;

namespace {

cl_platform_id native_platform() {
  const char* wanted = std::getenv("HIVECL_TEST_NATIVE_PLATFORM");
  const std::string name = wanted ? wanted : "Portable Computing Language";
  cl_platform_id platform = hivecl::test::platform_named(name);
  if (platform) return platform;
  FAIL("no platform named " << name);
  return nullptr;
}

std::string kernel_string(cl_kernel kernel, cl_uint index, cl_kernel_arg_info param) {
  size_t size = 0;
  REQUIRE(clGetKernelArgInfo(kernel, index, param, 0, nullptr, &size) == CL_SUCCESS);
  std::string text(size, '\0');
  REQUIRE(clGetKernelArgInfo(kernel, index, param, size, text.data(), nullptr) == CL_SUCCESS);
  return text.c_str();
}

template <class T>
T kernel_scalar(cl_kernel kernel, cl_uint index, cl_kernel_arg_info param) {
  T value{};
  REQUIRE(clGetKernelArgInfo(kernel, index, param, sizeof value, &value, nullptr) == CL_SUCCESS);
  return value;
}

cl_kernel_arg_address_qualifier address_of(ArgKind kind) {
  switch (kind) {
    case ArgKind::global_memory: return CL_KERNEL_ARG_ADDRESS_GLOBAL;
    case ArgKind::constant_memory: return CL_KERNEL_ARG_ADDRESS_CONSTANT;
    case ArgKind::local_memory: return CL_KERNEL_ARG_ADDRESS_LOCAL;
    case ArgKind::image:  // clang puts images and pipes in the global address space
    case ArgKind::pipe: return CL_KERNEL_ARG_ADDRESS_GLOBAL;
    default: return CL_KERNEL_ARG_ADDRESS_PRIVATE;
  }
}

cl_kernel_arg_access_qualifier access_of(Access access) {
  switch (access) {
    case Access::read_only: return CL_KERNEL_ARG_ACCESS_READ_ONLY;
    case Access::write_only: return CL_KERNEL_ARG_ACCESS_WRITE_ONLY;
    case Access::read_write: return CL_KERNEL_ARG_ACCESS_READ_WRITE;
    default: return CL_KERNEL_ARG_ACCESS_NONE;
  }
}

}  // namespace

TEST_CASE("the parser agrees with the device's clGetKernelArgInfo on the corpus", "[kernels-parser][device]") {
  cl_platform_id platform = native_platform();
  cl_device_id device = nullptr;
  REQUIRE(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr) == CL_SUCCESS);
  cl_int status = CL_SUCCESS;
  cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &status);
  REQUIRE(status == CL_SUCCESS);
  for (const corpus::Source& source : corpus::sources()) {
    INFO(source.name);
    const Program parsed = parse(source.text, source.options);
    REQUIRE(parsed.certain);
    const char* text = source.text.c_str();
    cl_program program = clCreateProgramWithSource(context, 1, &text, nullptr, &status);
    REQUIRE(status == CL_SUCCESS);
    const std::string options = source.options + " -cl-kernel-arg-info";
    REQUIRE(clBuildProgram(program, 1, &device, options.c_str(), nullptr, nullptr) == CL_SUCCESS);
    cl_uint kernel_count = 0;
    REQUIRE(clCreateKernelsInProgram(program, 0, nullptr, &kernel_count) == CL_SUCCESS);
    CHECK(kernel_count == parsed.kernels.size());
    for (const Kernel& expected : parsed.kernels) {
      INFO(expected.name);
      cl_kernel kernel = clCreateKernel(program, expected.name.c_str(), &status);
      REQUIRE(status == CL_SUCCESS);
      cl_uint count = 0;
      REQUIRE(clGetKernelInfo(kernel, CL_KERNEL_NUM_ARGS, sizeof count, &count, nullptr) == CL_SUCCESS);
      REQUIRE(count == expected.arguments.size());
      for (cl_uint i = 0; i < count; ++i) {
        const Argument& argument = expected.arguments[i];
        INFO("argument " << i << " " << argument.name);
        CHECK(kernel_scalar<cl_kernel_arg_address_qualifier>(kernel, i, CL_KERNEL_ARG_ADDRESS_QUALIFIER) ==
              address_of(argument.kind));
        CHECK(kernel_scalar<cl_kernel_arg_access_qualifier>(kernel, i, CL_KERNEL_ARG_ACCESS_QUALIFIER) ==
              access_of(argument.access));
        CHECK(kernel_string(kernel, i, CL_KERNEL_ARG_TYPE_NAME) == argument.type_name);
        CHECK(kernel_string(kernel, i, CL_KERNEL_ARG_NAME) == argument.name);
      }
      clReleaseKernel(kernel);
    }
    clReleaseProgram(program);
  }
  clReleaseContext(context);
}
