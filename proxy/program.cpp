// Program family on the proxy side.
#include <CL/cl.h>

#include "proxy/executors.hpp"

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

}  // namespace hivecl::proxy
