// Program family on the proxy side.
#include <CL/cl.h>

#include <algorithm>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "proxy/executors.hpp"
#include "proxy/output_capture.hpp"

namespace hivecl::proxy {

using namespace protocol;

CreateProgramWithSource::Reply execute(Call& call, const CreateProgramWithSource::Request& request) {
  Session& session = call.session;
  session.check_fresh(request.id);
  const cl_context context = session.get<cl_context>(request.context);
  const char* source = request.source.c_str();
  const size_t length = request.source.size();
  cl_int status = CL_SUCCESS;
  const cl_program program = clCreateProgramWithSource(context, 1, &source, &length, &status);
  check(status);
  session.add(request.id, ObjectKind::program, program);
  session.note_program(may_print(std::as_bytes(std::span(request.source))));
  return {};
}

BuildProgram::Reply execute(Call& call, const BuildProgram::Request& request) {
  const cl_program program = call.session.get<cl_program>(request.program);
  const auto devices = call.session.devices(request.devices);
  check(clBuildProgram(program, static_cast<cl_uint>(devices.size()), devices.empty() ? nullptr : devices.data(),
                       request.options.c_str(), nullptr, nullptr));
  return {};
}

GetProgramBinaries::Reply execute(Call& call, const GetProgramBinaries::Request& request) {
  const cl_program program = call.session.get<cl_program>(request.program);
  const Bytes sizes_value = query_info([&](size_t n, void* v, size_t* r) {
    return clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, n, v, r);
  });
  std::vector<size_t> sizes(sizes_value.size() / sizeof(size_t));
  std::memcpy(sizes.data(), sizes_value.data(), sizes.size() * sizeof(size_t));
  GetProgramBinaries::Reply reply;
  std::vector<unsigned char*> pointers;
  for (size_t size : sizes) {
    reply.binaries.emplace_back(size);
    pointers.push_back(reinterpret_cast<unsigned char*>(reply.binaries.back().data()));
  }
  check(clGetProgramInfo(program, CL_PROGRAM_BINARIES, pointers.size() * sizeof(unsigned char*), pointers.data(),
                         nullptr));
  return reply;
}

CreateProgramWithBinary::Reply execute(Call& call, const CreateProgramWithBinary::Request& request) {
  Session& session = call.session;
  session.check_fresh(request.id);
  const cl_context context = session.get<cl_context>(request.context);
  const auto devices = session.devices(request.devices);
  if (devices.empty() || request.binaries.size() != devices.size()) throw ClError{CL_INVALID_VALUE};
  std::vector<size_t> lengths;
  std::vector<const unsigned char*> binaries;
  for (const Bytes& binary : request.binaries) {
    if (binary.empty()) throw ClError{CL_INVALID_VALUE};
    lengths.push_back(binary.size());
    binaries.push_back(reinterpret_cast<const unsigned char*>(binary.data()));
  }
  std::vector<cl_int> binary_status(devices.size(), CL_SUCCESS);
  cl_int status = CL_SUCCESS;
  const cl_program program =
      clCreateProgramWithBinary(context, static_cast<cl_uint>(devices.size()), devices.data(), lengths.data(),
                                binaries.data(), binary_status.data(), &status);
  CreateProgramWithBinary::Reply reply{.status = status, .binary_status = binary_status};
  if (status != CL_SUCCESS) return reply;
  session.add(request.id, ObjectKind::program, program);
  session.note_program(std::ranges::any_of(request.binaries, [](const Bytes& binary) { return may_print(binary); }));
  return reply;
}

namespace {

std::vector<cl_program> programs(Session& session, const std::vector<ObjectId>& ids) {
  std::vector<cl_program> natives;
  for (ObjectId id : ids) natives.push_back(session.get<cl_program>(id));
  return natives;
}

template <class T>
const T* data_or_null(const std::vector<T>& values) {
  return values.empty() ? nullptr : values.data();
}

// The spec's rule for a link's inputs, checked before the runtime sees them (NVIDIA's
// clLinkProgram crashes the proxy when one is an executable): for each device, every input
// holds a compiled object or a library for it, or none does. Inputs the runtime will refuse
// for another reason (a device or context not theirs) are left to it, for its error code.
void check_link_inputs(const std::vector<cl_program>& inputs, const std::vector<cl_device_id>& devices) {
  for (cl_device_id device : devices) {
    size_t linkable = 0;
    for (cl_program input : inputs) {
      cl_program_binary_type type = CL_PROGRAM_BINARY_TYPE_NONE;
      if (clGetProgramBuildInfo(input, device, CL_PROGRAM_BINARY_TYPE, sizeof type, &type, nullptr) != CL_SUCCESS)
        return;
      if (type == CL_PROGRAM_BINARY_TYPE_COMPILED_OBJECT || type == CL_PROGRAM_BINARY_TYPE_LIBRARY) {
        ++linkable;
      } else if (type != CL_PROGRAM_BINARY_TYPE_NONE) {
        throw ClError{CL_INVALID_OPERATION};
      }
    }
    if (linkable != 0 && linkable != inputs.size()) throw ClError{CL_INVALID_OPERATION};
  }
}

}  // namespace

CompileProgram::Reply execute(Call& call, const CompileProgram::Request& request) {
  const cl_program program = call.session.get<cl_program>(request.program);
  const auto devices = call.session.devices(request.devices);
  const auto headers = programs(call.session, request.headers);
  if (headers.size() != request.header_names.size()) throw ClError{CL_INVALID_VALUE};
  std::vector<const char*> names;
  for (const std::string& name : request.header_names) names.push_back(name.c_str());
  check(clCompileProgram(program, static_cast<cl_uint>(devices.size()), data_or_null(devices),
                         request.options.c_str(), static_cast<cl_uint>(headers.size()), data_or_null(headers),
                         names.empty() ? nullptr : names.data(), nullptr, nullptr));
  return {};
}

LinkProgram::Reply execute(Call& call, const LinkProgram::Request& request) {
  Session& session = call.session;
  session.check_fresh(request.id);
  const cl_context context = session.get<cl_context>(request.context);
  const auto devices = session.devices(request.devices);
  const auto inputs = programs(session, request.inputs);
  if (inputs.empty()) throw ClError{CL_INVALID_VALUE};
  check_link_inputs(inputs, devices.empty() ? context_devices(context) : devices);
  cl_int status = CL_SUCCESS;
  const cl_program program =
      clLinkProgram(context, static_cast<cl_uint>(devices.size()), data_or_null(devices), request.options.c_str(),
                    static_cast<cl_uint>(inputs.size()), inputs.data(), nullptr, nullptr, &status);
  if (program) session.add(request.id, ObjectKind::program, program);
  return {.created = program != nullptr, .status = status};
}

}  // namespace hivecl::proxy
