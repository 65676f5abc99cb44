// Kernel family on the proxy side.
#include <CL/cl.h>

#include "proxy/executors.hpp"

namespace hivecl::proxy {

using namespace protocol;

CreateKernel::Reply execute(Call& call, const CreateKernel::Request& request) {
  Session& session = call.session;
  session.check_fresh(request.id);
  const cl_program program = session.get<cl_program>(request.program);
  cl_int status = CL_SUCCESS;
  const cl_kernel kernel = clCreateKernel(program, request.name.c_str(), &status);
  check(status);
  session.add(request.id, ObjectKind::kernel, kernel);
  return {};
}

CreateKernelsInProgram::Reply execute(Call& call, const CreateKernelsInProgram::Request& request) {
  Session& session = call.session;
  const cl_program program = session.get<cl_program>(request.program);
  for (ObjectId id : request.ids) session.check_fresh(id);
  cl_uint count = 0;
  check(clCreateKernelsInProgram(program, 0, nullptr, &count));
  if (request.ids.size() < count) throw ClError{CL_INVALID_VALUE};
  std::vector<cl_kernel> kernels(count);
  check(clCreateKernelsInProgram(program, count, kernels.data(), nullptr));
  CreateKernelsInProgram::Reply reply;
  for (cl_uint i = 0; i < count; ++i) {
    const Bytes name = query_info([&](size_t n, void* v, size_t* r) {
      return clGetKernelInfo(kernels[i], CL_KERNEL_FUNCTION_NAME, n, v, r);
    });
    reply.names.emplace_back(reinterpret_cast<const char*>(name.data()));
    session.add(request.ids[i], ObjectKind::kernel, kernels[i]);
  }
  return reply;
}

SetKernelArg::Reply execute(Call& call, const SetKernelArg::Request& request) {
  const cl_kernel kernel = call.session.get<cl_kernel>(request.kernel);
  switch (request.kind) {
    case ArgKind::value:
      if (request.value.size() != request.size) throw ClError{CL_INVALID_VALUE};
      check(clSetKernelArg(kernel, request.index, request.size, request.value.data()));
      break;
    case ArgKind::mem_object: {
      const cl_mem mem = call.session.get<cl_mem>(request.object);
      check(clSetKernelArg(kernel, request.index, sizeof mem, &mem));
      break;
    }
    case ArgKind::no_value:
      check(clSetKernelArg(kernel, request.index, request.size, nullptr));
      break;
    default:
      throw ClError{CL_INVALID_VALUE};
  }
  return {};
}

EnqueueNDRangeKernel::Reply execute(Call& call, const EnqueueNDRangeKernel::Request& request) {
  const Enqueue enqueue = prepare_enqueue(call, request.queue, request.tail);
  const cl_kernel kernel = call.session.get<cl_kernel>(request.kernel);
  const auto sized = [&](const std::vector<uint64_t>& values) {
    return values.empty() || values.size() == request.work_dim;
  };
  if (request.work_dim > 3 || !sized(request.global_offset) || !sized(request.global_size) ||
      !sized(request.local_size))
    throw ClError{CL_INVALID_VALUE};
  const auto pointer = [](const std::vector<uint64_t>& values) -> const size_t* {
    static_assert(sizeof(size_t) == sizeof(uint64_t));
    return values.empty() ? nullptr : reinterpret_cast<const size_t*>(values.data());
  };
  cl_event event = nullptr;
  check(clEnqueueNDRangeKernel(enqueue.queue, kernel, request.work_dim, pointer(request.global_offset),
                               pointer(request.global_size), pointer(request.local_size), enqueue.wait_count(),
                               enqueue.wait_list(), &event));
  keep_event(call, request.tail.event, event);
  return {};
}

}  // namespace hivecl::proxy
