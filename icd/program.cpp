// Program family on the client side.
#include <CL/cl.h>

#include <algorithm>
#include <cstring>

#include "icd/api.hpp"
#include "kernels_parser.hpp"

using namespace hivecl;
using namespace hivecl::icd;
using namespace hivecl::protocol;

namespace {

// The devices a build applies to: a subset of the program's, or all of them.
std::vector<ObjectId> build_devices(const _cl_program* program, cl_uint num_devices, const cl_device_id* device_list) {
  if ((num_devices == 0) != (device_list == nullptr)) throw ClError{CL_INVALID_VALUE};
  std::vector<ObjectId> ids;
  for (cl_uint i = 0; i < num_devices; ++i) {
    checked(device_list[i]);
    if (std::find(program->devices.begin(), program->devices.end(), device_list[i]) == program->devices.end())
      throw ClError{CL_INVALID_DEVICE};
    ids.push_back(device_list[i]->id);
  }
  return ids;
}

void get_binaries(const _cl_program* program, size_t param_value_size, void* param_value,
                  size_t* param_value_size_ret) {
  const size_t needed = program->devices.size() * sizeof(unsigned char*);
  if (param_value_size_ret) *param_value_size_ret = needed;
  if (!param_value) return;
  if (param_value_size < needed) throw ClError{CL_INVALID_VALUE};
  const auto reply = program->connection->call<GetProgramBinaries>({.program = program->id});
  auto** destinations = static_cast<unsigned char**>(param_value);
  for (size_t i = 0; i < program->devices.size() && i < reply.binaries.size(); ++i)
    if (destinations[i] && !reply.binaries[i].empty())
      std::memcpy(destinations[i], reply.binaries[i].data(), reply.binaries[i].size());
}

// Kernel arguments are set without asking the proxy where the source tells their kinds (kernel.cpp).
void remember_signatures(_cl_program* program, const char* options) {
  auto parsed = std::make_shared<const kernels_parser::Program>(kernels_parser::parse(program->source, options));
  std::lock_guard lock(program->parsed_mutex);
  program->parsed = std::move(parsed);
}

}  // namespace

CL_API_ENTRY cl_program CL_API_CALL clCreateProgramWithSource(cl_context context, cl_uint count, const char** strings,
                                                              const size_t* lengths, cl_int* errcode_ret) {
  return guarded_create(errcode_ret, [&] {
    checked(context);
    if (count == 0 || !strings) throw ClError{CL_INVALID_VALUE};
    std::string source;
    for (cl_uint i = 0; i < count; ++i) {
      if (!strings[i]) throw ClError{CL_INVALID_VALUE};
      source.append(strings[i], lengths && lengths[i] ? lengths[i] : std::strlen(strings[i]));
    }
    auto program = std::make_unique<_cl_program>();
    program->connection = context->connection;
    program->id = context->connection->new_id();
    program->context = Ref<_cl_context>(context);
    program->devices = context->devices;
    context->connection->call<CreateProgramWithSource>({.id = program->id, .context = context->id, .source = source});
    program->source = std::move(source);
    return publish(program.release());
  });
}

CL_API_ENTRY cl_int CL_API_CALL clBuildProgram(cl_program program, cl_uint num_devices, const cl_device_id* device_list,
                                               const char* options,
                                               void(CL_CALLBACK* pfn_notify)(cl_program, void*), void* user_data) {
  return guarded([&] {
    checked(program);
    if (!pfn_notify && user_data) throw ClError{CL_INVALID_VALUE};
    const auto devices = build_devices(program, num_devices, device_list);
    cl_int status = CL_SUCCESS;
    try {
      program->connection->call<BuildProgram>(
          {.program = program->id, .devices = devices, .options = options ? options : ""});
    } catch (const ClError& error) {
      status = error.code;
    }
    if (status == CL_SUCCESS) remember_signatures(program, options ? options : "");
    // The build is synchronous: the notification comes when it is over, whatever the outcome.
    if (pfn_notify) pfn_notify(program, user_data);
    check(status);
  });
}

CL_API_ENTRY cl_int CL_API_CALL clRetainProgram(cl_program program) {
  return guarded([&] { retain(program); });
}

CL_API_ENTRY cl_int CL_API_CALL clReleaseProgram(cl_program program) {
  return guarded([&] { release(program); });
}

CL_API_ENTRY cl_int CL_API_CALL clGetProgramInfo(cl_program program, cl_program_info param_name,
                                                 size_t param_value_size, void* param_value,
                                                 size_t* param_value_size_ret) {
  return guarded([&] {
    checked(program);
    InfoReply reply(param_value_size, param_value, param_value_size_ret);
    switch (param_name) {
      case CL_PROGRAM_REFERENCE_COUNT: return reply.scalar(program->refs.load());
      case CL_PROGRAM_CONTEXT: return reply.scalar(static_cast<cl_context>(program->context.get()));
      case CL_PROGRAM_NUM_DEVICES: return reply.scalar(static_cast<cl_uint>(program->devices.size()));
      case CL_PROGRAM_DEVICES: return reply.list(program->devices);
      case CL_PROGRAM_SOURCE: return reply.string(program->source);
      case CL_PROGRAM_BINARIES: return get_binaries(program, param_value_size, param_value, param_value_size_ret);
      default: remote_info(program->connection, InfoFamily::program, program->id, param_name, reply);
    }
  });
}

CL_API_ENTRY cl_int CL_API_CALL clGetProgramBuildInfo(cl_program program, cl_device_id device,
                                                      cl_program_build_info param_name, size_t param_value_size,
                                                      void* param_value, size_t* param_value_size_ret) {
  return guarded([&] {
    checked(program);
    checked(device);
    if (std::find(program->devices.begin(), program->devices.end(), device) == program->devices.end())
      throw ClError{CL_INVALID_DEVICE};
    InfoReply reply(param_value_size, param_value, param_value_size_ret);
    remote_info(program->connection, InfoFamily::program_build, program->id, param_name, reply, device->id);
  });
}

// Not yet (the OpenCL 1.2 completeness issue): binaries, separate compilation and linking.
CL_API_ENTRY cl_program CL_API_CALL clCreateProgramWithBinary(cl_context context, cl_uint, const cl_device_id*,
                                                              const size_t*, const unsigned char**, cl_int*,
                                                              cl_int* errcode_ret) {
  return guarded_create(errcode_ret, [&]() -> cl_program {
    checked(context);
    throw ClError{CL_INVALID_OPERATION};
  });
}

CL_API_ENTRY cl_int CL_API_CALL clCompileProgram(cl_program program, cl_uint, const cl_device_id*, const char*,
                                                 cl_uint, const cl_program*, const char**,
                                                 void(CL_CALLBACK*)(cl_program, void*), void*) {
  return guarded([&] {
    checked(program);
    throw ClError{CL_INVALID_OPERATION};
  });
}

CL_API_ENTRY cl_program CL_API_CALL clLinkProgram(cl_context context, cl_uint, const cl_device_id*, const char*,
                                                  cl_uint, const cl_program*, void(CL_CALLBACK*)(cl_program, void*),
                                                  void*, cl_int* errcode_ret) {
  return guarded_create(errcode_ret, [&]() -> cl_program {
    checked(context);
    throw ClError{CL_INVALID_OPERATION};
  });
}

// No device reports built-in kernels (CL_DEVICE_BUILT_IN_KERNELS is empty).
CL_API_ENTRY cl_program CL_API_CALL clCreateProgramWithBuiltInKernels(cl_context context, cl_uint, const cl_device_id*,
                                                                      const char*, cl_int* errcode_ret) {
  return guarded_create(errcode_ret, [&]() -> cl_program {
    checked(context);
    throw ClError{CL_INVALID_VALUE};
  });
}

// No device reports an intermediate language (CL_DEVICE_IL_VERSION is empty).
CL_API_ENTRY cl_program CL_API_CALL clCreateProgramWithIL(cl_context context, const void*, size_t,
                                                          cl_int* errcode_ret) {
  return guarded_create(errcode_ret, [&]() -> cl_program {
    checked(context);
    throw ClError{CL_INVALID_OPERATION};
  });
}

CL_API_ENTRY cl_int CL_API_CALL clSetProgramReleaseCallback(cl_program program, void(CL_CALLBACK*)(cl_program, void*),
                                                            void*) {
  return guarded([&] {
    checked(program);
    throw ClError{CL_INVALID_OPERATION};  // deprecated in 3.0 for devices without program-scope destructors
  });
}

CL_API_ENTRY cl_int CL_API_CALL clSetProgramSpecializationConstant(cl_program program, cl_uint, size_t, const void*) {
  return guarded([&] {
    checked(program);
    throw ClError{CL_INVALID_OPERATION};  // only IL programs have specialization constants
  });
}
